// The table of accessors.h: every field of proto/receipt.proto (but the
// attributes map, which ReadCanonical reads itself) with protoc's accessor.
#include "ledger/format/receipt/internal/accessors.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace ledger::receipt::accessors {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
namespace pb = evidence::ledger::v1;

// A row of the table: the field's message and name, and its setter.
struct Row {
  const Descriptor* message;
  const char* name;
  Field field;
};

template <typename M, std::string* (M::*mutable_field)()>
Row String(const char* name) {
  return {M::descriptor(), name,
          Field{.mutable_string = [](Message* m) { return (static_cast<M*>(m)->*mutable_field)(); }}};
}

template <typename M, void (M::*set_field)(int64_t)>
Row Int64(const char* name) {
  return {M::descriptor(), name,
          Field{.set_int64 = [](Message* m, int64_t v) { (static_cast<M*>(m)->*set_field)(v); }}};
}

template <typename M, typename E, void (M::*set_field)(E)>
Row Enum(const char* name) {
  return {M::descriptor(), name,
          Field{.set_enum = [](Message* m, int v) { (static_cast<M*>(m)->*set_field)(static_cast<E>(v)); }}};
}

template <typename B, B* (pb::Receipt::*mutable_body)()>
std::pair<int, MutableBody> Body(int number) {
  return {number, [](pb::Receipt* r) -> Message* { return (r->*mutable_body)(); }};
}

