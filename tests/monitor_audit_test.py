"""A monitor's replay agrees byte for byte with `ledgerctl audit` on a store
of a million entries (CTest `monitor_audit`, labels monitor and interop).

A store of ENTRIES entries (1,000,000 unless MONITOR_AUDIT_ENTRIES says
otherwise) is filled by the ledger's own log on an injected clock
(tests/util/retention_fill.cc: runs and teams of three, steps, calls); a
real ledgerd serves it over HTTP; `ledger-monitor --once` replays every
entry from the entry bundles and cosigns the latest time note; the ledger
is stopped, and `ledgerctl audit --replay-state` replays the store with
the same rules. The monitor's replay.state and the audit's are the same
bytes: the same tree, chain head, run heads and team heads, each written
down by a different program from a different source (HTTP bundles, the
store's rows)."""
import hashlib
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ledger_testlib import Ledgerd, fail  # noqa: E402

ORIGIN = "monitor-audit.test/log"


def main():
    build = os.path.abspath(sys.argv[1])
    entries = int(os.environ.get("MONITOR_AUDIT_ENTRIES", "1000000"))
    with tempfile.TemporaryDirectory(prefix="monitor-audit-") as work:
        data, mdata = os.path.join(work, "data"), os.path.join(work, "monitor")
        t = time.monotonic()
        subprocess.run([os.path.join(build, "tests", "retention_fill"), "fill", data, "--entries", str(entries),
                        "--days", "30", "--origin", ORIGIN], check=True, stdout=subprocess.DEVNULL)
        print("filled %d entries in %.0f s" % (entries, time.monotonic() - t))
        ledgerd = Ledgerd(build, work, data, ORIGIN, "--projections=false")
        try:
            vkey = os.path.join(work, "log.vkey")
            with open(vkey, "w") as f:
                f.write(ledgerd.ctl("vkey").stdout)
            size = int(ledgerd.ctl("checkpoint").stdout.splitlines()[1])
            t = time.monotonic()
            r = subprocess.run([os.path.join(build, "cmd", "ledger-monitor"), "--data", mdata, "--log",
                                "http://" + ledgerd.http, "--log-key", vkey, "--once"], capture_output=True,
                               text=True, timeout=900)
            if r.returncode != 0:
                fail("ledger-monitor --once: exit %d: %s" % (r.returncode, r.stderr[-2000:]))
            print("the monitor replayed and cosigned in %.0f s" % (time.monotonic() - t))
            cosigned = int(open(os.path.join(mdata, "cosigned.note")).read().splitlines()[2])
        finally:
            ledgerd.stop()
        if cosigned != size or size < entries:
            fail("the monitor cosigned the note of %d; the ledger's latest is of %d (filled %d)"
                 % (cosigned, size, entries))
        state = os.path.join(work, "audit.state")
        r = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "audit", "--data", data, "--origin", ORIGIN,
                            "--no-progress", "--replay-state", state], capture_output=True, text=True)
        if r.returncode != 0:
            fail("ledgerctl audit: %s%s" % (r.stdout, r.stderr))
        mine = open(os.path.join(mdata, "replay.state"), "rb").read()
        audited = open(state, "rb").read()
        # The state's size (after its header) is the tree size both replayed.
        if mine != audited:
            fail("the monitor's replay.state (%d bytes, sha256 %s) is not the audit's (%d bytes, sha256 %s)"
                 % (len(mine), hashlib.sha256(mine).hexdigest(), len(audited), hashlib.sha256(audited).hexdigest()))
        print("ok: the monitor's replay of %d entries is the audit's byte for byte: %d bytes, sha256 %s"
              % (size, len(mine), hashlib.sha256(mine).hexdigest()))
        print("ok: audit: %s" % r.stdout.strip().splitlines()[-1])
    print("PASS")


if __name__ == "__main__":
    main()
