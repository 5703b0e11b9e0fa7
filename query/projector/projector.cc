#include "query/projector/projector.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "query/projector/keys.h"

namespace ledger::query {
namespace {

using projection::Table;
using projection::Txn;

absl::Status Malformed(std::string_view what) {
  return absl::DataLossError(absl::StrCat("projection: malformed ", std::string(what)));
}

// The step and run records one Apply call touches, decoded once and
// written back once at the end, however many entries change them.
class Records {
 public:
  explicit Records(Txn& txn) : txn_(txn) {}

  Txn& txn() { return txn_; }
  // Whether index rows and step changes are kept: not for outcomes alone.
  bool indexed() const { return txn_.KeepsUnread(); }

  // The record under `key`; *exists tells whether it is in the projection
  // (a new record starts empty). Pointers stay valid until Flush.
  absl::StatusOr<pb::Step*> Step(const std::string& key, bool* exists) {
    return Find(steps_, Table::kSteps, key, exists, "step record");
  }
  absl::StatusOr<pb::Run*> Run(const std::string& key, bool* exists) {
    return Find(runs_, Table::kRuns, key, exists, "run record");
  }
  // Marks a record as present and changed.
  void TouchStep(const std::string& key) { Touch(steps_, key); }
  void TouchRun(const std::string& key) { Touch(runs_, key); }

  // Deadline rows: nothing reads them during an Apply call, so a row put
  // and deleted within one (a step started and completed in one batch)
  // never reaches storage.
  void PutDeadline(std::string row, std::string step_key) {
    deadlines_.insert_or_assign(std::move(row), std::move(step_key));
  }
  void DeleteDeadline(const std::string& row) {
    if (deadlines_.erase(row) == 0) txn_.DeleteUnread(Table::kIndex, row);
  }

  void Flush() {
    for (const auto& [row, step_key] : deadlines_) txn_.PutUnread(Table::kIndex, row, step_key);
    for (const auto& [key, c] : steps_) {
      if (c.dirty) txn_.Put(Table::kSteps, key, Serialize(c.message));
    }
    for (const auto& [key, c] : runs_) {
      if (c.dirty) txn_.Put(Table::kRuns, key, Serialize(c.message));
    }
  }

 private:
  template <typename M>
  struct Cached {
    M message;
    bool exists = false;
    bool dirty = false;
  };
  template <typename M>
  using Cache = absl::node_hash_map<std::string, Cached<M>>;
  absl::flat_hash_map<std::string, std::string> deadlines_;

  template <typename M>
  absl::StatusOr<M*> Find(Cache<M>& cache, Table t, const std::string& key, bool* exists, std::string_view what) {
    auto it = cache.find(key);
    if (it == cache.end()) {
      auto raw = txn_.Get(t, key);
      if (!raw.ok()) return raw.status();
      Cached<M> c;
      if (raw->has_value()) {
        if (!c.message.ParseFromString(**raw)) return Malformed(what);
        c.exists = true;
      }
      it = cache.emplace(key, std::move(c)).first;
    }
    *exists = it->second.exists;
    return &it->second.message;
  }

  template <typename M>
  void Touch(Cache<M>& cache, const std::string& key) {
    auto& c = cache[key];
    c.exists = true;
    c.dirty = true;
  }

