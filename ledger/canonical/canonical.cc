#include "ledger/canonical/canonical.h"

#include <charconv>
#include <cstdint>
#include <cstring>

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

}  // namespace ledger::canonical
