#!/usr/bin/python3
"""Operating the ledger: config file, /metrics, /healthz, /readyz, JSON logs.

Usage: observability_test.py BUILD_DIR

A ledgerd started from a --config file (origin, timeouts, ports) serves a
small workload: steps that succeed, one whose worker never reports (declared
unknown), a duplicate, and a receipt refused for a bad field that carries a
canary string. Then:

  - /healthz and /readyz answer; /metrics is valid Prometheus text whose
    figures match what was done (appends by kind and result, tree size,
    checkpoint, steps by state, unknown steps declared, exports, proofs,
    commit and fsync histograms);
  - every line ledgerd wrote to stderr is one JSON object; a failed call
    made with an x-request-id gets it back and is logged under it; the
    canary never appears in the log;
  - a config file with an unknown option or a bad value stops ledgerd at
    start, naming the file and the option.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_testlib import fail, generate_stubs  # noqa: E402

NOW_US = int(time.time() * 1e6)
CANARY = "canary-7f3e9a"
SAMPLE = re.compile(r'^[a-z_]+(\{([a-z_]+="[^"]*",?)*\})? -?[0-9.]+(e[+-]?[0-9]+)?$|^[a-z_]+(\{[^}]*\})? \+Inf$')


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(text, name, labels=""):
    for line in text.splitlines():
        if line.startswith(name + labels + " "):
            return float(line.split()[-1])
    return None


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="observability-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service", "export"))
    import grpc
    import export_pb2 as ex
    import export_pb2_grpc as ex_grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import receipt_pb2 as pb

    ledgerd = os.path.join(build, "cmd", "ledgerd")
    config = os.path.join(work, "ledgerd.json")
    with open(config, "w") as f:
        json.dump({"data": os.path.join(work, "data"), "listen": "127.0.0.1:0", "http-listen": "127.0.0.1:0",
                   "origin": "observability.test/log", "checkpoint-interval-ms": 50, "unknown-grace-ms": 100,
                   "sweep-interval-ms": 50, "projections": True}, f)
    err_path = os.path.join(work, "ledgerd.err")
    proc = subprocess.Popen([ledgerd, "--config", config], stdout=subprocess.PIPE, stderr=open(err_path, "wb"))
    address = proc.stdout.readline().decode().split()[-1]
    http = "http://" + proc.stdout.readline().decode().split()[-1]

    with grpc.insecure_channel(address) as ch:
        stub = svc_grpc.LedgerServiceStub(ch)
        if stub.GetVerifierKey(svc.GetVerifierKeyRequest(), timeout=10).origin != "observability.test/log":
            fail("the config file's origin was not used")

        def r(rid, step, **body):
            return pb.Receipt(receipt_id=rid, team="team-a", run_id="run-1", step_id=step, occurred_at_us=NOW_US, **body)
        batch = [r("s1", "step-1", agent_start=pb.AgentStart(decision=pb.DECISION_ALLOW, timeout_ms=600000)),
                 r("m1", "step-1", model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW, input_tokens=5)),
                 r("e1", "step-1", agent_exec=pb.AgentExec(start_receipt_id="s1", status=pb.EXEC_STATUS_SUCCEEDED)),
                 r("s2", "step-2", agent_start=pb.AgentStart(decision=pb.DECISION_ALLOW, timeout_ms=50)),
                 r("m2", "step-2", model_call=pb.ModelCall(route="m", decision=pb.DECISION_DENY))]
        stub.Append(svc.AppendRequest(receipts=batch), timeout=10)
        stub.Append(svc.AppendRequest(receipts=batch[:1]), timeout=10)  # a duplicate
        bad = r("b1", "step-3", model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW))
        bad.team = "Team A " + CANARY
        bad.attributes["note"] = CANARY
        out = stub.Append(svc.AppendRequest(receipts=[bad]), timeout=10)
        if out.results[0].code != grpc.StatusCode.INVALID_ARGUMENT.value[0]:
            fail("the bad receipt was not refused: %s" % out)

        # step-2 never completes: wait for the sweeper (50 ms timeout + 100 ms grace).
        deadline = time.time() + 20
        while time.time() < deadline:
            cp = stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
            if cp.tree_size >= 6:
                break
            time.sleep(0.05)
        else:
            fail("step-2 was not declared unknown")
        stub.GetInclusionProof(svc.GetInclusionProofRequest(seq=0), timeout=10)
        for _ in ex_grpc.ExportServiceStub(ch).Export(ex.ExportRequest(run=ex.RunScope(team="team-a", run_id="run-1")),
                                                      timeout=60):
            pass
        # A failing call with our request id.
        call = stub.GetEntries(svc.GetEntriesRequest(from_seq=0, to_seq=99), timeout=10,
                               metadata=[("x-request-id", "obs-test-1")])
        try:
            list(call)
            fail("GetEntries beyond the log succeeded")
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.OUT_OF_RANGE:
                fail("GetEntries: %s" % e.code())
        if dict(call.initial_metadata()).get("x-request-id") != "obs-test-1":
            fail("x-request-id not returned: %s" % (call.initial_metadata(),))

    # Health.
    if get(http + "/healthz") != (200, "ok\n") or get(http + "/readyz") != (200, "ready\n"):
        fail("health: %s %s" % (get(http + "/healthz"), get(http + "/readyz")))
    if get(http + "/nothing")[0] != 404:
        fail("unknown path not 404")

    # Metrics.
    time.sleep(0.2)  # a checkpoint of the whole log
    status, text = get(http + "/metrics")
    if status != 200:
        fail("/metrics: %d" % status)
    for line in text.splitlines():
        if line and not line.startswith("# ") and not SAMPLE.match(line):
            fail("not Prometheus text: %r" % line)
    expect = {
        ('ledger_appends_total', '{kind="agent_start",result="ok"}'): 2,
        ('ledger_appends_total', '{kind="agent_start",result="duplicate"}'): 1,
        ('ledger_appends_total', '{kind="model_call",result="ok"}'): 2,
        ('ledger_appends_total', '{kind="model_call",result="invalid_argument"}'): 1,
        ('ledger_appends_total', '{kind="agent_exec",result="ok"}'): 1,
        ('ledger_append_request_receipts_count', ''): 3,
        ('ledger_tree_size', ''): 6,
        ('ledger_checkpoint_tree_size', ''): 6,
        ('ledger_unknown_steps_declared_total', ''): 1,
        ('ledger_steps', '{team="team-a",state="succeeded"}'): 1,
        ('ledger_steps', '{team="team-a",state="unknown"}'): 1,
        ('ledger_exports_total', '{scope="run",result="ok"}'): 1,
        ('ledger_proofs_served_total', '{type="inclusion"}'): 1,
        ('ledger_store_failed', ''): 0,
        ('ledger_append_queue_receipts', ''): 0,
    }
    for (name, labels), want in expect.items():
        got = metric(text, name, labels)
        if got != want:
            fail("%s%s: want %s, got %s\n%s" % (name, labels, want, got, text))
    for name in ("ledger_commit_seconds_count", "ledger_fsync_seconds_count", "ledger_commit_entries_count"):
        if not metric(text, name):
            fail("%s is 0 or missing" % name)
    age = metric(text, "ledger_checkpoint_age_seconds")
    if age is None or not 0 <= age < 60:
        fail("checkpoint age %s" % age)
    print("metrics: %d samples, as expected" % sum(1 for l in text.splitlines() if l and l[0] != "#"))

    proc.terminate()
    if proc.wait(timeout=30) != 0:
        fail("ledgerd exited %d" % proc.returncode)

    # Logs.
    lines = open(err_path).read().splitlines()
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            fail("a log line that is not JSON: %r" % line)
    if any(CANARY in line for line in lines):
        fail("receipt content in the log")
    names = [e["event"] for e in events]
    for want in ("listening", "rpc_done", "rpc_failed", "stopping"):
        if want not in names:
            fail("no %s event in %s" % (want, names))
    failed = [e for e in events if e.get("request_id") == "obs-test-1"]
    if len(failed) != 1 or failed[0]["code"] != "out_of_range" or failed[0]["identity"] != "local" \
            or not failed[0]["method"].endswith("/GetEntries"):
        fail("the failed call's log line: %s" % failed)
    print("logs: %d lines, each one JSON object; the failed call logged under its request id" % len(lines))

    # Config errors.
    for content, message in [
            ({"listn": "x"}, "%s: 'listn' is not an option; did you mean 'listen'?" % config),
            ({"max-queued": "lots"}, "--max-queued (in %s): 'lots' is not an integer" % config),
            ({"projections": "maybe"}, "'projections' must be true or false (a JSON boolean, without quotes)"),
            ({"projections": "false"}, "'projections' must be true or false (a JSON boolean, without quotes)"),
            ({"insecure": "true"}, "'insecure' must be true or false (a JSON boolean, without quotes)"),
            ({"checkpoint-interval-ms": True}, "'checkpoint-interval-ms' must be a string or an integer")]:
        content["data"] = os.path.join(work, "data2")
        with open(config, "w") as f:
            json.dump(content, f)
        r = subprocess.run([ledgerd, "--config", config, "--http-listen", "127.0.0.1:0"], capture_output=True,
                           text=True, timeout=30)
        if r.returncode == 0 or message not in r.stderr:
            fail("config %s: rc %d, %s" % (content, r.returncode, r.stderr))
    print("config: an unknown option (with the nearest one) and bad values, booleans in quotes included, stop "
          "ledgerd at start, naming them")
    print("PASS")


if __name__ == "__main__":
    main()
