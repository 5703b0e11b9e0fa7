#include "monitor/server/monitor.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/format/retention/pruned.h"
#include "nlohmann/json.hpp"
#include "util/files/files.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::monitor {
namespace {

constexpr uint64_t kBundleWidth = 256;
// A bundle of 256 leaves of at most 65535 bytes each, with their lengths,
// and the answer's head.
constexpr size_t kMaxBundleBytes = kBundleWidth * (2 + 65535) + 64 * 1024;

std::string StateFile(const std::string& dir) { return dir + "/replay.state"; }
std::string CosignedFile(const std::string& dir) { return dir + "/cosigned.note"; }
std::string AlarmFile(const std::string& dir) { return dir + "/alarm.json"; }
std::string KeysFile(const std::string& dir) { return dir + "/keys"; }

// The size a signed note's checkpoint-time text claims, before its
// signature is checked (which key must have signed it depends on it).
std::optional<uint64_t> ClaimedSize(const std::string& signed_note) {
  const size_t end = signed_note.find("\n\n");
  if (end == std::string::npos) return std::nullopt;
  auto t = note::ParseCheckpointTime(signed_note.substr(0, end + 1));
  if (!t.ok()) return std::nullopt;
  return t->checkpoint.size;
}

}  // namespace

std::string EntryBundlePath(uint64_t index, uint64_t width) {
  std::string n = absl::StrCat(index % 1000);
  n = std::string(3 - n.size(), '0') + n;
  for (index /= 1000; index > 0; index /= 1000) {
    std::string group = absl::StrCat(index % 1000);
    n = absl::StrCat("x", std::string(3 - group.size(), '0'), group, "/", n);
  }
  std::string path = absl::StrCat("tile/entries/", n);
  if (width < kBundleWidth) absl::StrAppend(&path, ".p/", width);
  return path;
}

absl::StatusOr<std::vector<std::string_view>> ParseEntryBundle(std::string_view bundle, uint64_t width) {
  std::vector<std::string_view> leaves;
  while (!bundle.empty()) {
    if (bundle.size() < 2) return absl::DataLossError("entry bundle: a length cut short");
    size_t n = (static_cast<uint8_t>(bundle[0]) << 8) | static_cast<uint8_t>(bundle[1]);
    if (bundle.size() - 2 < n) {
      return absl::DataLossError(absl::StrCat("entry bundle: entry ", leaves.size(), " of ", n, " bytes cut short"));
    }
    leaves.push_back(bundle.substr(2, n));
    bundle.remove_prefix(2 + n);
  }
  if (leaves.size() != width) {
    return absl::DataLossError(absl::StrCat("entry bundle: ", leaves.size(), " entries, want ", width));
  }
  return leaves;
}

