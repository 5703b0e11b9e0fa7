"""Checks report.html of evidence packs in headless Chromium, from the DOM:
what an auditor needs to see (every entry and step with its UTC time, the
steps in the order they started, the calls with their decisions and
reasons, the denied and unknown steps, costs, the verification section),
the timeline's layout (labels never over bars, a denied step a mark, a UTC
axis), that an emitter's markup stays text (no script, no element it
wrote), and print: on A4 and Letter every table fits the page's content
width at the print width (DOM), the printed pages' right margins are blank
(pdftoppm) and no printed word reaches into them (pdftotext -bbox).

Usage: report_page_test.py TEAM_PACK_DIR RUN_PACK_DIR VKEY ARTIFACTS WORK
(the pack directories extracted, as report_chromium_test.sh makes them)."""
import base64
import datetime
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chromium import Chromium  # noqa: E402

team_dir, run_dir, vkey_path, artifacts, work = sys.argv[1:6]
HOSTILE_RUN = "evil-<script>alert(1)</script>\"'</td>"


def utc(us):
    t = datetime.datetime.fromtimestamp(us // 1000000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (us % 1000000 // 1000)


def load(pack):
    entries = [json.loads(line) for line in open(os.path.join(pack, "entries.jsonl"))]
    outcomes = json.load(open(os.path.join(pack, "outcomes.json")))
    manifest = json.load(open(os.path.join(pack, "manifest.json")))
    return entries, outcomes, manifest


def text_of(browser, selector):
    return browser.eval("Array.from(document.querySelectorAll(%s)).map(e => e.textContent)" % json.dumps(selector))


def check_no_markup_from_entries(browser):
    """Every element is one the report writes; the emitter's markup is text."""
    assert browser.eval("document.scripts.length") == 0, "a script element in the report"
    tags = set(browser.eval("Array.from(document.querySelectorAll('*')).map(e => e.localName)"))
    allowed = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "strong", "code", "pre",
               "table", "colgroup", "col", "thead", "tbody", "tr", "th", "td", "ol", "li", "svg", "line", "text",
               "rect", "polygon"}
    assert tags <= allowed, "elements the report does not write: %s" % (tags - allowed)
    handlers = browser.eval("Array.from(document.querySelectorAll('*')).flatMap(e => "
                            "Array.from(e.attributes).map(a => a.name)).filter(n => n.startsWith('on'))")
    assert handlers == [], handlers
    assert browser.eval("document.styleSheets.length") == 1, "only the report's own style sheet"
    body = browser.eval("document.body.textContent")
    for literal in [HOSTILE_RUN, "<script>alert(5)</script>", "\"</td><td onclick=alert(6)>",
                    "</td></tr><script>alert(7)</script>", "'</td></tr></table><script>alert(4)</script>",
                    "\"><img src=x onerror=alert(3)>", "</title><script>alert(2)</script>",
                    "<style>body{display:none}</style>"]:
        assert literal in body, "not shown as text: %r" % literal
    # The strict CSP holds and the page's own style applies (its hash is right).
    csp = browser.eval("document.querySelector('meta[http-equiv=\"Content-Security-Policy\"]').content")
    assert csp.startswith("default-src 'none'; style-src 'sha256-"), csp
    assert "script" not in csp and "unsafe" not in csp, csp
    assert browser.eval("getComputedStyle(document.querySelector('th')).backgroundColor") == "rgb(238, 238, 238)"


def check_entries_and_steps(browser, entries, outcomes):
    rows = browser.eval("Array.from(document.querySelectorAll('table.calls tbody tr')).map("
                        "r => Array.from(r.cells).map(c => c.textContent))")
    by_seq = {int(r[0]): r for r in rows}
    assert len(by_seq) == len(entries) == len(rows), (len(rows), len(entries))
    for e in entries:
        r, receipt = by_seq[e["seq"]], e["receipt"]
        assert r[1] == utc(e["logged_at_us"]), (r, e["logged_at_us"])
        assert r[2] == receipt["kind"], r
        assert r[8] == e["emitter"], r
        if receipt["kind"] == "tool_call":
            assert (r[3], r[4]) == (receipt["tool"], receipt.get("target", "")), r
        if receipt["kind"] in ("tool_call", "model_call"):
            want = receipt["decision"] + (": " + receipt["reason"] if receipt.get("reason") else "")
            assert r[5] == want, (r, want)
        if receipt["kind"] == "model_call" and "input_tokens" in receipt:
            assert r[6] == "%d/%d" % (receipt["input_tokens"], receipt.get("output_tokens", -1)), r
    steps = browser.eval("Array.from(document.querySelectorAll('table.steps tbody tr')).map("
                         "r => Array.from(r.cells).map(c => c.textContent))")
    assert len(steps) == len(outcomes["steps"]), (len(steps), len(outcomes["steps"]))
    started = [s[4] for s in steps]
    assert started == sorted(started), "steps not in the order they started: %s" % started
    for s in outcomes["steps"]:
        start = s["start"]["logged_at_us"] if "start" in s else s["first_at_us"]
        row = [r for r in steps if r[0] == s["run_id"] and r[1] == s["step_id"]]
        assert len(row) == 1, s["step_id"]
        assert row[0][3] == (s["state"].upper() if s["state"] == "unknown" else s["state"]), row
        assert row[0][4] == utc(start), (row, start)
    return steps


