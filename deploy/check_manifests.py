#!/usr/bin/python3
"""Checks what the Kubernetes manifests must hold, on each kustomization as
`kubectl kustomize` renders it: the ledger's overlays, the witness and the
monitor.

Usage: deploy/check_manifests.py [KUSTOMIZATION_DIR...]
       (default: every overlay, deploy/kustomize/witness and deploy/kustomize/monitor)
Exit 0 when every one holds, 1 with each violation listed, 77 when kubectl
is not installed (nothing could be rendered).

Everywhere: nothing serves plain text off loopback. ledgerd's settings
(its --config file, from the ConfigMap it is mounted from, then its
arguments, which win) must not set insecure, and must give tls-cert,
tls-key, client-ca and policy when it listens off loopback; ledger-witness
and ledger-monitor must not be given --insecure, and must be given
--tls-cert, --tls-key and --client-ca when they listen off loopback. The health ports
(--grpc-health-listen, --health-listen) serve probes alone and are plain
text by design.

The ledger: a StatefulSet with a volume claim per replica, served by a
headless Service, and a client Service; gRPC liveness and readiness probes;
the policy from a ConfigMap, TLS from the Secret ledger-tls, the signing key
from the Secret ledger-signing-keys when one is given (always in
production); the witnesses' CA and client certificate from a Secret when it
submits to witnesses; a PodDisruptionBudget; requests and limits;
RuntimeDefault seccomp, every capability dropped, no privilege escalation, a
read-only root file system with the data volume the only writable mount, no
service-account token; a default-deny NetworkPolicy and ingress only from
the gateway, worker and auditor namespaces.

The witness: one replica replaced with Recreate, its record on a claim, its
key from the Secret witness-key and its TLS from the Secret witness-tls,
probes on its plain-HTTP health port (the kubelet presents no
certificate), the same hardening, a default-deny NetworkPolicy and ingress
only from the ledger's and the auditors' namespaces.

The monitor: one replica replaced with Recreate, its replay and record on a
claim, its key from the Secret monitor-key, its TLS from monitor-tls, the
auditor's identity it reads the ledger's tiles with (over https://) from
monitor-reader, TCP probes (its port asks a client certificate), the same
hardening, a default-deny NetworkPolicy and ingress only from the ledger's
namespace.
"""
import glob
import json
import re
import os
import shutil
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ALLOWED_NAMESPACES = {"agent-gateway", "agent-workers", "auditors"}
WITNESS_NAMESPACES = {"evidence-ledger", "auditors"}
LEDGERD, WITNESS = "/usr/local/bin/ledgerd", "/usr/local/bin/ledger-witness"
MONITOR = "/usr/local/bin/ledger-monitor"
MONITOR_NAMESPACES = {"evidence-ledger"}
# ledgerd's defaults where its settings name no address.
LEDGERD_LISTEN = {"listen": "127.0.0.1:7420", "http-listen": "127.0.0.1:7421", "otlp-listen": ""}
LEDGERD_TLS = ("tls-cert", "tls-key", "client-ca", "policy")
WITNESS_TLS = ("tls-cert", "tls-key", "client-ca")
MONITOR_READER = ("log-tls-ca", "log-tls-cert", "log-tls-key")


