#!/usr/bin/python3
"""End-to-end tests of `revgraph sweep` and `revgraph sweep merge`.

usage: test_sweep.py REVGRAPH [unittest options]   (exit 77, meson's "skipped", without numpy)

What is checked, and against what. A point's results are held to the same binary's `revgraph run`,
not to values computed here (numpy only makes the inputs), so a fault that `run` and `sweep` share
passes. What this script knows on its own: each line's place (index, point count, grid order), its
`total` (the query labels' count), and at other widths a run's parameter count and saved bytes.
The checks:
- every line of a sweep (--jobs 1 and 2) holds exactly the config, backend, hashes, correct count
  and accuracy of a separate `revgraph run --set ...` of its config, in grid order (first key
  slowest);
- a sweep file cut mid-line (or anywhere) and rerun equals the uninterrupted sweep, times aside,
  and keeps the lines it found byte for byte; a complete file reruns as a no-op;
- shards (--shard I/N, round robin) merged with `sweep merge`, in any order, give the unsharded
  file, times aside; merge refuses missing or unfinished shards;
- bad grids, shards and outputs (an output that is an input, another sweep's file) get one
  error line, exit 2 or 1, and leave every file as it was;
- progress: a bar on a terminal (a pseudo-terminal here), plain lines otherwise.
"""
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    print("numpy is not available: skipped")
    sys.exit(77)

REVGRAPH = os.environ.get("REVGRAPH")
_args = sys.argv[1:]
if _args and not _args[0].startswith("-"):
    REVGRAPH = os.path.abspath(_args.pop(0))
if not REVGRAPH:
    sys.exit("usage: test_sweep.py REVGRAPH [unittest options]")

# RESULT.json's keys a sweep line carries as they are: the hashes, and the diverged rows' count.
HASH_KEYS = ["predictions_sha256", "scores_sha256", "state_vector_sha256", "final_parameter_sha256",
             "final_velocity_sha256", "non_finite_score_rows"]
TIMES = re.compile(r',"run_seconds":[^,}]*\}$')


