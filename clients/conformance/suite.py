#!/usr/bin/python3
"""The clients' conformance suite: the scenarios of PROTOCOL.md, played by
each client's runner against a fresh ledgerd of its own, then checked in
the runner's events and in the log. Across the runners, the receipts in the
log must be byte-identical, receipt by receipt.

Usage: suite.py BUILD_DIR [--prepare NAME='COMMAND'] --runner NAME='COMMAND' [--runner ...]
                [--scenario NAME ...]

  suite.py build --runner python="$PWD/build/clients/python/venv/bin/python -m evidence_ledger.conformance" \
                 --prepare go="$PWD/clients/conformance/build-go-runner.sh $PWD/build" \
                 --runner go="$PWD/build/clients/go/conformance" \
                 --runner typescript="node $PWD/clients/typescript/dist/conformance.js"

--prepare runs a command once before the scenarios (e.g. building a
runner); when it fails, so does that runner. The replicated scenarios
("failover", "failover list": a real PostgreSQL and two ledgerd nodes) run
only when named with --scenario; without PostgreSQL 15
(/usr/lib/postgresql/15/bin) they are skipped, and when nothing else was
asked for the suite exits 77. A runner runs in a directory
of its own, outside the source tree: its paths must be absolute. Prints one line per scenario and
runner with its time, every failed check with the scenario, the runner,
what was expected and what came; exits 1 if any check failed.
"""
import argparse
import json
import os
import queue
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "replication"))
from ledger_testlib import Certificates, free_port, generate_stubs, read  # noqa: E402
import pgcluster  # noqa: E402

TEAM = "team-a"
T0 = 1767225600000000  # 2026-01-01, microseconds
EVENT_TIMEOUT = 60.0
RECONNECT_S = 5  # a restarted ledger is reached again within this, given max_backoff_ms 500
CLIENT = "spiffe://conformance/client"
APPEND = '{method="/evidence.ledger.v1.LedgerService/Append",'
# The ledger's refusal of a trace_id that is not 32 lowercase hex digits
# (ledger/format/receipt/receipt.cc), as every client must report it.
TRACE_ID_REFUSAL = "trace_id: must be 32 lowercase hex digits, not all zero (W3C trace context)"


class Failed(Exception):
    """A check failed: the scenario cannot go on."""


# Receipt specs (PROTOCOL.md "Input"): fixed, so that every client sends the
# same receipts; zeros of optional fields are set on purpose (set, not absent).

def _hex(n, digits):
    return "%0*x" % (digits, n)


def _common(receipt_id, i, run_id, step_id):
    spec = {"receipt_id": receipt_id, "team": TEAM, "run_id": run_id, "step_id": step_id,
            "occurred_at_us": T0 + i * 1000, "workflow": "wf-conformance", "agent": "agent-%d" % (i % 3),
            "trace_id": _hex(0xabc0000 + i, 32), "span_id": _hex(0x5e0000 + i, 16),
            "attributes": {"env": "test", "n": str(i), "note": "caf\u00e9 \u2713"}}
    if i % 4 == 1:
        spec["attempt"] = 2
    if i % 5 == 2:  # fields absent from the spec stay unset
        for name in ("workflow", "agent", "trace_id", "span_id", "attributes"):
            del spec[name]
    return spec


def agent_start(i, run_id="run-1", step_id=None, prefix=""):
    spec = _common("%sstart-%d" % (prefix, i), i, run_id, step_id or "s%d" % i)
    spec.update(kind="agent_start", decision="allow", timeout_ms=3600000, cost_reserved_micros=i * 10,
                namespace="ns-a", sandbox="gvisor", command_sha256=_hex(i, 64), credential_id="cred-%d" % i,
                classification="internal")
    return spec


STATUSES = ["succeeded", "failed", "timed_out", "killed", "error"]


def agent_exec(i, run_id="run-1", step_id=None, prefix="", status=None):
    start = agent_start(i, run_id, step_id, prefix)
    spec = _common("%sexec-%d" % (prefix, i), i, run_id, start["step_id"])
    spec.pop("attempt", None)
    if "attempt" in start:
        spec["attempt"] = start["attempt"]
    status = status or STATUSES[i % len(STATUSES)]
    spec.update(kind="agent_exec", start_receipt_id=start["receipt_id"], status=status,
                exit_code=0 if status == "succeeded" else 1 + i % 7, duration_ms=i * 3, output_sha256=_hex(i + 7, 64),
                output_bytes=i * 100, dlp_findings=0, cost_micros=i * 11)
    return spec


