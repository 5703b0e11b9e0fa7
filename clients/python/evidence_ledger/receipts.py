"""Receipt constructors (CONTRACT section 3) with the fields a gateway or a
worker always sets: a fresh receipt_id, occurred_at_us now.

Every constructor takes the receipt's place, `team`, `run_id`, `step_id`,
and, as keywords, the fields every kind shares:

    receipt_id      str   unique per team; a fresh one when not given. Retries
                          reuse it: the ledger appends (team, receipt_id) once.
    attempt         int   the step's attempt (1 when not given)
    occurred_at_us  int   when it happened, microseconds since the epoch (now)
    workflow, agent str   what ran
    trace_id        str   W3C trace context: 32 lowercase hex digits
    span_id         str   16 lowercase hex digits
    attributes      dict  str to str

and the kind's own fields, below. Decisions and statuses are names:
decision="allow" or "deny" (ALLOW, DENY), status="succeeded", "failed",
"timed_out", "killed" or "error" (SUCCEEDED, ...). A field the kind does not
have, or a name that is not one of these, is a ValueError naming it.
"""
import time
import uuid
from typing import Dict, Optional, Union

from evidence_ledger import stubs

pb = stubs.receipt
Receipt = pb.Receipt

ALLOW, DENY = "allow", "deny"
SUCCEEDED, FAILED, TIMED_OUT, KILLED, ERROR = "succeeded", "failed", "timed_out", "killed", "error"

_COMMON = ("receipt_id", "attempt", "occurred_at_us", "attributes", "workflow", "agent", "trace_id", "span_id")
_ENUMS = {"decision": (pb.Decision, "DECISION_"), "status": (pb.ExecStatus, "EXEC_STATUS_")}


def _enum(field: str, value: Union[str, int]) -> int:
    enum, prefix = _ENUMS[field]
    if isinstance(value, int):
        return value
    names = [n[len(prefix):].lower() for n in enum.keys() if n != prefix + "UNSPECIFIED"]
    if value not in names:
        raise ValueError("%s: '%s' is not one of %s" % (field, value, ", ".join(names)))
    return enum.Value(prefix + value.upper())


def _receipt(kind: str, message_type, team: str, run_id: str, step_id: str, kwargs: dict) -> Receipt:
    common = {k: kwargs.pop(k) for k in _COMMON if k in kwargs}
    for field in _ENUMS:
        if field in kwargs:
            kwargs[field] = _enum(field, kwargs[field])
    try:
        message = message_type(**kwargs)
    except ValueError as e:  # protobuf names the unknown field
        raise ValueError("%s: %s" % (kind, e)) from None
    attempt = common.pop("attempt", None)
    attributes: Optional[Dict[str, str]] = common.pop("attributes", None)
    r = Receipt(receipt_id=common.pop("receipt_id", None) or "%s-%s" % (kind, uuid.uuid4().hex), team=team,
                run_id=run_id, step_id=step_id,
                occurred_at_us=common.pop("occurred_at_us", None) or int(time.time() * 1e6), **common)
    if attempt is not None:
        r.attempt = attempt
    for k, v in (attributes or {}).items():
        r.attributes[k] = v
    getattr(r, kind).CopyFrom(message)
    return r


def agent_start(team: str, run_id: str, step_id: str, **kwargs) -> Receipt:
    """A container step was authorized or denied. Fields: decision ("allow" or "deny", required), reason,
    timeout_ms (after which, plus the ledger's grace, a step with no agent_exec is declared unknown),
    cost_reserved_micros (what an unknown or failed step is charged at least), namespace, sandbox,
    command_sha256, credential_id, classification."""
    return _receipt("agent_start", pb.AgentStart, team, run_id, step_id, kwargs)


def agent_exec(team: str, run_id: str, step_id: str, start_receipt_id: str, **kwargs) -> Receipt:
    """A container step finished; `start_receipt_id` is its agent_start's receipt_id. Fields: status
    ("succeeded", "failed", "timed_out", "killed" or "error"), exit_code, duration_ms, output_sha256,
    output_bytes, dlp_findings, cost_micros."""
    return _receipt("agent_exec", pb.AgentExec, team, run_id, step_id,
                    dict(kwargs, start_receipt_id=start_receipt_id))


def model_call(team: str, run_id: str, step_id: str, **kwargs) -> Receipt:
    """A model call the gateway allowed or denied. Fields: provider, model, route, decision ("allow" or
    "deny"), reason (the policy's, for a denial), input_tokens, output_tokens, cost_micros, request_sha256,
    response_sha256, status_code, latency_ms, credential_id."""
    return _receipt("model_call", pb.ModelCall, team, run_id, step_id, kwargs)


def tool_call(team: str, run_id: str, step_id: str, **kwargs) -> Receipt:
    """A tool call the gateway allowed or denied. Fields: tool, target, decision ("allow" or "deny"),
    reason, request_sha256, response_sha256, status_code, latency_ms, cost_micros, credential_id."""
    return _receipt("tool_call", pb.ToolCall, team, run_id, step_id, kwargs)
