#!/usr/bin/python3
"""The Python client as a package: its wheel built offline, installed into a
fresh virtual environment, emitting to a real ledgerd from there.

Usage: test_wheel.py BUILD_DIR

  - The wheel is built from a copy of clients/python and proto/ (so the
    source tree stays clean) with Debian's pip, setuptools and wheel:
    `pip wheel --no-deps --no-build-isolation --no-index`. It holds the
    stubs generated at build (with their .pyi), py.typed and the
    conformance runner, and no top-level module but evidence_ledger.
  - It is installed with `pip install --no-index --no-deps` into a new
    virtual environment, BUILD_DIR/clients/python/venv, made with
    --system-site-packages (grpcio and protobuf are Debian's), which the
    conformance suite then uses.
  - From that environment, in a directory outside the source tree: the
    package is the installed one, the stubs take no top-level names, a
    batch is emitted to a real ledgerd and read back from the log and the
    dashboard; the emitter example of clients/python/README.md is this
    directory's examples/emitter.py, word for word, and runs.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(CLIENT))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from ledger_testlib import fail, free_port  # noqa: E402

EXAMPLE = os.path.join(CLIENT, "examples", "emitter.py")

# Run by the environment's python, outside the source tree: argv[1] the
# ledger's address, argv[2] the virtual environment.
EMIT = r'''
import json, os, sys, time
import evidence_ledger
from evidence_ledger import Dashboard, Emitter, receipts, stubs
from evidence_ledger.dashboard import state_name
address, venv = sys.argv[1], sys.argv[2]
assert os.path.realpath(evidence_ledger.__file__).startswith(os.path.realpath(venv)), evidence_ledger.__file__
try:
    import receipt_pb2  # noqa: F401
    raise SystemExit("the stubs took the top-level name receipt_pb2")
except ImportError:
    pass
ids = []
with Emitter(address, batch_size=10) as emitter:
    for i in range(25):
        r = receipts.model_call("team-w", "run-w", "s%d" % i, provider="openai", model="gpt-4o", route="default",
                                decision="allow", receipt_id="wheel-%d" % i, input_tokens=i)
        emitter.emit(r)
        ids.append(r.receipt_id)
    start = receipts.agent_start("team-w", "run-w", "build", receipt_id="wheel-start", decision="allow",
                                 timeout_ms=60000)
    emitter.emit(start)
    emitter.emit(receipts.agent_exec("team-w", "run-w", "build", start.receipt_id, receipt_id="wheel-exec",
                                     status="succeeded", exit_code=0))
    assert emitter.flush(), "not flushed"
print(json.dumps({"acknowledged": emitter.acknowledged, "refused": len(emitter.refused),
                  "unsettled": len(emitter.unsettled)}))
import grpc
with grpc.insecure_channel(address) as ch:
    stub = stubs.ledger_grpc.LedgerServiceStub(ch)
    size = 0
    for _ in range(500):
        size = stub.GetCheckpoint(stubs.ledger.GetCheckpointRequest(), timeout=10).tree_size
        if size >= 27:
            break
        time.sleep(0.02)
    leaves = [json.loads(e.leaf)["receipt"]["receipt_id"]
              for e in stub.GetEntries(stubs.ledger.GetEntriesRequest(from_seq=0, to_seq=size), timeout=10)]
print(json.dumps({"log": leaves}))
d = Dashboard(address)
print(json.dumps({"build": state_name(d.step("team-w", "run-w", "build").state)}))
d.close()
'''


def run(args, what, **kwargs):
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)
    if result.returncode != 0:
        fail("%s: exit %d\n%s" % (what, result.returncode, result.stdout[-4000:]))
    return result.stdout


def build_wheel(work):
    """The wheel, built from a copy of clients/python and proto/."""
    src = os.path.join(work, "src")
    shutil.copytree(os.path.join(ROOT, "proto"), os.path.join(src, "proto"))
    shutil.copytree(CLIENT, os.path.join(src, "clients", "python"),
                    ignore=shutil.ignore_patterns("_generated", "build", "*.egg-info", "__pycache__", "venv"))
    dist = os.path.join(work, "dist")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", dist, os.path.join(src, "clients", "python")], "pip wheel")
    wheels = os.listdir(dist)
    if len(wheels) != 1 or not wheels[0].startswith("evidence_ledger-") or not wheels[0].endswith("-py3-none-any.whl"):
        fail("pip wheel made %s" % wheels)
    return os.path.join(dist, wheels[0])


def check_contents(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {"evidence_ledger/py.typed", "evidence_ledger/conformance.py", "evidence_ledger/_generated/__init__.py"}
    for proto in ("receipt", "ledger_service", "query", "export"):
        want |= {"evidence_ledger/_generated/%s_pb2.py" % proto, "evidence_ledger/_generated/%s_pb2.pyi" % proto,
                 "evidence_ledger/_generated/%s_pb2_grpc.py" % proto}
    if want - names:
        fail("the wheel lacks %s" % sorted(want - names))
    top = sorted({n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")})
    if top != ["evidence_ledger"]:
        fail("the wheel's top-level names: %s, not only evidence_ledger" % top)
    grpc_stub = zipfile.ZipFile(wheel).read("evidence_ledger/_generated/ledger_service_pb2_grpc.py").decode()
    if "from . import ledger_service_pb2 as" not in grpc_stub:
        fail("the generated gRPC module does not import its messages from the package")


def install(wheel, build):
    venv = os.path.join(build, "clients", "python", "venv")
    shutil.rmtree(venv, ignore_errors=True)
    run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", venv], "venv")
    python = os.path.join(venv, "bin", "python")
    # Debian's pip, seen through --system-site-packages, installs into the environment.
    run([python, "-m", "pip", "install", "--no-index", "--no-deps", "-q", wheel], "pip install")
    return venv, python


def readme_example():
    with open(EXAMPLE) as f:
        example = f.read()
    with open(os.path.join(CLIENT, "README.md")) as f:
        readme = f.read()
    if "```python\n" + example + "```\n" not in readme:
        fail("clients/python/README.md does not show clients/python/examples/emitter.py word for word in a python "
             "block")


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="python-wheel-")
    t = time.monotonic()
    readme_example()
    wheel = build_wheel(work)
    check_contents(wheel)
    venv, python = install(wheel, build)
    built = time.monotonic() - t
    outside = os.path.join(work, "elsewhere")
    os.makedirs(outside)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EVIDENCE_LEDGER_STUBS")}

    address = "127.0.0.1:%d" % free_port()
    with open(os.path.join(work, "ledgerd.err"), "wb") as err:
        ledgerd = subprocess.Popen([os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, "data"),
                                    "--listen", address, "--http-listen", "127.0.0.1:0",
                                    "--checkpoint-interval-ms", "20"], stdout=subprocess.PIPE, stderr=err)
    try:
        if not ledgerd.stdout.readline().startswith(b"listening on"):
            fail("ledgerd did not start")
        out = run([python, "-c", EMIT, address, venv], "emitting from the installed wheel", cwd=outside, env=env)
        lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        want = [{"acknowledged": 27, "refused": 0, "unsettled": 0},
                {"log": ["wheel-%d" % i for i in range(25)] + ["wheel-start", "wheel-exec"]},
                {"build": "succeeded"}]
        if lines != want:
            fail("from the installed wheel: expected %s, got %s" % (want, out))
        out = run([python, EXAMPLE], "the README's example", cwd=outside, env=dict(env, LEDGER=address))
        if out != "logged 3 receipts, 0 refused\n":
            fail("the README's example printed %r" % out)
    finally:
        ledgerd.terminate()
        ledgerd.wait(timeout=30)
    shutil.rmtree(work, ignore_errors=True)
    print("PASS: wheel built and installed in %.1f s; emitted, read back and the README's example run from %s"
          % (built, venv))


if __name__ == "__main__":
    main()
