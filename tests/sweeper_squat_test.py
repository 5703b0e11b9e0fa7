#!/usr/bin/python3
"""An ordinary emitter cannot silence the sweeper, over real mutual TLS.

Usage: sweeper_squat_test.py BUILD_DIR

The sweeper declares a step unknown with an entry whose receipt_id is
"ledger.unknown.<start seq>". An emitter of team-b that could append
receipts with such ids first would make the declaration of team-a's step
collide: the step would stay pending, every step due after it too, and a
late completion would then read as success. Here team-b's emitter tries
exactly that (the ids of the next 40 seqs, predicted from the public
checkpoint), then team-a's worker crashes after its start.

Expected: every squatting receipt is refused with INVALID_ARGUMENT naming
receipt_id and the reserved namespace, and nothing of it is in the log;
the crashed step and a step of team-c due after it are both declared
unknown; a late completion is flagged late_completion and the step stays
unknown. Receipt ids are scoped by team: team-b may use an id team-a
already used, and the error for a changed receipt never names another
team's entry.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_testlib import Certificates, fail, free_port, generate_stubs, read  # noqa: E402

EMITTER_A = "spiffe://cluster/ns/team-a/sa/worker"
EMITTER_B = "spiffe://cluster/ns/team-b/sa/gateway"
EMITTER_C = "spiffe://cluster/ns/team-c/sa/worker"
AUDITOR = "spiffe://cluster/ns/audit/sa/auditor"
POLICY = {"identities": [
    {"identity": "uri:" + EMITTER_A, "roles": ["emitter"], "teams": ["team-a"]},
    {"identity": "uri:" + EMITTER_B, "roles": ["emitter"], "teams": ["team-b"]},
    {"identity": "uri:" + EMITTER_C, "roles": ["emitter"], "teams": ["team-c"]},
    {"identity": "uri:" + AUDITOR, "roles": ["auditor"], "teams": ["*"]},
]}
NOW_US = int(time.time() * 1e6)


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="sweeper-squat-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service", "query"))
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import query_pb2 as q
    import query_pb2_grpc as q_grpc
    import receipt_pb2 as pb

    ca = Certificates(os.path.join(work, "pki"), "ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1")
    certs = {name: ca.issue(name, name, "URI:" + uri) for name, uri in
             [("a", EMITTER_A), ("b", EMITTER_B), ("c", EMITTER_C), ("auditor", AUDITOR)]}
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump(POLICY, f)
    address = "127.0.0.1:%d" % free_port()
    log_path = os.path.join(work, "ledgerd.log")
    proc = subprocess.Popen(
        [os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, "data"), "--listen", address,
         "--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca, "--policy", policy,
         "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "20", "--unknown-grace-ms", "300", "--sweep-interval-ms", "50"],
        stdout=subprocess.PIPE, stderr=open(log_path, "wb"))
    if not proc.stdout.readline().decode().startswith("listening on"):
        fail("ledgerd did not start: " + open(log_path).read())

    def channel(who):
        cert, key = certs[who]
        return grpc.secure_channel(address, grpc.ssl_channel_credentials(read(ca.ca), read(key), read(cert)))

    stubs = {who: svc_grpc.LedgerServiceStub(channel(who)) for who in certs}
    query = q_grpc.QueryServiceStub(channel("auditor"))

    def start(rid, team, step, timeout_ms):
        return pb.Receipt(receipt_id=rid, team=team, run_id="run-" + team, step_id=step, occurred_at_us=NOW_US,
                          agent_start=pb.AgentStart(decision=pb.DECISION_ALLOW, timeout_ms=timeout_ms))

    def call(rid, team, tokens=1):
        return pb.Receipt(receipt_id=rid, team=team, run_id="run-" + team, step_id="s1", occurred_at_us=NOW_US,
                          model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW, input_tokens=tokens))

    def append(who, receipts):
        return stubs[who].Append(svc.AppendRequest(receipts=receipts), timeout=10).results

    def head():
        for _ in range(200):
            cp = stubs["b"].GetCheckpoint(svc.GetCheckpointRequest(), timeout=5)
            if cp.tree_size == size_written[0]:
                return cp.tree_size
            time.sleep(0.02)
        fail("the checkpoint did not reach %d" % size_written[0])

    size_written = [0]

    def written(results):
        size_written[0] = max([size_written[0]] + [r.seq + 1 for r in results if r.code == 0])

    problems = []

    def squat(ids):
        """Appends team-b receipts with the sweeper's ids; checks each is refused."""
        res = append("b", [call("ledger.unknown.%d" % i, "team-b") for i in ids])
        refused = [r for r in res if r.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]]
        want = "receipt_id: 'ledger.unknown.%d' is in the ledger's namespace" % ids[0]
        if len(refused) != len(ids):
            problems.append("%d of %d squatting receipts were appended: the sweeper's ids are open to emitters"
                            % (len(ids) - len(refused), len(ids)))
        elif not refused[0].message.startswith(want):
            problems.append("the refusal does not name the field and the rule: %r, want it to start with %r"
                            % (refused[0].message, want))
        written(res)

    # 1. Stop every declaration: team-b squats the ids of 1,000 seqs ahead,
    # then starts 1,000 steps of its own there that are due at once. A sweep
    # that stops at its first failure never reaches anyone else's step.
    n = head()
    squat(list(range(n + 1000, n + 2000)))
    res = append("b", [start("b-start-%d" % k, "team-b", "b-%d" % k, 1) for k in range(1000)])
    if any(r.code for r in res):
        fail("team-b's starts: %s" % res[0])
    written(res)
    # 2. Make one step read as success: team-b squats the ids of the next 40
    # seqs past the head, where team-a's next start will land.
    n = head()
    squat(list(range(n + 40, n + 80)))
    for rid in ("ledger.unknown.x", "ledger.", "ledger.anything"):
        r = append("b", [call(rid, "team-b")])[0]
        if r.code != grpc.StatusCode.INVALID_ARGUMENT.value[0]:
            problems.append("receipt_id %r: code %d, want INVALID_ARGUMENT" % (rid, r.code))
        written([r])
    # Not the namespace: "ledger" alone and ids that only start alike.
    for rid in ("ledger", "ledgers.unknown.1", "my.ledger.unknown.1"):
        r = append("b", [call(rid, "team-b")])
        if r[0].code != 0:
            fail("receipt_id %r was refused: %s" % (rid, r[0].message))
        written(r)

    # team-a's worker crashes after its start: its step must become unknown.
    for _ in range(40 - (size_written[0] - n)):  # land the start inside the range team-b aimed at
        written(append("a", [call("a-fill-%d" % size_written[0], "team-a")]))
    res = append("a", [start("a-start", "team-a", "s-a", 300)])
    if res[0].code != 0:
        fail("team-a's start: %s" % res)
    start_seq = res[0].seq
    written(res)
    # team-c's step is due after everything above.
    res = append("c", [start("c-start", "team-c", "s-c", 1000)])
    if res[0].code != 0:
        fail("team-c's start: %s" % res)
    written(res)

    def step(team, step_id):
        return query.GetStep(q.GetStepRequest(team=team, run_id="run-" + team, step_id=step_id), timeout=5)

    deadline = time.time() + 20
    while time.time() < deadline:
        a, c = step("team-a", "s-a"), step("team-c", "s-c")
        if a.state == q.STEP_STATE_UNKNOWN and c.state == q.STEP_STATE_UNKNOWN:
            break
        time.sleep(0.1)
    else:
        problems.append("after the deadlines, team-a's crashed step is %s and team-c's is %s (want both UNKNOWN): "
                        "the sweeper was silenced" % (q.StepState.Name(a.state), q.StepState.Name(c.state)))

    # A late completion cannot turn the unknown step into a success.
    late = pb.Receipt(receipt_id="a-exec", team="team-a", run_id="run-team-a", step_id="s-a", occurred_at_us=NOW_US,
                      agent_exec=pb.AgentExec(start_receipt_id="a-start", status=pb.EXEC_STATUS_SUCCEEDED))
    if append("a", [late])[0].code != 0:
        fail("the late completion was refused")
    for _ in range(100):
        a = step("team-a", "s-a")
        if a.has_completion:
            break
        time.sleep(0.05)
    if a.state != q.STEP_STATE_UNKNOWN or q.ANOMALY_LATE_COMPLETION not in a.anomalies:
        problems.append("after a late success the step is %s with anomalies %s; want UNKNOWN, late_completion"
             % (q.StepState.Name(a.state), list(a.anomalies)))

    # Receipt ids are scoped by team: team-b may reuse team-a's id, and a
    # changed receipt's error names only the caller's own entry.
    r = append("b", [call("a-start", "team-b")])[0]
    if r.code != 0:
        problems.append("team-b could not use an id team-a used: %d %s" % (r.code, r.message))
    r = append("b", [call("a-start", "team-b", tokens=2)])[0]
    if r.code != grpc.StatusCode.ALREADY_EXISTS.value[0]:
        problems.append("a changed receipt: %d %s, want ALREADY_EXISTS" % (r.code, r.message))
    elif "seq %d" % start_seq in r.message:
        problems.append("the ALREADY_EXISTS message names team-a's entry: " + r.message)
    if problems:
        fail("\n  ".join(problems))

    proc.send_signal(signal.SIGTERM)
    if proc.wait(timeout=30) != 0:
        fail("ledgerd exited %d" % proc.returncode)
    print("sweeper_squat: OK (squatting refused; crashed step seq %d declared unknown)" % start_seq)


if __name__ == "__main__":
    main()
