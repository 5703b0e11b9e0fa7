#!/usr/bin/python3
"""The HTTPS port under a flood of slow, unauthenticated TLS handshakes.

Usage: http_flood_test.py BUILD_DIR

A real ledgerd with mutual TLS serves its HTTP port (/healthz, /readyz,
/metrics, the dashboard) over HTTPS. An attacker without a certificate opens
64 connections from 127.0.0.2 (beyond the 16 a peer address may hold) and 16
from each of 127.0.0.3 to 127.0.0.50 (768, beyond the 512 the port holds in
all; all loopback on Linux), sends a TLS record header announcing a
ClientHello, then one byte every 3 s, which no per-read timeout ever ends. While they
last, probes and an authorized scrape from 127.0.0.1 must answer promptly:

  - /healthz, /readyz and /metrics answer 200 within 3 s each, again and
    again, for as long as the flood lasts;
  - every slow handshake is closed by the server within its deadline (the
    handshake and request as a whole: 10 s), although bytes keep coming.

The test ends by itself in about 20 s.
"""
import json
import os
import socket
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from access_control_test import Ledger  # noqa: E402
from ledger_testlib import Certificates, fail  # noqa: E402

DEADLINE_S = 10     # the server's bound on a handshake and request
TRICKLE_S = 3       # one byte this often: under any per-read timeout
PROBE_BOUND_S = 3   # a probe slower than this counts as locked out
# A TLS 1.2 record header (handshake, 0x0301) announcing 512 bytes, then a
# ClientHello header announcing 508: the server waits for the rest.
CLIENT_HELLO_HEAD = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])


class SlowHandshake:
    """One connection from `source` that never finishes its ClientHello."""

    def __init__(self, source, port):
        self.sock = socket.socket()
        self.sock.bind((source, 0))
        self.sock.settimeout(5)
        self.opened = time.monotonic()
        self.closed_at = None
        try:
            self.sock.connect(("127.0.0.1", port))
            self.sock.sendall(CLIENT_HELLO_HEAD)
        except OSError:
            self.closed_at = time.monotonic()
        self.sock.setblocking(False)

    def poke(self):
        """Sends one more byte; notes when the server closed the connection."""
        if self.closed_at is not None:
            return
        try:
            if self.sock.recv(1) == b"":
                self.closed_at = time.monotonic()
                return
        except BlockingIOError:
            pass
        except OSError:
            self.closed_at = time.monotonic()
            return
        try:
            self.sock.send(b"\x00")
        except BlockingIOError:
            pass
        except OSError:
            self.closed_at = time.monotonic()


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="http-flood-")
    ca = Certificates(os.path.join(work, "pki"), "ca")
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1,DNS:localhost")
    scraper = ca.issue("scraper", "scraper", "URI:spiffe://cluster/ns/monitoring/sa/prometheus")
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump({"identities": [{"identity": "spiffe://cluster/ns/monitoring/sa/prometheus",
                                   "roles": ["reader"], "teams": ["*"]}]}, f)
    ledger = Ledger(build, work, ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca,
                                  "--policy", policy])
    try:
        attack(ledger, ca, scraper)
    finally:
        if ledger.proc.poll() is None:
            ledger.proc.kill()


def attack(ledger, ca, scraper):
    port = int(ledger.http.rsplit(":", 1)[1])
    ctx = ssl.create_default_context(cafile=ca.ca)
    ctx.load_cert_chain(*scraper)

    def probe(path):
        """(status, seconds) of one request from 127.0.0.1."""
        started = time.monotonic()
        try:
            with urllib.request.urlopen("https://%s%s" % (ledger.http, path), context=ctx,
                                        timeout=PROBE_BOUND_S + 2) as r:
                r.read()
                return r.status, time.monotonic() - started
        except urllib.error.HTTPError as e:
            return e.code, time.monotonic() - started
        except (urllib.error.URLError, ssl.SSLError, OSError) as e:
            return "failed (%s)" % e, time.monotonic() - started

    for path in ("/healthz", "/readyz", "/metrics"):
        status, _ = probe(path)
        if status != 200:
            fail("before the flood, %s: %s" % (path, status))

    # The flood.
    sources = ["127.0.0.2"] * 64 + ["127.0.0.%d" % i for i in range(3, 51) for _ in range(16)]
    flood = [SlowHandshake(source, port) for source in sources]
    stop = threading.Event()

    def trickle():
        while not stop.wait(TRICKLE_S):
            for s in flood:
                s.poke()
    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()

    slow, rounds = [], 0
    started = time.monotonic()
    while time.monotonic() - started < DEADLINE_S - 2:
        rounds += 1
        for path in ("/healthz", "/readyz", "/metrics"):
            status, seconds = probe(path)
            if status != 200 or seconds > PROBE_BOUND_S:
                slow.append("%s at %.1f s: %s after %.2f s" % (path, time.monotonic() - started, status, seconds))
        time.sleep(0.5)
    if slow:
        stop.set()
        fail("during a flood of %d slow handshakes, probes were locked out:\n  %s" % (len(flood), "\n  ".join(slow)))
    print("%d rounds of /healthz, /readyz and /metrics answered within %d s during %d slow handshakes"
          % (rounds, PROBE_BOUND_S, len(flood)))

    # Every slow handshake ends by the deadline, trickle or not.
    limit = flood[-1].opened + DEADLINE_S + TRICKLE_S + 2
    while time.monotonic() < limit and any(s.closed_at is None for s in flood):
        time.sleep(0.5)
        for s in flood:
            s.poke()
    stop.set()
    trickler.join()
    open_still = [s for s in flood if s.closed_at is None]
    if open_still:
        fail("%d of %d slow handshakes were still open %.0f s after they started"
             % (len(open_still), len(flood), time.monotonic() - flood[0].opened))
    longest = max(s.closed_at - s.opened for s in flood)
    if longest > DEADLINE_S + TRICKLE_S + 1:
        fail("a slow handshake lasted %.1f s, beyond the %d s deadline" % (longest, DEADLINE_S))
    for s in flood:
        s.sock.close()
    status, _ = probe("/healthz")
    if status != 200:
        fail("after the flood, /healthz: %s" % status)
    ledger.stop()
    print("every slow handshake closed within %.1f s; the port serves after the flood" % longest)


if __name__ == "__main__":
    main()
