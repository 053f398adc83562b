#!/usr/bin/env python3
"""What a gpu-check report speaks for, tested without a GPU: the commit it names (git's HEAD, the
packed commit, which wins where), whether it is current for a tree's engine/ and graphs/ (`tools/gpu-check
current`), and the GPU backends `auto` may pick from it (tools/gpu_check/verified.py).

  python3 test/tools/test_gpu_check_currency.py [SOURCE_ROOT]   (tools/ on PYTHONPATH; Debian's python3)
"""
import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpu_check import cli, currency, verified  # noqa: E402
from gpu_check import steps as gc_steps  # noqa: E402
from gpu_check import commit as gc_commit  # noqa: E402


class Commit(unittest.TestCase):
    def tree(self, files):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        os.makedirs(os.path.join(root, ".gpudeps"))
        with open(os.path.join(root, ".gpudeps", "sources.sha256"), "w") as listing:
            for rel, text in files.items():
                path = os.path.join(root, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
                listing.write(f"{hashlib.sha256(text.encode()).hexdigest()}  {rel}\n")
        with open(os.path.join(root, ".gpudeps", "COMMIT"), "w") as f:
            f.write("0123abcd\n")
        return root

    def test_a_tree_without_git_takes_the_packed_commit_only_while_it_is_that_commit(self):
        root = self.tree({"README.md": "x", "engine/a.cpp": "int a;"})
        commit, how = gc_commit.detect_commit(root, {})
        self.assertEqual(commit, "0123abcd")
        self.assertIn(".gpudeps/COMMIT", how)
        self.assertEqual(gc_commit.detect_commit(root, {"GIT_COMMIT": "feed"})[0], "feed")
        with open(os.path.join(root, "engine/a.cpp"), "w") as f:
            f.write("int b;")
        commit, how = gc_commit.detect_commit(root, {})
        self.assertEqual(commit, "unknown")
        self.assertIn("engine/a.cpp differs", how)
        os.remove(os.path.join(root, "engine/a.cpp"))
        self.assertIn("engine/a.cpp is missing", gc_commit.detect_commit(root, {})[1])

    @unittest.skipIf(shutil.which("git") is None, "git is not installed")
    def test_git_and_the_packed_commit_each_win_where_they_are_the_tree(self):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        git = ["git", "-C", root, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]

        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)

        def commit(message):
            subprocess.run(git + ["add", "-A", "engine", "README.md"], check=True)
            subprocess.run(git + ["commit", "-qm", message], check=True)
            return subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()

        def pack(commit_id):  # what tools/pack-gpu-deps records: the commit and every tracked file's hash
            files = subprocess.run(git + ["ls-files"], capture_output=True, text=True).stdout.split()
            os.makedirs(os.path.join(root, ".gpudeps"), exist_ok=True)
            with open(os.path.join(root, ".gpudeps", "sources.sha256"), "w") as listing:
                for rel in files:
                    with open(os.path.join(root, rel), "rb") as f:
                        listing.write(f"{hashlib.sha256(f.read()).hexdigest()}  {rel}\n")
            with open(os.path.join(root, ".gpudeps", "COMMIT"), "w") as f:
                f.write(commit_id + "\n")

        subprocess.run(git + ["init", "-q"], check=True)
        write(".gitignore", "/.gpudeps/\n")
        write("README.md", "x")
        write("engine/a.cpp", "int a;")
        c1 = commit("one")
        self.assertEqual(gc_commit.detect_commit(root, {}), (c1, "git"))
        # The lent machine: the tree of c2 (which only adds a file) under a .git whose HEAD is c1.
        write("engine/b.cpp", "int b;")
        c2 = commit("two: adds a file")
        pack(c2)
        subprocess.run(git + ["reset", "-q", "--soft", c1], check=True)
        subprocess.run(git + ["reset", "-q"], check=True)  # b.cpp stays, untracked: git's check passes
        commit_id, how = gc_commit.detect_commit(root, {})
        self.assertEqual(commit_id, c2, how)
        self.assertIn("does not have it as an ancestor", how)
        # A checkout that moved on past an old pack: HEAD, the pack's descendant, wins.
        c2b = commit("two again")
        pack(c1)
        write("engine/c.cpp", "int c;")
        c3 = commit("three: adds a file")
        self.assertNotEqual(c2b, c3)
        self.assertEqual(gc_commit.detect_commit(root, {}), (c3, "git"))
        # A tracked file changed: not HEAD's tree; the pack's where it matches, else unknown.
        pack(c3)
        write("engine/a.cpp", "int changed;")
        self.assertEqual(gc_commit.detect_commit(root, {})[0], "unknown")
        pack("feedc0de")
        commit_id, how = gc_commit.detect_commit(root, {})
        self.assertEqual(commit_id, "feedc0de")
        self.assertIn(f"git's HEAD {c3[:12]} is not the tree (1 tracked files differ)", how)

    def test_no_commit_anywhere_is_unknown(self):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        self.assertEqual(gc_commit.detect_commit(root, {})[0], "unknown")


