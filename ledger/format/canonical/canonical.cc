#include "ledger/format/canonical/canonical.h"

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
    case '"':
      return '"';
    case '\\':
      return '\\';
    case '\b':
      return 'b';
    case '\f':
      return 'f';
    case '\n':
      return 'n';
    case '\r':
      return 'r';
    case '\t':
      return 't';
    default:
      return c < 0x20 ? 'u' : 0;
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
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
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

// The rules of strings and integers, shared by Parse (which names the
// broken one) and ReadString / ReadInt (which only say whether it holds).
enum class Fault {
  kNone,
  kUnclosed,
  kControl,
  kShortEscape,
  kHexEscape,
  kHexNotControl,
  kEscape,
  kUtf8,
  kNotInt,
  kLeadingZero,
  kRange
};

// The character the escape at `p` (a backslash, with at least one byte
// after it) stands for; `*extra` is how many bytes it takes beyond two (4
// for \u00xx).
Fault DecodeEscape(const char* p, const char* end, char* decoded, int* extra) {
  switch (p[1]) {
    case '"':
      *decoded = '"';
      break;
    case '\\':
      *decoded = '\\';
      break;
    case 'b':
      *decoded = '\b';
      break;
    case 'f':
      *decoded = '\f';
      break;
    case 'n':
      *decoded = '\n';
      break;
    case 'r':
      *decoded = '\r';
      break;
    case 't':
      *decoded = '\t';
      break;
    case 'u': {
      // Only \u00xx (lowercase hex) for a control character without a
      // short escape.
      auto hex = [](char h) { return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1; };
      if (end - p < 6 || p[2] != '0' || p[3] != '0' || hex(p[4]) < 0 || hex(p[5]) < 0) {
        return Fault::kHexEscape;
      }
      *decoded = static_cast<char>(hex(p[4]) * 16 + hex(p[5]));
      if (kEscape.v[static_cast<unsigned char>(*decoded)] != 'u') return Fault::kHexNotControl;
      *extra = 4;
      break;
    }
    default:
      return Fault::kEscape;
  }
  return Fault::kNone;
}

// *pp is just after the opening quote; on success it is after the closing
// one and `out` holds the string decoded, appended. On a fault *pp is where
// it was found.
Fault ScanString(const char** pp, const char* end, std::string* out) {
  const char*& p = *pp;
  const size_t first = out->size();
  const char* run = p;
  uint64_t high = 0;  // any byte >= 0x80 seen 8 at a time
  while (true) {
    // Eight plain bytes at a time: no '"', no '\\', none below 0x20.
    while (end - p >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      constexpr uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
      auto zero_byte = [](uint64_t x) { return (x - kOnes) & ~x & kHighs; };
      uint64_t special =
          zero_byte(w ^ (kOnes * '"')) | zero_byte(w ^ (kOnes * '\\')) | ((w - kOnes * 0x20) & ~w & kHighs);
      if (special != 0) break;
      high |= w;
      p += 8;
    }
    if (p == end) return Fault::kUnclosed;
    auto c = static_cast<unsigned char>(*p);
    high |= c;
    if (c == '"') break;
    if (c < 0x20) return Fault::kControl;
    if (c != '\\') {
      ++p;
      continue;
    }
    out->append(run, p);
    if (end - p < 2) return Fault::kShortEscape;
    char decoded;
    int extra = 0;
    if (Fault f = DecodeEscape(p, end, &decoded, &extra); f != Fault::kNone) return f;
    p += extra;
    out->push_back(decoded);
    p += 2;
    run = p;
  }
  out->append(run, p);
  ++p;
  // Escapes stand for ASCII, so the decoded text is UTF-8 exactly when the
  // written text is; only what this call appended is checked, and only if
  // it is not all ASCII.
  if ((high & 0x8080808080808080ULL) != 0 && !IsUtf8(std::string_view(*out).substr(first))) {
    return Fault::kUtf8;
  }
  return Fault::kNone;
}

Fault ScanInt(const char** pp, const char* end, int64_t* out) {
  const char*& p = *pp;
  bool negative = p != end && *p == '-';
  if (negative) ++p;
  if (p == end || *p < '0' || *p > '9') return Fault::kNotInt;
  if (*p == '0' && (negative || (p + 1 != end && p[1] >= '0' && p[1] <= '9'))) {
    return Fault::kLeadingZero;
  }
  int64_t v = 0;
  while (p != end && *p >= '0' && *p <= '9') {
    v = v * 10 + (*p - '0');
    if (v > kMaxSafeInteger) return Fault::kRange;
    ++p;
  }
  *out = negative ? -v : v;
  return Fault::kNone;
}

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
    return Check(ScanString(&p_, end_, out));
  }

  absl::Status ParseInt(int64_t* out) {
    Fault f = ScanInt(&p_, end_, out);
    return f == Fault::kNotInt ? Error("a string, an integer or an object") : Check(f);
  }

  absl::Status Check(Fault f) const {
    switch (f) {
      case Fault::kNone:
        return absl::OkStatus();
      case Fault::kUnclosed:
        return Error("'\"' closing the string");
      case Fault::kControl:
        return Error("control characters escaped");
      case Fault::kShortEscape:
        return Error("an escape");
      case Fault::kHexEscape:
        return Error("\\u00xx with lowercase hex");
      case Fault::kHexNotControl:
        return Error("\\u00xx only for control characters without a short escape");
      case Fault::kEscape:
        return Error("only the escapes \\\" \\\\ \\b \\f \\n \\r \\t \\u00xx");
      case Fault::kUtf8:
        return Error("strings of valid UTF-8");
      case Fault::kNotInt:
        return Error("an integer");
      case Fault::kLeadingZero:
        return Error("integers without leading zeros or -0");
      case Fault::kRange:
        return Error("integers within +-(2^53-1)");
    }
    return Error("?");
  }

  const char* p_;
  const char* begin_;
  const char* end_;
};

}  // namespace

bool ReadString(const char** p, const char* end, std::string* out) {
  if (*p == end || **p != '"') return false;
  const char* q = *p + 1;
  if (ScanString(&q, end, out) != Fault::kNone) return false;
  *p = q;
  return true;
}

bool ReadInt(const char** p, const char* end, int64_t* out) { return ScanInt(p, end, out) == Fault::kNone; }

absl::StatusOr<Value> Parse(std::string_view text) {
  Parser parser(text);
  Value v;
  if (auto s = parser.ParseValue(&v, 0); !s.ok()) return s;
  if (auto s = parser.Finish(); !s.ok()) return s;
  return v;
}

}  // namespace ledger::canonical
