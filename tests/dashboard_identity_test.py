#!/usr/bin/python3
"""The dashboard acts as its user; /metrics is for scrapers, not for everyone.

Usage: dashboard_identity_test.py BUILD_DIR

A real ledgerd with mutual TLS on both ports (gRPC and HTTPS), a policy
naming two auditors of team-a (alice, bob), a reader of team-a, an auditor
of every team, an admin, a scraper and an identity with no rule. Team-a's
run holds a step of 2,502 receipts, interleaved with team-b's entries, and
a step of 5. Then, through HTTPS with client certificates:

  - a step page is paged: 100 receipts a page with next and previous links,
    one ranged read per page, a page of the large step is as small as a page
    of a small one; a team-a auditor reads it although team-b's entries lie
    between its receipts; a page past the last is 404, a bad one 400;
  - the dashboard's calls run as the certificate's identity: a pack download
    is logged as bob's, under the X-Request-Id bob sent; a refused page is
    logged with the identity, path and request id;
  - a gRPC client that sends the metadata the dashboard uses to name its
    user is not believed: it stays itself;
  - with --rate-per-identity 5, alice reloading a large step page until she
    is refused (429) does not lock bob out: his pages answer 200;
  - the unknown-now view lists an auditor of every team both teams' unknown
    steps, and an auditor of team-a team-a's alone;
  - a search by trace id shows an auditor the receipts of the calls that
    carry it, a reader where they are alone (seq, run, step), no receipt;
  - /metrics: the metrics role, admin and auditors or readers of every team
    may scrape; an identity without a rule and an auditor of one team get
    403, logged; the metrics role opens nothing else.

Every check runs; the failures are listed together.
"""
import json
import os
import re
import signal
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from access_control_test import Ledger  # noqa: E402
from ledger_testlib import Certificates, fail, generate_stubs, read  # noqa: E402

NOW_US = int(time.time() * 1e6)
ALICE_URI = "spiffe://cluster/ns/audit/sa/alice"
BOB_URI = "spiffe://cluster/ns/audit/sa/bob"
ALICE = "uri:" + ALICE_URI  # identities carry their kind
BOB = "uri:" + BOB_URI
BIG_CALLS = 2500
PAGE = 100
BIG_PAGE = "/teams/team-a/runs/run-a/steps/big"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ACTING_FOR = "ledger-acting-for-bin"

POLICY = {"identities": [
    {"identity": "cn:writer", "roles": ["emitter"], "teams": ["team-a", "team-b"]},
    {"identity": ALICE, "roles": ["auditor"], "teams": ["team-a"]},
    {"identity": BOB, "roles": ["auditor"], "teams": ["team-a"]},
    {"identity": "cn:reader-a", "roles": ["reader"], "teams": ["team-a"]},
    {"identity": "cn:auditor-all", "roles": ["auditor"], "teams": ["*"]},
    {"identity": "cn:admin", "roles": ["admin"]},
]}
SCRAPER_URI = "spiffe://cluster/ns/monitoring/sa/prometheus"
SCRAPER = {"identity": "uri:" + SCRAPER_URI, "roles": ["metrics"]}


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="dashboard-identity-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service", "query"))
    ca = Certificates(os.path.join(work, "pki"), "ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    clients = {
        "writer": ca.issue("writer", "writer"),
        "alice": ca.issue("alice", "alice", "URI:" + ALICE_URI),
        "bob": ca.issue("bob", "bob", "URI:" + BOB_URI),
        "reader-a": ca.issue("reader-a", "reader-a"),
        "auditor-all": ca.issue("auditor-all", "auditor-all"),
        "admin": ca.issue("admin", "admin"),
        "scraper": ca.issue("scraper", "prom", "URI:" + SCRAPER_URI),
        "outsider": ca.issue("outsider", "outsider"),
        "nameless": ca.issue("nameless", None),
    }
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump(POLICY, f)
    tls = ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca, "--policy", policy]
    ledger = Ledger(build, work, tls + ["--unknown-grace-ms", "100", "--sweep-interval-ms", "50"])
    try:
        problems = run(build, work, ca, clients, tls, policy, ledger)
    finally:
        for proc in [ledger.proc] + getattr(ledger, "later", []):
            if proc.poll() is None:
                proc.kill()
    if problems:
        fail("%d problem(s):\n  %s" % (len(problems), "\n  ".join(problems)))
    print("the dashboard acts as its user; /metrics answers scrapers only")


