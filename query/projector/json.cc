// The step projector's records as JSON for people and scripts (the
// contract's names), as trees and written straight to a string.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/canonical/canonical.h"
#include "query/projector/projector.h"

namespace ledger::query {

std::string StateName(pb::StepState s) {
  std::string n = pb::StepState_Name(s).substr(std::string_view("STEP_STATE_").size());
  return absl::AsciiStrToLower(n);
}

std::string StatusName(pb::ExecStatus s) {
  std::string n = pb::ExecStatus_Name(s).substr(std::string_view("EXEC_STATUS_").size());
  return absl::AsciiStrToLower(n);
}

namespace {

nlohmann::json CallsJson(const pb::CallTotals& c) {
  return {{"model_calls_allowed", c.model_calls_allowed()},
          {"model_calls_denied", c.model_calls_denied()},
          {"tool_calls_allowed", c.tool_calls_allowed()},
          {"tool_calls_denied", c.tool_calls_denied()},
          {"input_tokens", c.input_tokens()},
          {"output_tokens", c.output_tokens()},
          {"cost_micros", c.cost_micros()}};
}

}  // namespace

nlohmann::json StepJson(const pb::Step& s) {
  nlohmann::json j = {{"team", s.team()},
                      {"run_id", s.run_id()},
                      {"step_id", s.step_id()},
                      {"attempt", s.attempt()},
                      {"state", StateName(s.state())},
                      {"first_at_us", s.first_at_us()},
                      {"calls", CallsJson(s.calls())},
                      {"actual_cost_micros", s.actual_cost_micros()},
                      {"charged_cost_micros", s.charged_cost_micros()},
                      {"last_seq", s.last_seq()}};
  if (!s.workflow().empty()) j["workflow"] = s.workflow();
  if (!s.agent().empty()) j["agent"] = s.agent();
  if (s.has_start()) {
    j["start"] = {{"seq", s.start_seq()},
                  {"receipt_id", s.start_receipt_id()},
                  {"logged_at_us", s.started_at_us()},
                  {"decision", s.decision() == pb::DECISION_DENY ? "deny" : "allow"},
                  {"cost_reserved_micros", s.cost_reserved_micros()}};
    if (!s.reason().empty()) j["start"]["reason"] = s.reason();
    if (s.decision() != pb::DECISION_DENY) {
      j["start"]["timeout_ms"] = s.timeout_ms();
      j["start"]["timeout_at_us"] = s.timeout_at_us();
    }
  }
  if (s.has_completion()) {
    j["completion"] = {{"seq", s.completion_seq()},           {"receipt_id", s.completion_receipt_id()},
                       {"logged_at_us", s.completed_at_us()}, {"status", StatusName(s.exec_status())},
                       {"exit_code", s.exit_code()},          {"duration_ms", s.duration_ms()},
                       {"cost_micros", s.exec_cost_micros()}};
  }
  if (s.has_unknown()) {
    j["unknown"] = {{"seq", s.unknown_seq()}, {"logged_at_us", s.unknown_at_us()}, {"deadline_us", s.deadline_us()}};
  }
  nlohmann::json anomalies = nlohmann::json::array();
  for (int a : s.anomalies()) anomalies.push_back(AnomalyName(static_cast<pb::Anomaly>(a)));
  if (!anomalies.empty()) j["anomalies"] = anomalies;
  if (s.seqs_size() > 0) j["seqs"] = std::vector<uint64_t>(s.seqs().begin(), s.seqs().end());
  return j;
}

nlohmann::json RunJson(const pb::Run& r) {
  nlohmann::json unknown = nlohmann::json::array();
  for (const auto& u : r.unknown_steps()) {
    unknown.push_back({{"step_id", u.step_id()}, {"attempt", u.attempt()}});
  }
  nlohmann::json j = {{"team", r.team()},
                      {"run_id", r.run_id()},
                      {"first_seq", r.first_seq()},
                      {"last_seq", r.last_seq()},
                      {"first_at_us", r.first_at_us()},
                      {"last_at_us", r.last_at_us()},
                      {"entries", r.entries()},
                      {"steps",
                       {{"pending", r.steps_pending()},
                        {"succeeded", r.steps_succeeded()},
                        {"failed", r.steps_failed()},
                        {"denied", r.steps_denied()},
                        {"unknown", r.steps_unknown()}}},
                      {"unknown_steps", unknown},
                      {"steps_with_anomalies", r.anomalies()},
                      {"calls", CallsJson(r.calls())},
                      {"unattached_calls", CallsJson(r.unattached_calls())},
                      {"actual_cost_micros", r.actual_cost_micros()},
                      {"charged_cost_micros", r.charged_cost_micros()}};
  if (!r.workflow().empty()) j["workflow"] = r.workflow();
  return j;
}

namespace {

// A JSON string as nlohmann's dump() writes it: '"' and '\\' escaped, the
// control characters as \b \f \n \r \t or \u00xx, everything else as is.
// nlohmann's dump() escapes exactly as canonical JSON does (the two
// short-escape sets and \u00xx in lowercase for the other control
// characters, nothing else); projector_test holds them to it.
void AppendJsonString(std::string_view v, std::string* out) { canonical::AppendString(v, out); }

// Members of one object, written in the order given, which MUST be the
// keys' sorted order (nlohmann's objects are std::maps).
class JsonObject {
 public:
  explicit JsonObject(std::string* out) : out_(out) { out_->push_back('{'); }
  ~JsonObject() { out_->push_back('}'); }
  // `key` MUST be one of the contract's names (lowercase letters, digits
  // and '_'), which a JSON string holds as they are: written without
  // looking for characters to escape, as every step of outcomes.json
  // writes some forty of them.
  std::string* Key(std::string_view key) {
    out_->append(first_ ? "\"" : ",\"");
    first_ = false;
    out_->append(key);
    out_->append("\":");
    return out_;
  }
  void Int(std::string_view key, int64_t v) { absl::StrAppend(Key(key), v); }
  void Uint(std::string_view key, uint64_t v) { absl::StrAppend(Key(key), v); }
  void Str(std::string_view key, std::string_view v) { AppendJsonString(v, Key(key)); }

