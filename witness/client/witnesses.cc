#include "witness/client/witnesses.h"

#include <charconv>
#include <chrono>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/note/note.h"
#include "util/files/files.h"
#include "util/jsonlog/jsonlog.h"
#include "witness/server/state.h"

namespace ledger::witnesses {
namespace {

constexpr int kMaxConflictRetries = 2;
constexpr size_t kRecent = 1024;  // cosignatures kept in memory per witness

std::string S(absl::string_view v) { return std::string(v); }

bool ParseSize(std::string_view v, uint64_t* out) {
  if (v.empty() || (v.size() > 1 && v[0] == '0')) return false;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && p == v.data() + v.size();
}

// The text of a signed note and the size its checkpoint states.
absl::StatusOr<std::pair<std::string, uint64_t>> TextAndSize(std::string_view note) {
  auto parts = cosign::SplitNote(note);
  if (!parts.ok()) return parts.status();
  auto cp = note::ParseCheckpoint(parts->text);
  if (!cp.ok()) return cp.status();
  return std::make_pair(std::move(parts->text), cp->size);
}

}  // namespace

struct Witnesses::State {
  const tlogpolicy::Witness* witness = nullptr;
  std::string id;    // hex SHA-256 of its verifier key
  std::string path;  // where its latest cosignature is kept
  std::thread thread;
  mutable sync::Mutex mu;
  uint64_t known_size ABSL_GUARDED_BY(mu) = 0;  // the size it last cosigned, as far as the ledger knows
  bool has_held ABSL_GUARDED_BY(mu) = false;
  uint64_t held_size ABSL_GUARDED_BY(mu) = 0;
  std::string held_text ABSL_GUARDED_BY(mu);  // the checkpoint text it covers
  Held held ABSL_GUARDED_BY(mu);
  // The latest kRecent cosignatures by checkpoint text, oldest first in `order`.
  std::map<std::string, Held> recent ABSL_GUARDED_BY(mu);
  std::deque<std::string> order ABSL_GUARDED_BY(mu);

  void Hold(uint64_t size, std::string text, Held h) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    known_size = size;
    has_held = true;
    held_size = size;
    held_text = text;
    held = h;
    if (recent.emplace(text, h).second) {
      order.push_back(std::move(text));
      if (order.size() > kRecent) {
        recent.erase(order.front());
        order.pop_front();
      }
    } else {
      recent[text] = std::move(h);
    }
  }
  std::atomic<uint64_t> cosignatures{0}, conflicts{0}, refused{0}, unavailable{0};
  // The log's rotations this witness said it follows (add-key-rotation), in
  // order; only the submitting thread touches it.
  size_t rotations_told = 0;
};

Witnesses::Witnesses(tlogpolicy::Policy policy, Source source, Post post, Options options)
    : policy_(std::move(policy)), source_(std::move(source)), post_(std::move(post)), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<Witnesses>> Witnesses::Start(tlogpolicy::Policy policy, Source source, Post post,
                                                            Options options) {
  if (!options.now_s) options.now_s = [] { return static_cast<int64_t>(std::time(nullptr)); };
  std::unique_ptr<Witnesses> w(
      new Witnesses(std::move(policy), std::move(source), std::move(post), std::move(options)));
  for (const tlogpolicy::Witness& witness : w->policy_.witnesses()) {
    if (witness.url.empty()) continue;
    auto state = std::make_unique<State>();
    state->witness = &witness;
    state->id = hash::Hex(hash::Sha256(witness.key.vkey()));
    state->path = absl::StrCat(w->options_.data_dir, "/witnesses/", state->id);
    w->states_.push_back(std::move(state));
  }
  if (w->states_.empty()) {
    return absl::InvalidArgumentError("witness policy: no witness has a URL (witness <name> <vkey> <url>)");
  }
  std::error_code ec;
  std::filesystem::create_directories(w->options_.data_dir + "/witnesses", ec);
  if (ec) return absl::UnavailableError(absl::StrCat("witnesses: cannot create ", w->options_.data_dir, "/witnesses"));
  for (auto& state : w->states_) {
    auto kept = files::ReadFile(state->path);
    std::string text = kept.ok() ? *std::move(kept) : "";
    size_t eol = text.find('\n');
    uint64_t size = 0;
    if (!kept.ok() || eol == std::string::npos || !ParseSize(std::string_view(text).substr(0, eol), &size)) continue;
    std::string line = text.substr(eol + 1);
    auto note = w->source_.checkpoint(size);
    auto split = note.ok() ? TextAndSize(*note) : note.status();
    auto time = split.ok() ? state->witness->key.Verify(*note + line) : split.status();
    if (!time.ok()) {
      jsonlog::Warn("witness_cosignature_dropped")
          .Str("witness", state->witness->name)
          .Msg(absl::StrCat("the kept cosignature of size ", size, " does not verify: ", S(time.status().message())))
          .Emit();
      continue;
    }
    sync::MutexLock lock(&state->mu);
    state->Hold(size, split->first, {state->witness->name, *time, line});
  }
  for (auto& state : w->states_) {
    State* s = state.get();
    s->thread = std::thread([w = w.get(), s] { w->Run(*s); });
  }
  return w;
}

