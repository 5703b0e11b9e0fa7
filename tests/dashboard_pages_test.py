#!/usr/bin/python3
"""The dashboard as a person works in it, in headless Chromium, against a
real ledgerd (plain text on loopback, every caller admin).

Usage: dashboard_pages_test.py BUILD_DIR

The demo workload's runs (160 of them, 53 in team-support, whose run-0007
holds a step that never completed), and a run of team-code appended in
four steps a few hundred milliseconds apart: step-a succeeds, step-b makes
an allowed and a denied model call and a tool call, step-c is denied at
its start, step-d never completes (declared unknown). Then, with layout
facts read from the DOM Chromium built (element boxes and computed
styles, not pixels) and a screenshot of each page kept in
BUILD_DIR/tests/artifacts/dashboard/:

  - teams link to the "unknown now" view, which lists the unknown steps of
    both teams with a team column;
  - a team's runs come 50 a page, with a next page holding the rest;
  - filters: state, anomaly, time range, trace id each list exactly the
    matching steps; a run id or a receipt id leads to its run or step;
    a bad filter is 400 naming the field; an unknown team is 404;
  - a trace id also finds the calls that carry it, OpenTelemetry spans
    taken in through --otlp-listen among them: the calls of a run made of
    spans alone lead to that run's page, where they are listed; a trace id
    of steps and calls lists both; a trace id that is not 32 hex digits is
    400 naming the field and the rule;
  - the step page shows each call's model, route, tokens, cost, decision
    and reason, with the denial standing out;
  - the run page's timeline lists steps in the table's order (newest
    first), each call a tick inside its step's bar (the denied one red),
    the unknown step's deadline a line; labels
    never cover a bar, the denied step is a mark, not a bar, and the page
    is no wider than the window;
  - a run id written as HTML stays text in every link the page writes;
  - auto-refresh is a meta refresh; no page has a script or loads anything
    from elsewhere, and the CSP forbids both; every table has column
    headers, and every text has a contrast of at least 4.5:1.

Every check runs; the failures are listed together.
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chromium import Chromium  # noqa: E402
from ledger_testlib import ROOT  # noqa: E402
import tlog_spec  # noqa: E402

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPANS_TRACE = "a3ce929d0e0e47364bf92f3577b34da6"
FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL: " + what)


def get(url):
    req = urllib.request.Request(url)
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def receipts(step, kind, n, **body):
    r = {"team": "team-code", "run_id": "run-timeline", "step_id": step, "workflow": "CodeWorkflow",
         "agent": "coder", "receipt_id": "timeline.%s.%s.%d" % (step, kind, n), "kind": kind, "trace_id": TRACE,
         "occurred_at_us": int(time.time() * 1e6)}
    r.update(body)
    return r


def send_spans(otlp_url, spans):
    """OTLP/JSON chat spans (team, trace id, span id) of run-spans, step
    span-step, posted as an OpenTelemetry exporter would."""
    attr = lambda k, v: {"key": k, "value": {"stringValue": v}}  # noqa: E731
    now_ns = time.time_ns()
    export = {"resourceSpans": [{"resource": {"attributes": [attr("ledger.team", team)]}, "scopeSpans": [{"spans": [{
        "traceId": trace, "spanId": span, "name": "chat gpt", "kind": 3, "startTimeUnixNano": str(now_ns + i),
        "endTimeUnixNano": str(now_ns + i + 1000000),
        "attributes": [attr("gen_ai.operation.name", "chat"), attr("gen_ai.request.model", "gpt"),
                       attr("ledger.run_id", "run-spans"), attr("ledger.step_id", "span-step")]}]}]}
        for i, (team, trace, span) in enumerate(spans)]}
    req = urllib.request.Request(otlp_url, data=json.dumps(export).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        answer = json.loads(r.read() or b"{}")
        assert r.status == 200 and not answer.get("partialSuccess"), answer


# Layout facts, computed in the page (run through DevTools, not by the page).
FACTS_JS = r"""(() => {
  const rgb = s => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = c => { const v = c.slice(0, 3).map(x => { x /= 255;
      return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
  const bg = el => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c; } return [255, 255, 255]; };
  const low = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode());) {
    if (!n.textContent.trim()) continue;
    const el = n.parentElement, st = getComputedStyle(el);
    if (st.visibility === 'hidden' || st.display === 'none') continue;
    const a = lum(rgb(st.color)), b = lum(bg(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) low.push(el.tagName + ' "' + n.textContent.trim().slice(0, 30) + '" ' + ratio.toFixed(2));
  }
  const tables = [...document.querySelectorAll('table')].map(t => ({
    headers: t.querySelectorAll('thead th').length,
    unscoped: [...t.querySelectorAll('th')].filter(th => !th.getAttribute('scope')).length,
    caption: !!t.querySelector('caption')}));
  const box = e => { const r = e.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
  const rows = [...document.querySelectorAll('.timeline .tl-row:not(.tl-axis)')].map(row => {
    const shape = row.querySelector('.tl-bar, .tl-mark');
    const deadline = row.querySelector('.tl-deadline');
    return {label: row.querySelector('.tl-label').textContent, labelBox: box(row.querySelector('.tl-label')),
            kind: shape.classList.contains('tl-mark') ? 'mark' : 'bar', state: shape.classList[1],
            box: box(shape), aria: shape.getAttribute('aria-label'),
            calls: [...row.querySelectorAll('.tl-call')].map(c => ({denied: c.classList.contains('denied'),
                                                                      box: box(c), aria: c.getAttribute('aria-label')})),
            deadline: deadline ? box(deadline) : null};
  });
  return {low, tables, rows, scripts: document.scripts.length,
          foreign: performance.getEntriesByType('resource').map(e => e.name)
                     .filter(u => !u.startsWith(location.origin)),
          wide: document.documentElement.scrollWidth > window.innerWidth,
          refresh: (document.querySelector('meta[http-equiv="refresh"]') || {}).content || '',
          url: location.pathname + location.search, title: document.title,
          h1: (document.querySelector('h1') || {}).textContent || ''};
})()"""

ROWS_JS = r"""(sel => [...document.querySelectorAll(sel + ' tbody tr')].map(tr => ({
  cls: tr.className, cells: [...tr.cells].map(td => td.textContent),
  bg: getComputedStyle(tr).backgroundColor})))"""


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="dashboard-pages-")
    shots = os.path.join(build, "tests", "artifacts", "dashboard")
    shutil.rmtree(shots, ignore_errors=True)
    os.makedirs(shots)
    ledgerd = subprocess.Popen(
        [os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, "data"), "--listen", "127.0.0.1:0",
         "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "20", "--unknown-grace-ms", "200",
         "--sweep-interval-ms", "50", "--trace-url", "https://tracing.example/trace/{trace_id}?from=ledger",
         "--otlp-listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "ledgerd.err"), "wb"))
    browser = None
    try:
        address = ledgerd.stdout.readline().decode().split()[-1]
        http = "http://" + ledgerd.stdout.readline().decode().split()[-1]
        otlp_http = "http://" + ledgerd.stdout.readline().decode().split()[-1]

        def append(records):
            path = os.path.join(work, "batch.jsonl")
            with open(path, "w") as f:
                for r in records:
                    f.write(json.dumps(r) + "\n")
            subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "--server", address, "append", path],
                           check=True, stdout=subprocess.DEVNULL)

        demo = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "demo_workload.py"), "--runs", "160",
                               "--timeout-ms", "300"], check=True, capture_output=True, text=True).stdout
        demo = [json.loads(line) for line in demo.splitlines()]
        hostile = 'run-"><i id=injected>x</i>'
        append(demo + [{"team": "team-code", "run_id": hostile, "step_id": "s", "receipt_id": "hostile.start",
                        "kind": "agent_start", "decision": "allow", "timeout_ms": 600000,
                        "occurred_at_us": int(time.time() * 1e6)}])
        support_runs = sorted({r["run_id"] for r in demo if r["team"] == "team-support"})
        time.sleep(1.02 - time.time() % 1)  # the run begins in a second the demo has no entry in
        before_us = int(time.time()) * 1_000_000
        append([receipts("step-a", "agent_start", 0, decision="allow", timeout_ms=600000, cost_reserved_micros=900)])
        time.sleep(0.3)
        append([receipts("step-b", "agent_start", 0, decision="allow", timeout_ms=600000, cost_reserved_micros=500),
                receipts("step-b", "model_call", 0, provider="anthropic", model="demo-claude",
                         route="anthropic/demo-claude", decision="allow", input_tokens=1200, output_tokens=345,
                         cost_micros=1870),
                receipts("step-b", "model_call", 1, provider="openai", model="demo-openai", route="openai/demo-openai",
                         decision="deny", reason="tokenLimit exceeded for workflow", input_tokens=9000,
                         output_tokens=0, cost_micros=0),
                receipts("step-b", "tool_call", 0, tool="git", target="https://git.internal/repo",
                         decision="allow", cost_micros=15)])
        time.sleep(0.3)
        append([receipts("step-a", "agent_exec", 0, start_receipt_id="timeline.step-a.agent_start.0",
                         status="succeeded", exit_code=0, duration_ms=600),
                receipts("step-c", "agent_start", 0, decision="deny", reason="sandbox image not on the allow-list")])
        time.sleep(0.3)
        append([receipts("step-b", "agent_exec", 0, start_receipt_id="timeline.step-b.agent_start.0",
                         status="succeeded", exit_code=0, duration_ms=600),
                receipts("step-d", "agent_start", 0, decision="allow", timeout_ms=300)])
        # A run of OpenTelemetry spans alone: calls naming a step no start
        # ever opened.
        otlp = [{"team": "team-code", "run_id": "run-otlp", "step_id": "span-step", "receipt_id": "otlp.call.%d" % i,
                 "kind": "model_call", "provider": "openai", "model": "gpt", "route": "openai/gpt",
                 "decision": decision, "input_tokens": 10, "output_tokens": 2, "cost_micros": 5,
                 "trace_id": "5b8efff798038103d269b633813fc60c", "occurred_at_us": int(time.time() * 1e6)}
                for i, decision in enumerate(("allow", "deny"))]
        append(otlp)
        # OpenTelemetry spans through --otlp-listen: two of SPANS_TRACE and
        # one of TRACE in team-code's run-spans, whose step no start opened;
        # one of SPANS_TRACE in team-data (another team's, never listed).
        send_spans(otlp_url=otlp_http + "/v1/traces", spans=[
            ("team-code", SPANS_TRACE, "00f067aa0ba902b7"), ("team-code", SPANS_TRACE, "00f067aa0ba902b8"),
            ("team-code", TRACE, "00f067aa0ba902b9"), ("team-data", SPANS_TRACE, "00f067aa0ba902ba")])
        after_us = int(time.time() * 1e6) + 1
        deadline = time.time() + 30
        while time.time() < deadline:  # step-d declared unknown
            status, _, body = get(http + "/teams/team-code/runs/run-timeline/steps/step-d")
            if "UNKNOWN" in body:
                break
            time.sleep(0.1)
        time.sleep(0.2)

        # A step's calls link to their proofs, also in the C2SP tlog-proof form,
        # which leads from the entry's leaf to the checkpoint's root.
        _, _, step_page = get(http + "/teams/team-code/runs/run-timeline/steps/step-a")
        check('href="/proofs/0?format=tlog-proof"' in step_page or "?format=tlog-proof" in step_page,
              "the step page links to tlog-proof forms")
        status, _, text = get(http + "/proofs/0?format=tlog-proof")
        index, path, note = tlog_spec.parse_tlog_proof(text)
        origin, size, root = note.split("\n")[:3]
        leaf = json.loads(get(http + "/proofs/0")[2])["leaf"]
        check(status == 200 and index == 0 and base64.b64encode(
            tlog_spec.root_from_inclusion(0, int(size), tlog_spec.leaf_hash(leaf.encode()), path)).decode() == root,
            "/proofs/0?format=tlog-proof leads from the leaf to the root of its checkpoint (%s)" % origin)

        browser = Chromium(os.path.join(work, "profile"))
        pages = {}

        def visit(name, path):
            browser.open(http + path)
            facts = browser.eval(FACTS_JS)
            browser.screenshot(os.path.join(shots, name + ".png"))
            pages[name] = facts
            return facts

        def rows(selector):
            return browser.eval(ROWS_JS + "(%s)" % json.dumps(selector))

        # Teams and the cross-team view of unknown steps.
        visit("teams", "/")
        check(browser.eval("!!document.querySelector('a[href=\"/unknown\"]')"), "teams: no link to /unknown")
        # The home page counts each team's steps by state; a team with an
        # unknown step stands out; the counts link to the team's steps.
        home = {r["cells"][0]: r for r in rows("table.teams")}
        check(sorted(home) == ["team-code", "team-data", "team-support"],
              "teams: the table's teams are %s" % sorted(home))
        for team, row in home.items():
            unknown, failed, pending, overdue, succeeded, denied = (int(c) for c in row["cells"][1:7])
            want = "unknown" if unknown else "failed" if failed else "denied" if overdue else ""
            check(unknown == (0 if team == "team-data" else 1) and row["cls"] == want,
                  "teams: %s shows %d unknown, row class %r (want %r)" % (team, unknown, row["cls"], want))
            check(row["cells"][7].endswith(" ago"), "teams: %s's last activity is %r" % (team, row["cells"][7]))
            for state, n in (("failed", failed), ("pending", pending), ("succeeded", succeeded),
                             ("denied", denied)):
                if n == 0:
                    continue
                href = "/teams/%s?state=%s" % (team, state)
                check(browser.eval("!!document.querySelector('table.teams a[href=\"%s\"]')" % href),
                      "teams: %s's %d %s steps link nowhere" % (team, n, state))
        code = home.get("team-code", {"cells": [""] * 8})["cells"]
        # run-timeline: step-a and step-b succeeded, step-c denied, step-d
        # unknown; the demo's team-code runs and the hostile one beside them.
        check(int(code[5] or 0) >= 2 and int(code[6] or 0) >= 1, "teams: team-code counts %s" % code[1:7])
        check(re.search(r"Latest checkpoint: [0-9]+ entries, signed [0-9.]+ (ms|s) ago; cosigned by no witness",
                        browser.eval("document.querySelector('p.checkpoint')?.textContent || ''")) is not None,
              "teams: the checkpoint's line says %r"
              % browser.eval("document.querySelector('p.checkpoint')?.textContent || ''"))
        f = visit("unknown", "/unknown")
        got = [(r["cells"][0], r["cells"][1]) for r in rows("table.steps")]
        check(sorted(got) == [("team-code", "run-timeline"), ("team-support", "run-0007")],
              "unknown now: %s" % got)
        for team, _ in got:
            check(int(home.get(team, {"cells": ["", "0"]})["cells"][1]) == sum(1 for t, _ in got if t == team),
                  "teams: %s's unknown count differs from /unknown's" % team)
        check(browser.eval("document.querySelector('table.steps thead th')?.textContent") == "team",
              "unknown now: no team column")

        # Runs, paged.
        visit("runs", "/teams/team-support")
        runs_rows = rows("table.runs")
        first = [r["cells"][0] for r in runs_rows]
        # Each run: its duration, last activity and charged cost; a run with
        # an unknown step in red, one with a failed step (and none unknown)
        # in orange, never the other way round.
        for r in runs_rows:
            c = r["cells"]
            failed, unknown = int(c[6]), int(c[9])
            want = "unknown" if unknown else "failed" if failed else ""
            check(r["cls"] == want, "runs: %s (%d failed, %d unknown) has class %r" % (c[0], failed, unknown, r["cls"]))
            check(re.fullmatch(r"[0-9.]+ (ms|s)|[0-9]+ min [0-9]+ s", c[3]) is not None, "runs: %s lasted %r"
                  % (c[0], c[3]))
            check(c[4].endswith(" ago") and re.fullmatch(r"\$[0-9]+\.[0-9]{6}", c[11]) is not None,
                  "runs: %s last active %r, charged %r" % (c[0], c[4], c[11]))
        check(any(r["cls"] == "failed" for r in runs_rows), "runs: no run with a failed step stands out")
        # Two charts of the last 14 days, a bar a day: today's unknown and
        # failed steps are the home page's counts (every step began today).
        charts = browser.eval("[...document.querySelectorAll('svg.chart')].map(svg => [...svg.querySelectorAll("
                              "'g.bucket')].map(g => Object.assign({}, g.dataset)))")
        check(len(charts) == 2 and all(len(c) == 14 for c in charts), "runs: charts %s" % [len(c) for c in charts])
        if len(charts) == 2 and charts[0]:
            today = charts[0][-1]
            sup = home.get("team-support", {"cells": ["", "0", "0"]})["cells"]
            check((today.get("unknown"), today.get("failed")) == (sup[1], sup[2]),
                  "runs: today's bar holds %s, the home page %s unknown and %s failed" % (today, sup[1], sup[2]))
            check(all(b.get("unknown") == "0" and b.get("failed") == "0" for b in charts[0][:-1]),
                  "runs: steps counted before today: %s" % charts[0][:-1])
            check(int(charts[1][-1].get("charged", "0")) > 0, "runs: no cost today: %s" % charts[1][-1])
        check(len(first) == 50, "runs page 1 shows %d runs, not 50" % len(first))
        nxt = browser.eval("(document.querySelector('a[rel=next]') || {}).href || ''")
        check(nxt != "", "runs: no next page link")
        if nxt:
            browser.open(nxt)
            second = [r["cells"][0] for r in rows("table.runs")]
            check(sorted(first + second) == support_runs,
                  "runs: the two pages hold %d runs, not the team's %d" % (len(first + second), len(support_runs)))
            check(browser.eval("document.querySelector('a[rel=next]')") is None, "runs: a next link on the last page")

        # Time presets: the last hour, day and week, each a from= link that
        # keeps the other filters.
        browser.open(http + "/teams/team-support?state=failed")
        presets = browser.eval("[...document.querySelectorAll('p.presets a')].map(a => [a.textContent, "
                               "a.getAttribute('href')])")
        check([p[0] for p in presets] == ["hour", "day", "week"] and
              all(re.fullmatch(r"/teams/team-support\?from=20[0-9-]{8}T[0-9]{2}:[0-9]{2}&state=failed", p[1])
                  for p in presets), "presets: %s" % presets)
        if presets:
            browser.open(http + presets[0][1])
            hour = rows("table.steps")
            check(hour and all(r["cls"] == "failed" for r in hour), "the last hour's failed steps: %d rows" % len(hour))

        # Filters.
        def steps_of(name, path):
            visit(name, path)
            return sorted((r["cells"][0], r["cells"][1]) for r in rows("table.steps"))

        got = steps_of("filter-state", "/teams/team-support?state=unknown")
        check(got == [("run-0007", "step-0")], "state=unknown: %s" % got)
        # A filtered list is paged too: 50 steps, then the next page's, none twice.
        visit("filter-paged", "/teams/team-support?state=succeeded")
        page1 = [(r["cells"][0], r["cells"][1]) for r in rows("table.steps")]
        nxt = browser.eval("(document.querySelector('a[rel=next]') || {}).href || ''")
        succeeded = {(r["run_id"], r["step_id"]) for r in demo if r["team"] == "team-support" and
                     r["kind"] == "agent_exec" and r.get("status") == "succeeded"}  # the orphan completion too
        check(len(page1) == 50 and nxt, "state=succeeded: page 1 has %d steps, next %r" % (len(page1), nxt))
        seen = list(page1)
        while nxt:
            browser.open(nxt)
            seen += [(r["cells"][0], r["cells"][1]) for r in rows("table.steps")]
            nxt = browser.eval("(document.querySelector('a[rel=next]') || {}).href || ''")
        check(len(seen) == len(set(seen)) and set(seen) == succeeded,
              "state=succeeded over its pages: %d steps, want %d" % (len(seen), len(succeeded)))
        got = steps_of("filter-anomaly", "/teams/team-support?anomaly=orphan_completion")
        check(got == [("run-0002", "step-9")], "anomaly=orphan_completion: %s" % got)
        # A completion with no start in the log proves no success: never green.
        orphan = rows("table.steps")[0] if got else {"cls": "", "cells": [""] * 5, "bg": ""}
        check(orphan["cls"] == "anomalous" and orphan["cells"][3] == "succeeded (no start in the log)"
              and orphan["bg"] != "rgb(231, 247, 231)",
              "the orphan completion shows as %r, class %r, background %s" % (orphan["cells"][3], orphan["cls"],
                                                                               orphan["bg"]))
        # A pending step says when its deadline is.
        visit("filter-pending", "/teams/team-code?state=pending")
        pending = [r["cells"][3] for r in rows("table.steps")]
        check(pending and all(re.fullmatch(r"pending, deadline (in [0-9.]+ (ms|s)|in [0-9]+ min [0-9]+ s|passed .* ago)",
                                           p) for p in pending), "pending steps say %s" % pending)
        iso = lambda us: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(us / 1e6)) + "Z"  # noqa: E731
        got = steps_of("filter-time", "/teams/team-code?state=succeeded&from=%s&to=%s" % (
            iso(before_us), iso(after_us + 1_000_000)))
        check(got == [("run-timeline", "step-a"), ("run-timeline", "step-b")], "time range: %s" % got)
        got = steps_of("filter-trace", "/teams/team-code?trace=" + TRACE)
        check(got == [("run-timeline", s) for s in ("step-a", "step-b", "step-c", "step-d")], "trace: %s" % got)
        # The calls that carry TRACE beside its steps, by where they are
        # shown: step-b's three on its page, the span of run-spans on its
        # run's; the trace id links to the tracing UI.
        places = browser.eval("[...document.querySelectorAll('h3.place')].map(h => [h.textContent, "
                              "[...h.querySelectorAll('a')].map(a => a.getAttribute('href')), "
                              "[...h.nextElementSibling.querySelectorAll('tbody tr')]"
                              ".map(tr => tr.cells[9].textContent)])")
        check(places == [
            ["run-timeline / step-b", ["/teams/team-code/runs/run-timeline",
                                       "/teams/team-code/runs/run-timeline/steps/step-b?attempt=1"],
             ["timeline.step-b.model_call.0", "timeline.step-b.model_call.1", "timeline.step-b.tool_call.0"]],
            ["run-spans / span-step (no step in the log)", ["/teams/team-code/runs/run-spans#calls"],
             ["otel.%s.00f067aa0ba902b9" % TRACE]]], "trace: its calls %s" % places)
        href = browser.eval("document.querySelector('main a[rel=noreferrer]')?.getAttribute('href') || ''")
        check(href == "https://tracing.example/trace/%s?from=ledger" % TRACE, "trace: the tracing UI link %r" % href)
        # A trace id that only the spans of a run without steps carry leads
        # to the run's page (not a 404), where they are listed; in upper
        # case too; another team's span of the same trace is not there.
        for shown in (SPANS_TRACE, SPANS_TRACE.upper()):
            f = visit("trace-spans", "/teams/team-code?trace=" + shown)
            check(f["url"] == "/teams/team-code/runs/run-spans" and f["h1"] == "Run run-spans",
                  "the search for trace %s led to %s (%r)" % (shown, f["url"], f["h1"]))
        listed = [r["cells"][9] for r in rows("table.calls")]
        check(listed == ["otel.%s.00f067aa0ba902b7" % SPANS_TRACE, "otel.%s.00f067aa0ba902b8" % SPANS_TRACE,
                         "otel.%s.00f067aa0ba902b9" % TRACE], "run-spans' calls without a step: %s" % listed)
        rule = "trace: a trace id is 32 hex digits, not all zero (W3C trace context); "
        for bad, why in (("%20", "this one is empty"),
                         ("4bf92f3577b34da6a3ce929d0e0e47361", "this one has 33 characters"),
                         ("4bf92f3577b34da6a3ce929d0e0e473g", "g (character 32) is not a hex digit"),
                         ("0" * 32, "this one is all zero")):
            status, _, body = get(http + "/teams/team-code?trace=" + bad)
            check(status == 400 and "<p>%s%s</p>" % (rule, why) in body,
                  "trace=%s: %d %s" % (bad, status, body[body.find("<h1>"):][:200]))
        f = visit("filter-run", "/teams/team-code?run=run-timeline")
        check(f["url"] == "/teams/team-code/runs/run-timeline", "run id search led to %s" % f["url"])
        f = visit("filter-receipt", "/teams/team-code?receipt=timeline.step-b.model_call.1")
        check(f["url"] == "/teams/team-code/runs/run-timeline/steps/step-b?attempt=1",
              "receipt id search led to %s" % f["url"])
        status, _, body = get(http + "/teams/team-code?from=yesterday")
        check(status == 400 and "from: a UTC time like 2026-01-01T12:00" in body, "bad from: %d %s" % (status, body[:120]))
        status, _, body = get(http + "/teams/team-code?state=sleeping")
        check(status == 400 and "state: one of pending, succeeded, failed, denied, unknown" in body,
              "bad state: %d" % status)
        status, _, body = get(http + "/teams/no-such-team")
        check(status == 404 and "team: no runs in team no-such-team" in body, "unknown team: %d" % status)

        # The step page: its calls.
        visit("step", "/teams/team-code/runs/run-timeline/steps/step-b?attempt=1")
        calls = rows("table.calls")
        by_id = {r["cells"][9]: r for r in calls}
        allowed = by_id.get("timeline.step-b.model_call.0", {"cells": [""] * 12})
        denied = by_id.get("timeline.step-b.model_call.1", {"cells": [""] * 12, "cls": "", "bg": ""})
        tool = by_id.get("timeline.step-b.tool_call.0", {"cells": [""] * 12})
        check(allowed["cells"][2:9] == ["model_call", "demo-claude", "anthropic/demo-claude", "allow", "",
                                        "1200 / 345", "$0.001870"], "allowed call: %s" % allowed["cells"])
        check(denied["cells"][2:9] == ["model_call", "demo-openai", "openai/demo-openai", "DENY",
                                       "tokenLimit exceeded for workflow", "9000 / 0", "$0.000000"],
              "denied call: %s" % denied["cells"])
        check(denied["cls"] == "denied" and denied["bg"] != allowed.get("bg"), "the denial does not stand out")
        check(tool["cells"][2:6] == ["tool_call", "git", "https://git.internal/repo", "allow"],
              "tool call: %s" % tool["cells"])
        check(browser.eval("!!document.querySelector('dl.facts')?.textContent.includes('%s')" % TRACE),
              "step page: no trace id")
        # The step's receipts filtered by kind and decision, the form kept
        # filled in; a kind that is none is a 400 naming the field.
        visit("step-filtered", "/teams/team-code/runs/run-timeline/steps/step-b?attempt=1&kind=model_call"
              "&decision=deny")
        ids = [r["cells"][9] for r in rows("table.calls")]
        check(ids == ["timeline.step-b.model_call.1"], "kind=model_call&decision=deny: %s" % ids)
        check(browser.eval("document.querySelector('select[name=kind]').value") == "model_call",
              "the receipts' filter form does not keep its kind")
        visit("step-kind", "/teams/team-code/runs/run-timeline/steps/step-b?attempt=1&kind=model_call")
        ids = sorted(r["cells"][9] for r in rows("table.calls"))
        check(ids == ["timeline.step-b.model_call.0", "timeline.step-b.model_call.1"], "kind=model_call: %s" % ids)
        status, _, body = get(http + "/teams/team-code/runs/run-timeline/steps/step-b?attempt=1&kind=model")
        check(status == 400 and "kind: one of agent_start, agent_exec, model_call, tool_call, step_unknown" in body,
              "kind=model: %d %s" % (status, body[:200]))
        visit("step", "/teams/team-code/runs/run-timeline/steps/step-b?attempt=1")
        # The trace id links to the tracing UI through --trace-url.
        href = browser.eval("document.querySelector('dl.facts a[rel=noreferrer]')?.getAttribute('href') || ''")
        check(href == "https://tracing.example/trace/%s?from=ledger" % TRACE, "step page: the trace links to %r" % href)

        # The run page's timeline.
        f = visit("run", "/teams/team-code/runs/run-timeline")
        tl = f["rows"]
        # The table's order, newest first, bar for row.
        table_order = [r["cells"][0] for r in rows("table.steps")]
        check([r["label"] for r in tl] == ["step-d", "step-c", "step-b", "step-a"] == table_order,
              "timeline order: %s, table order: %s" % ([r["label"] for r in tl], table_order))
        lefts = [r["box"]["l"] for r in tl]
        check(lefts == sorted(lefts, reverse=True), "timeline: bars not newest first: %s" % lefts)
        # The calls inside their step's bar, the denied one in red; the
        # unknown step's deadline a line inside the axis, before its end.
        by_label = {r["label"]: r for r in tl}
        b = by_label.get("step-b", {"calls": [], "box": {"l": 0, "r": 0}})
        check(len(b["calls"]) == 3 and sum(c["denied"] for c in b["calls"]) == 1,
              "step-b's calls on the timeline: %s" % b["calls"])
        check(all(b["box"]["l"] - 3 <= c["box"]["l"] and c["box"]["r"] <= b["box"]["r"] + 3 for c in b["calls"]),
              "step-b's calls fall outside its bar: %s, bar %s" % ([c["box"] for c in b["calls"]], b["box"]))
        d = by_label.get("step-d", {"deadline": None, "box": {"l": 0, "r": 0}})
        check(d["deadline"] is not None and d["box"]["l"] < d["deadline"]["l"] < d["box"]["r"],
              "step-d's deadline line: %s, bar %s" % (d["deadline"], d["box"]))
        kinds = {r["label"]: (r["kind"], r["state"]) for r in tl}
        check(kinds.get("step-c") == ("mark", "denied"), "denied step: %s" % (kinds.get("step-c"),))
        check(kinds.get("step-d") == ("bar", "unknown"), "unknown step: %s" % (kinds.get("step-d"),))
        for r in tl:
            if r["kind"] == "mark":
                check(r["box"]["r"] - r["box"]["l"] < 20, "the denied mark is %.0f px wide" %
                      (r["box"]["r"] - r["box"]["l"]))
        for r in tl:  # a label covers no bar or mark of any row
            for s in tl:
                a, b = r["labelBox"], s["box"]
                overlap = a["l"] < b["r"] and b["l"] < a["r"] and a["t"] < b["b"] and b["t"] < a["b"]
                check(not overlap, "label %s overlaps the bar of %s" % (r["label"], s["label"]))
        widths = {r["label"]: r["box"]["r"] - r["box"]["l"] for r in tl}
        check(widths.get("step-a", 0) > 50, "step-a's bar is %.0f px for 0.6 s of a 1.2 s run" % widths.get("step-a", 0))
        check(all("Z" in (r["aria"] or "") for r in tl), "timeline bars have no UTC times for screen readers")

        # The OpenTelemetry run's calls are listed on its page, and a search
        # for one of their receipts leads there, not to a step page's 404.
        visit("run-otlp", "/teams/team-code/runs/run-otlp")
        listed = [r["cells"][9] for r in rows("table.calls")]
        check(listed == ["otlp.call.0", "otlp.call.1"], "run-otlp's calls without a step: %s" % listed)
        f = visit("receipt-otlp", "/teams/team-code?receipt=otlp.call.1")
        check(f["url"] == "/teams/team-code/runs/run-otlp" and f["h1"] == "Run run-otlp",
              "the search for a call without a step led to %s (%r)" % (f["url"], f["h1"]))

        # A run id that is HTML, in every link the page writes (refresh, pages).
        f = visit("hostile", "/teams/team-code/runs/%s?refresh=10" % urllib.parse.quote(hostile, safe=""))
        check(f["h1"] == "Run " + hostile, "hostile run page: %r" % f["h1"])
        check(browser.eval("document.getElementById('injected')") is None, "a run id became HTML")

        # Auto-refresh.
        f = visit("refresh", "/teams/team-code/runs/run-timeline?refresh=10")
        check(f["refresh"] == "10", "refresh=10: meta refresh %r" % f["refresh"])
        status, _, _ = get(http + "/teams/team-code?refresh=1")
        check(status == 400, "refresh=1 accepted")

        # Every page: no script, nothing from elsewhere, headers, contrast, width.
        status, headers, _ = get(http + "/teams/team-code/runs/run-timeline")
        csp = headers.get("Content-Security-Policy", "")
        check("default-src 'none'" in csp and "script-src" not in csp, "CSP: %r" % csp)
        for name, facts in pages.items():
            check(facts["scripts"] == 0, "%s: %d scripts" % (name, facts["scripts"]))
            check(not facts["foreign"], "%s: loads %s" % (name, facts["foreign"]))
            check(not facts["wide"], "%s: wider than the window" % name)
            check(not facts["low"], "%s: low contrast: %s" % (name, facts["low"][:5]))
            for t in facts["tables"]:
                check(t["headers"] > 0 and t["unscoped"] == 0 and t["caption"], "%s: table %s" % (name, t))
            check(os.path.getsize(os.path.join(shots, name + ".png")) > 1000, "%s: no screenshot" % name)
    finally:
        if browser:
            browser.close()
        ledgerd.terminate()
        ledgerd.wait()
        shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        sys.exit(1)
    print("PASS: %d pages checked in Chromium; screenshots in %s" % (len(pages), shots))


if __name__ == "__main__":
    main()
