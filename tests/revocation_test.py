#!/usr/bin/python3
"""Revocation reaches open calls, and SIGHUP reloads TLS, over real mutual TLS.

Usage: revocation_test.py BUILD_DIR

A real ledgerd runs with --tls-cert, --tls-key, --client-ca and --policy
(certificates from the openssl command). Then:

  - an emitter and a reader of team-a each hold an open AppendStream and an
    open WatchSteps; a second emitter and reader do the same;
  - SIGHUP with a policy that drops the first two: the dropped reader's
    watch ends with PERMISSION_DENIED naming it, promptly and without any
    new change to wake it; the dropped emitter's stream ends with
    PERMISSION_DENIED too, and a batch it sends after the reload is not in
    the log; the two that kept their rights go on appending and watching;
    an emitter that keeps its role but loses team-a keeps its stream, and
    its team-a receipts are refused one by one; a dropped auditor's
    GetEntries of 1,100 entries, read slowly, ends with PERMISSION_DENIED
    at its next chunk (512 entries) instead of running to the end;
  - TLS: a broken key file at SIGHUP keeps the old certificate, key and
    client CA (and says why in the log); then the certificate, key and
    client CA are replaced by ones of a new CA and SIGHUP: a client that
    trusts only the new CA connects, and a client certificate of the old
    CA, no longer in --client-ca, is refused by the handshake: on the gRPC
    port, the HTTPS port (--http-listen) and the OTLP port (--otlp-listen)
    alike.
"""
import http.client
import json
import os
import queue
import signal
import ssl
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from access_control_test import Ledger  # noqa: E402
from ledger_testlib import Certificates, fail, generate_stubs, read  # noqa: E402

NS = "spiffe://cluster/ns/team-a/sa/"
ADMIN = "spiffe://cluster/ns/ops/sa/admin"
PEOPLE = ["gone-emitter", "gone-reader", "gone-auditor", "kept-emitter", "kept-reader", "narrowed-emitter"]
NOW_US = int(time.time() * 1e6)


def policy(people, narrowed=False):
    rules = [{"identity": "uri:" + ADMIN, "roles": ["admin"]}]
    for who in people:
        teams = ["team-a", "team-b"] if who in ("narrowed-emitter", "gone-auditor") else ["team-a"]
        if who == "narrowed-emitter" and narrowed:
            teams = ["team-b"]
        rules.append({"identity": "uri:" + NS + who, "roles": [who.split("-")[1]], "teams": teams})
    return {"identities": rules}