const absl::flat_hash_map<const FieldDescriptor*, Field>& Fields() {
  static const auto* fields = [] {
    const Row rows[] = {
        Enum<pb::AgentStart, pb::Decision, &pb::AgentStart::set_decision>("decision"),
        String<pb::AgentStart, &pb::AgentStart::mutable_reason>("reason"),
        Int64<pb::AgentStart, &pb::AgentStart::set_timeout_ms>("timeout_ms"),
        Int64<pb::AgentStart, &pb::AgentStart::set_cost_reserved_micros>("cost_reserved_micros"),
        String<pb::AgentStart, &pb::AgentStart::mutable_namespace_>("namespace"),
        String<pb::AgentStart, &pb::AgentStart::mutable_sandbox>("sandbox"),
        String<pb::AgentStart, &pb::AgentStart::mutable_command_sha256>("command_sha256"),
        String<pb::AgentStart, &pb::AgentStart::mutable_credential_id>("credential_id"),
        String<pb::AgentStart, &pb::AgentStart::mutable_classification>("classification"),
        String<pb::AgentExec, &pb::AgentExec::mutable_start_receipt_id>("start_receipt_id"),
        Enum<pb::AgentExec, pb::ExecStatus, &pb::AgentExec::set_status>("status"),
        Int64<pb::AgentExec, &pb::AgentExec::set_exit_code>("exit_code"),
        Int64<pb::AgentExec, &pb::AgentExec::set_duration_ms>("duration_ms"),
        String<pb::AgentExec, &pb::AgentExec::mutable_output_sha256>("output_sha256"),
        Int64<pb::AgentExec, &pb::AgentExec::set_output_bytes>("output_bytes"),
        Int64<pb::AgentExec, &pb::AgentExec::set_dlp_findings>("dlp_findings"),
        Int64<pb::AgentExec, &pb::AgentExec::set_cost_micros>("cost_micros"),
        String<pb::ModelCall, &pb::ModelCall::mutable_provider>("provider"),
        String<pb::ModelCall, &pb::ModelCall::mutable_model>("model"),
        String<pb::ModelCall, &pb::ModelCall::mutable_route>("route"),
        Enum<pb::ModelCall, pb::Decision, &pb::ModelCall::set_decision>("decision"),
        String<pb::ModelCall, &pb::ModelCall::mutable_reason>("reason"),
        Int64<pb::ModelCall, &pb::ModelCall::set_input_tokens>("input_tokens"),
        Int64<pb::ModelCall, &pb::ModelCall::set_output_tokens>("output_tokens"),
        Int64<pb::ModelCall, &pb::ModelCall::set_cost_micros>("cost_micros"),
        String<pb::ModelCall, &pb::ModelCall::mutable_request_sha256>("request_sha256"),
        String<pb::ModelCall, &pb::ModelCall::mutable_response_sha256>("response_sha256"),
        Int64<pb::ModelCall, &pb::ModelCall::set_status_code>("status_code"),
        Int64<pb::ModelCall, &pb::ModelCall::set_latency_ms>("latency_ms"),
        String<pb::ModelCall, &pb::ModelCall::mutable_credential_id>("credential_id"),
        String<pb::ToolCall, &pb::ToolCall::mutable_tool>("tool"),
        String<pb::ToolCall, &pb::ToolCall::mutable_target>("target"),
        Enum<pb::ToolCall, pb::Decision, &pb::ToolCall::set_decision>("decision"),
        String<pb::ToolCall, &pb::ToolCall::mutable_reason>("reason"),
        String<pb::ToolCall, &pb::ToolCall::mutable_request_sha256>("request_sha256"),
        String<pb::ToolCall, &pb::ToolCall::mutable_response_sha256>("response_sha256"),
        Int64<pb::ToolCall, &pb::ToolCall::set_status_code>("status_code"),
        Int64<pb::ToolCall, &pb::ToolCall::set_latency_ms>("latency_ms"),
        Int64<pb::ToolCall, &pb::ToolCall::set_cost_micros>("cost_micros"),
        String<pb::ToolCall, &pb::ToolCall::mutable_credential_id>("credential_id"),
        Int64<pb::StepUnknown, &pb::StepUnknown::set_start_seq>("start_seq"),
        String<pb::StepUnknown, &pb::StepUnknown::mutable_start_receipt_id>("start_receipt_id"),
        Int64<pb::StepUnknown, &pb::StepUnknown::set_deadline_us>("deadline_us"),
        Int64<pb::LeaderEpoch, &pb::LeaderEpoch::set_epoch>("epoch"),
        String<pb::LeaderEpoch, &pb::LeaderEpoch::mutable_node>("node"),
        Int64<pb::LeaderEpoch, &pb::LeaderEpoch::set_previous_size>("previous_size"),
        String<pb::LeaderEpoch, &pb::LeaderEpoch::mutable_previous_root>("previous_root"),
        String<pb::KeyRotation, &pb::KeyRotation::mutable_old_key>("old_key"),
        String<pb::KeyRotation, &pb::KeyRotation::mutable_new_key>("new_key"),
        String<pb::KeyRotation, &pb::KeyRotation::mutable_note>("note"),
        Int64<pb::Redaction, &pb::Redaction::set_entry_seq>("entry_seq"),
        String<pb::Redaction, &pb::Redaction::mutable_entry_leaf_hash>("entry_leaf_hash"),
        Int64<pb::Redaction, &pb::Redaction::set_entry_v>("entry_v"),
        String<pb::Redaction, &pb::Redaction::mutable_entry_prev>("entry_prev"),
        Int64<pb::Redaction, &pb::Redaction::set_entry_logged_at_us>("entry_logged_at_us"),
        Int64<pb::Redaction, &pb::Redaction::set_entry_run_prev>("entry_run_prev"),
        Int64<pb::Redaction, &pb::Redaction::set_entry_team_prev>("entry_team_prev"),
        String<pb::Redaction, &pb::Redaction::mutable_entry_kind>("entry_kind"),
        String<pb::Redaction, &pb::Redaction::mutable_entry_team>("entry_team"),
        String<pb::Redaction, &pb::Redaction::mutable_entry_run_id>("entry_run_id"),
        String<pb::Redaction, &pb::Redaction::mutable_entry_receipt_id>("entry_receipt_id"),
        String<pb::Redaction, &pb::Redaction::mutable_entry_step_id>("entry_step_id"),
        Int64<pb::Redaction, &pb::Redaction::set_entry_attempt>("entry_attempt"),
        String<pb::Redaction, &pb::Redaction::mutable_entry_start_receipt_id>("entry_start_receipt_id"),
        String<pb::Redaction, &pb::Redaction::mutable_reason>("reason"),
        String<pb::Redaction, &pb::Redaction::mutable_requested_by>("requested_by"),
        String<pb::Redaction, &pb::Redaction::mutable_approved_by>("approved_by"),
        Int64<pb::Retention, &pb::Retention::set_pass>("pass"),
        String<pb::Retention, &pb::Retention::mutable_rule_team>("rule_team"),
        Int64<pb::Retention, &pb::Retention::set_keep_s>("keep_s"),
        Int64<pb::Retention, &pb::Retention::set_cutoff_us>("cutoff_us"),
        Int64<pb::Retention, &pb::Retention::set_below_seq>("below_seq"),
        String<pb::Retention, &pb::Retention::mutable_policy_sha256>("policy_sha256"),
        String<pb::Receipt, &pb::Receipt::mutable_receipt_id>("receipt_id"),
        String<pb::Receipt, &pb::Receipt::mutable_team>("team"),
        String<pb::Receipt, &pb::Receipt::mutable_run_id>("run_id"),
        String<pb::Receipt, &pb::Receipt::mutable_step_id>("step_id"),
        Int64<pb::Receipt, &pb::Receipt::set_attempt>("attempt"),
        String<pb::Receipt, &pb::Receipt::mutable_workflow>("workflow"),
        String<pb::Receipt, &pb::Receipt::mutable_agent>("agent"),
        Int64<pb::Receipt, &pb::Receipt::set_occurred_at_us>("occurred_at_us"),
        String<pb::Receipt, &pb::Receipt::mutable_trace_id>("trace_id"),
        String<pb::Receipt, &pb::Receipt::mutable_span_id>("span_id"),
    };
    auto* m = new absl::flat_hash_map<const FieldDescriptor*, Field>();
    for (const Row& row : rows) {
      const FieldDescriptor* f = row.message->FindFieldByName(row.name);
      if (f == nullptr) std::abort();  // a row naming no field: a bug in the table
      (*m)[f] = row.field;
    }
    return m;
  }();
  return *fields;
}

}  // namespace

