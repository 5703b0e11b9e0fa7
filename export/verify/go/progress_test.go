package main

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// The progress text in each of its forms (every time-left form and its
// boundaries, no rate yet, the total unknown), the same cases as
// export/verify/python/progress_test.py, and the line as a progress writes
// it on a made-up clock.

func TestProgressText(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{120000, 1000000, 888 * ms, "verifying: 120,000 of 1,000,000 entries (12%), 135,135/s, 7 s left"},
		// 135,000/s; 880,000 left: 6.5 s, shown as 7.
		{135000, 1000000, 1000 * ms, "verifying: 135,000 of 1,000,000 entries (13%), 135,000/s, 7 s left"},
		// 2,000 / 3 s = 666.67, floored to 666/s.
		{2000, 2666, 3000 * ms, "verifying: 2,000 of 2,666 entries (75%), 666/s, 1 s left"},
		// Elapsed in whole milliseconds: 999.9 ms is 999.
		{999, 2000, 999*ms + 900*time.Microsecond, "verifying: 999 of 2,000 entries (49%), 1,000/s, 2 s left"},
		{1000, 61000, 1000 * ms, "verifying: 1,000 of 61,000 entries (1%), 1,000/s, 1 min 0 s left"},
		{1000, 3600000, 1000 * ms, "verifying: 1,000 of 3,600,000 entries (0%), 1,000/s, 59 min 59 s left"},
		{1000, 3601000, 1000 * ms, "verifying: 1,000 of 3,601,000 entries (0%), 1,000/s, 1 h 0 min left"},
		{10, 1000000, 1000 * ms, "verifying: 10 of 1,000,000 entries (0%), 10/s, 27 h 46 min left"},
		{1000000, 1000000, 7400 * ms, "verifying: 1,000,000 of 1,000,000 entries (100%), 135,135/s, 0 s left"},
		// No rate: nothing done yet, no time elapsed, under one a second.
		{0, 1000000, 250 * ms, "verifying: 0 of 1,000,000 entries (0%)"},
		{5, 1000, 0, "verifying: 5 of 1,000 entries (0%)"},
		{1, 1000, 1001 * ms, "verifying: 1 of 1,000 entries (0%)"},
		// The total unknown.
		{120000, -1, 888 * ms, "verifying: 120,000 entries, 135,135/s"},
		{0, -1, 250 * ms, "verifying: 0 entries"},
	} {
		if got := progressText(c.done, c.total, c.elapsed); got != c.want {
			t.Errorf("progressText(%d, %d, %v):\n got  %q\n want %q", c.done, c.total, c.elapsed, got, c.want)
		}
	}
}

func TestTimeLeft(t *testing.T) {
	for seconds, want := range map[int64]string{0: "0 s", 59: "59 s", 60: "1 min 0 s", 61: "1 min 1 s",
		3599: "59 min 59 s", 3600: "1 h 0 min", 3659: "1 h 0 min", 3660: "1 h 1 min", 360000: "100 h 0 min"} {
		if got := timeLeft(seconds); got != want {
			t.Errorf("timeLeft(%d): got %q, want %q", seconds, got, want)
		}
	}
}

func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 999999: "999,999",
		1234567: "1,234,567"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d): got %q, want %q", n, got, want)
		}
	}
}

func TestProgressIntervalFrom(t *testing.T) {
	for v, want := range map[string]time.Duration{"": progressInterval, "1": time.Millisecond, "0": 0,
		"-1": progressInterval, "1.5": progressInterval, " 1": progressInterval, "+1": progressInterval,
		"\u0661": progressInterval} {
		if got := progressIntervalFrom(v); got != want {
			t.Errorf("progressIntervalFrom(%q): got %v, want %v", v, got, want)
		}
	}
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time           { return c.t }
func (c *fakeClock) advance(ms time.Duration) { c.t = c.t.Add(ms * time.Millisecond) }

func newTestProgress() (*progress, *bytes.Buffer, *fakeClock) {
	var out bytes.Buffer
	c := &fakeClock{time.Unix(1_800_000_000, 0)}
	return &progress{w: &out, interval: progressInterval, now: c.now}, &out, c
}

func TestProgressLinesAtMostOncePerIntervalThenErasedOnce(t *testing.T) {
	p, out, c := newTestProgress()
	p.begin(1000)
	c.advance(249)
	p.tick(10)
	if out.Len() != 0 {
		t.Fatalf("a line before the interval: %q", out.String())
	}
	c.advance(1)
	p.tick(20)
	c.advance(100)
	p.tick(30)
	c.advance(150)
	p.tick(500)
	p.end()
	p.end()
	c.advance(1000)
	p.tick(600)
	want := "\rverifying: 20 of 1,000 entries (2%), 80/s, 13 s left\x1b[K" +
		"\rverifying: 500 of 1,000 entries (50%), 1,000/s, 1 s left\x1b[K" +
		"\r\x1b[K"
	if out.String() != want {
		t.Errorf("got  %q\nwant %q", out.String(), want)
	}
}

func TestProgressNothingWhenNoLineWasDue(t *testing.T) {
	p, out, c := newTestProgress()
	p.begin(1000)
	c.advance(10)
	p.tick(1000)
	p.end()
	if out.Len() != 0 {
		t.Errorf("got %q, want nothing", out.String())
	}
}

func TestProgressNilIsSilent(t *testing.T) {
	var p *progress
	p.begin(10)
	p.tick(1)
	p.end()
	if terminalProgress(true) != nil {
		t.Errorf("terminalProgress(true): a progress despite --no-progress")
	}
}

// /dev/null is a character device but not a terminal: no progress there.
func TestDevNullIsNoTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null.Fd()) {
		t.Errorf("isTerminal(%s) = true", os.DevNull)
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skip("no /dev/ptmx:", err)
	}
	defer ptmx.Close()
	if !isTerminal(ptmx.Fd()) {
		t.Errorf("isTerminal(/dev/ptmx) = false")
	}
}
