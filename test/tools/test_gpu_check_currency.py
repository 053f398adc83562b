#!/usr/bin/env python3
"""What a gpu-check report speaks for, tested without a GPU: the commit it names (git's HEAD, the
packed commit, which wins where), the GPU path a report is current for (what engine/cuda/ and graphs/
compile, by tokens: `tools/gpu-check current`), the evidence carried across the change of rule, and
the GPU backends `auto` may pick from it (tools/gpu_check/verified.py).

  python3 test/tools/test_gpu_check_currency.py [SOURCE_ROOT]   (tools/ on PYTHONPATH; Debian's python3)
"""
import contextlib
import glob
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
from gpu_check import cli, currency, cxx_tokens, gpu_path, verified  # noqa: E402
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
        # The GPU machine: the tree of c2 (which only adds a file) under a .git whose HEAD is c1.
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


def write_tree(root, files):
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)


# A made-up tree: a GPU unit that includes a model header, a graphs unit, and files the GPU path
# does not compile.
MADE_UP = {
    "engine/cuda/k.cu": '#include "engine/model/m.hpp"\n__global__ void k(float* x) { x[0] = m(); }\n',
    "engine/cuda/plan.cpp": '#include "engine/cuda/plan.hpp"\nint plan() { return 2; }\n',
    "engine/cuda/plan.hpp": "int plan();\n",
    "engine/model/m.hpp": "inline float m() { return 1.0f; }\n",
    "engine/qualify/band.cpp": "int band() { return 12; }\n",
    "graphs/g.cpp": '#include "graphs/g.hpp"\n',
    "graphs/g.hpp": "struct G {};\n",
    "tools/t.py": "t = 1\n",
    "README.md": "r\n",
}


