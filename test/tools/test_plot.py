#!/usr/bin/python3
"""tools/plot: the numbers it charts, against numpy's, the figures it writes, and the --output it refuses.

usage: test_plot.py SOURCE_ROOT   (exit 77, meson's "skipped", without numpy or matplotlib)
"""
import importlib.machinery
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
    import matplotlib  # noqa: F401  (tools/plot needs it)
except ImportError as e:
    print(f"{e.name} is not available: skipped")
    sys.exit(77)

ROOT = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else \
    os.environ.get("REVGRAPH_SOURCE_ROOT", ".")
PLOT = os.path.join(ROOT, "tools", "plot")
loader = importlib.machinery.SourceFileLoader("plot", PLOT)
plot = importlib.util.module_from_spec(importlib.util.spec_from_loader("plot", loader))
loader.exec_module(plot)

BASE = {"depth": 2, "alpha": 0.5, "seed": 11, "epochs": 2, "learning_rate": 0.1, "batch_size": 128,
        "momentum": 0.9, "weight_decay": 0.0}


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


class PlotTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        # 3 seeds × 3 depths × 2 learning rates, made-up results with a pattern and noise.
        g = np.random.Generator(np.random.PCG64(5))
        self.points = []
        for seed in (1, 2, 3):
            for depth in (1, 2, 4):
                for lr in (0.05, 0.2):
                    c = dict(BASE, seed=seed, depth=depth, learning_rate=lr)
                    acc = 0.9 - 0.01 * depth * (lr > 0.1) + 0.005 * g.standard_normal()
                    self.points.append({"index": len(self.points), "points": 18, "config": c, "correct": 0,
                                        "total": 1, "accuracy": float(acc),
                                        "run_seconds": float(0.002 * depth + 0.0005 * g.random())})
        self.sweep = os.path.join(self.tmp.name, "s.jsonl")
        with open(self.sweep, "w") as f:
            for p in self.points:
                f.write(json.dumps(p, separators=(",", ":")) + "\n")
            f.write('{"index":18,"poi')  # a sweep still running: its partial line is left out

    def tearDown(self):
        self.tmp.cleanup()

    def test_sweep_numbers_are_numpys(self):
        panels = plot.sweep_panels(plot.read_sweep(self.sweep))
        self.assertEqual([p["key"] for p in panels], ["depth", "learning_rate"])
        self.assertEqual([p["series_key"] for p in panels], ["learning_rate", "depth"])
        for panel in panels:
            key, skey = panel["key"], panel["series_key"]
            self.assertEqual(list(panel["rows"]), ["accuracy", "ms"])
            for what, scale in (("accuracy", 100), ("ms", 1000)):
                for sv, line in panel["rows"][what].items():
                    self.assertEqual(len(line), 3 if key == "depth" else 2)
                    for x, mean, sd, n in line:
                        field = "accuracy" if what == "accuracy" else "run_seconds"
                        v = np.array([p[field] * scale for p in self.points
                                      if p["config"][key] == x and p["config"][skey] == sv])
                        self.assertEqual(n, 3)  # the seeds
                        self.assertAlmostEqual(mean, v.mean(), places=9)
                        self.assertAlmostEqual(sd, v.std(ddof=1), places=9)
        # Seeds alone: one panel against seed; without accuracy, time only.
        only = [dict(p, config=dict(p["config"], depth=2, learning_rate=0.1)) for p in self.points[:3]]
        for p in only:
            del p["accuracy"]
        panels = plot.sweep_panels(only)
        self.assertEqual([(p["key"], list(p["rows"])) for p in panels], [("seed", ["ms"])])

    def run_plot(self, *args):
        return subprocess.run([sys.executable, PLOT, *args], capture_output=True, text=True, timeout=120)

    def test_pngs(self):
        out = os.path.join(self.tmp.name, "s.png")
        p = self.run_plot("sweep", self.sweep, "--output", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        w, h = png_size(out)
        self.assertGreater(w, 400)
        self.assertGreater(h, 300)
        compare = os.path.join(ROOT, "bench", "results", "2026-12-02-1145-cpu-compare-4a725aa-run1.json")
        out = os.path.join(self.tmp.name, "c.png")
        p = self.run_plot("compare", compare, "--output", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        png_size(out)
        out = os.path.join(self.tmp.name, "s.PDF")  # the extension names the format, in any case
        p = self.run_plot("sweep", self.sweep, "--output", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(5), b"%PDF-")

    def files(self):
        """Every file in the temporary folder, with its bytes."""
        out = {}
        for name in os.listdir(self.tmp.name):
            with open(os.path.join(self.tmp.name, name), "rb") as f:
                out[name] = f.read()
        return out

    def test_output_refused_before_plotting(self):
        """An --output matplotlib cannot write, or that is an input by any name: one line, exit 2,
        nothing written (not a matplotlib traceback after the plotting, nor an input replaced)."""
        t = self.tmp.name
        as_svg = os.path.join(t, "s.svg")  # a sweep file under a name a figure could have
        shutil.copy(self.sweep, as_svg)
        os.symlink(as_svg, os.path.join(t, "symlink.svg"))
        os.link(as_svg, os.path.join(t, "hardlink.svg"))
        frontier, selection = os.path.join(t, "f.json"), os.path.join(t, "sel.pdf")
        for path in (frontier, selection):
            with open(path, "w") as f:
                f.write("{}")
        before = self.files()
        for args in (("sweep", self.sweep, "--output", self.sweep),  # the issue: .jsonl is no figure
                     ("sweep", self.sweep, "--output", os.path.join(t, "out.jsonl")),
                     ("sweep", self.sweep, "--output", os.path.join(t, "out")),
                     ("sweep", as_svg, "--output", as_svg),
                     ("sweep", as_svg, "--output", os.path.join(t, "..", os.path.basename(t), "s.svg")),
                     ("sweep", as_svg, "--output", os.path.join(t, "symlink.svg")),
                     ("sweep", as_svg, "--output", os.path.join(t, "hardlink.svg")),
                     ("frontier", frontier, "--selection", selection, "--output", selection)):
            p = self.run_plot(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertTrue(p.stderr.startswith("plot: error: --output "), p.stderr)
            self.assertEqual(self.files(), before, args)

    def test_written_whole(self):
        """The figure goes to a temporary renamed over --output: a failure while writing leaves the
        file that was there and nothing beside it; a success replaces it, with the umask's mode."""
        out = os.path.join(self.tmp.name, "s.png")
        with open(out, "wb") as f:
            f.write(b"the figure before")
        fig = plot.plt.figure()

        def half_then_fail(f, **kwargs):
            f.write(b"\x89PNG half a figure")
            raise RuntimeError("made-up failure\nits second line")

        fig.savefig = half_then_fail
        with self.assertRaises(plot.Fail) as e:
            plot.save(fig, out)
        self.assertEqual(str(e.exception), f"cannot write {out}: made-up failure its second line")
        self.assertEqual(sorted(self.files()), ["s.jsonl", "s.png"])
        self.assertEqual(self.files()["s.png"], b"the figure before")
        p = self.run_plot("sweep", self.sweep, "--output", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        png_size(out)
        self.assertEqual(sorted(self.files()), ["s.jsonl", "s.png"])
        umask = os.umask(0)
        os.umask(umask)
        self.assertEqual(os.stat(out).st_mode & 0o777, 0o666 & ~umask)

    def test_bad_input_one_line_no_output(self):
        bad = os.path.join(self.tmp.name, "bad.jsonl")
        with open(bad, "w") as f:
            f.write("not json\n")
        out = os.path.join(self.tmp.name, "never.png")
        for args in (("sweep", bad), ("sweep", os.path.join(self.tmp.name, "missing")), ("compare", self.sweep),
                     ("compare", bad)):
            p = self.run_plot(*args, "--output", out)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertTrue(p.stderr.startswith("plot: error: "), p.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main(verbosity=2)