def render(kustomization):
    out = subprocess.run(["kubectl", "kustomize", kustomization], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("kubectl kustomize %s: %s" % (kustomization, out.stderr))
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def is_loopback(address):
    host = address.rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def parse_args(args):
    """A program's --name=value, --name value and bare --name (true) arguments, as a dict."""
    out, i = {}, 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and "=" in a:
            name, value = a[2:].split("=", 1)
        elif a.startswith("--") and i + 1 < len(args) and not args[i + 1].startswith("--"):
            name, value = a[2:], args[i + 1]
            i += 1
        elif a.startswith("--"):
            name, value = a[2:], True
        else:
            name, value = None, None
        if name:
            out[name] = value
        i += 1
    return out


def truthy(value):
    return value is True or str(value).lower() in ("true", "1", "yes")


def mounted_file(path, container, volumes, maps):
    """The text of `path` in `container` when a rendered ConfigMap provides it, else None."""
    for m in container.get("volumeMounts", []):
        if path.startswith(m["mountPath"] + "/"):
            source = volumes.get(m["name"], {}).get("configMap", {}).get("name")
            return maps.get(source, {}).get("data", {}).get(path[len(m["mountPath"]) + 1:])
    return None


def secret_of(path, container, volumes):
    """The Secret that provides `path` in `container`, else None."""
    for m in container.get("volumeMounts", []):
        if path and path.startswith(m["mountPath"] + "/"):
            return volumes.get(m["name"], {}).get("secret", {}).get("secretName")
    return None


def not_from_secrets(where, wanted, settings, container, volumes):
    """For each Secret of `wanted` ((setting, Secret) pairs), one violation naming the settings it does not
    provide."""
    by_secret = {}
    for flag, secret in wanted:
        if secret_of(settings.get(flag, ""), container, volumes) != secret:
            by_secret.setdefault(secret, []).append("--%s (%s)" % (flag, settings.get(flag) or "not given"))
    return ["%s%s: not from the Secret %s" % (where, ", ".join(flags), secret) for secret, flags in by_secret.items()]


def program(container):
    command = container.get("command") or [LEDGERD]  # the image's ENTRYPOINT
    return command[0]


def ledgerd_settings(container, volumes, maps):
    """ledgerd's settings in `container` (its --config file, then its arguments: the command line wins), and
    where each came from."""
    args = parse_args(container.get("args", []))
    settings, origin = {}, {}
    if "config" in args:
        text = mounted_file(args["config"], container, volumes, maps)
        settings = json.loads(text) if text else {}
        origin = {k: '"%s": %s in %s' % (k, json.dumps(v), args["config"]) for k, v in settings.items()}
    settings.update(args)
    origin.update({k: "--" + k for k in args})
    return settings, origin


def plain_text(where, settings, origin, tls, listens, who):
    """Violations of "no plain text off loopback" for one program's `settings` (`origin`: where each came
    from); `tls` the settings that give TLS, `listens` the addresses it serves with their defaults."""
    off = [settings.get(f, default) for f, default in listens.items()]
    off = ", ".join(a for a in off if a and not is_loopback(a)) or "loopback"
    give = "give %s and --%s instead" % (", ".join("--" + f for f in tls[:-1]), tls[-1])
    if truthy(settings.get("insecure", False)):
        return ["%s: %s serves plain text on %s, where %s: %s" % (where, origin["insecure"], off, who, give)]
    missing = [f for f in tls if not settings.get(f)]
    if off != "loopback" and missing:
        return ["%s: plain text on %s (no %s), where %s: %s" %
                (where, off, ", ".join("--" + f for f in missing), who, give)]
    return []


def check_plain_text(docs):
    """Every container of every workload: ledgerd and ledger-witness serve nothing in plain text off loopback."""
    maps = {m["metadata"]["name"]: m for m in docs if m["kind"] == "ConfigMap"}
    bad = []
    for d in docs:
        pod = d.get("spec", {}).get("template", {}).get("spec")
        if not pod:
            continue
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for c in pod.get("containers", []):
            where = "%s %s, container %s" % (d["kind"], d["metadata"]["name"], c["name"])
            if program(c) == LEDGERD:
                settings, origin = ledgerd_settings(c, volumes, maps)
                bad += plain_text(where, settings, origin, LEDGERD_TLS, LEDGERD_LISTEN,
                                  "every caller is 'local' with role admin")
            elif program(c) == WITNESS:
                args = parse_args(c.get("args", []))
                bad += plain_text(where, args, {k: "--" + k for k in args}, WITNESS_TLS, {"listen": "127.0.0.1:7480"},
                                  "anyone who reaches it submits and spends its per-address budget unidentified")
            elif program(c) == MONITOR:
                args = parse_args(c.get("args", []))
                bad += plain_text(where, args, {k: "--" + k for k in args}, WITNESS_TLS, {"listen": "127.0.0.1:7490"},
                                  "anyone who reaches it makes it replay the log unidentified")
    return bad


def check_hardening(pod):
    """The pod's and its containers' security settings, requests and limits, and read-only mounts but data."""
    bad = []
    if pod.get("automountServiceAccountToken") is not False:
        bad.append("pod: automountServiceAccountToken is not false")
    psc = pod.get("securityContext", {})
    if psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        bad.append("pod: seccompProfile is not RuntimeDefault")
    if psc.get("runAsNonRoot") is not True:
        bad.append("pod: runAsNonRoot is not true")
    for c in pod["containers"]:
        name = "container %s" % c["name"]
        sc = c.get("securityContext", {})
        if sc.get("allowPrivilegeEscalation") is not False:
            bad.append(name + ": allowPrivilegeEscalation is not false")
        if sc.get("privileged"):
            bad.append(name + ": privileged")
        if sc.get("readOnlyRootFilesystem") is not True:
            bad.append(name + ": readOnlyRootFilesystem is not true")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []) or caps.get("add"):
            bad.append(name + ": capabilities must drop ALL and add none")
        res = c.get("resources", {})
        for kind in ("requests", "limits"):
            if not {"cpu", "memory"} <= set(res.get(kind, {})):
                bad.append(name + ": resources.%s must set cpu and memory" % kind)
        for m in c.get("volumeMounts", []):
            if m["name"] != "data" and not m.get("readOnly"):
                bad.append(name + ": mount %s is writable (only the data volume may be)" % m["name"])
    return bad


