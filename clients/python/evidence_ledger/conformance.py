"""The Python client's conformance runner (clients/conformance/PROTOCOL.md).

    python -m evidence_ledger.conformance < scenario

Reads one line of JSON, the scenario, from standard input; builds its
receipts with `receipts`' constructors; plays its steps through `Emitter`
and `Dashboard` only, writing one JSON event per line to standard output,
flushed at once. Exits 0 after the last step; on anything the scenario did
not expect writes {"event": "error", "message": ...} and exits 1.
"""
import json
import sys
import time
from typing import Any, Dict, List, Optional, TextIO

import grpc

from evidence_ledger import receipts
from evidence_ledger.dashboard import Dashboard, state_name
from evidence_ledger.emitter import BufferFull, Emitter, Receipt

_CONSTRUCTORS = {"agent_start": receipts.agent_start, "agent_exec": receipts.agent_exec,
                 "model_call": receipts.model_call, "tool_call": receipts.tool_call}
# Protocol options in milliseconds, and the Emitter's keyword in seconds.
_SECONDS = {"linger_ms": "linger", "emit_timeout_ms": "timeout", "flush_timeout_ms": "flush_timeout",
            "rpc_timeout_ms": "rpc_timeout", "max_backoff_ms": "max_backoff"}
_PLAIN = {"batch_size": "batch_size", "max_buffer": "max_buffer", "block": "block"}


class ScenarioError(Exception):
    """Something the scenario did not expect; the runner reports it and exits 1."""


def build_receipt(spec: Dict[str, Any]) -> Receipt:
    """The receipt of a spec, made by its kind's constructor; fields absent from the spec stay unset."""
    fields = dict(spec)
    kind = fields.pop("kind", None)
    if kind not in _CONSTRUCTORS:
        raise ScenarioError("kind: '%s' is not one of %s" % (kind, ", ".join(_CONSTRUCTORS)))
    place = [fields.pop(k, "") for k in ("team", "run_id", "step_id")]
    if kind == "agent_exec":
        place.append(fields.pop("start_receipt_id", ""))
    try:
        return _CONSTRUCTORS[kind](*place, **fields)
    except (TypeError, ValueError) as e:
        raise ScenarioError("receipt %s: %s" % (spec.get("receipt_id"), e)) from None


def credentials(tls: Optional[Dict[str, str]]) -> Optional[grpc.ChannelCredentials]:
    if not tls:
        return None

    def read(path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()
    return grpc.ssl_channel_credentials(root_certificates=read(tls["ca"]), private_key=read(tls["key"]),
                                        certificate_chain=read(tls["cert"]))


def channel_options(tls: Optional[Dict[str, str]]) -> List[tuple]:
    if tls and tls.get("server_name"):
        return [("grpc.ssl_target_name_override", tls["server_name"])]
    return []


def emitter_options(options: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for name, value in options.items():
        if name in _SECONDS:
            out[_SECONDS[name]] = value / 1000.0
        elif name in _PLAIN:
            out[_PLAIN[name]] = value
        else:
            raise ScenarioError("options.%s: not an option of the protocol" % name)
    return out


class Runner:
    def __init__(self, scenario: Dict[str, Any], stdin: TextIO, stdout: TextIO):
        self._stdin = stdin
        self._stdout = stdout
        # One node, or the nodes of a shard separated by commas: the Emitter takes them as a list; a
        # Dashboard reads from the first.
        self._targets = str(scenario["target"]).split(",")
        self._tls = scenario.get("tls")
        self._options = emitter_options(scenario.get("options") or {})
        self._receipts = [build_receipt(spec) for spec in scenario.get("receipts") or []]
        self._order = {r.receipt_id: i for i, r in enumerate(self._receipts)}
        self._steps = scenario.get("steps") or []
        self._emitter: Optional[Emitter] = None
        self._dashboard: Optional[Dashboard] = None

    def event(self, **fields: Any) -> None:
        self._stdout.write(json.dumps(fields) + "\n")
        self._stdout.flush()

    def run(self) -> None:
        for step in self._steps:
            action = step.get("do")
            handler = getattr(self, "_do_" + str(action), None)
            if handler is None:
                raise ScenarioError("steps: '%s' is not a step of the protocol" % action)
            handler(step)
        if self._dashboard:
            self._dashboard.close()

    def emitter(self) -> Emitter:
        if self._emitter is None:
            self._emitter = Emitter(self._targets, credentials(self._tls),
                                    channel_options=channel_options(self._tls), **self._options)
        return self._emitter

    def dashboard(self) -> Dashboard:
        if self._dashboard is None:
            self._dashboard = Dashboard(self._targets[0], credentials(self._tls),
                                        channel_options=channel_options(self._tls))
        return self._dashboard

    def _do_emit(self, step: Dict[str, Any]) -> None:
        emitter = self.emitter()
        for index in range(step["from"], step["to"]):
            began = time.monotonic()
            try:
                emitter.emit(self._receipts[index])
            except BufferFull:
                self.event(event="buffer_full", index=index, waited_ms=int((time.monotonic() - began) * 1000))
                continue
            self.event(event="emitted", index=index)

    def _do_wait(self, step: Dict[str, Any]) -> None:
        self.event(event="waiting")
        if not self._stdin.readline():
            raise ScenarioError("wait: standard input closed")

    def _do_close(self, step: Dict[str, Any]) -> None:
        emitter = self.emitter()
        flushed = emitter.close()
        order = self._order.get
        refused = sorted(emitter.refused, key=lambda r: order(r.receipt_id, len(self._order)))
        unsettled = sorted(emitter.unsettled, key=lambda r: order(r.receipt_id, len(self._order)))
        self.event(event="closed", flushed=flushed, acknowledged=emitter.acknowledged,
                   duplicates=emitter.duplicates, retries=emitter.retries,
                   refused=[{"receipt_id": r.receipt_id, "code": r.code.name, "message": r.message}
                            for r in refused],
                   unsettled=[r.receipt_id for r in unsettled])
        self._emitter = None

    def _do_watch(self, step: Dict[str, Any]) -> None:
        count = step["count"]
        if count <= 0:
            return
        changes = self.dashboard().watch(step["team"], step.get("run_id"), after_seq=step.get("after_seq", -1))
        seen = 0
        for change in changes:
            s = change.step
            self.event(event="change", seq=change.seq, run_id=s.run_id, step_id=s.step_id, attempt=s.attempt,
                       state=state_name(s.state))
            seen += 1
            if seen == count:
                break
        changes.close()
        if seen < count:
            raise ScenarioError("watch: the ledger ended the watch after %d of %d changes" % (seen, count))

    def _do_step(self, step: Dict[str, Any]) -> None:
        s = self.dashboard().step(step["team"], step["run_id"], step["step_id"], step.get("attempt", 1))
        self.event(event="step", state=state_name(s.state), run_id=s.run_id, step_id=s.step_id,
                   attempt=s.attempt)


def main() -> int:
    runner: Optional[Runner] = None
    try:
        line = sys.stdin.readline()
        runner = Runner(json.loads(line), sys.stdin, sys.stdout)
        runner.run()
        return 0
    except (ScenarioError, KeyError, TypeError, ValueError, grpc.RpcError) as e:
        if isinstance(e, grpc.RpcError):
            message = "%s: %s" % (e.code().name, e.details())  # type: ignore[attr-defined]
        elif isinstance(e, KeyError):
            message = "missing member %s" % e
        else:
            message = str(e)
        sys.stdout.write(json.dumps({"event": "error", "message": message}) + "\n")
        sys.stdout.flush()
        return 1


if __name__ == "__main__":
    sys.exit(main())
