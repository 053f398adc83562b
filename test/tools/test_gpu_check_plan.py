#!/usr/bin/env python3
"""tools/gpu_check (the package tools/gpu-check runs) without a GPU: the order and limits of its steps, the reports it leaves after
every required step (a run stopped anywhere brings back what it had), the commit it finds in a tree
without .git, and the portable test list it runs prebuilt tests from. One short device call is all
a GPU run gets, so all of this is checked here, on made-up step results.

  test_gpu_check_plan.py SOURCE_ROOT   (meson's test env puts tools/ on PYTHONPATH; by hand:
  PYTHONPATH=tools python3 test/tools/test_gpu_check_plan.py .)
"""
import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpu_check import binaries, cli, machine, meson_tests, runner  # noqa: E402
from gpu_check import commit as gc_commit, plan as gc_plan, report as gc_report, steps as gc_steps  # noqa: E402

# What the report needs most comes first: the order.
ORDER = ["binaries", "gpu-suite", "gpu-validation", "two-process", "validate", "timing", "kernel-lab", "energy",
         "sanitizer"]


def plan():
    c = gc_steps.Context("OUT", "SCRATCH", 100, "python3")
    c.bindir, c.manifest = "BIN", "MANIFEST"
    return gc_plan.main_plan(c)


class Order(unittest.TestCase):
    def test_the_steps_come_in_the_order_of_what_the_report_needs(self):
        groups = ["binaries"] + [s.group for s in plan()]
        seen = [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g]
        self.assertEqual(seen, ORDER)  # each group once, in order: nothing evidence-worthy comes late
        names = [s.name for s in plan()]
        self.assertLess(names.index("gpu-validation-fused"), names.index("run-cuda-1"))
        self.assertLess(names.index("run-fused-2"), names.index("revgraph-validate"))
        self.assertLess(names.index("revgraph-validate"), names.index("torch-cuda-graph"))

    def test_the_kernel_lab_is_in_the_main_run(self):
        steps = {s.name: s for s in plan()}
        self.assertIn("kernel-lab", steps)
        self.assertGreaterEqual(steps["kernel-lab"].limit, 40)
        self.assertTrue(steps["kernel-lab"].cmd[0].endswith("bench/revgraph_kernel_lab"))
        c = gc_steps.Context("OUT", "SCRATCH", 100, "python3")
        c.bindir = "BIN"
        self.assertNotIn("kernel-lab", [s.name for s in gc_plan.follow_up_plan(c)])
        with contextlib.redirect_stdout(io.StringIO()) as shown:
            self.assertEqual(cli.main(["--plan"]), 0)
        self.assertIn("kernel-lab", shown.getvalue())
        total = int(shown.getvalue().split("total ")[1].rstrip("s\n"))
        self.assertLessEqual(total, gc_steps.CALL_SECONDS - gc_steps.RESERVE_SECONDS)

    def test_every_required_step_comes_before_what_is_only_recorded(self):
        steps = plan()
        last_required = max(i for i, s in enumerate(steps) if s.required)
        first_recorded = min(i for i, s in enumerate(steps) if not s.required)
        self.assertLess(last_required, first_recorded)
        self.assertEqual({s.name for s in steps if s.required},
                         {"gpu-suite", "gpu-validation", "gpu-validation-fused", "make-task", "run-cuda-1", "run-cuda-2",
                          "run-fused-1", "run-fused-2", "revgraph-validate"})

    def test_each_limit_fits_the_budget_in_order(self):
        budget = gc_steps.CALL_SECONDS - gc_steps.RESERVE_SECONDS
        elapsed = 20  # the prebuilt binaries' check
        for s in plan():
            elapsed += s.limit
            self.assertLessEqual(elapsed, budget, f"{s.name} would start past the budget")
        self.assertLessEqual(gc_steps.CALL_SECONDS, 540)

    def test_the_follow_up_holds_what_did_not_fit(self):
        c = gc_steps.Context("OUT", "SCRATCH", 100, "python3")
        c.bindir = "BIN"
        names = [s.name for s in gc_plan.follow_up_plan(c)]
        for wanted in ("energy-torch-cuda-graph", "bench-throughput", "ncu-cuda-fused", "ncu-cuda", "cpu-suites"):
            self.assertIn(wanted, names)
        self.assertFalse(any(s.required for s in gc_plan.follow_up_plan(c)))