def check_network(by_kind, allowed):
    """A default deny, and ingress only from the `allowed` namespaces."""
    bad = []
    policies = by_kind.get("NetworkPolicy", [])
    deny = [p for p in policies if p["spec"].get("podSelector") == {} and "Ingress" in p["spec"].get("policyTypes", [])
            and not p["spec"].get("ingress")]
    if not deny:
        bad.append("no default-deny NetworkPolicy")
    for p in policies:
        # A replicated shard's database (CloudNativePG pods) is reached only
        # by the ledger's pods, its own pods and its operator.
        database = p["spec"].get("podSelector", {}).get("matchLabels", {}).get("cnpg.io/cluster")
        for rule in p["spec"].get("ingress", []):
            for peer in rule.get("from", []):
                ns = peer.get("namespaceSelector", {}).get("matchLabels", {}).get("kubernetes.io/metadata.name")
                if database and set(peer) == {"podSelector"} and peer["podSelector"].get("matchLabels") in (
                        {"app.kubernetes.io/component": "ledger"}, {"cnpg.io/cluster": database}):
                    continue
                if database and set(peer) == {"namespaceSelector"} and ns == "cnpg-system":
                    continue
                if ns not in allowed or "podSelector" in peer or "ipBlock" in peer:
                    bad.append("NetworkPolicy %s admits %s" % (p["metadata"]["name"], peer))
            if not rule.get("from"):
                bad.append("NetworkPolicy %s admits every source" % p["metadata"]["name"])
    return bad


def check_ledger_config(pod, maps, spec, overlay):
    """The ConfigMap's ledgerd.json, policy and shard map; TLS, keys and the witnesses' TLS from Secrets."""
    bad = []
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    config_maps = [v["configMap"]["name"] for v in volumes.values() if "configMap" in v]
    config = next((maps[n] for n in config_maps if n in maps), None)
    if config is None or "policy.json" not in config.get("data", {}):
        return ["the policy is not in a ConfigMap mounted by the pod"]
    json.loads(config["data"]["policy.json"])
    shard_map = json.loads(config["data"]["shard-map.json"])
    c = pod["containers"][0]
    settings, _ = ledgerd_settings(c, volumes, maps)
    # With --replication the replicas are the nodes of one shard; without,
    # each replica is a shard.
    replicated = bool(settings.get("replication"))
    shards = 1 if replicated else spec["replicas"]
    if len(shard_map["shards"]) != shards:
        bad.append("the shard map names %d shards for %d %s" % (
            len(shard_map["shards"]), shards, "replicated shard" if replicated else "replicas"))
    if replicated:
        bad += check_replication(settings, c, volumes, spec)
    # The signing key is made in the volume unless one is given (the local
    # overlay); production gives each shard's from a Secret.
    wanted = [("tls-cert", "ledger-tls"), ("tls-key", "ledger-tls"), ("client-ca", "ledger-tls")]
    if "signing-key" in settings or os.path.basename(overlay.rstrip("/")) == "production":
        wanted.append(("signing-key", "ledger-signing-keys"))
    bad += not_from_secrets("", wanted, settings, c, volumes)
    if mounted_file(settings.get("policy", ""), c, volumes, maps) is None:
        bad.append("--policy (%s) is not a file of a mounted ConfigMap" % settings.get("policy", "not given"))
    if settings.get("witness-policy"):
        missing = ["--" + f for f in ("witness-tls-ca", "witness-tls-cert", "witness-tls-key")
                   if not secret_of(settings.get(f, ""), c, volumes)]
        if missing:
            bad.append("--witness-policy without %s from a Secret: the witnesses are https://, their certificates "
                       "verified with their CA, and the ledger's client certificate given" % ", ".join(missing))
    if not replicated and "--shard-from-hostname" not in c.get("args", []):
        bad.append("ledgerd does not take its shard from the pod's ordinal (--shard-from-hostname)")
    return bad


