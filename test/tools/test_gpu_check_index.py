#!/usr/bin/env python3
"""bench/results/INDEX.md and README.md's GPU status are what `tools/gpu-check index` writes from the
committed reports: every report listed once with its date, commit, call and verdict (a failed one
marked), the report that speaks for this tree named first, every file of the folder linked; and
`tools/gpu-check file` brings a GPU machine's reports in under their names.

  python3 test/tools/test_gpu_check_index.py [SOURCE_ROOT]   (tools/ on PYTHONPATH; Debian's python3)
"""
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpu_check import cli, currency, index  # noqa: E402

RESULTS = os.path.join(ROOT, "bench", "results")


def run_cli(*args):
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            rc = cli.main(list(args))
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue() + err.getvalue()


class CommittedIndex(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(RESULTS, index.INDEX)) as f:
            self.text = f.read()

    def test_the_index_and_readme_are_what_the_reports_give(self):
        p = subprocess.run([os.path.join(ROOT, "tools", "gpu-check"), "index", "--check"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_every_report_is_listed_once_with_its_date_commit_call_and_verdict(self):
        rows = [line for line in self.text.splitlines() if line.startswith("| 20")]
        reports = [(p, r) for call in (1, 2, 3) for _, p, r in currency.reports(RESULTS, call)]
        self.assertGreater(len(reports), 5)
        for path, r in reports:
            name = os.path.basename(path)
            mine = [row for row in rows if f"[json]({name})" in row]
            self.assertEqual(len(mine), 1, name)
            cells = [c.strip() for c in mine[0].strip("|").split("|")]
            self.assertEqual(cells[0], r["written_utc"][:16].replace("T", " "), name)
            self.assertEqual(cells[1], f"`{r['git_commit'][:7]}`", name)
            self.assertEqual(cells[2], str(r.get("call", 1)), name)
            if r.get("passed") is True:
                self.assertTrue(cells[3].startswith("passed"), name)
            else:
                self.assertTrue(cells[3].startswith("**FAILED**"), name)
                for why in r.get("failures") or []:
                    self.assertIn(why, cells[3])
            # named by the rule: its run's date and time, GPU, commit, call
            self.assertEqual(name, index.report_file_name(r))
        # newest first
        whens = [row.split("|")[1].strip() for row in rows]
        self.assertEqual(whens, sorted(whens, reverse=True))

    def test_the_report_that_speaks_for_this_tree_comes_first(self):
        tree = currency.tree_digest(ROOT)
        path, report = currency.speaking_report(RESULTS, tree)
        ok, _ = currency.verdict(path, report, tree)
        head = self.text.split("## Every GPU run", 1)[0]
        if ok:
            self.assertIn("**Verified.**", head)
            self.assertIn(f"[{os.path.basename(path)}]", head)
            self.assertIn(tree["sha256"][:12], head)
            # the headline is this report's own figure
            ms = report["timing"]["cuda-fused"]["task_ms"]["median"]
            self.assertIn(f"| `cuda-fused` | {ms:.2f} ", head)
        else:
            self.assertIn("**Unverified.**", head)

    def test_every_file_of_the_folder_is_linked(self):
        for name in os.listdir(RESULTS):
            if name != index.INDEX:
                self.assertIn(f"]({name})", self.text, name)

    def test_readme_names_the_index_and_the_guide(self):
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        block = readme.split(index.README_BEGIN, 1)[1].split(index.README_END, 1)[0]
        self.assertIn("bench/results/INDEX.md", block)
        self.assertIn("docs/gpu.md", block)
        self.assertTrue(os.path.isfile(os.path.join(ROOT, "docs", "gpu.md")))
        self.assertLessEqual(len(block.strip().splitlines()), 6)
        self.assertIn("× the same-spec PyTorch learner (eager", block)


class MadeUp(unittest.TestCase):
    def tree(self):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        for rel, text in (("engine/cuda/k.cu", "int k;\n"), ("graphs/g.cpp", "int g;\n"),
                          ("README.md", f"# x\n\n{index.README_BEGIN}\nold\n{index.README_END}\n\nrest\n")):
            os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        os.makedirs(os.path.join(root, "bench", "results"))
        return root

    def out_dir(self, reports):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        for name, r in reports.items():
            with open(os.path.join(d, name), "w") as f:
                json.dump(r, f)
            with open(os.path.join(d, name.replace("report", "gpu-check").replace(".json", ".log")), "w") as f:
                f.write("log\n")
        return d

    def test_file_then_index_marks_failures_and_unverified_trees(self):
        root = self.tree()
        digest = currency.tree_digest(root)
        good = {"steps": [], "git_commit": "a" * 40, "written_utc": "2027-01-02T03:04:05Z", "call": 1, "passed": True,
                "complete": True, "device": "NVIDIA H200, 1.0, 1 MiB", "gpu_path": digest,
                "timing": {"cuda-fused": {"task_ms": {"median": 1.5}, "task_ms_cold": {"median": 1.6}}}}
        bad = dict(good, written_utc="2027-01-02T05:00:00Z", git_commit="b" * 40, passed=False,
                   failures=["step gpu-suite: 1"], gpu_path=dict(digest, sha256="0" * 64))
        d = self.out_dir({"report.json": good})
        rc, out = run_cli("file", d, "--root", root)
        self.assertEqual(rc, 0, out)
        names = sorted(os.listdir(os.path.join(root, "bench", "results")))
        self.assertEqual(names, ["2027-01-02-0304-h200-aaaaaaa-call1.json", "2027-01-02-0304-h200-aaaaaaa-call1.log", "INDEX.md"])
        rc, out = run_cli("file", d, "--root", root)  # never replaces what is there
        self.assertEqual(rc, 1)
        self.assertIn("exists already", out)
        rc, out = run_cli("file", self.out_dir({"report.json": bad}), "--root", root)
        self.assertEqual(rc, 0, out)
        with open(os.path.join(root, "bench", "results", "INDEX.md")) as f:
            text = f.read()
        self.assertIn("**Verified.** [2027-01-02-0304-h200-aaaaaaa-call1.json]", text)
        self.assertIn("| 2027-01-02 05:00 | `bbbbbbb` | 1 | **FAILED** — step gpu-suite: 1 |", text)
        self.assertLess(text.index("bbbbbbb"), text.index("| 2027-01-02 03:04 | `aaaaaaa`"))  # newest first
        with open(os.path.join(root, "README.md")) as f:
            readme = f.read()
        self.assertIn("**Verified on an NVIDIA H200**", readme)
        self.assertTrue(readme.endswith("\n\nrest\n"))
        # The GPU path moves on: the index and README say plainly that it is unverified.
        with open(os.path.join(root, "engine", "cuda", "k.cu"), "w") as f:
            f.write("int k2;\n")
        rc, out = run_cli("index", "--check", "--root", root)
        self.assertEqual(rc, 1)
        self.assertEqual(run_cli("index", "--root", root)[0], 0)
        with open(os.path.join(root, "README.md")) as f:
            self.assertIn("The GPU path of this tree is unverified", f.read())
        with open(os.path.join(root, "bench", "results", "INDEX.md")) as f:
            self.assertIn("**Unverified.**", f.read())

    def test_a_series_folder_files_each_calls_report_and_log(self):
        root = self.tree()
        r = {"steps": [], "git_commit": "c" * 40, "written_utc": "2027-01-02T03:04:05Z", "call": 1, "passed": True,
             "complete": True, "device": "NVIDIA H200, 1.0, 1 MiB", "gpu_path": currency.tree_digest(root)}
        series = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, series)
        shutil.copytree(self.out_dir({"report.json": r}), os.path.join(series, "call1"))
        shutil.copytree(self.out_dir({"report-call4.json": dict(r, call=4, written_utc="2027-01-02T03:06:00Z")}),
                  os.path.join(series, "call4"))
        rc, out = run_cli("file", series, "--root", root)
        self.assertEqual(rc, 0, out)
        self.assertEqual(sorted(os.listdir(os.path.join(root, "bench", "results"))),
                         ["2027-01-02-0304-h200-ccccccc-call1.json", "2027-01-02-0304-h200-ccccccc-call1.log",
                          "2027-01-02-0306-h200-ccccccc-call4.json", "2027-01-02-0306-h200-ccccccc-call4.log", "INDEX.md"])

    def test_a_folder_without_reports_is_refused_in_one_line(self):
        root = self.tree()
        rc, out = run_cli("file", tempfile.gettempdir() + "/no-such-dir-" + str(os.getpid()), "--root", root)
        self.assertEqual(rc, 1)
        self.assertEqual(len(out.strip().splitlines()), 1)

    def test_names_sort_in_the_order_of_the_runs(self):
        r = {"written_utc": "2026-12-04T18:34:06Z", "device": "NVIDIA H200, 580, 1 MiB", "git_commit": "b46778a1a8", "call": 2}
        self.assertEqual(index.report_file_name(r), "2026-12-04-1834-h200-b46778a-call2.json")
        self.assertTrue(re.match(r"\d{4}-\d\d-\d\d-\d{4}-", index.report_file_name(r)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