def rg(*args, timeout=300):
    return subprocess.run([REVGRAPH] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def strip_times(data):
    """The file's lines without their run_seconds field: what two runs of one sweep share."""
    text = data.decode() if isinstance(data, bytes) else data
    assert text.endswith("\n"), "a sweep file ends with a complete line"
    return [TIMES.sub("}", line) for line in text[:-1].split("\n")]


class SweepTest(unittest.TestCase):
    maxDiff = 4000

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="revgraph-sweep-test-")
        g = np.random.Generator(np.random.PCG64(77))
        cls.draw = os.path.join(cls.tmp, "draw.npz")
        np.savez(cls.draw, train_images=g.random((40, 1, 9, 9), dtype=np.float32),
                 train_labels=g.integers(0, 10, 40).astype(np.int64),
                 test_images=g.random((15, 1, 9, 9), dtype=np.float32))
        cls.labels_array = g.integers(0, 10, 15).astype(np.int64)
        cls.labels = os.path.join(cls.tmp, "labels.npy")
        np.save(cls.labels, cls.labels_array)
        cls.data = ["--input", cls.draw, "--test-labels", cls.labels, "--set", "batch_size=8", "--backend", "cpu"]
        cls.grid = ["--grid", "seed=5..7", "--grid", "depth=1,2", "--grid", "learning_rate=0.05,0.1"]
        cls.configs = [(s, d, lr) for s in (5, 6, 7) for d in (1, 2) for lr in (0.05, 0.1)]
        # Every point on its own, through `revgraph run`.
        cls.solo = []
        for s, d, lr in cls.configs:
            p = rg("run", "--quiet", *cls.data, "--set", f"seed={s}", "--set", f"depth={d}",
                   "--set", f"learning_rate={lr}")
            assert p.returncode == 0, p.stderr
            cls.solo.append(json.loads(p.stdout))
        cls.full = os.path.join(cls.tmp, "full.jsonl")
        p = rg("sweep", *cls.data, *cls.grid, "--jobs", "2", "--output", cls.full)
        assert p.returncode == 0, p.stderr
        cls.full_stderr = p.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def check_against_solo(self, path):
        lines = read(path).decode().split("\n")
        self.assertEqual(lines[-1], "", "the file ends with a complete line")
        lines = lines[:-1]
        self.assertEqual(len(lines), len(self.configs))
        for i, (line, solo, (s, d, lr)) in enumerate(zip(lines, self.solo, self.configs)):
            p = json.loads(line)
            self.assertEqual(list(p)[:6], ["index", "points", "grid_sha256", "config", "backend", "inputs_sha256"])
            self.assertEqual(list(p)[-1], "run_seconds")
            self.assertEqual(p["index"], i)
            self.assertEqual(p["points"], 12)
            self.assertEqual(p["config"], solo["config"])
            self.assertEqual((p["config"]["seed"], p["config"]["depth"], p["config"]["learning_rate"]), (s, d, lr))
            self.assertEqual(p["backend"], solo["backend"])
            for key in HASH_KEYS:
                self.assertEqual(p[key], solo[key], f"point {i}: {key}")
            self.assertEqual(p["correct"], solo["correct"])
            self.assertEqual(p["total"], 15)
            self.assertEqual(p["accuracy"], solo["accuracy"])
            self.assertGreater(p["run_seconds"], 0)

    def test_a_point_that_diverged_counts_its_rows(self):
        out = self.path("diverged.jsonl")
        p = rg("sweep", *self.data, "--grid", "learning_rate=0.1,50", "--output", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        fine, diverged = (json.loads(line) for line in read(out).decode().splitlines())
        self.assertEqual(fine["non_finite_score_rows"], 0)
        self.assertEqual(diverged["non_finite_score_rows"], 15)  # all 15 query rows NaN

    def test_lines_equal_solo_runs_whatever_the_jobs(self):
        self.check_against_solo(self.full)
        one = self.path("jobs1.jsonl")
        p = rg("sweep", *self.data, *self.grid, "--jobs", "1", "--output", one)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_against_solo(one)
        self.assertEqual(strip_times(read(one)), strip_times(read(self.full)))

    def test_embedded_default_reports_accuracy(self):
        out = self.path("embedded.jsonl")
        p = rg("sweep", "--grid", "seed=11,12", "--set", "epochs=1", "--backend", "cpu", "--output", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [json.loads(x) for x in read(out).decode().splitlines()]
        for seed, line in zip((11, 12), lines):
            solo = json.loads(rg("run", "--quiet", "--set", "epochs=1", "--set", f"seed={seed}",
                                 "--backend", "cpu").stdout)
            self.assertEqual(line["total"], 5000)
            self.assertEqual(line["correct"], solo["correct"])
            self.assertEqual(line["predictions_sha256"], solo["predictions_sha256"])

    def test_a_width_axis_gives_each_point_its_solo_runs_bytes(self):
        out = self.path("width.jsonl")
        p = rg("sweep", *self.data, "--grid", "width=82,128,256", "--grid", "depth=1,2", "--output", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [json.loads(x) for x in read(out).decode().splitlines()]
        self.assertEqual([(x["config"]["width"], x["config"]["depth"]) for x in lines],
                         [(w, d) for w in (82, 128, 256) for d in (1, 2)])
        for line in lines:
            w, d = line["config"]["width"], line["config"]["depth"]
            solo = json.loads(rg("run", "--quiet", *self.data, "--set", f"width={w}", "--set", f"depth={d}").stdout)
            self.assertEqual(line["config"], solo["config"])
            for key in HASH_KEYS:
                self.assertEqual(line[key], solo[key], (w, d, key))
            self.assertEqual(solo["parameter_count"], 2 * d * (w // 2) ** 2 + 10 * w + 10)
            self.assertEqual(solo["core_saved_bytes_per_example"], 4 * w)

    def test_without_labels_no_accuracy(self):
        out = self.path("nolabels.jsonl")
        p = rg("sweep", "--input", self.draw, "--set", "batch_size=8", "--backend", "cpu", "--grid", "seed=5",
               "--grid", "depth=1", "--grid", "learning_rate=0.05", "--output", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        (line,) = [json.loads(x) for x in read(out).decode().splitlines()]
        for key in ("correct", "total", "accuracy"):
            self.assertNotIn(key, line)
        for key in HASH_KEYS:
            self.assertEqual(line[key], self.solo[0][key])
        # Other inputs (no labels): another sweep, so the labelled sweep's file is refused.
        before = read(self.full)
        p = rg("sweep", "--input", self.draw, "--set", "batch_size=8", "--backend", "cpu", *self.grid,
               "--output", self.full)
        self.assert_error(p, 1, "input")
        self.assertEqual(read(self.full), before)

    def test_resume_after_a_cut_anywhere(self):
        whole = read(self.full)
        first_nl = whole.index(b"\n")
        third_nl = whole.index(b"\n", whole.index(b"\n", first_nl + 1) + 1)
        for cut in (0, 7, first_nl + 1, third_nl - 30, third_nl + 1, len(whole) - 1, len(whole)):
            with self.subTest(cut=cut):
                part = self.path("part.jsonl")
                with open(part, "wb") as f:
                    f.write(whole[:cut])
                p = rg("sweep", *self.data, *self.grid, "--jobs", "2", "--output", part)
                self.assertEqual(p.returncode, 0, p.stderr)
                resumed = read(part)
                self.assertEqual(strip_times(resumed), strip_times(whole))
                kept = whole[:whole.rfind(b"\n", 0, cut) + 1]
                self.assertTrue(resumed.startswith(kept), "the complete lines found are kept as they were")
                found = kept.count(b"\n")
                self.assertIn(f"{found} already in", p.stderr)
        # A complete file: nothing to run, nothing changed.
        before = read(self.full)
        p = rg("sweep", *self.data, *self.grid, "--output", self.full)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("ran 0 points", p.stderr)
        self.assertEqual(read(self.full), before)

    def test_shards_merge_to_the_unsharded_file(self):
        names = []
        for i in range(5):  # 12 points in 5 shards: 3, 3, 2, 2, 2
            out = self.path(f"shard{i}.jsonl")
            p = rg("sweep", *self.data, *self.grid, "--shard", f"{i}/5", "--output", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            idx = [json.loads(x)["index"] for x in read(out).decode().splitlines()]
            self.assertEqual(idx, list(range(i, 12, 5)), "shard I of N holds the points i with i % N == I")
            names.append(out)
        merged = self.path("merged.jsonl")
        p = rg("sweep", "merge", *reversed(names), "--output", merged)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(strip_times(read(merged)), strip_times(read(self.full)))
        self.check_against_solo(merged)
        # A missing shard, an unfinished one, an output that is a shard: refused, nothing written.
        bad = self.path("bad-merge.jsonl")
        p = rg("sweep", "merge", *names[:4], "--output", bad)
        self.assert_error(p, 1, "missing")
        self.assertFalse(os.path.exists(bad))
        cut = self.path("cut.jsonl")
        with open(cut, "wb") as f:
            f.write(read(names[4])[:-10])
        p = rg("sweep", "merge", *names[:4], cut, "--output", bad)
        self.assert_error(p, 1, "partial")
        self.assertFalse(os.path.exists(bad))
        before = read(names[0])
        p = rg("sweep", "merge", *names, "--output", names[0])
        self.assert_error(p, 2, "shard")
        self.assertEqual(read(names[0]), before)
        # Shards of a sweep without --test-labels (no correct, total or accuracy on a line) merge the same.
        plain = [a for a in self.data if a not in ("--test-labels", self.labels)]
        unlabelled = []
        for i in range(2):
            out = self.path(f"plain{i}.jsonl")
            p = rg("sweep", *plain, *self.grid, "--shard", f"{i}/2", "--output", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('"correct"', read(out).decode())
            unlabelled.append(out)
        plain_merged = self.path("plain-merged.jsonl")
        p = rg("sweep", "merge", *unlabelled, "--output", plain_merged)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([json.loads(x)["predictions_sha256"] for x in read(plain_merged).decode().splitlines()],
                         [json.loads(x)["predictions_sha256"] for x in read(self.full).decode().splitlines()])
        # A line edited by hand: respaced, a config no run takes, counts no run gives. Refused, none
        # copied (the line must be the text sweep writes, a valid config, 0 <= correct <= total).
        first = json.loads(read(names[1]).decode().splitlines()[0])
        for label, line, said in (
                ("spaces", json.dumps(first), "is not written as revgraph sweep writes its lines"),
                ("config", json.dumps(dict(first, config=dict(first["config"], width=83)), separators=(",", ":")),
                 "width"),
                ("counts", json.dumps(dict(first, correct=-5), separators=(",", ":")), "-5 correct of")):
            with self.subTest(edited=label):
                edited = self.path(f"edited-{label}.jsonl")
                with open(edited, "w") as f:
                    f.write("\n".join([line] + read(names[1]).decode().splitlines()[1:]) + "\n")
                p = rg("sweep", "merge", names[0], edited, *names[2:], "--output", bad)
                self.assert_error(p, 1, said)
                self.assertFalse(os.path.exists(bad))
        # Shard 1 of another grid of as many points (other seeds), or of this grid with another --set:
        # its points fill the gap as far as counts go; the grid's digest refuses them.
        for label, args in (("seeds", ["--grid", "seed=11..13", *self.grid[2:]]), ("set", [*self.grid, "--set", "epochs=1"])):
            with self.subTest(other=label):
                other = self.path(f"other-{label}.jsonl")
                p = rg("sweep", *self.data, *args, "--shard", "1/5", "--output", other)
                self.assertEqual(p.returncode, 0, p.stderr)
                p = rg("sweep", "merge", names[0], other, *names[2:], "--output", bad)
                self.assert_error(p, 1, "another sweep")
                self.assertFalse(os.path.exists(bad))
        # An existing --output is checked against the shards: this sweep's earlier merge is merged
        # again (same bytes but the times), anything else — another sweep's file, a task archive —
        # is refused untouched, and it fills no point of a missing shard.
        p = rg("sweep", "merge", *names, "--output", merged)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(strip_times(read(merged)), strip_times(read(self.full)))
        before = read(merged)
        p = rg("sweep", "merge", *names[:4], "--output", merged)
        self.assert_error(p, 1, "missing")
        self.assertEqual(read(merged), before)
        for label, victim in (("another sweep", self.path("other-seeds.jsonl")), ("not json", self.data[1])):
            with self.subTest(existing=label):
                copy = self.path("victim-" + os.path.basename(victim))
                shutil.copyfile(victim, copy)
                before = read(copy)
                p = rg("sweep", "merge", *names, "--output", copy)
                self.assert_error(p, 1, "the existing --output, checked against the shards")
                self.assertEqual(read(copy), before)

    def assert_error(self, proc, rc, mention):
        ctx = f"exit {proc.returncode}\nstdout: {proc.stdout[-300:]!r}\nstderr: {proc.stderr[-1000:]!r}"
        self.assertEqual(proc.returncode, rc, ctx)
        self.assertEqual(proc.stdout, "", ctx)
        lines = proc.stderr.splitlines()
        self.assertEqual(len(lines), 1, ctx)
        self.assertTrue(lines[0].startswith("revgraph: error: "), ctx)
        self.assertIn(mention.lower(), lines[0].lower(), ctx)

    def test_bad_requests_are_refused_and_touch_nothing(self):
        out = self.path("never.jsonl")
        for grid, mention in ((["--grid", "bogus=1"], "bogus"), (["--grid", "seed=3..1"], "empty"),
                              (["--grid", "alpha=0.1..0.5"], "integer"), (["--grid", "depth=0"], "depth"),
                              (["--grid", "width=82,83"], "even integer in 82..1024"),
                              (["--grid", "width=80..84"], "even integer in 82..1024"),
                              (["--grid", "seed=1,1"], "twice"), (["--grid", "seed=1", "--grid", "seed=2"], "twice"),
                              (["--grid", "seed"], "key=v1"), (["--shard", "4/4"], "shard"),
                              (["--shard", "x"], "shard"), (["--jobs", "0"], "jobs")):
            with self.subTest(grid=grid):
                p = rg("sweep", *self.data, *grid, "--output", out)
                self.assert_error(p, 2, mention)
                self.assertFalse(os.path.exists(out))
        p = rg("sweep", *self.data, "--grid", "seed=1")
        self.assert_error(p, 2, "--output")
        # A GPU option with a CPU backend: refused as `run` refuses it (it once ran and ignored it).
        p = rg("sweep", *self.data, "--grid", "seed=1", "--backend", "cpu", "--device", "3", "--output", out)
        self.assert_error(p, 2, "--device")
        self.assertFalse(os.path.exists(out))
        # An output that is an input (however spelled) is refused before anything is written.
        for victim in (self.draw, self.labels):
            before = read(victim)
            alias = os.path.join(self.tmp, ".", os.path.basename(victim))
            p = rg("sweep", *self.data, "--grid", "seed=1", "--output", alias)
            self.assert_error(p, 2, "input" if victim == self.draw else "labels")
            self.assertEqual(read(victim), before)
        config = self.path("config.json")
        with open(config, "w") as f:
            f.write('{"epochs": 1}\n')
        p = rg("sweep", *self.data, "--config", config, "--grid", "seed=1", "--output", config)
        self.assert_error(p, 2, "--config")
        self.assertEqual(read(config), b'{"epochs": 1}\n')
        # Another sweep's file, or something else entirely: refused, left as it was.
        for name, content in (("other.txt", b"my notes\nline two\n"), ("noline", b"no newline at all")):
            path = self.path(name)
            with open(path, "wb") as f:
                f.write(content)
            p = rg("sweep", *self.data, *self.grid, "--output", path)
            self.assert_error(p, 1, name)
            self.assertEqual(read(path), content)
        before = read(self.full)
        p = rg("sweep", *self.data, "--grid", "seed=5..7", "--output", self.full)
        self.assert_error(p, 1, "another grid")
        self.assertEqual(read(self.full), before)

    def test_check_runs_and_writes_nothing(self):
        # --check: the points counted (the grid's 12, a shard's share), stdout one line, nothing written;
        # its refusals are the sweep's own.
        out = self.path("checked.jsonl")
        p = rg("sweep", *self.data, *self.grid, "--shard", "1/5", "--output", out, "--check")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(p.stdout, f"revgraph: sweep check: 12 points, shard 1/5: 3 points on cpu; nothing run, "
                                   f"{out} not touched\n")
        self.assertFalse(os.path.exists(out))
        before = read(self.full)
        p = rg("sweep", *self.data, *self.grid, "--output", self.full, "--check")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(read(self.full), before)
        for extra, status, mention in ((["--grid", "bogus=1"], 2, "bogus"), (["--grid", "width=82,1026"], 2, "width"),
                                       (["--grid", "seed=1", "--backend", "gpu"], 1, "gpu")):
            p = rg("sweep", *self.data, *extra, "--output", out, "--check")
            self.assert_error(p, status, mention)
            self.assertFalse(os.path.exists(out))
        p = rg("sweep", *self.data, "--grid", "seed=1", "--output", self.path("nowhere/x.jsonl"), "--check")
        self.assert_error(p, 1, "nowhere")
        # A GPU backend is checked by name and width rule, with or without a GPU here (a login node's check).
        data = [a for a in self.data if a not in ("--backend", "cpu")]
        p = rg("sweep", *data, "--grid", "width=82,96", "--backend", "cuda-fused", "--output", out, "--check")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(" on cuda-fused; nothing run", p.stdout)

    def test_check_holds_an_existing_output_to_the_resume_rule(self):
        """--check refuses the output the sweep would refuse to resume (it passed them, and a cluster
        queued jobs that failed at their first line), takes the ones it would resume, and reads them
        only. "auto" resolves on the machine that runs the sweep: its check compares all but the
        backend each line names."""
        with open(self.full, "rb") as f:
            full = f.read()
        lines = full.splitlines(keepends=True)
        # The sweep's "auto" resumes lines that name cpu only where it resolves to cpu (a GPU machine
        # with a current report picks a GPU backend, and refuses them as another backend's).
        auto = next(b["backend"] for b in json.loads(rg("backends", "--json").stdout)["backends"]
                    if b["requested"] == "auto")
        cases = (("whole.jsonl", full, self.data, 0, None),  # the sweep's own, done: resumes to nothing
                 ("cut.jsonl", b"".join(lines[:3]) + lines[3][:50], self.data, 0, None),  # stopped while writing
                 ("other-backend.jsonl", full, [a if a != "cpu" else "cpu-reference" for a in self.data], 1,
                  "line 1 is not point 0"),
                 ("any-backend.jsonl", full, [a if a != "cpu" else "auto" for a in self.data], 0, None),
                 ("other-tail.jsonl", b"".join(lines[:3]) + b'{"index":9', self.data, 1, "not the start"),
                 ("too-long.jsonl", full + lines[0], self.data, 1, "holds 13 lines"))
        for name, content, data, status, mention in cases:
            with self.subTest(name):
                path = self.path(name)
                with open(path, "wb") as f:
                    f.write(content)
                p = rg("sweep", *data, *self.grid, "--output", path, "--check")
                if status:
                    self.assert_error(p, status, mention)
                else:
                    self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(read(path), content)
                # The sweep itself agrees with the check (it then completes the cut file).
                p = rg("sweep", *data, *self.grid, "--output", path, "--quiet")
                if name == "any-backend.jsonl" and auto != "cpu":
                    status = 1
                self.assertEqual(p.returncode, status, p.stderr)
                if not status:  # the lines there kept, the rest run (their times are this run's)
                    done = read(path).splitlines(keepends=True)
                    self.assertEqual((len(done), done[:3]), (len(lines), lines[:3]))

    def test_progress_plain_and_on_a_terminal(self):
        self.assertRegex(self.full_stderr, r"revgraph: sweep: 12/12 points, [0-9.]+ points/s, ETA 0s\n")
        self.assertNotIn("\r", self.full_stderr)
        out = self.path("tty.jsonl")
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(REVGRAPH, [REVGRAPH, "sweep", *self.data, "--grid", "seed=1..4", "--jobs", "2", "--output", out])
        chunks = []
        while True:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        _, status = os.waitpid(pid, 0)
        text = b"".join(chunks).decode(errors="replace")
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, text)
        self.assertRegex(text, r"\r\[#{30}\] 4/4 points  [0-9.]+ points/s  ETA 0s")
        self.assertEqual(len(read(out).splitlines()), 4)
        q = rg("sweep", *self.data, "--grid", "seed=1..4", "--quiet", "--output", self.path("quiet.jsonl"))
        self.assertEqual((q.returncode, q.stderr), (0, ""))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _args, verbosity=2)