  Txn& txn_;
  Cache<pb::Step> steps_;
  Cache<pb::Run> runs_;
};

// The bytes of StepChange{seq, step} with the step's `seqs` left out,
// encoded by hand so that the step is not copied: field 1 varint, field 2
// length-delimited, as protobuf writes them.
std::string EncodeChange(uint64_t seq, pb::Step& step) {
  google::protobuf::RepeatedField<uint64_t> seqs;
  seqs.Swap(step.mutable_seqs());
  std::string body = Serialize(step);
  seqs.Swap(step.mutable_seqs());
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag(1 << 3 | 0);
    coded.WriteVarint64(seq);
    coded.WriteTag(2 << 3 | 2);
    coded.WriteVarint32(static_cast<uint32_t>(body.size()));
    coded.WriteString(body);
  }
  return out;
}

void AddCall(pb::CallTotals* t, const pb::Receipt& r) {
  bool allow = false;
  int64_t cost = 0;
  if (r.has_model_call()) {
    const auto& m = r.model_call();
    allow = m.decision() == pb::DECISION_ALLOW;
    if (allow) {
      t->set_model_calls_allowed(t->model_calls_allowed() + 1);
    } else {
      t->set_model_calls_denied(t->model_calls_denied() + 1);
    }
    t->set_input_tokens(t->input_tokens() + m.input_tokens());
    t->set_output_tokens(t->output_tokens() + m.output_tokens());
    cost = m.cost_micros();
  } else {
    const auto& c = r.tool_call();
    allow = c.decision() == pb::DECISION_ALLOW;
    if (allow) {
      t->set_tool_calls_allowed(t->tool_calls_allowed() + 1);
    } else {
      t->set_tool_calls_denied(t->tool_calls_denied() + 1);
    }
    cost = c.cost_micros();
  }
  t->set_cost_micros(t->cost_micros() + cost);
}

void Charge(pb::Step* s) {
  int64_t actual = s->exec_cost_micros() + s->calls().cost_micros();
  s->set_actual_cost_micros(actual);
  bool conservative = s->state() == pb::STEP_STATE_FAILED || s->state() == pb::STEP_STATE_UNKNOWN;
  s->set_charged_cost_micros(conservative ? std::max(actual, s->cost_reserved_micros()) : actual);
}

StepKey KeyOf(const pb::Receipt& r) { return {r.team(), r.run_id(), r.step_id(), r.attempt() > 0 ? r.attempt() : 1}; }

// The run an entry belongs to.
class RunEdit {
 public:
  RunEdit(Records& records, const projection::Entry& e) : records_(records), e_(e) {}

  absl::Status Load() {
    const pb::Receipt& r = *e_.receipt;
    key_ = EncodeRunKey(r.team(), r.run_id());
    bool exists = false;
    auto run = records_.Run(key_, &exists);
    if (!run.ok()) return run.status();
    run_ = *run;
    if (!exists) {
      run_->set_team(r.team());
      run_->set_run_id(r.run_id());
      run_->set_first_seq(e_.seq);
      run_->set_first_at_us(e_.logged_at_us);
      if (records_.indexed()) records_.txn().PutUnread(Table::kIndex, RunsRow(r.team(), e_.logged_at_us, key_), "");
    }
    records_.TouchRun(key_);
    if (run_->workflow().empty() && !r.workflow().empty()) run_->set_workflow(r.workflow());
    run_->set_last_seq(e_.seq);
    run_->set_last_at_us(e_.logged_at_us);
    run_->set_entries(run_->entries() + 1);
    return absl::OkStatus();
  }

  pb::Run& run() { return *run_; }

 private:
  Records& records_;
  const projection::Entry& e_;
  std::string key_;
  pb::Run* run_ = nullptr;
};

// One step's record being changed by an entry: keeps the run summary and
// the indexes in step with it, and writes the StepChange.
class StepEdit {
 public:
  StepEdit(Records& records, const projection::Entry& e, RunEdit& run) : records_(records), e_(e), run_(run) {}

  // Loads the step; creates it when `create` (else NOT_FOUND when absent).
  absl::Status Load(const StepKey& key, bool create) {
    key_ = key;
    encoded_ = EncodeStepKey(key);
    bool exists = false;
    auto step = records_.Step(encoded_, &exists);
    if (!step.ok()) return step.status();
    step_ = *step;
    if (!exists) {
      if (!create) return absl::NotFoundError("step");
      fresh_ = true;
      step_->set_team(key.team);
      step_->set_run_id(key.run_id);
      step_->set_step_id(key.step_id);
      step_->set_attempt(key.attempt);
      step_->set_first_at_us(e_.logged_at_us);
    }
    if (step_->trace_id().empty() && !e_.receipt->trace_id().empty()) {
      step_->set_trace_id(e_.receipt->trace_id());
    }
    records_.TouchStep(encoded_);
    old_state_ = step_->state();
    old_actual_ = step_->actual_cost_micros();
    old_charged_ = step_->charged_cost_micros();
    old_anomalous_ = step_->anomalies_size() > 0;
    old_anomalies_ = step_->anomalies_size();
    old_parts_ = Parts(*step_);
    return absl::OkStatus();
  }

  pb::Step& step() { return *step_; }

  void Flag(pb::Anomaly a) {
    if (std::find(step_->anomalies().begin(), step_->anomalies().end(), a) == step_->anomalies().end()) {
      step_->add_anomalies(a);
    }
  }

