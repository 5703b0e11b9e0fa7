#include "ledger/keys/pkcs11_uri.h"

#include <charconv>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ledger::keys {
namespace {

constexpr std::string_view kScheme = "pkcs11:";

std::string S(std::string_view v) { return std::string(v); }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<std::string> PercentDecode(std::string_view name, std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '%') {
      out += value[i];
      continue;
    }
    int hi = i + 2 < value.size() ? HexValue(value[i + 1]) : -1;
    int lo = hi >= 0 ? HexValue(value[i + 2]) : -1;
    if (lo < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pkcs11 URI: ", S(name), ": '%' must be followed by two hex digits (RFC 7512 pct-encoded)"));
    }
    out += static_cast<char>(hi << 4 | lo);
    i += 2;
  }
  return out;
}

std::string PercentEncode(std::string_view value) {
  // RFC 7512's pk11-pchar less what a reader might take for a separator.
  std::string out;
  for (unsigned char c : value) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
                 c == '_' || c == '~' || c == ':' || c == '/';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Splits `part` at `sep` into name=value attributes and hands each, decoded,
// to `take`; a name seen twice is refused.
template <typename Take>
absl::Status ForEachAttr(std::string_view part, char sep, std::string_view where, Take take) {
  std::set<std::string> seen;
  while (!part.empty()) {
    size_t end = part.find(sep);
    std::string_view attr = part.substr(0, end);
    part = end == std::string_view::npos ? std::string_view() : part.substr(end + 1);
    if (attr.empty()) continue;
    size_t eq = attr.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pkcs11 URI: '", S(attr), "' in the ", S(where), " is not name=value"));
    }
    std::string name = S(attr.substr(0, eq));
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("pkcs11 URI: ", name, ": given twice; give each attribute once"));
    }
    auto value = PercentDecode(name, attr.substr(eq + 1));
    if (!value.ok()) return value.status();
    if (absl::Status s = take(name, *std::move(value)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

bool IsPkcs11Uri(std::string_view spec) {
  // A URI's scheme is case-insensitive (RFC 3986, section 3.1).
  if (spec.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    char c = spec[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kScheme[i]) return false;
  }
  return true;
}

absl::StatusOr<Pkcs11Uri> ParsePkcs11Uri(std::string_view uri) {
  if (!IsPkcs11Uri(uri)) return absl::InvalidArgumentError("pkcs11 URI: must start with 'pkcs11:'");
  uri.remove_prefix(kScheme.size());
  size_t q = uri.find('?');
  std::string_view path = uri.substr(0, q);
  std::string_view query = q == std::string_view::npos ? std::string_view() : uri.substr(q + 1);
  Pkcs11Uri out;
  absl::Status s = ForEachAttr(path, ';', "path", [&](const std::string& name, std::string value) -> absl::Status {
    if (name == "token") {
      out.token = std::move(value);
    } else if (name == "manufacturer") {
      out.manufacturer = std::move(value);
    } else if (name == "model") {
      out.model = std::move(value);
    } else if (name == "serial") {
      out.serial = std::move(value);
    } else if (name == "slot-id") {
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (value.empty() || ec != std::errc() || p != value.data() + value.size()) {
        return absl::InvalidArgumentError(absl::StrCat("pkcs11 URI: slot-id: '", value, "' is not a decimal number"));
      }
      out.slot_id = v;
    } else if (name == "object") {
      out.object = std::move(value);
    } else if (name == "id") {
      out.id = std::move(value);
    } else if (name == "type") {
      if (value != "private") {
        return absl::InvalidArgumentError(
            absl::StrCat("pkcs11 URI: type: '", value, "' cannot sign; name the private key (type=private)"));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "pkcs11 URI: ", name,
          ": not an attribute this ledger reads (path: token, manufacturer, model, serial, slot-id, object, id, "
          "type)"));
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  s = ForEachAttr(query, '&', "query", [&](const std::string& name, std::string value) -> absl::Status {
    if (name == "module-path") {
      out.module_path = std::move(value);
    } else if (name == "pin-source") {
      if (value.starts_with("file:")) value.erase(0, 5);
      if (value.empty() || value[0] != '/') {
        return absl::InvalidArgumentError(
            absl::StrCat("pkcs11 URI: pin-source: '", value, "' must be an absolute file path (file:/path or /path)"));
      }
      out.pin_file = std::move(value);
    } else if (name == "pin-value") {
      return absl::InvalidArgumentError(
          "pkcs11 URI: pin-value: a PIN on a command line is visible to every user of the machine; put it in a "
          "file readable by the ledger alone and give pin-source=file:/path");
    } else if (name == "module-name") {
      return absl::InvalidArgumentError(
          "pkcs11 URI: module-name: give the PKCS#11 library's path instead (module-path=/usr/lib/.../lib.so)");
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("pkcs11 URI: ", name, ": not an attribute this ledger reads (query: module-path, pin-source)"));
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (out.module_path.empty()) {
    return absl::InvalidArgumentError(
        "pkcs11 URI: module-path: required, the PKCS#11 library that reaches the token (e.g. "
        "?module-path=/usr/lib/softhsm/libsofthsm2.so)");
  }
  if (!out.object && !out.id) {
    return absl::InvalidArgumentError(
        "pkcs11 URI: object or id: required; name the key by its label (object=...) or its id (id=%01...)");
  }
  return out;
}

std::string Describe(const Pkcs11Uri& uri) {
  std::string path;
  auto add = [&path](std::string_view name, const std::optional<std::string>& v) {
    if (!v) return;
    if (!path.empty()) path += ';';
    absl::StrAppend(&path, S(name), "=", PercentEncode(*v));
  };
  add("token", uri.token);
  add("manufacturer", uri.manufacturer);
  add("model", uri.model);
  add("serial", uri.serial);
  if (uri.slot_id) add("slot-id", std::to_string(*uri.slot_id));
  add("object", uri.object);
  add("id", uri.id);
  std::string out = absl::StrCat("pkcs11:", path, "?module-path=", PercentEncode(uri.module_path));
  if (!uri.pin_file.empty()) absl::StrAppend(&out, "&pin-source=file:", PercentEncode(uri.pin_file));
  return out;
}

}  // namespace ledger::keys