def model_call(i, prefix=""):
    spec = _common("%smodel-%d" % (prefix, i), i, "run-1", "m%d" % i)
    deny = i % 6 == 5
    spec.update(kind="model_call", provider="openai", model="gpt-4o", route="openai-default",
                decision="deny" if deny else "allow", input_tokens=0 if deny else 100 + i,
                output_tokens=0 if deny else 10 + i, cost_micros=0 if deny else 1000 + i,
                request_sha256=_hex(i + 1, 64), status_code=403 if deny else 200, latency_ms=i,
                credential_id="key-1")
    if deny:
        spec["reason"] = "policy: model not allowed"
    else:
        spec["response_sha256"] = _hex(i + 2, 64)
    return spec


def tool_call(i, prefix=""):
    spec = _common("%stool-%d" % (prefix, i), i, "run-1", "t%d" % i)
    spec.update(kind="tool_call", tool="http.get", target="https://example.test/%d" % i, decision="allow",
                request_sha256=_hex(i + 3, 64), response_sha256=_hex(i + 4, 64), status_code=200,
                latency_ms=i * 2, cost_micros=0, credential_id="tool-cred")
    if i % 7 == 3:
        spec.update(decision="deny", reason="tool not allowed")
        del spec["response_sha256"]
    return spec


def four_kinds(count, prefix=""):
    """`count` receipts, a quarter of each kind; each agent_exec after its start."""
    per = count // 4
    specs = ([agent_start(i, prefix=prefix) for i in range(per)] + [model_call(i, prefix) for i in range(per)]
             + [agent_exec(i, prefix=prefix) for i in range(per)] + [tool_call(i, prefix) for i in range(per)])
    return specs


OPTIONS = {"batch_size": 25, "linger_ms": 50, "max_buffer": 10000, "block": True, "emit_timeout_ms": 30000,
           "flush_timeout_ms": 30000, "rpc_timeout_ms": 10000, "max_backoff_ms": 500}


class Ledger:
    """A ledgerd on a fixed port and data directory, killed and started again at will."""

    def __init__(self, build, work, tls=None):
        self.build, self.work, self.tls = build, work, tls
        self.port = free_port()
        self.address = "127.0.0.1:%d" % self.port
        self.proc = None
        self.http = None
        self.start()

    def start(self):
        args = [os.path.join(self.build, "cmd", "ledgerd"), "--data", os.path.join(self.work, "data"),
                "--listen", self.address, "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "20",
                "--unknown-grace-ms", "100", "--sweep-interval-ms", "50"]
        if self.tls:
            args += ["--tls-cert", self.tls["server_cert"], "--tls-key", self.tls["server_key"],
                     "--client-ca", self.tls["ca"], "--policy", self.tls["policy"]]
        with open(os.path.join(self.work, "ledgerd.err"), "ab") as err:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err)
        line = self.proc.stdout.readline().decode()
        http = self.proc.stdout.readline().decode()
        self.proc.stdout.close()
        if not line.startswith("listening on") or not http.startswith("http on"):
            raise Failed("ledgerd did not start (see %s/ledgerd.err)" % self.work)
        self.http = ("https://" if self.tls else "http://") + http.split()[-1]

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def channel(self):
        import grpc
        if not self.tls:
            return grpc.insecure_channel(self.address)
        creds = grpc.ssl_channel_credentials(read(self.tls["ca"]), read(self.tls["admin_key"]),
                                             read(self.tls["admin_cert"]))
        return grpc.secure_channel(self.address, creds, [("grpc.ssl_target_name_override", "localhost")])

    def head_size(self):
        """ledger_tree_size from /metrics over plain HTTP; None where that is not at hand (TLS)."""
        base = getattr(self, "http", None)
        if base is None and getattr(self, "http_port", None):
            base = "http://127.0.0.1:%d" % self.http_port
        if not base or not base.startswith("http://"):
            return None
        try:
            with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
                for line in r.read().decode().splitlines():
                    if line.startswith("ledger_tree_size "):
                        return int(float(line.split()[1]))
        except OSError:
            return None
        return None

    def leaves(self):
        """Every entry's leaf, in seq order, once the checkpoint has caught up with the head."""
        import ledger_service_pb2 as svc
        import ledger_service_pb2_grpc as svc_grpc
        with self.channel() as ch:
            stub = svc_grpc.LedgerServiceStub(ch)
            sizes = [-1]
            head = self.head_size()
            if head is not None:
                # Every acknowledged entry is in the head: read once the
                # latest checkpoint covers it, however late it is signed.
                deadline = time.monotonic() + 30
                while True:
                    sizes.append(stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10).tree_size)
                    if sizes[-1] >= head or time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
            while head is None and (len(sizes) < 5 or len(set(sizes[-5:])) > 1):
                sizes.append(stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10).tree_size)
                time.sleep(0.03)
            if not sizes[-1]:
                return []
            return [e.leaf for e in stub.GetEntries(svc.GetEntriesRequest(from_seq=0, to_seq=sizes[-1]),
                                                    timeout=30)]

    def append(self, specs):
        """Appends receipts as the suite's own (not a client's)."""
        import ledger_service_pb2 as svc
        import ledger_service_pb2_grpc as svc_grpc
        with self.channel() as ch:
            response = svc_grpc.LedgerServiceStub(ch).Append(
                svc.AppendRequest(receipts=[raw_receipt(s) for s in specs]), timeout=10, wait_for_ready=True)
        codes = [r.code for r in response.results]
        if any(codes):
            raise Failed("the suite's own receipts were refused: %s" % [r.message for r in response.results])

    def append_calls(self):
        """Append calls the ledger counted in /metrics, whatever their code."""
        context = None
        if self.tls:
            context = ssl.create_default_context(cafile=self.tls["ca"])
            context.load_cert_chain(self.tls["admin_cert"], self.tls["admin_key"])
        with urllib.request.urlopen(self.http + "/metrics", context=context, timeout=10) as resp:
            text = resp.read().decode()
        return sum(float(line.split()[-1]) for line in text.splitlines()
                   if line.startswith("ledger_rpcs_total" + APPEND))


