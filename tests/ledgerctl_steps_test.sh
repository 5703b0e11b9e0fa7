#!/usr/bin/env bash
# ledgerctl steps as a person reads it: across teams (no --team) the table
# has a TEAM column; with --team it has none; every column starts where its
# header starts, however long the run and step ids.
# Usage: ledgerctl_steps_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
start_ledgerd --origin steps.test/log
long_run=run-2026-01-01-refund-triage-0123456789abcdef
long_step=classify-the-customer-email-and-route-it
now=$(date +%s%6N)
cat > "$work/receipts.jsonl" <<JSON
{"receipt_id":"a1","kind":"agent_start","team":"team-a","run_id":"r1","step_id":"s1","occurred_at_us":$now,"decision":"allow","timeout_ms":600000}
{"receipt_id":"b1","kind":"agent_start","team":"team-b-with-a-long-name","run_id":"$long_run","step_id":"$long_step","occurred_at_us":$now,"decision":"deny","reason":"no"}
JSON
ctl append "$work/receipts.jsonl" > /dev/null
ctl steps > "$work/all.txt"
ctl steps --team team-a > "$work/one.txt"
/usr/bin/python3 - "$work/all.txt" "$work/one.txt" "$long_run" "$long_step" <<'PY'
import re, sys
every, one, long_run, long_step = sys.argv[1:]
def columns(path, want_header):
    lines = open(path).read().splitlines()
    header = lines[0]
    names = re.findall(r"\S+(?: \(UTC\))?", header)
    assert names == want_header, "%s: header %s" % (path, names)
    starts = [header.index(n) for n in names]
    for line in lines[1:]:
        for name, at in zip(names, starts):
            assert at == 0 or line[at - 2:at] == "  " and line[at] != " ", \
                "%s: %s does not start at column %d in %r" % (path, name, at, line)
    return [dict(zip(names, re.split(r"\s{2,}", l))) for l in lines[1:]]
head = ["STATE", "RUN", "STEP", "TRY", "STARTED (UTC)", "CALLS", "CHARGED", "SEQS", "ANOMALIES"]
rows = columns(every, ["TEAM"] + head)
assert sorted((r["TEAM"], r["RUN"], r["STEP"], r["STATE"]) for r in rows) == [
    ("team-a", "r1", "s1", "pending"), ("team-b-with-a-long-name", long_run, long_step, "denied")], rows
rows = columns(one, head)
assert [(r["RUN"], r["STEP"]) for r in rows] == [("r1", "s1")], rows
print("steps: a TEAM column across teams, none for one team; columns aligned for %d-byte ids" % len(long_run))
PY
echo PASS
