// report.html (pack::WriteReport): one section per function, each appending
// to the page. Every value from an entry is the emitter's and is escaped;
// the page carries no script and a CSP that allows its one style sheet.
#include "export/pack/report.h"

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "export/pack/internal/report_html.h"
#include "export/pack/internal/step_notes.h"
#include "export/pack/pack.h"
#include "ledger/format/hash/hash.h"
#include "query/projector/keys.h"
#include "query/projector/projector.h"

namespace ledger::pack {
namespace {

namespace pb = evidence::ledger::v1;

// An enum's name without its prefix, in lower case: DECISION_ALLOW -> allow.
std::string EnumWord(const std::string& full, std::string_view prefix) {
  std::string_view s = full;
  if (s.substr(0, prefix.size()) == prefix) s.remove_prefix(prefix.size());
  return absl::AsciiStrToLower(std::string(s));
}

std::string DecisionWord(pb::Decision d) {
  return d == pb::DECISION_UNSPECIFIED ? "" : EnumWord(pb::Decision_Name(d), "DECISION_");
}

void ExecRow(const pb::AgentExec& x, ReportRow* row) {
  row->detail =
      x.status() == pb::EXEC_STATUS_UNSPECIFIED ? "" : EnumWord(pb::ExecStatus_Name(x.status()), "EXEC_STATUS_");
  if (x.has_exit_code()) absl::StrAppend(&row->detail, row->detail.empty() ? "" : ", ", "exit code ", x.exit_code());
  if (x.has_duration_ms()) {
    absl::StrAppend(&row->detail, row->detail.empty() ? "" : ", ", "reported duration ",
                    Duration(x.duration_ms() * 1000));
  }
  if (x.has_cost_micros()) row->cost_micros = x.cost_micros();
}

void CallRow(const pb::Receipt& r, ReportRow* row) {
  if (r.has_model_call()) {
    const auto& m = r.model_call();
    row->name = m.provider().empty() ? m.model() : absl::StrCat(m.provider(), "/", m.model());
    row->target = m.route();
    row->decision = DecisionWord(m.decision());
    row->reason = m.reason();
    if (m.has_input_tokens()) row->input_tokens = m.input_tokens();
    if (m.has_output_tokens()) row->output_tokens = m.output_tokens();
    if (m.has_cost_micros()) row->cost_micros = m.cost_micros();
    return;
  }
  const auto& t = r.tool_call();
  row->name = t.tool();
  row->target = t.target();
  row->decision = DecisionWord(t.decision());
  row->reason = t.reason();
  if (t.has_cost_micros()) row->cost_micros = t.cost_micros();
}

}  // namespace

void ReportEntries::Add(const receipt::Entry& entry) {
  ++seen_;
  if (kept_ >= kMaxRows) return;
  const pb::Receipt& r = entry.receipt;
  ReportRow row;
  row.seq = entry.seq;
  row.logged_at_us = entry.logged_at_us;
  row.emitter = entry.emitter;
  if (entry.erased) {
    // CONTRACT section 8: what the redacted line states, nothing more.
    row.kind = std::string(receipt::KindName(r));
    row.detail = "erased: its body is gone, its leaf hash stays (see its redaction entry)";
  } else {
    Describe(r, &row);
  }
  query::StepKey key{r.team(), r.run_id(), r.step_id(), r.attempt() > 0 ? r.attempt() : 1};
  rows_[query::EncodeStepKey(key)].push_back(std::move(row));
  ++kept_;
}

void ReportEntries::Describe(const pb::Receipt& r, ReportRow* out) {
  ReportRow& row = *out;
  switch (r.body_case()) {
    case pb::Receipt::kAgentStart:
      row.kind = "agent_start";
      row.decision = DecisionWord(r.agent_start().decision());
      row.reason = r.agent_start().reason();
      break;
    case pb::Receipt::kAgentExec:
      row.kind = "agent_exec";
      ExecRow(r.agent_exec(), &row);
      break;
    case pb::Receipt::kModelCall:
    case pb::Receipt::kToolCall:
      row.kind = r.has_model_call() ? "model_call" : "tool_call";
      CallRow(r, &row);
      break;
    case pb::Receipt::kStepUnknown:
      row.kind = "step_unknown";
      if (r.step_unknown().has_deadline_us()) row.detail = "deadline " + UtcTime(r.step_unknown().deadline_us());
      break;
    case pb::Receipt::kLeaderEpoch: {
      const auto& e = r.leader_epoch();
      row.kind = "leader_epoch";
      row.detail = absl::StrCat("epoch ", e.epoch(), ", node ", e.node(), ", over the tree of size ", e.previous_size(),
                                " with root ", e.previous_root());
      break;
    }
    case pb::Receipt::kKeyRotation:
      row.kind = "key_rotation";
      row.detail = absl::StrCat("the log's key from ", r.key_rotation().old_key(), " to ", r.key_rotation().new_key());
      break;
    case pb::Receipt::kRedaction: {
      const auto& d = r.redaction();
      row.kind = "redaction";
      row.detail = absl::StrCat("erases entry ", d.entry_seq(), " (", d.entry_kind(), "): ", d.reason(),
                                "; requested by ", d.requested_by(), ", approved by ", d.approved_by());
      break;
    }
    case pb::Receipt::kRetention: {
      const auto& t = r.retention();
      row.kind = "retention";
      row.detail =
          absl::StrCat("pass ", t.pass(), ": ", t.rule_team().empty() ? "the default rule" : "team " + t.rule_team(),
                       " keeps ", t.keep_s(), " s; its entries below seq ", t.below_seq(), " are pruned");
      break;
    }
    case pb::Receipt::BODY_NOT_SET:
      row.kind = "(none)";
      break;
  }
}

std::string UtcTime(int64_t us) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMicros(us), absl::UTCTimeZone());
}

