#include "cmd/flags.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace ledger::cmd {
namespace {

// Edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`.
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string Nearest(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(1, name.size() / 4) + 1;
  for (const std::string& candidate : candidates) {
    size_t d = Distance(name, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::string Flags::Nearest(const std::string& name) const {
  std::vector<std::string> options;
  for (const std::string& candidate : order_) {
    if (candidate != "config") options.push_back(candidate);
  }
  return cmd::Nearest(name, options);
}

void Flags::Group(const std::string& heading) {
  group_ = heading;
  if (!heading.empty() && std::find(groups_.begin(), groups_.end(), heading) == groups_.end()) {
    groups_.push_back(heading);
  }
}

void Flags::Define(const std::string& name, const std::string& default_value, const std::string& help, bool boolean) {
  options_[name] = {default_value, default_value, help, boolean, false, "", group_};
  order_.push_back(name);
}

absl::Status Flags::Parse(int argc, char** argv, int first) {
  bool options_done = false;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (options_done || arg.size() < 3 || arg.rfind("--", 0) != 0) {
      if (arg == "--") {
        options_done = true;
        continue;
      }
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = options_.find(name);
    if (it == options_.end()) {
      std::string near = Nearest(name);
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": unknown option",
                                                     near.empty() ? "" : absl::StrCat("; did you mean --", near, "?")));
    }
    Option& o = it->second;
    if (o.boolean) {
      if (has_value && value != "true" && value != "false") {
        return absl::InvalidArgumentError(absl::StrCat("--", name, ": want true or false"));
      }
      o.value = has_value ? value : "true";
    } else {
      if (!has_value) {
        if (i + 1 >= argc) {
          return absl::InvalidArgumentError(absl::StrCat("--", name, ": needs a value"));
        }
        value = argv[++i];
      }
      o.value = value;
    }
    o.given = true;
  }
  return absl::OkStatus();
}

absl::Status Flags::LoadConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("--config: cannot read ", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("--config: ", path, " is not JSON: ", e.what()));
  }
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat("--config: ", path, " must hold one JSON object"));
  for (const auto& [key, value] : j.items()) {
    auto it = options_.find(key);
    if (it == options_.end() || key == "config") {
      std::string near = Nearest(key);
      return absl::InvalidArgumentError(absl::StrCat("--config: ", path, ": '", key, "' is not an option",
                                                     near.empty() ? "" : absl::StrCat("; did you mean '", near, "'?")));
    }
    Option& o = it->second;
    // An option whose values are true and false takes a JSON boolean only:
    // "false" in quotes reads as a yes to too many people and parsers.
    const bool yes_no = o.boolean || o.default_value == "true" || o.default_value == "false";
    if (yes_no != value.is_boolean()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--config: ", path, ": '", key, "' must be ",
                       yes_no ? "true or false (a JSON boolean, without quotes)" : "a string or an integer"));
    }
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_number_integer()) {
      text = std::to_string(value.get<int64_t>());
    } else if (value.is_boolean()) {
      text = value.get<bool>() ? "true" : "false";
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--config: ", path, ": '", key, "' must be a string or an integer"));
    }
    if (o.boolean && text != "true" && text != "false") {
      return absl::InvalidArgumentError(absl::StrCat("--config: ", path, ": '", key, "' must be true or false"));
    }
    if (o.given) continue;  // the command line wins
    o.value = text;
    o.given = true;
    o.source = path;
  }
  return absl::OkStatus();
}

const std::string& Flags::Get(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) std::abort();  // a flag the program never defined
  return it->second.value;
}

bool Flags::Has(const std::string& name) const {
  auto it = options_.find(name);
  return it != options_.end() && it->second.given;
}

absl::StatusOr<int64_t> Flags::Int(const std::string& name) const {
  const std::string& v = Get(name);
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
    const std::string& source = options_.at(name).source;
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, source.empty() ? "" : " (in " + source + ")", ": '", v, "' is not an integer"));
  }
  return out;
}

const std::string& Flags::GroupOf(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) std::abort();  // a flag the program never defined
  return it->second.group;
}

std::string Flags::Usage() const {
  std::string out;
  for (const auto& name : order_) absl::StrAppend(&out, Usage(name, ""));
  return out;
}

std::string Flags::Usage(const std::string& name, const std::string& help) const {
  auto it = options_.find(name);
  if (it == options_.end()) std::abort();  // a flag the program never defined
  const Option& o = it->second;
  std::string out = absl::StrCat("  --", name);
  if (!o.boolean) absl::StrAppend(&out, " (default: ", o.default_value.empty() ? "none" : o.default_value, ")");
  absl::StrAppend(&out, "\n      ", help.empty() ? o.help : help, "\n");
  return out;
}

std::string Flags::GroupUsage(const std::string& heading) const {
  std::string out = absl::StrCat(heading, ":\n");
  for (const auto& name : order_) {
    if (options_.at(name).group == heading) absl::StrAppend(&out, Usage(name, ""));
  }
  return out;
}

}  // namespace ledger::cmd