  void Save() {
    Txn& txn = records_.txn();
    const uint64_t first_at = static_cast<uint64_t>(step_->first_at_us());
    const bool indexed = records_.indexed();
    if (fresh_ && indexed) {
      txn.PutUnread(Table::kIndex, TeamTimeRow(key_.team, first_at, encoded_), "");
      txn.PutUnread(Table::kIndex, RunTimeRow(EncodeRunKey(key_.team, key_.run_id), first_at, encoded_), "");
    }
    Charge(step_);
    pb::Run& run = run_.run();
    if (fresh_ || step_->state() != old_state_) {
      if (!fresh_) {
        if (indexed) txn.DeleteUnread(Table::kIndex, StateRow(key_.team, old_state_, first_at, encoded_));
        Count(run, old_state_, -1);
      }
      if (indexed) txn.PutUnread(Table::kIndex, StateRow(key_.team, step_->state(), first_at, encoded_), "");
      Count(run, step_->state(), +1);
      if (step_->state() == pb::STEP_STATE_UNKNOWN) {
        pb::StepRef* ref = run.add_unknown_steps();
        ref->set_step_id(key_.step_id);
        ref->set_attempt(key_.attempt);
      }
    }
    if (!old_anomalous_ && step_->anomalies_size() > 0) run.set_anomalies(run.anomalies() + 1);
    run.set_actual_cost_micros(run.actual_cost_micros() + step_->actual_cost_micros() - old_actual_);
    run.set_charged_cost_micros(run.charged_cost_micros() + step_->charged_cost_micros() - old_charged_);
    step_->add_seqs(e_.seq);
    step_->set_last_seq(e_.seq);
    // A change is what a dashboard follows: the state, the start, the
    // completion, the unknown declaration, an anomaly. Calls only add to
    // the step's totals and are not changes.
    if (indexed && (fresh_ || step_->state() != old_state_ || step_->anomalies_size() != old_anomalies_ ||
                    Parts(*step_) != old_parts_)) {
      txn.PutUnread(Table::kChanges, U64(e_.seq), EncodeChange(e_.seq, *step_));
    }
  }

  const std::string& encoded_key() const { return encoded_; }

 private:
  static int Parts(const pb::Step& s) {
    return (s.has_start() ? 1 : 0) | (s.has_completion() ? 2 : 0) | (s.has_unknown() ? 4 : 0);
  }

  static void Count(pb::Run& run, int state, int delta) {
    switch (state) {
      case pb::STEP_STATE_PENDING:
        run.set_steps_pending(run.steps_pending() + delta);
        break;
      case pb::STEP_STATE_SUCCEEDED:
        run.set_steps_succeeded(run.steps_succeeded() + delta);
        break;
      case pb::STEP_STATE_FAILED:
        run.set_steps_failed(run.steps_failed() + delta);
        break;
      case pb::STEP_STATE_DENIED:
        run.set_steps_denied(run.steps_denied() + delta);
        break;
      case pb::STEP_STATE_UNKNOWN:
        run.set_steps_unknown(run.steps_unknown() + delta);
        break;
      default:
        break;
    }
  }