def check_timeline(browser, outcomes):
    boxes = browser.eval("""(() => {
      const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
      const all = s => Array.from(document.querySelectorAll(s)).map(box);
      return {labels: all('svg.timeline text.label'), states: all('svg.timeline text.state'),
              bars: all('svg.timeline rect.step'), marks: all('svg.timeline polygon.step'),
              ticks: Array.from(document.querySelectorAll('svg.timeline text.tick')).map(e => e.textContent),
              svg: box(document.querySelector('svg.timeline'))};
    })()""")
    shapes = boxes["bars"] + boxes["marks"]
    assert len(shapes) == len(outcomes["steps"]) == len(boxes["labels"])

    def overlap(a, b):
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
    for text in boxes["labels"] + boxes["states"]:
        for shape in shapes:
            assert not overlap(text, shape), ("a label over a bar", text, shape)
        assert boxes["svg"][0] <= text[0] and text[2] <= boxes["svg"][2], ("a label outside the timeline", text)
    denied = [s for s in outcomes["steps"] if s["state"] == "denied"]
    assert denied, "the pack has no denied step"
    assert len(boxes["marks"]) == len(denied) and browser.eval(
        "document.querySelectorAll('svg.timeline rect.step.denied').length") == 0, "a denied step is not a mark"
    unknown = [s for s in outcomes["steps"] if s["state"] == "unknown"]
    assert unknown and browser.eval("document.querySelectorAll('svg.timeline rect.step.unknown').length") == len(unknown)
    assert len(boxes["ticks"]) >= 2, boxes["ticks"]
    for tick in boxes["ticks"]:
        assert re.fullmatch(r"\d\d:\d\d:\d\d(\.\d{3})?Z|\d{4}-\d\d-\d\d", tick), tick


def check_words(body, outcomes, manifest, vkey):
    denied = [s for s in outcomes["steps"] if s["state"] == "denied"]
    for s in denied:
        assert "deny: " + s["start"]["reason"] in body, s["start"]["reason"]
    assert "charged its reserved cost" in body
    unknown = [s for s in outcomes["steps"] if s["state"] == "unknown"]
    for s in unknown:
        assert "reserved $%.6f, actual $%.6f, charged $%.6f" % (
            s["start"]["cost_reserved_micros"] / 1e6, s["actual_cost_micros"] / 1e6, s["charged_cost_micros"] / 1e6) in body
        assert "declared UNKNOWN at " + utc(s["unknown"]["logged_at_us"]) in body
    assert "This page is only as good as a verifier's OK." in body
    name, key_id = vkey.split("+")[0], vkey.split("+")[1]
    assert "signed bykey %s, key id %s" % (name, key_id) in body, "the checkpoint's key"
    assert "tree size%d" % manifest["tree_size"] in body
    assert "root%s (hex" % manifest["root"] in body
    assert "origin%s" % manifest["origin"] in body