 private:
  std::string* out_;
  bool first_ = true;
};

// The names StateName, StatusName and AnomalyName give each value of their
// enum, made once: the JSON writers name a state, a status and anomalies
// for every step.
class EnumWords {
 public:
  template <typename E>
  EnumWords(const google::protobuf::EnumDescriptor* d, std::string (*name)(E)) {
    for (int i = 0; i < d->value_count(); ++i) {
      int v = d->value(i)->number();
      if (v < 0 || v >= kMaxValue) continue;
      if (static_cast<size_t>(v) >= words_.size()) words_.resize(v + 1);
      words_[v] = name(static_cast<E>(v));
    }
  }
  // The name of `v`, or null for a value the enum does not hold.
  const std::string* Find(int v) const {
    return v >= 0 && static_cast<size_t>(v) < words_.size() && words_[v] ? &*words_[v] : nullptr;
  }

 private:
  static constexpr int kMaxValue = 256;
  std::vector<std::optional<std::string>> words_;
};

// The step's state, its completion's status and an anomaly, named.
void AppendState(pb::StepState s, JsonObject* o) {
  static const EnumWords* words = new EnumWords(pb::StepState_descriptor(), &StateName);
  if (const std::string* w = words->Find(s)) return o->Str("state", *w);
  o->Str("state", StateName(s));
}

void AppendStatus(pb::ExecStatus s, JsonObject* o) {
  static const EnumWords* words = new EnumWords(pb::ExecStatus_descriptor(), &StatusName);
  if (const std::string* w = words->Find(s)) return o->Str("status", *w);
  o->Str("status", StatusName(s));
}

void AppendAnomaly(pb::Anomaly a, std::string* out) {
  static const EnumWords* words = new EnumWords(pb::Anomaly_descriptor(), &AnomalyName);
  if (const std::string* w = words->Find(a)) return AppendJsonString(*w, out);
  AppendJsonString(AnomalyName(a), out);
}

void AppendCallsJson(const pb::CallTotals& c, std::string* out) {
  JsonObject o(out);
  o.Int("cost_micros", c.cost_micros());
  o.Int("input_tokens", c.input_tokens());
  o.Int("model_calls_allowed", c.model_calls_allowed());
  o.Int("model_calls_denied", c.model_calls_denied());
  o.Int("output_tokens", c.output_tokens());
  o.Int("tool_calls_allowed", c.tool_calls_allowed());
  o.Int("tool_calls_denied", c.tool_calls_denied());
}

}  // namespace

void AppendStepJson(const pb::Step& s, std::string* out) {
  JsonObject o(out);
  o.Int("actual_cost_micros", s.actual_cost_micros());
  if (!s.agent().empty()) o.Str("agent", s.agent());
  if (s.anomalies_size() > 0) {
    std::string* a = o.Key("anomalies");
    a->push_back('[');
    for (int i = 0; i < s.anomalies_size(); ++i) {
      if (i > 0) a->push_back(',');
      AppendAnomaly(static_cast<pb::Anomaly>(s.anomalies(i)), a);
    }
    a->push_back(']');
  }
  o.Int("attempt", s.attempt());
  AppendCallsJson(s.calls(), o.Key("calls"));
  o.Int("charged_cost_micros", s.charged_cost_micros());
  if (s.has_completion()) {
    JsonObject c(o.Key("completion"));
    c.Int("cost_micros", s.exec_cost_micros());
    c.Int("duration_ms", s.duration_ms());
    c.Int("exit_code", s.exit_code());
    c.Int("logged_at_us", s.completed_at_us());
    c.Str("receipt_id", s.completion_receipt_id());
    c.Uint("seq", s.completion_seq());
    AppendStatus(s.exec_status(), &c);
  }
  o.Int("first_at_us", s.first_at_us());
  o.Uint("last_seq", s.last_seq());
  o.Str("run_id", s.run_id());
  if (s.seqs_size() > 0) {
    std::string* q = o.Key("seqs");
    q->push_back('[');
    for (int i = 0; i < s.seqs_size(); ++i) {
      if (i > 0) q->push_back(',');
      absl::StrAppend(q, s.seqs(i));
    }
    q->push_back(']');
  }
  if (s.has_start()) {
    JsonObject st(o.Key("start"));
    st.Int("cost_reserved_micros", s.cost_reserved_micros());
    st.Str("decision", s.decision() == pb::DECISION_DENY ? "deny" : "allow");
    st.Int("logged_at_us", s.started_at_us());
    if (!s.reason().empty()) st.Str("reason", s.reason());
    st.Str("receipt_id", s.start_receipt_id());
    st.Uint("seq", s.start_seq());
    if (s.decision() != pb::DECISION_DENY) {
      st.Int("timeout_at_us", s.timeout_at_us());
      st.Int("timeout_ms", s.timeout_ms());
    }
  }
  AppendState(s.state(), &o);
  o.Str("step_id", s.step_id());
  o.Str("team", s.team());
  if (s.has_unknown()) {
    JsonObject u(o.Key("unknown"));
    u.Int("deadline_us", s.deadline_us());
    u.Int("logged_at_us", s.unknown_at_us());
    u.Uint("seq", s.unknown_seq());
  }
  if (!s.workflow().empty()) o.Str("workflow", s.workflow());
}

void AppendRunJson(const pb::Run& r, std::string* out) {
  JsonObject o(out);
  o.Int("actual_cost_micros", r.actual_cost_micros());
  AppendCallsJson(r.calls(), o.Key("calls"));
  o.Int("charged_cost_micros", r.charged_cost_micros());
  o.Int("entries", r.entries());
  o.Int("first_at_us", r.first_at_us());
  o.Uint("first_seq", r.first_seq());
  o.Int("last_at_us", r.last_at_us());
  o.Uint("last_seq", r.last_seq());
  o.Str("run_id", r.run_id());
  {
    JsonObject st(o.Key("steps"));
    st.Int("denied", r.steps_denied());
    st.Int("failed", r.steps_failed());
    st.Int("pending", r.steps_pending());
    st.Int("succeeded", r.steps_succeeded());
    st.Int("unknown", r.steps_unknown());
  }
  o.Int("steps_with_anomalies", r.anomalies());
  o.Str("team", r.team());
  AppendCallsJson(r.unattached_calls(), o.Key("unattached_calls"));
  std::string* u = o.Key("unknown_steps");
  u->push_back('[');
  for (int i = 0; i < r.unknown_steps_size(); ++i) {
    if (i > 0) u->push_back(',');
    JsonObject step(u);
    step.Int("attempt", r.unknown_steps(i).attempt());
    step.Str("step_id", r.unknown_steps(i).step_id());
  }
  u->push_back(']');
  if (!r.workflow().empty()) o.Str("workflow", r.workflow());
}

std::string AnomalyName(pb::Anomaly a) {
  std::string n = pb::Anomaly_Name(a).substr(std::string_view("ANOMALY_").size());
  return absl::AsciiStrToLower(n);
}

}  // namespace ledger::query
