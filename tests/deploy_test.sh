#!/usr/bin/env bash
# The deployment: the image's structure, its runtime file system, and the
# Kubernetes manifests.
#   - deploy/Dockerfile: a Debian 12 build stage that runs scripts/setup.sh
#     (the README's script) with a ccache cache mount, or a prebuilt tree
#     (runtime.tar), then one runtime stage from scratch that runs no
#     command, as UID 10001, with /var/lib/ledger as its volume, whose own
#     command serves plain text on loopback alone, never --insecure
#     (tests/image_test.py builds and runs it);
#   - deploy/collect-runtime.sh gathers ledgerd, ledgerctl, ledger-verify and their
#     libraries, and no shell; as root, ledgerd then starts from that tree
#     alone (chroot, UID 10001) and serves, and the Dockerfile's ENTRYPOINT
#     and CMD as they are, in a network namespace of their own, listen on
#     127.0.0.1:7420 and :7421 alone and say so in the log;
#   - the local overlay's ledger, started from that tree as its pod would
#     be with deploy/local-tls.sh's certificates (as root), serves mutual
#     TLS alone under the overlay's policy;
#   - deploy/check_manifests.py passes on every overlay, the witness and the
#     monitor as kubectl kustomize renders them, and fails, naming each
#     violation, on an overlay that breaks the hardening, on plain text off
#     loopback (the local overlay and the witness as they were, with
#     insecure; --insecure on the command line; a configuration without
#     TLS), on a witness and on a monitor that break their properties
#     (skipped when kubectl is missing).
# Usage: deploy_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid"; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1. The Dockerfile's structure.
/usr/bin/python3 - "$root/deploy/Dockerfile" <<'PY' || exit 1
import json, re, sys
lines = [l.strip() for l in open(sys.argv[1]) if l.strip() and not l.lstrip().startswith("#")]
text = "\n".join(lines).replace("\\\n", " ")
assert text.startswith("ARG RUNTIME_FROM=build\n"), "the compiled tree is not the default"
stages = re.split(r"(?m)^FROM ", text)[1:]
assert len(stages) == 4, "want build, prebuilt, tree and runtime stages, found %d" % len(stages)
build, prebuilt, tree, runtime = stages
assert build.startswith("debian:12 AS build"), "the build stage is not Debian 12"
assert "\nRUN scripts/setup.sh packages\n" in build, "the build stage does not install with scripts/setup.sh"
ccache = r"(?m)^RUN --mount=type=cache,\S*target=/ccache\s+CCACHE_DIR=/ccache scripts/setup.sh build "
assert re.search(ccache, build), "the build stage does not build with scripts/setup.sh and a ccache cache mount"
assert "deploy/collect-runtime.sh build /runtime" in build, "the build stage does not collect /runtime"
assert prebuilt == "scratch AS prebuilt\nADD runtime.tar /runtime/\n", "the prebuilt stage is not runtime.tar alone"
assert tree.startswith("${RUNTIME_FROM} AS tree"), "the tree stage does not follow RUNTIME_FROM"
assert runtime.startswith("scratch\nCOPY --from=tree /runtime/ /\n"), "the runtime stage is not the tree from scratch"
assert "\nRUN " not in runtime, "the runtime stage runs a command (it has no shell)"
assert re.search(r"(?m)^USER 10001:10001$", runtime), "the runtime does not run as UID 10001"
assert 'VOLUME ["/var/lib/ledger"]' in runtime, "no data volume"
entry = re.search(r"(?m)^ENTRYPOINT (.*)$", runtime).group(1)
assert json.loads(entry) == ["/usr/local/bin/ledgerd"], "ENTRYPOINT is not exec form of ledgerd"
cmd = json.loads(re.search(r"(?m)^CMD (.*)$", runtime).group(1))
flags = dict(zip(cmd[::2], cmd[1::2]))
loopback = lambda a: a.rsplit(":", 1)[0] in ("localhost", "[::1]") or a.startswith("127.")
assert "--insecure" not in cmd and not any(f.startswith("--insecure=") for f in cmd), \
    "the default command serves plain text to the network (--insecure): %s" % cmd
assert all(loopback(flags[f]) for f in ("--listen", "--http-listen", "--otlp-listen") if f in flags), \
    "the default command listens off loopback: %s" % cmd