def raw_receipt(spec):
    import receipt_pb2 as pb
    fields = dict(spec)
    kind = fields.pop("kind")
    body = {}
    for name in list(fields):
        if name not in pb.Receipt.DESCRIPTOR.fields_by_name:
            body[name] = fields.pop(name)
    for name, enum, prefix in (("decision", pb.Decision, "DECISION_"), ("status", pb.ExecStatus, "EXEC_STATUS_")):
        if name in body:
            body[name] = enum.Value(prefix + body[name].upper())
    return pb.Receipt(**fields, **{kind: body})


def receipt_member(leaf):
    """The exact bytes of a leaf's top-level "receipt" member (CONTRACT section 3), and its receipt_id."""
    text = leaf.decode()
    decoder = json.JSONDecoder()
    i = 1
    while text[i] != "}":
        key, i = decoder.raw_decode(text, i)
        start = i + 1  # past the ':'
        value, i = decoder.raw_decode(text, start)
        if key == "receipt":
            return text[start:i].encode(), value.get("receipt_id")
        if text[i] == ",":
            i += 1
    raise Failed("a leaf without a receipt member: %r" % leaf[:200])


class Runner:
    """One runner process playing one scenario; its events read as they come."""

    def __init__(self, command, scenario, work):
        self.work = work
        self.stderr_path = os.path.join(work, "runner.err")
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, cwd=work, text=True)
        self.events = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send(json.dumps(scenario))

    def _read(self):
        for line in self.proc.stdout:
            self.events.put((time.monotonic(), line))
        self.events.put((time.monotonic(), None))

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def next(self):
        """The next event; `last_at` is when it came."""
        try:
            self.last_at, line = self.events.get(timeout=EVENT_TIMEOUT)
        except queue.Empty:
            raise Failed("no event from the runner in %d s" % EVENT_TIMEOUT) from None
        if line is None:
            self.proc.wait()
            raise Failed("the runner ended (exit %s) before the scenario did; its standard error:\n%s"
                         % (self.proc.returncode, self.stderr()))
        try:
            event = json.loads(line)
        except ValueError:
            raise Failed("the runner wrote a line that is not JSON: %r" % line) from None
        if event.get("event") == "error":
            raise Failed("the runner reported an error: %s" % event.get("message"))
        return event

    def expect(self, kind):
        event = self.next()
        if event.get("event") != kind:
            raise Failed("expected a %s event, got %s" % (kind, json.dumps(event)))
        return event

    def finish(self):
        extra = []
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=EVENT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Failed("the runner did not exit after the last step") from None
        while True:
            _, line = self.events.get(timeout=EVENT_TIMEOUT)
            if line is None:
                break
            extra.append(line.strip())
        if extra:
            raise Failed("events after the last step: %s" % extra)
        if self.proc.returncode != 0:
            raise Failed("the runner exited %d after the last step; its standard error:\n%s"
                         % (self.proc.returncode, self.stderr()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()[-3000:]


def shown(value, most=20):
    """JSON of a value, a list longer than `most` cut to its first ones and its length."""
    if isinstance(value, list) and len(value) > most:
        return "%s, ... (%d in all)]" % (json.dumps(value[:most])[:-1], len(value))
    return json.dumps(value)


class Checks:
    """Failed checks of one scenario and runner, kept to be reported together."""

    def __init__(self):
        self.failures = []

    def equal(self, what, got, want):
        if got != want:
            self.failures.append("%s: expected %s, got %s" % (what, shown(want), shown(got)))

    def true(self, what, ok, detail=""):
        if not ok:
            self.failures.append("%s%s" % (what, ": " + detail if detail else ""))


def emit_events(runner, checks, first, end, skip=()):
    for index in range(first, end):
        event = runner.next()
        if index in skip:
            continue
        checks.equal("event of emit %d" % index, event, {"event": "emitted", "index": index})


def closed(runner, checks, acknowledged, refused=(), unsettled=(), flushed=True, retries=None, duplicates=None):
    event = runner.expect("closed")
    checks.equal("closed.flushed", event.get("flushed"), flushed)
    checks.equal("closed.acknowledged", event.get("acknowledged"), acknowledged)
    checks.equal("closed.refused", event.get("refused"), list(refused))
    checks.equal("closed.unsettled", event.get("unsettled"), list(unsettled))
    if retries is not None:
        checks.equal("closed.retries", event.get("retries"), retries)
    if duplicates is not None:
        checks.equal("closed.duplicates", event.get("duplicates"), duplicates)
    for name in ("duplicates", "retries"):
        checks.true("closed.%s is a count" % name, isinstance(event.get(name), int) and event[name] >= 0,
                    json.dumps(event.get(name)))
    return event


def log_receipts(ledger, checks, expected_ids, others=()):
    """The client's receipts in the log, by receipt_id: each once, nothing else but the suite's."""
    found, counts = {}, {}
    for leaf in ledger.leaves():
        member, receipt_id = receipt_member(leaf)
        counts[receipt_id] = counts.get(receipt_id, 0) + 1
        found[receipt_id] = member
    twice = sorted(r for r, n in counts.items() if n > 1)
    checks.equal("receipts in the log more than once", twice, [])
    missing = [r for r in expected_ids if r not in counts]
    checks.equal("receipts missing from the log", missing, [])
    unexpected = sorted(r for r in counts if r not in set(expected_ids) | set(others)
                        and not r.startswith("ledger."))
    checks.equal("receipts in the log besides those expected", unexpected, [])
    return {r: found[r] for r in expected_ids if r in found}


# The scenarios. Each plays one runner against its own ledgerd (or none) and
# returns the client's receipts as the log holds them, by receipt_id.

def batching(ctx, command, checks, tls=None):
    specs = four_kinds(60)
    ledger = ctx.ledger(tls)
    scenario = {"target": ledger.address, "tls": ledger.tls and ctx.client_tls, "options": OPTIONS,
                "receipts": specs, "steps": [{"do": "emit", "from": 0, "to": 60}, {"do": "close"}]}
    runner = ctx.runner(command, scenario)
    emit_events(runner, checks, 0, 60)
    closed(runner, checks, 60, retries=0, duplicates=0)
    runner.finish()
    calls = ledger.append_calls()
    checks.true("Append calls in ledger_rpcs_total: between 3 (60 receipts in batches of 25) and 59",
                3 <= calls < 60, "%d" % calls)
    return log_receipts(ledger, checks, [s["receipt_id"] for s in specs])


def tls(ctx, command, checks):
    return batching(ctx, command, checks, tls=True)


def retry_after_kill(ctx, command, checks):
    specs = four_kinds(200, "rk-")
    ledger = ctx.ledger()
    scenario = {"target": ledger.address, "options": OPTIONS, "receipts": specs,
                "steps": [{"do": "emit", "from": 0, "to": 100}, {"do": "wait"},
                          {"do": "emit", "from": 100, "to": 200}, {"do": "close"}]}
    runner = ctx.runner(command, scenario)
    emit_events(runner, checks, 0, 100)
    runner.expect("waiting")
    ledger.kill()
    runner.send("")
    emit_events(runner, checks, 100, 200)
    time.sleep(0.5)  # the emitter meets the ledger down
    ledger.start()
    restarted = time.monotonic()
    event = closed(runner, checks, 200)
    after = time.monotonic() - restarted
    checks.true("closed within %d s of the restart (reconnection bounded by max_backoff_ms)" % RECONNECT_S,
                after < RECONNECT_S, "after %.1f s" % after)
    checks.true("closed.retries > 0 (receipts were emitted while the ledger was down)",
                event.get("retries", 0) > 0, json.dumps(event.get("retries")))
    runner.finish()
    return log_receipts(ledger, checks, [s["receipt_id"] for s in specs])


def refusal(ctx, command, checks):
    specs = [model_call(i, "rf-") for i in range(10)]
    specs[3]["trace_id"] = "not-32-hex-digits"
    ledger = ctx.ledger()
    scenario = {"target": ledger.address, "options": OPTIONS, "receipts": specs,
                "steps": [{"do": "emit", "from": 0, "to": 10}, {"do": "close"}]}
    runner = ctx.runner(command, scenario)
    emit_events(runner, checks, 0, 10)
    closed(runner, checks, 9, retries=0, duplicates=0,
           refused=[{"receipt_id": "rf-model-3", "code": "INVALID_ARGUMENT", "message": TRACE_ID_REFUSAL}])
    runner.finish()
    good = [s["receipt_id"] for s in specs if s["receipt_id"] != "rf-model-3"]
    return log_receipts(ledger, checks, good)


def full_buffer(ctx, command, checks):
    target = "127.0.0.1:%d" % free_port()  # nothing listens
    specs = [tool_call(i, "fb-") for i in range(3)]
    for block, options in ((False, {}), (True, {"emit_timeout_ms": 300})):
        options = dict(OPTIONS, max_buffer=2, block=block, flush_timeout_ms=200, **options)
        scenario = {"target": target, "options": options, "receipts": specs,
                    "steps": [{"do": "emit", "from": 0, "to": 3}, {"do": "close"}]}
        runner = ctx.runner(command, scenario)
        emit_events(runner, checks, 0, 2)
        full = runner.next()
        what = "block %s: " % str(block).lower()
        checks.equal(what + "third emit", {k: full.get(k) for k in ("event", "index")},
                     {"event": "buffer_full", "index": 2})
        waited = full.get("waited_ms", -1)
        if block:
            checks.true(what + "buffer_full after emit_timeout_ms 300", 300 <= waited < 3000, "waited_ms %s" % waited)
        else:
            checks.true(what + "buffer_full at once", 0 <= waited < 200, "waited_ms %s" % waited)
        closed(runner, checks, 0, flushed=False, unsettled=["fb-tool-0", "fb-tool-1"], duplicates=0)
        runner.finish()
        ctx.next_run()
    return {}


WATCH_RUN = "run-w"


def watch_resume(ctx, command, checks):
    starts = [agent_start(i, WATCH_RUN, "w%d" % i, "wr-") for i in range(6)]
    for s in starts:
        s.pop("attempt", None)
    execs = [agent_exec(i, WATCH_RUN, "w%d" % i, "wr-", status) for i, status in
             enumerate(["succeeded", "failed", "succeeded", "succeeded", "killed", "failed"])]
    for s in execs:
        s.pop("attempt", None)
    specs = starts + execs[:3]
    later = execs[3:]  # the suite's own, appended after the restart
    ledger = ctx.ledger()
    scenario = {"target": ledger.address, "options": OPTIONS, "receipts": specs,
                "steps": [{"do": "emit", "from": 0, "to": len(specs)}, {"do": "close"},
                          {"do": "watch", "team": TEAM, "run_id": WATCH_RUN, "after_seq": -1, "count": 12},
                          {"do": "step", "team": TEAM, "run_id": WATCH_RUN, "step_id": "w4"}]}
    runner = ctx.runner(command, scenario)
    emit_events(runner, checks, 0, len(specs))
    closed(runner, checks, len(specs), retries=0, duplicates=0)
    changes = []
    while len(changes) < 12:
        changes.append(runner.expect("change"))
        if len(changes) == 5:
            ledger.kill()
            ledger.start()
            ledger.append(later)
            appended = time.monotonic()
    after = runner.last_at - appended
    checks.true("the last change within %d s of its append after the restart" % RECONNECT_S, after < RECONNECT_S,
                "after %.1f s" % after)
    step = runner.expect("step")
    runner.finish()
    checks.equal("step w4", step, {"event": "step", "state": "failed", "run_id": WATCH_RUN, "step_id": "w4",
                                   "attempt": 1})
    expected = []
    seq = 0
    for leaf in ledger.leaves():
        r = json.loads(leaf)["receipt"]
        if r.get("run_id") == WATCH_RUN:
            if r["kind"] == "agent_exec":
                state = "succeeded" if r["status"] == "succeeded" else "failed"
            else:
                state = "pending"
            expected.append({"event": "change", "seq": seq, "run_id": WATCH_RUN, "step_id": r["step_id"],
                             "attempt": 1, "state": state})
        seq += 1
    checks.equal("changes (each once, in seq order, none missing)", changes, expected)
    return log_receipts(ledger, checks, [s["receipt_id"] for s in specs], [s["receipt_id"] for s in later])


class Node(Ledger):
    """One ledgerd of a replicated shard (its batch log and fence in PostgreSQL), killed at will."""

    def __init__(self, build, work, name, uri, key):
        self.build, self.work, self.tls, self.name = build, work, None, name
        self.port, self.http_port = free_port(), free_port()
        self.address = "127.0.0.1:%d" % self.port
        self.args = [os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, name), "--listen",
                     self.address, "--http-listen", "127.0.0.1:%d" % self.http_port, "--origin", FAILOVER_ORIGIN,
                     "--signing-key", key, "--replication", uri, "--node-id", name,
                     "--replication-lease-ms", str(LEASE_MS), "--replication-timeout-ms", "3000",
                     "--checkpoint-interval-ms", "100", "--unknown-grace-ms", "100", "--sweep-interval-ms", "50"]
        self.proc = None

    def start(self):
        with open(os.path.join(self.work, self.name + ".log"), "ab") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=log)

    def ready(self):
        """/readyz: its status and text; 0 while it does not answer."""
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % self.http_port, timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return 0, str(e)

    def wait_ready(self, prefix, timeout=30):
        """Waits until /readyz is 200 and starts with `prefix` ("ready: leader", "ready: follower")."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failed("%s exited %d (see %s/%s.log)" % (self.name, self.proc.returncode, self.work, self.name))
            status, body = self.ready()
            if status == 200 and body.startswith(prefix):
                return time.monotonic()
            time.sleep(0.05)
        raise Failed("%s: /readyz does not say %r after %d s: %s" % (self.name, prefix, timeout, body.strip()))

    def receipt_ids(self):
        return {receipt_member(leaf)[1] for leaf in self.leaves()}


FAILOVER_ORIGIN = "conformance.test/shard-0"
LEASE_MS = 1500
# How long the receipts a client sent through the follower may take to reach the leader: with the follow, one
# batch's round trip more; without it, never while the leader lives.
FOLLOW_S = 10


def replicated_shard(ctx):
    """Two ledgerd nodes of a new database on the suite's PostgreSQL: the first leads, the second follows and
    knows the leader."""
    uri = ctx.database()
    key = os.path.join(ctx.work, "signing.key")
    subprocess.run([os.path.join(ctx.build, "cmd", "ledgerctl"), "keygen", "--origin", FAILOVER_ORIGIN, "--out",
                    key], check=True, capture_output=True)
    leader, follower = (Node(ctx.build, ctx.work, name, uri, key) for name in ("node-1", "node-2"))
    for node in (leader, follower):
        ctx.ledgers.append(node)
    leader.start()
    leader.wait_ready("ready: leader")
    follower.start()
    follower.wait_ready("ready: follower")
    follower.wait_ready("ready: follower, applied")  # past its catch-up
    deadline = time.monotonic() + 30
    while "appends go to %s" % leader.address not in follower.ready()[1]:
        if time.monotonic() > deadline:
            raise Failed("the follower does not name the leader: %s" % follower.ready()[1].strip())
        time.sleep(0.05)
    return leader, follower


def failover(ctx, command, checks, listed=False):
    """The runner's target is the follower (or both nodes, the leader first); the suite SIGKILLs the leader
    while receipts are in flight. Every receipt acknowledged, each once in the survivor's log."""
    specs = four_kinds(400, "fo-")
    leader, follower = replicated_shard(ctx)
    target = "%s,%s" % (leader.address, follower.address) if listed else follower.address
    scenario = {"target": target, "options": OPTIONS, "receipts": specs,
                "steps": [{"do": "emit", "from": 0, "to": 100}, {"do": "wait"},
                          {"do": "emit", "from": 100, "to": 300}, {"do": "wait"},
                          {"do": "emit", "from": 300, "to": 400}, {"do": "close"}]}
    runner = ctx.runner(command, scenario)
    emit_events(runner, checks, 0, 100)
    runner.expect("waiting")
    # The follower takes no append: the first 100 reach the leader only if the client went where the follower's
    # refusal sent it (or, given both nodes, to the leader it was given).
    first = {s["receipt_id"] for s in specs[:100]}
    deadline = time.monotonic() + FOLLOW_S
    while not first <= leader.receipt_ids() and time.monotonic() < deadline:
        time.sleep(0.1)
    missing = sorted(first - leader.receipt_ids())
    checks.true("receipts 0-99 on the leader within %d s, the client sent to the %s" % (
        FOLLOW_S, "nodes" if listed else "follower"), not missing,
        "%d of them are not: the client did not follow the follower's refusal to the leader it names" % len(missing))
    if missing:
        raise Failed("the rest of the scenario needs the leader followed")
    runner.send("")
    emit_events(runner, checks, 100, 300)
    runner.expect("waiting")
    leader.kill()  # receipts 100-299 are queued or in flight
    killed = time.monotonic()
    runner.send("")
    took_over = follower.wait_ready("ready: leader", timeout=30)
    emit_events(runner, checks, 300, 400)
    event = closed(runner, checks, 400)
    after = runner.last_at - took_over
    checks.true("closed within %d s of the survivor leading (%.1f s after the kill)" % (
        RECONNECT_S, took_over - killed), after < RECONNECT_S, "after %.1f s" % after)
    checks.true("closed.retries > 0 (receipts were in flight at the kill)", event.get("retries", 0) > 0,
                json.dumps(event.get("retries")))
    runner.finish()
    return log_receipts(follower, checks, [s["receipt_id"] for s in specs])


