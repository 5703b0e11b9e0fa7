#!/usr/bin/python3
"""deploy/monitoring against a real ledgerd.

Usage: monitoring_test.py BUILD_DIR

The alert rules (prometheusrule.yaml) and the Grafana dashboard's queries
are parsed, and every metric an expression names must be one that a
running ledgerd exports: its /metrics is scraped (the families from the
"# TYPE" lines, histograms with their _bucket, _sum and _count series).
Only Prometheus' own `up` is allowed besides. Every rule has a name, a
severity and a summary, and the alerts the operations guide promises are
there. The ServiceMonitor scrapes the HTTP port's /metrics of the client
Service alone (the headless Service carries the same pods: selecting both
would scrape each pod twice).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "deploy", "monitoring")
FAILURES = []
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
            "inf", "nan"}
PROMETHEUS_OWN = {"up"}
PROMISED = {"LedgerDown", "LedgerStoreFailed", "LedgerCheckpointStale", "LedgerSweepFailing", "LedgerStepsOverdue",
            "LedgerUnknownStepsRising", "LedgerFsyncSlow", "LedgerServerErrors"}


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL: " + what)


def metric_names(expr):
    """The metric names a PromQL expression selects."""
    e = re.sub(r"label_values\(\s*([^,()]+?)\s*,[^)]*\)", r"\1", expr)  # Grafana's: metric, label
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', e)                # string literals
    e = re.sub(r"\{[^}]*\}", " ", e)                          # label matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)                          # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)  # label lists
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word, rest = m.group(0), e[m.end():].lstrip()
        if rest.startswith("(") or word.lower() in KEYWORDS or word.startswith("$"):
            continue  # a function or an aggregation, a keyword, a dashboard variable
        if e[max(0, m.start() - 1)] == "$":
            continue
        names.add(word)
    return names


def exported(build, work):
    proc = subprocess.Popen(
        [os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, "data"), "--listen", "127.0.0.1:0",
         "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "20"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        proc.stdout.readline()
        http = "http://" + proc.stdout.readline().decode().split()[-1]
        time.sleep(0.1)
        with urllib.request.urlopen(http + "/metrics", timeout=10) as r:
            text = r.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    names = set()
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)$", line)
        if m:
            names.add(m.group(1))
            if m.group(2) == "histogram":
                names |= {m.group(1) + s for s in ("_bucket", "_sum", "_count")}
    return names


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="monitoring-")
    known = exported(build, work) | PROMETHEUS_OWN
    check("ledger_tree_size" in known, "the scrape holds no ledger metrics: %s" % sorted(known)[:10])

    rules = yaml.safe_load(open(os.path.join(HERE, "prometheusrule.yaml")))
    check(rules.get("kind") == "PrometheusRule", "prometheusrule.yaml: kind %s" % rules.get("kind"))
    alerts = {}
    for group in rules["spec"]["groups"]:
        for rule in group["rules"]:
            name = rule.get("alert", "?")
            alerts[name] = rule
            check(rule.get("labels", {}).get("severity") in ("critical", "warning"), "%s: no severity" % name)
            check(bool(rule.get("annotations", {}).get("summary")), "%s: no summary" % name)
            names = metric_names(rule["expr"])
            check(bool(names), "%s: no metric in %r" % (name, rule["expr"]))
            for n in sorted(names - known):
                check(False, "alert %s names %s, which ledgerd does not export" % (name, n))
    check(PROMISED <= set(alerts), "alerts missing: %s" % sorted(PROMISED - set(alerts)))

    dashboard = json.load(open(os.path.join(HERE, "grafana-dashboard.json")))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in dashboard["templating"]["list"] if isinstance(v.get("query"), dict)]
    check(len(exprs) >= 10, "the dashboard has %d queries" % len(exprs))
    for expr in exprs:
        for n in sorted(metric_names(expr) - known):
            check(False, "dashboard query %r names %s, which ledgerd does not export" % (expr, n))
    # The unknown steps lead to the ledger's own dashboard: the alert's
    # runbook and the panels' data links.
    rising = alerts.get("LedgerUnknownStepsRising", {}).get("annotations", {})
    check(rising.get("runbook_url", "").endswith("/unknown") and
          rising.get("dashboard", "").endswith("/teams/{{ $labels.team }}?state=unknown"),
          "LedgerUnknownStepsRising links to %s" % rising)
    urls = {link["url"] for p in dashboard["panels"] if p["title"].startswith("Unknown steps declared")
            for link in p.get("fieldConfig", {}).get("defaults", {}).get("links", [])}
    check(urls == {"${ledger_dashboard}/teams/${__field.labels.team}?state=unknown", "${ledger_dashboard}/unknown"},
          "the unknown steps panel links to %s" % sorted(urls))
    check(any(v["name"] == "ledger_dashboard" for v in dashboard["templating"]["list"]),
          "no ledger_dashboard variable for the links")
    ids = [p["id"] for p in dashboard["panels"]]
    check(len(ids) == len(set(ids)), "dashboard panel ids repeat")

    monitor = yaml.safe_load(open(os.path.join(HERE, "servicemonitor.yaml")))
    services = [d for d in yaml.safe_load_all(open(os.path.join(ROOT, "deploy", "kustomize", "base",
                                                                   "services.yaml"))) if d]
    base = yaml.safe_load(open(os.path.join(ROOT, "deploy", "kustomize", "base", "kustomization.yaml")))
    common = {k: v for l in base.get("labels", []) for k, v in l["pairs"].items()}
    want = monitor["spec"]["selector"]["matchLabels"]
    selected = [s["metadata"]["name"] for s in services
                if all(dict(common, **s["metadata"].get("labels", {})).get(k) == v for k, v in want.items())]
    check(selected == ["ledger"], "the ServiceMonitor selects %s, not the client Service alone" % selected)
    endpoint = monitor["spec"]["endpoints"][0]
    check((endpoint["port"], endpoint["path"]) == ("http", "/metrics"), "ServiceMonitor endpoint %s" % endpoint)
    check(monitor["spec"].get("jobLabel") == "app.kubernetes.io/name" and
          common.get("app.kubernetes.io/name") == "evidence-ledger" and 'job="evidence-ledger"' in
          alerts.get("LedgerDown", {}).get("expr", ""), "LedgerDown's job is not the ServiceMonitor's")
    kustomization = yaml.safe_load(open(os.path.join(HERE, "kustomization.yaml")))
    check(set(kustomization["resources"]) == {"servicemonitor.yaml", "prometheusrule.yaml"},
          "kustomization resources %s" % kustomization["resources"])
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        sys.exit(1)
    print("PASS: %d alerts and %d dashboard queries name only the %d metrics ledgerd exports" %
          (len(alerts), len(exprs), len(known)))


if __name__ == "__main__":
    main()
