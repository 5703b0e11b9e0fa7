package main

// Progress on a terminal while the entries are checked: one line, rewritten
// in place on stderr, in the format every verifier of export/verify/ writes
// byte for byte (verify_pack.py's export/verify/python/progress.py).
//
// The line, written at most once per interval (250 ms), is "\r" + the
// text of progressText + "\x1b[K" (carriage return, the text, erase to the
// end of the line); end erases it with "\r\x1b[K", once, and only if a line
// was written, so that what is printed after it starts on a clean line. It
// is written only when stderr is a terminal and --no-progress is not given,
// so the output in pipes and files never holds it.
//
// A progress is used by one goroutine.

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

const progressInterval = 250 * time.Millisecond

// progressIntervalVariable sets the interval in milliseconds (a decimal
// integer), for tests only, so that a short check prints lines too.
const progressIntervalVariable = "LEDGER_PROGRESS_INTERVAL_MS"

// progressText is the text for done entries checked of total (-1 when
// unknown) in elapsed, numbers grouped by commas:
//
//	verifying: DONE of TOTAL entries (P%), RATE/s, LEFT left
//	verifying: DONE of TOTAL entries (P%)      (no rate yet: RATE would be 0)
//	verifying: DONE entries, RATE/s            (TOTAL unknown; ", RATE/s" only when RATE > 0)
//
// P = floor(DONE * 100 / TOTAL) (100 when TOTAL is 0); RATE = floor(DONE *
// 1000 / ELAPSED_MS), ELAPSED_MS the whole milliseconds of elapsed (RATE 0
// when it is 0); LEFT = ceil(max(TOTAL - DONE, 0) / RATE) seconds, written
// by timeLeft.
func progressText(done, total int64, elapsed time.Duration) string {
	var rate int64
	if ms := elapsed.Milliseconds(); ms > 0 {
		rate = done * 1000 / ms
	}
	if total < 0 {
		if rate == 0 {
			return fmt.Sprintf("verifying: %s entries", grouped(done))
		}
		return fmt.Sprintf("verifying: %s entries, %s/s", grouped(done), grouped(rate))
	}
	percent := int64(100)
	if total > 0 {
		percent = done * 100 / total
	}
	line := fmt.Sprintf("verifying: %s of %s entries (%d%%)", grouped(done), grouped(total), percent)
	if rate == 0 {
		return line
	}
	var left int64
	if total > done {
		left = (total - done + rate - 1) / rate
	}
	return fmt.Sprintf("%s, %s/s, %s left", line, grouped(rate), timeLeft(left))
}

// grouped is n (>= 0) in decimal, its digits grouped by three with commas.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// timeLeft is "N s" under a minute, "M min S s" under an hour, "H h M min"
// from an hour on.
func timeLeft(seconds int64) string {
	switch {
	case seconds < 60:
		return fmt.Sprintf("%d s", seconds)
	case seconds < 3600:
		return fmt.Sprintf("%d min %d s", seconds/60, seconds%60)
	}
	return fmt.Sprintf("%d h %d min", seconds/3600, seconds%3600/60)
}

// progress writes the line of one check of entries to w. Its methods do
// nothing on a nil *progress.
type progress struct {
	w           io.Writer
	interval    time.Duration
	now         func() time.Time
	total       int64
	begun, last time.Time
	shown, over bool
}

// terminalProgress is the progress written to stderr when it is a
// terminal and noProgress is false; nil otherwise. A terminal is a file
// that answers the TCGETS ioctl, as isatty(3) asks: /dev/null, a character
// device too, is not one.
func terminalProgress(noProgress bool) *progress {
	if noProgress {
		return nil
	}
	if !isTerminal(os.Stderr.Fd()) {
		return nil
	}
	return &progress{w: os.Stderr, interval: progressIntervalFrom(os.Getenv(progressIntervalVariable)),
		now: time.Now}
}

// progressIntervalFrom is the interval LEDGER_PROGRESS_INTERVAL_MS's value
// v sets: v milliseconds when v is a decimal integer, progressInterval
// otherwise.
func progressIntervalFrom(v string) time.Duration {
	for _, c := range v {
		if c < '0' || c > '9' {
			return progressInterval
		}
	}
	ms, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return progressInterval
	}
	return time.Duration(ms) * time.Millisecond
}

// begin starts the clock of the check of total entries (-1 when unknown).
func (p *progress) begin(total int64) {
	if p == nil {
		return
	}
	p.total = total
	p.begun = p.now()
	p.last = p.begun
}

// tick says done entries are checked: a line when an interval has passed
// since the last one (or since begin).
func (p *progress) tick(done int64) {
	if p == nil || p.over || p.begun.IsZero() {
		return
	}
	now := p.now()
	if now.Sub(p.last) < p.interval {
		return
	}
	p.last = now
	fmt.Fprintf(p.w, "\r%s\x1b[K", progressText(done, p.total, now.Sub(p.begun)))
	p.shown = true
}

// end says the check is over, whatever its outcome: the line is erased if
// one was written, and no line follows.
func (p *progress) end() {
	if p == nil || p.over {
		return
	}
	p.over = true
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// isTerminal reports whether fd is a terminal: whether it answers TCGETS.
func isTerminal(fd uintptr) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(syscall.TCGETS), uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