print("Dockerfile: a compiled (setup.sh, ccache) or prebuilt tree; one scratch runtime as 10001, no shell; "
      "the default command on loopback: %s" % " ".join(cmd))
PY

# 2. The runtime tree.
"$root/deploy/collect-runtime.sh" "$build" "$work/rootfs"
for f in usr/local/bin/ledgerd usr/local/bin/ledgerctl usr/local/bin/ledger-verify usr/local/bin/ledger-witness \
  usr/local/bin/ledger-monitor etc/passwd; do
  [ -f "$work/rootfs/$f" ] || fail "runtime: no $f"
done
if find "$work/rootfs" -name sh -o -name bash -o -name busybox | grep -q .; then fail "runtime: a shell"; fi
echo "runtime: $(find "$work/rootfs" -type f | wc -l) files, $(du -sm "$work/rootfs" | cut -f1) MB, no shell"
if [ "$(id -u)" = 0 ]; then
  install -d -o 10001 -g 10001 -m 0700 "$work/rootfs/var/lib/ledger"
  chroot --userspec=10001:10001 "$work/rootfs" /usr/local/bin/ledgerd --data /var/lib/ledger \
    --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 > "$work/ledgerd.out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q '^listening on ' "$work/ledgerd.out" && break; sleep 0.05; done
  grep -q '^listening on ' "$work/ledgerd.out" || { cat "$work/ledgerd.out"; fail "ledgerd did not start from the runtime tree"; }
  [ -f "$work/rootfs/var/lib/ledger/signing.key" ] || fail "no signing key in the data directory"
  [ -d "$work/rootfs/var/lib/ledger/tmp" ] || fail "packs are not staged in the data directory"
  kill -TERM "$pid"; wait "$pid"; pid=""
  # The image's own command (ENTRYPOINT and CMD as the Dockerfile has them),
  # in a network namespace of its own as in a container: it serves loopback
  # alone and says so.
  mapfile -t image_cmd < <(/usr/bin/python3 -c 'import json, re, sys
text = open(sys.argv[1]).read()
for m in ("ENTRYPOINT", "CMD"):
    print("\n".join(json.loads(re.findall(r"(?m)^%s (.*)$" % m, text)[-1])))' "$root/deploy/Dockerfile")
  unshare --net -- sh -c 'ip link set lo up && exec chroot --userspec=10001:10001 "$0" "$@"' "$work/rootfs" \
    "${image_cmd[@]}" > "$work/default.out" 2> "$work/default.err" &
  pid=$!
  for _ in $(seq 100); do grep -q '^http on ' "$work/default.out" && break; sleep 0.05; done
  want=$'listening on 127.0.0.1:7420\nhttp on 127.0.0.1:7421'
  [ "$(cat "$work/default.out")" = "$want" ] || { cat "$work/default.out" "$work/default.err"; fail "the image's command: want $want"; }
  # (gRPC binds an IPv6 socket to the v4-mapped address: [::ffff:127.0.0.1].)
  sockets=$(nsenter --net="/proc/$pid/ns/net" ss -ltnH | awk '{print $4}' | sed 's/^\[::ffff:\(.*\)\]/\1/' |
    sort | paste -sd' ')
  [ "$sockets" = "127.0.0.1:7420 127.0.0.1:7421" ] || fail "the image's command listens on $sockets"
  grep -qF '"event":"plaintext_loopback","msg":"plain text on loopback only (127.0.0.1:7420, 127.0.0.1:7421): every caller is '"'local'"' with role admin, and only this host can connect (in a container, only the container itself: a published port does not reach it); to serve the network give --tls-cert, --tls-key, --client-ca and --policy"' "$work/default.err" ||
    { cat "$work/default.err"; fail "the image's command does not say that it serves loopback alone"; }
  kill -TERM "$pid"; wait "$pid"; pid=""
  echo "runtime: the image's command (${image_cmd[*]}) serves 127.0.0.1:7420 and :7421 alone, and says how to give TLS"
  chroot --userspec=10001:10001 "$work/rootfs" /usr/local/bin/ledger-verify --help | grep -q '^usage: ledger-verify PACK' ||
    fail "ledger-verify does not run from the runtime tree"
  chroot --userspec=10001:10001 "$work/rootfs" /usr/local/bin/ledger-witness vkey --data /var/lib/ledger/witness \
    --name witness.example | grep -q '^witness.example+' || fail "ledger-witness does not run from the runtime tree"
  chroot --userspec=10001:10001 "$work/rootfs" /usr/local/bin/ledger-monitor vkey --data /var/lib/ledger/monitor \
    --name monitor.example | grep -q '^monitor.example+' || fail "ledger-monitor does not run from the runtime tree"
  echo "runtime: ledgerd served from the tree alone, as 10001, writing only /var/lib/ledger"
else
  echo "runtime: not root, the chroot start is skipped"
fi

# 2b. The local overlay's ledger as its pod runs it, from the runtime tree:
# the StatefulSet's arguments, the overlay's ledgerd.json, policy.json and
# shard-map.json where the ConfigMap is mounted, deploy/local-tls.sh's
# certificates where the Secret ledger-tls is (root's, readable by group
# 10001, as the kubelet leaves them), hostname ledger-0, a network of its
# own. It serves mutual TLS alone, with the policy those certificates match.
overlay="$root/deploy/kustomize/overlays/local"
"$root/deploy/local-tls.sh" "$work/local-tls" > /dev/null || fail "deploy/local-tls.sh"
/usr/bin/python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
  "$overlay/policy.json" "$work/local-tls/policy.json" ||
  fail "the local overlay's policy.json names other identities than deploy/local-tls.sh's certificates"
if [ "$(id -u)" = 0 ]; then
  etc="$work/rootfs/etc/ledger"
  install -d -o 0 -g 10001 -m 0750 "$etc/config" "$etc/tls"
  install -o 0 -g 10001 -m 0440 "$overlay/ledgerd.json" "$overlay/policy.json" "$overlay/shard-map.json" "$etc/config/"
  install -o 0 -g 10001 -m 0440 -T "$work/local-tls/server.pem" "$etc/tls/tls.crt"
  install -o 0 -g 10001 -m 0440 -T "$work/local-tls/server.key" "$etc/tls/tls.key"
  install -o 0 -g 10001 -m 0440 -T "$work/local-tls/ca.pem" "$etc/tls/ca.crt"
  rm -rf "$work/rootfs/var/lib/ledger" && install -d -o 10001 -g 10001 -m 0700 "$work/rootfs/var/lib/ledger"
  mapfile -t pod_args < <(/usr/bin/python3 -c 'import sys, yaml
(c,) = yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"]
print("\n".join(c["args"]))' "$root/deploy/kustomize/base/statefulset.yaml")
  unshare --net --uts -- sh -c 'hostname ledger-0 && ip link set lo up && exec chroot --userspec=10001:10001 "$0" "$@"' \
    "$work/rootfs" /usr/local/bin/ledgerd "${pod_args[@]}" > "$work/local.out" 2> "$work/local.err" &
  pid=$!
  for _ in $(seq 200); do grep -q '^grpc health on ' "$work/local.out" && break; sleep 0.05; done
  grep -q '^grpc health on ' "$work/local.out" || { cat "$work/local.err"; fail "the local overlay's ledger did not start"; }
  grep -q '"event":"listening".*"origin":"ledger.local/log/shard-0".*"transport":"mtls"' "$work/local.err" ||
    { cat "$work/local.err"; fail "the local overlay's ledger is not shard 0 over mutual TLS"; }
  in_pod() { nsenter --net="/proc/$pid/ns/net" "$@"; }
  ctl() {  # ctl CLIENT ARGS...: ledgerctl in the pod's network with CLIENT's certificate
    local c=$1
    shift
    in_pod "$build/cmd/ledgerctl" --server 127.0.0.1:7420 --tls-ca "$work/local-tls/ca.pem" \
      --cert "$work/local-tls/$c.pem" --key "$work/local-tls/$c.key" "$@"
  }
  receipt() {
    printf '{"team":"%s","run_id":"r1","step_id":"s1","occurred_at_us":%d,"kind":"agent_start","receipt_id":"%s.start","decision":"allow","timeout_ms":600000}\n' \
      "$1" "$(date +%s%6N)" "$1"
  }
  receipt team-a | ctl gateway append - > "$work/append.out" 2>&1 || { cat "$work/append.out"; fail "gateway: append to team-a"; }
  grep -q '"seq":0' "$work/append.out" || { cat "$work/append.out"; fail "gateway: append to team-a: no seq 0"; }
  if receipt team-b | ctl gateway append - > "$work/denied.out" 2>&1 || ! grep -q 'PERMISSION_DENIED' "$work/denied.out"; then
    cat "$work/denied.out"; fail "gateway: an append to team-b was not refused"
  fi
  ctl admin checkpoint > /dev/null 2>&1 || fail "admin: checkpoint"
  if in_pod "$build/cmd/ledgerctl" --server 127.0.0.1:7420 checkpoint > "$work/plain.out" 2>&1; then
    fail "the local overlay's ledger answered plain text"
  fi
  kill -TERM "$pid"; wait "$pid"; pid=""
  echo "local overlay: ledgerd serves mutual TLS alone with deploy/local-tls.sh's certificates; gateway appends" \
    "to team-a, is refused team-b ($(grep -o 'PERMISSION_DENIED[^"]*' "$work/denied.out" | head -1)); plain text" \
    "refused ($(tail -1 "$work/plain.out"))"
else
  echo "local overlay: not root, its start is skipped"
fi

# 3. The manifests.
if ! command -v kubectl > /dev/null; then
  echo "manifests: kubectl is not installed; skipped"
  exit 0
fi
/usr/bin/python3 "$root/deploy/check_manifests.py"
mkdir -p "$work/bad"
cp -r "$root/deploy/kustomize/base" "$work/base"
cat > "$work/bad/kustomization.yaml" <<'YAML'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base]
patches:
  - target: {kind: StatefulSet, name: ledger}
    patch: |-
      - {op: replace, path: /spec/template/spec/containers/0/securityContext/readOnlyRootFilesystem, value: false}
      - {op: add, path: /spec/template/spec/containers/0/securityContext/capabilities/add, value: [NET_ADMIN]}
      - {op: replace, path: /spec/template/spec/automountServiceAccountToken, value: true}
      - {op: remove, path: /spec/template/spec/containers/0/livenessProbe}
  - target: {kind: NetworkPolicy, name: ledger-ingress}
    patch: |-
      - {op: add, path: /spec/ingress/0/from/-, value: {ipBlock: {cidr: 0.0.0.0/0}}}