class Currency(unittest.TestCase):
    def tree(self):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        write_tree(root, MADE_UP)
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

    def test_the_gpu_path_is_the_units_under_engine_cuda_and_graphs_and_what_they_include(self):
        root = self.tree()
        d = currency.tree_digest(root)
        self.assertEqual(d["files"], ["engine/cuda/k.cu", "engine/cuda/plan.cpp", "engine/cuda/plan.hpp",
                                      "engine/model/m.hpp", "graphs/g.cpp", "graphs/g.hpp"])
        listing = "".join(f"{hashlib.sha256(cxx_tokens.token_bytes(MADE_UP[p])).hexdigest()}  {p}\n" for p in d["files"])
        self.assertEqual(d["sha256"], hashlib.sha256(listing.encode()).hexdigest())  # sha256sum's listing, sorted
        self.assertEqual(d["scheme"], "gpu-path/1")

    def test_auto_may_pick_the_backends_of_a_current_passing_report_fastest_first(self):
        root = self.tree()
        self.assertEqual(verified.verified(root)["backends"], [])  # no report
        digest = currency.tree_digest(root)
        report = {"steps": [], "git_commit": "abc", "written_utc": "2026-12-04T10:00:00Z", "call": 1,
                  "gpu_path": digest, "passed": True, "gpu_arch": 90,
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
        self.assertEqual(verified.verified(root)["backends"], [])  # the newest of this GPU path did not pass
        self.write(root, "r2.json", dict(report, written_utc="2026-12-04T11:00:00Z"))
        with open(os.path.join(root, "engine", "model", "m.hpp"), "a") as f:
            f.write("inline int n() { return 0; }\n")
        v = verified.verified(root)
        self.assertEqual(v["backends"], [])  # the GPU path moved on: unverified again
        self.assertIn("unverified", v["why"])
        self.assertEqual(verified.tag(root).count(";"), 4)  # the verdict's own ';' never splits the line
        # A newer report of other sources (an experiment's) does not hide the one of this tree.
        write_tree(root, {"engine/model/m.hpp": MADE_UP["engine/model/m.hpp"]})
        other = dict(report, written_utc="2026-12-04T12:00:00Z", gpu_path=dict(digest, sha256="0" * 64))
        self.write(root, "r3.json", other)
        self.assertEqual(verified.verified(root)["report"], os.path.join("bench", "results", "r2.json"))
        self.assertEqual(verified.verified(root)["backends"], ["cuda-fused", "cuda"])
        # A backend the report timed nothing for (task_ms null) is not picked, and nothing breaks.
        timing = dict(report["timing"], cuda={"task_ms": None})
        self.write(root, "r4.json", dict(report, written_utc="2026-12-04T13:00:00Z", timing=timing))
        self.assertEqual(verified.verified(root)["backends"], ["cuda-fused"])
        # A report of the old rule (bytes of engine/ and graphs/) speaks for nothing without a carry.
        self.write(root, "r5.json", {k: v for k, v in dict(report, written_utc="2026-12-04T14:00:00Z",
                                                             gpu_sources={"sha256": "1" * 64}).items() if k != "gpu_path"})
        rc, line = self.current(root, "--report", os.path.join(root, "bench", "results", "r5.json"))
        self.assertEqual(rc, 1)
        self.assertIn("none is carried beside it", line)
        with open(os.path.join(root, "bench", "results", "r5.carried.json"), "w") as f:
            json.dump({"gpu_path": digest}, f)
        rc, line = self.current(root, "--report", os.path.join(root, "bench", "results", "r5.json"))
        self.assertEqual(rc, 0, line)
        self.assertIn("carried (r5.carried.json)", line)

    def test_comments_layout_and_files_outside_the_path_do_not_move_it_code_and_new_includes_do(self):
        root = self.tree()
        d = currency.tree_digest(root)["sha256"]

        def digest_after(changes):
            write_tree(root, changes)
            return currency.tree_digest(root)

        # Comments and layout anywhere; any change outside the path.
        self.assertEqual(digest_after({"engine/model/m.hpp": "// why\ninline  float m()\n{ /* one */ return 1.0f; }\n",
                                       "engine/qualify/band.cpp": "int band() { return 5; }\n",
                                       "tools/t.py": "t = 2\n", "README.md": "x\n"})["sha256"], d)
        # A code change in an included header.
        self.assertNotEqual(digest_after({"engine/model/m.hpp": "inline float m() { return 2.0f; }\n"})["sha256"], d)
        write_tree(root, {"engine/model/m.hpp": MADE_UP["engine/model/m.hpp"]})
        self.assertEqual(currency.tree_digest(root)["sha256"], d)
        # A header newly included by a GPU source is in the path from then on, with no list edited.
        write_tree(root, {"engine/io/helper.hpp": "inline int helper() { return 1; }\n"})
        self.assertEqual(currency.tree_digest(root)["sha256"], d)  # not included yet: not the path's
        with_include = digest_after({"engine/cuda/plan.hpp": '#include "engine/io/helper.hpp"\nint plan();\n'})
        self.assertIn("engine/io/helper.hpp", with_include["files"])
        self.assertNotEqual(digest_after({"engine/io/helper.hpp": "inline int helper() { return 2; }\n"})["sha256"],
                            with_include["sha256"])
        self.assertEqual(digest_after({"engine/io/helper.hpp": "// a note\ninline int helper() { return 1; }\n"})["sha256"],
                         with_include["sha256"])
        # An include only the device pass sees (nvcc's __CUDA_ARCH__) counts too.
        arch_only = digest_after({"engine/cuda/k.cu": '#if defined(__CUDA_ARCH__)\n#include "engine/io/dev.hpp"\n#endif\n'
                                                      + MADE_UP["engine/cuda/k.cu"], "engine/io/dev.hpp": "int dev;\n"})
        self.assertIn("engine/io/dev.hpp", arch_only["files"])

    def test_current_judges_the_report_that_speaks_for_the_tree(self):
        root = self.tree()
        here = currency.tree_digest(root)
        base = {"git_commit": "c1", "steps": {}, "call": 1, "passed": True}
        self.assertEqual(self.current(root)[0], 1)  # none yet
        self.write(root, "cpu-bench.json", {"context": {}, "benchmarks": []})  # not a gpu-check report
        self.write(root, "b.json", dict(base, written_utc="2027-01-02T00:00:00Z", gpu_path=dict(here, sha256="0" * 64)))
        rc, line = self.current(root)
        self.assertEqual(rc, 1)
        self.assertIn("the GPU path changed since the report", line)
        self.assertIn("b.json", line)  # none of this tree: the newest says why
        self.write(root, "a.json", dict(base, written_utc="2027-01-01T00:00:00Z", gpu_path=here))
        rc, line = self.current(root)
        self.assertEqual(rc, 0, line)
        self.assertIn("current and passed", line)
        self.write(root, "c.json", dict(base, call=2, written_utc="2027-01-03T00:00:00Z", gpu_path=here, passed=False))
        self.assertEqual(self.current(root)[0], 0)  # call 2's report is not the verdict
        self.write(root, "d.json", dict(base, written_utc="2027-01-04T00:00:00Z", gpu_path=here, passed=False))
        self.assertIn("not passing", self.current(root)[1])
        rc, line = self.current(root, "--report", os.path.join(root, "bench", "results", "a.json"))
        self.assertEqual(rc, 0, line)
        rc, line = self.current(root, "--report", os.path.join(root, "bench", "results", "cpu-bench.json"))
        self.assertEqual((rc, len(line.strip().splitlines())), (2, 1))
        rc, line = self.current(root, "--bogus")
        self.assertEqual((rc, len(line.strip().splitlines())), (2, 1))


class Lexer(unittest.TestCase):
    """The tokens are the compiler's: held to g++'s own comment stripping and clang-format's layout."""

    def sources(self):
        found = []
        for top in ("engine", "graphs"):
            for d, _, files in os.walk(os.path.join(ROOT, top)):
                found += [os.path.join(d, f) for f in files if f.endswith(gpu_path.SOURCE_SUFFIXES)]
        return sorted(found)

    @unittest.skipIf(shutil.which("g++") is None, "g++ is not installed")
    def test_every_engine_file_tokenises_to_what_gpp_leaves_without_comments(self):
        import re
        checked = 0
        for path in self.sources():
            with open(path) as f:
                text = f.read()
            mine = re.sub(r"\s", "", "".join(t for t in cxx_tokens.tokens(text) if t != cxx_tokens.NEWLINE))
            p = subprocess.run(["g++", "-fpreprocessed", "-dD", "-E", "-P", "-x", "c++", path], capture_output=True, text=True)
            theirs = re.sub(r"\s", "", p.stdout.replace("\\\n", ""))
            if not theirs.startswith("#pragmaonce") and mine.startswith("#pragmaonce"):
                mine = mine[len("#pragmaonce"):]  # g++ drops `#pragma once` of a main file
            self.assertEqual(mine, theirs, os.path.relpath(path, ROOT))
            checked += 1
        self.assertGreater(checked, 100)

    def test_the_lexer_on_the_hard_cases(self):
        t = cxx_tokens.tokens
        self.assertEqual(t("a - -b; a --b;"), ["a", "-", "-", "b", ";", "a", "--", "b", ";"])
        self.assertEqual(t('x = "a  b // c"; // d\n'), ["x", "=", '"a  b // c"', ";"])
        self.assertEqual(t("int n = 1'000'000; float f = 1e-5f;"), ["int", "n", "=", "1'000'000", ";", "float", "f", "=", "1e-5f", ";"])
        self.assertEqual(t("c = '\\'' /* x */ + u8\"y\";"), ["c", "=", "'\\''", "+", 'u8"y"', ";"])
        self.assertEqual(t('r = R"d(a )" b)d";'), ["r", "=", 'R"d(a )" b)d"', ";"])
        self.assertEqual(t("#define X \\\n  1\nint y;"), ["#", "define", "X", "1", "\n", "int", "y", ";"])
        self.assertEqual(t("#if A // c\n#endif"), ["#", "if", "A", "\n", "#", "endif", "\n"])
        self.assertEqual(t("a>>=b;x<=>y"), ["a", ">>=", "b", ";", "x", "<=>", "y"])
        self.assertNotEqual(t('"a b"'), t('"a  b"'))  # string contents count, spaces and all
        with self.assertRaises(cxx_tokens.LexError):
            t("/* never closed")

    @unittest.skipIf(shutil.which("clang-format") is None, "clang-format is not installed")
    def test_clang_format_relayout_of_every_gpu_path_file_keeps_its_tokens(self):
        style = "{BasedOnStyle: LLVM, ColumnLimit: 50, SortIncludes: false, IndentWidth: 3, BreakStringLiterals: false}"
        for rel in currency.tree_digest(ROOT)["files"]:
            with open(os.path.join(ROOT, rel)) as f:
                text = f.read()
            p = subprocess.run(["clang-format", f"--style={style}", f"--assume-filename={rel.replace('.cuh', '.hpp').replace('.cu', '.cpp')}"],
                               input=text, capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotEqual(p.stdout, text, rel)  # the layout did change
            self.assertEqual(cxx_tokens.tokens(p.stdout), cxx_tokens.tokens(text), rel)


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)


class RealHistory(unittest.TestCase):
    """The committed evidence: b46778a's report, carried to the gpu-path rule, speaks for its tree;
    comments there or changes outside the GPU path keep it speaking; kernel, op, model-math and
    layout changes do not. Needs the repository's history (skipped in a shallow clone)."""

    RESULTS = os.path.join(ROOT, "bench", "results")

    def carried(self):
        found = sorted(glob.glob(os.path.join(self.RESULTS, "*" + currency.CARRIED_SUFFIX)))
        self.assertTrue(found, "no carried digest under bench/results")
        return found

    def tree_of(self, commit):
        if git("rev-parse", "--verify", f"{commit}^{{commit}}").returncode != 0:
            self.skipTest(f"commit {commit} is not in this clone's history")
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        currency.checkout(commit, ROOT, root)
        return root

    def current(self, tree):
        p = subprocess.run([os.path.join(ROOT, "tools", "gpu-check"), "current", "--root", tree, "--results", self.RESULTS],
                           capture_output=True, text=True)
        self.assertEqual(len((p.stdout + p.stderr).strip().splitlines()), 1, p.stdout + p.stderr)
        return p.returncode, p.stdout

    def test_every_carried_digest_is_what_its_commit_gives_and_checks_the_old_digest(self):
        for path in self.carried():
            with open(path) as f:
                sidecar = json.load(f)
            report = path[:-len(currency.CARRIED_SUFFIX)] + ".json"
            self.tree_of(sidecar["commit"])  # skips without history
            again = currency.carry(report, now=sidecar["written_utc"])
            self.assertEqual(again["gpu_path"], sidecar["gpu_path"], path)
            self.assertEqual(again["legacy"]["sha256"], sidecar["legacy"]["sha256"])
            # Another commit's tree is not the report's: the carry refuses it.
            parent = git("rev-parse", f"{sidecar['commit']}~30").stdout.strip()
            if parent:
                with self.assertRaisesRegex(ValueError, "not the report's"):
                    currency.carry(report, commit=parent)

    def test_the_carried_report_speaks_for_its_commit_through_comments_and_outside_changes_only(self):
        with open(self.carried()[-1]) as f:
            sidecar = json.load(f)
        tree = self.tree_of(sidecar["commit"])
        rc, line = self.current(tree)
        self.assertEqual(rc, 0, line)
        self.assertIn("current and passed", line)
        self.assertIn("carried", line)
        files = currency.tree_digest(tree)["files"]
        originals = {}

        def edit(rel, change):
            path = os.path.join(tree, rel)
            with open(path) as f:
                originals.setdefault(rel, f.read())
            with open(path, "w") as f:
                f.write(change(originals[rel]))

        def restore():
            for rel, text in originals.items():
                with open(os.path.join(tree, rel), "w") as f:
                    f.write(text)
            originals.clear()

        # A comment in every file of the GPU path, and one re-wrapped line: still current.
        for rel in files:
            edit(rel, lambda s: "// reviewed\n" + s.replace("{\n", "{ /* note */\n", 1) + "\n/* the end */\n")
        rc, line = self.current(tree)
        self.assertEqual(rc, 0, line)
        restore()
        # Code changes to files the GPU path does not compile: the CPU backends, qualify, io, tools, docs.
        for rel in ("engine/cpu/fast_backend.cpp", "engine/cpu/reference.cpp", "engine/qualify/band.cpp",
                    "engine/io/npy.cpp", "tools/gpu_check/plan.py", "docs/spec.md"):
            self.assertNotIn(rel, files)
            edit(rel, lambda s: s + "\nint revgraph_test_change_ = 1;\n")
        rc, line = self.current(tree)
        self.assertEqual(rc, 0, line)
        restore()
        # A kernel, an op, the shared model math, the layout header: each alone makes it not current.
        for rel in ("engine/cuda/kernels/fused.cuh", "engine/cuda/ops/loss.hpp", "engine/model/math.hpp",
                    "engine/model/layout.hpp"):
            self.assertIn(rel, files)
            edit(rel, lambda s: s + "\nnamespace revgraph { inline int test_change_() { return 1; } }\n")
            rc, line = self.current(tree)
            self.assertEqual(rc, 1, rel)
            self.assertIn("the GPU path changed since the report", line, rel)
            restore()

    def test_a_clean_clone_answers_without_a_build(self):
        if git("rev-parse", "HEAD").returncode != 0:
            self.skipTest("no git checkout")
        status = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
        clone = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, clone)
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", ROOT, clone], check=True)
        self.assertFalse(os.path.exists(os.path.join(clone, "build")))
        p = subprocess.run([os.path.join(clone, "tools", "gpu-check"), "current"], capture_output=True, text=True, cwd=clone)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertEqual(len(p.stdout.strip().splitlines()), 1, p.stdout + p.stderr)
        if not status:  # the checkout is its HEAD: the clone's answer is this tree's
            expected = currency.verdict(*currency.speaking_report(self.RESULTS, currency.tree_digest(ROOT)),
                                        currency.tree_digest(ROOT))[0]
            self.assertEqual(p.returncode == 0, expected, p.stdout)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    import unittest_exit  # noqa: E402
    unittest_exit.main()
