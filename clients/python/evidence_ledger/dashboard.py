"""Dashboard: step outcomes and run summaries, and a live watch.

    d = Dashboard("ledger:7420")
    for step in d.steps("team-a", states=["unknown"]):
        print(step.run_id, step.step_id)
    for change in d.watch("team-a"):     # the past, then live; resumes after a disconnect
        ...
"""
import time
from typing import Iterator, List, Optional, Sequence, Tuple

import grpc

from evidence_ledger import stubs
from evidence_ledger.emitter import own_connections, plain_text_refusal

q = stubs.query
_STATES = {name[len("STEP_STATE_"):].lower(): value for name, value in q.StepState.items() if value}
_ANOMALIES = {name[len("ANOMALY_"):].lower(): value for name, value in q.Anomaly.items() if value}


def state_name(value: int) -> str:
    """A step's state by name: "pending", "succeeded", "failed", "denied" or "unknown"."""
    return q.StepState.Name(value)[len("STEP_STATE_"):].lower()


class Dashboard:
    """Reads of the query service (proto/query.proto). Steps and runs are the protobuf messages Step and Run;
    their enums are integers in Python: state_name(step.state) names a state. Calls raise grpc.RpcError
    (e.g. PERMISSION_DENIED for a team the certificate's identity may not query)."""

    def __init__(self, target: str, credentials: Optional[grpc.ChannelCredentials] = None, *,
                 timeout: float = 10.0, channel_options: Sequence[Tuple[str, object]] = (), insecure: bool = False):
        """Plain text (credentials None) to a loopback address only, unless `insecure` (as the Emitter's)."""
        refusal = plain_text_refusal(target, credentials, insecure)
        if refusal:
            raise ValueError(refusal)
        channel_options = own_connections(channel_options)
        self._channel = (grpc.secure_channel(target, credentials, channel_options) if credentials
                         else grpc.insecure_channel(target, channel_options))
        self._stub = stubs.query_grpc.QueryServiceStub(self._channel)
        self._timeout = timeout

    def close(self) -> None:
        self._channel.close()

    def _filter(self, team, run, states, anomalies):
        return q.StepFilter(team=team, run_id=run or "", states=[_STATES[s] for s in states or ()],
                            anomalies=[_ANOMALIES[a] for a in anomalies or ()])

    def steps(self, team: str, run: Optional[str] = None, states: Optional[Sequence[str]] = None,
              anomalies: Optional[Sequence[str]] = None, limit: int = 100) -> List["q.Step"]:
        """Steps newest first; states like "unknown", anomalies like "late_completion"."""
        out, token = [], ""
        while len(out) < limit:
            resp = self._stub.ListSteps(q.ListStepsRequest(filter=self._filter(team, run, states, anomalies),
                                                           page_size=min(1000, limit - len(out)),
                                                           page_token=token), timeout=self._timeout)
            out.extend(resp.steps)
            token = resp.next_page_token
            if not token:
                break
        return out

    def step(self, team: str, run: str, step: str, attempt: int = 1) -> "q.Step":
        return self._stub.GetStep(q.GetStepRequest(team=team, run_id=run, step_id=step, attempt=attempt),
                                  timeout=self._timeout)

    def run(self, team: str, run: str) -> "q.Run":
        return self._stub.GetRun(q.GetRunRequest(team=team, run_id=run), timeout=self._timeout)

    def runs(self, team: str, limit: int = 100) -> List["q.Run"]:
        return list(self._stub.ListRuns(q.ListRunsRequest(team=team, page_size=min(limit, 1000)),
                                        timeout=self._timeout).runs)

    def watch(self, team: str, run: Optional[str] = None, states: Optional[Sequence[str]] = None,
              after_seq: int = -1, retry: bool = True) -> Iterator["q.StepChange"]:
        """Step changes after `after_seq`, the past then live, forever. On
        UNAVAILABLE it reconnects after the last change received: no gap,
        no duplicate. With `retry`, a call waits for the ledger to be there
        (wait_for_ready) rather than failing at once while the channel is
        between connection attempts, so a restarted ledger is watched again
        as soon as it serves."""
        backoff = 0.1
        while True:
            call = self._stub.WatchSteps(q.WatchStepsRequest(filter=self._filter(team, run, states, ()),
                                                             after_seq=after_seq), wait_for_ready=retry)
            try:
                for change in call:
                    after_seq = change.seq
                    backoff = 0.1
                    yield change
                return
            except grpc.RpcError as e:
                if not retry or e.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                call.cancel()