const Field* FieldOf(const FieldDescriptor* f) {
  auto it = Fields().find(f);
  return it == Fields().end() ? nullptr : &it->second;
}

MutableBody BodyOf(const FieldDescriptor* body) {
  static const auto* bodies = new absl::flat_hash_map<int, MutableBody>({
      Body<pb::AgentStart, &pb::Receipt::mutable_agent_start>(pb::Receipt::kAgentStartFieldNumber),
      Body<pb::AgentExec, &pb::Receipt::mutable_agent_exec>(pb::Receipt::kAgentExecFieldNumber),
      Body<pb::ModelCall, &pb::Receipt::mutable_model_call>(pb::Receipt::kModelCallFieldNumber),
      Body<pb::ToolCall, &pb::Receipt::mutable_tool_call>(pb::Receipt::kToolCallFieldNumber),
      Body<pb::StepUnknown, &pb::Receipt::mutable_step_unknown>(pb::Receipt::kStepUnknownFieldNumber),
      Body<pb::LeaderEpoch, &pb::Receipt::mutable_leader_epoch>(pb::Receipt::kLeaderEpochFieldNumber),
      Body<pb::KeyRotation, &pb::Receipt::mutable_key_rotation>(pb::Receipt::kKeyRotationFieldNumber),
      Body<pb::Redaction, &pb::Receipt::mutable_redaction>(pb::Receipt::kRedactionFieldNumber),
      Body<pb::Retention, &pb::Receipt::mutable_retention>(pb::Receipt::kRetentionFieldNumber),
  });
  auto it = bodies->find(body->number());
  return it == bodies->end() ? nullptr : it->second;
}

}  // namespace ledger::receipt::accessors
