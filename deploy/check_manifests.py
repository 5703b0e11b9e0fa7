#!/usr/bin/python3
"""Checks what the Kubernetes manifests must hold, on each overlay as
`kubectl kustomize` renders it.

Usage: deploy/check_manifests.py [OVERLAY_DIR...]   (default: every overlay)
Exit 0 when every overlay holds, 1 with each violation listed, 77 when
kubectl is not installed (nothing could be rendered).

The properties: a StatefulSet with a volume claim per replica, served by a
headless Service, and a client Service; gRPC liveness and readiness probes;
the signing key from a Secret and the policy from a ConfigMap (and TLS from a
Secret unless the overlay runs --insecure); a PodDisruptionBudget; requests
and limits; RuntimeDefault seccomp, every capability dropped, no privilege
escalation, a read-only root file system with the data volume the only
writable mount, no service-account token; a default-deny NetworkPolicy and
ingress only from the gateway, worker and auditor namespaces.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ALLOWED_NAMESPACES = {"agent-gateway", "agent-workers", "auditors"}


def render(overlay):
    out = subprocess.run(["kubectl", "kustomize", overlay], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("kubectl kustomize %s: %s" % (overlay, out.stderr))
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def check(docs, overlay):
    bad = []
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    sts = by_kind.get("StatefulSet", [])
    if len(sts) != 1:
        return ["want one StatefulSet, found %d" % len(sts)]
    s = sts[0]
    spec, pod = s["spec"], s["spec"]["template"]["spec"]
    labels = s["spec"]["template"]["metadata"]["labels"]
    claims = [c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])]
    if not claims:
        bad.append("StatefulSet: no volumeClaimTemplates (a PVC per replica)")
    services = by_kind.get("Service", [])
    headless = [v for v in services if v["spec"].get("clusterIP") == "None"]
    if not any(v["metadata"]["name"] == spec.get("serviceName") for v in headless):
        bad.append("StatefulSet: serviceName %r is not a headless Service" % spec.get("serviceName"))
    if not [v for v in services if v["spec"].get("clusterIP") != "None"]:
        bad.append("no client Service")
    for v in services:
        if not all(labels.get(k) == val for k, val in v["spec"].get("selector", {}).items()):
            bad.append("Service %s does not select the ledger pods" % v["metadata"]["name"])
    if pod.get("automountServiceAccountToken") is not False:
        bad.append("pod: automountServiceAccountToken is not false")
    psc = pod.get("securityContext", {})
    if psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        bad.append("pod: seccompProfile is not RuntimeDefault")
    if psc.get("runAsNonRoot") is not True:
        bad.append("pod: runAsNonRoot is not true")
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
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
        for probe in ("livenessProbe", "readinessProbe"):
            if "grpc" not in c.get(probe, {}):
                bad.append(name + ": %s is not a gRPC probe" % probe)
        for m in c.get("volumeMounts", []):
            if m["name"] in claims:
                continue
            if not m.get("readOnly"):
                bad.append(name + ": mount %s is writable (only the data volume may be)" % m["name"])
        if not any(m["name"] in claims and m["mountPath"] == "/var/lib/ledger" for m in c.get("volumeMounts", [])):
            bad.append(name + ": the data volume is not mounted at /var/lib/ledger")
    # Configuration: policy from a ConfigMap, keys and TLS from Secrets.
    maps = {m["metadata"]["name"]: m for m in by_kind.get("ConfigMap", [])}
    config_maps = [v["configMap"]["name"] for v in volumes.values() if "configMap" in v]
    config = next((maps[n] for n in config_maps if n in maps), None)
    if config is None or "policy.json" not in config.get("data", {}):
        bad.append("the policy is not in a ConfigMap mounted by the pod")
    else:
        ledgerd = json.loads(config["data"]["ledgerd.json"])
        json.loads(config["data"]["policy.json"])
        shard_map = json.loads(config["data"]["shard-map.json"])
        if len(shard_map["shards"]) != spec["replicas"]:
            bad.append("the shard map names %d shards for %d replicas" % (len(shard_map["shards"]), spec["replicas"]))
        secrets = {v["secret"]["secretName"]: v["name"] for v in volumes.values() if "secret" in v}
        mounts = {m["name"]: m["mountPath"] for c in pod["containers"] for m in c.get("volumeMounts", [])}
        # The signing key is made in the volume unless one is given (the
        # local overlay); production gives each shard's from a Secret.
        wanted = [("signing-key", "ledger-signing-keys")] if (
            "signing-key" in ledgerd or os.path.basename(overlay.rstrip("/")) == "production") else []
        if not ledgerd.get("insecure"):
            wanted.append(("tls-cert", "ledger-tls"))
        for flag, secret in wanted:
            path = ledgerd.get(flag, "")
            if secret not in secrets or not path.startswith(mounts.get(secrets[secret], "?") + "/"):
                bad.append("%s (%s) does not come from the Secret %s" % (flag, path, secret))
        if "--shard-from-hostname" not in pod["containers"][0].get("args", []):
            bad.append("ledgerd does not take its shard from the pod's ordinal (--shard-from-hostname)")
    if not by_kind.get("PodDisruptionBudget"):
        bad.append("no PodDisruptionBudget")
    policies = by_kind.get("NetworkPolicy", [])
    deny = [p for p in policies if p["spec"].get("podSelector") == {} and "Ingress" in p["spec"].get("policyTypes", [])
            and not p["spec"].get("ingress")]
    if not deny:
        bad.append("no default-deny NetworkPolicy")
    for p in policies:
        for rule in p["spec"].get("ingress", []):
            for peer in rule.get("from", []):
                ns = peer.get("namespaceSelector", {}).get("matchLabels", {}).get("kubernetes.io/metadata.name")
                if ns not in ALLOWED_NAMESPACES or "podSelector" in peer or "ipBlock" in peer:
                    bad.append("NetworkPolicy %s admits %s" % (p["metadata"]["name"], peer))
            if not rule.get("from"):
                bad.append("NetworkPolicy %s admits every source" % p["metadata"]["name"])
    if os.path.basename(overlay) == "production" and spec["replicas"] < 3:
        bad.append("production runs %d replicas (want 3 shards)" % spec["replicas"])
    return bad


def main():
    if shutil.which("kubectl") is None:
        print("SKIP: kubectl is not installed; nothing rendered")
        return 77
    overlays = sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "kustomize", "overlays", "*")))
    failed = False
    for overlay in overlays:
        docs = render(overlay)
        bad = check(docs, overlay)
        name = os.path.basename(overlay.rstrip("/"))
        if bad:
            failed = True
            print("FAIL %s:\n  %s" % (name, "\n  ".join(bad)))
        else:
            print("OK %s: %d objects hold every property" % (name, len(docs)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
