#!/usr/bin/python3
"""tools/frontier: the choice per band on made-up sweep lines (the engine's band rule, the margin,
the qualification's seeds refused), and every step end to end on a made-up IDX set with the real
revgraph: select -> qualify -> time -> write, then tools/plot frontier.

usage: test_frontier.py SOURCE_ROOT BUILD_ROOT REVGRAPH   (exit 77 without numpy, matplotlib or the
built Python package)
"""
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT, BUILD, REVGRAPH = (os.path.abspath(a) for a in sys.argv[1:4])
del sys.argv[1:4]
try:
    import numpy as np
    import matplotlib  # noqa: F401  (tools/plot needs it)
    sys.path.insert(0, os.path.join(BUILD, "python"))
    import revgraph  # noqa: F401  (tools/frontier needs it)
    if not hasattr(revgraph, "fit_predict"):  # a namespace package, not the built module
        raise ImportError(f"no built revgraph package under {os.path.join(BUILD, 'python')}")
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

FRONTIER = os.path.join(ROOT, "tools", "frontier")
PLOT = os.path.join(ROOT, "tools", "plot")
BASE = {"depth": 2, "width": 82, "alpha": 0.5, "seed": 11, "epochs": 2, "learning_rate": 0.1, "batch_size": 128,
        "momentum": 0.9, "weight_decay": 0.0}


def run(*args, tool=FRONTIER):
    pre = ["--build", BUILD] if tool == FRONTIER else []
    return subprocess.run([sys.executable, tool, *pre, *[str(a) for a in args]], capture_output=True, text=True,
                          timeout=600)