def failover_list(ctx, command, checks):
    return failover(ctx, command, checks, listed=True)


SCENARIOS = [("batching", batching), ("retry after kill", retry_after_kill), ("refusal", refusal),
             ("full buffer", full_buffer), ("watch resume", watch_resume), ("TLS", tls)]
# Played only when named (--scenario): a PostgreSQL and two ledgerd nodes each. What each says of a client,
# in the table the suite prints after them.
REPLICATED = [("failover", failover, "follows the leader"), ("failover list", failover_list, "takes a list of nodes")]


class Context:
    """Directories, ledgers and runners of one scenario and runner, cleaned up after it."""

    def __init__(self, build, work, certs):
        self.build, self.root, self.certs = build, work, certs
        self.pg = None
        self.databases = 0
        self.client_tls = {"ca": certs["ca"], "cert": certs["client_cert"], "key": certs["client_key"],
                           "server_name": "localhost"}
        self.ledgers, self.runners = [], []
        self.count = 0

    def begin(self, scenario, runner):
        self.name = "%s-%s" % (scenario.replace(" ", "-").lower(), runner)
        self.count = 0
        self.next_run()

    def next_run(self):
        self.count += 1
        self.work = os.path.join(self.root, "%s-%d" % (self.name, self.count))
        os.makedirs(self.work)

    def ledger(self, tls=None):
        ledger = Ledger(self.build, self.work, self.certs if tls else None)
        self.ledgers.append(ledger)
        return ledger

    def runner(self, command, scenario):
        runner = Runner(command, scenario, self.work)
        self.runners.append(runner)
        return runner

    def end(self):
        for r in self.runners:
            r.stop()
        for ledger in self.ledgers:
            ledger.stop()
        self.ledgers, self.runners = [], []

    def database(self):
        """The URI of a new database on the suite's PostgreSQL (a primary alone, started at the first call, as
        an unprivileged user)."""
        if self.pg is None:
            os.chmod(self.root, 0o755)  # PostgreSQL's user reaches its directory
            pg_work = os.path.join(self.root, "postgresql")
            os.makedirs(pg_work)
            self.pg = pgcluster.PgCluster(pg_work, standby=False)
        self.databases += 1
        name = "failover_%d" % self.databases
        self.pg.primary.sql("CREATE DATABASE %s" % name)
        return "postgresql://ledger@127.0.0.1:%d/%s?connect_timeout=2" % (self.pg.primary.port, name)

    def close(self):
        if self.pg is not None:
            self.pg.remove()


