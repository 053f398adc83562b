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

    def test_malformed_input_one_line_no_output(self):
        """An input of the wrong kind or shape (not UTF-8, a field missing or of the wrong type, no
        band at all): one line naming the file, exit 1, nothing written (not a traceback)."""
        t = self.tmp.name
        good_line = self.points[0]
        band = {"band": "12", "total_correct": 90, "total": 100, "cpu_ms_per_task": 2.0, "qualified": True,
                "earlier_attempts": [{"total_correct": 80, "total": 100, "cpu_ms_per_task": 1.0, "qualified": False}]}
        frontier = {"bands": [band], "rev88": {"config": BASE | {"width": 82}, "total_correct": 95, "total": 100,
                                               "cpu_ms_per_task": 7.5}}
        selection = {"selection_seeds": [1], "tried": [{"sweep_ms": 1.5, "accuracy": 0.9}]}
        timing = {"cpu": {"task_ms": {"median": 8.0, "min": 7.0, "max": 9.0}}}

        def write(name, value):
            path = os.path.join(t, name)
            with open(path, "wb") as f:
                f.write(value if isinstance(value, bytes) else
                        "".join(json.dumps(v) + "\n" for v in value).encode() if name.endswith(".jsonl") else
                        json.dumps(value).encode())
            return path

        sel = write("sel.json", selection)
        out = os.path.join(t, "never.png")
        # The well-formed ones plot: each case below fails for what it changes.
        for args in (("sweep", write("good.jsonl", [good_line])), ("compare", write("good.json", {"timing": timing})),
                     ("frontier", write("goodf.json", frontier), "--selection", sel)):
            p = self.run_plot(*args, "--output", out)
            self.assertEqual(p.returncode, 0, (args, p.stderr))
            os.unlink(out)
        no_total = dict(band)
        del no_total["total_correct"]
        no_depth = dict(good_line, config={k: v for k, v in good_line["config"].items() if k != "depth"})
        cases = [
            ("sweep", write("latin1.jsonl", b'{"config": "\xe9t\xe9"}\n'), "not UTF-8"),
            ("sweep", write("rs.jsonl", [dict(good_line, run_seconds="x")]), "line 1: 'run_seconds'"),
            ("sweep", write("config5.jsonl", [dict(good_line, config=5)]), "line 1: 'config'"),
            ("sweep", write("nodepth.jsonl", [good_line, no_depth]), "line 2: config: no 'depth'"),
            ("sweep", write("acc.jsonl", [dict(good_line, accuracy=None)]), "'accuracy'"),
            ("sweep", write("bigint.jsonl", b'{"config": {}, "run_seconds": 1' + b"0" * 5000 + b"}\n"), "not JSON"),
            ("compare", write("latin1.json", b'{"timing": "\xff"}'), "not UTF-8"),
            ("compare", write("t5.json", {"timing": 5}), "'timing'"),
            ("compare", write("nomed.json", {"timing": {"cpu": {"task_ms": {"min": 1, "max": 2}}}}), "no 'median'"),
            ("compare", write("order.json", {"timing": {"cpu": {"task_ms": {"median": 1, "min": 2, "max": 3}}}}),
             "between"),
            ("compare", write("task.json", {"timing": timing, "task": 5}), "'task'"),
            ("frontier", write("latin1f.json", b"\xff\xfe"), "not UTF-8"),
            ("frontier", write("empty.json", {"bands": []}), "'bands' is empty"),
            ("frontier", write("nototal.json", dict(frontier, bands=[no_total])), "band 1: no 'total_correct'"),
            ("frontier", write("bandx.json", dict(frontier, bands=[dict(band, band="x")])), "'band'"),
            ("frontier", write("early.json", dict(frontier, bands=[dict(band, earlier_attempts=[5])])),
             "earlier attempt 1"),
            ("frontier", write("r88.json", dict(frontier, rev88={"cpu_ms_per_task": 7.5, "total_correct": 1,
                                                                 "total": 2})), "rev88: no 'config'"),
            ("frontier", write("commits.json", dict(frontier, commits=[5])), "'commits'"),
        ]
        bad_sel = write("badsel.json", dict(selection, tried=[{"sweep_ms": "1", "accuracy": 0.9}]))
        before = self.files()
        for what, path, why in cases:
            args = (what, path) + (("--selection", sel) if what == "frontier" else ())
            p = self.run_plot(*args, "--output", out)
            self.assertEqual(p.returncode, 1, (args, p.stderr))
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertTrue(p.stderr.startswith(f"plot: error: {path}: "), p.stderr)
            self.assertIn(why, p.stderr)
            self.assertEqual(self.files(), before, args)
        p = self.run_plot("frontier", os.path.join(t, "goodf.json"), "--selection", bad_sel, "--output", out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr, f"plot: error: {bad_sel}: tried point 1: 'sweep_ms' is not a positive number "
                                   "of ms\n")
        self.assertEqual(self.files(), before)


if __name__ == "__main__":
    unittest.main(verbosity=2)