def check_replication(settings, container, volumes, spec):
    """A replicated shard: at least two nodes on different machines, each
    named by its pod, the database's password from a Secret (never in the
    URI), no --accept-rollback, and one signing key for every node."""
    bad = []
    if spec["replicas"] < 2:
        bad.append("--replication with %d replica: a shard survives a node only with two" % spec["replicas"])
    if settings.get("node-id") != "$(POD_NAME)":
        bad.append("--node-id is not the pod's name ($(POD_NAME))")
    if "--shard-from-hostname" in container.get("args", []):
        bad.append("--shard-from-hostname with --replication: every node of the shard has one origin and key")
    uri = settings.get("replication", "")
    if re.search(r"//[^/@]*:[^/@]*@|password=", uri):
        bad.append("--replication carries a password: give it with --replication-password-file from a Secret")
    bad += not_from_secrets("", [("replication-password-file", "ledger-db-app")], settings, container, volumes)
    if truthy(settings.get("accept-rollback", "")):
        bad.append("--accept-rollback with --replication (ledgerd refuses it)")
    anti = spec["template"]["spec"].get("affinity", {}).get("podAntiAffinity", {})
    if not any(t.get("topologyKey") == "kubernetes.io/hostname"
               for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution", [])):
        bad.append("the nodes of a replicated shard may share a machine (no required pod anti-affinity)")
    return bad


def check_ledger(by_kind, overlay):
    sts = by_kind.get("StatefulSet", [])
    if len(sts) != 1:
        return ["want one StatefulSet, found %d" % len(sts)]
    s = sts[0]
    spec, pod = s["spec"], s["spec"]["template"]["spec"]
    labels = s["spec"]["template"]["metadata"]["labels"]
    bad = []
    claims = [c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])]
    if claims != ["data"]:
        bad.append("StatefulSet: want one volumeClaimTemplate, data (a PVC per replica), found %s" % claims)
    services = by_kind.get("Service", [])
    headless = [v for v in services if v["spec"].get("clusterIP") == "None"]
    if not any(v["metadata"]["name"] == spec.get("serviceName") for v in headless):
        bad.append("StatefulSet: serviceName %r is not a headless Service" % spec.get("serviceName"))
    if not [v for v in services if v["spec"].get("clusterIP") != "None"]:
        bad.append("no client Service")
    for v in services:
        if not all(labels.get(k) == val for k, val in v["spec"].get("selector", {}).items()):
            bad.append("Service %s does not select the ledger pods" % v["metadata"]["name"])
    bad += check_hardening(pod)
    for c in pod["containers"]:
        for probe in ("livenessProbe", "readinessProbe"):
            if "grpc" not in c.get(probe, {}):
                bad.append("container %s: %s is not a gRPC probe" % (c["name"], probe))
        if not any(m["name"] == "data" and m["mountPath"] == "/var/lib/ledger" for m in c.get("volumeMounts", [])):
            bad.append("container %s: the data volume is not mounted at /var/lib/ledger" % c["name"])
    maps = {m["metadata"]["name"]: m for m in by_kind.get("ConfigMap", [])}
    bad += check_ledger_config(pod, maps, spec, overlay)
    if not by_kind.get("PodDisruptionBudget"):
        bad.append("no PodDisruptionBudget")
    bad += check_network(by_kind, ALLOWED_NAMESPACES)
    if os.path.basename(overlay.rstrip("/")) == "production" and spec["replicas"] < 3:
        bad.append("production runs %d replicas (want 3 shards)" % spec["replicas"])
    return bad


