#!/usr/bin/python3
"""The container image, built and run with podman.

Usage: image_test.py BUILD_DIR

scripts/build-image.sh --prebuilt BUILD_DIR builds the image from the
binaries just built (deploy/Dockerfile's runtime stage over the tree that
deploy/collect-runtime.sh makes; no base image, nothing compiled). Every
container then runs as the manifests run it: --read-only, --cap-drop ALL,
--security-opt no-new-privileges, --user 10001, a volume for
/var/lib/ledger, its ports published on 127.0.0.1.

The image's own command, its ports published: the published ports answer
nothing (it serves the container's loopback alone), its log says so and how
to give TLS, and ledgerctl run inside the container is served.

Plain text asked for on purpose (0.0.0.0 and --insecure; checkpoints at
most hourly, so that the one covering the receipts can only come from the
stop):
  - the host's ledgerctl appends receipts; /healthz, /readyz and /metrics
    answer; /proc shows ledgerd as UID 10001 with no capability, no new
    privileges, a seccomp filter and a read-only root;
  - podman stop: exit 0, and `ledgerctl audit` of the volume, run from the
    image, finds the final checkpoint;
  - a new container on the same volume: the log continues at the next seq,
    and after its stop the audit of the volume is clean;
  - the image has no shell: --entrypoint /bin/sh fails.

Mutual TLS: the TLS Secret, the signing key and the configuration
(deploy/kustomize/base/ledgerd.json as is, a policy naming the client)
mounted read-only where the production overlay mounts them, root's and
readable by group 10001 as the kubelet leaves them; --shard-from-hostname
with hostname ledger-0, and the production overlay's --witness-* flags
(its policy naming one witness by its https URL, its CA and client
certificate mounted where the overlay mounts them): ledger-witness from the
same image, with the arguments of deploy/kustomize/witness (HTTPS with
client certificates; /healthz on the plain-HTTP health port, nothing in
plain HTTP on the other). The host's ledgerctl appends with a client
certificate, and without one is refused; the witness cosigns the
checkpoint; /readyz answers over HTTPS.

The containers, volumes and image are named for this run and removed at
the end, even on failure. Prints the image's size and the time taken.
Needs root (rootful podman); exits 77 (skipped) otherwise.
"""
import http.client
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_testlib import ROOT, Certificates, fail, free_port  # noqa: E402

RUN = "ledger-image-test-" + uuid.uuid4().hex[:10]
IMAGE = "localhost/%s:test" % RUN
HARDENED = ["--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", "10001"]
# Plain text to the network, asked for on purpose (the image's own command
# serves loopback alone).
INSECURE_ARGS = ["--data", "/var/lib/ledger", "--listen", "0.0.0.0:7420", "--http-listen", "0.0.0.0:7421",
                 "--insecure"]
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(ROOT, "deploy", "podman", "containers.conf"))
GATEWAY = "spiffe://cluster/ns/team-a/sa/gateway"
WITNESS_HOST = "ledger-witness.witness-auditor"
made = {"container": [], "volume": []}


