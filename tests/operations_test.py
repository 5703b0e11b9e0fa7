#!/usr/bin/python3
"""What an SRE reads of a running ledger: /metrics and the JSON log.

Usage: operations_test.py BUILD_DIR

A real ledgerd with mutual TLS on gRPC and HTTPS; team-a and team-b append
steps with denied calls (and team-b a denied start), team-b's second step
never completes (declared unknown, charged its reserved cost), a query
with a bad team is refused. Then:

  - /metrics counts every call by method and code, with a duration
    histogram per method; denied receipts by team and kind; the cost
    charged by team as the runs' records hold it; unknown steps declared by
    team; the process (start time, CPU, memory, descriptors) and the build;
  - a client that cancels its watch is logged at info ("rpc_cancelled"),
    not as a warning;
  - a client that speaks plain text to the TLS port makes gRPC log a
    handshake failure: it comes out as a JSON line (event "grpc"), like
    every other line ledgerd writes.

Every check runs; the failures are listed together.
"""
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_testlib import Certificates, generate_stubs, read  # noqa: E402

FAILURES = []
NOW_US = int(time.time() * 1e6)


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL: " + what)


def sample(text, name, labels=""):
    for line in text.splitlines():
        if line.startswith(name + labels + " "):
            return float(line.split()[-1])
    return None


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="operations-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service", "query"))
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import query_pb2 as q
    import query_pb2_grpc as q_grpc
    import receipt_pb2 as pb

    ca = Certificates(os.path.join(work, "pki"))
    cert, key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    admin_cert, admin_key = ca.issue("admin", "admin")
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump({"identities": [{"identity": "cn:admin", "roles": ["admin"]}]}, f)
    err_path = os.path.join(work, "ledgerd.err")
    proc = subprocess.Popen(
        [os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, "data"), "--listen", "127.0.0.1:0",
         "--http-listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key, "--client-ca", ca.ca,
         "--policy", policy, "--checkpoint-interval-ms", "20", "--unknown-grace-ms", "100",
         "--sweep-interval-ms", "50"], stdout=subprocess.PIPE, stderr=open(err_path, "wb"))
    try:
        address = proc.stdout.readline().decode().split()[-1]
        http = "https://" + proc.stdout.readline().decode().split()[-1]
        creds = grpc.ssl_channel_credentials(read(ca.ca), read(admin_key), read(admin_cert))
        channel = grpc.secure_channel(address, creds, options=[("grpc.ssl_target_name_override", "localhost")])
        ledger = svc_grpc.LedgerServiceStub(channel)
        query = q_grpc.QueryServiceStub(channel)

        def r(team, rid, step, **body):
            return pb.Receipt(receipt_id=rid, team=team, run_id="run-1", step_id=step, occurred_at_us=NOW_US, **body)

        allow, deny = pb.DECISION_ALLOW, pb.DECISION_DENY
        batches = [
            [r("team-a", "a-s1", "s1", agent_start=pb.AgentStart(decision=allow, timeout_ms=600000,
                                                                 cost_reserved_micros=100)),
             r("team-a", "a-m1", "s1", model_call=pb.ModelCall(route="m", decision=allow, cost_micros=40)),
             r("team-a", "a-m2", "s1", model_call=pb.ModelCall(route="m", decision=deny, reason="budget")),
             r("team-a", "a-m3", "s1", model_call=pb.ModelCall(route="m", decision=deny, reason="budget"))],
            [r("team-a", "a-e1", "s1", agent_exec=pb.AgentExec(start_receipt_id="a-s1",
                                                               status=pb.EXEC_STATUS_SUCCEEDED, cost_micros=5)),
             r("team-b", "b-s1", "s1", agent_start=pb.AgentStart(decision=deny, reason="image")),
             r("team-b", "b-s2", "s2", agent_start=pb.AgentStart(decision=allow, timeout_ms=50,
                                                                 cost_reserved_micros=700)),
             r("team-b", "b-t1", "s2", tool_call=pb.ToolCall(tool="git", target="x", decision=deny, reason="no"))],
        ]
        for batch in batches:
            out = ledger.Append(svc.AppendRequest(receipts=batch), timeout=10)
            check(all(x.code == 0 for x in out.results), "append: %s" % out)
        deadline = time.time() + 20
        while time.time() < deadline:
            st = query.GetStep(q.GetStepRequest(team="team-b", run_id="run-1", step_id="s2"), timeout=10)
            if st.state == q.STEP_STATE_UNKNOWN:
                break
            time.sleep(0.05)
        check(st.state == q.STEP_STATE_UNKNOWN, "team-b's s2 was not declared unknown")
        try:
            query.GetStep(q.GetStepRequest(team="Team B", run_id="run-1", step_id="s1"), timeout=10)
            check(False, "a bad team was not refused")
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "bad team: %s" % e.code())
        charged = {t: query.GetRun(q.GetRunRequest(team=t, run_id="run-1"), timeout=10).charged_cost_micros
                   for t in ("team-a", "team-b")}

        # A watch the client cancels.
        watch = query.WatchSteps(q.WatchStepsRequest(filter=q.StepFilter(team="team-a"), after_seq=-1))
        next(watch)
        watch.cancel()
        # Plain text to the TLS port.
        with socket.create_connection(("127.0.0.1", int(address.rsplit(":", 1)[1]))) as s:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\0" * 64)
            s.settimeout(5)
            try:
                s.recv(100)
            except OSError:
                pass
        time.sleep(0.5)

        # /metrics, scraped as admin over HTTPS.
        tls = ssl.create_default_context(cafile=ca.ca)
        tls.load_cert_chain(admin_cert, admin_key)
        with urllib.request.urlopen(http + "/metrics", context=tls, timeout=10) as resp:
            text = resp.read().decode()
        get_step = '{method="/evidence.ledger.v1.QueryService/GetStep",code="invalid_argument"}'
        check(sample(text, "ledger_rpcs_total", get_step) == 1, "GetStep refusals: %s" %
              sample(text, "ledger_rpcs_total", get_step))
        append = '{method="/evidence.ledger.v1.LedgerService/Append",code="ok"}'
        check(sample(text, "ledger_rpcs_total", append) == 2, "Appends: %s" % sample(text, "ledger_rpcs_total", append))
        m = '{method="/evidence.ledger.v1.LedgerService/Append"}'
        check(sample(text, "ledger_rpc_seconds_count", m) == 2, "Append durations: %s" %
              sample(text, "ledger_rpc_seconds_count", m))
        check(sample(text, "ledger_rpc_seconds_bucket",
                     '{method="/evidence.ledger.v1.LedgerService/Append",le="+Inf"}') == 2, "Append +Inf bucket")
        check(0 < (sample(text, "ledger_rpc_seconds_sum", m) or 0) < 10, "Append duration sum")
        for labels, want in [('{team="team-a",kind="model_call"}', 2), ('{team="team-b",kind="agent_start"}', 1),
                             ('{team="team-b",kind="tool_call"}', 1)]:
            check(sample(text, "ledger_denied_total", labels) == want,
                  "denied %s: %s, want %d" % (labels, sample(text, "ledger_denied_total", labels), want))
        check(sample(text, "ledger_denied_total", '{team="team-a",kind="tool_call"}') is None,
              "a denied tool call counted for team-a")
        check(charged == {"team-a": 45, "team-b": 700}, "runs' charged cost: %s" % charged)
        for team, want in charged.items():
            got = sample(text, "ledger_cost_charged_micros", '{team="%s"}' % team)
            check(got == want, "cost charged to %s: %s, want %d" % (team, got, want))
        check(sample(text, "ledger_team_unknown_steps_declared_total", '{team="team-b"}') == 1,
              "unknown steps declared for team-b")
        start = sample(text, "process_start_time_seconds")
        check(start is not None and abs(start - time.time()) < 120, "process start time %s" % start)
        check((sample(text, "process_resident_memory_bytes") or 0) > 1e6, "resident memory")
        check((sample(text, "process_open_fds") or 0) > 3, "open fds")
        check(sample(text, "process_cpu_seconds_total") is not None, "cpu seconds")
        check(re.search(r'^ledger_build_info\{version="[^"]+",compiler="[^"]+"\} 1$', text, re.M) is not None,
              "build info")
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    lines = open(err_path).read().splitlines()
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            check(False, "a log line that is not JSON: %r" % line)
    watches = [e for e in events if e.get("method", "").endswith("/WatchSteps")]
    check([(e["level"], e["event"], e["code"]) for e in watches] == [("info", "rpc_cancelled", "cancelled")],
          "the cancelled watch's log: %s" % watches)
    handshakes = [e for e in events if e["event"] == "grpc" and "Handshake failed" in e.get("msg", "")]
    check(len(handshakes) >= 1 and handshakes[0]["level"] == "warn" and
          handshakes[0].get("source", "").startswith("ssl_transport_security.cc:"),
          "gRPC's handshake failure is not a JSON line: %s" % [e for e in events if e["event"] == "grpc"])
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        sys.exit(1)
    print("PASS: calls, denials, costs, unknown steps, process and build in /metrics; cancels at info; "
          "gRPC's own lines in the JSON log")


if __name__ == "__main__":
    main()