def made_up_idx(folder):
    """20,011 made-up 28x28 digits (not official MNIST): enough for MNIST-medium draws."""
    n, rng = 20011, np.random.default_rng(8)
    labels = rng.integers(0, 10, n).astype(np.uint8)
    base = rng.integers(0, 256, (10, 28, 28)).astype(np.int16)
    pixels = np.clip(base[labels] + rng.integers(-200, 200, (n, 28, 28)), 0, 255).astype(np.uint8)
    os.makedirs(folder)
    with open(os.path.join(folder, "train-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">iiii", 2051, n, 28, 28) + pixels.tobytes())
    with open(os.path.join(folder, "train-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">ii", 2049, n) + labels.tobytes())
    return folder


def draw(idx, seed, folder):
    """The seed's MNIST-medium draw and its query labels, as revgraph makes them."""
    out, labels = os.path.join(folder, f"sel-{seed}.npz"), os.path.join(folder, f"sel-{seed}-labels.npy")
    p = subprocess.run([REVGRAPH, "data", "mnist", "--idx-dir", idx, "--seed", str(seed), "--output", out,
                        "--test-labels-output", labels], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out, labels


def digest(idx, seed, folder):
    """The engine's inputs_sha256 of that draw, from a zero-epoch sweep line."""
    out, labels = draw(idx, seed, folder)
    line = os.path.join(folder, f"d{seed}.jsonl")
    p = subprocess.run([REVGRAPH, "sweep", "--input", out, "--test-labels", labels, "--backend", "cpu", "--grid",
                        "epochs=0", "--output", line], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(open(line).readline())["inputs_sha256"]


def contents(path):
    with open(path, "rb") as f:
        return f.read()


def sha256(path):
    return hashlib.sha256(contents(path)).hexdigest()


def refused(test, p, mention, rc=1):
    """One line `frontier: error: ...` that says `mention`, and exit rc (2: a usage mistake)."""
    test.assertEqual(p.returncode, rc, p.stderr)
    test.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
    test.assertTrue(p.stderr.startswith("frontier: error: ") and mention in p.stderr, p.stderr)


def spellings(path, folder):
    """path itself, with ./ in it, a symlink to it and a hard link to it (made in folder)."""
    link, hard = (os.path.join(folder, f"{how}-{os.path.basename(path)}") for how in ("link", "hard"))
    for made in (link, hard):
        if os.path.lexists(made):
            os.remove(made)
    os.symlink(path, link)
    os.link(path, hard)
    return [path, os.path.join(os.path.dirname(path), ".", os.path.basename(path)), link, hard]


def sweep_file(path, digest, points):
    """points: (config changes, correct of 10,000, seconds) -> revgraph sweep lines for one draw."""
    with open(path, "w") as f:
        for i, (changes, correct, seconds) in enumerate(points):
            f.write(json.dumps({"index": i, "points": len(points), "config": dict(BASE, **changes),
                                "backend": "cpu", "inputs_sha256": digest, "correct": correct, "total": 10000,
                                "accuracy": correct / 10000, "run_seconds": seconds}) + "\n")
    return path


class Select(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.shared = tempfile.TemporaryDirectory()
        cls.idx = made_up_idx(os.path.join(cls.shared.name, "idx"))
        cls.digests = [digest(cls.idx, seed, cls.shared.name) for seed in (1, 2, 3)]

    @classmethod
    def tearDownClass(cls):
        cls.shared.cleanup()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "selection.json")

    def tearDown(self):
        self.tmp.cleanup()

    def draws(self, per_draw):
        """per_draw: one list of points for each of the draws of seeds 1, 2 and 3."""
        return [sweep_file(os.path.join(self.tmp.name, f"s{k}.jsonl"), self.digests[k], pts)
                for k, pts in enumerate(per_draw)]

    def select(self, *args):
        return run("select", "--idx-dir", self.idx, "--revgraph", REVGRAPH, "--output", self.out, *args)

    def test_the_fastest_configuration_that_clears_the_tightened_band(self):
        fast, mid, slow, best = {"epochs": 1}, {"epochs": 4}, {"epochs": 16}, {"width": 256, "epochs": 32}
        # Band 12 tightened by 0.3 to 11.7: 88.3 % of 30,000 = 26,490 in all, and 86.8 % = 8,680 a draw.
        files = self.draws([
            [(fast, 8830, 0.003), (mid, 9200, 0.010), (slow, 9310, 0.030), (best, 9520, 0.900)],
            [(fast, 8830, 0.003), (mid, 9210, 0.011), (slow, 9320, 0.031), (best, 9530, 0.910)],
            [(fast, 8830, 0.004), (mid, 9230, 0.012), (slow, 9330, 0.032), (best, 9540, 0.920)],
        ])
        p = self.select("--seeds", "1,2,3", *files)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = json.load(open(self.out))
        chosen = {b["band"]: (b["finalists"][0]["config"], b["candidates"]) for b in s["bands"]}
        self.assertEqual(chosen["12"], (dict(BASE, **fast), 4))      # exactly 26,490 and 8,830 >= 8,680
        self.assertEqual(chosen["8"], (dict(BASE, **slow), 2))       # mid: 27,640 < 27,690 (92.3 %)
        self.assertEqual(chosen["5"], (dict(BASE, **best), 1))       # 28,590 >= 28,590 (95.3 %)
        self.assertEqual(chosen["3"], (dict(BASE, **best), 0))       # none: the most accurate one tried
        # The finalists: the fastest candidates, at most --finalists of them.
        self.assertEqual([[f["config"]["epochs"] for f in b["finalists"]] for b in s["bands"]],
                         [[1, 4, 16, 32], [16, 32], [32], [32]])
        self.assertEqual(self.select("--seeds", "1,2,3", "--finalists", "2", *files).returncode, 0)
        self.assertEqual(len(json.load(open(self.out))["bands"][0]["finalists"]), 2)
        self.assertEqual(s["selection_seeds"], [1, 2, 3])
        self.assertEqual(s["selection_inputs_sha256"], self.digests)
        self.assertEqual(len(s["tried"]), 4)
        self.assertEqual(s["tried"][0]["correct"], [8830, 8830, 8830])
        # One count fewer and the fastest no longer clears band 12; nor does a draw under the floor.
        files = self.draws([[(fast, 8829, 0.003), (mid, 9200, 0.01)], [(fast, 8830, 0.003), (mid, 9200, 0.01)],
                            [(fast, 8830, 0.003), (mid, 9200, 0.01)]])
        self.assertEqual(self.select("--seeds", "1,2,3", "--bands", "12", *files).returncode, 0)
        self.assertEqual(json.load(open(self.out))["bands"][0]["finalists"][0]["config"], dict(BASE, **mid))
        files = self.draws([[(fast, 8679, 0.003), (mid, 9200, 0.01)], [(fast, 9000, 0.003), (mid, 9200, 0.01)],
                            [(fast, 9000, 0.003), (mid, 9200, 0.01)]])
        self.assertEqual(self.select("--seeds", "1,2,3", "--bands", "12", *files).returncode, 0)
        self.assertEqual(json.load(open(self.out))["bands"][0]["finalists"][0]["config"], dict(BASE, **mid))
        # A margin of 0 takes the band itself.
        self.assertEqual(self.select("--seeds", "1,2,3", "--bands", "12", "--margin", "0", *files).returncode, 0)
        self.assertEqual(json.load(open(self.out))["bands"][0]["selection_band"], "12")

    def test_a_configuration_missing_on_a_draw_is_not_compared(self):
        files = self.draws([[({"epochs": 1}, 9900, 0.001), ({"epochs": 2}, 9000, 0.01)],
                            [({"epochs": 2}, 9000, 0.01)], [({"epochs": 2}, 9000, 0.01)]])
        p = self.select("--seeds", "1,2,3", "--bands", "12", *files)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = json.load(open(self.out))
        self.assertEqual([t["config"]["epochs"] for t in s["tried"]], [2])
        self.assertEqual(s["not_on_every_draw"], 1)

    def test_refusals_are_one_line_and_write_nothing(self):
        files = self.draws([[({}, 9000, 0.01)]] * 3)
        bad = os.path.join(self.tmp.name, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"config": {}}\n')
        missing = os.path.join(self.tmp.name, "missing.jsonl")
        other = sweep_file(os.path.join(self.tmp.name, "other.jsonl"), "0" * 64, [({}, 9000, 0.01)])
        on_ref = os.path.join(self.tmp.name, "ref.jsonl")
        with open(files[0]) as f, open(on_ref, "w") as g:
            g.write(f.read().replace('"backend": "cpu"', '"backend": "cpu-reference"'))
        latin1 = os.path.join(self.tmp.name, "latin1.jsonl")
        with open(latin1, "wb") as f:
            f.write(contents(files[0]) + b'{"note": "\xe9t\xe9"}\n')
        over = os.path.join(self.tmp.name, "over.jsonl")  # counts no draw can have: more right than asked
        with open(files[0]) as f, open(over, "w") as g:
            g.write(f.read().replace('"correct": 9000', '"correct": 10001'))
        for extra, args, mention in (([], ["--seeds", "1,2,2026091405"], "qualification"),
                                     ([], ["--seeds", "1,2,2"], "distinct"),
                                     ([], ["--seeds", "1,x"], "integers"),
                                     ([], ["--seeds", "1,2"], "not the 2 draws"),
                                     ([], ["--seeds", "1,2,4"], "not the 3 draws"),
                                     ([other], ["--seeds", "1,2,3"], "not the 3 draws"),
                                     ([on_ref], ["--seeds", "1,2,3"], "backends"),
                                     ([], ["--seeds", "1,2,3", "--margin", "12", "--bands", "12"], "margin"),
                                     ([], ["--seeds", "1,2,3", "--margin", "-1"], ">= 0"),
                                     ([], ["--seeds", "1,2,3", "--margin", "abc"], "decimal"),
                                     ([], ["--seeds", "1,2,3", "--bands", "12,1e1"], "1e1"),
                                     ([], ["--seeds", "1,2,3", "--bands", "12,7"], "leaderboard"),
                                     ([bad], ["--seeds", "1,2,3"], "bad.jsonl:1"),
                                     ([latin1], ["--seeds", "1,2,3"], "latin1.jsonl:2: not UTF-8"),
                                     ([over], ["--seeds", "1,2,3"], "over.jsonl:1"),
                                     ([missing], ["--seeds", "1,2,3"], "missing")):
            refused(self, self.select(*files, *extra, *args), mention)
            self.assertFalse(os.path.exists(self.out))


class NoOutputIsAnInput(unittest.TestCase):
    """Every step checks its outputs before any work, by the engine's own check: none is a file the
    step reads, however spelled; qualify checks every argument before it writes anything, and never
    makes the folders above its --out-dir. One round made once (rev88's config alone in the grid, so
    that band 12's report is also rev88's)."""

    @classmethod
    def setUpClass(cls):
        cls.shared = tempfile.TemporaryDirectory()
        tmp = cls.tmp = cls.shared.name
        cls.idx = made_up_idx(os.path.join(tmp, "idx"))
        cls.draw, labels = draw(cls.idx, 77, tmp)
        cls.sweep = os.path.join(tmp, "s.jsonl")
        p = subprocess.run([REVGRAPH, "sweep", "--input", cls.draw, "--test-labels", labels, "--backend", "cpu",
                            "--grid", "epochs=2", "--output", cls.sweep], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        cls.selection, cls.timing, cls.out = (os.path.join(tmp, x) for x in ("selection.json", "timing.json", "q"))
        for args in (("select", "--seeds", "77", "--idx-dir", cls.idx, "--bands", "12", "--output", cls.selection,
                      cls.sweep),
                     ("time", cls.selection, "--input", cls.draw, "--rounds", "1", "--repeat", "1", "--output",
                      cls.timing),
                     ("qualify", cls.selection, "--timing", cls.timing, "--idx-dir", cls.idx, "--out-dir", cls.out)):
            p = run(*args, "--revgraph", REVGRAPH)
            assert p.returncode == 0, p.stderr
        cls.report = os.path.join(cls.out, "band-12.qualify.json")

    @classmethod
    def tearDownClass(cls):
        cls.shared.cleanup()

    def refused_over(self, path, *args):
        """The step refused for each spelling of path as its output, and path as it was."""
        before = contents(path)
        for output in spellings(path, self.tmp):
            refused(self, run(*args, "--output", output, "--revgraph", REVGRAPH), "same file", rc=2)
            self.assertEqual(contents(path), before, output)

    def test_select(self):
        self.refused_over(self.sweep, "select", "--seeds", "77", "--idx-dir", self.idx, "--bands", "12", self.sweep)

    def test_time(self):
        args = ("time", self.selection, "--input", self.draw, "--rounds", "1", "--repeat", "1")
        self.refused_over(self.draw, *args)
        self.refused_over(self.selection, *args)
        self.refused_over(self.timing, *args, "--chosen-by", self.timing)
        # ...nor the timing the --chosen-by file's choices came from.
        again = os.path.join(self.tmp, "timing-again.json")
        with open(again, "w") as f:
            json.dump({"chosen_by": {"file": "timing.json", "sha256": sha256(self.timing)}}, f)
        self.refused_over(self.timing, *args, "--chosen-by", again)

    def test_write(self):
        args = ("write", "--round", self.selection, self.timing, self.out)
        for path in (self.timing, self.selection, self.report, os.path.join(self.out, "band-12.config.json"),
                     os.path.join(self.out, "qualify-manifest.json")):
            self.refused_over(path, *args)
        self.refused_over(self.report, *args, "--rev88", self.report)
        rev88 = os.path.join(self.tmp, "rev88.qualify.json")
        with open(rev88, "wb") as f:
            f.write(contents(self.report))
        self.refused_over(rev88, *args, "--rev88", rev88)

    def test_qualify_checks_everything_before_it_writes(self):
        def qualify(out_dir, *args, idx=self.idx):
            return run("qualify", self.selection, "--timing", self.timing, "--idx-dir", idx, "--out-dir", out_dir,
                       "--revgraph", REVGRAPH, *args)
        fresh = os.path.join(self.tmp, "fresh")
        refused(self, qualify(fresh, "--backend", "bogus"), "bogus")
        self.assertFalse(os.path.exists(fresh))
        refused(self, qualify(fresh, idx=os.path.join(self.tmp, "no-idx")), "no-idx")
        self.assertFalse(os.path.exists(fresh))
        # An IDX folder without the files: the first band's qualification fails, and nothing is left.
        os.makedirs(os.path.join(self.tmp, "empty-idx"), exist_ok=True)
        refused(self, qualify(fresh, idx=os.path.join(self.tmp, "empty-idx")), "revgraph qualify (band 12) failed")
        self.assertFalse(os.path.exists(fresh))
        # The folders above --out-dir are never made; a file is no --out-dir.
        refused(self, qualify(os.path.join(self.tmp, "missing", "q")), "does not exist")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "missing")))
        refused(self, qualify(self.sweep), "not a directory")
        refused(self, qualify(os.path.join(self.sweep, "q")), "s.jsonl")
        # No file of the out-dir is one the step reads: a selection kept in it as band-12.config.json.
        inside = os.path.join(self.tmp, "inside")
        os.makedirs(inside, exist_ok=True)
        config = os.path.join(inside, "band-12.config.json")
        with open(config, "wb") as f:
            f.write(contents(self.selection))
        p = run("qualify", config, "--timing", self.timing, "--idx-dir", self.idx, "--out-dir", inside,
                "--revgraph", REVGRAPH)
        refused(self, p, "same file", rc=2)
        self.assertEqual(sorted(os.listdir(inside)), ["band-12.config.json"])
        self.assertEqual(contents(config), contents(self.selection))


class Committed(unittest.TestCase):
    """bench/frontier/frontier.json as committed: the rounds' files it names are where it says
    (relative to it: the rounds' folders beside it) and agree with it, every figure ran on a clean
    commit that the file names, and tools/frontier's write and check take it by default."""

    def test_the_committed_frontier_names_its_files(self):
        path = os.path.join(ROOT, "bench", "frontier", "frontier.json")
        base = os.path.dirname(path)
        f = json.load(open(path))
        for r in f["rounds"]:
            self.assertTrue(os.path.isfile(os.path.join(base, r["selection"])), r["selection"])
        entries = [x for e in f["bands"] for x in [e] + e["earlier_attempts"]]
        self.assertGreaterEqual(len(entries), len(f["bands"]))
        for e in entries:
            report = json.load(open(os.path.join(base, e["qualify_report"])))
            self.assertEqual(json.load(open(os.path.join(base, e["config_file"]))), e["config"])
            self.assertEqual(report["config"], e["config"])
            self.assertEqual((report["total_correct"], bool(report["qualified"]), report["git_commit"]),
                             (e["total_correct"], e["qualified"], e["commit"]))
        r = f["rev88"]  # the default config's point, qualified and timed like the entries
        report = json.load(open(os.path.join(base, r["qualify_report"])))
        self.assertEqual((r["config"], r["total_correct"], r["commit"]),
                         (report["config"], report["total_correct"], report["git_commit"]))
        self.assertEqual((r["config"]["depth"], r["config"]["width"], r["config"]["batch_size"], r["config"]["epochs"]),
                         (2, 82, 128, 2))
        # Every figure's commit is named at the top and none is a tree with uncommitted changes.
        ran = {c for x in entries + [r] for c in (x["commit"], x["timing_commit"])}
        self.assertEqual(ran, set(f["commits"]))
        self.assertFalse([c for c in ran if not c or c.endswith("-dirty") or c == "unknown"], ran)
        for sub in ("write", "check"):
            p = run(sub, "--help")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("default bench/frontier/frontier.json", " ".join(p.stdout.split()))


class EndToEnd(unittest.TestCase):
    """A made-up IDX set (not official MNIST), one selection draw, two tiny grids: every step runs
    the real revgraph and the files agree with one another."""

    def test_select_qualify_time_write_plot(self):
        with tempfile.TemporaryDirectory() as tmp:
            idx = made_up_idx(os.path.join(tmp, "idx"))
            selection_draw, draw_labels = draw(idx, 77, tmp)
            sweep = os.path.join(tmp, "s.jsonl")
            p = subprocess.run([REVGRAPH, "sweep", "--input", selection_draw, "--test-labels", draw_labels, "--backend",
                                "cpu", "--grid", "width=82,96", "--grid", "epochs=1,2", "--output", sweep],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            selection = os.path.join(tmp, "selection.json")
            p = run("select", "--seeds", "77", "--idx-dir", idx, "--bands", "12,5", "--output", selection, sweep,
                    "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stderr)
            timing = os.path.join(tmp, "timing.json")
            p = run("time", selection, "--input", selection_draw, "--rounds", "2", "--repeat", "1", "--output", timing,
                    "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = os.path.join(tmp, "q")
            p = run("qualify", selection, "--timing", timing, "--idx-dir", idx, "--out-dir", out, "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stderr)
            # A choice is qualified once: the same folder again is refused, its reports untouched.
            before = open(os.path.join(out, "band-12.qualify.json")).read()
            p = run("qualify", selection, "--timing", timing, "--idx-dir", idx, "--out-dir", out, "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("qualified once", p.stderr)
            self.assertEqual(open(os.path.join(out, "band-12.qualify.json")).read(), before)
            frontier = os.path.join(tmp, "frontier.json")
            p = run("write", "--round", selection, timing, out, "--output", frontier, "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stderr)
            f, s, t = (json.load(open(x)) for x in (frontier, selection, timing))
            self.assertEqual([e["band"] for e in f["bands"]], ["12", "5"])
            self.assertEqual(t["contenders"][0]["config"], None)  # rev88's default, in the same rounds
            timed = {json.dumps(c["config"], sort_keys=True): c for c in t["contenders"][1:]}
            for e, chosen in zip(f["bands"], s["bands"]):
                # The band's choice: its finalist with the least median side by side.
                fastest = min(chosen["finalists"], key=lambda x: timed[json.dumps(x["config"], sort_keys=True)]["median_ms"])
                self.assertEqual(e["config"], fastest["config"])
                report = json.load(open(os.path.join(out, f"band-{e['band']}.qualify.json")))
                self.assertEqual(json.load(open(os.path.join(out, f"band-{e['band']}.config.json"))), e["config"])
                self.assertEqual(e["total_correct"], sum(d["correct"] for d in report["draws"]))
                self.assertEqual((e["total"], len(report["draws"])), (110000, 11))
                self.assertEqual(e["required_correct"], revgraph.band_rule(e["band"], 110000, 10000)["required_correct"])
                self.assertFalse(e["official_mnist"])  # made-up files never qualify
                self.assertFalse(e["qualified"])
                mine = timed[json.dumps(e["config"], sort_keys=True)]
                self.assertEqual(e["cpu_ms_per_task"], mine["median_ms"])
                self.assertEqual(mine["runs"], 2)
            self.assertEqual(f["bands"][0]["rev88_cpu_ms_per_task"], t["contenders"][0]["median_ms"])
            self.assertEqual([(e["round"], e["earlier_attempts"]) for e in f["bands"]], [(1, []), (1, [])])
            self.assertEqual(t["rev88_config"], BASE)
            self.assertEqual(f["commits"], [t["commit"]])  # the one commit its figures ran on
            self.assertEqual([e["commit"] for e in f["bands"]], [t["commit"]] * 2)
            # The choices timed again (as on a clean commit): rev88 and each band's choice, the
            # choices still the first timing's, never made again.
            again_timing = os.path.join(tmp, "timing-again.json")
            p = run("time", selection, "--chosen-by", timing, "--input", selection_draw, "--rounds", "1", "--repeat",
                    "1", "--output", again_timing, "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stderr)
            ta = json.load(open(again_timing))
            self.assertEqual(ta["chosen_by"], {"file": "timing.json", "sha256": sha256(timing)})
            chosen_configs = []
            for e in f["bands"]:
                if e["config"] not in chosen_configs:
                    chosen_configs.append(e["config"])
            self.assertEqual([c["config"] for c in ta["contenders"]], [None] + chosen_configs)
            self.assertEqual(ta["contenders"][1]["name"], "band 12")
            # Qualified again: the same results, so the reports are replaced (here by equal ones)...
            p = run("qualify", selection, "--timing", again_timing, "--idx-dir", idx, "--out-dir", out, "--again",
                    "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.count("as before"), 2, p.stdout)
            # ...but a report whose result the choice does not give again is kept, with exit 1.
            path5 = os.path.join(out, "band-5.qualify.json")
            r5 = json.load(open(path5))
            r5["total_correct"] += 1
            with open(path5, "w") as g:
                json.dump(r5, g)
            kept = open(path5).read()
            p = run("qualify", selection, "--timing", timing, "--idx-dir", idx, "--out-dir", out, "--again",
                    "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("the report is kept", p.stderr)
            self.assertEqual(open(path5).read(), kept)
            r5["total_correct"] -= 1
            with open(path5, "w") as g:
                json.dump(r5, g)
            # rev88's own qualification, the point the entries are measured against.
            rev88_report = os.path.join(tmp, "rev88.qualify.json")
            q = subprocess.run([REVGRAPH, "qualify", "--idx-dir", idx, "--band", "12", "--backend", "cpu", "--quiet",
                                "--output", rev88_report], capture_output=True, text=True)
            self.assertIn(q.returncode, (0, 3), q.stderr)
            again = os.path.join(tmp, "again.json")
            p = run("write", "--round", selection, again_timing, out, "--rev88", rev88_report, "--output", again,
                    "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stderr)
            h = json.load(open(again))
            self.assertEqual([e["config"] for e in h["bands"]], [e["config"] for e in f["bands"]])
            by_config = {json.dumps(c["config"], sort_keys=True): c for c in ta["contenders"][1:]}
            for e in h["bands"]:
                self.assertEqual(e["cpu_ms_per_task"], by_config[json.dumps(e["config"], sort_keys=True)]["median_ms"])
                self.assertEqual(e["rev88_cpu_ms_per_task"], ta["contenders"][0]["median_ms"])
            self.assertEqual((h["rounds"][0]["choices_timed_by"], h["rounds"][0]["timed_by"]),
                             ("timing.json", "timing-again.json"))
            rr = json.load(open(rev88_report))
            self.assertEqual((h["rev88"]["config"], h["rev88"]["total_correct"], h["rev88"]["cpu_ms_per_task"],
                              h["rev88"]["qualify_report"]),
                             (BASE, rr["total_correct"], ta["contenders"][0]["median_ms"], "rev88.qualify.json"))
            p = run("check", again, "--idx-dir", idx, "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("rev88: ", p.stdout)
            self.assertEqual(p.stdout.count("as recorded"), 3)
            png = os.path.join(tmp, "again.png")
            p = run("frontier", again, "--selection", selection, "--output", png, tool=PLOT)
            self.assertEqual(p.returncode, 0, p.stderr)
            # A report of another config than rev88's is refused as rev88's point. (Not a band's own
            # report: which finalist a band chose follows the timings, and on a loaded machine it may be
            # rev88's config itself. rev88's report with one key changed is surely another's.)
            other = os.path.join(tmp, "other.qualify.json")
            with open(rev88_report) as src:
                report = json.load(src)
            report["config"] = dict(report["config"], width=96)
            with open(other, "w") as dst:
                json.dump(report, dst)
            p = run("write", "--round", selection, again_timing, out, "--rev88", other,
                    "--output", os.path.join(tmp, "bad.json"), "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("not a qualification of rev88's config", p.stderr)
            # A second round for band 12 alone: its entry replaces the first round's, which it keeps.
            selection2, timing2, out2 = (os.path.join(tmp, x) for x in ("selection2.json", "timing2.json", "q2"))
            p = run("select", "--seeds", "77", "--idx-dir", idx, "--bands", "12", "--margin", "0", "--note",
                    "again", "--output", selection2, sweep, "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stderr)
            for args in (("time", selection2, "--input", selection_draw, "--rounds", "1", "--repeat", "1", "--output",
                          timing2), ("qualify", selection2, "--timing", timing2, "--idx-dir", idx, "--out-dir", out2)):
                p = run(*args, "--revgraph", REVGRAPH)
                self.assertEqual(p.returncode, 0, p.stderr)
            both = os.path.join(tmp, "both.json")
            p = run("write", "--round", selection, timing, out, "--round", selection2, timing2, out2, "--output", both,
                    "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stderr)
            g = json.load(open(both))
            self.assertEqual([(e["band"], e["round"]) for e in g["bands"]], [("12", 2), ("5", 1)])
            first = {k: v for k, v in f["bands"][0].items() if k != "earlier_attempts"}
            self.assertEqual(g["bands"][0]["earlier_attempts"], [first])
            self.assertEqual([r["note"] for r in g["rounds"]], ["", "again"])
            # check: every entry qualified again gives its recorded predictions and count...
            p = run("check", both, "--idx-dir", idx, "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(p.stdout.count("as recorded"), 2)
            # ...and says so where a recorded count is not what the configuration gives.
            g["bands"][1]["total_correct"] += 1
            with open(both, "w") as h:
                json.dump(g, h)
            p = run("check", both, "--idx-dir", idx, "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("band 5: ", p.stdout)
            self.assertIn("NOT as recorded", p.stdout)
            png = os.path.join(tmp, "f.png")
            p = run("frontier", frontier, "--selection", selection, "--output", png, tool=PLOT)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(png, "rb") as g:
                self.assertEqual(g.read(8), b"\x89PNG\r\n\x1a\n")
            p = run("frontier", frontier, "--output", png, tool=PLOT)
            self.assertEqual((p.returncode, p.stderr.startswith("plot: error: ")), (1, True), p.stderr)
            # write refuses a timing without a band's finalist.
            timing_bytes = open(timing, "rb").read()
            t["contenders"][1]["config"] = dict(t["contenders"][1]["config"], epochs=99)
            with open(timing, "w") as g:
                json.dump(t, g)
            os.remove(frontier)
            p = run("write", "--round", selection, timing, out, "--output", frontier, "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("the timing has no finalist", p.stderr)
            self.assertFalse(os.path.exists(frontier))
            # ...and reports qualified from another selection than the one given.
            with open(timing, "wb") as g:
                g.write(timing_bytes)
            with open(selection, "a") as g:
                g.write("\n")
            p = run("write", "--round", selection, timing, out, "--output", frontier, "--revgraph", REVGRAPH)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("another selection or timing", p.stderr)
            self.assertFalse(os.path.exists(frontier))


if __name__ == "__main__":
    unittest.main(verbosity=2)