std::string Duration(int64_t us) {
  if (us < 0) return "-" + Duration(us == INT64_MIN ? INT64_MAX : -us);
  char buf[64];
  int64_t ms = us / 1000;
  if (ms < 1000) return absl::StrCat(ms, " ms");
  int64_t s = ms / 1000, frac = ms % 1000;
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64 " s", s, frac);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " min %02" PRId64 ".%03" PRId64 " s", s / 60, s % 60, frac);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRId64 " h %02" PRId64 " min %02" PRId64 ".%03" PRId64 " s", s / 3600,
                  s / 60 % 60, s % 60, frac);
  }
  return buf;
}

namespace html {

std::string E(std::string_view s) { return HtmlEscape(s); }

int64_t StepStart(const Step& s) { return s.has_start() ? s.started_at_us() : s.first_at_us(); }

// The step's end: its unknown declaration, its completion, or (pending, or
// denied at its start) none.
int64_t StepEnd(const Step& s) {
  if (s.has_unknown()) return s.unknown_at_us();
  if (s.has_completion()) return s.completed_at_us();
  return -1;
}

std::string StateOf(const Step& s) { return query::StateName(s.state()); }

void Fact(const std::string& name, const std::string& html, std::string* h) {
  if (html.empty()) return;
  absl::StrAppend(h, "<tr><th scope=\"row\">", name, "</th><td>", html, "</td></tr>");
}

namespace {

using Out = absl::FunctionRef<void(std::string_view)>;

std::string Dollars(int64_t micros) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.6f", static_cast<double>(micros) / 1e6);
  return buf;
}

std::string KeyOf(const Step& s) { return query::EncodeStepKey({s.team(), s.run_id(), s.step_id(), s.attempt()}); }

}  // namespace

