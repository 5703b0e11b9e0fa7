"""Helpers shared by the Python tests that drive a real ledgerd: client stubs
generated with protoc and Debian's grpc_python_plugin, free ports,
certificates made with the openssl command, and a cosigned checkpoint
opened with Go's note package."""
import os
import re
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def generate_stubs(out, protos=("receipt", "ledger_service")):
    """Python modules for proto/<name>.proto in `out`, which joins sys.path."""
    proto = os.path.join(ROOT, "proto")
    os.makedirs(out, exist_ok=True)
    subprocess.run(["protoc", "-I", proto, "--python_out", out, "--grpc_python_out", out,
                    "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin"]
                   + [os.path.join(proto, p + ".proto") for p in protos], check=True)
    sys.path.insert(0, out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Certificates:
    """A certificate authority in `directory` and certificates it signs
    (P-256 keys), with the openssl command line."""

    def __init__(self, directory, name="ca"):
        self.dir = directory
        self.name = name
        os.makedirs(directory, exist_ok=True)
        self.ca = self._path(name + ".pem")
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                      "-keyout", self._path(name + ".key"), "-out", self.ca, "-days", "2",
                      "-subj", "/CN=" + name)

    def _path(self, file):
        return os.path.join(self.dir, file)

    def _openssl(self, *args):
        subprocess.run(("openssl",) + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def issue(self, file, cn, sans=None, days=2):
        """(certificate, key) paths; `sans` like "URI:spiffe://x,DNS:y"; days < 0: already expired."""
        key, csr, pem = self._path(file + ".key"), self._path(file + ".csr"), self._path(file + ".pem")
        req = ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
               "-keyout", key, "-out", csr, "-subj", "/O=test" + ("/CN=" + cn if cn else "")]
        if sans:
            req += ["-addext", "subjectAltName=" + sans]
        self._openssl(*req)
        self._openssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self._path(self.name + ".key"),
                      "-CAcreateserial", "-days", str(days), "-copy_extensions", "copy", "-out", pem)
        return pem, key


def read(path):
    with open(path, "rb") as f:
        return f.read()


def go_note_open(work, cosigned, log_vkey, cosignatures=1):
    """Opens `cosigned` with Go's golang.org/x/mod/sumdb/note and the log's
    key alone (tests/interop/note_open.go): the log's signature verifies,
    the `cosignatures` lines by keys it was not given are skipped."""
    path = os.path.join(work, "cosigned.note")
    with open(path, "w") as f:
        f.write(cosigned)
    env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off",
               GOCACHE=os.path.join(work, "gocache"), GOFLAGS="")
    r = subprocess.run(["go", "run", os.path.join(ROOT, "tests", "interop", "note_open.go"), path, log_vkey],
                       capture_output=True, text=True, env=env)
    name, key_id = log_vkey.split("+")[:2]
    want_tail = "verified %s %s\nunverified %d\n" % (name, key_id, cosignatures)
    if r.returncode != 0 or not r.stdout.endswith(want_tail):
        fail("Go's note.Open on the cosigned checkpoint: %r %r" % (r.stdout, r.stderr))


SOFTHSM_MODULE = "/usr/lib/softhsm/libsofthsm2.so"


class SoftToken:
    """A SoftHSM2 token (Debian's softhsm2) of its own under `work`, labelled
    "ledger", PIN in `work`/pin: the PKCS#11 token tests keep keys in.
    Every process started after it reads it (SOFTHSM2_CONF)."""

    def __init__(self, work):
        self.work = work
        tokens = os.path.join(work, "tokens")
        os.makedirs(tokens)
        conf = os.path.join(work, "softhsm2.conf")
        with open(conf, "w") as f:
            f.write("directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n" % tokens)
        os.environ["SOFTHSM2_CONF"] = conf
        subprocess.run(["softhsm2-util", "--init-token", "--free", "--label", "ledger", "--pin", "1234", "--so-pin",
                        "5678"], check=True, capture_output=True)
        for name, pin in (("pin", "1234\n"), ("wrong-pin", "9999\n")):
            fd = os.open(os.path.join(work, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, pin.encode())
            os.close(fd)

    def uri(self, obj, pin="pin"):
        return "pkcs11:token=ledger;object=%s?module-path=%s&pin-source=file:%s" % (
            obj, SOFTHSM_MODULE, os.path.join(self.work, pin))

    def keygen(self, build, origin, obj):
        """A new key `obj` in the token (ledgerctl keygen --pkcs11): its
        log verifier key for `origin`."""
        r = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "keygen", "--origin", origin, "--pkcs11",
                            self.uri(obj)], capture_output=True, text=True)
        if r.returncode != 0:
            fail("ledgerctl keygen --pkcs11 %s: %s" % (obj, r.stderr))
        return r.stdout.strip()


class Ledgerd:
    """ledgerd on a data directory, listening on free ports (gRPC and HTTP),
    its output in a file under `work`."""

    def __init__(self, build, work, data, origin, *extra):
        self.build, self.out_path = build, os.path.join(work, "ledgerd.%d.out" % time.monotonic_ns())
        self.out = open(self.out_path, "wb")
        self.proc = subprocess.Popen([os.path.join(build, "cmd", "ledgerd"), "--data", data, "--origin", origin,
                                      "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"] + list(extra),
                                     stdout=self.out, stderr=self.out)
        self.addr = self.http = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and (self.addr is None or self.http is None):
            text = open(self.out_path).read()
            m = re.search(r"^listening on (\S+)$", text, re.M)
            h = re.search(r"^http on (\S+)$", text, re.M)
            self.addr, self.http = m and m.group(1), h and h.group(1)
            if self.proc.poll() is not None:
                fail("ledgerd exited: " + text[-2000:])
            time.sleep(0.1)
        if self.addr is None:
            fail("ledgerd did not start: " + open(self.out_path).read()[-2000:])

    def ctl(self, *args, check=True):
        r = subprocess.run([os.path.join(self.build, "cmd", "ledgerctl"), "--server", self.addr] + list(args),
                           capture_output=True, text=True)
        if check and r.returncode != 0:
            fail("ledgerctl %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r

    def log(self):
        return open(self.out_path).read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)
        self.out.close()