class Currency(unittest.TestCase):
    def tree(self):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        for rel, text in (("engine/a.cpp", "int a;"), ("engine/cuda/k.cu", "k"), ("graphs/g.hpp", "g"),
                          ("tools/t.py", "t"), ("README.md", "r")):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        os.makedirs(os.path.join(root, "bench", "results"))
        return root

    def write(self, root, name, report):
        with open(os.path.join(root, "bench", "results", name), "w") as f:
            json.dump(report, f)

    def current(self, root, *args):
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            try:
                rc = cli.main(["current", "--root", root, "--results", os.path.join(root, "bench", "results"), *args])
            except SystemExit as e:
                rc = e.code
        return rc, out.getvalue() + err.getvalue()

    def test_auto_may_pick_the_backends_of_a_current_passing_report_fastest_first(self):
        root = self.tree()
        self.assertEqual(verified.verified(root)["backends"], [])  # no report
        digest = currency.gpu_sources(root)
        report = {"steps": [], "git_commit": "abc", "written_utc": "2026-12-04T10:00:00Z", "call": 1,
                  "gpu_sources": digest, "passed": True, "gpu_arch": 90,
                  "numerical_validation": {"device": "NVIDIA H200 (sm_90)"},
                  "timing": {"cuda": {"task_ms": {"median": 14.3}}, "cuda-fused": {"task_ms": {"median": 2.6}},
                             "torch-cuda-graph": {"task_ms": {"median": 41.0}}}}
        self.write(root, "r1.json", report)
        v = verified.verified(root)
        self.assertEqual(v["backends"], ["cuda-fused", "cuda"])  # fastest first; torch is no backend
        self.assertEqual(v["report"], os.path.join("bench", "results", "r1.json"))
        self.assertTrue(v["why"].startswith("current and passed"))
        self.assertEqual(verified.tag(root).split(";")[0], "cuda-fused,cuda")
        self.assertEqual(v["device"], "NVIDIA H200 (sm_90)")
        self.assertEqual(verified.tag(root, "90").split(";")[4], "90")
        # A build with other machine code is not the report's: none verified, and it says why.
        for arch in ("80,90", "80", ""):
            other = verified.verified(root, gpu_arch=arch)
            self.assertEqual(other["backends"], [], arch)
            self.assertIn("is not the report's (90)", other["why"])
        self.assertEqual(verified.verified(root, gpu_arch="90")["backends"], ["cuda-fused", "cuda"])
        self.write(root, "r2.json", dict(report, written_utc="2026-12-04T11:00:00Z", passed=False))
        self.assertEqual(verified.verified(root)["backends"], [])  # the newest did not pass
        self.write(root, "r2.json", dict(report, written_utc="2026-12-04T11:00:00Z"))
        with open(os.path.join(root, "engine", "a.cpp"), "a") as f:
            f.write(" ")
        v = verified.verified(root)
        self.assertEqual(v["backends"], [])  # the sources moved on: unverified again
        self.assertIn("unverified", v["why"])
        self.assertEqual(verified.tag(root).count(";"), 4)  # the verdict's own ';' never splits the line
        # A newer report of other sources (a branch's) does not hide the one of this tree.
        with open(os.path.join(root, "engine", "a.cpp"), "w") as f:
            f.write("int a;")
        self.write(root, "r2.json", dict(report, written_utc="2026-12-04T11:00:00Z"))
        other = dict(report, written_utc="2026-12-04T12:00:00Z", gpu_sources={"sha256": "0" * 64, "files": 3})
        self.write(root, "r3.json", other)
        self.assertEqual(verified.verified(root)["report"], os.path.join("bench", "results", "r2.json"))
        self.assertEqual(verified.verified(root)["backends"], ["cuda-fused", "cuda"])
        # A backend the report timed nothing for (task_ms null) is not picked, and nothing breaks.
        timing = dict(report["timing"], cuda={"task_ms": None})
        self.write(root, "r4.json", dict(report, written_utc="2026-12-04T13:00:00Z", timing=timing))
        self.assertEqual(verified.verified(root)["backends"], ["cuda-fused"])

    def test_the_digest_is_of_engine_and_graphs_alone_and_moves_with_any_change_there(self):
        root = self.tree()
        d = currency.gpu_sources(root)
        self.assertEqual(d["files"], 3)
        listing = "".join(f"{hashlib.sha256(t.encode()).hexdigest()}  {rel}\n" for rel, t in
                          (("engine/a.cpp", "int a;"), ("engine/cuda/k.cu", "k"), ("graphs/g.hpp", "g")))
        self.assertEqual(d["sha256"], hashlib.sha256(listing.encode()).hexdigest())  # sha256sum's listing, sorted
        with open(os.path.join(root, "tools", "t.py"), "w") as f:
            f.write("changed")  # outside the GPU sources
        os.makedirs(os.path.join(root, "engine", "__pycache__"))
        with open(os.path.join(root, "engine", "__pycache__", "x.pyc"), "w") as f:
            f.write("x")
        self.assertEqual(currency.gpu_sources(root), d)
        for rel in ("graphs/g.hpp", "engine/cuda/k.cu"):
            with open(os.path.join(root, rel), "a") as f:
                f.write(" ")
            self.assertNotEqual(currency.gpu_sources(root)["sha256"], d["sha256"], rel)

    def test_the_checkout_digest_equals_gits_own_listing(self):
        try:
            files = subprocess.run(["git", "-C", gc_steps.ROOT, "ls-files", "--", "engine", "graphs"],
                                   capture_output=True, text=True, check=True).stdout.split()
            untracked = subprocess.run(["git", "-C", gc_steps.ROOT, "ls-files", "--others", "--", "engine", "graphs"],
                                       capture_output=True, text=True, check=True).stdout.split()
        except (OSError, subprocess.CalledProcessError):
            self.skipTest("no git checkout")
        if untracked:
            self.skipTest(f"untracked files under engine/ or graphs/: {untracked[:3]}")
        lines = []
        for rel in sorted(files):
            with open(os.path.join(gc_steps.ROOT, rel), "rb") as f:
                lines.append(f"{hashlib.sha256(f.read()).hexdigest()}  {rel}\n")
        self.assertEqual(currency.gpu_sources(gc_steps.ROOT)["sha256"], hashlib.sha256("".join(lines).encode()).hexdigest())

    def test_current_judges_the_newest_report_of_call_1(self):
        root = self.tree()
        here = currency.gpu_sources(root)
        base = {"git_commit": "c1", "steps": {}, "call": 1, "passed": True}
        self.assertEqual(self.current(root)[0], 1)  # none yet
        self.write(root, "cpu-bench.json", {"context": {}, "benchmarks": []})  # not a gpu-check report
        self.write(root, "a.json", dict(base, written_utc="2027-01-01T00:00:00Z", gpu_sources=here))
        rc, line = self.current(root)
        self.assertEqual(rc, 0, line)
        self.assertIn("current and passed", line)
        self.write(root, "b.json", dict(base, written_utc="2027-01-02T00:00:00Z", gpu_sources={"sha256": "0" * 64}))
        self.write(root, "c.json", dict(base, call=2, written_utc="2027-01-03T00:00:00Z", gpu_sources=here))
        rc, line = self.current(root)
        self.assertEqual(rc, 1)
        self.assertIn("changed since the report", line)
        self.assertIn("b.json", line)  # the newest of call 1; call 2's report is not the verdict
        self.write(root, "d.json", dict(base, written_utc="2027-01-04T00:00:00Z", gpu_sources=here, passed=False))
        self.assertIn("not passing", self.current(root)[1])
        self.write(root, "e.json", dict(base, written_utc="2027-01-05T00:00:00Z"))
        self.assertIn("records no digest", self.current(root)[1])
        rc, line = self.current(root, "--report", os.path.join(root, "bench", "results", "a.json"))
        self.assertEqual(rc, 0, line)
        rc, line = self.current(root, "--report", os.path.join(root, "bench", "results", "cpu-bench.json"))
        self.assertEqual((rc, len(line.strip().splitlines())), (2, 1))
        rc, line = self.current(root, "--bogus")
        self.assertEqual((rc, len(line.strip().splitlines())), (2, 1))


if __name__ == "__main__":
    unittest.main(verbosity=2)