YAML
if /usr/bin/python3 "$root/deploy/check_manifests.py" "$work/bad" > "$work/bad.out"; then
  cat "$work/bad.out"; fail "a broken overlay passed"
fi
for want in "readOnlyRootFilesystem is not true" "capabilities must drop ALL and add none" \
            "automountServiceAccountToken is not false" "livenessProbe is not a gRPC probe" \
            "NetworkPolicy ledger-ingress admits {'ipBlock'"; do
  grep -qF "$want" "$work/bad.out" || { cat "$work/bad.out"; fail "not reported: $want"; }
done
echo "manifests: a broken overlay fails with each violation named"
# Expects check_manifests.py on this kustomization to fail, naming each of
# the violations given (whole lines).
refused_manifests() {
  local dir=$1
  shift
  if /usr/bin/python3 "$root/deploy/check_manifests.py" "$dir" > "$work/refused.out"; then
    cat "$work/refused.out"; fail "$(basename "$dir") passed"
  fi
  for want in "$@"; do
    grep -qxF "  $want" "$work/refused.out" || { cat "$work/refused.out"; fail "not reported: $want"; }
  done
  echo "manifests: $(basename "$dir") fails: $1"
}
admin="every caller is 'local' with role admin: give --tls-cert, --tls-key, --client-ca and --policy instead"
# The local overlay as it was, plain text inside the cluster.
mkdir -p "$work/plain-local"
cp "$root/deploy/kustomize/overlays/local/shard-map.json" "$work/plain-local/"
cat > "$work/plain-local/ledgerd.json" <<'JSON'
{"data": "/var/lib/ledger", "listen": "0.0.0.0:7420", "http-listen": "0.0.0.0:7421", "grpc-health-listen": "0.0.0.0:7422",
 "insecure": true, "origin": "ledger.local/log", "unknown-grace-ms": 5000}