Witnesses::~Witnesses() {
  {
    sync::MutexLock lock(&stop_mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
  for (auto& state : states_) state->thread.join();
}

void Witnesses::Run(State& w) {
  int backoff_ms = 0;
  while (true) {
    {
      sync::MutexLock lock(&stop_mu_);
      int wait = backoff_ms > 0 ? backoff_ms : options_.poll_ms;
      auto deadline = sync::CondVar::Clock::now() + std::chrono::milliseconds(wait);
      while (!stop_ && stop_cv_.WaitUntil(&stop_mu_, deadline)) {
      }
      if (stop_) return;
    }
    if (options_.shared.has_value()) {
      TakeRecorded(w);
      if (!options_.shared->submits()) continue;
    }
    auto note = source_.checkpoint(0);
    if (!note.ok()) continue;
    auto split = TextAndSize(*note);
    if (!split.ok()) continue;
    {
      sync::MutexLock lock(&w.mu);
      if (w.has_held && w.held_text == split->first) continue;
    }
    if (Submit(w, *note, split->second)) {
      backoff_ms = 0;
    } else {
      backoff_ms = std::min(options_.max_backoff_ms, backoff_ms > 0 ? backoff_ms * 2 : 250);
    }
  }
}

bool Witnesses::Submit(State& w, const std::string& note, uint64_t size) {
  const tlogpolicy::Witness& witness = *w.witness;
  auto failed = [&](std::atomic<uint64_t>& counter, std::string_view why) {
    ++counter;
    jsonlog::Warn("witness_submission_failed").Str("witness", witness.name).Int("size", size).Msg(why).Emit();
    return false;
  };
  for (int attempt = 0; attempt <= kMaxConflictRetries; ++attempt) {
    uint64_t old;
    {
      sync::MutexLock lock(&w.mu);
      old = w.known_size;
    }
    if (old > size) {
      return failed(w.refused, absl::StrCat("the witness cosigned size ", old, ", beyond this ledger's ", size));
    }
    TellRotations(w, size);
    std::string body = absl::StrCat("old ", old, "\n");
    if (old > 0 && old < size) {
      auto proof = source_.consistency(old, size);
      if (!proof.ok()) return failed(w.refused, absl::StrCat("consistency proof: ", S(proof.status().message())));
      for (const hash::Hash& h : *proof) absl::StrAppend(&body, hash::Base64(hash::AsBytes(h)), "\n");
    }
    absl::StrAppend(&body, "\n", note);
    auto reply = post_(absl::StrCat(witness.url, "/add-checkpoint"), body);
    if (!reply.ok()) return failed(w.unavailable, S(reply.status().message()));
    if (reply->status == 409 && reply->content_type.rfind("text/x.tlog.size", 0) == 0) {
      uint64_t stated = 0;
      std::string_view text = reply->body;
      if (!text.ends_with("\n") || !ParseSize(text.substr(0, text.size() - 1), &stated)) {
        return failed(w.refused, "409 without a size");
      }
      ++w.conflicts;
      sync::MutexLock lock(&w.mu);
      w.known_size = stated;
      continue;
    }
    if (reply->status != 200) {
      return failed(w.refused,
                    absl::StrCat("HTTP ", reply->status, ": ", reply->body.substr(0, reply->body.find('\n'))));
    }
    auto time = witness.key.Verify(note + reply->body);
    if (!time.ok()) return failed(w.refused, absl::StrCat("the answer: ", S(time.status().message())));
    std::string line;
    for (std::string_view rest = reply->body; !rest.empty();) {
      size_t eol = rest.find('\n');
      std::string_view l = rest.substr(0, eol + 1);
      rest.remove_prefix(l.size());
      auto parsed = cosign::ParseSignatureLine(l.substr(0, l.size() - 1));
      if (parsed.ok() && parsed->name == witness.key.name() && parsed->key_id() == witness.key.key_id()) line = l;
    }
    {
      sync::MutexLock lock(&w.mu);
      w.Hold(size, note.substr(0, note.find("\n\n") + 1), {witness.name, *time, line});
    }
    ++w.cosignatures;
    // The shard's record first: a node that takes the lead reads it, and
    // the local file only serves this node's restart.
    if (options_.shared.has_value()) {
      if (absl::Status s = options_.shared->record({w.id, size, line}); !s.ok()) {
        jsonlog::Warn("witness_cosignature_not_recorded")
            .Str("witness", witness.name)
            .Int("size", size)
            .Msg(absl::StrCat("the shard's record of the cosignature: ", S(s.message()),
                              "; a node that takes the lead may get a 409 from this witness"))
            .Emit();
      }
    }
    Keep(w);
    return true;
  }
  return failed(w.refused, "409 again and again");
}

void Witnesses::TellRotations(State& w, uint64_t size) {
  if (!source_.rotations) return;
  const std::vector<Rotation> rotations = source_.rotations();
  for (; w.rotations_told < rotations.size() && rotations[w.rotations_told].seq < size; ++w.rotations_told) {
    const Rotation& r = rotations[w.rotations_told];
    auto reply = post_(absl::StrCat(w.witness->url, "/add-key-rotation"), r.note);
    if (!reply.ok() || reply->status != 200) {
      // The checkpoint still goes: a witness that does not follow rotations
      // cosigns it by the old key's line of a transition, or refuses it.
      jsonlog::Warn("witness_rotation_refused")
          .Str("witness", w.witness->name)
          .Int("seq", static_cast<int64_t>(r.seq))
          .Msg(reply.ok() ? absl::StrCat("HTTP ", reply->status, ": ", reply->body.substr(0, reply->body.find('\n')))
                          : S(reply.status().message()))
          .Emit();
      return;
    }
  }
}

void Witnesses::Keep(State& w) {
  std::string kept;
  {
    sync::MutexLock lock(&w.mu);
    kept = absl::StrCat(w.held_size, "\n", w.held.line);
  }
  if (absl::Status s = files::WriteFileAtomically(w.path, kept); !s.ok()) {
    jsonlog::Warn("witness_cosignature_not_kept").Str("witness", w.witness->name).Msg(S(s.message())).Emit();
  }
}

void Witnesses::TakeRecorded(State& w) {
  auto recorded = options_.shared->recorded();
  if (!recorded.ok()) return;  // the next poll asks again
  for (const Recorded& r : *recorded) {
    if (r.witness != w.id) continue;
    {
      sync::MutexLock lock(&w.mu);
      if (r.size < w.known_size || (w.has_held && r.size == w.held_size && r.line == w.held.line)) return;
    }
    auto note = source_.checkpoint(r.size);
    auto split = note.ok() ? TextAndSize(*note) : note.status();
    auto time = split.ok() ? w.witness->key.Verify(*note + r.line) : split.status();
    if (!time.ok()) {
      // Not (yet) this node's checkpoint: the size alone, for the next
      // submission's proof, if this node comes to lead.
      sync::MutexLock lock(&w.mu);
      w.known_size = std::max(w.known_size, r.size);
      return;
    }
    {
      sync::MutexLock lock(&w.mu);
      w.Hold(r.size, split->first, {w.witness->name, *time, r.line});
    }
    Keep(w);
  }
}

std::vector<Held> Witnesses::For(std::string_view note) const {
  std::string text(note.substr(0, note.find("\n\n") + 1));
  std::vector<Held> out;
  for (const auto& state : states_) {
    sync::MutexLock lock(&state->mu);
    if (auto it = state->recent.find(text); it != state->recent.end()) out.push_back(it->second);
  }
  return out;
}

std::string Witnesses::Cosigned(std::string_view note) const {
  std::string out(note);
  for (const Held& h : For(note)) out += h.line;
  return out;
}

absl::StatusOr<std::string> Witnesses::CosignedWithQuorum(std::string_view note, std::chrono::milliseconds wait) const {
  auto split = TextAndSize(note);
  if (!split.ok()) return split.status();
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    std::string cosigned = Cosigned(note);
    auto evaluation = policy_.Evaluate(cosigned);
    if (!evaluation.ok()) return evaluation.status();
    if (evaluation->quorum) return cosigned;
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::UnavailableError(absl::StrCat("the checkpoint of size ", split->second, " lacks the witness quorum ",
                                                 policy_.quorum(), " after ", wait.count(), " ms: no cosignature from ",
                                                 absl::StrJoin(evaluation->missing, ", ")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string Witnesses::RenderMetrics() const {
  std::string total = "# TYPE ledger_witness_cosignatures_total counter\n";
  std::string failures = "# TYPE ledger_witness_failures_total counter\n";
  std::string size = "# TYPE ledger_witness_cosigned_tree_size gauge\n";
  std::string age = "# TYPE ledger_witness_cosignature_age_seconds gauge\n";
  int64_t now = options_.now_s();
  for (const auto& state : states_) {
    const std::string& name = state->witness->name;
    absl::StrAppend(&total, "ledger_witness_cosignatures_total{witness=\"", name, "\"} ", state->cosignatures.load(),
                    "\n");
    for (auto [reason, n] :
         {std::pair{"conflict", state->conflicts.load()}, std::pair{"refused", state->refused.load()},
          std::pair{"unavailable", state->unavailable.load()}}) {
      absl::StrAppend(&failures, "ledger_witness_failures_total{witness=\"", name, "\",reason=\"", reason, "\"} ", n,
                      "\n");
    }
    sync::MutexLock lock(&state->mu);
    if (!state->has_held) continue;
    absl::StrAppend(&size, "ledger_witness_cosigned_tree_size{witness=\"", name, "\"} ", state->held_size, "\n");
    absl::StrAppend(&age, "ledger_witness_cosignature_age_seconds{witness=\"", name, "\"} ",
                    std::max<int64_t>(0, now - static_cast<int64_t>(state->held.time)), "\n");
  }
  return total + failures + size + age;
}

}  // namespace ledger::witnesses
