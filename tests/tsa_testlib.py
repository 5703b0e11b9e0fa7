"""A real RFC 3161 time-stamping authority on loopback, for tests: `openssl
ts -reply` (Debian's OpenSSL) behind a small HTTP server speaking RFC 3161
section 3.4 (POST application/timestamp-query, answer
application/timestamp-reply). The TSA's root and certificate are made as
tests/vectors/timestamp_vectors.py makes them (an RSA root, an ECDSA P-256
signing certificate with extended key usage timeStamping, critical)."""
import http.server
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors"))
from timestamp_vectors import make_tsa, stamp, stamp_id, stamp_line  # noqa: E402,F401


class TsaServer:
    """The TSA of `dir` (made by make_tsa) on 127.0.0.1; `down` makes it
    answer 503; `requests` counts the queries it was sent."""

    def __init__(self, dir):
        self.dir, self.down, self.requests = dir, False, 0
        self.lock = threading.Lock()  # openssl ts -reply writes the serial file
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.requests += 1
                if server.down or self.headers.get("Content-Type") != "application/timestamp-query":
                    self.send_response(503 if server.down else 415)
                    self.end_headers()
                    return
                reply = server.reply(body)
                self.send_response(200 if reply else 400)
                self.send_header("Content-Type", "application/timestamp-reply")
                self.send_header("Content-Length", str(len(reply or b"")))
                self.end_headers()
                self.wfile.write(reply or b"")

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def reply(self, query):
        with self.lock, tempfile.TemporaryDirectory() as tmp:
            q, r = os.path.join(tmp, "q.tsq"), os.path.join(tmp, "r.tsr")
            open(q, "wb").write(query)
            done = subprocess.run(["openssl", "ts", "-reply", "-queryfile", q, "-config",
                                   os.path.join(self.dir, "tsa.cnf"), "-section", "tsa1", "-out", r],
                                  capture_output=True)
            return open(r, "rb").read() if done.returncode == 0 else None

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