absl::StatusOr<std::unique_ptr<Monitor>> Monitor::Open(Options options) {
  if (options.cosigner == nullptr) return absl::InvalidArgumentError("monitor: no key to cosign with");
  if (!options.get) {
    options.get = [](const std::string& url) {
      return http::Fetch("GET", url, "", {.timeout_ms = 30'000, .max_answer = kMaxBundleBytes, .peer = "log"});
    };
  }
  if (std::filesystem::exists(AlarmFile(options.dir))) {
    return absl::FailedPreconditionError(absl::StrCat(
        AlarmFile(options.dir),
        ": the monitor refused this log's note and halted; read the evidence there, and remove the file to let it "
        "cosign again"));
  }
  std::unique_ptr<Monitor> m(new Monitor(std::move(options)));
  sync::MutexLock step(&m->step_mu_);
  auto keys = note::KeySet::Of(m->options_.log_key.VerifierKey());
  if (!keys.ok()) return keys.status();
  m->keys_ = *std::move(keys);
  if (auto kept = files::ReadFile(KeysFile(m->options_.dir)); kept.ok()) {
    std::istringstream in(*kept);
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      auto statement = j.is_string()
                           ? note::ParseKeyRotation(j.get<std::string>())
                           : absl::StatusOr<note::KeyRotationStatement>(absl::InvalidArgumentError("not JSON"));
      absl::Status followed = statement.ok() ? m->keys_.Follow(statement->seq, statement->old_vkey, statement->new_vkey,
                                                               j.get<std::string>())
                                             : statement.status();
      if (!followed.ok()) {
        return absl::DataLossError(absl::StrCat(KeysFile(m->options_.dir), ": ", followed.message()));
      }
      m->rotations_.push_back(j.get<std::string>());
    }
  }
  auto state = files::ReadFile(StateFile(m->options_.dir));
  if (state.ok()) {
    auto replay = replay::Replay::Decode(*state);
    if (!replay.ok()) {
      return absl::DataLossError(absl::StrCat(StateFile(m->options_.dir), ": ", replay.status().message()));
    }
    m->replay_ = *std::move(replay);
  } else if (!absl::IsNotFound(state.status())) {
    return state.status();
  }
  auto cosigned = files::ReadFile(CosignedFile(m->options_.dir));
  if (!cosigned.ok() && !absl::IsNotFound(cosigned.status())) return cosigned.status();
  sync::MutexLock lock(&m->mu_);
  m->replayed_ = m->replay_.size();
  if (cosigned.ok()) {
    auto text = m->OpenNote(*cosigned);
    auto t = text.ok() ? note::ParseCheckpointTime(*text) : absl::StatusOr<note::CheckpointTime>(text.status());
    if (!t.ok()) {
      return absl::DataLossError(absl::StrCat(CosignedFile(m->options_.dir), ": ", t.status().message()));
    }
    m->cosigned_size_ = t->checkpoint.size;
    // Its own line is the last: the note's text and that line, remembered.
    const size_t last = cosigned->rfind("\u2014 ", cosigned->size() - 1);
    if (last != std::string::npos) m->Remember(*text, cosigned->substr(last));
    m->cosigned_ = *std::move(cosigned);
  }
  return m;
}

absl::StatusOr<std::string> Monitor::Get(const std::string& path) const {
  auto reply = options_.get(options_.log_url + path);
  if (!reply.ok()) {
    fetch_errors_.Add();
    return absl::UnavailableError(absl::StrCat("GET ", path, ": ", reply.status().message()));
  }
  if (reply->status != 200) {
    fetch_errors_.Add();
    std::string why = reply->body.substr(0, std::min<size_t>(reply->body.find('\n'), 200));
    return absl::UnavailableError(absl::StrCat("GET ", path, ": HTTP ", reply->status, ": ", why));
  }
  return std::move(reply->body);
}

absl::StatusOr<Round> Monitor::Step() {
  {
    sync::MutexLock lock(&mu_);
    if (!alarm_.empty()) return absl::FailedPreconditionError(absl::StrCat("halted: ", alarm_));
  }
  auto signed_note = Get("/checkpoint/time-note");
  if (!signed_note.ok()) return signed_note.status();
  notes_read_.Add();
  Round round;
  auto cosigned = Cosign(*signed_note);
  if (cosigned.ok()) {
    round.note_size = cosigned->size;
    round.replayed = cosigned->replayed;
    round.cosigned = cosigned->now;
    if (!cosigned->now) round.skipped = "cosigned already";
    return round;
  }
  // A note this monitor does not cosign (another version, or one below
  // its replay) is skipped; the next round reads the next one.
  if (absl::IsInvalidArgument(cosigned.status()) && cosigned.status().message().find("version") != std::string::npos) {
    round.skipped = std::string(cosigned.status().message());
    return round;
  }
  if (absl::IsOutOfRange(cosigned.status())) {
    round.skipped = std::string(cosigned.status().message());
    return round;
  }
  return cosigned.status();
}

absl::StatusOr<Monitor::Cosignature> Monitor::Cosign(const std::string& signed_note) {
  sync::MutexLock step(&step_mu_);
  {
    sync::MutexLock lock(&mu_);
    if (!alarm_.empty()) return absl::FailedPreconditionError(absl::StrCat("halted: ", alarm_));
  }
  auto text = OpenNote(signed_note);
  if (!text.ok() && absl::IsPermissionDenied(text.status()) && ClaimedSize(signed_note).value_or(0) > replay_.size()) {
    // A rotation may be among the entries up to it: replay them, then
    // open it with the key of its size.
    const uint64_t before = replay_.size();
    if (absl::Status s = CatchUp(*ClaimedSize(signed_note), signed_note); !s.ok()) {
      if (absl::IsUnavailable(s) && replay_.size() > before) Save().IgnoreError();
      return s;
    }
    text = OpenNote(signed_note);
  }
  if (!text.ok()) {
    return absl::PermissionDeniedError(absl::StrCat("time note: not signed by the log's key ", options_.log_key.name(),
                                                    ": ", text.status().message()));
  }
  auto t = note::ParseCheckpointTime(*text);
  if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("time note: ", t.status().message()));
  if (t->checkpoint.origin != options_.log_key.name()) {
    return absl::PermissionDeniedError(absl::StrCat("time note: origin '", t->checkpoint.origin,
                                                    "', not the log key's name '", options_.log_key.name(), "'"));
  }
  const uint64_t size = t->checkpoint.size;
  if (t->version() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("time note: of version ", t->version(), "; monitors cosign version 4 only"));
  }
  // A note cosigned before: its line again.
  if (auto it = recent_.find(*text); it != recent_.end()) return Cosignature{it->second, size, 0, false};
  if (size < replay_.size()) {
    return absl::OutOfRangeError(absl::StrCat("time note: of size ", size, ", below the ", replay_.size(),
                                              " entries this monitor replayed; it cosigns notes at or beyond them"));
  }
  const uint64_t before = replay_.size();
  if (absl::Status s = CatchUp(size, signed_note); !s.ok()) {
    // Keep what was replayed: the next round goes on from there.
    if (absl::IsUnavailable(s) && replay_.size() > before) Save().IgnoreError();
    return s;
  }
  if (std::optional<replay::Finding> finding = replay_.Check(*t); finding.has_value()) {
    return Alarm(signed_note, *finding);
  }
  const uint64_t note_seconds = static_cast<uint64_t>(t->time_us / 1'000'000);
  auto line = options_.cosigner->Cosign(*text, std::max(options_.now(), std::max<uint64_t>(note_seconds, 1)));
  if (!line.ok()) return line.status();
  const std::string cosigned = signed_note + *line;
  // Durable before it is served.
  if (absl::Status s = Save(); !s.ok()) return s;
  if (absl::Status s = files::WriteFileAtomically(CosignedFile(options_.dir), cosigned); !s.ok()) return s;
  Remember(*text, *line);
  {
    sync::MutexLock lock(&mu_);
    cosigned_ = cosigned;
    cosigned_size_ = size;
  }
  cosignatures_.Add();
  return Cosignature{*line, size, replay_.size() - before, true};
}

