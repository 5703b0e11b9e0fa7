#!/usr/bin/python3
"""Limits: per-identity rate and concurrency, message and batch size, idle
streams, streams per connection, client deadlines.

Usage: limits_test.py BUILD_DIR

A ledgerd over mutual TLS with --rate-per-identity 200,
--concurrency-per-identity 2 and --stream-idle-ms 500, and three
identities: a flooder, a polite client and a bulk client. Then a plain-text
ledgerd on loopback with --max-streams-per-connection 2. Each limit is
driven past its bound and must answer with the exact code, while other
identities go on unaffected.
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from access_control_test import Ledger  # noqa: E402
from ledger_testlib import Certificates, fail, generate_stubs, read  # noqa: E402

NOW_US = int(time.time() * 1e6)


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="limits-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service", "query"))
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import query_pb2 as q
    import query_pb2_grpc as q_grpc
    import receipt_pb2 as pb

    ca = Certificates(os.path.join(work, "pki"))
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1")
    clients = {name: ca.issue(name, name) for name in ("flooder", "polite", "bulk")}
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump({"identities": [{"identity": "cn:" + n, "roles": ["emitter", "reader"], "teams": ["team-a"]}
                                  for n in clients]}, f)
    ledger = Ledger(build, work, ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca,
                                  "--policy", policy, "--rate-per-identity", "200",
                                  "--concurrency-per-identity", "2", "--stream-idle-ms", "500",
                                  "--max-message-bytes", "200000"])

    def channel(who):
        cert, key = clients[who]
        return grpc.secure_channel(ledger.address, grpc.ssl_channel_credentials(read(ca.ca), read(key), read(cert)))

    counter = [0]

    def receipts(n, pad=0):
        out = []
        for _ in range(n):
            counter[0] += 1
            r = pb.Receipt(receipt_id="r-%d" % counter[0], team="team-a", run_id="run", step_id="s",
                           occurred_at_us=NOW_US, model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW))
            if pad:
                r.attributes["pad"] = "x" * pad
            out.append(r)
        return out

    def expect_error(call, code, text):
        try:
            call()
        except grpc.RpcError as e:
            if e.code() != code or text not in e.details():
                fail("expected %s '%s', got %s '%s'" % (code.name, text, e.code().name, e.details()))
            return
        fail("expected %s '%s', got OK" % (code.name, text))

    flooder_ch, polite_ch, bulk_ch = channel("flooder"), channel("polite"), channel("bulk")
    flooder, polite, bulk = (svc_grpc.LedgerServiceStub(c) for c in (flooder_ch, polite_ch, bulk_ch))
    flooder_q = q_grpc.QueryServiceStub(flooder_ch)

    # Rate: 200 a second, one second's burst. Appends spend one per receipt.
    flooder.Append(svc.AppendRequest(receipts=receipts(100)), timeout=10)
    flooder.Append(svc.AppendRequest(receipts=receipts(90)), timeout=10)
    expect_error(lambda: flooder.Append(svc.AppendRequest(receipts=receipts(100)), timeout=10),
                 grpc.StatusCode.RESOURCE_EXHAUSTED,
                 "identity 'cn:flooder' is over its rate of 200 receipts and calls a second")
    polite.Append(svc.AppendRequest(receipts=receipts(50)), timeout=10)  # its own budget
    time.sleep(0.6)  # 120 units back
    flooder.Append(svc.AppendRequest(receipts=receipts(100)), timeout=10)
    print("rate: the flooder's third batch refused, the polite client's accepted, the flooder's accepted again later")

    # Rate on a stream: each message spends; a refused batch is answered per receipt.
    time.sleep(1.1)
    responses = list(flooder.AppendStream(iter([svc.AppendRequest(receipts=receipts(150)),
                                                svc.AppendRequest(receipts=receipts(150))]), timeout=10))
    codes = [[r.code for r in resp.results] for resp in responses]
    if codes[0] != [0] * 150 or codes[1] != [grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]] * 150:
        fail("stream rate: %s" % codes)
    print("rate on a stream: the second batch answered RESOURCE_EXHAUSTED receipt by receipt")

    # Concurrency: two calls open at once per identity.
    time.sleep(1.1)
    watch = q.WatchStepsRequest(filter=q.StepFilter(team="team-a"), after_seq=10**9)
    w1 = flooder_q.WatchSteps(watch, timeout=30)
    w2 = flooder_q.WatchSteps(watch, timeout=30)
    time.sleep(0.3)
    expect_error(lambda: flooder.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10),
                 grpc.StatusCode.RESOURCE_EXHAUSTED, "identity 'cn:flooder' has 2 calls open, its limit")
    polite.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
    w1.cancel()
    for _ in range(50):
        try:
            flooder.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
            break
        except grpc.RpcError:
            time.sleep(0.05)
    else:
        fail("a cancelled watch did not release its place")
    w2.cancel()
    print("concurrency: a third call refused while two watches were open; freed by a cancel")

    # Deadlines: watches whose deadline passes end, and release their places.
    time.sleep(1.1)
    for _ in range(3):
        w = flooder_q.WatchSteps(watch, timeout=0.3)
        expect_error(lambda: next(w), grpc.StatusCode.DEADLINE_EXCEEDED, "")
    time.sleep(0.3)
    flooder.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
    print("deadlines: three watches ended at their deadline and released their places")

    # Idle append streams are closed.
    def one_then_silence():
        yield svc.AppendRequest(receipts=receipts(1))
        time.sleep(5)

    stream = polite.AppendStream(one_then_silence(), timeout=20)
    next(stream)
    started = time.monotonic()
    expect_error(lambda: next(stream), grpc.StatusCode.CANCELLED, "")
    idle = time.monotonic() - started
    if idle > 3:
        fail("the idle stream was closed after %.1f s (idle limit 0.5 s)" % idle)
    print("idle: a silent append stream was closed after %.1f s" % idle)

    # Message and batch size.
    expect_error(lambda: bulk.Append(svc.AppendRequest(receipts=receipts(1, pad=250000)), timeout=10),
                 grpc.StatusCode.RESOURCE_EXHAUSTED, "larger than max")
    time.sleep(1.1)
    expect_error(lambda: bulk.Append(svc.AppendRequest(receipts=receipts(1001)), timeout=10),
                 grpc.StatusCode.INVALID_ARGUMENT, "1000")
    print("size: a 250 kB request refused (max 200 kB); a batch of 1001 refused")
    for c in (flooder_ch, polite_ch, bulk_ch):
        c.close()
    ledger.stop()

    # Streams per connection: the third call on a connection waits for a
    # free stream; another connection is served at once.
    plain = Ledger(build, work, ["--max-streams-per-connection", "2"], name="plain")
    own = [("grpc.use_local_subchannel_pool", 1)]  # a connection of its own, not shared between channels
    with grpc.insecure_channel(plain.address, own) as one, grpc.insecure_channel(plain.address, own) as two:
        stub = q_grpc.QueryServiceStub(one)
        w1, w2 = stub.WatchSteps(watch, timeout=30), stub.WatchSteps(watch, timeout=30)
        time.sleep(0.3)
        expect_error(lambda: svc_grpc.LedgerServiceStub(one).GetCheckpoint(svc.GetCheckpointRequest(), timeout=1),
                     grpc.StatusCode.DEADLINE_EXCEEDED, "")
        svc_grpc.LedgerServiceStub(two).GetCheckpoint(svc.GetCheckpointRequest(), timeout=5)
        w1.cancel()
        svc_grpc.LedgerServiceStub(one).GetCheckpoint(svc.GetCheckpointRequest(), timeout=5)
        w2.cancel()
    plain.stop()
    print("streams per connection: a third stream waited; another connection was served")
    print("PASS")


if __name__ == "__main__":
    main()