def check_print(browser, name, paper):
    """At the paper's content width (12 mm margins), as printed: every table
    and the page fit; the printed PDF's pages have a blank right margin."""
    width_in, height_in = paper
    content_px = int((width_in - 2 * 12 / 25.4) * 96)
    browser.send("Emulation.setEmulatedMedia", {"media": "print"})
    browser.resize(content_px, 1000)
    wide = browser.eval("""Array.from(document.querySelectorAll('table, pre, svg.timeline'))
      .filter(t => t.getBoundingClientRect().right > %d + 0.5 || t.scrollWidth > t.clientWidth + 1)
      .map(t => t.localName + ' ' + (t.previousElementSibling || {}).textContent)""" % content_px)
    assert wide == [], "%s: wider than the page: %s" % (name, wide)
    assert browser.eval("document.documentElement.scrollWidth") <= content_px, name
    margin_in = 12 / 25.4
    pdf = browser.send("Page.printToPDF", {"paperWidth": width_in, "paperHeight": height_in, "marginTop": margin_in,
                                           "marginBottom": margin_in, "marginLeft": margin_in,
                                           "marginRight": margin_in, "printBackground": True})
    path = os.path.join(artifacts, "report-%s.pdf" % name)
    with open(path, "wb") as f:
        f.write(base64.b64decode(pdf["data"]))
    subprocess.run(["pdftoppm", "-r", "48", "-png", path, os.path.join(artifacts, "report-%s" % name)], check=True)
    gray = os.path.join(work, "print-%s" % name)
    subprocess.run(["pdftoppm", "-r", "48", "-gray", path, gray], check=True)
    pages = sorted(glob.glob(gray + "*.pgm"))
    assert pages, "no page printed"
    for page in pages:
        data = open(page, "rb").read()
        m = re.match(rb"P5\s+(\d+)\s+(\d+)\s+(\d+)\s", data)
        w, h = int(m.group(1)), int(m.group(2))
        pixels = data[m.end():]
        margin_px = int(margin_in * 48) - 2  # the last columns, inside the right margin
        for y in range(h):
            row = pixels[y * w + w - margin_px:(y + 1) * w]
            assert min(row) >= 250, "%s: %s: ink in the right margin at row %d" % (name, page, y)
    # Chromium clips what overflows the content box, so a cut table leaves
    # the margin blank; a word it cut still has its box in the margin.
    words = os.path.join(work, "print-%s.html" % name)
    subprocess.run(["pdftotext", "-bbox", path, words], check=True)
    boxes = open(words).read()
    page_width = float(re.search(r'<page width="([\d.]+)"', boxes).group(1))
    cut = [w for x, w in re.findall(r'xMax="([\d.]+)" yMax="[\d.]+">([^<]*)</word>', boxes)
           if float(x) > page_width - margin_in * 72 + 0.5]
    assert cut == [], "%s: words cut at the right edge: %s" % (name, cut[:5])
    browser.send("Emulation.setEmulatedMedia", {"media": ""})
    return len(pages)


def main():
    vkey = open(vkey_path).read().strip()
    browser = Chromium(os.path.join(work, "profile"), 1200, 900)
    try:
        entries, outcomes, manifest = load(team_dir)
        browser.open("file://" + os.path.join(team_dir, "report.html"))
        check_no_markup_from_entries(browser)
        steps = check_entries_and_steps(browser, entries, outcomes)
        team_entries = len(entries)
        check_timeline(browser, outcomes)
        body = browser.eval("document.body.innerText.replace(/\\t|\\n/g, '')")
        text = browser.eval("document.body.textContent")
        check_words(text, outcomes, manifest, vkey)
        assert "Scope: team team-support from 2000-01-01T00:00:00.000Z to 2100-01-01T00:00:00.000Z" in text, \
            text[:300]
        assert "ledger-verify PACK.tar.gz --vkey ledger.vkey --expect-scope " \
               "team:team-support,2000-01-01T00:00:00Z,2100-01-01T00:00:00Z [--policy FILE] [--tsa-root FILE]" in text
        assert "/usr/bin/python3 export/verify_pack.py PACK.tar.gz --vkey ledger.vkey" in text
        assert "ledger-verify-go --vkey ledger.vkey [--policy FILE] [--tsa-root FILE] PACK.tar.gz" in text
        # Format 7: what the pack says of its keys and its time.
        assert "Keys and time" in text and "by the ledger's clock, signed with its key" in text, text[-3000:]
        assert "none: no time-stamping authority vouches for the ledger's time" in text
        assert body
        browser.screenshot(os.path.join(artifacts, "report-team.png"))
        printed = {paper: check_print(browser, "team-" + paper, size)
                   for paper, size in {"a4": (8.27, 11.69), "letter": (8.5, 11.0)}.items()}

        entries, outcomes, manifest = load(run_dir)
        browser.resize(1200, 900)
        browser.open("file://" + os.path.join(run_dir, "report.html"))
        text = browser.eval("document.body.textContent")
        assert "Scope: run run-0007 of team team-support." in text, text[:300]
        assert "--expect-scope run:team-support/run-0007 [--policy FILE]" in text
        check_entries_and_steps(browser, entries, outcomes)
        browser.screenshot(os.path.join(artifacts, "report-run.png"))
        print("report: %d steps and %d entries of a team window shown with UTC times, printed on A4 (%d pages) "
              "and Letter (%d pages); a run pack's %d entries" % (len(steps), team_entries, printed["a4"],
                                                                  printed["letter"], len(entries)))
    finally:
        browser.close()


main()