def _end_of(responses, grpc):
    """How an append stream's responses end: (code, details)."""
    try:
        for r in responses:
            return ("a response", str(r))
    except grpc.RpcError as e:
        return (e.code(), e.details())
    return (grpc.StatusCode.OK, "")


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="revocation-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service", "query"))
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import query_pb2 as q
    import query_pb2_grpc as q_grpc
    import receipt_pb2 as pb

    ca = Certificates(os.path.join(work, "pki"), "ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1")
    clients = {who: ca.issue(who, who, "URI:" + NS + who) for who in PEOPLE}
    clients["admin"] = ca.issue("admin", "admin", "URI:" + ADMIN)
    clients["probe"] = ca.issue("probe", "probe", "URI:" + ADMIN)
    policy_path = os.path.join(work, "policy.json")
    with open(policy_path, "w") as f:
        json.dump(policy(PEOPLE), f)
    ledger = Ledger(build, work, ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca,
                                  "--policy", policy_path, "--unknown-grace-ms", "600000",
                                  "--otlp-listen", "127.0.0.1:0"])
    otlp = ledger.proc.stdout.readline().decode().split()[-1]

    def channel(who, trust=ca.ca, certs=clients, options=()):
        cert, key = certs[who]
        creds = grpc.ssl_channel_credentials(root_certificates=read(trust), private_key=read(key),
                                             certificate_chain=read(cert))
        # A connection of its own, so that each channel makes a handshake.
        return grpc.secure_channel(ledger.address, creds,
                                   options=[("grpc.use_local_subchannel_pool", 1)] + list(options))

    counter = [0]

    def start(step, team="team-a"):
        counter[0] += 1
        return pb.Receipt(receipt_id="r-%d" % counter[0], team=team, run_id="run", step_id=step,
                          occurred_at_us=NOW_US,
                          agent_start=pb.AgentStart(decision=pb.DECISION_ALLOW, timeout_ms=600000))

    def wait_log(text, after):
        for _ in range(200):
            if text in ledger.stderr()[after:]:
                return
            time.sleep(0.05)
        fail("the log never said %r: %s" % (text, ledger.stderr()[after:]))

    class Stream:
        """An open AppendStream: batches go in through a queue."""

        def __init__(self, who):
            self.channel = channel(who)
            self.requests = queue.Queue()
            self.responses = svc_grpc.LedgerServiceStub(self.channel).AppendStream(
                iter(self.requests.get, None), timeout=60)

        def append(self, receipt):
            self.requests.put(svc.AppendRequest(receipts=[receipt]))
            return next(self.responses).results[0]

    class Watch:
        """An open WatchSteps of team-a; its changes and its end, from a thread."""

        def __init__(self, who):
            self.channel = channel(who)
            self.call = q_grpc.QueryServiceStub(self.channel).WatchSteps(
                q.WatchStepsRequest(filter=q.StepFilter(team="team-a"), after_seq=-1), timeout=60)
            self.changes = queue.Queue()
            self.ended = None
            self.ended_at = None
            threading.Thread(target=self._run, daemon=True).start()

        def _run(self):
            try:
                for change in self.call:
                    self.changes.put(change.step.step_id)
            except grpc.RpcError as e:
                self.ended = (e.code(), e.details())
            self.ended_at = time.monotonic()
            self.changes.put(None)

        def next_step(self, timeout=10):
            try:
                return self.changes.get(timeout=timeout)
            except queue.Empty:
                fail("a watch saw no change in %d s" % timeout)

    # Open calls of all four, each shown working.
    with channel("admin") as ch:
        first = svc_grpc.LedgerServiceStub(ch).Append(svc.AppendRequest(receipts=[start("s0")]), timeout=10).results[0]
        if first.code != 0:
            fail("seeding: %s" % first)
    streams = {who: Stream(who) for who in ("gone-emitter", "kept-emitter", "narrowed-emitter")}
    for who, stream in streams.items():
        r = stream.append(start("s-" + who, "team-b" if who == "narrowed-emitter" else "team-a"))
        if r.code != 0:
            fail("%s before the reload: %s" % (who, r))
    with channel("admin") as ch:
        stub = svc_grpc.LedgerServiceStub(ch)
        for first in (0, 1000):
            bulk = [start("bulk-%d" % i, "team-b") for i in range(first, min(first + 1000, 1100))]
            if any(r.code for r in stub.Append(svc.AppendRequest(receipts=bulk), timeout=30).results):
                fail("bulk append refused")
        for _ in range(200):
            size = stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10).tree_size
            if size >= 1104:
                break
            time.sleep(0.05)
    # A window that stays small (64 KiB), so the server waits for the
    # reader instead of sending every entry at once.
    auditor_channel = channel("gone-auditor", options=[("grpc.http2.bdp_probe", 0)])
    entries = svc_grpc.LedgerServiceStub(auditor_channel).GetEntries(
        svc.GetEntriesRequest(from_seq=0, to_seq=size), timeout=60)
    next(entries)
    watches = {who: Watch(who) for who in ("gone-reader", "kept-reader")}
    for who, watch in watches.items():
        if watch.next_step() != "s0":
            fail("%s's watch did not start at s0" % who)
        while watch.changes.qsize() < 2:  # s-gone-emitter and s-kept-emitter
            time.sleep(0.05)
        while not watch.changes.empty():
            watch.next_step()
    print("open: two append streams and two watches")

    # Revocation: SIGHUP with a policy that drops the gone-*.
    with open(policy_path, "w") as f:
        json.dump(policy(["kept-emitter", "kept-reader", "narrowed-emitter"], narrowed=True), f)
    mark = len(ledger.stderr())
    reloaded_at = time.monotonic()
    ledger.proc.send_signal(signal.SIGHUP)
    wait_log("policy reloaded", mark)

    gone = watches["gone-reader"]
    if gone.next_step(timeout=5) is not None:
        fail("the dropped reader's watch still received a change after the reload")
    want = (grpc.StatusCode.PERMISSION_DENIED, "identity 'uri:%sgone-reader' has no rule in the policy" % NS)
    if gone.ended != want:
        fail("the dropped reader's watch ended with %s, want %s" % (gone.ended, want))
    if gone.ended_at - reloaded_at > 3:
        fail("the dropped reader's watch ended %.1f s after the reload" % (gone.ended_at - reloaded_at))
    print("revoked watch: ended %.2f s after SIGHUP with PERMISSION_DENIED, no change needed to wake it"
          % (gone.ended_at - reloaded_at))

    # The dropped emitter's stream ends at the reload, before it sends more.
    ended = []
    waiter = threading.Thread(target=lambda: ended.append(_end_of(streams["gone-emitter"].responses, grpc)),
                              daemon=True)
    waiter.start()
    waiter.join(timeout=5)
    want = (grpc.StatusCode.PERMISSION_DENIED, "identity 'uri:%sgone-emitter' has no rule in the policy" % NS)
    if ended != [want]:
        fail("the dropped emitter's idle stream, 5 s after the reload: %s, want %s" % (ended or "still open", want))
    late = start("s-late")
    streams["gone-emitter"].requests.put(svc.AppendRequest(receipts=[late]))
    time.sleep(0.5)  # checkpoints every 20 ms: the next one covers anything appended
    with channel("admin") as ch:
        stub = svc_grpc.LedgerServiceStub(ch)
        size = stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10).tree_size
        ids = [json.loads(e.leaf)["receipt"]["receipt_id"]
               for e in stub.GetEntries(svc.GetEntriesRequest(from_seq=0, to_seq=size), timeout=10)]
        if late.receipt_id in ids or len(ids) != 1104:
            fail("the log after the reload holds %d receipts (%s among them?); want the 1,104 from before it"
                 % (len(ids), late.receipt_id))
    print("revoked append stream: PERMISSION_DENIED, its next batch not appended")

    got = 1
    try:
        for _ in entries:
            got += 1
        fail("the dropped auditor read all %d entries after the reload" % got)
    except grpc.RpcError as e:
        want = (grpc.StatusCode.PERMISSION_DENIED, "identity 'uri:%sgone-auditor' has no rule in the policy" % NS)
        if (e.code(), e.details()) != want or got > 512:
            fail("the dropped auditor's entries: %d read, then %s %s; want at most 512, then %s"
                 % (got, e.code(), e.details(), want))
    auditor_channel.close()
    print("revoked entries stream: PERMISSION_DENIED after %d of %d entries" % (got, size))

    r = streams["kept-emitter"].append(start("s-kept-after"))
    if r.code != 0:
        fail("the kept emitter's stream after the reload: %s" % r)
    if watches["kept-reader"].next_step() != "s-kept-after":
        fail("the kept reader's watch did not see the append after the reload")
    narrowed = streams["narrowed-emitter"]
    r = narrowed.append(start("s-narrowed-a"))
    want = "team: identity 'uri:%snarrowed-emitter' may not append for team 'team-a'" % NS
    if r.code != grpc.StatusCode.PERMISSION_DENIED.value[0] or r.message != want:
        fail("the narrowed emitter's team-a receipt after the reload: %s, want %r" % (r, want))
    r = narrowed.append(start("s-narrowed-b", "team-b"))
    if r.code != 0:
        fail("the narrowed emitter's team-b receipt after the reload: %s" % r)
    narrowed.requests.put(None)
    streams["kept-emitter"].requests.put(None)
    watches["kept-reader"].call.cancel()
    print("kept identities: their open stream and watch go on; a lost team's receipts are refused one by one")

    # TLS reload: a broken key keeps the old credentials.
    ca2 = Certificates(os.path.join(work, "pki2"), "ca2")
    new_cert, new_key = ca2.issue("server2", "ledger", "IP:127.0.0.1")
    new_clients = {"admin": ca2.issue("admin2", "admin", "URI:" + ADMIN)}
    with open(server_key, "w") as f:
        f.write("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
    mark = len(ledger.stderr())
    ledger.proc.send_signal(signal.SIGHUP)
    wait_log("kept the old TLS credentials", mark)
    if "--tls-key: " not in ledger.stderr()[mark:]:
        fail("the broken key's reason is not logged: %s" % ledger.stderr()[mark:])
    with channel("probe") as ch:
        svc_grpc.LedgerServiceStub(ch).GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
    print("TLS reload: a broken key file kept the old certificate, key and client CA")

    # Rotation to the new CA: the files behind --tls-cert, --tls-key and
    # --client-ca now hold the new CA's; the old CA stays in a copy for the
    # clients that trust it.
    old_ca = os.path.join(work, "old-ca.pem")
    for src, dst in ((ca.ca, old_ca), (new_cert, server_cert), (new_key, server_key), (ca2.ca, ca.ca)):
        data = read(src)
        with open(dst, "wb") as f:
            f.write(data)
    mark = len(ledger.stderr())
    ledger.proc.send_signal(signal.SIGHUP)
    wait_log("TLS credentials reloaded", mark)
    with channel("admin", trust=ca2.ca, certs=new_clients) as ch:
        try:
            svc_grpc.LedgerServiceStub(ch).GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
        except grpc.RpcError as e:
            fail("a client of the new CA after the reload: %s %s" % (e.code(), e.details()))
    with channel("admin", trust=ca2.ca) as ch:
        try:
            svc_grpc.LedgerServiceStub(ch).GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
            fail("a client certificate of the removed CA was accepted after the reload")
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                fail("a client certificate of the removed CA: %s %s" % (e.code(), e.details()))
    with channel("probe", trust=old_ca) as ch:
        try:
            svc_grpc.LedgerServiceStub(ch).GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
            fail("a client that trusts only the old CA connected after the reload")
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                fail("a client of the old CA: %s %s" % (e.code(), e.details()))
    print("TLS reload: the new CA's client connects; the removed CA's client certificate is refused")

    # The HTTPS and OTLP ports take the same files: reloaded with them.
    def https(address, trust, cert_key):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_verify_locations(trust)
        context.load_cert_chain(*cert_key)
        host, port = address.rsplit(":", 1)
        conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=10)
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status
        except (ssl.SSLError, ConnectionError) as e:
            return "refused: %s" % e
        finally:
            conn.close()

    for name, address in (("http", ledger.http), ("otlp", otlp)):
        got = https(address, ca2.ca, new_clients["admin"])
        if not isinstance(got, int):
            fail("%s port: a client of the new CA after the reload: %s" % (name, got))
        got = https(address, ca2.ca, clients["admin"])
        if isinstance(got, int):
            fail("%s port: a client certificate of the removed CA was accepted after the reload (HTTP %d)"
                 % (name, got))
        got = https(address, old_ca, clients["admin"])
        if isinstance(got, int):
            fail("%s port: still serves the old certificate after the reload (HTTP %d)" % (name, got))
    print("TLS reload: the HTTPS and OTLP ports too")
    ledger.stop()
    print("PASS")


if __name__ == "__main__":
    main()