JSON
cat > "$work/plain-local/kustomization.yaml" <<'YAML'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base]
configMapGenerator:
  - {name: ledger-config, behavior: merge, files: [ledgerd.json, shard-map.json]}
patches:
  - target: {kind: StatefulSet, name: ledger}
    patch: |-
      - {op: replace, path: /spec/replicas, value: 1}
      - {op: remove, path: /spec/template/spec/containers/0/volumeMounts/3}
      - {op: remove, path: /spec/template/spec/containers/0/volumeMounts/2}
      - {op: remove, path: /spec/template/spec/volumes/2}
      - {op: remove, path: /spec/template/spec/volumes/1}
YAML
refused_manifests "$work/plain-local" \
  "StatefulSet ledger, container ledgerd: \"insecure\": true in /etc/ledger/config/ledgerd.json serves plain text on 0.0.0.0:7420, 0.0.0.0:7421, where $admin"
# The ha overlay with one node, a password in --replication's URI and no
# anti-affinity: a shard that does not survive a node.
mkdir -p "$work/bad-ha"
cp "$root/deploy/kustomize/overlays/ha/"*.yaml "$root/deploy/kustomize/overlays/ha/shard-map.json" "$work/bad-ha/"
sed -i 's|../../base|../base|' "$work/bad-ha/kustomization.yaml"
cat >> "$work/bad-ha/kustomization.yaml" <<'YAML'
  - target: {kind: StatefulSet, name: ledger}
    patch: |-
      - {op: replace, path: /spec/replicas, value: 1}
      - {op: replace, path: /spec/template/spec/containers/0/args/5, value: "--replication=postgresql://ledger:hunter2@ledger-db-rw:5432/ledger"}
      - {op: remove, path: /spec/template/spec/affinity}