class Binaries(unittest.TestCase):
    def test_the_fallback_build_gets_the_packed_pkg_config_files_and_tools(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, ".gpudeps", "lib", "pkgconfig"))
            os.makedirs(os.path.join(root, ".gpudeps", "bin"))
            env = binaries.gpudeps_env(root, {"PATH": "/usr/bin", "PKG_CONFIG_PATH": "/opt/pc"})
            pc = os.path.join(root, ".gpudeps", "lib", "pkgconfig")
            self.assertEqual(env["PKG_CONFIG_PATH"], pc + ":/opt/pc")  # the packed files first
            self.assertEqual(env["PATH"], "/usr/bin:" + os.path.join(root, ".gpudeps", "bin"))  # the machine's first
            self.assertEqual(binaries.gpudeps_env(os.path.join(root, "none"), {"PATH": "/usr/bin"}), {})
        c = gc_steps.Context("OUT", tempfile.mkdtemp(), 100, "python3")
        self.addCleanup(shutil.rmtree, c.scratch)
        build = os.path.join(c.scratch, "b")
        steps, arch = binaries.build_steps(c, {"GPU_CHECK_BUILD": build, "GPU_CHECK_ARCH": "90"}, "abc")
        configure, ninja = steps
        self.assertIn("-Dpython=disabled", configure.cmd)
        self.assertIn("-Dgpu_arch=90", configure.cmd)
        for s in steps:
            self.assertEqual(s.env["REVGRAPH_GIT_COMMIT"], "abc")
            if os.path.isdir(os.path.join(gc_steps.ROOT, ".gpudeps", "lib", "pkgconfig")):
                self.assertTrue(s.env["PKG_CONFIG_PATH"].startswith(os.path.join(gc_steps.ROOT, ".gpudeps")))

    def test_binaries_that_start_but_see_no_gpu_fail_the_check(self):
        def listing(**fused):
            return json.dumps({"backends": [{"requested": "cpu", "usable": True, "backend": "cpu"},
                                            {"requested": "cuda-fused", **fused}]})
        ok, why = binaries.backends_verdict(listing(usable=True, backend="cuda-fused", device="H200"))
        self.assertTrue(ok, why)
        ok, why = binaries.backends_verdict(listing(usable=False, reason="no NVIDIA driver"))
        self.assertFalse(ok)
        self.assertIn("no NVIDIA driver", why)
        self.assertFalse(binaries.backends_verdict(listing(usable=True, backend="cpu"))[0])  # not the name asked for
        self.assertFalse(binaries.backends_verdict(json.dumps({"backends": []}))[0])
        self.assertFalse(binaries.backends_verdict("revgraph: unknown command")[0])

    def test_check_backends_fails_where_revgraph_exits_0_without_a_gpu(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake = os.path.join(tmp, "revgraph")
            for usable, want in (("false", 1), ("true", 0)):
                with open(fake, "w") as f:  # exits 0 whatever it finds, like revgraph backends
                    f.write("#!/bin/sh\necho '{\"backends\": [{\"requested\": \"cuda-fused\", \"usable\": "
                            + usable + ", \"backend\": \"cuda-fused\"}]}'\n")
                os.chmod(fake, 0o755)
                with contextlib.redirect_stdout(io.StringIO()):
                    self.assertEqual(cli.main(["check-backends", "--revgraph", fake]), want, usable)

    def test_the_prebuilt_check_judges_the_json(self):
        c = gc_steps.Context("OUT", "SCRATCH", 100, "python3")
        c.bindir = "BIN"
        step = binaries.prebuilt_step(c)
        self.assertEqual(step.cmd, ["python3", "-m", "gpu_check", "check-backends", "--revgraph", "BIN/tools/revgraph"])
        self.assertTrue(step.required)

    def test_the_steps_that_call_the_package_find_it_without_the_callers_pythonpath(self):
        bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        c = gc_steps.Context("OUT", "SCRATCH", 100, sys.executable)
        c.bindir, c.manifest = "BIN", "MANIFEST"
        suite = next(s for s in gc_plan.main_plan(c) if s.name == "gpu-suite")
        for step in (binaries.prebuilt_step(c), suite):
            self.assertEqual(step.cmd[1:3], ["-m", "gpu_check"])
            p = subprocess.run([sys.executable, "-m", "gpu_check", "--plan"], env=dict(bare, **step.env), cwd="/",
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(p.stdout.startswith("budget "), p.stdout)

    def test_the_shell_entry_keeps_its_command_line(self):
        bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        entry = os.path.join(gc_steps.ROOT, "tools", "gpu-check")
        for args in (["--plan"], ["--plan", "--follow-up"]):
            p = subprocess.run([entry, *args], env=bare, cwd="/", capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with contextlib.redirect_stdout(io.StringIO()) as shown:
                cli.main(args)
            self.assertEqual(p.stdout, shown.getvalue())


class FakeRun:
    """cli.main() with made-up step results: Runner.run records each step, never starts it."""

    def __init__(self, stop_at=None, fail=()):
        self.stop_at, self.fail, self.ran, self.reports = stop_at, set(fail), [], []

    def __enter__(self):
        self.tmp = tempfile.mkdtemp()
        self.saved = (runner.Runner.run, binaries.use_prebuilt, machine.environment_log,
                      gc_report.write_report)
        fake = self

        def run(runner, step):
            if step.name == fake.stop_at:
                raise KeyboardInterrupt  # the device call's time limit: the process is killed here
            rc = 1 if step.name in fake.fail else 0
            fake.ran.append(step.name)
            runner.record(step.name, rc, 0.5)
            return rc

        def prebuilt(ctx, env):
            ctx.bindir, ctx.manifest = os.path.join(fake.tmp, "bin"), os.path.join(fake.tmp, "tests.json")
            return True, "prebuilt binaries (made up)"

        real_write = gc_report.write_report

        def write(**kw):
            r = real_write(**kw)
            with open(os.path.join(kw["out"], kw["name"])) as f:
                fake.reports.append(json.load(f))  # what a run stopped right now would bring back
            return r

        runner.Runner.run, binaries.use_prebuilt = run, prebuilt
        machine.environment_log = lambda runner, ctx: None
        gc_report.write_report = write
        return self

    def __exit__(self, *exc):
        (runner.Runner.run, binaries.use_prebuilt, machine.environment_log,
         gc_report.write_report) = self.saved
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def main(self, *args):
        out = os.path.join(self.tmp, "out")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                rc = cli.main([*args, out])
            except KeyboardInterrupt:
                rc = None
        return rc, out


class Reports(unittest.TestCase):
    def test_a_report_after_the_binaries_and_after_every_step(self):
        with FakeRun() as run:
            run.main()
            after = [r.get("written_after") for r in run.reports]
            self.assertEqual(after, ["binaries"] + [s.name for s in plan()] + [None])  # recorded steps too
            self.assertTrue(all(r["complete"] is False for r in run.reports[:-1]))
            self.assertIs(run.reports[-1]["complete"], True)
            commit, _ = gc_commit.detect_commit(gc_steps.ROOT, os.environ)
            self.assertTrue(all(r["git_commit"] == commit for r in run.reports))
            self.assertEqual(run.ran[0], "binaries")
            self.assertEqual([p["name"] for p in run.reports[-1]["plan"]], ["binaries"] + [s.name for s in plan()])

    def test_a_run_stopped_anywhere_leaves_the_report_of_its_last_step(self):
        for stop in ("gpu-validation", "run-fused-1", "torch-cuda-graph", "kernel-lab",
                     "sanitize-racecheck-cuda-fused"):
            with FakeRun(stop_at=stop) as run:
                rc, out = run.main()
                self.assertIsNone(rc)
                with open(os.path.join(out, "report.json")) as f:
                    left = json.load(f)
                names = [s.name for s in plan()]
                done = names[:names.index(stop)]
                self.assertEqual(left["written_after"], done[-1] if done else "binaries", stop)
                self.assertIs(left["complete"], False)
                self.assertFalse(left["passed"])
                self.assertTrue(os.path.exists(os.path.join(out, "artifacts.tar.gz")))
                self.assertEqual(sorted(os.listdir(out)), ["artifacts.tar.gz", "gpu-check.log", "report.json"])

    def test_a_failing_required_step_is_in_the_next_report(self):
        with FakeRun(fail=["gpu-validation"]) as run:
            rc, _ = run.main()
            self.assertEqual(rc, 1)
            r = next(r for r in run.reports if r.get("written_after") == "gpu-validation")
            self.assertIn("step gpu-validation: 1", r["failures"])


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

    def test_no_commit_anywhere_is_unknown(self):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        self.assertEqual(gc_commit.detect_commit(root, {})[0], "unknown")


class Tests(unittest.TestCase):
    def test_meson_tests_become_portable_and_run_from_a_copy(self):
        with tempfile.TemporaryDirectory() as tmp:
            b, s = os.path.join(tmp, "b"), os.path.join(tmp, "s")
            os.makedirs(b)
            os.makedirs(s)
            tests = [{"name": "ok", "suite": ["revgraph:gpu"],
                      "cmd": ["/usr/bin/python3", b + "/../s/t.py", b + "/tools/x", "plain"],
                      "env": {"REVGRAPH_SOURCE_ROOT": s}, "timeout": 30}]
            m = meson_tests.portable_manifest(tests, b, s)
        self.assertEqual(m[0]["cmd"], ["@PYTHON@", "@SOURCE@/t.py", "@BUILD@/tools/x", "plain"])
        self.assertEqual(m[0]["env"], {"REVGRAPH_SOURCE_ROOT": "@SOURCE@"})
        self.assertEqual(m[0]["suite"], ["gpu"])
        self.assertEqual(meson_tests.resolve("@BUILD@/tools/x", "/pre", "py"), "/pre/tools/x")

    def test_doctest_programs_get_the_duration_option_and_a_stopped_suite_names_its_test(self):
        self.assertTrue(meson_tests.is_doctest({"cmd": ["@BUILD@/test/cuda/test_cuda_gpu"]}))
        self.assertFalse(meson_tests.is_doctest({"cmd": ["@PYTHON@", "@SOURCE@/test/tools/t.py"]}))
        c = gc_steps.Context("OUT", "SCRATCH", 100, "python3")
        c.bindir, c.manifest = "BIN", "MANIFEST"
        suite = next(s for s in gc_plan.main_plan(c) if s.name == "gpu-suite")
        self.assertIn("--doctest-arg=--duration=true", suite.cmd)
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "test"))
            prog = os.path.join(tmp, "test", "test_x")
            with open(prog, "w") as f:  # prints its arguments, then hangs like a slow GPU case
                f.write("#!/bin/sh\necho \"args: $*\"\nexec sleep 30\n")
            os.chmod(prog, 0o755)
            with open(os.path.join(tmp, "m.json"), "w") as f:
                json.dump([{"name": "slow", "suite": ["gpu"], "cmd": ["@BUILD@/test/test_x"], "env": {},
                            "timeout": 60}], f)
            log = os.path.join(tmp, "log.json")
            p = subprocess.Popen([sys.executable, "-m", "gpu_check", "run-tests",
                                  "--manifest", os.path.join(tmp, "m.json"), "--bin", tmp, "--python", sys.executable,
                                  "--testlog", log, "--suite", "gpu", "--doctest-arg=--duration=true"],
                                 stdout=subprocess.PIPE, text=True, start_new_session=True)
            self.assertEqual(p.stdout.readline().strip(), "args: --duration=true")
            os.killpg(p.pid, signal.SIGTERM)  # what Runner does at the step's limit
            p.communicate(timeout=20)
            with open(log) as f:
                self.assertEqual([json.loads(x)["result"] for x in f], ["STOPPED"])

    def test_run_tests_writes_mesons_test_log(self):
        with tempfile.TemporaryDirectory() as tmp:
            manifest = [{"name": n, "suite": [suite], "cmd": ["@PYTHON@", "-c", f"import sys; sys.exit({rc})"],
                         "env": {}, "timeout": 30}
                        for n, suite, rc in (("good", "gpu", 0), ("skipped", "gpu", 77), ("bad", "gpu", 1),
                                             ("cpu", "cpu", 0))]
            with open(os.path.join(tmp, "m.json"), "w") as f:
                json.dump(manifest, f)
            log = os.path.join(tmp, "log.json")
            argv = ["run-tests", "--manifest", os.path.join(tmp, "m.json"), "--bin", tmp, "--python", sys.executable,
                    "--testlog", log, "--suite", "gpu"]
            with contextlib.redirect_stdout(io.StringIO()):
                rc = cli.main(argv)
            self.assertEqual(rc, 1)
            with open(log) as f:
                results = [json.loads(line) for line in f]
            self.assertEqual([(r["name"], r["result"]) for r in results], [("good", "OK"), ("skipped", "SKIP"),
                                                                           ("bad", "FAIL")])


if __name__ == "__main__":
    unittest.main(verbosity=2)