void Monitor::Remember(const std::string& text, const std::string& line) {
  constexpr size_t kRecent = 1024;
  recent_[text] = line;
  recent_order_.push_back(text);
  if (recent_order_.size() > kRecent) {
    recent_.erase(recent_order_.front());
    recent_order_.pop_front();
  }
}

absl::Status Monitor::CatchUp(uint64_t size, const std::string& note) {
  uint64_t saved = replay_.size();
  while (replay_.size() < size) {
    const uint64_t index = replay_.size() / kBundleWidth;
    const uint64_t first = replay_.size() % kBundleWidth;
    const uint64_t width = std::min(kBundleWidth, size - index * kBundleWidth);
    const std::string path = absl::StrCat("/tlog/", EntryBundlePath(index, width));
    auto bundle = Get(path);
    if (!bundle.ok()) return bundle.status();
    auto leaves = ParseEntryBundle(*bundle, width);
    if (!leaves.ok()) return absl::UnavailableError(absl::StrCat("GET ", path, ": ", leaves.status().message()));
    for (uint64_t i = first; i < width; ++i) {
      if (retention::LooksPruned((*leaves)[i])) {
        // Not the log's fault (CONTRACT section 9): its body went before
        // this monitor replayed it, so the maps cannot be rebuilt from here.
        return absl::FailedPreconditionError(absl::StrCat(
            "entry ", index * kBundleWidth + i,
            " was pruned under the log's retention policy before this monitor replayed it (CONTRACT section 9): a "
            "monitor must keep up with the log's retention passes; it cannot check the log's maps from here"));
      }
      const bool rotation = (*leaves)[i].find("\"kind\":\"key_rotation\"") != std::string_view::npos;
      receipt::Entry entry;
      if (std::optional<replay::Finding> finding = replay_.Append((*leaves)[i], rotation ? &entry : nullptr);
          finding.has_value()) {
        return Alarm(note, *finding);
      }
      if (rotation && entry.receipt.has_key_rotation()) {
        if (std::optional<replay::Finding> finding = FollowRotation(entry); finding.has_value()) {
          return Alarm(note, *finding);
        }
      }
    }
    {
      sync::MutexLock lock(&mu_);
      replayed_ = replay_.size();
    }
    if (replay_.size() - saved >= options_.save_every) {
      if (absl::Status s = Save(); !s.ok()) return s;
      saved = replay_.size();
    }
  }
  return absl::OkStatus();
}

