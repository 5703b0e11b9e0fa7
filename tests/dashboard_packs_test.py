#!/usr/bin/python3
"""Pack downloads from the dashboard: each user gets their own pack, and
downloads do not hold other users' pages.

Usage: dashboard_packs_test.py BUILD_DIR

A real ledgerd with mutual TLS on both ports, a policy with an auditor of
team-a (alice), one of team-b (bob), one of every team (carol) and a reader
of team-a (dave); run-a of team-a and run-b of team-b hold thousands of
receipts each, so that their packs take a while to build and to send.
Then, through HTTPS with client certificates:

  - alice starts her download of run-a's pack and reads it slowly, while
    bob and carol download run-b's pack eight times, four at once: each
    pack verifies as its run's, and alice's, read to its end,
    verifies (`ledgerctl verify`) as run-a's and holds nothing of team-b.
    (The dashboard once named its temporary file after a stack address, so
    a pack built on the same handler thread truncated and rewrote the one
    still being sent: team-a's auditor got team-b's report.)
  - nothing of the downloads is left under the data directory's tmp/;
  - eight downloads asked at once (four by alice, two each by bob and
    carol) do not hold dave's page: it is answered in under half the time
    of the fastest download;
  - of alice's four, two are served and the others refused (429): at most
    two of one identity's run at once;
  - a download a page of another site starts (Sec-Fetch-Site: cross-site)
    is refused, one from the dashboard's own page is not; pages cannot be
    framed (CSP frame-ancestors 'none', X-Frame-Options DENY).
"""
import http.client
import io
import json
import os
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from access_control_test import Ledger  # noqa: E402
from ledger_testlib import Certificates, fail, generate_stubs, read  # noqa: E402

NOW_US = int(time.time() * 1e6)
CALLS = {"team-a": 40000, "team-b": 30000}
PACK_A = "/teams/team-a/runs/run-a/pack.tar.gz"
PACK_B = "/teams/team-b/runs/run-b/pack.tar.gz"

POLICY = {"identities": [
    {"identity": "cn:writer", "roles": ["emitter"], "teams": ["team-a", "team-b"]},
    {"identity": "cn:alice", "roles": ["auditor"], "teams": ["team-a"]},
    {"identity": "cn:bob", "roles": ["auditor"], "teams": ["team-b"]},
    {"identity": "cn:carol", "roles": ["auditor"], "teams": ["*"]},
    {"identity": "cn:dave", "roles": ["reader"], "teams": ["team-a"]},
]}


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="dashboard-packs-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service"))
    ca = Certificates(os.path.join(work, "pki"), "ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    clients = {who: ca.issue(who, who) for who in ("writer", "alice", "bob", "carol", "dave")}
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump(POLICY, f)
    tls = ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca, "--policy", policy]
    ledger = Ledger(build, work, tls)
    try:
        problems = run(build, work, ca, clients, ledger)
    finally:
        if ledger.proc.poll() is None:
            ledger.proc.kill()
    if problems:
        fail("%d problem(s):\n  %s" % (len(problems), "\n  ".join(problems)))
    print("pack downloads: each user's own pack, and pages answered while they run")


def seed(ledger, ca, clients):
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import receipt_pb2 as pb
    cert, key = clients["writer"]
    start = pb.AgentStart(decision=pb.DECISION_ALLOW, timeout_ms=600000)
    with grpc.secure_channel(ledger.address, grpc.ssl_channel_credentials(read(ca.ca), read(key), read(cert))) as ch:
        stub = svc_grpc.LedgerServiceStub(ch)
        for team, calls in CALLS.items():
            run = "run-" + team[-1]
            receipts = [pb.Receipt(receipt_id=team + "-start", team=team, run_id=run, step_id="s",
                                   occurred_at_us=NOW_US, agent_start=start)]
            receipts += [pb.Receipt(receipt_id="%s-%d" % (team, i), team=team, run_id=run, step_id="s",
                                    occurred_at_us=NOW_US,
                                    model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW, input_tokens=i))
                         for i in range(calls)]
            receipts.append(pb.Receipt(receipt_id=team + "-end", team=team, run_id=run, step_id="s",
                                       occurred_at_us=NOW_US,
                                       agent_exec=pb.AgentExec(start_receipt_id=team + "-start",
                                                               status=pb.EXEC_STATUS_SUCCEEDED)))
            for at in range(0, len(receipts), 900):
                out = stub.Append(svc.AppendRequest(receipts=receipts[at:at + 900]), timeout=60)
                if any(r.code for r in out.results):
                    fail("seeding: %s" % [r for r in out.results if r.code][:3])


