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


class Config(unittest.TestCase):
    """--config/--set (gpu-check's call 5 times the learner at each frontier entry): torchref's own reader
    (rev88's defaults, the file, then each --set, the last winning), a bad key or value one line and
    exit 2, and the config reaching the model: width 128, depth 4 built and run on the CPU."""

    # rev88, written from docs/spec.md §1 (not read from torchref, whose defaults are what is checked).
    REV88 = {"depth": 2, "width": 82, "alpha": 0.5, "seed": 11, "epochs": 2, "learning_rate": 0.1,
             "batch_size": 128, "momentum": 0.9, "weight_decay": 0.0}

    def test_defaults_are_rev88_and_the_file_then_each_set_win_in_order(self):
        self.assertEqual(torch_gpu.parse(["--input", "x.npz", "--timing-runs", "1"]).cfg, self.REV88)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "entry.json")
            with open(path, "w") as f:
                json.dump({"depth": 4, "width": 128, "alpha": 1.0, "epochs": 32, "learning_rate": 0.05}, f)
            a = torch_gpu.parse(["--input", "x.npz", "--timing-runs", "1", "--config", path, "--set", "epochs=3",
                                 "--set", "batch_size=64", "--set", "epochs=5"])
        self.assertEqual(a.cfg, dict(self.REV88, depth=4, width=128, alpha=1.0, epochs=5, learning_rate=0.05,
                                     batch_size=64))

    def test_a_bad_key_or_value_is_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            wrong = os.path.join(tmp, "wrong.json")
            with open(wrong, "w") as f:
                json.dump({"width": 127}, f)
            unknown = os.path.join(tmp, "unknown.json")
            with open(unknown, "w") as f:
                json.dump({"widht": 128}, f)
            for extra, word in ((["--set", "width=127"], "width"), (["--set", "widht=128"], "widht"),
                                (["--set", "depth=two"], "depth"), (["--set", "depth"], "key=value"),
                                (["--config", wrong], "wrong.json"), (["--config", unknown], "widht"),
                                (["--config", os.path.join(tmp, "absent.json")], "absent.json"),
                                (["--config", wrong, "--set", "width=129"], "width=129")):
                p = CommandLine.run_it(self, "--input", "x.npz", "--timing-runs", "1", *extra)
                self.assertEqual(p.returncode, 2, (extra, p.stderr))
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertTrue(p.stderr.startswith("torch_gpu: error: "), p.stderr)
                self.assertIn(word, p.stderr)
        # a later --set repairs the file's value
        self.assertEqual(torch_gpu.task_config(wrong_file(), ["width=128"])["width"], 128)

    def test_the_config_reaches_the_model_on_the_cpu(self):
        try:
            import numpy as np
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("no torch here")
        cfg = torch_gpu.task_config(None, ["width=128", "depth=4", "epochs=1", "batch_size=16", "alpha=1"])
        rng = np.random.default_rng(5)
        inputs = (rng.random((40, 1, 9, 9), dtype=np.float32) / 4, rng.integers(0, 10, 40).astype(np.int64),
                  rng.random((8, 1, 9, 9), dtype=np.float32) / 4)
        task = torch_gpu.build_task(cfg, inputs, "cpu")
        self.assertEqual([tuple(p.shape) for p in task.params], [(64, 64)] * 8 + [(10, 128), (10,)])
        self.assertEqual(tuple(task.x_train.shape), (40, 128))
        task.run()
        self.assertTrue(bool((task.x_train[:, 81:] == 0).all()))  # 81 pixels lifted to 128 coordinates
        self.assertEqual(tuple(task.scores.shape), (8, 10))
        self.assertTrue(bool(torch_gpu_finite(task.scores)))


def wrong_file():
    path = os.path.join(tempfile.mkdtemp(), "wrong.json")
    with open(path, "w") as f:
        json.dump({"width": 127}, f)
    return path


def torch_gpu_finite(t):
    import torch
    return torch.isfinite(t).all()


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    import unittest_exit  # noqa: E402
    unittest_exit.main()
