"""Step outcomes recomputed from a pack's entries (CONTRACT.md section 4),
with the standard library only: as much of the ledger's step projection as
the signed time needs. A step is (team, run_id, step_id, attempt); an
allowed agent_start makes it pending until the agent_exec naming that start
(of the same step) completes it or the ledger's step_unknown naming the
start's seq declares it unknown. Read from entries.jsonl, whose leaves the
checkpoint's root commits to, never from outcomes.json, which whoever holds
the ledger's key can rewrite and re-sign.

An erased agent_start or agent_exec (a redactions.Skeleton, CONTRACT.md
section 8) leaves its step unknown for good, flagged redacted: what the
erased entry said is not known, so the step is never pending past a
deadline, nor a success. An erased call counts for nothing here.
"""


class Step:
    """A step as its entries leave it. state: pending, succeeded, failed,
    denied or unknown; completed: an agent_exec completed it (late, after
    its step_unknown, included; erased, included); redacted: its start or
    its completion was erased, so it is unknown whatever comes after."""

    def __init__(self, key):
        self.team, self.run_id, self.step_id, self.attempt = key
        self.state, self.completed, self.redacted = None, False, False
        self.start_seq = self.timeout_at_us = None


def _key(receipt):
    attempt = receipt.get("attempt", 1)
    return (receipt.get("team", ""), receipt.get("run_id", ""), receipt.get("step_id", ""),
            attempt if type(attempt) is int and attempt > 0 else 1)


def _order(key):
    """The order of the ledger's step records (and of outcomes.json): each
    id after its length byte, then the attempt as 8 bytes big-endian."""
    team, run_id, step_id, attempt = key
    out = b""
    for part in (team, run_id, step_id):
        raw = part.encode("utf-8", "surrogateescape")
        out += bytes([len(raw) & 0xFF]) + raw
    return out + (attempt & (1 << 64) - 1).to_bytes(8, "big")


def _on_start(steps, starts, entry, r):
    key = _key(r)
    starts[(key[0], r.get("receipt_id", ""))] = key
    step = steps.setdefault(key, Step(key))
    if step.start_seq is not None:
        return  # a duplicate start
    step.start_seq = entry["seq"]
    if step.redacted:
        return  # its completion was erased before: unknown
    if r.get("decision") == "deny":
        step.state = "denied"
        return
    step.timeout_at_us = entry["logged_at_us"] + r.get("timeout_ms", 0) * 1000
    if not step.completed and step.state != "unknown":
        step.state = "pending"


def _on_exec(steps, starts, r):
    own = _key(r)
    state = "succeeded" if r.get("status") == "succeeded" else "failed"
    start = starts.get((own[0], r.get("start_receipt_id", "")))
    if start is None:  # an orphan completion
        step = steps.setdefault(own, Step(own))
        if not step.completed and step.start_seq is None:
            step.completed, step.state = True, state
        return
    if start != own:
        return  # a mismatched completion: the start is another step's
    step = steps[own]
    if step.redacted:
        step.completed = True  # its start was erased: unknown
        return
    if step.state == "denied" or step.completed:
        return
    step.completed = True
    if step.state != "unknown":
        step.state = state


def _on_erased(steps, starts, entry, r):
    """An erased entry: a start or a completion leaves its step unknown,
    redacted (a completion of another step's start counts for nothing, as
    a mismatched completion does)."""
    kind = r.get("kind")
    if kind == "agent_start":
        key = _key(r)
        starts[(key[0], r.get("receipt_id", ""))] = key
        step = steps.setdefault(key, Step(key))
        if step.start_seq is None:
            step.start_seq = entry["seq"]
    elif kind == "agent_exec":
        own = _key(r)
        start = starts.get((own[0], r.get("start_receipt_id", "")))
        if start is not None and start != own:
            return
        step = steps.setdefault(own, Step(own))
        step.completed = True
    else:
        return
    step.state, step.redacted = "unknown", True


def _on_unknown(steps, r):
    step = steps.get(_key(r))
    if step is not None and step.state == "pending" and step.start_seq == r.get("start_seq"):
        step.state = "unknown"


def steps(entries):
    """The steps of entries (parsed leaves, in seq order), in the order of
    outcomes.json."""
    steps, starts = {}, {}
    for entry in entries:
        r = entry["receipt"]
        kind = r.get("kind")
        if getattr(entry, "erased", False):
            _on_erased(steps, starts, entry, r)
        elif kind == "agent_start":
            _on_start(steps, starts, entry, r)
        elif kind == "agent_exec":
            _on_exec(steps, starts, r)
        elif kind == "step_unknown":
            _on_unknown(steps, r)
    return [steps[k] for k in sorted(steps, key=_order)]


def first_overdue(steps, grace_ms, signed_at_us):
    """(step, deadline) of the first step still pending although its deadline,
    the start's logged_at_us + timeout + the grace, is before the signed
    time; None when there is none."""
    grace_us = min(grace_ms, 1 << 42) * 1000
    for s in steps:
        if s.state == "pending" and s.timeout_at_us + grace_us < signed_at_us:
            return s, s.timeout_at_us + grace_us
    return None