def run(build, work, ca, clients, ledger):
    problems = []
    seed(ledger, ca, clients)
    host, port = ledger.http.rsplit(":", 1)

    def connect(who, receive_buffer=None):
        ctx = ssl.create_default_context(cafile=ca.ca)
        ctx.load_cert_chain(*clients[who])
        conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=120)
        if receive_buffer:
            # Set before connecting, so that the window stays small and the
            # server's sending stalls while this client does not read.
            raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            raw.settimeout(120)
            raw.connect((host, int(port)))
            conn.sock = ctx.wrap_socket(raw, server_hostname=host)
        else:
            conn.connect()
        return conn

    def get(who, path, headers=None, with_headers=False):
        """(status, body, seconds[, headers])."""
        started = time.monotonic()
        conn = connect(who)
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        body = r.read()
        conn.close()
        if with_headers:
            return r.status, body, time.monotonic() - started, dict(r.getheaders())
        return r.status, body, time.monotonic() - started

    def ledgerctl(*args):
        return subprocess.run([os.path.join(build, "cmd", "ledgerctl")] + list(args),
                              capture_output=True, text=True, timeout=120)

    # Wait until both runs' entries are under a checkpoint the packs can use.
    for _ in range(600):
        status, body, _ = get("alice", PACK_A)
        if status == 200:
            break
        time.sleep(0.1)
    with tarfile.open(fileobj=io.BytesIO(body)) as t:
        names = t.getnames()
    vkey = None
    for name in names:
        if name.endswith("/ledger.vkey"):
            with tarfile.open(fileobj=io.BytesIO(body)) as t:
                vkey = t.extractfile(name).read().decode().strip()
    if vkey is None:
        fail("run-a's pack holds no ledger.vkey: %s" % names)

    def check_pack(label, data, team, run):
        path = os.path.join(work, label + ".tar.gz")
        with open(path, "wb") as f:
            f.write(data)
        out = ledgerctl("verify", path, "--vkey-string", vkey, "--expect-scope", "run:%s/%s" % (team, run))
        if out.returncode != 0 or not out.stdout.startswith("OK: "):
            problems.append("%s: %d bytes, does not verify as %s/%s: %s%s" %
                            (label, len(data), team, run, out.stdout[-300:], out.stderr[-300:]))
            return
        other = b"team-b" if team == "team-a" else b"team-a"
        with tarfile.open(path) as t:
            for member in t.getmembers():
                if member.isfile() and other in t.extractfile(member).read():
                    problems.append("%s: %s holds %s" % (label, member.name, other.decode()))

    # 1. A slow download of alice's while bob downloads eight times.
    conn = connect("alice", receive_buffer=8192)  # read slowly: the server's sending stalls on her socket
    conn.request("GET", PACK_A)
    response = conn.getresponse()
    if response.status != 200:
        fail("alice's download: %d %s" % (response.status, response.read()[:300]))
    first = response.read(16384)
    others = []

    def others_download(who, path, team, run):
        for _ in range(2):
            try:
                status, data, _ = get(who, path)
            except http.client.IncompleteRead as e:
                status, data = "cut short at %d bytes of %d" % (len(e.partial), len(e.partial) + e.expected), b""
            others.append((who, status, data, team, run))
    threads = [threading.Thread(target=others_download, args=args) for args in
               [("bob", PACK_B, "team-b", "run-b")] * 2 + [("carol", PACK_B, "team-b", "run-b")] * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        rest = response.read()
    except http.client.IncompleteRead as e:
        rest = e.partial
        problems.append("alice's slow download: cut short, %d bytes of %d" %
                        (len(first) + len(rest), len(first) + len(rest) + e.expected))
    conn.close()
    check_pack("alice-slow", first + rest, "team-a", "run-a")
    for i, (who, status, data, team, run) in enumerate(others):
        if status != 200:
            problems.append("%s's download (%d): %s" % (who, i, status))
        else:
            check_pack("%s-%d" % (who, i), data, team, run)
    print("a slow download of alice's (%d bytes) while bob and carol downloaded 8 packs: checked" %
          len(first + rest))

    # 2. Nothing left on disk.
    tmp = os.path.join(work, "ledgerd-data", "tmp")
    left = os.listdir(tmp) if os.path.isdir(tmp) else []
    if left:
        problems.append("left in the staging directory after the downloads: %s" % left)

    # 3. Eight downloads asked at once, four of them alice's, and a page
    # meanwhile. At most two of one identity's run at once: her four reach
    # the server within a millisecond of each other, and a pack takes tens
    # of milliseconds to build, so some of hers are refused (429) however
    # loaded the machine is.
    done = {}
    start = threading.Barrier(8)

    def download(label, who, path):
        start.wait()
        try:
            done[label] = get(who, path)
        except http.client.IncompleteRead as e:
            problems.append("download %s: cut short, %d bytes read and %d more announced" %
                            (label, len(e.partial), e.expected))
    threads = [threading.Thread(target=download, args=("%s-%d" % (who, i), who, path))
               for who, path, n in (("alice", PACK_A, 4), ("bob", PACK_B, 2), ("carol", PACK_A, 2))
               for i in range(n)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    page_status, _, page_seconds = get("dave", "/teams/team-a")
    for t in threads:
        t.join()
    served = {label: v for label, v in done.items() if v[0] == 200}
    fastest = min([seconds for _, _, seconds in served.values()] or [0])
    # A page waiting behind the downloads would take as long as one.
    if page_status != 200 or page_seconds > fastest / 2:
        problems.append("dave's page while the downloads ran: %s in %.2f s; the fastest download took %.2f s" %
                        (page_status, page_seconds, fastest))
    alice = {label: v for label, v in done.items() if label.startswith("alice")}
    refused = [v for v in alice.values() if v[0] == 429]
    if not refused or any(b"at most 2 at once for one identity" not in body for _, body, _ in refused):
        problems.append("alice's four downloads at once: want some 429 naming the bound, got %s" %
                        [(status, body[:80]) for status, body, _ in alice.values()])
    statuses = sorted(status for status, _, _ in alice.values())
    if len(alice) != 4 or statuses.count(200) < 2 or any(status not in (200, 429) for status in statuses):
        problems.append("alice's four downloads at once: want at least two 200 and the rest 429, got %s" % statuses)
    for label, (status, data, seconds) in sorted(done.items()):
        if label.startswith("alice") and status == 429:
            continue
        if status != 200:
            problems.append("download %s: %d" % (label, status))
        else:
            team, run = ("team-b", "run-b") if label.startswith("bob") else ("team-a", "run-a")
            check_pack("at-once-" + label, data, team, run)
    print("8 downloads asked at once (fastest %.2f s): dave's page in %.3f s; alice's four: %s" %
          (fastest, page_seconds, statuses))

    # 4. Downloads started by another site; framing.
    status, body, _ = get("alice", PACK_A, {"Sec-Fetch-Site": "cross-site"})
    if status != 403 or b"pack downloads: only from the dashboard" not in body:
        problems.append("a cross-site download: want 403, got %d %s" % (status, body[:200]))
    status, _, _ = get("alice", PACK_A, {"Sec-Fetch-Site": "same-origin"})
    if status != 200:
        problems.append("a same-origin download: want 200, got %d" % status)
    status, _, _, headers = get("dave", "/teams/team-a", with_headers=True)
    if "frame-ancestors 'none'" not in headers.get("Content-Security-Policy", "") or \
            headers.get("X-Frame-Options") != "DENY":
        problems.append("a page may be framed: %s" % headers)
    print("cross-site downloads refused; pages not framed")
    return problems


if __name__ == "__main__":
    main()