def podman(*args, check=True, timeout=120, stdin=None):
    r = subprocess.run(("podman",) + args, env=ENV, capture_output=True, text=True, timeout=timeout, input=stdin)
    if check and r.returncode != 0:
        fail("podman %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r


def volume():
    name = "%s-%d" % (RUN, len(made["volume"]))
    made["volume"].append(name)
    podman("volume", "create", name)
    return name


def start(ports, mounts, extra, args, ready=r"(?m)^http on "):
    """A hardened container of the image; returns (name, {container port: host port}) once its
    output matches `ready`."""
    name = "%s-%d" % (RUN, len(made["container"]))
    made["container"].append(name)
    host = {p: free_port() for p in ports}
    cmd = ["run", "-d", "--name", name] + HARDENED + extra
    for p in ports:
        cmd += ["-p", "127.0.0.1:%d:%d" % (host[p], p)]
    for m in mounts:
        cmd += ["-v", m]
    podman(*(cmd + [IMAGE] + args))
    for _ in range(200):
        logs = podman("logs", name).stdout
        if re.search(ready, logs):
            return name, host
        if podman("inspect", "--format", "{{.State.Running}}", name).stdout.strip() != "true":
            break
        time.sleep(0.05)
    fail("%s did not serve: %s" % (name, podman("logs", name).stdout + podman("logs", name).stderr))


def stop(name):
    """podman stop (SIGTERM, up to 30 s), and the exit code must be 0."""
    podman("stop", "-t", "30", name, timeout=60)
    code = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
    if code != "0":
        fail("%s exited %s, want 0: %s" % (name, code, podman("logs", name).stderr))


def ledgerctl(build, *args, check=True):
    r = subprocess.run([os.path.join(build, "cmd", "ledgerctl")] + list(args), capture_output=True, text=True,
                       timeout=120)
    if check and r.returncode != 0:
        fail("ledgerctl %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r


def receipts(path, prefix, steps, team="team-a"):
    """2 receipts a step (a start and its completion), due in 10 minutes, as JSON lines."""
    now = int(time.time() * 1e6)
    with open(path, "w") as f:
        for i in range(steps):
            rid = "%s.step-%d" % (prefix, i)
            common = {"team": team, "run_id": prefix, "step_id": "step-%d" % i, "occurred_at_us": now}
            f.write(json.dumps(dict(common, kind="agent_start", receipt_id=rid + ".start", decision="allow",
                                    timeout_ms=600000)) + "\n")
            f.write(json.dumps(dict(common, kind="agent_exec", receipt_id=rid + ".exec",
                                    start_receipt_id=rid + ".start", status="succeeded")) + "\n")
    return 2 * steps


def append(build, server, path, first_seq, *tls):
    out = ledgerctl(build, "--server", server, *tls, "append", path).stdout.splitlines()
    seqs = [json.loads(line).get("seq") for line in out]
    want = list(range(first_seq, first_seq + len(seqs)))
    if seqs != want or not seqs:
        fail("append to %s: seqs %s, want %s" % (server, seqs, want))


def http_get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(port, name):
    status, body = http_get(port, "/metrics")
    m = re.search(r"(?m)^%s (\S+)$" % name, body)
    if status != 200 or not m:
        fail("/metrics: %d, no %s" % (status, name))
    return m.group(1)


def hardened(name):
    """The container's ledgerd, as the host's /proc sees it: UID and GID
    10001, no capability, no new privileges, a seccomp filter, and a
    read-only root."""
    pid = podman("inspect", "--format", "{{.State.Pid}}", name).stdout.strip()
    with open("/proc/%s/status" % pid) as f:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    got = {k: status[k] for k in ("Uid", "Gid", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs", "Seccomp")}
    want = {"Uid": "10001\t10001\t10001\t10001", "Gid": "10001\t10001\t10001\t10001",
            "CapEff": "0" * 16, "CapPrm": "0" * 16, "CapBnd": "0" * 16, "NoNewPrivs": "1", "Seccomp": "2"}
    if got != want:
        fail("%s: ledgerd runs with %s, want %s" % (name, got, want))
    with open("/proc/%s/mountinfo" % pid) as f:
        root = [line.split() for line in f if line.split()[4] == "/"]
    if len(root) != 1 or "ro" not in root[0][5].split(","):
        fail("%s: the root file system is not read-only: %s" % (name, root))


def audit(vol, entries, checkpoints):
    """ledgerctl audit of the volume, run from the image as the ledger runs."""
    r = podman("run", "--rm", *HARDENED, "-v", vol + ":/var/lib/ledger", "--entrypoint", "/usr/local/bin/ledgerctl",
               IMAGE, "audit", "--data", "/var/lib/ledger", "--json", check=False)
    report = json.loads(r.stdout) if r.returncode in (0, 1) else None
    if r.returncode != 0 or report["ok"] is not True or (report["entries"], report["checkpoints"]) != (entries,
                                                                                                         checkpoints):
        fail("audit of %s: exit %d, %s%s; want ok with %d entries and %d checkpoints" %
             (vol, r.returncode, r.stdout.strip(), r.stderr.strip(), entries, checkpoints))
    return report


def default_command(build, work):
    """The image's own command, its ports published: nothing answers on
    them, the container's log says why and how to give TLS, and inside the
    container the ledger answers on loopback (as deploy/README.md runs it)."""
    name, port = start([7420, 7421], [volume() + ":/var/lib/ledger"], [], [])
    out = podman("logs", name)
    if out.stdout != "listening on 127.0.0.1:7420\nhttp on 127.0.0.1:7421\n":
        fail("the image's command: %r, want loopback alone" % out.stdout)
    warned = [json.loads(line)["msg"] for line in out.stderr.splitlines() if '"event":"plaintext_loopback"' in line]
    if len(warned) != 1 or "a published port does not reach it" not in warned[0]:
        fail("the image's command does not say that it serves loopback alone: %s" % out.stderr)
    r = ledgerctl(build, "--server", "127.0.0.1:%d" % port[7420], "checkpoint", check=False)
    if r.returncode != 1:
        fail("the published gRPC port answered: exit %d, %s%s" % (r.returncode, r.stdout, r.stderr))
    try:
        got = http_get(port[7421], "/readyz")
        fail("the published HTTP port answered: %s" % (got,))
    except (urllib.error.URLError, ConnectionError, http.client.HTTPException) as e:
        http_refused = e
    n = receipts(os.path.join(work, "inside.jsonl"), "run-inside", 2)
    with open(os.path.join(work, "inside.jsonl")) as f:
        out = podman("exec", "-i", name, "/usr/local/bin/ledgerctl", "--server", "127.0.0.1:7420", "append", "-",
                     stdin=f.read()).stdout
    if [json.loads(line).get("seq") for line in out.splitlines()] != list(range(n)):
        fail("inside the container, ledgerctl append on loopback: %r" % out)
    stop(name)
    print("default command: the published ports answer nothing (gRPC: %s; HTTP: %s); ledgerctl inside the "
          "container appended %d receipts on loopback; the log says: %s" % (r.stderr.strip(), http_refused, n,
                                                                           warned[0]))


def plain_text(build, work):
    vol = volume()
    # Plain text published on purpose, with checkpoints at most hourly.
    args = INSECURE_ARGS + ["--checkpoint-interval-ms", "3600000"]
    name, port = start([7420, 7421], [vol + ":/var/lib/ledger"], [], args)
    server = "127.0.0.1:%d" % port[7420]
    first = receipts(os.path.join(work, "first.jsonl"), "run-1", 10)
    append(build, server, os.path.join(work, "first.jsonl"), 0)
    for path, want in (("/healthz", "ok\n"), ("/readyz", "ready\n")):
        got = http_get(port[7421], path)
        if got != (200, want):
            fail("%s: %s, want %s" % (path, got, (200, want)))
    sizes = (metric(port[7421], "ledger_tree_size"), metric(port[7421], "ledger_checkpoint_tree_size"))
    if sizes != (str(first), "0"):
        fail("/metrics before the stop: tree and checkpoint sizes %s, want (%d, 0)" % (sizes, first))
    hardened(name)
    print("plain text: %d receipts appended from the host; /healthz, /readyz, /metrics answer; ledgerd runs as "
          "10001, without capabilities or new privileges, under seccomp, on a read-only root" % first)

    stop(name)
    # The checkpoint of size 0 signed at the first start, and the stop's.
    audit(vol, first, 2)
    print("plain text: stopped with exit 0; the final checkpoint, of size %d, was signed at the stop" % first)

    name, port = start([7420, 7421], [vol + ":/var/lib/ledger"], [], args)
    server = "127.0.0.1:%d" % port[7420]
    if metric(port[7421], "ledger_checkpoint_tree_size") != str(first):
        fail("the new container does not start from the checkpoint of size %d" % first)
    second = receipts(os.path.join(work, "second.jsonl"), "run-2", 5)
    append(build, server, os.path.join(work, "second.jsonl"), first)
    stop(name)
    report = audit(vol, first + second, 3)
    print("plain text: a new container on the volume continued the log at seq %d; audit: %s" % (first, report))

    r = podman("run", "--rm", *HARDENED, "--entrypoint", "/bin/sh", IMAGE, "-c", "true", check=False)
    if r.returncode != 127 or "stat /bin/sh: no such file or directory" not in r.stderr:
        fail("--entrypoint /bin/sh: exit %d, %s; want 127, no /bin/sh" % (r.returncode, r.stderr.strip()))
    print("no shell: --entrypoint /bin/sh exits 127 (%s)" % r.stderr.strip().split(": ")[-1])


def secret_dir(path, files):
    """A directory of files as the kubelet mounts a Secret or ConfigMap with
    fsGroup 10001: root's, readable by the group only."""
    os.makedirs(path)
    for name, source in files.items():
        shutil.copyfile(source, os.path.join(path, name))
        os.chown(os.path.join(path, name), 0, 10001)
        os.chmod(os.path.join(path, name), 0o440)
    os.chown(path, 0, 10001)
    os.chmod(path, 0o750)
    return path


def witness_args():
    """The witness's arguments as deploy/kustomize/witness/deployment.yaml
    has them, with the one log of this test (shard 0)."""
    with open(os.path.join(ROOT, "deploy", "kustomize", "witness", "deployment.yaml")) as f:
        (dep,) = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "Deployment"]
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    pairs = list(zip(args[::2], args[1::2]))
    return [a for p in pairs if p != ("--log", "/etc/witness/logs/shard-1.vkey") and
            p != ("--log", "/etc/witness/logs/shard-2.vkey") for a in p]


def production_witness_args():
    """The --witness-* arguments that the production overlay adds to the
    ledger's."""
    with open(os.path.join(ROOT, "deploy", "kustomize", "overlays", "production", "kustomization.yaml")) as f:
        patches = yaml.safe_load(f)["patches"]
    ops = [op for p in patches for op in yaml.safe_load(p["patch"])]
    return [op["value"] for op in ops if op["path"].endswith("/args/-") and op["value"].startswith("--witness")]


def witness(build, work, log_vkey, certs):
    """ledger-witness from the image, as deploy/kustomize/witness runs it
    (HTTPS with client certificates, /healthz in plain HTTP on port 7481),
    for the log of `log_vkey`: (its vkey, its IP address on the containers'
    network). Its certificate names ledger-witness.witness-auditor, the
    Service of a witness in the namespace witness-auditor."""
    key_dir = os.path.join(work, "witness")
    vkey = subprocess.run([os.path.join(build, "cmd", "ledger-witness"), "vkey", "--data", key_dir, "--name",
                           "witness.auditor.example"], check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(work, "shard-0.vkey"), "w") as f:
        f.write(log_vkey)
    key = secret_dir(os.path.join(work, "witness-key"), {"witness.key": os.path.join(key_dir, "witness.key")})
    logs = secret_dir(os.path.join(work, "witness-logs"), {"shard-0.vkey": os.path.join(work, "shard-0.vkey")})
    cert, cert_key = certs.issue("witness-server", "ledger-witness", "DNS:" + WITNESS_HOST)
    tls = secret_dir(os.path.join(work, "witness-tls"), {"tls.crt": cert, "tls.key": cert_key, "ca.crt": certs.ca})
    # :U makes the volume the container user's, as fsGroup does a claim.
    mounts = [volume() + ":/var/lib/witness:U", key + ":/etc/witness/key:ro", logs + ":/etc/witness/logs:ro",
              tls + ":/etc/witness/tls:ro"]
    name, port = start([7480, 7481], mounts, ["--entrypoint", "/usr/local/bin/ledger-witness"], witness_args(),
                       ready=r"(?m)^health on ")
    hardened(name)
    # The kubelet's probe: plain HTTP on the health port; none on the HTTPS one.
    if http_get(port[7481], "/healthz") != (200, "ok\n"):
        fail("the witness's health port: %s" % (http_get(port[7481], "/healthz"),))
    try:
        fail("the witness's HTTPS port answered plain HTTP: %s" % (http_get(port[7480], "/healthz"),))
    except (urllib.error.URLError, ConnectionError, http.client.HTTPException):
        pass
    address = podman("inspect", "--format", "{{.NetworkSettings.IPAddress}}", name).stdout.strip()
    return vkey, address


def mutual_tls(build, work):
    certs = Certificates(os.path.join(work, "certs"))
    server_pem, server_key = certs.issue("server", "ledger-0", "IP:127.0.0.1,DNS:ledger-0.ledger-headless")
    client_pem, client_key = certs.issue("gateway", "gateway", "URI:" + GATEWAY)
    base = os.path.join(ROOT, "deploy", "kustomize", "base")
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump({"identities": [{"identity": GATEWAY, "roles": ["emitter"], "teams": ["team-a"]}]}, f)
    key = os.path.join(work, "shard-0.key")
    log_vkey = ledgerctl(build, "keygen", "--origin", "ledger.agents.example.com/log/shard-0", "--out", key).stdout
    witness_vkey, witness_ip = witness(build, work, log_vkey, certs)
    policy_file = os.path.join(work, "witnesses.policy")
    with open(policy_file, "w") as f:
        f.write("log %switness auditor %s https://%s:7480\nquorum auditor\n" % (log_vkey, witness_vkey, WITNESS_HOST))
    witness_client = certs.issue("ledger-witness-client", "ledger",
                                 "URI:spiffe://cluster.local/ns/evidence-ledger/sa/ledger")
    config = secret_dir(os.path.join(work, "config"), {"ledgerd.json": os.path.join(base, "ledgerd.json"),
                                                         "policy.json": policy,
                                                         "shard-map.json": os.path.join(base, "shard-map.json")})
    tls = secret_dir(os.path.join(work, "tls"), {"tls.crt": server_pem, "tls.key": server_key, "ca.crt": certs.ca})
    keys = secret_dir(os.path.join(work, "keys"), {"shard-0.key": key})
    witnesses = secret_dir(os.path.join(work, "witnesses"), {"witnesses.policy": policy_file})
    witness_tls = secret_dir(os.path.join(work, "ledger-witness-tls"), {"tls.crt": witness_client[0],
                                                                        "tls.key": witness_client[1],
                                                                        "ca.crt": certs.ca})
    mounts = [volume() + ":/var/lib/ledger", config + ":/etc/ledger/config:ro", tls + ":/etc/ledger/tls:ro",
              keys + ":/etc/ledger/keys:ro", witnesses + ":/etc/ledger/witnesses:ro",
              witness_tls + ":/etc/ledger/witness-tls:ro"]
    # The witness's Service name resolves to its container, as the cluster's DNS would.
    name, port = start([7420, 7421], mounts, ["--hostname", "ledger-0", "--add-host", "%s:%s" % (WITNESS_HOST,
                                                                                                 witness_ip)],
                       ["--config", "/etc/ledger/config/ledgerd.json", "--shard-from-hostname"] +
                       production_witness_args())
    hardened(name)
    listening = [json.loads(line) for line in podman("logs", name).stderr.splitlines()
                 if line.startswith("{") and '"event":"listening"' in line]
    if [(e["origin"], e["transport"]) for e in listening] != [("ledger.agents.example.com/log/shard-0", "mtls")]:
        fail("mutual TLS: the ledger did not start as shard 0 with mtls: %s" % listening)
    server = "127.0.0.1:%d" % port[7420]
    n = receipts(os.path.join(work, "tls.jsonl"), "run-tls", 3)
    append(build, server, os.path.join(work, "tls.jsonl"), 0, "--tls-ca", certs.ca, "--cert", client_pem,
           "--key", client_key)
    tls_flags = ("--tls-ca", certs.ca, "--cert", client_pem, "--key", client_key)
    note = ledgerctl(build, "--server", server, *tls_flags, "checkpoint", "--at-least", str(n), "--cosignatures", "1",
                     "--timeout-ms", "20000").stdout
    if not re.search(r"(?m)^\u2014 witness\.auditor\.example ", note):
        fail("mutual TLS: the checkpoint is not cosigned by the witness: %r" % note)
    https = ssl.create_default_context(cafile=certs.ca)
    https.load_cert_chain(client_pem, client_key)
    with urllib.request.urlopen("https://127.0.0.1:%d/readyz" % port[7421], timeout=10, context=https) as got:
        if (got.status, got.read()) != (200, b"ready\n"):
            fail("mutual TLS: https /readyz: %d" % got.status)
    r = ledgerctl(build, "--server", server, "--tls-ca", certs.ca, "checkpoint", check=False)
    # A configuration error: exit 2, saying what to give.
    if r.returncode != 2 or "wants a client certificate: give --cert and --key" not in r.stderr:
        fail("mutual TLS: a client without a certificate: exit %d, %s; want exit 2" % (r.returncode, r.stderr))
    stop(name)
    stop(made["container"][-2])  # the witness
    print("mutual TLS: the witness, from the image over HTTPS as %s, cosigned checkpoint %s; its health port "
          "answers plain HTTP, its HTTPS port does not" % (WITNESS_HOST, note.split("\n")[1]))
    print("mutual TLS: the Secret, key and configuration mounted read-only as in production; %d receipts "
          "appended with a client certificate, /readyz over HTTPS; refused without one (%s)" % (n, r.stderr.strip()))


def cleanup():
    for name in made["container"]:
        podman("rm", "-f", "-v", "-t", "0", name, check=False)  # -v: anonymous volumes too
    for name in made["volume"]:
        podman("volume", "rm", "-f", name, check=False)
    podman("rmi", "-f", IMAGE, check=False)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    build = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        print("SKIP: rootful podman needs root")
        sys.exit(77)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    began = time.monotonic()
    work = tempfile.mkdtemp()
    try:
        r = subprocess.run([os.path.join(ROOT, "scripts", "build-image.sh"), "--prebuilt", build, IMAGE], env=ENV,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            fail("build-image.sh: exit %d: %s%s" % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        print("%s (built in %.1f s)" % (r.stdout.strip().splitlines()[-1], time.monotonic() - began))
        default_command(build, work)
        plain_text(build, work)
        mutual_tls(build, work)
    finally:
        cleanup()
        shutil.rmtree(work, ignore_errors=True)
    print("PASS (%.1f s)" % (time.monotonic() - began))


if __name__ == "__main__":
    main()
