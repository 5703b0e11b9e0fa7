#include "ledger/format/tlogpolicy/tlogpolicy.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ledger::tlogpolicy {
namespace {

std::string S(std::string_view v) { return std::string(v); }
std::string S(absl::string_view v) { return std::string(v); }

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// The key material of a vkey (what follows the second '+'): two vkeys
// with equal material wrap the same public key.
std::string KeyMaterial(std::string_view vkey) {
  size_t a = vkey.find('+');
  size_t b = a == std::string_view::npos ? a : vkey.find('+', a + 1);
  return b == std::string_view::npos ? S(vkey) : S(vkey.substr(b + 1));
}

}  // namespace

absl::StatusOr<Policy> Policy::Parse(std::string_view text) {
  Policy p;
  std::set<std::string> names, log_keys, witness_keys, monitor_names, monitor_keys;
  bool has_quorum = false;
  bool has_monitor_quorum = false;
  size_t number = 0;
  size_t line_of_byte = 1;
  for (unsigned char c : text) {
    line_of_byte += c == '\n' ? 1 : 0;
    if (c != '\t' && c != '\n' && (c < 0x20 || c == 0x7f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy line ", line_of_byte, ": only tab and newline may be control characters"));
    }
  }
  while (!text.empty()) {
    ++number;
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("policy line ", number, ": ", S(why)));
    };
    std::vector<std::string_view> f = Fields(line);
    if (f.empty() || f[0].starts_with("#")) continue;
    auto defined = [&](std::string_view name) { return names.count(S(name)) > 0; };
    auto monitor = [&](std::string_view name) { return monitor_names.count(S(name)) > 0; };
    auto not_a_monitor = [&](std::string_view name, std::string_view where) -> std::optional<absl::Status> {
      if (!monitor(name)) return std::nullopt;
      return bad(absl::StrCat("'", S(name), "' is a monitor; ", S(where),
                              " names witnesses and groups (monitors count in monitor-quorum)"));
    };
    if (f[0] == "log") {
      if (f.size() < 2 || f.size() > 3) return bad("want 'log <vkey> [<url>]'");
      auto key = note::Verifier::Parse(f[1]);
      if (!key.ok()) return bad(S(key.status().message()));
      if (!log_keys.insert(KeyMaterial(f[1])).second) return bad("this log's key is listed twice");
      p.logs_.push_back({*std::move(key), f.size() == 3 ? S(f[2]) : "", S(f[1])});
    } else if (f[0] == "witness") {
      if (f.size() < 3 || f.size() > 4) return bad("want 'witness <name> <vkey> [<url>]'");
      if (f[1] == "none") return bad("'none' is reserved and cannot name a witness");
      if (defined(f[1])) return bad(absl::StrCat("the name '", S(f[1]), "' is defined twice"));
      auto key = cosign::CosignatureVerifier::Parse(f[2]);
      if (!key.ok()) return bad(S(key.status().message()));
      if (!witness_keys.insert(KeyMaterial(f[2])).second) return bad("this witness's key is listed twice");
      names.insert(S(f[1]));
      p.witnesses_.push_back({S(f[1]), *std::move(key), f.size() == 4 ? S(f[3]) : ""});
    } else if (f[0] == "group") {
      if (f.size() < 4) return bad("want 'group <name> all|any|<k> <member>...' with at least one member");
      if (f[1] == "none") return bad("'none' is reserved and cannot name a group");
      if (defined(f[1])) return bad(absl::StrCat("the name '", S(f[1]), "' is defined twice"));
      Group g;
      g.name = S(f[1]);
      std::set<std::string> seen;
      for (size_t i = 3; i < f.size(); ++i) {
        if (auto s = not_a_monitor(f[i], "a group"); s) return *s;
        if (!defined(f[i])) return bad(absl::StrCat("member '", S(f[i]), "' is not defined on an earlier line"));
        if (!seen.insert(S(f[i])).second) return bad(absl::StrCat("member '", S(f[i]), "' is listed twice"));
        g.members.push_back(S(f[i]));
      }
      size_t n = g.members.size();
      if (f[2] == "all") {
        g.threshold = n;
      } else if (f[2] == "any") {
        g.threshold = 1;
      } else {
        auto [ptr, ec] = std::from_chars(f[2].data(), f[2].data() + f[2].size(), g.threshold);
        if (ec != std::errc() || ptr != f[2].data() + f[2].size() || g.threshold < 1 || g.threshold > n) {
          return bad(absl::StrCat("threshold must be all, any or a decimal k with 1 <= k <= ", n));
        }
      }
      names.insert(g.name);
      p.groups_.push_back(std::move(g));
    } else if (f[0] == "quorum") {
      if (f.size() != 2) return bad("want 'quorum <name>'");
      if (has_quorum) return bad("a second quorum line");
      if (auto s = not_a_monitor(f[1], "the quorum"); s) return *s;
      if (f[1] != "none" && !defined(f[1]))
        return bad(absl::StrCat("quorum '", S(f[1]), "' is not defined on an earlier line"));
      has_quorum = true;
      p.quorum_ = S(f[1]);
    } else if (f[0] == "monitor") {
      if (f.size() < 3 || f.size() > 4) return bad("want 'monitor <name> <vkey> [<url>]'");
      if (has_monitor_quorum) return bad("a monitor line after monitor-quorum; monitor-quorum follows every monitor");
      if (f[1] == "none") return bad("'none' is reserved and cannot name a monitor");
      if (defined(f[1])) return bad(absl::StrCat("the name '", S(f[1]), "' is defined twice"));
      auto key = cosign::MapCosignatureVerifier::Parse(f[2]);
      if (!key.ok()) return bad(S(key.status().message()));
      if (!monitor_keys.insert(KeyMaterial(f[2])).second) return bad("this monitor's key is listed twice");
      names.insert(S(f[1]));
      monitor_names.insert(S(f[1]));
      p.monitors_.push_back({S(f[1]), *std::move(key), f.size() == 4 ? S(f[3]) : ""});
    } else if (f[0] == "monitor-quorum") {
      if (f.size() != 2) return bad("want 'monitor-quorum all|any|<k>'");
      if (has_monitor_quorum) return bad("a second monitor-quorum line");
      size_t n = p.monitors_.size();
      if (n == 0) return bad("monitor-quorum with no monitor line before it");
      if (f[1] == "all") {
        p.monitor_quorum_ = n;
      } else if (f[1] == "any") {
        p.monitor_quorum_ = 1;
      } else {
        auto [ptr, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), p.monitor_quorum_);
        if (ec != std::errc() || ptr != f[1].data() + f[1].size() || p.monitor_quorum_ < 1 || p.monitor_quorum_ > n) {
          return bad(absl::StrCat("monitor-quorum must be all, any or a decimal k with 1 <= k <= ", n));
        }
      }
      has_monitor_quorum = true;
    } else {
      return bad(
          absl::StrCat("unknown keyword '", S(f[0]), "' (log, witness, group, quorum, monitor, monitor-quorum)"));
    }
  }
  if (!has_quorum) return absl::InvalidArgumentError("policy: no quorum line (use 'quorum none' for none)");
  if (!has_monitor_quorum) p.monitor_quorum_ = p.monitors_.size();
  return p;
}

