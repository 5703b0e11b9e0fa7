#!/usr/bin/env python3
"""export/verify/python/progress.py: the progress text in each of its forms
(every time-left form and its boundaries, no rate yet, the total unknown),
and the line as a Progress writes it on a made-up clock: not before the
interval, then at most once per interval, erased once at the end and never
written after it, nothing at all when no line was due.

Usage: progress_test.py   (unittest; exit 0 when every case holds)
"""
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import progress  # noqa: E402


class TextTest(unittest.TestCase):
    def test_seconds_left(self):
        self.assertEqual(progress.text(120000, 1000000, 888),
                         "verifying: 120,000 of 1,000,000 entries (12%), 135,135/s, 7 s left")

    def test_rate_is_floored_and_time_left_rounded_up(self):
        # 135,000/s; 880,000 left: 6.5 s, shown as 7.
        self.assertEqual(progress.text(135000, 1000000, 1000),
                         "verifying: 135,000 of 1,000,000 entries (13%), 135,000/s, 7 s left")
        # 2,000 / 3 s = 666.67, floored to 666/s.
        self.assertEqual(progress.text(2000, 2666, 3000),
                         "verifying: 2,000 of 2,666 entries (75%), 666/s, 1 s left")

    def test_minutes_left(self):
        self.assertEqual(progress.text(1000, 61000, 1000),
                         "verifying: 1,000 of 61,000 entries (1%), 1,000/s, 1 min 0 s left")
        self.assertEqual(progress.text(1000, 3600000, 1000),
                         "verifying: 1,000 of 3,600,000 entries (0%), 1,000/s, 59 min 59 s left")

    def test_hours_left(self):
        self.assertEqual(progress.text(1000, 3601000, 1000),
                         "verifying: 1,000 of 3,601,000 entries (0%), 1,000/s, 1 h 0 min left")
        self.assertEqual(progress.text(10, 1000000, 1000),
                         "verifying: 10 of 1,000,000 entries (0%), 10/s, 27 h 46 min left")

    def test_boundaries_of_the_time_left(self):
        for seconds, want in ((0, "0 s"), (59, "59 s"), (60, "1 min 0 s"), (61, "1 min 1 s"),
                              (3599, "59 min 59 s"), (3600, "1 h 0 min"), (3659, "1 h 0 min"),
                              (3660, "1 h 1 min"), (360000, "100 h 0 min")):
            self.assertEqual(progress.time_left(seconds), want)

    def test_all_done(self):
        self.assertEqual(progress.text(1000000, 1000000, 7400),
                         "verifying: 1,000,000 of 1,000,000 entries (100%), 135,135/s, 0 s left")

    def test_nothing_done_yet_has_no_rate(self):
        self.assertEqual(progress.text(0, 1000000, 250), "verifying: 0 of 1,000,000 entries (0%)")

    def test_no_time_elapsed_has_no_rate(self):
        self.assertEqual(progress.text(5, 1000, 0), "verifying: 5 of 1,000 entries (0%)")

    def test_a_rate_below_one_a_second_is_none(self):
        self.assertEqual(progress.text(1, 1000, 1001), "verifying: 1 of 1,000 entries (0%)")

    def test_total_unknown(self):
        self.assertEqual(progress.text(120000, None, 888), "verifying: 120,000 entries, 135,135/s")
        self.assertEqual(progress.text(0, None, 250), "verifying: 0 entries")

    def test_grouping(self):
        for n, want in ((0, "0"), (999, "999"), (1000, "1,000"), (999999, "999,999"), (1234567, "1,234,567")):
            self.assertEqual(progress.grouped(n), want)

    def test_interval_from_the_environment(self):
        self.assertEqual(progress.interval_ms({}), 250)
        self.assertEqual(progress.interval_ms({"LEDGER_PROGRESS_INTERVAL_MS": "1"}), 1)
        self.assertEqual(progress.interval_ms({"LEDGER_PROGRESS_INTERVAL_MS": "0"}), 0)
        for bad in ("", "-1", "1.5", " 1", "\u0661"):
            self.assertEqual(progress.interval_ms({"LEDGER_PROGRESS_INTERVAL_MS": bad}), 250)


class Clock:
    def __init__(self):
        self.ms = 1000

    def __call__(self):
        return self.ms


class ProgressTest(unittest.TestCase):
    def setUp(self):
        self.out, self.clock = io.StringIO(), Clock()
        self.p = progress.Progress(self.out, 250, self.clock)

    def test_lines_at_most_once_per_interval_then_erased_once(self):
        self.p.begin(1000)
        self.clock.ms += 249
        self.p.tick(10)
        self.assertEqual(self.out.getvalue(), "")
        self.clock.ms += 1
        self.p.tick(20)
        self.clock.ms += 100
        self.p.tick(30)
        self.clock.ms += 150
        self.p.tick(500)
        self.p.end()
        self.p.end()
        self.clock.ms += 1000
        self.p.tick(600)
        self.assertEqual(self.out.getvalue(),
                         "\rverifying: 20 of 1,000 entries (2%), 80/s, 13 s left\x1b[K"
                         "\rverifying: 500 of 1,000 entries (50%), 1,000/s, 1 s left\x1b[K"
                         "\r\x1b[K")

    def test_nothing_when_no_line_was_due(self):
        self.p.begin(1000)
        self.clock.ms += 10
        self.p.tick(1000)
        self.p.end()
        self.assertEqual(self.out.getvalue(), "")

    def test_silent_without_a_stream(self):
        p = progress.Progress(None, 0, self.clock)
        p.begin(10)
        self.clock.ms += 1
        p.tick(1)
        p.end()

    def test_not_stderr_of_a_terminal_is_silent(self):
        # The test's stderr may be a terminal; --no-progress is silent either way.
        p = progress.for_stderr(self.out, True, {"LEDGER_PROGRESS_INTERVAL_MS": "0"})
        p.begin(10)
        p.tick(1)
        p.end()
        self.assertEqual(self.out.getvalue(), "")


if __name__ == "__main__":
    unittest.main()