def check_witness(by_kind):
    deps = by_kind.get("Deployment", [])
    if len(deps) != 1:
        return ["want one Deployment, found %d" % len(deps)]
    spec, pod = deps[0]["spec"], deps[0]["spec"]["template"]["spec"]
    bad = []
    if spec.get("replicas") != 1 or spec.get("strategy", {}).get("type") != "Recreate":
        bad.append("witness: not one replica replaced with Recreate (two could cosign both sides of a fork)")
    bad += check_hardening(pod)
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    if "persistentVolumeClaim" not in volumes.get("data", {}) or len(by_kind.get("PersistentVolumeClaim", [])) != 1:
        bad.append("witness: its record is not on its one volume claim")
    for c in pod["containers"]:
        if program(c) != WITNESS:
            bad.append("container %s: not ledger-witness" % c["name"])
            continue
        args = parse_args(c.get("args", []))
        wanted = [("key", "witness-key")] + [(f, "witness-tls") for f in WITNESS_TLS]
        bad += not_from_secrets("container %s: " % c["name"], wanted, args, c, volumes)
        ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
        health = args.get("health-listen", ":").rsplit(":", 1)[1]
        for probe in ("livenessProbe", "readinessProbe"):
            port = c.get(probe, {}).get("httpGet", {}).get("port")
            if str(ports.get(port, port)) != health:
                bad.append("container %s: %s is not on the plain-HTTP health port (--health-listen): the kubelet "
                           "presents no client certificate" % (c["name"], probe))
    bad += check_network(by_kind, WITNESS_NAMESPACES)
    return bad


def check_monitor(by_kind):
    deps = by_kind.get("Deployment", [])
    spec, pod = deps[0]["spec"], deps[0]["spec"]["template"]["spec"]
    bad = []
    if spec.get("replicas") != 1 or spec.get("strategy", {}).get("type") != "Recreate":
        bad.append("monitor: not one replica replaced with Recreate (one process holds its replay and record)")
    bad += check_hardening(pod)
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    if "persistentVolumeClaim" not in volumes.get("data", {}) or len(by_kind.get("PersistentVolumeClaim", [])) != 1:
        bad.append("monitor: its replay and record are not on its one volume claim")
    for c in pod["containers"]:
        if program(c) != MONITOR:
            bad.append("container %s: not ledger-monitor" % c["name"])
            continue
        args = parse_args(c.get("args", []))
        wanted = ([("key", "monitor-key")] + [(f, "monitor-tls") for f in WITNESS_TLS] +
                  [(f, "monitor-reader") for f in MONITOR_READER])
        bad += not_from_secrets("container %s: " % c["name"], wanted, args, c, volumes)
        if not args.get("log", "").startswith("https://"):
            bad.append("container %s: --log is not https:// (it reads the tiles as the auditor's identity)"
                       % c["name"])
        for probe in ("livenessProbe", "readinessProbe"):
            if "httpGet" in c.get(probe, {}):
                bad.append("container %s: %s is an HTTP probe on a port that asks a client certificate the kubelet "
                           "does not have" % (c["name"], probe))
    bad += check_network(by_kind, MONITOR_NAMESPACES)
    return bad


def check(docs, kustomization):
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    bad = check_plain_text(docs)
    if by_kind.get("StatefulSet"):
        return bad + check_ledger(by_kind, kustomization)
    deps = by_kind.get("Deployment", [])
    if len(deps) == 1 and any(program(c) == MONITOR for c in deps[0]["spec"]["template"]["spec"]["containers"]):
        return bad + check_monitor(by_kind)
    return bad + check_witness(by_kind)


def main():
    if shutil.which("kubectl") is None:
        print("SKIP: kubectl is not installed; nothing rendered")
        return 77
    targets = sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "kustomize", "overlays", "*"))) + [
        os.path.join(HERE, "kustomize", "witness"), os.path.join(HERE, "kustomize", "monitor")]
    failed = False
    for target in targets:
        docs = render(target)
        bad = check(docs, target)
        name = os.path.basename(target.rstrip("/"))
        if bad:
            failed = True
            print("FAIL %s:\n  %s" % (name, "\n  ".join(bad)))
        else:
            print("OK %s: %d objects hold every property" % (name, len(docs)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