absl::StatusOr<std::string> Policy::OpenCheckpoint(std::string_view note) const {
  absl::Status last = absl::PermissionDeniedError("checkpoint: the policy lists no log");
  for (const Log& log : logs_) {
    auto text = log.key.Open(note);
    if (text.ok() || text.status().code() == absl::StatusCode::kInvalidArgument) return text;
    last = text.status();
  }
  return last;
}

int Policy::WitnessIndex(const std::string& name) const {
  for (size_t i = 0; i < witnesses_.size(); ++i) {
    if (witnesses_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

const Group* Policy::FindGroup(const std::string& name) const {
  for (const Group& g : groups_) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

bool Policy::Witnessed(const std::string& name, const std::vector<bool>& cosigned) const {
  if (int i = WitnessIndex(name); i >= 0) return cosigned[i];
  const Group* g = FindGroup(name);
  size_t count = 0;
  for (const std::string& m : g->members) count += Witnessed(m, cosigned) ? 1 : 0;
  return count >= g->threshold;
}

void Policy::Missing(const std::string& name, const std::vector<bool>& cosigned, std::vector<bool>* out) const {
  if (int i = WitnessIndex(name); i >= 0) {
    if (!cosigned[i]) (*out)[i] = true;
    return;
  }
  for (const std::string& m : FindGroup(name)->members) Missing(m, cosigned, out);
}

absl::StatusOr<Evaluation> Policy::Evaluate(std::string_view note) const {
  auto parts = cosign::SplitNote(note);
  if (!parts.ok()) return parts.status();
  Evaluation e;
  std::vector<bool> cosigned(witnesses_.size(), false);
  for (size_t i = 0; i < witnesses_.size(); ++i) {
    auto time = witnesses_[i].key.Verify(*parts);
    if (time.ok()) {
      cosigned[i] = true;
      e.cosigned.push_back({witnesses_[i].name, *time});
    } else if (time.status().code() != absl::StatusCode::kNotFound) {
      return absl::Status(time.status().code(),
                          absl::StrCat("witness ", witnesses_[i].name, ": ", S(time.status().message())));
    }
  }
  if (quorum_ == "none") {
    e.quorum = true;
    return e;
  }
  e.quorum = Witnessed(quorum_, cosigned);
  if (!e.quorum) {
    std::vector<bool> missing(witnesses_.size(), false);
    Missing(quorum_, cosigned, &missing);
    for (size_t i = 0; i < witnesses_.size(); ++i) {
      if (missing[i]) e.missing.push_back(witnesses_[i].name);
    }
  }
  return e;
}

absl::StatusOr<MonitorEvaluation> Policy::EvaluateMonitors(std::string_view time_note) const {
  if (auto parts = cosign::SplitNote(time_note); !parts.ok()) return parts.status();
  MonitorEvaluation e;
  for (const Monitor& m : monitors_) {
    auto time = m.key.Verify(time_note);
    if (time.ok()) {
      e.cosigned.push_back({m.name, *time});
    } else if (time.status().code() == absl::StatusCode::kNotFound) {
      e.missing.push_back(m.name);
    } else {
      return absl::Status(time.status().code(), absl::StrCat("monitor ", m.name, ": ", S(time.status().message())));
    }
  }
  e.quorum = e.cosigned.size() >= monitor_quorum_;
  if (e.quorum) e.missing.clear();
  return e;
}

}  // namespace ledger::tlogpolicy