YAML
refused_manifests "$work/bad-ha" \
  "--replication with 1 replica: a shard survives a node only with two" \
  "--replication carries a password: give it with --replication-password-file from a Secret" \
  "the nodes of a replicated shard may share a machine (no required pod anti-affinity)"
# --insecure on the command line over a configuration with TLS (the command line wins).
mkdir -p "$work/insecure-arg"
cat > "$work/insecure-arg/kustomization.yaml" <<'YAML'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base]
patches:
  - target: {kind: StatefulSet, name: ledger}
    patch: |-
      - {op: replace, path: /spec/replicas, value: 3}
      - {op: add, path: /spec/template/spec/containers/0/args/-, value: --insecure}
      - {op: add, path: /spec/template/spec/containers/0/args/-, value: --otlp-listen=0.0.0.0:4318}
YAML
refused_manifests "$work/insecure-arg" \
  "StatefulSet ledger, container ledgerd: --insecure serves plain text on 0.0.0.0:7420, 0.0.0.0:7421, 0.0.0.0:4318, where $admin"
# No TLS in the configuration, off loopback (ledgerd would not start).
mkdir -p "$work/no-tls"
/usr/bin/python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
for k in ("tls-cert", "tls-key", "client-ca", "policy"):
    del c[k]
json.dump(c, open(sys.argv[2], "w"))' "$root/deploy/kustomize/base/ledgerd.json" "$work/no-tls/ledgerd.json"
cat > "$work/no-tls/kustomization.yaml" <<'YAML'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base]
configMapGenerator:
  - {name: ledger-config, behavior: merge, files: [ledgerd.json]}
patches:
  - target: {kind: StatefulSet, name: ledger}
    patch: |-
      - {op: replace, path: /spec/replicas, value: 3}
YAML
refused_manifests "$work/no-tls" \
  "StatefulSet ledger, container ledgerd: plain text on 0.0.0.0:7420, 0.0.0.0:7421 (no --tls-cert, --tls-key, --client-ca, --policy), where $admin" \
  "--tls-cert (not given), --tls-key (not given), --client-ca (not given): not from the Secret ledger-tls" \
  "--policy (not given) is not a file of a mounted ConfigMap"
# The witness as it was (plain HTTP, --insecure, probes on that port), and a
# witness that breaks its other properties.
cp -r "$root/deploy/kustomize/witness" "$work/plain-witness"
cp -r "$root/deploy/kustomize/witness" "$work/bad-witness"
/usr/bin/python3 -c 'import sys, yaml
def edit(path, change):
    docs = list(yaml.safe_load_all(open(path)))
    for d in docs:
        if d["kind"] == "Deployment":
            change(d["spec"], d["spec"]["template"]["spec"]["containers"][0])
    yaml.safe_dump_all(docs, open(path, "w"))