absl::Status Monitor::Save() {
  // The keys first: a state that covers a rotation never lacks it.
  std::string kept;
  for (const std::string& r : rotations_) absl::StrAppend(&kept, nlohmann::json(r).dump(), "\n");
  if (!rotations_.empty()) {
    if (absl::Status s = files::WriteFileAtomically(KeysFile(options_.dir), kept); !s.ok()) return s;
  }
  return files::WriteFileAtomically(StateFile(options_.dir), replay_.Encode());
}

absl::StatusOr<std::string> Monitor::OpenNote(const std::string& signed_note) {
  auto size = ClaimedSize(signed_note);
  if (!size) return options_.log_key.Open(signed_note);  // a malformed note: said as the key finds it
  return keys_.Open(signed_note, *size);
}

std::optional<replay::Finding> Monitor::FollowRotation(const receipt::Entry& entry) {
  const auto& k = entry.receipt.key_rotation();
  for (const std::string& followed : rotations_) {
    if (followed == k.note()) return std::nullopt;  // replayed again after a restart
  }
  const std::string expected_id = absl::StrCat("ledger.key.", rotations_.size() + 1);
  absl::Status s = entry.emitter != receipt::kLedgerEmitter || entry.receipt.receipt_id() != expected_id
                       ? absl::InvalidArgumentError(absl::StrCat("want the ledger's ", expected_id))
                       : keys_.Follow(entry.seq, k.old_key(), k.new_key(), k.note());
  if (!s.ok()) {
    return replay::Finding{"key_rotation", static_cast<int64_t>(entry.seq), "a key rotation the log's keys do not make",
                           "a statement of the key trusted at its seq and the new key, both signatures valid",
                           std::string(s.message())};
  }
  rotations_.push_back(k.note());
  jsonlog::Warn("monitor_key_rotated")
      .Int("seq", static_cast<int64_t>(entry.seq))
      .Str("old_key", k.old_key())
      .Str("new_key", k.new_key())
      .Emit();
  return std::nullopt;
}

absl::Status Monitor::Alarm(const std::string& note, const replay::Finding& finding) {
  std::string last;
  uint64_t last_size = 0;
  {
    sync::MutexLock lock(&mu_);
    last = cosigned_;
    last_size = cosigned_size_;
  }
  // The note the entries give, beside the one the log signed.
  std::string replayed_note;
  auto text = OpenNote(note);
  auto t = text.ok() ? note::ParseCheckpointTime(*text) : absl::StatusOr<note::CheckpointTime>(text.status());
  if (t.ok() && replay_.size() == t->checkpoint.size) {
    note::CheckpointTime ours = *t;
    ours.checkpoint.root = replay_.root();
    ours.run_map_root = replay_.runs_root();
    ours.team_map_root = replay_.teams_root();
    replayed_note = note::FormatCheckpointTime(ours);
  }
  nlohmann::json evidence = {
      {"log", options_.log_key.name()},
      {"raised_at", options_.now()},
      {"finding",
       {{"check", finding.check},
        {"seq", finding.seq},
        {"what", finding.what},
        {"expected", finding.expected},
        {"found", finding.found}}},
      {"refused_note", note},
      {"replayed_note", replayed_note},
      {"last_cosigned_note", last},
      {"entries_since_cosigned", {{"from", last_size}, {"to", replay_.size()}}},
      {"difference", nullptr},
      {"to_resume", "remove this file once the cause is known; the monitor then cosigns this log again"},
  };
  std::string summary = finding.Text();
  if (t.ok() && replay_.size() == t->checkpoint.size && (finding.check == "run_map" || finding.check == "team_map")) {
    nlohmann::json difference = Difference(note, *t, finding.check == "team_map");
    if (difference.contains("key")) {
      const std::string named =
          difference.contains("team")
              ? absl::StrCat(difference["team"].get<std::string>(), difference.contains("run_id")
                                                                        ? "/" + difference["run_id"].get<std::string>()
                                                                        : std::string())
              : absl::StrCat("key ", difference["key"].get<std::string>());
      absl::StrAppend(&summary, "; the ledger misstates ", named,
                      difference["first_differing_seq"].is_null()
                          ? std::string()
                          : absl::StrCat(", first at seq ", difference["first_differing_seq"].get<uint64_t>()));
    }
    evidence["difference"] = std::move(difference);
  }
  absl::Status written = files::WriteFileAtomically(AlarmFile(options_.dir), evidence.dump(2) + "\n");
  {
    sync::MutexLock lock(&mu_);
    alarm_ = summary;
  }
  jsonlog::Error("monitor_alarm")
      .Str("log", options_.log_key.name())
      .Str("check", finding.check)
      .Int("seq", finding.seq)
      .Msg(summary)
      .Str("evidence", AlarmFile(options_.dir))
      .Emit();
  if (!written.ok()) return written;
  return absl::FailedPreconditionError(
      absl::StrCat("halted: ", summary, " (evidence in ", AlarmFile(options_.dir), ")"));
}

