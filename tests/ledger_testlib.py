"""Helpers shared by the Python tests that drive a real ledgerd: client stubs
generated with protoc and Debian's grpc_python_plugin, free ports, and
certificates made with the openssl command."""
import os
import socket
import subprocess
import sys

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