void StepChooser::Add(const Step& s) {
  ++shown_.total;
  shown_.unknown += s.state() == query::pb::STEP_STATE_UNKNOWN;
  std::string key = KeyOf(s);
  if (entries_.rows().count(key)) shown_.step_keys.insert(key);
  std::string this_run = query::EncodeRunKey(s.team(), s.run_id());
  if (shown_.total > 1 && this_run != run_) shown_.multi_run = true;
  run_ = std::move(this_run);
  std::pair<int64_t, std::string> at(StepStart(s), std::move(key));
  // Keys are unique: a step after the last of a full list stays out.
  if (first_.size() == kMaxSteps && !(at < first_.rbegin()->first)) return;
  first_.emplace(std::move(at), s);
  if (first_.size() > kMaxSteps) first_.erase(std::prev(first_.end()));
}

Shown StepChooser::Finish() && {
  for (auto& [at, s] : first_) {
    shown_.t0 = std::min(shown_.t0, StepStart(s));
    shown_.t1 = std::max({shown_.t1, StepStart(s), StepEnd(s)});
    shown_.steps.push_back(std::move(s));
  }
  first_.clear();
  return std::move(shown_);
}

namespace {

// The steps the report shows: those the pass that wrote outcomes.json
// chose, or else chosen in a pass of their own.
absl::StatusOr<Shown> SelectSteps(Outcomes& outcomes, const ReportEntries& entries) {
  if (const StepNotes* notes = outcomes.step_notes(); notes != nullptr && notes->shown.has_value()) {
    return *notes->shown;
  }
  StepChooser chooser(entries);
  absl::Status scanned = outcomes.ForEachStepRecord([&](const Step& s) { chooser.Add(s); });
  if (!scanned.ok()) return scanned;
  return std::move(chooser).Finish();
}

constexpr char kStyle[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#111}"
    "h2{margin-top:1.6em;border-bottom:1px solid #bbb}h3{margin:1.4em 0 .3em;font-size:1.05em}"
    "table{border-collapse:collapse;margin:.5em 0 1em;width:100%;table-layout:fixed}"
    "td,th{border:1px solid #bbb;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}"
    "th{background:#eee}table.facts th{width:12em}"
    "tr.unknown,h3.unknown{background:#ffd7d7}tr.unknown{font-weight:bold}tr.failed,h3.failed{background:#fff1d6}"
    "tr.denied,tr.deny,h3.denied{background:#e8e8e8}code{overflow-wrap:anywhere}"
    "pre{background:#f4f4f4;padding:.6em;white-space:pre-wrap;overflow-wrap:anywhere}"
    ".flag{color:#a00000;font-weight:bold}svg.timeline{display:block;width:100%;height:auto;max-width:1010px}"
    ".label{font:12px monospace}.tick{font:11px sans-serif}.state{font:bold 12px sans-serif}"
    ".w6{width:6%}.w8{width:8%}.w9{width:9%}.w10{width:10%}.w11{width:11%}.w12{width:12%}.w15{width:15%}.w20{width:20%}"
    "@page{margin:12mm}"
    "@media print{body{margin:0;max-width:none;padding:0;font-size:9pt}h2,h3{break-after:avoid}"
    "tr{break-inside:avoid}thead{display:table-header-group}svg.timeline{max-width:100%}table{font-size:8pt}}";

void Head(std::string* h) {
  absl::StrAppend(h,
                  "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'sha256-",
                  hash::Base64(hash::AsBytes(hash::Sha256(kStyle))),
                  "'\"><meta name=\"viewport\" content=\"width=device-width\">"
                  "<title>Evidence pack</title><style>",
                  kStyle, "</style></head><body>\n");
}

// The scope in words.
std::string ScopeWords(const manifest::Scope& scope) {
  auto seqs = [](uint64_t from, uint64_t to) {
    return from < to ? absl::StrCat("seqs ", from, " to ", to - 1) : std::string("no seq");
  };
  if (scope.is_run_from()) {
    // Format 9 (CONTRACT section 9, "A run pack across the line").
    return absl::StrCat("run <code>", E(scope.run_id), "</code> of team <code>", E(scope.team), "</code> from seq ",
                        scope.from_seq,
                        ": the run's entries before it were pruned under the ledger's retention policy");
  }
  if (scope.is_run()) {
    return absl::StrCat("run <code>", E(scope.run_id), "</code> of team <code>", E(scope.team), "</code>");
  }
  if (scope.is_team_window()) {
    return absl::StrCat("team <code>", E(scope.team), "</code> from ", UtcTime(scope.from_us), " to ",
                        UtcTime(scope.to_us), " (UTC, the end excluded): its entries among ",
                        seqs(scope.from_seq, scope.to_seq));
  }
  return absl::StrCat(seqs(scope.from_seq, scope.to_seq), " of the log, of every team");
}

void Summary(const manifest::Manifest& m, const Shown& shown, const ReportEntries& entries, std::string* h) {
  absl::StrAppend(h, "<h1>Evidence pack</h1>\n<p>Scope: ", ScopeWords(m.scope), ".</p>\n<p>", m.entries, " entries, ",
                  shown.total, " steps, from the log <code>", E(m.origin), "</code> at tree size ", m.tree_size,
                  ". Times are the ledger's (when it logged each entry), in UTC.</p>\n");
  if (shown.unknown > 0) {
    absl::StrAppend(h, "<p class=\"flag\">", shown.unknown,
                    " step(s) never reported a completion and were declared UNKNOWN.</p>\n");
  }
  if (shown.total > static_cast<int64_t>(shown.steps.size())) {
    absl::StrAppend(h, "<p>This page shows the first ", shown.steps.size(), " steps by start time of ", shown.total,
                    "; <code>outcomes.json</code> lists them all.</p>\n");
  }
  if (entries.seen() > entries.kept()) {
    absl::StrAppend(h, "<p>This page lists the first ", entries.kept(), " entries by seq of ", entries.seen(),
                    "; <code>entries.jsonl</code> holds them all.</p>\n");
  }
}

std::string RowClass(const std::string& state) {
  return state == "unknown" || state == "failed" || state == "denied" ? state : "";
}

// One line per step shown, in the order they started.
void StepTable(const Shown& shown, std::string* h) {
  if (shown.steps.empty()) return;
  absl::StrAppend(
      h,
      "<h2>Steps</h2>\n<table class=\"steps\"><colgroup><col class=\"w12\"><col class=\"w10\">"
      "<col class=\"w6\"><col class=\"w10\"><col class=\"w20\"><col class=\"w8\"><col class=\"w8\">"
      "<col class=\"w8\"><col class=\"w9\"><col class=\"w9\"></colgroup><thead><tr><th scope=\"col\">run</th>"
      "<th scope=\"col\">step</th><th scope=\"col\">attempt</th><th scope=\"col\">state</th>"
      "<th scope=\"col\">started (UTC)</th><th scope=\"col\">duration</th>"
      "<th scope=\"col\">calls allowed/denied</th><th scope=\"col\">tokens in/out</th>"
      "<th scope=\"col\">actual</th><th scope=\"col\">charged</th></tr></thead><tbody>\n");
  for (const Step& s : shown.steps) {
    std::string state = StateOf(s);
    int64_t end = StepEnd(s);
    const auto& c = s.calls();
    absl::StrAppend(h, "<tr class=\"", RowClass(state), "\"><td>", E(s.run_id()), "</td><td>", E(s.step_id()),
                    "</td><td>", s.attempt(), "</td><td>", state == "unknown" ? "UNKNOWN" : state, "</td><td>",
                    UtcTime(StepStart(s)), "</td><td>", end < 0 ? "-" : Duration(end - StepStart(s)), "</td><td>",
                    c.model_calls_allowed() + c.tool_calls_allowed(), "/",
                    c.model_calls_denied() + c.tool_calls_denied(), "</td><td>", c.input_tokens(), "/",
                    c.output_tokens(), "</td><td>", Dollars(s.actual_cost_micros()), "</td><td>",
                    Dollars(s.charged_cost_micros()), "</td></tr>\n");
  }
  *h += "</tbody></table>\n";
}

// How the step ended, in words, with its time.
std::string Ending(const Step& s) {
  int64_t start = StepStart(s);
  if (s.has_unknown()) {
    return absl::StrCat("<strong>declared UNKNOWN</strong> at ", UtcTime(s.unknown_at_us()), " (seq ", s.unknown_seq(),
                        ", ", Duration(s.unknown_at_us() - start), " after its start): no completion by its deadline ",
                        UtcTime(s.deadline_us()));
  }
  if (s.has_completion()) {
    return absl::StrCat("completed at ", UtcTime(s.completed_at_us()), " (seq ", s.completion_seq(), ", ",
                        Duration(s.completed_at_us() - start), " after its start)");
  }
  if (s.state() == query::pb::STEP_STATE_DENIED) return "denied at its start: it never ran";
  return "no completion in this pack (pending at the checkpoint)";
}

std::string CostWords(const Step& s) {
  std::string out = absl::StrCat("reserved ", Dollars(s.cost_reserved_micros()), ", actual ",
                                 Dollars(s.actual_cost_micros()), ", charged ", Dollars(s.charged_cost_micros()));
  if (s.charged_cost_micros() != s.actual_cost_micros()) {
    absl::StrAppend(&out, " (a ", StateOf(s), " step is charged its reserved cost when that is more)");
  }
  return out;
}

void StepFacts(const Step& s, const std::vector<ReportRow>* rows, std::string* h) {
  *h += "<table class=\"facts\">";
  Fact("run", absl::StrCat("<code>", E(s.run_id()), "</code> of team <code>", E(s.team()), "</code>"), h);
  Fact("workflow", E(s.workflow()), h);
  Fact("agent", E(s.agent()), h);
  std::vector<std::string> emitters;
  for (const ReportRow& r : rows ? *rows : std::vector<ReportRow>{}) {
    if (std::find(emitters.begin(), emitters.end(), r.emitter) == emitters.end()) emitters.push_back(r.emitter);
  }
  for (auto& e : emitters) e = absl::StrCat("<code>", E(e), "</code>");
  Fact("emitter", absl::StrJoin(emitters, ", "), h);
  Fact("trace id", s.trace_id().empty() ? "" : absl::StrCat("<code>", E(s.trace_id()), "</code>"), h);
  Fact("started",
       absl::StrCat(UtcTime(StepStart(s)),
                    s.has_start() ? absl::StrCat(" (seq ", s.start_seq(), ")") : " (first entry; no agent_start)"),
       h);
  if (s.has_start()) {
    Fact("decision",
         absl::StrCat(s.state() == query::pb::STEP_STATE_DENIED ? "<strong>deny</strong>" : DecisionWord(s.decision()),
                      s.reason().empty() ? "" : ": ", E(s.reason())),
         h);
  }
  Fact("ended", Ending(s), h);
  if (s.has_start() && s.timeout_ms() > 0) {
    Fact("timeout", absl::StrCat(Duration(s.timeout_ms() * 1000), ", until ", UtcTime(s.timeout_at_us())), h);
  }
  std::string anomalies;
  for (int a : s.anomalies()) {
    absl::StrAppend(&anomalies, anomalies.empty() ? "" : ", ", query::AnomalyName(static_cast<query::pb::Anomaly>(a)));
  }
  Fact("anomalies", E(anomalies), h);
  Fact("cost", CostWords(s), h);
  Fact("entries", absl::StrCat(s.seqs_size()), h);
  *h += "</table>\n";
}

std::string Tokens(const ReportRow& r) {
  if (r.input_tokens < 0 && r.output_tokens < 0) return "";
  auto n = [](int64_t v) { return v < 0 ? std::string("-") : absl::StrCat(v); };
  return absl::StrCat(n(r.input_tokens), "/", n(r.output_tokens));
}

// Entries as rows: seq, time, kind, model or tool, target, decision and
// reason (or what the entry reports), tokens, cost, emitter.
void EntryTable(const std::vector<ReportRow>& rows, std::string* h) {
  *h +=
      "<table class=\"calls\"><colgroup><col class=\"w6\"><col class=\"w20\"><col class=\"w11\">"
      "<col class=\"w12\"><col class=\"w12\"><col class=\"w15\"><col class=\"w8\"><col class=\"w8\">"
      "<col class=\"w8\"></colgroup>";
  *h +=
      "<thead><tr><th scope=\"col\">seq</th><th scope=\"col\">time (UTC)</th><th scope=\"col\">kind</th>"
      "<th scope=\"col\">model or tool</th><th scope=\"col\">target</th><th scope=\"col\">decision: reason</th>"
      "<th scope=\"col\">tokens in/out</th><th scope=\"col\">cost</th><th scope=\"col\">emitter</th></tr></thead>"
      "<tbody>\n";
  for (const ReportRow& r : rows) {
    std::string what = r.decision.empty() ? E(r.detail)
                       : r.decision == "deny"
                           ? absl::StrCat("<strong>deny</strong>", r.reason.empty() ? "" : ": ", E(r.reason))
                           : absl::StrCat(E(r.decision), r.reason.empty() ? "" : ": ", E(r.reason));
    absl::StrAppend(h, "<tr class=\"", r.decision == "deny" ? "deny" : "", "\"><td>", r.seq, "</td><td>",
                    UtcTime(r.logged_at_us), "</td><td>", r.kind, "</td><td>", E(r.name), "</td><td>", E(r.target),
                    "</td><td>", what, "</td><td>", Tokens(r), "</td><td>",
                    r.cost_micros < 0 ? "" : Dollars(r.cost_micros), "</td><td>", E(r.emitter), "</td></tr>\n");
  }
  *h += "</tbody></table>\n";
}

// Each step shown: its facts, then its entries.
void StepDetails(const Shown& shown, const ReportEntries& entries, std::string* h) {
  if (shown.steps.empty()) return;
  *h += "<h2>What happened, step by step</h2>\n";
  int n = 0;
  for (const Step& s : shown.steps) {
    std::string state = StateOf(s);
    auto rows = entries.rows().find(KeyOf(s));
    const std::vector<ReportRow>* listed = rows == entries.rows().end() ? nullptr : &rows->second;
    std::string run = shown.multi_run ? absl::StrCat(E(s.run_id()), " / ") : "";
    absl::StrAppend(h, "<h3 class=\"", RowClass(state), "\">", ++n, ". ", run, E(s.step_id()), " (attempt ",
                    s.attempt(), "): ", state == "unknown" ? "UNKNOWN" : state, "</h3>\n");
    StepFacts(s, listed, h);
    if (listed != nullptr) EntryTable(*listed, h);
    if (listed == nullptr || static_cast<int>(listed->size()) < s.seqs_size()) {
      absl::StrAppend(h, "<p>", s.seqs_size() - (listed ? static_cast<int>(listed->size()) : 0),
                      " of its entries are not listed here (see <code>entries.jsonl</code>).</p>\n");
    }
  }
}

// Entries whose receipt names no step in the pack: calls outside a step,
// or of a step whose start is not in scope.
void OtherEntries(const Shown& shown, const ReportEntries& entries, std::string* h) {
  std::vector<ReportRow> rows;
  for (const auto& [key, list] : entries.rows()) {
    if (!shown.step_keys.count(key)) rows.insert(rows.end(), list.begin(), list.end());
  }
  if (rows.empty()) return;
  std::sort(rows.begin(), rows.end(), [](const ReportRow& a, const ReportRow& b) { return a.seq < b.seq; });
  *h += "<h2>Entries of no step</h2>\n<p>Their receipts name no step that this pack holds.</p>\n";
  EntryTable(rows, h);
}

// A replicated shard's leader epochs in the pack: who led from which seq.
void LeaderEpochs(const ReportEntries& entries, std::string* h) {
  std::vector<const ReportRow*> rows;
  for (const auto& [key, list] : entries.rows()) {
    for (const ReportRow& r : list) {
      if (r.kind == "leader_epoch") rows.push_back(&r);
    }
  }
  if (rows.empty()) return;
  std::sort(rows.begin(), rows.end(), [](const ReportRow* a, const ReportRow* b) { return a->seq < b->seq; });
  *h +=
      "<h2>Leader epochs</h2>\n<p>The shard is replicated: each row is a node taking the lead. Every entry from "
      "its seq on was committed under that epoch, until the next row; the tree it took over is named by its size "
      "and root (a consistency proof from any earlier checkpoint passes over it).</p>\n"
      "<table><thead><tr><th scope=\"col\">seq</th><th scope=\"col\">time (UTC)</th>"
      "<th scope=\"col\">epoch, node, tree taken over</th></tr></thead><tbody>\n";
  for (const ReportRow* r : rows) {
    absl::StrAppend(h, "<tr><td>", r->seq, "</td><td>", UtcTime(r->logged_at_us), "</td><td>", E(r->detail),
                    "</td></tr>\n");
  }
  *h += "</tbody></table>\n";
}

absl::Status Runs(Outcomes& outcomes, Out out, std::string* h) {
  *h +=
      "<h2>Runs</h2>\n<table><thead><tr><th scope=\"col\">team</th><th scope=\"col\">run</th>"
      "<th scope=\"col\">workflow</th><th scope=\"col\">first and last entry (UTC)</th>"
      "<th scope=\"col\">entries</th><th scope=\"col\">steps ok/failed/denied/pending/unknown</th>"
      "<th scope=\"col\">actual</th><th scope=\"col\">charged</th></tr></thead><tbody>\n";
  absl::Status listed = outcomes.ForEachRunRecord([&](const query::pb::Run& r) {
    absl::StrAppend(h, "<tr><td>", E(r.team()), "</td><td>", E(r.run_id()), "</td><td>", E(r.workflow()), "</td><td>",
                    UtcTime(r.first_at_us()), " to ", UtcTime(r.last_at_us()), "</td><td>", r.entries(), "</td><td>",
                    r.steps_succeeded(), "/", r.steps_failed(), "/", r.steps_denied(), "/", r.steps_pending(), "/",
                    r.steps_unknown(), "</td><td>", Dollars(r.actual_cost_micros()), "</td><td>",
                    Dollars(r.charged_cost_micros()), "</td></tr>\n");
    if (h->size() >= (1 << 20)) {
      out(*h);
      h->clear();
    }
  });
  *h += "</tbody></table>\n";
  return listed;
}

void Costs(std::string* h) {
  *h +=
      "<h2>Why the charged cost can differ from the actual cost</h2>\n<p>The actual cost of a step is what "
      "its entries report: its execution's cost plus the cost of each of its calls. The charged cost is what "
      "counts against a budget. A succeeded or denied step is charged its actual cost. A failed step, or an "
      "unknown one (no completion by its deadline), is charged its reserved cost (from its "
      "<code>agent_start</code>) when that is more than its actual cost: what it spent cannot be known "
      "from the log, so it is charged what it was allowed to spend. Each step above shows reserved, actual "
      "and charged.</p>\n";
}

}  // namespace
}  // namespace html

absl::Status WriteReport(const manifest::Manifest& manifest, Outcomes& outcomes, const std::string& checkpoint_note,
                         const std::string& time_note, absl::FunctionRef<void(std::string_view)> out) {
  const ReportEntries& entries = outcomes.report_entries();
  auto shown = html::SelectSteps(outcomes, entries);
  if (!shown.ok()) return shown.status();
  std::string h;
  html::Head(&h);
  html::Summary(manifest, *shown, entries, &h);
  html::Timeline(*shown, &h);
  html::StepTable(*shown, &h);
  html::StepDetails(*shown, entries, &h);
  html::OtherEntries(*shown, entries, &h);
  html::LeaderEpochs(entries, &h);
  out(h);
  h.clear();
  if (auto s = html::Runs(outcomes, out, &h); !s.ok()) return s;
  html::Costs(&h);
  html::Trust(manifest, checkpoint_note, time_note, entries, &h);
  h += "</body></html>\n";
  out(h);
  return absl::OkStatus();
}

}  // namespace ledger::pack
