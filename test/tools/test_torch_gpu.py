#!/usr/bin/env python3
"""bench/compare/torch_gpu.py without a GPU: its energy arithmetic on made-up readings (only the idle sampled
before the tasks is subtracted; gross beside net; the window recorded), the order of its
measurement on a made-up board whose power reading is a one-second average as NVML's is on Hopper
(settle, idle, tasks, idle after), and its command line (one error line, exit 2; energy without
NVML says why, exit 0).

  test_torch_gpu.py SOURCE_ROOT
"""
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "compare"))
import torch_gpu  # noqa: E402


class Board:
    """idle W, except busy W while a task runs; power_w() is the mean over the last `average` seconds;
    the energy counter is exact; the clock moves only on sleep() and tasks."""

    def __init__(self, idle=70.0, busy=400.0, average=1.0):
        self.idle, self.busy, self.average, self.t = idle, busy, average, 0.0
        self.spans, self.task_starts, self.reads = [], [], []

    def joules(self, a, b):
        busy = sum(max(0.0, min(b, e) - max(a, s)) for s, e in self.spans)
        return self.idle * (b - a) + (self.busy - self.idle) * busy

    def power_w(self):
        self.reads.append(self.t)
        return self.joules(self.t - self.average, self.t) / self.average

    def energy_mj(self):
        return round(self.joules(0, self.t) * 1e3)

    def now(self):
        return self.t

    def sleep(self, s):
        self.t += s

    def task(self, seconds=0.002):
        self.task_starts.append(self.t)
        self.spans.append((self.t, self.t + seconds))
        self.t += seconds
        return seconds


def options(settle):
    return types.SimpleNamespace(settle_seconds=settle, idle_seconds=2.0, idle_after_seconds=2.0, seconds=4.0,
                                 min_tasks=10, sample_interval=0.1)


class Arithmetic(unittest.TestCase):
    def test_only_the_idle_before_is_subtracted_and_gross_is_beside_net(self):
        r = torch_gpu.summarize({"idle_before_watts": [60, 60], "idle_after_watts": [80], "energy_start_mj": 1000,
                                 "energy_end_mj": 11000, "run_seconds": 0.1, "task_seconds": [0.01] * 10,
                                 "settle_seconds": 3, "idle_before_seconds": 10, "idle_after_seconds": 5})
        self.assertTrue(r["available"])
        self.assertAlmostEqual(r["idle_watts"]["used"], 60)
        self.assertAlmostEqual(r["idle_watts"]["after"], 80)
        self.assertAlmostEqual(r["net_joules"], 4)
        self.assertAlmostEqual(r["joules_per_task"], 0.4)
        self.assertAlmostEqual(r["gross_joules_per_task"], 1.0)
        self.assertEqual(r["window"]["idle_samples_before"], 2)
        self.assertAlmostEqual(r["window"]["tasks_seconds"], 0.1)
        self.assertAlmostEqual(r["window"]["idle_before_seconds"], 10)

    def test_no_idle_before_gives_gross_only_and_a_counter_going_back_is_refused(self):
        r = torch_gpu.summarize({"idle_before_watts": [], "idle_after_watts": [70], "energy_start_mj": 0,
                                 "energy_end_mj": 5000, "run_seconds": 1, "task_seconds": [0.1, 0.1],
                                 "settle_seconds": 0, "idle_before_seconds": 0, "idle_after_seconds": 1})
        self.assertIsNone(r["joules_per_task"])
        self.assertAlmostEqual(r["gross_joules_per_task"], 2.5)
        self.assertIn("gross joules only", r["note"])
        r = torch_gpu.summarize({"idle_before_watts": [1], "idle_after_watts": [], "energy_start_mj": 10,
                                 "energy_end_mj": 5, "run_seconds": 1, "task_seconds": [0.1],
                                 "settle_seconds": 0, "idle_before_seconds": 0, "idle_after_seconds": 0})
        self.assertFalse(r["available"])


class Protocol(unittest.TestCase):
    def test_idle_is_read_after_a_settle_and_before_any_task(self):
        b = Board()
        b.spans.append((0, 5))  # the warm-up just ended
        b.t = 5
        r = torch_gpu.measure_energy(b, b.task, options(3))
        self.assertGreaterEqual(b.reads[0], 8)
        before = [t for t in b.reads if t <= b.task_starts[0]]
        self.assertEqual(len(before), r["window"]["idle_samples_before"])
        self.assertGreaterEqual(len(before), 20)
        self.assertAlmostEqual(r["idle_watts"]["before"], 70)
        self.assertEqual(r["tasks"], 2000)
        self.assertAlmostEqual(r["joules_per_task"], 0.002 * 330, delta=0.002 * 330 * 1e-3)
        self.assertAlmostEqual(r["gross_joules_per_task"], 0.002 * 400, delta=0.002 * 400 * 1e-3)
        self.assertAlmostEqual(r["idle_watts"]["after"], 70)
        self.assertGreaterEqual(r["window"]["idle_after_seconds"], 2)

    def test_without_the_settle_the_warm_up_inflates_idle_and_the_net_is_too_low(self):
        b = Board()
        b.spans.append((0, 5))
        b.t = 5
        r = torch_gpu.measure_energy(b, b.task, options(0))
        self.assertGreater(r["idle_watts"]["before"], 80)
        self.assertLess(r["joules_per_task"], 0.002 * 330 * 0.97)


class CommandLine(unittest.TestCase):
    def run_it(self, *args):
        return subprocess.run([sys.executable, os.path.join(ROOT, "bench", "compare", "torch_gpu.py"), *args],
                              capture_output=True, text=True, timeout=120)

    def test_bad_command_lines_are_one_line_and_exit_2(self):
        for args in ([], ["--input", "x.npz"], ["--input", "x.npz", "--timing-runs", "-1"],
                     ["--input", "x.npz", "--cold-runs", "3", "--energy"], ["--input", "x.npz", "--timing-runs", "z"]):
            p = self.run_it(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertTrue(p.stderr.startswith("torch_gpu: error: "), p.stderr)

    def test_energy_without_nvml_says_why_and_exits_0(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "e.json")
            p = self.run_it("--input", "unused.npz", "--energy", "--nvml-library", "libnvidia-ml-absent.so.1",
                            "--output", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                e = json.load(f)["energy"]
            self.assertFalse(e["available"])
            self.assertIn("libnvidia-ml-absent.so.1", e["reason"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