def run(build, work, ca, clients, tls, policy, ledger):
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import query_pb2 as q
    import query_pb2_grpc as q_grpc
    import receipt_pb2 as pb
    problems = []

    def channel(who):
        cert, key = clients[who]
        return grpc.secure_channel(ledger.address, grpc.ssl_channel_credentials(read(ca.ca), read(key), read(cert)))

    def https(who, path, headers=None):
        """(status, body, headers, seconds)."""
        ctx = ssl.create_default_context(cafile=ca.ca)
        ctx.load_cert_chain(*clients[who])
        started = time.monotonic()
        req = urllib.request.Request("https://%s%s" % (ledger.http, path), headers=headers or {})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
                return r.status, r.read().decode(errors="replace"), dict(r.headers), time.monotonic() - started
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace"), dict(e.headers), time.monotonic() - started

    def log_lines(event):
        out = []
        for line in ledger.stderr().splitlines():
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get("event") == event:
                out.append(j)
        return out

    # The data: team-a's step "big" of 2,502 receipts with team-b's entries
    # between them, and a step "small" of 5.
    def receipt(rid, team, step, body):
        return pb.Receipt(receipt_id=rid, team=team, run_id="run-" + team[-1], step_id=step,
                          occurred_at_us=NOW_US, **body)
    start = {"agent_start": pb.AgentStart(decision=pb.DECISION_ALLOW, timeout_ms=600000)}
    call = {"model_call": pb.ModelCall(route="m", decision=pb.DECISION_ALLOW, input_tokens=1)}

    def done(step):
        return {"agent_exec": pb.AgentExec(start_receipt_id=step + "-start", status=pb.EXEC_STATUS_SUCCEEDED)}
    batches = [[receipt("big-start", "team-a", "big", start), receipt("small-start", "team-a", "small", start),
                receipt("b-start", "team-b", "s1", start)]]
    batch = []
    for i in range(BIG_CALLS):
        batch.append(receipt("big-%d" % i, "team-a", "big", call))
        if i % 10 == 0:
            batch.append(receipt("b-%d" % i, "team-b", "s1", call))
        if len(batch) >= 900:
            batches.append(batch)
            batch = []
    batch += [receipt("big-end", "team-a", "big", done("big"))]
    # The small step's calls and a span of a step no start opens carry TRACE.
    batch += [receipt("small-%d" % i, "team-a", "small", dict(call, trace_id=TRACE)) for i in range(3)]
    batch += [receipt("span-0", "team-a", "span", dict(call, trace_id=TRACE))]
    batch += [receipt("small-end", "team-a", "small", done("small"))]
    batches.append(batch)
    with channel("writer") as ch:
        stub = svc_grpc.LedgerServiceStub(ch)
        for b in batches:
            out = stub.Append(svc.AppendRequest(receipts=b), timeout=30)
            if any(r.code for r in out.results):
                fail("seeding: %s" % [r for r in out.results if r.code][:3])
    with channel("admin") as ch:
        query = q_grpc.QueryServiceStub(ch)
        for _ in range(400):
            st = query.GetStep(q.GetStepRequest(team="team-a", run_id="run-a", step_id="big"), timeout=10)
            if len(st.seqs) == BIG_CALLS + 2:
                break
            time.sleep(0.05)
        else:
            fail("the big step has %d entries" % len(st.seqs))

    # Paging.
    status, big, _, big_s = https("alice", BIG_PAGE)
    status_small, small, _, small_s = https("alice", "/teams/team-a/runs/run-a/steps/small")
    rows = big.count('">inclusion proof</a>')
    if status != 200 or rows != PAGE or len(big) > 64 * 1024:
        problems.append("big step, page 1: want 200 with %d receipts in under 64 KiB, got %s with %d receipts "
                        "in %d bytes (%.2f s)" % (PAGE, status, rows, len(big), big_s))
    if 'steps/big?attempt=1&amp;page=2"' not in big:
        problems.append("big step, page 1: no link to page 2")
    if status_small != 200 or small.count('">inclusion proof</a>') != 5:
        problems.append("small step: %s, %d receipts" % (status_small, small.count('">inclusion proof</a>')))
    if big_s > small_s + 1.0:
        problems.append("big step page took %.2f s, a small one %.2f s" % (big_s, small_s))
    last = (BIG_CALLS + 2 + PAGE - 1) // PAGE
    status, body, _, _ = https("alice", BIG_PAGE + "?attempt=1&page=%d" % last)
    if status != 200 or body.count('">inclusion proof</a>') != (BIG_CALLS + 2) % PAGE or \
            'page=%d"' % (last - 1) not in body or 'page=%d"' % (last + 1) in body:
        problems.append("big step, last page %d: %s, %d receipts" % (last, status, body.count('">inclusion proof</a>')))
    for page, want in ((last + 1, 404), (0, 400), ("x", 400)):
        got = https("alice", BIG_PAGE + "?page=%s" % page)[0]
        if got != want:
            problems.append("page=%s: want %d, got %s" % (page, want, got))
    print("paging: %d receipts a page, %d bytes, %.2f s (a step of 5: %.2f s)" % (rows, len(big), big_s, small_s))

    # A search by trace id: an auditor sees the calls' receipts, in a table
    # for the small step and one for the run (the span's step is not in the
    # log); a reader sees where the four calls are, and no receipt.
    status, body, _, _ = https("alice", "/teams/team-a?trace=" + TRACE)
    if status != 200 or body.count('">inclusion proof</a>') != 4 or body.count('<h3 class="place">') != 2:
        problems.append("alice's trace search: %s, %d receipts, %d places" % (
            status, body.count('">inclusion proof</a>'), body.count('<h3 class="place">')))
    status, body, _, _ = https("reader-a", "/teams/team-a?trace=" + TRACE)
    if status != 200 or "inclusion proof" in body or body.count("<tr><td>") != 4 or \
            "Their receipts: your role does not include reading this team's entries (auditor)." not in body or \
            body.count('<a href="/teams/team-a/runs/run-a#calls">run-a</a></td><td>span (no step in the log)') != 1:
        problems.append("reader-a's trace search: %s %s" % (status, body[body.find("<h2"):][:600]))
    print("trace search: receipts for an auditor, places for a reader")

    # The dashboard's calls as the user: logged under the user's identity
    # and request id; refusals logged.
    status, _, headers, _ = https("bob", "/teams/team-a/runs/run-a/pack.tar.gz", {"X-Request-Id": "dash-pack-1"})
    exports = [j for j in log_lines("rpc_done") if j.get("request_id") == "dash-pack-1"]
    if status != 200 or len(exports) != 1 or exports[0].get("identity") != BOB or \
            "/Export" not in exports[0].get("method", ""):
        problems.append("bob's pack: %s, logged as %s" % (status, exports))
    if headers.get("X-Request-Id") != "dash-pack-1":
        problems.append("bob's pack: X-Request-Id %r" % headers.get("X-Request-Id"))
    status, _, _, _ = https("reader-a", "/teams/team-b", {"X-Request-Id": "dash-refused-1"})
    refused = [j for j in log_lines("http_refused") if j.get("request_id") == "dash-refused-1"]
    if status != 403 or len(refused) != 1 or refused[0].get("identity") != "cn:reader-a" or \
            refused[0].get("path") != "/teams/team-b" or refused[0].get("status") != 403:
        problems.append("reader-a's refused page: %s, logged as %s" % (status, refused))
    status, body, _, _ = https("nameless", "/teams/team-a")
    if status != 403 or "client certificate: names no identity" not in body:
        problems.append("a certificate naming no identity: %s %s" % (status, body[-200:]))
    print("logs: pack download as bob, refused page as reader-a; a nameless certificate gets nothing")

    # A network client cannot name someone else with the dashboard's metadata.
    with channel("reader-a") as ch:
        stub = svc_grpc.LedgerServiceStub(ch)
        try:
            list(stub.GetEntries(svc.GetEntriesRequest(from_seq=0, to_seq=1), timeout=10,
                                 metadata=[(ACTING_FOR, ALICE.encode())]))
            problems.append("reader-a read entries by naming alice in %s" % ACTING_FOR)
        except grpc.RpcError as e:
            want = "identity 'cn:reader-a' may not read entries and proofs (its roles do not allow it)"
            if e.code() != grpc.StatusCode.PERMISSION_DENIED or e.details() != want:
                problems.append("reader-a naming alice: %s %s" % (e.code(), e.details()))
    print("gRPC: %s from a network peer is not believed" % ACTING_FOR)

    # GetEntries by seqs, the step page's one read: checked like a range.
    with channel("alice") as ch:
        stub = svc_grpc.LedgerServiceStub(ch)
        with channel("admin") as admin:
            team_b = next(e.seq for e in svc_grpc.LedgerServiceStub(admin).GetEntries(
                svc.GetEntriesRequest(from_seq=0, to_seq=3), timeout=10) if b'"team":"team-b"' in e.leaf)
        got = [e.seq for e in stub.GetEntries(svc.GetEntriesRequest(seqs=[0, 1, 5, 6, 7]), timeout=10)]
        if got != [0, 1, 5, 6, 7]:
            problems.append("GetEntries seqs [0, 1, 5, 6, 7]: %s" % got)
        for seqs, code, message in [
                ([5, 3], grpc.StatusCode.INVALID_ARGUMENT, "seqs[1]: 3 is not above seqs[0] (ascending, without repeats)"),
                ([4, 4], grpc.StatusCode.INVALID_ARGUMENT, "seqs[1]: 4 is not above seqs[0] (ascending, without repeats)"),
                ([1, 10 ** 9], grpc.StatusCode.OUT_OF_RANGE, "seqs[1]: 1000000000 is beyond the log's size %d"
                 % (3 + BIG_CALLS + BIG_CALLS // 10 + 1 + 3 + 1 + 1)),
                (list(range(1001)), grpc.StatusCode.INVALID_ARGUMENT, "seqs: at most 1000, got 1001"),
                ([0, team_b], grpc.StatusCode.PERMISSION_DENIED,
                 "entry %d: identity '%s' may not read entries and proofs for the team of this entry" %
                 (team_b, ALICE))]:
            try:
                list(stub.GetEntries(svc.GetEntriesRequest(seqs=seqs), timeout=10))
                problems.append("GetEntries seqs %s succeeded" % seqs[:5])
            except grpc.RpcError as e:
                if e.code() != code or e.details() != message:
                    problems.append("GetEntries seqs %s: %s %r" % (seqs[:5], e.code(), e.details()))
        try:
            list(stub.GetEntries(svc.GetEntriesRequest(from_seq=1, to_seq=2, seqs=[0]), timeout=10))
            problems.append("GetEntries with both a range and seqs succeeded")
        except grpc.RpcError as e:
            if e.details() != "from_seq, to_seq: must be 0 when seqs are given":
                problems.append("GetEntries range and seqs: %r" % e.details())
    print("gRPC: GetEntries by seqs reads exactly those, refuses disorder, excess and other teams")

    # The unknown-now view shows each caller the teams it may see, no other.
    lost = [receipt("lost-" + t[-1], t, "lost", {"agent_start": pb.AgentStart(decision=pb.DECISION_ALLOW,
                                                                               timeout_ms=50)})
            for t in ("team-a", "team-b")]
    with channel("writer") as ch:
        svc_grpc.LedgerServiceStub(ch).Append(svc.AppendRequest(receipts=lost), timeout=30)
    with channel("admin") as ch:
        query = q_grpc.QueryServiceStub(ch)
        for _ in range(200):
            states = [query.GetStep(q.GetStepRequest(team=t, run_id="run-" + t[-1], step_id="lost"),
                                    timeout=10).state for t in ("team-a", "team-b")]
            if states == [q.STEP_STATE_UNKNOWN] * 2:
                break
            time.sleep(0.05)
        else:
            problems.append("the lost steps were not declared unknown: %s" % states)
    unknown_rows = {}
    for who in ("auditor-all", "alice"):
        status, body, _, _ = https(who, "/unknown")
        unknown_rows[who] = (status, sorted(set(re.findall(r'<td><a href="/teams/(team-[ab])">', body))))
    if unknown_rows != {"auditor-all": (200, ["team-a", "team-b"]), "alice": (200, ["team-a"])}:
        problems.append("unknown now: %s" % unknown_rows)
    if 'href="/unknown"' not in https("auditor-all", "/")[1] or 'href="/unknown"' in https("alice", "/")[1]:
        problems.append("the unknown-now link is not offered to exactly the identities that see several teams")
    print("dashboard: /unknown lists the unknown steps of the teams each caller may see, no other")

    # One user's rate limit is hers alone.
    ledger.stop()
    limited = Ledger(build, work, tls + ["--rate-per-identity", "5"])
    ledger.later = [limited.proc]
    ledger.proc, ledger.address, ledger.http = limited.proc, limited.address, limited.http
    alice = []
    for _ in range(8):
        alice.append(https("alice", BIG_PAGE)[0])
        if alice[-1] != 200:
            break
    bob = [https("bob", BIG_PAGE)[0], https("bob", "/teams/team-a")[0]]
    if alice[-1] != 429 or bob != [200, 200]:
        problems.append("rate: alice got %s, then bob got %s (want alice refused 429, bob 200s)" % (alice, bob))
    print("rate: alice %s, bob %s" % (alice, bob))

    # /metrics.
    with open(policy, "w") as f:
        json.dump({"identities": POLICY["identities"] + [SCRAPER]}, f)
    limited.proc.send_signal(signal.SIGHUP)
    for _ in range(100):
        if log_lines("policy_reloaded") or log_lines("policy_reload_failed"):
            break
        time.sleep(0.05)
    if not log_lines("policy_reloaded"):
        problems.append("a policy with the metrics role: %s" % log_lines("policy_reload_failed"))
    time.sleep(1.2)  # the rate buckets refill
    scrapes = {}
    for who, path, want in [("scraper", "/metrics", 200), ("admin", "/metrics", 200),
                            ("auditor-all", "/metrics", 200), ("outsider", "/metrics", 403),
                            ("alice", "/metrics", 403), ("writer", "/metrics", 403),
                            ("scraper", "/teams/team-a", 403), ("scraper", "/healthz", 200),
                            ("outsider", "/healthz", 200)]:
        got, body, _, _ = https(who, path, {"X-Request-Id": "scrape-%s" % who})
        scrapes[who, path] = body
        if got != want:
            problems.append("%s %s: want %d, got %s %s" % (who, path, want, got, body[:120]))
    if "ledger_tree_size" not in scrapes["scraper", "/metrics"] or "team-a" in scrapes["outsider", "/metrics"]:
        problems.append("metrics bodies: scraper %r, outsider %r" % (scrapes["scraper", "/metrics"][:80],
                                                                     scrapes["outsider", "/metrics"][:200]))
    want = "identity 'cn:outsider' may not scrape /metrics (the metrics role, admin, or a reader or auditor of every team may)\n"
    if scrapes["outsider", "/metrics"] != want:
        problems.append("outsider's refusal: %r" % scrapes["outsider", "/metrics"][:200])
    refused = [j for j in log_lines("http_refused") if j.get("request_id") == "scrape-outsider"]
    if len(refused) != 1 or refused[0].get("path") != "/metrics" or refused[0].get("identity") != "cn:outsider":
        problems.append("the outsider's scrape was not logged: %s" % refused)
    print("/metrics: scraper, admin and auditor of every team 200; outsider, one-team auditor, emitter 403")
    limited.stop()
    return problems


if __name__ == "__main__":
    main()