std::string Monitor::Cosigned() const {
  sync::MutexLock lock(&mu_);
  return cosigned_;
}

Status Monitor::status() const {
  sync::MutexLock lock(&mu_);
  return {replayed_, cosigned_size_, alarm_};
}

std::string Monitor::RenderMetrics() const {
  const Status s = status();
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, uint64_t value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name, " ", value, "\n");
  };
  metric("ledger_monitor_entries_replayed", "gauge", "Entries of the log the monitor replayed.", s.replayed);
  metric("ledger_monitor_cosigned_tree_size", "gauge", "Tree size of the time note the monitor cosigned last.",
         s.cosigned_size);
  metric("ledger_monitor_cosignatures_total", "counter", "Time notes cosigned by this process.", cosignatures_.value());
  metric("ledger_monitor_notes_read_total", "counter", "Time notes read from the log.", notes_read_.value());
  metric("ledger_monitor_fetch_errors_total", "counter", "Reads from the log that failed.", fetch_errors_.value());
  metric("ledger_monitor_alarm", "gauge",
         "1 when the monitor refused a note of the log and halted (evidence in alarm.json).", s.alarm.empty() ? 0 : 1);
  return out;
}

// POST /cosign: the time note checked and cosigned, or why not.
namespace {

http::HttpResponse ServeCosign(const http::HttpRequest& r, Monitor& monitor) {
  using http::Text;
  if (r.method != "POST") {
    http::HttpResponse m = Text(405, "cosign: POST only\n");
    m.headers["Allow"] = "POST";
    return m;
  }
  auto c = monitor.Cosign(r.body);
  if (c.ok()) return Text(200, c->line);
  int status = 500;
  switch (c.status().code()) {
    case absl::StatusCode::kPermissionDenied:
      status = 403;
      break;
    case absl::StatusCode::kInvalidArgument:
      status = 400;
      break;
    case absl::StatusCode::kOutOfRange:
      status = 409;
      break;
    case absl::StatusCode::kUnavailable:
      status = 503;
      break;
    case absl::StatusCode::kFailedPrecondition:
      status = 422;
      break;
    default:
      break;
  }
  return Text(status, absl::StrCat(c.status().message(), "\n"));
}

}  // namespace

http::HttpResponse Handle(const http::HttpRequest& r, Monitor& monitor) {
  using http::Text;
  if (r.path == "/cosign") return ServeCosign(r, monitor);
  if (r.path == "/healthz") return Text(200, "ok\n");
  if (r.path == "/metrics") {
    http::HttpResponse m = Text(200, monitor.RenderMetrics());
    m.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return m;
  }
  if (r.path == "/cosigned") {
    std::string note = monitor.Cosigned();
    if (note.empty()) return Text(404, "no note cosigned yet\n");
    return Text(200, std::move(note));
  }
  return Text(404, "not found: POST /cosign; GET /cosigned, /metrics, /healthz\n");
}

}  // namespace ledger::monitor
