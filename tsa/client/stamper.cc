#include "tsa/client/stamper.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/format/note/note.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::tsa {
namespace {

constexpr size_t kHeld = 1024;

struct Parsed {
  std::string text;
  uint64_t size = 0;
  int64_t time_us = 0;
};

absl::StatusOr<Parsed> ParseNote(std::string_view note) {
  auto text = timestamp::NoteText(note);
  if (!text.ok()) return text.status();
  auto time = note::ParseCheckpointTime(*text);
  if (!time.ok()) return time.status();
  return Parsed{std::string(*text), time->checkpoint.size, time->time_us};
}

}  // namespace

absl::StatusOr<std::unique_ptr<Stamper>> Stamper::Start(timestamp::TsaRoots roots, LatestFn latest, Post post,
                                                        Options options) {
  if (!note::IsValidKeyName(options.name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tsa-name '", options.name, "': not a key name (non-empty, no space, no '+')"));
  }
  if (options.every < 1) return absl::InvalidArgumentError("--tsa-every: want 1 or more");
  if (options.max_delay_s < 1) return absl::InvalidArgumentError("--tsa-max-delay: want 1 second or more");
  std::unique_ptr<Stamper> s(new Stamper(std::move(roots), std::move(latest), std::move(post), std::move(options)));
  s->thread_ = std::thread([p = s.get()] { p->Run(); });
  return s;
}

Stamper::Stamper(timestamp::TsaRoots roots, LatestFn latest, Post post, Options options)
    : roots_(std::move(roots)), latest_(std::move(latest)), post_(std::move(post)), options_(std::move(options)) {}

Stamper::~Stamper() {
  {
    sync::MutexLock lock(&stop_mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void Stamper::Run() {
  while (true) {
    {
      sync::MutexLock lock(&stop_mu_);
      auto deadline = sync::CondVar::Clock::now() + std::chrono::milliseconds(options_.interval_ms);
      while (!stop_ && stop_cv_.WaitUntil(&stop_mu_, deadline)) {
      }
      if (stop_) return;
    }
    auto note = latest_();
    if (!note.ok()) continue;
    auto text = timestamp::NoteText(*note);
    if (!text.ok()) continue;
    bool due = false;
    {
      sync::MutexLock lock(&mu_);
      if (last_seen_ == *text) continue;
      last_seen_ = std::string(*text);
      due = seen_++ % static_cast<uint64_t>(options_.every) == 0;
    }
    if (due) Ask(*note).IgnoreError();  // counted in the metrics, logged
  }
}

absl::Status Stamper::Failed(stats::Counter& counter, absl::Status status) {
  counter.Add();
  sync::MutexLock lock(&mu_);
  if (last_error_ != status.message()) {
    jsonlog::Warn("tsa_failed").Str("tsa", options_.url).Msg(std::string(status.message())).Emit();
    last_error_ = std::string(status.message());
  }
  return status;
}

absl::Status Stamper::Ask(std::string_view note) {
  auto parsed = ParseNote(note);
  if (!parsed.ok()) return parsed.status();
  sync::MutexLock ask(&ask_mu_);
  if (!LineFor(parsed->text).empty()) return absl::OkStatus();
  auto request = timestamp::MakeRequest(parsed->text, options_.policy);
  if (!request.ok()) return Failed(refused_, request.status());
  auto reply = post_(request->der);
  if (!reply.ok()) return Failed(unavailable_, absl::UnavailableError(reply.status().message()));
  if (reply->status != 200) {
    return Failed(unavailable_, absl::UnavailableError(absl::StrCat(
                                    "TSA ", options_.url, ": HTTP ", reply->status, ": ",
                                    reply->body.substr(0, std::min<size_t>(reply->body.find('\n'), 200)))));
  }
  auto token = timestamp::TokenFromReply(reply->body, *request);
  if (!token.ok()) return Failed(refused_, token.status());
  // Checked as verifiers will check it: a token they would refuse (another
  // CA, a clock far from the TSA's) is never served.
  auto stamp = timestamp::VerifyToken(*token, parsed->text, roots_);
  if (!stamp.ok()) return Failed(refused_, stamp.status());
  if (auto s = timestamp::CheckTime(parsed->time_us, *stamp, options_.max_delay_s); !s.ok()) {
    return Failed(refused_, absl::FailedPreconditionError(absl::StrCat(
                                s.message(), " (is the ledger's clock, or the TSA's, wrong? the token is not kept)")));
  }
  auto line = timestamp::StampLine(options_.name, *token);
  if (!line.ok()) return Failed(refused_, line.status());
  {
    sync::MutexLock lock(&mu_);
    if (!held_.contains(parsed->text)) {
      held_.emplace(parsed->text, *line);
      order_.push_back(parsed->text);
      if (order_.size() > kHeld) {
        held_.erase(order_.front());
        order_.pop_front();
      }
    }
    stamped_size_ = std::max(stamped_size_, parsed->size);
    last_error_.clear();
  }
  stamps_.Add();
  // Kept beside the note; a failure to keep it loses only that (the line
  // is held in memory, and the note can be stamped again).
  if (options_.keep) {
    if (absl::Status s = options_.keep(parsed->size, *line); !s.ok()) {
      jsonlog::Warn("time_stamp_not_kept").Str("tsa", options_.url).Msg(std::string(s.message())).Emit();
    }
  }
  return absl::OkStatus();
}

std::string Stamper::LineFor(std::string_view text) const {
  {
    sync::MutexLock lock(&mu_);
    if (auto it = held_.find(std::string(text)); it != held_.end()) return it->second;
  }
  if (!options_.kept) return "";
  auto time = note::ParseCheckpointTime(text);
  if (!time.ok()) return "";
  auto line = options_.kept(time->checkpoint.size);
  if (!line.ok()) {
    jsonlog::Warn("time_stamps_unreadable").Msg(std::string(line.status().message())).Emit();
    return "";
  }
  if (line->empty()) return "";
  // The line kept for that size may be of another note of that size (a
  // note signed again at a restart): checked again against this text.
  auto tokens = timestamp::FindStamps(absl::StrCat("x\n\n", *line));
  if (tokens.size() != 1 || !timestamp::VerifyToken(tokens[0], text, roots_).ok()) return "";
  return *line;
}

std::string Stamper::Line(std::string_view time_note) const {
  auto text = timestamp::NoteText(time_note);
  return text.ok() ? LineFor(*text) : "";
}

std::string Stamper::Stamped(std::string_view time_note) const {
  return absl::StrCat(std::string(time_note), Line(time_note));
}

absl::StatusOr<std::string> Stamper::StampedWithin(std::string_view time_note, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  absl::Status last;
  while (true) {
    std::string stamped = Stamped(time_note);
    if (stamped.size() != time_note.size()) return stamped;
    if (!last.ok() || std::chrono::steady_clock::now() < deadline) last = Ask(time_note);
    if (last.ok()) {
      if (std::chrono::steady_clock::now() < deadline) continue;
      last = absl::UnavailableError("a token was kept but the note does not carry it");
    }
    if (!absl::IsUnavailable(last) || std::chrono::steady_clock::now() >= deadline) {
      return absl::UnavailableError(
          absl::StrCat("no time-stamp from TSA ", options_.url, " within ", wait.count(), " ms: ", last.message()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::string Stamper::RenderMetrics() const {
  uint64_t size = 0;
  {
    sync::MutexLock lock(&mu_);
    size = stamped_size_;
  }
  return absl::StrCat(
      "# HELP ledger_tsa_stamps_total Time-stamp tokens received from the TSA and kept.\n"
      "# TYPE ledger_tsa_stamps_total counter\n"
      "ledger_tsa_stamps_total ",
      stamps_.value(),
      "\n"
      "# HELP ledger_tsa_failures_total Requests to the TSA that brought no token kept, by reason.\n"
      "# TYPE ledger_tsa_failures_total counter\n"
      "ledger_tsa_failures_total{reason=\"unavailable\"} ",
      unavailable_.value(), "\nledger_tsa_failures_total{reason=\"refused\"} ", refused_.value(),
      "\n"
      "# HELP ledger_tsa_stamped_tree_size Tree size of the latest time note stamped.\n"
      "# TYPE ledger_tsa_stamped_tree_size gauge\n"
      "ledger_tsa_stamped_tree_size ",
      size, "\n");
}

}  // namespace ledger::tsa
