#!/usr/bin/python3
"""Browsers without client certificates: a trusted proxy names the user.

Usage: trusted_proxy_test.py BUILD_DIR

A real ledgerd with mutual TLS and a policy that trusts one proxy
(uri:spiffe://test/ns/auth/sa/proxy, user header X-Forwarded-Email) and
names the users alice and carol; a real nginx from Debian in front of it,
as docs/operating.md configures one: an auth_request to a small auth
endpoint run here (it answers as oauth2-proxy does: 200 with
X-Auth-Request-Email for a known session cookie, 401 otherwise), the email
set as X-Forwarded-Email, and proxy_pass over HTTPS with the proxy's own
client certificate. Then:

  - headless Chromium, with a session cookie and no client certificate,
    loads the dashboard through nginx and sees alice's teams (team-a,
    team-b) and not team-c; its screenshot is kept in
    BUILD_DIR/tests/artifacts/trusted_proxy/;
  - alice's refused page is logged as hers, via the proxy; a user header
    the browser sends itself is replaced by nginx's;
  - a user the policy does not name (bob) gets 403 "identity
    'user:bob@example.com' may read no team"; a session the auth endpoint
    knows without an email makes the proxy send no user: 401;
  - straight to ledgerd: another valid client certificate with a forged
    X-Forwarded-Email (or X-Remote-User) gets 403 naming the header and
    itself, logged; the proxy's own certificate without the header gets
    401, with a name holding a space or sent twice 400 naming the rule;
  - a certificate that may read no team (an emitter) sees "identity
    'cn:gateway' may read no team" on the home page, not "no runs yet";
  - with --rate-per-identity 5, alice's pages through the proxy until she
    is refused (429, logged as hers via the proxy) leave carol's pages,
    through the same proxy, answering 200;
  - a plain-text ledgerd on loopback refuses the header: there is no
    trusted proxy there.

Skips (77) when nginx is not installed. Every check runs; the failures are
listed together.
"""
import html
import http.client
import http.server
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from access_control_test import Ledger  # noqa: E402
from chromium import Chromium  # noqa: E402
from ledger_testlib import Certificates, fail, free_port, generate_stubs, read  # noqa: E402

PROXY_URI = "spiffe://test/ns/auth/sa/proxy"
PROXY = "uri:" + PROXY_URI
ALICE = "user:alice@example.com"
POLICY = {
    "identities": [
        {"identity": "cn:writer", "roles": ["emitter"], "teams": ["team-a", "team-b", "team-c"]},
        {"identity": "cn:auditor-a", "roles": ["auditor"], "teams": ["team-a"]},
        {"identity": "cn:gateway", "roles": ["emitter"], "teams": ["team-a"]},
        {"identity": ALICE, "roles": ["reader"], "teams": ["team-a", "team-b"]},
        {"identity": "user:carol@example.com", "roles": ["reader"], "teams": ["team-a"]},
    ],
    "trusted_proxies": [{"identity": PROXY, "user_header": "X-Forwarded-Email"}],
}
# Session cookies the auth endpoint knows, and the email it answers for each
# (None: a session with no email).
SESSIONS = {"alice": "alice@example.com", "carol": "carol@example.com", "bob": "bob@example.com",
            "anonymous": None}

NGINX_CONF = """daemon off;
master_process off;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log info;
events {{ worker_connections 64; }}
http {{
  access_log {work}/nginx-access.log;
  client_body_temp_path {work}/nginx-body;
  proxy_temp_path {work}/nginx-proxy;
  fastcgi_temp_path {work}/nginx-fastcgi;
  uwsgi_temp_path {work}/nginx-uwsgi;
  scgi_temp_path {work}/nginx-scgi;
  server {{
    listen 127.0.0.1:{port};
    location = /oauth2/auth {{
      internal;
      proxy_pass http://127.0.0.1:{auth_port};
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
    }}
    location / {{
      auth_request /oauth2/auth;
      auth_request_set $email $upstream_http_x_auth_request_email;
      proxy_set_header X-Forwarded-Email $email;
      proxy_pass https://127.0.0.1:{ledger_port};
      proxy_ssl_certificate {cert};
      proxy_ssl_certificate_key {key};
      proxy_ssl_trusted_certificate {ca};
      proxy_ssl_verify on;
      proxy_ssl_name localhost;
    }}
  }}
}}
"""


