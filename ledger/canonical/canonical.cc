#include "ledger/canonical/canonical.h"

#include <charconv>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ledger::canonical {
namespace {

// 0: copy as is; otherwise the escape's second character, or 'u' for \u00xx.
constexpr char EscapeFor(unsigned char c) {
  switch (c) {
    case '"': return '"';
    case '\\': return '\\';
    case '\b': return 'b';
    case '\f': return 'f';
    case '\n': return 'n';
    case '\r': return 'r';
    case '\t': return 't';
    default: return c < 0x20 ? 'u' : 0;
  }
}

struct EscapeTable {
  char v[256];
  constexpr EscapeTable() : v() {
    for (int i = 0; i < 256; ++i) v[i] = EscapeFor(static_cast<unsigned char>(i));
  }
};
constexpr EscapeTable kEscape;

}  // namespace

bool IsUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    // ASCII runs, eight bytes at a time.
    while (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if ((word & 0x8080808080808080ULL) != 0) break;
      p += 8;
    }
    if (p == end) break;
    unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (end - p < len) return false;
    for (int k = 1; k < len; ++k) {
      if ((p[k] & 0xc0) != 0x80) return false;
      cp = cp << 6 | (p[k] & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
        (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    p += len;
  }
  return true;
}

void AppendString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char e = kEscape.v[static_cast<unsigned char>(s[i])];
    if (e == 0) continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    if (e == 'u') {
      auto c = static_cast<unsigned char>(s[i]);
      const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
      out->append(esc, 6);
    } else {
      const char esc[2] = {'\\', e};
      out->append(esc, 2);
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, end);
}

const Value* Value::Find(std::string_view key) const {
  for (const Member& m : members) {
    if (m.key == key) return &m.value;
  }
  return nullptr;
}

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : p_(text.data()), begin_(text.data()), end_(p_ + text.size()) {}

  absl::Status ParseValue(Value* v, int depth) {
    if (p_ == end_) return Error("a value");
    if (*p_ == '"') {
      v->type = Value::Type::kString;
      return ParseString(&v->str);
    }
    if (*p_ == '{') {
      v->type = Value::Type::kObject;
      return ParseObject(v, depth);
    }
    v->type = Value::Type::kInt;
    return ParseInt(&v->num);
  }

  absl::Status Finish() { return p_ == end_ ? absl::OkStatus() : Error("the end of the text"); }

 private:
  absl::Status Error(std::string_view want) const {
    return absl::InvalidArgumentError(
        absl::StrCat("canonical JSON: at byte ", p_ - begin_, ": want ", std::string(want)));
  }

  absl::Status ParseObject(Value* v, int depth) {
    if (depth >= 8) return Error("objects nested at most 8 deep");
    ++p_;
    v->members.reserve(depth == 0 ? 8 : 24);
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return absl::OkStatus();
    }
    while (true) {
      if (p_ == end_ || *p_ != '"') return Error("'\"' opening a key");
      Member& m = v->members.emplace_back();
      if (auto s = ParseString(&m.key); !s.ok()) return s;
      if (v->members.size() > 1 && !(v->members[v->members.size() - 2].key < m.key)) {
        return Error("keys in strictly ascending byte order");
      }
      if (p_ == end_ || *p_ != ':') return Error("':'");
      ++p_;
      if (auto s = ParseValue(&m.value, depth + 1); !s.ok()) return s;
      if (p_ == end_) return Error("',' or '}'");
      if (*p_ == '}') {
        ++p_;
        return absl::OkStatus();
      }
      if (*p_ != ',') return Error("',' or '}'");
      ++p_;
    }
  }

  absl::Status ParseString(std::string* out) {
    ++p_;
    const char* run = p_;
    while (true) {
      if (p_ == end_) return Error("'\"' closing the string");
      auto c = static_cast<unsigned char>(*p_);
      if (c == '"') break;
      if (c < 0x20) return Error("control characters escaped");
      if (c != '\\') {
        ++p_;
        continue;
      }
      out->append(run, p_);
      if (end_ - p_ < 2) return Error("an escape");
      char e = p_[1];
      char decoded;
      switch (e) {
        case '"': decoded = '"'; break;
        case '\\': decoded = '\\'; break;
        case 'b': decoded = '\b'; break;
        case 'f': decoded = '\f'; break;
        case 'n': decoded = '\n'; break;
        case 'r': decoded = '\r'; break;
        case 't': decoded = '\t'; break;
        case 'u': {
          // Only \u00xx (lowercase hex) for a control character without a
          // short escape.
          auto hex = [](char h) { return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1; };
          if (end_ - p_ < 6 || p_[2] != '0' || p_[3] != '0' || hex(p_[4]) < 0 || hex(p_[5]) < 0) {
            return Error("\\u00xx with lowercase hex");
          }
          decoded = static_cast<char>(hex(p_[4]) * 16 + hex(p_[5]));
          if (kEscape.v[static_cast<unsigned char>(decoded)] != 'u') {
            return Error("\\u00xx only for control characters without a short escape");
          }
          p_ += 4;
          break;
        }
        default:
          return Error("only the escapes \\\" \\\\ \\b \\f \\n \\r \\t \\u00xx");
      }
      out->push_back(decoded);
      p_ += 2;
      run = p_;
    }
    out->append(run, p_);
    ++p_;
    if (!IsUtf8(*out)) return Error("strings of valid UTF-8");
    return absl::OkStatus();
  }

  absl::Status ParseInt(int64_t* out) {
    bool negative = p_ != end_ && *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return Error("a string, an integer or an object");
    if (*p_ == '0' && (negative || (p_ + 1 != end_ && p_[1] >= '0' && p_[1] <= '9'))) {
      return Error("integers without leading zeros or -0");
    }
    int64_t v = 0;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
      v = v * 10 + (*p_ - '0');
      if (v > kMaxSafeInteger) return Error("integers within +-(2^53-1)");
      ++p_;
    }
    *out = negative ? -v : v;
    return absl::OkStatus();
  }

  const char* p_;
  const char* begin_;
  const char* end_;
};

}  // namespace

absl::StatusOr<Value> Parse(std::string_view text) {
  Parser parser(text);
  Value v;
  if (auto s = parser.ParseValue(&v, 0); !s.ok()) return s;
  if (auto s = parser.Finish(); !s.ok()) return s;
  return v;
}

}  // namespace ledger::canonical