def plain(spec, c):
    c["args"] = ["--data", "/var/lib/witness", "--key", "/etc/witness/key/witness.key", "--listen", "0.0.0.0:7480",
                 "--insecure", "--log", "/etc/witness/logs/shard-0.vkey"]
    c["ports"] = [{"name": "http", "containerPort": 7480}]
    for probe in ("livenessProbe", "readinessProbe"):
        c[probe]["httpGet"]["port"] = "http"
    c["volumeMounts"] = [m for m in c["volumeMounts"] if m["name"] != "tls"]
def broken(spec, c):
    spec["replicas"], spec["strategy"] = 2, {"type": "RollingUpdate"}
    c["livenessProbe"]["httpGet"]["port"] = "https"
    c["securityContext"]["readOnlyRootFilesystem"] = False
edit(sys.argv[1] + "/deployment.yaml", plain)
edit(sys.argv[2] + "/deployment.yaml", broken)' "$work/plain-witness" "$work/bad-witness"
sed -i 's/kubernetes.io\/metadata.name: auditors/kubernetes.io\/metadata.name: agent-workers/' \
  "$work/bad-witness/networkpolicy.yaml"
refused_manifests "$work/plain-witness" \
  "Deployment ledger-witness, container ledger-witness: --insecure serves plain text on 0.0.0.0:7480, where anyone who reaches it submits and spends its per-address budget unidentified: give --tls-cert, --tls-key and --client-ca instead" \
  "container ledger-witness: --tls-cert (not given), --tls-key (not given), --client-ca (not given): not from the Secret witness-tls" \
  "container ledger-witness: livenessProbe is not on the plain-HTTP health port (--health-listen): the kubelet presents no client certificate"
refused_manifests "$work/bad-witness" \
  "witness: not one replica replaced with Recreate (two could cosign both sides of a fork)" \
  "container ledger-witness: livenessProbe is not on the plain-HTTP health port (--health-listen): the kubelet presents no client certificate" \
  "container ledger-witness: readOnlyRootFilesystem is not true" \
  "NetworkPolicy witness-ingress admits {'namespaceSelector': {'matchLabels': {'kubernetes.io/metadata.name': 'agent-workers'}}}"
# A monitor that serves plain HTTP off loopback, reads the log in plain
# text, runs two replicas with HTTP probes on its certificate-asking port,
# and admits the workers' namespace.
cp -r "$root/deploy/kustomize/monitor" "$work/bad-monitor"
/usr/bin/python3 -c 'import sys, yaml
path = sys.argv[1] + "/deployment.yaml"
docs = list(yaml.safe_load_all(open(path)))
for d in docs:
    if d["kind"] == "Deployment":
        spec, c = d["spec"], d["spec"]["template"]["spec"]["containers"][0]
        spec["replicas"], spec["strategy"] = 2, {"type": "RollingUpdate"}
        args = c["args"]
        cut = args.index("--tls-cert")
        c["args"] = args[:cut] + ["--insecure"]
        c["args"][c["args"].index("--log") + 1] = "http://ledger-0.ledger-headless.evidence-ledger:7421"
        c["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": "https"}}
yaml.safe_dump_all(docs, open(path, "w"))' "$work/bad-monitor"
sed -i 's/kubernetes.io\/metadata.name: evidence-ledger$/kubernetes.io\/metadata.name: agent-workers/' \
  "$work/bad-monitor/networkpolicy.yaml"
refused_manifests "$work/bad-monitor" \
  "Deployment ledger-monitor, container ledger-monitor: --insecure serves plain text on 0.0.0.0:7490, where anyone who reaches it makes it replay the log unidentified: give --tls-cert, --tls-key and --client-ca instead" \
  "monitor: not one replica replaced with Recreate (one process holds its replay and record)" \
  "container ledger-monitor: --tls-cert (not given), --tls-key (not given), --client-ca (not given): not from the Secret monitor-tls" \
  "container ledger-monitor: --log is not https:// (it reads the tiles as the auditor's identity)" \
  "container ledger-monitor: livenessProbe is an HTTP probe on a port that asks a client certificate the kubelet does not have" \
  "NetworkPolicy monitor-ingress admits {'namespaceSelector': {'matchLabels': {'kubernetes.io/metadata.name': 'agent-workers'}}}"

echo "PASS"
