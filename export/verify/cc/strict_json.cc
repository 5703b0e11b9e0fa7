#include "export/verify/cc/internal/strict_json.h"

#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ledger::verify {
namespace {

// Keeps the keys of every object open at the current depth; stops the
// parse at the first key seen twice in one of them.
class DuplicateFinder : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (open_.back().insert(k).second) return true;
    duplicate_ = k;
    return false;
  }
  bool end_object() override {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

  const std::optional<std::string>& duplicate() const { return duplicate_; }

 private:
  std::vector<std::set<std::string>> open_;
  std::optional<std::string> duplicate_;
};

}  // namespace

std::optional<std::string> DuplicateKey(std::string_view text) {
  DuplicateFinder finder;
  nlohmann::json::sax_parse(text, &finder, nlohmann::json::input_format_t::json, /*strict=*/true);
  return finder.duplicate();
}

std::optional<std::string> DuplicateKey(std::istream& in) {
  DuplicateFinder finder;
  nlohmann::json::sax_parse(in, &finder, nlohmann::json::input_format_t::json, /*strict=*/true);
  return finder.duplicate();
}

absl::StatusOr<nlohmann::json> ParseStrictJson(std::string_view text) {
  if (auto k = DuplicateKey(text)) return absl::InvalidArgumentError(absl::StrCat("key ", *k, " twice"));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("not JSON");
  return j;
}

}  // namespace ledger::verify
