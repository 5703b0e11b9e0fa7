"""Headless Chromium (Debian's) driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: commands on fd 3, replies and events on fd 4,
each a JSON object ended by a NUL byte), so tests can load real pages, read
layout facts from the DOM (element boxes, computed styles) and keep
screenshots, with the standard library alone. Scripts run through the
protocol, not through the page: the page's CSP still forbids its own."""
import base64
import json
import os
import queue
import subprocess
import threading
import time


class Chromium:
    def __init__(self, profile, width=1280, height=900):
        cmd_r, cmd_w = os.pipe()  # we write commands, Chromium reads fd 3
        evt_r, evt_w = os.pipe()  # Chromium writes fd 4, we read

        def child():
            a, b = os.dup(cmd_r), os.dup(evt_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", "--remote-debugging-pipe", "--user-data-dir=" + profile, "about:blank"],
            preexec_fn=child, close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(evt_w)
        self._out = os.fdopen(cmd_w, "wb", buffering=0)
        self._in = os.fdopen(evt_r, "rb", buffering=0)
        self._next = 0
        self._replies = {}
        self._events = queue.Queue()
        self._lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable")
        self.resize(width, height)

    def _read(self):
        buf = b""
        while True:
            chunk = self._in.read(65536)
            if not chunk:
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._lock:
                        self._replies[msg["id"]] = msg
                        self._lock.notify_all()
                else:
                    self._events.put(msg)

    def call(self, method, params=None, session=None, timeout=30):
        self._next += 1
        n = self._next
        msg = {"id": n, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._out.write(json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        with self._lock:
            while n not in self._replies:
                left = deadline - time.time()
                if left <= 0:
                    raise TimeoutError(method)
                self._lock.wait(left)
            reply = self._replies.pop(n)
        if "error" in reply:
            raise RuntimeError("%s: %s" % (method, reply["error"]))
        return reply["result"]

    def send(self, method, params=None):
        return self.call(method, params, session=self.session)

    def resize(self, width, height):
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def open(self, url, timeout=30):
        """Loads `url` (following redirects) and waits for its load event."""
        while not self._events.empty():
            self._events.get_nowait()
        self.send("Page.navigate", {"url": url})
        deadline = time.time() + timeout
        while True:
            msg = self._events.get(timeout=max(0.1, deadline - time.time()))
            if msg.get("method") == "Page.loadEventFired" and msg.get("sessionId") == self.session:
                return

    def eval(self, expression):
        """The JSON value of `expression`, evaluated in the page."""
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError("evaluate: %s" % json.dumps(r["exceptionDetails"])[:500])
        return r["result"].get("value")

    def screenshot(self, path):
        """The whole page as a PNG file at `path`."""
        size = self.send("Page.getLayoutMetrics")["cssContentSize"]
        shot = self.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
