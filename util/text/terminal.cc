#include "util/text/terminal.h"

namespace ledger::text {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// One step of decoding: the character at the front of `s` and its length
// in bytes, or (invalid) the first byte alone.
struct Decoded {
  uint32_t code_point;
  size_t length;
  bool invalid;
};

// RFC 3629 UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
Decoded DecodeOne(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return {b0, 1, false};
  size_t length;
  uint32_t cp, min;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2, cp = b0 & 0x1f, min = 0x80;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3, cp = b0 & 0x0f, min = 0x800;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return {b0, 1, true};
  }
  if (s.size() < length) return {b0, 1, true};
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return {b0, 1, true};
    cp = (cp << 6) | (byte(i) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {b0, 1, true};
  return {cp, length, false};
}

bool IsControl(uint32_t cp) { return cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f); }

bool IsBidiControl(uint32_t cp) {
  return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

void AppendHex(std::string* out, uint32_t value, int digits) {
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) *out += kHex[(value >> shift) & 0xf];
}

}  // namespace

std::string TerminalEscape(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  while (!value.empty()) {
    Decoded d = DecodeOne(value);
    if (d.invalid || IsControl(d.code_point)) {
      out += "\\x";
      AppendHex(&out, d.code_point, 2);
    } else if (IsBidiControl(d.code_point)) {
      out += "\\u{";
      AppendHex(&out, d.code_point, 4);
      out += '}';
    } else {
      out.append(value.substr(0, d.length));
    }
    value.remove_prefix(d.length);
  }
  return out;
}

std::optional<UnsafeCharacter> FindUnsafeCharacter(std::string_view value) {
  for (size_t at = 0; at < value.size();) {
    Decoded d = DecodeOne(value.substr(at));
    if (d.invalid || IsControl(d.code_point) || IsBidiControl(d.code_point)) {
      return UnsafeCharacter{d.code_point, at, d.invalid};
    }
    at += d.length;
  }
  return std::nullopt;
}

std::string DescribeUnsafe(const UnsafeCharacter& c) {
  std::string out;
  if (c.invalid_utf8) {
    out = "invalid UTF-8 byte 0x";
    AppendHex(&out, c.code_point, 2);
  } else {
    out = "control or bidi character U+";
    // Four digits at least, upper case, as Unicode writes code points.
    static constexpr char kUpper[] = "0123456789ABCDEF";
    int digits = c.code_point > 0xffff ? (c.code_point > 0xfffff ? 6 : 5) : 4;
    for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kUpper[(c.code_point >> shift) & 0xf];
  }
  out += " at byte ";
  out += std::to_string(c.byte_offset);
  return out;
}

}  // namespace ledger::text
