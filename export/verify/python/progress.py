"""Progress on a terminal while a verifier checks a pack's entries: one
line, rewritten in place on stderr, in the format every verifier of
export/verify/ writes byte for byte (ledger-verify-go's progress.go).

The line, written at most once per interval (250 ms), is
"\\r" + text() + "\\x1b[K" (carriage return, the text, erase to the end of
the line); end() erases it with "\\r\\x1b[K", once, and only if a line was
written, so that what is printed after it starts on a clean line. The
verifiers write it only when stderr is a terminal and --no-progress is not
given, so their output in pipes and files never holds it.

text()'s forms, numbers grouped by commas:

  verifying: DONE of TOTAL entries (P%), RATE/s, LEFT left
  verifying: DONE of TOTAL entries (P%)      (no rate yet: RATE would be 0)
  verifying: DONE entries, RATE/s            (TOTAL unknown; ", RATE/s" only when RATE > 0)

P = floor(DONE * 100 / TOTAL) (100 when TOTAL is 0); RATE = floor(DONE *
1000 / ELAPSED_MS), ELAPSED_MS the whole milliseconds since the entries'
check began (RATE 0 when it is 0); LEFT = ceil(max(TOTAL - DONE, 0) / RATE)
seconds, written by time_left().

A Progress is used by one thread.
"""
import os
import time

INTERVAL_MS = 250
# For tests only: the interval in milliseconds, a decimal integer, so that a
# short check prints lines too.
INTERVAL_VARIABLE = "LEDGER_PROGRESS_INTERVAL_MS"


def grouped(n):
    """n (an integer >= 0) in decimal, its digits grouped by three with commas."""
    return "{:,}".format(n)


def time_left(seconds):
    """`N s` under a minute, `M min S s` under an hour, `H h M min` from an hour on."""
    if seconds < 60:
        return "%d s" % seconds
    if seconds < 3600:
        return "%d min %d s" % (seconds // 60, seconds % 60)
    return "%d h %d min" % (seconds // 3600, seconds % 3600 // 60)


def text(done, total, elapsed_ms):
    """The progress text for `done` entries checked of `total` (None when
    unknown) in elapsed_ms whole milliseconds, without "\\r" and "\\x1b[K"."""
    rate = done * 1000 // elapsed_ms if elapsed_ms > 0 else 0
    if total is None:
        return "verifying: %s entries" % grouped(done) + (", %s/s" % grouped(rate) if rate > 0 else "")
    percent = done * 100 // total if total > 0 else 100
    line = "verifying: %s of %s entries (%d%%)" % (grouped(done), grouped(total), percent)
    if rate == 0:
        return line
    left = -(-max(total - done, 0) // rate)
    return line + ", %s/s, %s left" % (grouped(rate), time_left(left))


def interval_ms(environ):
    """The interval: LEDGER_PROGRESS_INTERVAL_MS when it is a decimal integer, else INTERVAL_MS."""
    value = environ.get(INTERVAL_VARIABLE, "")
    return int(value) if value.isascii() and value.isdigit() else INTERVAL_MS


def monotonic_ms():
    return time.monotonic_ns() // 1000000


class Progress:
    """The progress line of one check of entries, written to `out` (a text
    stream) every interval_ms at most; clock() returns milliseconds."""

    def __init__(self, out, interval=INTERVAL_MS, clock=monotonic_ms):
        self._out, self._interval, self._clock = out, interval, clock
        self._total = self._begun = self._last = None
        self._shown = False

    def begin(self, total):
        """The check of `total` entries (None when unknown) begins: the clock starts."""
        self._total = total
        self._begun = self._last = self._clock()

    def tick(self, done):
        """`done` entries are checked: a line when an interval has passed
        since the last one (or since begin())."""
        if self._out is None or self._begun is None:
            return
        now = self._clock()
        if now - self._last < self._interval:
            return
        self._last = now
        self._out.write("\r" + text(done, self._total, now - self._begun) + "\x1b[K")
        self._out.flush()
        self._shown = True

    def end(self):
        """The check is over, whatever its outcome: the line is erased if
        one was written, and no line follows."""
        if self._out is not None and self._shown:
            self._out.write("\r\x1b[K")
            self._out.flush()
        self._out = None


def for_stderr(stream, no_progress, environ=os.environ):
    """The Progress a verifier writes to `stream` (its stderr): silent
    (writing nothing) with --no-progress or when file descriptor 2 is not a
    terminal."""
    if no_progress or not os.isatty(2):
        return Progress(None)
    return Progress(stream, interval_ms(environ))