  Records& records_;
  const projection::Entry& e_;
  RunEdit& run_;
  StepKey key_;
  std::string encoded_;
  pb::Step* step_ = nullptr;
  bool fresh_ = false;
  pb::StepState old_state_ = pb::STEP_STATE_UNSPECIFIED;
  int64_t old_actual_ = 0;
  int64_t old_charged_ = 0;
  bool old_anomalous_ = false;
  int old_anomalies_ = 0;
  int old_parts_ = 0;
};

pb::StepState StateOf(pb::ExecStatus s) {
  return s == pb::EXEC_STATUS_SUCCEEDED ? pb::STEP_STATE_SUCCEEDED : pb::STEP_STATE_FAILED;
}

void RecordCompletion(pb::Step& s, const projection::Entry& e) {
  const auto& x = e.receipt->agent_exec();
  s.set_has_completion(true);
  s.set_completion_seq(e.seq);
  s.set_completion_receipt_id(e.receipt->receipt_id());
  s.set_completed_at_us(e.logged_at_us);
  s.set_exec_status(x.status());
  s.set_exit_code(x.exit_code());
  s.set_duration_ms(x.duration_ms());
  s.set_exec_cost_micros(x.cost_micros());
}

// The step whose start an agent_exec names (its team's 'A' row), if the
// log holds that start.
absl::StatusOr<std::optional<StepKey>> StartOf(Txn& txn, const pb::Receipt& r) {
  auto start = txn.Get(Table::kIndex, StartRow(r.team(), r.agent_exec().start_receipt_id()));
  if (!start.ok()) return start.status();
  if (!start->has_value()) return std::optional<StepKey>();
  auto key = DecodeStepKey(**start);
  if (!key.ok()) return key.status();
  return std::optional<StepKey>(*std::move(key));
}

bool Redacted(const pb::Step& s) {
  return std::find(s.anomalies().begin(), s.anomalies().end(), pb::ANOMALY_REDACTED) != s.anomalies().end();
}

// A step whose start or completion was erased: unknown, flagged, for good
// (what the erased entry said is not known; it is never counted a success).
void MarkRedacted(Records& records, StepEdit& edit) {
  pb::Step& step = edit.step();
  if (step.state() == pb::STEP_STATE_PENDING && records.indexed()) {
    records.DeleteDeadline(DeadlineRow(step.timeout_at_us(), step.start_seq()));
  }
  step.set_state(pb::STEP_STATE_UNKNOWN);
  edit.Flag(pb::ANOMALY_REDACTED);
}

// A completion naming the start of another step: that step is flagged,
// not completed.
absl::Status Mismatched(StepEdit& edit, const StepKey& start) {
  if (auto s = edit.Load(start, /*create=*/false); !s.ok()) return s;
  edit.Flag(pb::ANOMALY_MISMATCHED_COMPLETION);
  edit.Save();
  return absl::OkStatus();
}

// An erased entry (CONTRACT section 8): its skeleton's ids and place, and
// nothing its body said. An erased call is not counted.
absl::Status OnErased(Records& records, const projection::Entry& e, RunEdit& run) {
  Txn& txn = records.txn();
  const pb::Receipt& r = *e.receipt;
  StepEdit edit(records, e, run);
  if (r.has_agent_start()) {
    if (auto s = edit.Load(KeyOf(r), /*create=*/true); !s.ok()) return s;
    txn.Put(Table::kIndex, StartRow(r.team(), r.receipt_id()), edit.encoded_key());
    pb::Step& step = edit.step();
    if (!step.has_start()) {
      step.set_has_start(true);
      step.set_start_seq(e.seq);
      step.set_start_receipt_id(r.receipt_id());
      step.set_started_at_us(e.logged_at_us);
    }
    MarkRedacted(records, edit);
    edit.Save();
    return absl::OkStatus();
  }
  if (r.has_agent_exec()) {
    auto start = StartOf(txn, r);
    if (!start.ok()) return start.status();
    StepKey own = KeyOf(r);
    if (start->has_value() && !(**start == own)) return Mismatched(edit, **start);
    if (auto s = edit.Load(own, /*create=*/true); !s.ok()) return s;
    pb::Step& step = edit.step();
    if (!step.has_completion()) {
      step.set_has_completion(true);
      step.set_completion_seq(e.seq);
      step.set_completion_receipt_id(r.receipt_id());
      step.set_completed_at_us(e.logged_at_us);
    }
    MarkRedacted(records, edit);
    edit.Save();
  }
  return absl::OkStatus();
}

absl::Status OnStart(Records& records, const projection::Entry& e, RunEdit& run) {
  Txn& txn = records.txn();
  const pb::Receipt& r = *e.receipt;
  const auto& a = r.agent_start();
  StepEdit edit(records, e, run);
  if (auto s = edit.Load(KeyOf(r), /*create=*/true); !s.ok()) return s;
  txn.Put(Table::kIndex, StartRow(r.team(), r.receipt_id()), edit.encoded_key());
  pb::Step& step = edit.step();
  if (step.has_start()) {
    edit.Flag(pb::ANOMALY_DUPLICATE_START);
  } else {
    step.set_has_start(true);
    step.set_start_seq(e.seq);
    step.set_start_receipt_id(r.receipt_id());
    step.set_started_at_us(e.logged_at_us);
    step.set_decision(a.decision());
    step.set_reason(a.reason());
    step.set_timeout_ms(a.timeout_ms());
    step.set_cost_reserved_micros(a.cost_reserved_micros());
    if (step.workflow().empty()) step.set_workflow(r.workflow());
    if (step.agent().empty()) step.set_agent(r.agent());
    if (Redacted(step)) {
      // erased completion before it: the step stays unknown
    } else if (a.decision() == pb::DECISION_DENY) {
      step.set_state(pb::STEP_STATE_DENIED);
    } else {
      step.set_timeout_at_us(e.logged_at_us + a.timeout_ms() * 1000);
      if (!step.has_completion() && !step.has_unknown()) {
        step.set_state(pb::STEP_STATE_PENDING);
        if (records.indexed()) records.PutDeadline(DeadlineRow(step.timeout_at_us(), e.seq), edit.encoded_key());
      }
    }
  }
  edit.Save();
  return absl::OkStatus();
}

absl::Status OnExec(Records& records, const projection::Entry& e, RunEdit& run) {
  Txn& txn = records.txn();
  const pb::Receipt& r = *e.receipt;
  const auto& x = r.agent_exec();
  auto start = StartOf(txn, r);
  if (!start.ok()) return start.status();
  StepKey own = KeyOf(r);
  StepEdit edit(records, e, run);
  if (!start->has_value()) {
    if (auto s = edit.Load(own, /*create=*/true); !s.ok()) return s;
    pb::Step& step = edit.step();
    edit.Flag(pb::ANOMALY_ORPHAN_COMPLETION);
    if (step.has_completion()) {
      edit.Flag(step.exec_status() == x.status() ? pb::ANOMALY_DUPLICATE_COMPLETION
                                                 : pb::ANOMALY_CONFLICTING_COMPLETION);
    } else if (!step.has_start()) {
      RecordCompletion(step, e);
      step.set_state(StateOf(x.status()));
      if (step.workflow().empty()) step.set_workflow(r.workflow());
      if (step.agent().empty()) step.set_agent(r.agent());
    }
    edit.Save();
    return absl::OkStatus();
  }
  if (!(**start == own)) return Mismatched(edit, **start);
  if (auto s = edit.Load(own, /*create=*/false); !s.ok()) return s;
  pb::Step& step = edit.step();
  if (Redacted(step)) {
    if (!step.has_completion()) RecordCompletion(step, e);  // its start erased: the step stays unknown
  } else if (step.decision() == pb::DECISION_DENY) {
    edit.Flag(pb::ANOMALY_COMPLETION_AFTER_DENY);
  } else if (step.has_completion()) {
    edit.Flag(step.exec_status() == x.status() ? pb::ANOMALY_DUPLICATE_COMPLETION : pb::ANOMALY_CONFLICTING_COMPLETION);
  } else if (step.has_unknown()) {
    edit.Flag(pb::ANOMALY_LATE_COMPLETION);
    RecordCompletion(step, e);
  } else {
    RecordCompletion(step, e);
    step.set_state(StateOf(x.status()));
    if (records.indexed()) records.DeleteDeadline(DeadlineRow(step.timeout_at_us(), step.start_seq()));
  }
  edit.Save();
  return absl::OkStatus();
}

absl::Status OnUnknown(Records& records, const projection::Entry& e, RunEdit& run) {
  const pb::Receipt& r = *e.receipt;
  const auto& u = r.step_unknown();
  StepEdit edit(records, e, run);
  absl::Status loaded = edit.Load(KeyOf(r), /*create=*/false);
  if (absl::IsNotFound(loaded)) return absl::OkStatus();  // on the run only
  if (!loaded.ok()) return loaded;
  pb::Step& step = edit.step();
  if (step.state() == pb::STEP_STATE_PENDING && step.start_seq() == static_cast<uint64_t>(u.start_seq())) {
    step.set_state(pb::STEP_STATE_UNKNOWN);
    step.set_has_unknown(true);
    step.set_unknown_seq(e.seq);
    step.set_unknown_at_us(e.logged_at_us);
    step.set_deadline_us(u.deadline_us());
    if (records.indexed()) records.DeleteDeadline(DeadlineRow(step.timeout_at_us(), step.start_seq()));
  }
  edit.Save();
  return absl::OkStatus();
}

// The row that finds a call entry by its trace id ('C', keys.h), when it
// carries one.
bool PutCallTraceRow(Txn& txn, const projection::Entry& e) {
  const pb::Receipt& r = *e.receipt;
  if (r.trace_id().empty()) return false;
  txn.PutUnread(Table::kIndex, CallTraceRow(r.team(), r.trace_id(), e.seq), EncodeStepKey(KeyOf(r)));
  return true;
}

absl::Status OnCall(Records& records, const projection::Entry& e, RunEdit& run) {
  const pb::Receipt& r = *e.receipt;
  if (records.indexed()) PutCallTraceRow(records.txn(), e);
  AddCall(run.run().mutable_calls(), r);
  if (!r.step_id().empty()) {
    StepEdit edit(records, e, run);
    absl::Status loaded = edit.Load(KeyOf(r), /*create=*/false);
    if (loaded.ok()) {
      AddCall(edit.step().mutable_calls(), r);
      edit.Save();
      return absl::OkStatus();
    }
    if (!absl::IsNotFound(loaded)) return loaded;
  }
  AddCall(run.run().mutable_unattached_calls(), r);
  int64_t cost = r.has_model_call() ? r.model_call().cost_micros() : r.tool_call().cost_micros();
  run.run().set_actual_cost_micros(run.run().actual_cost_micros() + cost);
  run.run().set_charged_cost_micros(run.run().charged_cost_micros() + cost);
  return absl::OkStatus();
}

// Format 1 listed pending steps only by their deadline rows ('D'), with no
// state row: format 2 gives them their 'S' row, found from the 'D' rows.
absl::StatusOr<uint64_t> PutPendingStateRows(Txn& txn, const projection::Projector::Scan& scan) {
  uint64_t rows = 0;
  absl::Status read;
  absl::Status scanned = scan(Table::kIndex, kDeadlinePrefix, [&](std::string_view, std::string_view step_key) {
    auto key = DecodeStepKey(step_key);
    auto raw = txn.Get(Table::kSteps, step_key);
    pb::Step step;
    if (!key.ok() || !raw.ok() || !raw->has_value() || !step.ParseFromString(**raw)) {
      read = absl::DataLossError("projection: a deadline row names a step whose record is missing or malformed");
      return false;
    }
    if (step.state() != pb::STEP_STATE_PENDING) return true;
    txn.PutUnread(Table::kIndex,
                  StateRow(key->team, pb::STEP_STATE_PENDING, static_cast<uint64_t>(step.first_at_us()), step_key), "");
    ++rows;
    return true;
  });
  if (!scanned.ok()) return scanned;
  if (!read.ok()) return read;
  return rows;
}

// Format 2 had no trace rows of calls ('C'): format 3 writes them from the
// log's call entries, as Apply does.
absl::StatusOr<uint64_t> PutCallTraceRows(const projection::Projector::Replay& replay) {
  uint64_t rows = 0;
  absl::Status replayed = replay([&](absl::Span<const projection::Entry> entries, Txn& txn) {
    for (const projection::Entry& e : entries) {
      if ((e.receipt->has_model_call() || e.receipt->has_tool_call()) && PutCallTraceRow(txn, e)) ++rows;
    }
    return absl::OkStatus();
  });
  if (!replayed.ok()) return replayed;
  return rows;
}

}  // namespace

