"""Receipt constructors (CONTRACT section 3) with the fields a gateway or a
worker always sets: a fresh receipt_id, occurred_at_us now. Every other
keyword goes to the kind's own message (e.g. model_call(..., route="m",
decision=ALLOW, input_tokens=10)).
"""
import time
import uuid

from evidence_ledger import stubs

pb = stubs.receipt
ALLOW = pb.DECISION_ALLOW
DENY = pb.DECISION_DENY
SUCCEEDED = pb.EXEC_STATUS_SUCCEEDED
FAILED = pb.EXEC_STATUS_FAILED
TIMED_OUT = pb.EXEC_STATUS_TIMED_OUT


def _receipt(kind, message, team, run_id, step_id, receipt_id=None, attempt=None, occurred_at_us=None,
             attributes=None, **common):
    r = pb.Receipt(receipt_id=receipt_id or "%s-%s" % (kind, uuid.uuid4().hex), team=team, run_id=run_id,
                   step_id=step_id, occurred_at_us=occurred_at_us or int(time.time() * 1e6), **common)
    if attempt is not None:
        r.attempt = attempt
    for k, v in (attributes or {}).items():
        r.attributes[k] = v
    getattr(r, kind).CopyFrom(message)
    return r


def _split(kwargs):
    common = {k: kwargs.pop(k) for k in ("receipt_id", "attempt", "occurred_at_us", "attributes", "workflow",
                                         "agent", "trace_id", "span_id") if k in kwargs}
    return common, kwargs


def agent_start(team, run_id, step_id, **kwargs):
    common, body = _split(kwargs)
    return _receipt("agent_start", pb.AgentStart(**body), team, run_id, step_id, **common)


def agent_exec(team, run_id, step_id, start_receipt_id, **kwargs):
    common, body = _split(kwargs)
    return _receipt("agent_exec", pb.AgentExec(start_receipt_id=start_receipt_id, **body), team, run_id, step_id,
                    **common)


def model_call(team, run_id, step_id, **kwargs):
    common, body = _split(kwargs)
    return _receipt("model_call", pb.ModelCall(**body), team, run_id, step_id, **common)


def tool_call(team, run_id, step_id, **kwargs):
    common, body = _split(kwargs)
    return _receipt("tool_call", pb.ToolCall(**body), team, run_id, step_id, **common)