class Auth(http.server.BaseHTTPRequestHandler):
    """The auth endpoint nginx asks: oauth2-proxy's answers to auth_request."""

    def do_GET(self):  # noqa: N802 - http.server's name
        cookie = self.headers.get("Cookie", "")
        session = re.search(r"(?:^|;\s*)session=([a-z]+)", cookie)
        if session is None or session.group(1) not in SESSIONS:
            self.send_response(401)
            self.end_headers()
            return
        self.send_response(200)
        email = SESSIONS[session.group(1)]
        if email is not None:
            self.send_header("X-Auth-Request-Email", email)
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    # Debian puts nginx in /usr/sbin, which a user's PATH may leave out.
    nginx_bin = shutil.which("nginx", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if nginx_bin is None:
        print("SKIP: nginx is not installed (scripts/setup.sh packages installs it)")
        sys.exit(77)
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="trusted-proxy-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "ledger_service"))
    ca = Certificates(os.path.join(work, "pki"), "ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    certs = {
        "proxy": ca.issue("proxy", "proxy", "URI:" + PROXY_URI),
        "writer": ca.issue("writer", "writer"),
        "auditor-a": ca.issue("auditor-a", "auditor-a"),
        "gateway": ca.issue("gateway", "gateway"),
    }
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump(POLICY, f)
    tls = ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca, "--policy", policy]
    ledger = Ledger(build, work, tls + ["--rate-per-identity", "5"])
    plain = Ledger(build, work, [], name="plain")
    auth = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Auth)
    threading.Thread(target=auth.serve_forever, daemon=True).start()
    nginx_port = free_port()
    conf = os.path.join(work, "nginx.conf")
    proxy_cert, proxy_key = certs["proxy"]
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(work=work, port=nginx_port, auth_port=auth.server_address[1],
                                  ledger_port=ledger.http.rsplit(":", 1)[1], cert=proxy_cert, key=proxy_key,
                                  ca=ca.ca))
    nginx = subprocess.Popen([nginx_bin, "-p", work, "-c", conf, "-e", os.path.join(work, "nginx-error.log")],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(nginx, nginx_port, work)
        problems = run(build, work, ca, certs, ledger, plain, nginx_port)
    finally:
        auth.shutdown()
        for proc in (nginx, ledger.proc, plain.proc):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if problems:
        fail("%d problem(s):\n  %s" % (len(problems), "\n  ".join(problems)))
    print("PASS: a trusted proxy names the user; nobody else may")


def wait_for_port(nginx, port, work):
    for _ in range(100):
        if nginx.poll() is not None:
            fail("nginx exited %d: %s" % (nginx.returncode, open(os.path.join(work, "nginx-error.log")).read()))
        try:
            http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
            return
        except OSError:
            time.sleep(0.1)
    fail("nginx does not listen on %d" % port)


def message(body):
    """The message of a dashboard error page (the paragraph under its status)."""
    m = re.search(r"<h1>\d+</h1><p>(.*?)</p>", body)
    return html.unescape(m.group(1)) if m else body


def teams_of(page):
    """The teams a home page lists."""
    return re.findall(r'<tr[^>]*><td><a href="/teams/[^"?]+">([^<]+)</a></td>', page)


def run(build, work, ca, certs, ledger, plain, nginx_port):
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import receipt_pb2 as pb
    problems = []

    def expect(what, got, want):
        if got != want:
            problems.append("%s: want %r, got %r" % (what, want, got))

    def https(who, path, headers=()):
        """(status, body) straight from ledgerd's HTTPS port with `who`'s
        certificate; `headers` a list of pairs, a name may come twice."""
        ctx = ssl.create_default_context(cafile=ca.ca)
        ctx.load_cert_chain(*certs[who])
        host, port = ledger.http.rsplit(":", 1)
        conn = http.client.HTTPSConnection("localhost", int(port), context=ctx, timeout=30)
        conn.putrequest("GET", path)
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders()
        r = conn.getresponse()
        out = r.status, r.read().decode(errors="replace")
        conn.close()
        return out

    def get(base, path, headers=None):
        req = urllib.request.Request(base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    nginx = "http://127.0.0.1:%d" % nginx_port

    def via_nginx(session, path, headers=None):
        h = {"Cookie": "session=" + session} if session else {}
        h.update(headers or {})
        return get(nginx, path, h)

    def log_lines(event, **fields):
        out = []
        for line in ledger.stderr().splitlines():
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get("event") == event and all(j.get(k) == v for k, v in fields.items()):
                out.append(j)
        return out

    # A run in each of three teams.
    now_us = int(time.time() * 1e6)
    receipts = [pb.Receipt(receipt_id="start-" + t, team=t, run_id="run-" + t[-1], step_id="s", occurred_at_us=now_us,
                           agent_start=pb.AgentStart(decision=pb.DECISION_ALLOW, timeout_ms=600000))
                for t in ("team-a", "team-b", "team-c")]
    cert, key = certs["writer"]
    with grpc.secure_channel(ledger.address, grpc.ssl_channel_credentials(read(ca.ca), read(key), read(cert))) as ch:
        out = svc_grpc.LedgerServiceStub(ch).Append(svc.AppendRequest(receipts=receipts), timeout=30)
        if any(r.code for r in out.results):
            fail("seeding: %s" % [r for r in out.results if r.code])

    # A browser with no client certificate, through nginx, as alice.
    shots = os.path.join(build, "tests", "artifacts", "trusted_proxy")
    os.makedirs(shots, exist_ok=True)
    shot = os.path.join(shots, "home-as-alice.png")
    browser = Chromium(os.path.join(work, "profile"))
    try:
        browser.send("Network.setCookie", {"name": "session", "value": "alice", "url": nginx + "/"})
        browser.open(nginx + "/")
        teams = browser.eval("[...document.querySelectorAll('table.teams tbody tr td:first-child')]"
                             ".map(e => e.textContent)")
        expect("alice's teams in Chromium", teams, ["team-a", "team-b"])
        expect("alice's home page title in Chromium", browser.eval("document.querySelector('h1').textContent"),
               "Evidence ledger")
        browser.screenshot(shot)
        time.sleep(1.2)  # a second of alice's rate back
        browser.open(nginx + "/teams/team-c")
        expect("team-c in Chromium, as alice", browser.eval("document.querySelector('main p').textContent"),
               "identity 'user:alice@example.com' may not query for team 'team-c'")
    finally:
        browser.close()
    if not os.path.exists(shot) or os.path.getsize(shot) < 1000:
        problems.append("no screenshot at %s" % shot)
    print("Chromium through nginx, as alice: teams %s; screenshot %s" % (teams, shot))

    # Alice's refusal is logged as hers, via the proxy.
    refused = log_lines("http_refused", path="/teams/team-c")
    expect("alice's refused page, logged", [(j.get("status"), j.get("identity"), j.get("via"), j.get("msg"))
                                            for j in refused],
           [(403, ALICE, PROXY, "identity 'user:alice@example.com' may not query for team 'team-c'")])

    # nginx sets the header: one the browser sends itself is replaced.
    time.sleep(1.2)
    status, body = via_nginx("alice", "/", {"X-Forwarded-Email": "admin@example.com"})
    expect("alice with her own X-Forwarded-Email, through nginx: status", status, 200)
    expect("alice with her own X-Forwarded-Email, through nginx: teams",
           teams_of(body), ["team-a", "team-b"])

    # Users the proxy names but the policy does not, sessions without an
    # email, and no session at all.
    expect("bob through nginx", via_nginx("bob", "/"), (403, "identity 'user:bob@example.com' may read no team\n"))
    expect("bob's refusal, logged", [(j.get("status"), j.get("identity"), j.get("via"))
                                     for j in log_lines("http_refused", msg="identity 'user:bob@example.com' may read "
                                                        "no team")], [(403, PROXY, None)])
    expect("a session without an email, through nginx", via_nginx("anonymous", "/"),
           (401, "the proxy sent no user: no X-Forwarded-Email header from trusted proxy '%s'\n" % PROXY))
    expect("no session, through nginx: nginx's auth_request answers", via_nginx(None, "/")[0], 401)

    # Straight to ledgerd: a forged user header from another certificate.
    forged = "X-Forwarded-Email: only a trusted proxy may name the user, and identity 'cn:auditor-a' is not one\n"
    for path in ("/", "/teams/team-a", "/metrics", "/checkpoint"):
        expect("auditor-a with a forged X-Forwarded-Email, " + path,
               https("auditor-a", path, [("X-Forwarded-Email", "admin@example.com"), ("X-Request-Id", "forged-1")]),
               (403, forged))
    expect("auditor-a with a forged X-Remote-User",
           https("auditor-a", "/", [("X-Remote-User", "admin@example.com")]),
           (403, "X-Remote-User: only a trusted proxy may name the user, and identity 'cn:auditor-a' is not one\n"))
    expect("the forged header's refusals, logged",
           [(j.get("path"), j.get("status"), j.get("identity"), j.get("msg"))
            for j in log_lines("http_refused", request_id="forged-1")],
           [(p, 403, "cn:auditor-a", forged.rstrip("\n")) for p in ("/", "/teams/team-a", "/metrics", "/checkpoint")])
    expect("auditor-a without the header", https("auditor-a", "/teams/team-a")[0], 200)

    # Straight to ledgerd with the proxy's certificate.
    expect("the proxy without a user", https("proxy", "/"),
           (401, "the proxy sent no user: no X-Forwarded-Email header from trusted proxy '%s'\n" % PROXY))
    rule = " (a user is 1 to 254 bytes of UTF-8 without spaces, commas or control characters)\n"
    expect("the proxy naming 'eve smith@example.com'",
           https("proxy", "/", [("X-Forwarded-Email", "eve smith@example.com")]),
           (400, "X-Forwarded-Email: the user's name holds a space" + rule))
    expect("the proxy naming two users",
           https("proxy", "/", [("X-Forwarded-Email", "alice@example.com"), ("X-Forwarded-Email", "x@example.com")]),
           (400, "X-Forwarded-Email: the user's name holds a comma" + rule))
    expect("the proxy naming a user of 255 bytes",
           https("proxy", "/", [("X-Forwarded-Email", "a" * 243 + "@example.com")]),
           (400, "X-Forwarded-Email: the user's name is longer than 254 bytes" + rule))

    # A certificate that may read no team is told so.
    status, body = https("gateway", "/")
    expect("the gateway's home page", (status, message(body), "no runs yet" in body),
           (403, "identity 'cn:gateway' may read no team", False))

    # Alice's own rate: her pages until she is refused leave carol's alone.
    time.sleep(1.2)
    for i in range(20):
        status, body = via_nginx("alice", "/", {"X-Request-Id": "alice-%d" % i})
        if status == 429:
            break
    expect("alice, over her rate, through nginx", (status, message(body)),
           (429, "identity 'user:alice@example.com' is over its rate of 5 receipts and calls a second; back off "
                 "and retry"))
    status, body = via_nginx("carol", "/")
    expect("carol, right after, through nginx", (status, teams_of(body)), (200, ["team-a"]))
    over = [j for j in log_lines("rpc_failed", identity=ALICE) if j.get("code") == "resource_exhausted"]
    if not over or any(j.get("via") != PROXY for j in over):
        problems.append("alice's refused calls, logged: want identity %s via %s, got %s" % (ALICE, PROXY, over[:2]))
    expect("alice's 429, logged", [(j.get("identity"), j.get("via")) for j in log_lines("http_refused", status=429)],
           [(ALICE, PROXY)])

    # Plain text: no policy, so no trusted proxy.
    expect("plain text with X-Forwarded-Email", get("http://" + plain.http, "/", {"X-Forwarded-Email": "a@example.com"}),
           (403, "X-Forwarded-Email: only a trusted proxy may name the user, and in plain text there is none (every "
                 "caller is 'local')\n"))
    expect("plain text without it", get("http://" + plain.http, "/healthz"), (200, "ok\n"))
    print("forged headers refused with 403; the proxy's mistakes with 401 and 400; unknown users and certificates "
          "that read no team told so; alice's rate is hers")
    return problems


if __name__ == "__main__":
    main()