def certificates(work):
    ca = Certificates(os.path.join(work, "pki"))
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    client_cert, client_key = ca.issue("client", "client", "URI:" + CLIENT)
    admin_cert, admin_key = ca.issue("admin", "admin")
    policy = os.path.join(work, "pki", "policy.json")
    with open(policy, "w") as f:
        json.dump({"identities": [{"identity": CLIENT, "roles": ["emitter", "reader"], "teams": [TEAM]},
                                  {"identity": "cn:admin", "roles": ["admin"]}]}, f)
    return {"ca": ca.ca, "server_cert": server_cert, "server_key": server_key, "client_cert": client_cert,
            "client_key": client_key, "admin_cert": admin_cert, "admin_key": admin_key, "policy": policy}


def compare(scenario, logged):
    """The receipts each runner sent, as the log holds them, equal byte for byte across the runners."""
    failures = []
    names = [n for n in logged if logged[n] is not None]
    if len(names) < 2:
        return failures
    first = names[0]
    for other in names[1:]:
        a, b = logged[first], logged[other]
        if sorted(a) != sorted(b):
            failures.append("%s: %s and %s logged other receipt ids: only %s: %s; only %s: %s" % (
                scenario, first, other, first, sorted(set(a) - set(b)), other, sorted(set(b) - set(a))))
        for receipt_id in sorted(set(a) & set(b)):
            if a[receipt_id] != b[receipt_id]:
                failures.append("%s: receipt %s differs:\n  %s: %s\n  %s: %s" % (
                    scenario, receipt_id, first, a[receipt_id].decode(), other, b[receipt_id].decode()))
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("--runner", action="append", required=True, metavar="NAME=COMMAND")
    parser.add_argument("--prepare", action="append", default=[], metavar="NAME=COMMAND")
    parser.add_argument("--scenario", action="append",
                        choices=[n for n, _ in SCENARIOS] + [n for n, _, _ in REPLICATED])
    args = parser.parse_args()

    def named(option, spec):
        name, sep, command = spec.partition("=")
        if not sep or not name or not command.strip():
            parser.error("%s: NAME=COMMAND, not %r" % (option, spec))
        return name, command
    runners = [named("--runner", spec) for spec in args.runner]
    unprepared = {}
    for name, command in (named("--prepare", spec) for spec in args.prepare):
        t = time.monotonic()
        result = subprocess.run(shlex.split(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print("%s prepare %-8s %5.1f s" % ("ok  " if result.returncode == 0 else "FAIL", name,
                                          time.monotonic() - t), flush=True)
        if result.returncode != 0:
            unprepared[name] = "prepare (%s) exited %d:\n%s" % (command, result.returncode, result.stdout[-3000:])
    build = os.path.abspath(args.build)
    played = [(n, f) for n, f in SCENARIOS if not args.scenario or n in args.scenario]
    replicated = [(n, f) for n, f, _ in REPLICATED if args.scenario and n in args.scenario]
    if replicated and not os.path.exists(os.path.join(pgcluster.BIN, "initdb")):
        print("skip %s: PostgreSQL 15 is not installed (%s)" % (", ".join(n for n, _ in replicated), pgcluster.BIN))
        replicated = []
        if not played:
            return 77
    work = tempfile.mkdtemp(prefix="conformance-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service"))
    ctx = Context(build, work, certificates(work))
    failures = []
    outcomes = {}  # (scenario, runner): passed
    began = time.monotonic()
    try:
        for scenario, play in played + replicated:
            logged = {}
            for name, command in runners:
                checks = Checks()
                ctx.begin(scenario, name)
                t = time.monotonic()
                try:
                    if name in unprepared:
                        raise Failed(unprepared[name])
                    logged[name] = play(ctx, command, checks)
                except Failed as e:
                    checks.failures.append(str(e))
                    logged[name] = None
                finally:
                    ctx.end()
                outcomes[scenario, name] = not checks.failures
                status = "ok  " if not checks.failures else "FAIL"
                print("%s %-16s %-12s %5.1f s" % (status, scenario, name, time.monotonic() - t), flush=True)
                failures += ["%s, %s: %s" % (scenario, name, f) for f in checks.failures]
            failures += compare(scenario, logged)
    finally:
        ctx.close()
    if replicated:
        print_followers(runners, replicated, outcomes)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        print("the work directory (ledgers' and runners' standard error) is kept: " + work)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("PASS: %d scenarios x %d runners (%s), receipts byte-identical across them, in %.1f s"
          % (len(played + replicated), len(runners), ", ".join(n for n, _ in runners), time.monotonic() - began))
    return 0


def print_followers(runners, replicated, outcomes):
    """Which client follows the leader, which takes a list of nodes (PROTOCOL.md's table), from the replicated
    scenarios it passed."""
    says = {n: what for n, _, what in REPLICATED}
    width = max(len(n) for n in ["client"] + [n for n, _ in runners])
    print("%-*s  %s" % (width, "client", "  ".join(says[n] for n, _ in replicated)))
    for name, _ in runners:
        cells = ["%-*s" % (len(says[n]), "yes" if outcomes[n, name] else "NO") for n, _ in replicated]
        print(("%-*s  %s" % (width, name, "  ".join(cells))).rstrip())


if __name__ == "__main__":
    sys.exit(main())