std::string Serialize(const google::protobuf::MessageLite& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

absl::StatusOr<uint64_t> StepProjector::Upgrade(uint64_t from, projection::Txn& txn, const Scan& scan,
                                                const Replay& replay) {
  if (from < 1 || from >= Format()) return Projector::Upgrade(from, txn, scan, replay);
  uint64_t rows = 0;
  if (from == 1) {
    auto state_rows = PutPendingStateRows(txn, scan);
    if (!state_rows.ok()) return state_rows.status();
    rows += *state_rows;
  }
  auto trace_rows = PutCallTraceRows(replay);
  if (!trace_rows.ok()) return trace_rows.status();
  return rows + *trace_rows;
}

absl::Status StepProjector::Apply(absl::Span<const projection::Entry> entries, projection::Txn& txn) {
  Records records(txn);
  for (const projection::Entry& entry : entries) {
    const pb::Receipt& r = *entry.receipt;
    RunEdit run(records, entry);
    if (auto s = run.Load(); !s.ok()) return s;
    absl::Status s;
    if (entry.erased) {
      if (s = OnErased(records, entry, run); !s.ok()) return s;
      continue;
    }
    switch (r.body_case()) {
      case pb::Receipt::kAgentStart:
        s = OnStart(records, entry, run);
        break;
      case pb::Receipt::kAgentExec:
        s = OnExec(records, entry, run);
        break;
      case pb::Receipt::kStepUnknown:
        s = OnUnknown(records, entry, run);
        break;
      case pb::Receipt::kModelCall:
      case pb::Receipt::kToolCall:
        s = OnCall(records, entry, run);
        break;
      case pb::Receipt::kLeaderEpoch:  // an entry of the run ledger.epochs, no step
      case pb::Receipt::kKeyRotation:  // an entry of the run ledger.keys, no step
      case pb::Receipt::kRedaction:    // an entry of the run ledger.redactions, no step
      case pb::Receipt::kRetention:    // an entry of the run ledger.retention, no step
      case pb::Receipt::BODY_NOT_SET:
        break;
    }
    if (!s.ok()) return s;
  }
  records.Flush();
  return absl::OkStatus();
}

}  // namespace ledger::query
