#!/usr/bin/env python3
"""tools/gpu_check (the package tools/gpu-check runs) without a GPU: the order and limits of its steps, the reports it leaves after
every required step (a run stopped anywhere brings back what it had), and the portable test list it
runs prebuilt tests from (what a report speaks for: test_gpu_check_currency.py). One short device call is all
a GPU run gets, so all of this is checked here, on made-up step results.

  test_gpu_check_plan.py SOURCE_ROOT   (meson's test env puts tools/ on PYTHONPATH; by hand:
  PYTHONPATH=tools python3 test/tools/test_gpu_check_plan.py .)
"""
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import unittest
from unittest import mock

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpu_check import binaries, cli, machine, meson_tests, runner  # noqa: E402
from gpu_check import currency, plan as gc_plan, report as gc_report, steps as gc_steps  # noqa: E402

# Call 1's decisive steps, in the issue's order: the binaries start (else the fallback build), the
# GPU test suite, GPU validation of both backends, rev88 twice in fresh processes per backend, the
# PyTorch learner in a CUDA graph on the same draw, NVML energy of cuda-fused.
DECISIVE = ["binaries", "gpu-suite", "make-task", "gpu-validation", "gpu-validation-fused", "run-cuda-1", "run-cuda-2",
            "run-fused-1", "run-fused-2", "torch-cuda-graph", "energy-cuda-fused"]


def context():
    c = gc_steps.Context("OUT", "SCRATCH", 100, "python3")
    c.bindir, c.manifest = "BIN", "MANIFEST"
    return c


def plan(call=1):
    return gc_plan.call_plan(context(), call)


def names(steps):
    return [s.name for s in steps]


def torch_starts(steps):
    return [s.name for s in steps if any(x.endswith(("torch_gpu.py", "torch_reference.py")) for x in s.cmd)]


class Order(unittest.TestCase):
    def test_call_1_brings_the_decisive_evidence_in_the_issues_order(self):
        got = [n for n in ["binaries"] + names(plan(1)) if n in DECISIVE]
        self.assertEqual(got, DECISIVE)
        groups = ["binaries"] + [s.group for s in plan(1)]
        seen = [g for i, g in enumerate(groups) if i == 0 or groups[i - 1] != g]
        self.assertEqual(len(seen), len(set(seen)), seen)  # each group once: nothing of it comes late

    def test_every_required_step_comes_before_what_is_only_recorded(self):
        steps = plan(1)
        last_required = max(i for i, s in enumerate(steps) if s.required)
        first_recorded = min(i for i, s in enumerate(steps) if not s.required)
        self.assertLess(last_required, first_recorded)
        self.assertEqual({s.name for s in steps if s.required},
                         {"gpu-suite", "make-task", "gpu-validation", "gpu-validation-fused", "run-cuda-1",
                          "run-cuda-2", "run-fused-1", "run-fused-2"})

    def test_call_2_gathers_the_rest_and_call_3_what_fits_neither(self):
        two = names(plan(2))
        for wanted in ("kernel-lab", "sanitize-memcheck-cuda-fused", "sanitize-racecheck-cuda-fused",
                       "sanitize-memcheck-cuda", "bench-throughput", "ncu-cuda-fused", "ncu-cuda",
                       "gpu-validation-fused-pdl", "run-fused-pdl", "energy-torch-cuda-graph"):
            self.assertIn(wanted, two)
        self.assertLess(two.index("kernel-lab"), two.index("sanitize-memcheck-cuda-fused"))  # the issue's order
        self.assertLess(two.index("sanitize-memcheck-cuda"), two.index("bench-throughput"))
        self.assertLess(two.index("bench-throughput"), two.index("ncu-cuda-fused"))
        self.assertLess(two.index("ncu-cuda"), two.index("gpu-validation-fused-pdl"))
        self.assertLess(two.index("run-fused-pdl"), two.index("energy-torch-cuda-graph"))
        self.assertFalse(any(s.required for s in plan(2) + plan(3)))
        self.assertFalse(set(DECISIVE[1:]) - {"make-task"} & set(two + names(plan(3))))

    def test_call_8_times_the_cluster_launch_beside_the_two_kernel_step_in_one_call(self):
        eight = {s.name: s for s in plan(8)}
        order = names(plan(8))
        self.assertLess(order.index("gpu-validation-fused-pdl"), order.index("gpu-validation-fused-cluster"))
        self.assertLess(order.index("run-fused-pdl"), order.index("run-fused-cluster"))
        self.assertLess(order.index("energy-cuda-fused-protocol"), order.index("energy-cuda-fused-cluster-protocol"))
        for name in ("gpu-validation-fused-cluster", "run-fused-cluster"):
            cmd = eight[name].cmd
            self.assertEqual(cmd[cmd.index("--cluster-blocks") + 1], "16", name)
            self.assertIn("SCRATCH/rev88.npz", cmd, name)  # the draw every contender reads
        self.assertIn("--cluster-blocks=16", eight["energy-cuda-fused-cluster-protocol"].cmd)
        # K tasks at once with clusters: K clusters of one launch (run_together's launch groups).
        tp = eight["bench-throughput-cluster"].cmd
        self.assertIn("--cluster-blocks=16", tp)
        self.assertIn("--benchmark_filter=^throughput/cuda-fused/tasks:(1|4|16)(/|$)", tp)
        self.assertIn("SCRATCH/rev88.npz", " ".join(tp))
        self.assertNotIn("--cluster-blocks", " ".join(eight["gpu-validation-fused-pdl"].cmd))
        self.assertFalse(any(s.required for s in plan(8)))

    def test_no_cpu_suites_on_the_device_and_pytorch_started_once_a_call(self):
        for call in gc_steps.CALLS:
            for s in plan(call):
                if "run-tests" in s.cmd:
                    # CI runs the rest; call 4's export-gpu test is of the GPU suite too (test/export/meson.build),
                    # and a test must be in every suite named (run-tests): never CI's export test
                    suites = [s.cmd[i + 1] for i, x in enumerate(s.cmd) if x == "--suite"]
                    self.assertEqual(suites, ["export", "gpu"] if s.name == "export-gpu" else ["gpu"], s.name)
                self.assertNotIn("cpu", [s.cmd[i + 1] for i, x in enumerate(s.cmd) if x == "--backend"], s.name)
            starts = torch_starts(plan(call))
            if call in gc_plan.SHAPE_CALLS:  # the frontier's shapes: the learner once an entry, at that entry's config
                self.assertTrue(all(re.fullmatch(r"shape-[a-z]+-\d+-torch", n) for n in starts), starts)
            else:
                self.assertLessEqual(len(starts), 1, call)
        throughput = next(s for s in plan(2) if s.name == "bench-throughput")
        self.assertIn("--input=SCRATCH/rev88.npz", throughput.cmd)

    def test_the_timed_contenders_read_one_archive_and_time_warm_and_cold(self):
        steps = {s.name: s for s in plan(1)}
        for name in ("gpu-validation", "gpu-validation-fused", "run-cuda-1", "run-fused-2", "torch-cuda-graph"):
            self.assertEqual(steps[name].cmd[steps[name].cmd.index("--input") + 1], "SCRATCH/rev88.npz", name)
        for name in ("gpu-validation", "gpu-validation-fused"):
            self.assertGreater(int(steps[name].cmd[steps[name].cmd.index("--cold-replays") + 1]), 0)
        self.assertGreater(int(steps["torch-cuda-graph"].cmd[steps["torch-cuda-graph"].cmd.index("--cold-runs") + 1]), 0)
        energy = steps["energy-cuda-fused"].cmd
        for option in ("--settle-seconds=", "--idle-seconds=", "--energy-seconds=", "--idle-after-seconds="):
            self.assertTrue(any(x.startswith(option) for x in energy), option)


def shape_plan():
    """{name: (call, position, step)} over calls 5-7 (the frontier's shapes)."""
    out = {}
    for call in gc_plan.SHAPE_CALLS:
        for i, st in enumerate(plan(call)):
            out.setdefault(st.name, (call, i, st))
    return out


def bands(rel, qualified_only):
    with open(os.path.join(ROOT, *rel)) as f:
        return [(b["band"], b["config"]) for b in json.load(f)["bands"] if b.get("qualified") is True or not qualified_only]


class Shapes(unittest.TestCase):
    """Calls 5-7 (issue 47 item 4): each frontier entry's shape, and each race band's, on the GPU."""

    def sets(self, cmd, option="--set"):
        if option == "--set":
            return dict(cmd[i + 1].split("=", 1) for i, x in enumerate(cmd) if x == "--set")
        return dict(x[len(option) + 1:].split("=", 1) for x in cmd if x.startswith(option + "="))

    def assert_config(self, got, config, what):
        self.assertEqual(set(got), set(config), what)
        for k, v in config.items():
            self.assertEqual(float(got[k]), float(v), f"{what}: {k}")
            self.assertEqual("." in got[k], isinstance(v, float), f"{what}: {k}={got[k]} (an int key gets an int)")

    def test_every_frontier_qualified_entry_and_race_band_has_its_steps_carrying_its_config(self):
        steps = shape_plan()
        frontier = bands(("bench", "frontier", "frontier.json"), True)
        self.assertEqual({b for b, _ in frontier}, {"12", "8", "5"})  # the brief's three; the 3 % band is not qualified
        sys.path.insert(0, os.path.join(ROOT, "bench", "compare"))
        import torch_gpu
        try:
            import numpy  # noqa: F401  (torchref's config reader needs it)
        except ImportError:
            numpy = None
        for prefix, entries, energy in (("frontier", frontier, True), ("race", bands(("bench", "race.json"), False), True)):
            for band, config in entries:
                eid = f"shape-{prefix}-{band}"
                for short, backend in (("cuda", "cuda"), ("fused", "cuda-fused")):
                    cmd = steps[f"{eid}-{short}"][2].cmd
                    self.assertEqual(cmd[0], "BIN/test/cuda/gpu_validation")
                    self.assertEqual(cmd[cmd.index("--backend") + 1], backend)
                    self.assertEqual(cmd[cmd.index("--input") + 1], "SCRATCH/rev88.npz")  # make_task_step's draw
                    self.assertGreater(int(cmd[cmd.index("--replays") + 1]), 1)  # warm, back to back
                    self.assertGreater(int(cmd[cmd.index("--cold-replays") + 1]), 0)  # each after an L2 flush
                    self.assert_config(self.sets(cmd), config, f"{eid}-{short}")
                torch = steps[f"{eid}-torch"][2].cmd
                self.assertTrue(torch[1].endswith("torch_gpu.py"))
                self.assertEqual(torch[torch.index("--input") + 1], "SCRATCH/rev88.npz")
                self.assertEqual(torch[torch.index("--mode") + 1], "graph")
                self.assertGreater(int(torch[torch.index("--cold-runs") + 1]), 0)
                self.assert_config(self.sets(torch), config, f"{eid}-torch")
                # torch_gpu.py's own reader takes the command's --set and gives the learner the entry's config
                if numpy is not None:
                    self.assertEqual(torch_gpu.parse(torch[2:]).cfg, dict(config))
                self.assertEqual(steps[f"{eid}-cuda"][0], steps[f"{eid}-torch"][0], "an entry's timing in one call")
                if energy:
                    e = steps[f"{eid}-energy"][2].cmd
                    self.assertIn("--energy-backend=cuda-fused", e)
                    self.assertIn("--input=SCRATCH/rev88.npz", e)
                    self.assert_config(self.sets(e, "--energy-set"), config, f"{eid}-energy")

    def test_in_the_order_of_value_the_frontier_timing_then_its_energy_then_sanitizers_then_the_race(self):
        steps = shape_plan()
        order = sorted(steps, key=lambda n: steps[n][:2])
        kinds = []
        for n in order:
            kind = ("task" if n == "make-task" else "sanitizer" if n.startswith("sanitize-") else
                    n.split("-")[1] + ("-energy" if n.endswith("-energy") else "-timing"))
            if kind != "task" and (not kinds or kinds[-1] != kind):
                kinds.append(kind)
        self.assertEqual(kinds, ["frontier-timing", "frontier-energy", "sanitizer", "race-timing", "race-energy"])
        first = order.index("shape-frontier-12-cuda")
        self.assertEqual(steps[order[first]][0], 5)
        for call in gc_plan.SHAPE_CALLS:
            self.assertEqual(names(plan(call))[0], "make-task", call)  # the draw first, in every call
            self.assertFalse(any(s.required for s in plan(call)), call)

    def test_sanitizers_check_both_backends_on_the_full_draw_at_a_frontier_shape_wider_than_82(self):
        steps = shape_plan()
        san = {n: v[2] for n, v in steps.items() if n.startswith("sanitize-")}
        self.assertEqual({n.rsplit("-", 1)[0] for n in san},
                         {f"sanitize-{t}-{b}" for t in ("memcheck", "racecheck") for b in ("cuda", "cuda-fused")})
        for name, st in san.items():
            self.assertEqual(st.cmd[:2], ["compute-sanitizer", "--tool"])
            self.assertIn(st.cmd[st.cmd.index("--log-file") + 1], (f"OUT/{name}.log", f"SCRATCH/artifacts/{name}.log"))
            self.assertEqual(st.cmd[st.cmd.index("--input") + 1], "SCRATCH/rev88.npz")  # 10,000 / 10,000, not small.npz
            got = self.sets(st.cmd)
            self.assertNotEqual(got["width"], "82", name)
            entry = [c for _, c in bands(("bench", "frontier", "frontier.json"), True) if str(c["width"]) == got["width"]]
            self.assertTrue(entry, name)
            self.assert_config(got, dict(entry[0], epochs=gc_plan.SANITIZE_EPOCHS), name)
        verdicts = gc_report.sanitizer_verdicts({n: {"exit": "not-found"} for n in san}, "nowhere")
        self.assertEqual({v["verdict"] for v in verdicts.values()}, {"not run"})  # no compute-sanitizer: recorded


class Budget(unittest.TestCase):
    def test_each_call_fits_its_budget_with_a_tenth_to_spare(self):
        self.assertLessEqual(gc_steps.CALL_SECONDS, 300)
        self.assertLessEqual(gc_steps.STEP_BUDGET, 0.9 * gc_steps.CALL_SECONDS)
        for call in gc_steps.CALLS:
            elapsed = gc_plan.BINARIES_SECONDS
            for s in plan(call):
                elapsed += s.limit
                self.assertLessEqual(elapsed, gc_steps.STEP_BUDGET, f"call {call}: {s.name} would start past it")
            self.assertEqual(gc_plan.fit(plan(call), gc_steps.STEP_BUDGET)[1], [], call)

    def test_plan_shows_every_call_with_its_limits_and_totals(self):
        with contextlib.redirect_stdout(io.StringIO()) as shown:
            self.assertEqual(cli.main(["--plan"]), 0)
        text = shown.getvalue()
        for call in gc_steps.CALLS:
            self.assertIn(f"call {call}: ", text)
        totals = [line.split() for line in text.splitlines() if line.strip().startswith("total ")]
        self.assertEqual(len(totals), len(gc_steps.CALLS))
        for t in totals:
            self.assertLessEqual(int(t[1].rstrip("s")), int(t[3].rstrip("s")))
        self.assertIn("each call: 300 s at most", text)
        self.assertNotIn("left out", text)

    def test_the_wrapper_reads_the_callers_paths_and_refuses_what_is_no_call_1_report(self):
        # tools/gpu-check once cd'd to the tree first: a relative --after (or OUT) named a file there,
        # not the caller's. A list, or another tool's report, once planned a rerun or failed deep
        # inside; a budget that is no number was a traceback.
        tmp = tempfile.mkdtemp(prefix="gpu-check-cwd-")
        try:
            report = {"call": 1, "git_commit": "0" * 40, "steps": {}, "plan": [], "passed": False}
            for name, content in (("c1.json", report), ("list.json", [1]), ("qualify.json", {"passed": True})):
                with open(os.path.join(tmp, name), "w") as f:
                    json.dump(content, f)
            wrapper = os.path.join(os.path.abspath(ROOT), "tools", "gpu-check")

            def run(*args, env=None):
                return subprocess.run([wrapper, *args], cwd=tmp, capture_output=True, text=True, timeout=120,
                                      env=dict(os.environ, **(env or {})))
            p = run("--after", "c1.json", "--plan")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("call 2: ", p.stdout)
            for name in ("list.json", "qualify.json"):
                p = run("--after", name, "--plan")
                self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                self.assertIn(f"--after {name}: not a gpu-check report of call 1", p.stderr)
                self.assertNotIn("Traceback", p.stderr)
            for budget in ("abc", "-100", "0"):
                p = run("--plan", env={"GPU_CHECK_BUDGET": budget})
                self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                self.assertIn(f"GPU_CHECK_BUDGET={budget}: a whole number of seconds above 0", p.stderr)
        finally:
            shutil.rmtree(tmp)

    def test_a_lower_budget_names_what_it_leaves_out_and_keeps_the_decisive_steps_first(self):
        kept, left = gc_plan.fit(plan(1), 200)
        self.assertEqual(names(kept)[:8], DECISIVE[1:9])  # the suite, the draw, validations, the four runs
        self.assertTrue(left)
        self.assertLessEqual(gc_plan.BINARIES_SECONDS + sum(s.limit for s in kept), 200)
        with contextlib.redirect_stdout(io.StringIO()) as shown:
            os.environ["GPU_CHECK_BUDGET"] = "200"
            try:
                cli.main(["--plan", "--call", "1"])
            finally:
                del os.environ["GPU_CHECK_BUDGET"]
        for s in left:
            self.assertIn(f"left out (no room in this call): {s.name}", shown.getvalue())


    def test_at_any_budget_nothing_is_kept_that_only_serves_steps_left_out(self):
        for call in gc_steps.CALLS:
            for budget in range(40, gc_steps.STEP_BUDGET + 1, 5):
                kept, left = gc_plan.fit(plan(call), budget)
                kept_names = names(kept)
                self.assertLessEqual(gc_plan.BINARIES_SECONDS + sum(s.limit for s in kept), budget)
                self.assertEqual(sorted(kept_names + names(left)), sorted(names(plan(call))))
                for s in kept:
                    if s.name == "make-small-task":
                        self.assertTrue(any(n.startswith("sanitize-") for n in kept_names), (call, budget))
                    if s.name == "run-fused-plain":
                        self.assertIn("run-fused-pdl", kept_names, (call, budget))
                    if s.name == "make-task" and call > 1:
                        self.assertTrue(any("SCRATCH/rev88.npz" in " ".join(x.cmd) for x in kept if x is not s))


class Rerun(unittest.TestCase):
    def report(self, commit, failed=(), skipped=()):
        rows = [{"name": n} for n in ["binaries"] + names(plan(1))]
        steps = {r["name"]: {"exit": 1 if r["name"] in failed else 0} for r in rows if r["name"] not in skipped}
        return {"git_commit": commit, "plan": rows, "steps": steps}

    def test_the_same_tree_reruns_what_did_not_pass_with_its_draw_then_call_2(self):
        kept, left, why = gc_plan.rerun_plan(context(), self.report("abc", failed=["gpu-validation-fused"],
                                                                    skipped=["energy-cuda-fused"]), "abc")
        self.assertEqual(names(kept)[:3], ["make-task", "gpu-validation-fused", "energy-cuda-fused"])
        self.assertIn("gpu-validation-fused, energy-cuda-fused", why)
        self.assertIn("kernel-lab", names(kept))
        self.assertEqual(len(names(kept)), len(set(names(kept))))
        self.assertLessEqual(gc_plan.BINARIES_SECONDS + sum(s.limit for s in kept), gc_steps.STEP_BUDGET)
        self.assertTrue(left)  # call 2's own steps that lost their room to the reruns are named
        self.assertTrue(next(s for s in kept if s.name == "gpu-validation-fused").required)

    def test_what_call_1s_budget_left_out_is_rerun_too(self):
        cut = gc_plan.fit(plan(1), 150)  # a call 1 whose budget left required steps out of its plan
        self.assertTrue([s for s in cut[1] if s.required])
        rows = [{"name": n} for n in ["binaries"] + names(cut[0])]
        report = {"git_commit": "abc", "plan": rows, "steps": {r["name"]: {"exit": 0} for r in rows},
                  "left_out_of_this_call": names(cut[1])}
        kept, _, why = gc_plan.rerun_plan(context(), report, "abc")
        for s in cut[1]:
            self.assertIn(s.name, names(kept), why)
        self.assertIn("rerun of call 1's", why)

    def test_a_changed_tree_runs_call_1_again_and_a_passed_call_1_leads_to_call_2(self):
        kept, left, why = gc_plan.rerun_plan(context(), self.report("abc", failed=["gpu-suite"]), "def")
        self.assertEqual(names(kept), names(plan(1)))
        self.assertIn("call 1 again", why)
        self.assertEqual(names(gc_plan.rerun_plan(context(), self.report("unknown"), "unknown")[0]), names(plan(1)))
        kept, left, why = gc_plan.rerun_plan(context(), self.report("abc"), "abc")
        self.assertEqual(names(kept), names(plan(2)))
        self.assertEqual(left, [])


class Binaries(unittest.TestCase):
    def test_our_binaries_get_the_library_path_and_other_steps_only_name_it(self):
        # Ours (revgraph, the tests) run with the packed or toolkit libraries on LD_LIBRARY_PATH; a
        # step that is not (tools/race under torch) gets REVGRAPH_LD_PATH, for the revgraph it asks.
        c = gc_steps.Context("OUT", tempfile.mkdtemp(), 100, sys.executable)
        self.addCleanup(shutil.rmtree, c.scratch)
        c.ld_path = "/packed/lib"
        r = runner.Runner(c, 60, os.path.join(c.scratch, "log"))
        self.addCleanup(r.log_file.close)
        show = "import os; print(os.environ.get('LD_LIBRARY_PATH', ''), os.environ.get('REVGRAPH_LD_PATH', ''))"
        with mock.patch.dict(os.environ, {"LD_LIBRARY_PATH": "/usr/x"}), contextlib.redirect_stderr(io.StringIO()):
            os.environ.pop("REVGRAPH_LD_PATH", None)
            for ours in (True, False):
                r.run(gc_steps.Step(f"env-{ours}", 20, "g", [sys.executable, "-c", show], ours=ours))
        with open(os.path.join(c.scratch, "log")) as f:
            printed = [line.split(" ") for line in f.read().splitlines() if line.startswith("/")]
        self.assertEqual(printed, [["/packed/lib:/usr/x", ""], ["/usr/x", "/packed/lib"]])

    def test_the_plan_says_what_the_pack_left_for_the_machine(self):
        # Read before a run spends device time: nothing packed, binaries of another tree, race data missing.
        with tempfile.TemporaryDirectory() as root:
            self.assertTrue(binaries.packed_state(root)[0].startswith("no .gpudeps: run tools/pack-gpu-deps"))
            deps = os.path.join(root, ".gpudeps")
            os.makedirs(os.path.join(deps, "prebuilt", "tools"))
            open(os.path.join(deps, "prebuilt", "tools", "revgraph"), "w").close()
            with open(os.path.join(root, "a.txt"), "w") as f:
                f.write("packed\n")
            with open(os.path.join(deps, "sources.sha256"), "w") as f:  # as `sha256sum` lists a.txt
                f.write("%s  a.txt\n" % hashlib.sha256(b"packed\n").hexdigest())
            state = binaries.packed_state(root)
            self.assertEqual(state[0], "prebuilt binaries: this tree's")
            self.assertIn("train-images-idx3-ubyte.gz", state[1])
            self.assertIn("call 4's race steps will fail", state[1])
            with open(os.path.join(root, "a.txt"), "w") as f:
                f.write("edited since\n")
            self.assertEqual(binaries.packed_state(root)[0], "prebuilt binaries: of another tree (a.txt differs from "
                                                             "the packed commit): run tools/pack-gpu-deps again, or "
                                                             "the machine builds")
            os.makedirs(os.path.join(deps, "race-data"))
            for name in binaries.RACE_FILES:
                open(os.path.join(deps, "race-data", name), "w").close()
            self.assertEqual(binaries.packed_state(root)[1], "race data: all four files")
            shutil.rmtree(os.path.join(deps, "prebuilt"))
            self.assertTrue(binaries.packed_state(root)[0].startswith("prebuilt binaries: none"))

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
        # A folder configured for this commit and architecture (a warm machine's next call) is kept.
        os.makedirs(build)
        for f, text in (("build.ninja", ""), (".gpu-check-stamp", "abc sm_90\n")):
            with open(os.path.join(build, f), "w") as out:
                out.write(text)
        again, _ = binaries.build_steps(c, {"GPU_CHECK_BUILD": build, "GPU_CHECK_ARCH": "90"}, "abc")
        self.assertEqual([s.name for s in again], ["build"])
        self.assertTrue(os.path.exists(os.path.join(build, "build.ninja")))
        other, _ = binaries.build_steps(c, {"GPU_CHECK_BUILD": build, "GPU_CHECK_ARCH": "90"}, "def")
        self.assertEqual([s.name for s in other], ["configure", "build"])

    def test_the_fallback_build_unpacks_the_build_deps_packed_beside_prebuilt_binaries(self):
        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as src:
            deps = os.path.join(root, ".gpudeps")
            self.assertIn("none packed", binaries.unpack_build_deps(root))
            os.makedirs(deps)
            for rel, text in (("lib/pkgconfig/libzip.pc", "Name: libzip\n"), ("lib/libzip.so.4", "elf"),
                              ("bin/pkg-config", "#!/bin/sh\n"), ("include/zip.h", "int zip;\n")):
                os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
                with open(os.path.join(src, rel), "w") as f:
                    f.write(text)
            os.symlink("libzip.so.4", os.path.join(src, "lib", "libzip.so"))
            with tarfile.open(os.path.join(deps, "build-deps.tar.xz"), "w:xz") as t:
                for top in ("include", "lib", "bin"):
                    t.add(os.path.join(src, top), arcname=top)
            self.assertIn("unpacked", binaries.unpack_build_deps(root))
            self.assertEqual(os.readlink(os.path.join(deps, "lib", "libzip.so")), "libzip.so.4")
            with open(os.path.join(deps, "include", "zip.h")) as f:
                self.assertEqual(f.read(), "int zip;\n")
            env = binaries.gpudeps_env(root, {"PATH": "/usr/bin"})
            self.assertEqual(env["PKG_CONFIG_PATH"], os.path.join(deps, "lib", "pkgconfig"))
            self.assertIn("unpacked", binaries.unpack_build_deps(root))  # once is enough: not again
            os.remove(os.path.join(deps, ".build-deps-unpacked"))  # an unpack stopped half-way...
            os.remove(os.path.join(deps, "bin", "pkg-config"))
            self.assertIn("unpacked", binaries.unpack_build_deps(root))  # ...is done again, whole
            self.assertTrue(os.path.exists(os.path.join(deps, "bin", "pkg-config")))
        if hasattr(tarfile, "data_filter"):  # a member that would land outside .gpudeps is refused
            with tempfile.TemporaryDirectory() as root:
                deps = os.path.join(root, ".gpudeps", "x")
                os.makedirs(deps)
                deps = os.path.dirname(deps)
                with tarfile.open(os.path.join(deps, "build-deps.tar.xz"), "w:xz") as t:
                    info = tarfile.TarInfo("../outside")
                    t.addfile(info, io.BytesIO(b""))
                self.assertIn("not unpacked", binaries.unpack_build_deps(root))
                self.assertFalse(os.path.exists(os.path.join(root, "outside")))

    def test_prebuilt_binaries_packed_compressed_are_unpacked_on_first_use_for_their_own_tree(self):
        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as src:
            ctx = context()
            same = [True]
            with mock.patch.object(binaries, "ROOT", root), \
                    mock.patch.object(binaries, "tracked_files_match", lambda r: (same[0], "" if same[0] else "3 differ")):
                self.assertEqual(binaries.use_prebuilt(ctx, {}), (False, "no prebuilt binaries (tools/pack-gpu-deps makes them)"))
                os.makedirs(os.path.join(src, "prebuilt", "tools"))
                with open(os.path.join(src, "prebuilt", "tools", "revgraph"), "w") as f:
                    f.write("#!/bin/sh\n")
                os.chmod(os.path.join(src, "prebuilt", "tools", "revgraph"), 0o755)
                os.makedirs(os.path.join(root, ".gpudeps"))
                with tarfile.open(os.path.join(root, ".gpudeps", "prebuilt.tar.xz"), "w:xz") as t:
                    t.add(os.path.join(src, "prebuilt"), arcname="prebuilt")
                same[0] = False  # a tree changed since the pack: not unpacked, not used
                self.assertEqual(binaries.use_prebuilt(ctx, {}), (False, "prebuilt binaries are of another tree: 3 differ"))
                self.assertFalse(os.path.exists(os.path.join(root, ".gpudeps", "prebuilt")))
                same[0] = True
                self.assertEqual(binaries.use_prebuilt(ctx, {"GPU_CHECK_PREBUILT": "0"}), (False, "GPU_CHECK_PREBUILT=0"))
                for _ in range(2):  # unpacked once; the next call finds it so
                    ok, why = binaries.use_prebuilt(ctx, {})
                    pre = os.path.join(root, ".gpudeps", "prebuilt")
                    self.assertEqual((ok, ctx.bindir), (True, pre), why)
                    self.assertIn("unpacked from .gpudeps/prebuilt.tar.xz", why)
                    self.assertTrue(os.access(os.path.join(pre, "tools", "revgraph"), os.X_OK))
                    self.assertEqual(ctx.manifest, os.path.join(pre, "tests.json"))

    def test_the_fallback_build_makes_what_the_calls_run_and_nothing_else(self):
        c = context()
        steps, _ = binaries.build_steps(c, {"GPU_CHECK_BUILD": "BUILD", "GPU_CHECK_ARCH": "90"}, "abc")
        ninja = steps[-1].cmd
        self.assertEqual(ninja[ninja.index("-j") + 2:], list(binaries.BUILD_TARGETS))
        used = set()
        for call in gc_steps.CALLS:
            for s in gc_plan.call_plan(context(), call):
                used |= {x[len("BIN/"):] for x in s.cmd if x.startswith("BIN/")}
        # The GPU suite's programs: every test(...) of meson's suite 'gpu' under test/, with its executable.
        suite = set()
        for d, _, files in os.walk(os.path.join(ROOT, "test")):
            if "meson.build" in files:
                with open(os.path.join(d, "meson.build")) as f:
                    for chunk in f.read().split("test('")[1:]:
                        if re.search(r"suite:\s*\[[^]]*'gpu'", chunk):
                            exe = re.search(r"executable\('([^']+)'", chunk)
                            if exe is None:  # a script's test: what it runs is the revgraph command
                                self.assertIn("depends: revgraph_exe", chunk, chunk[:80])
                                suite.add("tools/revgraph")
                            else:
                                suite.add(os.path.relpath(os.path.join(d, exe.group(1)), ROOT))
        self.assertEqual(suite, {"test/cuda/test_cuda_gpu", "test/cuda/test_cuda_ops_gpu", "test/graphs/test_graphs_gpu",
                                 "tools/revgraph"})
        self.assertEqual(used | suite, set(binaries.BUILD_TARGETS))

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
        suite = next(s for s in gc_plan.call_plan(c, 1) if s.name == "gpu-suite")
        for step in (binaries.prebuilt_step(c), suite):
            self.assertEqual(step.cmd[1:3], ["-m", "gpu_check"])
            p = subprocess.run([sys.executable, "-m", "gpu_check", "--plan"], env=dict(bare, **step.env), cwd="/",
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(p.stdout.startswith("each call: 300 s at most"), p.stdout)

    def test_the_shell_entry_keeps_its_command_line(self):
        bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        entry = os.path.join(gc_steps.ROOT, "tools", "gpu-check")
        for args in (["--plan"], ["--plan", "--call", "2"]):
            p = subprocess.run([entry, *args], env=bare, cwd="/", capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with contextlib.redirect_stdout(io.StringIO()) as shown:
                cli.main(args)
            self.assertEqual(p.stdout, shown.getvalue())


FAKE_COMMIT = "c0ffee" * 6 + "abcd"


class FakeRun:
    """cli.main() with made-up step results: Runner.run records each step, never starts it."""

    def __init__(self, stop_at=None, fail=()):
        self.stop_at, self.fail, self.ran, self.reports = stop_at, set(fail), [], []

    def __enter__(self):
        self.tmp = tempfile.mkdtemp()
        self.saved = (runner.Runner.run, binaries.use_prebuilt, machine.environment_log,
                      gc_report.write_report, cli.detect_commit)
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
        # A fixed commit, so that what is checked does not hang on whether this checkout has changes.
        cli.detect_commit = lambda root, env: (FAKE_COMMIT, "made up")
        gc_report.write_report = write
        return self

    def __exit__(self, *exc):
        (runner.Runner.run, binaries.use_prebuilt, machine.environment_log,
         gc_report.write_report, cli.detect_commit) = self.saved
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
            self.assertTrue(all(r["git_commit"] == FAKE_COMMIT for r in run.reports))
            self.assertEqual(run.ran[0], "binaries")
            self.assertEqual([p["name"] for p in run.reports[-1]["plan"]], ["binaries"] + [s.name for s in plan()])

    def test_a_run_stopped_anywhere_leaves_the_report_of_its_last_step(self):
        for stop in ("gpu-suite", "gpu-validation", "run-fused-1", "torch-cuda-graph", "energy-cuda-fused"):
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

    def test_call_2_after_call_1s_report_reruns_what_failed_and_says_so(self):
        with FakeRun(fail=["gpu-validation-fused"]) as first:
            first.main()
            call1 = first.reports[-1]
            self.assertEqual(call1["call"], 1)
            self.assertEqual(call1["gpu_path"], currency.tree_digest(gc_steps.ROOT))
            self.assertIn("step gpu-validation-fused: 1", call1["failures"])
            after = os.path.join(first.tmp, "call1.json")
            with open(after, "w") as f:
                json.dump(call1, f)
            with FakeRun() as second:
                rc, out = second.main("--after", after)
                # The made-up steps leave no files: the evidence is missing, no step failed.
                self.assertEqual(rc, 1)
                self.assertFalse([f for f in second.reports[-1]["failures"] if f.startswith("step ")])
                self.assertEqual(second.ran[:3], ["binaries", "make-task", "gpu-validation-fused"], second.reports[-1]["plan_reason"])
                self.assertIn("kernel-lab", second.ran)
                self.assertEqual(sorted(os.listdir(out)), ["artifacts.tar.gz", "gpu-check-call2.log",
                                                           "report-call2.json"])
                last = second.reports[-1]
                self.assertEqual(last["call"], 2)
                self.assertIn("rerun of call 1's 1 unfinished step(s) (gpu-validation-fused)", last["plan_reason"])
                self.assertEqual(last["after_report"]["git_commit"], call1["git_commit"])
                self.assertEqual(last["left_out_of_this_call"], [s.name for s in gc_plan.rerun_plan(
                    context(), call1, call1["git_commit"])[1]])

    def test_a_failing_required_step_is_in_the_next_report(self):
        with FakeRun(fail=["gpu-validation"]) as run:
            rc, _ = run.main()
            self.assertEqual(rc, 1)
            r = next(r for r in run.reports if r.get("written_after") == "gpu-validation")
            self.assertIn("step gpu-validation: 1", r["failures"])


class Series(unittest.TestCase):
    """--calls: whole calls back to back for one window on a GPU machine, each into OUT/callN."""

    def folder(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        return d

    def series(self, args, check):
        """cli.main(args) with run_check replaced by `check` and a clock that only `check` moves:
        (exit code, the summary line)."""
        clock = [1000.0]

        def timed(call, previous, out, env, budget):
            return check(call, budget, out, clock)

        said = io.StringIO()
        with mock.patch.object(cli, "run_check", timed), mock.patch.object(cli.time, "time", lambda: clock[0]), \
                contextlib.redirect_stdout(said):
            rc = cli.main(args + [self.folder()])
        return rc, said.getvalue()

    def test_each_call_of_the_series_runs_whole_in_its_order_into_its_own_folder(self):
        with FakeRun() as run:
            run.main("--calls", "1,4,2")
            out = os.path.join(run.tmp, "out")
            self.assertEqual(sorted(os.listdir(out)), ["call1", "call2", "call4"])
            self.assertEqual(sorted(os.listdir(os.path.join(out, "call4"))),
                             ["artifacts.tar.gz", "gpu-check-call4.log", "report-call4.json"])
            self.assertTrue(os.path.exists(os.path.join(out, "call1", "report.json")))
            finals = [r for r in run.reports if r["complete"]]
            self.assertEqual([r["call"] for r in finals], [1, 4, 2])
            expected = []
            for c in (1, 4, 2):
                expected += ["binaries"] + names(plan(c))
            self.assertEqual(run.ran, expected)

    def test_each_call_fits_what_is_left_and_none_starts_short_of_time(self):
        budgets = []

        def check(call, budget, out, clock):
            budgets.append((call, budget, os.path.basename(out)))
            clock[0] += 200  # each call holds the machine 200 s
            return 0 if call == 1 else 1

        rc, said = self.series(["--calls", "1,4,2,8", "--for", "400"], check)
        # call 1: 390 s left, the whole 270 s of steps; call 4: 190 s left, 9/10 of it; then none.
        self.assertEqual(budgets, [(1, gc_steps.STEP_BUDGET, "call1"), (4, 171, "call4")])
        self.assertEqual(rc, 1)
        self.assertIn("call 1 PASSED; call 4 not passed, see call4/; call 2 not started (it needs 60 s of steps, "
                      "0 s left); call 8 not started (it needs 60 s of steps, 0 s left)", said)

    def test_a_call_whose_required_steps_do_not_fit_is_not_started_and_the_next_may_be(self):
        budgets = []

        def check(call, budget, out, clock):
            budgets.append((call, budget))
            return 0

        # 140 s left: call 1's required steps need 200 s of steps, call 4's 110.
        rc, said = self.series(["--calls", "1,4", "--for", "150"], check)
        self.assertEqual(budgets, [(4, 126)])
        self.assertEqual(rc, 1)
        self.assertIn(f"call 1 not started (it needs {cli.required_seconds(1)} s of steps, 126 s left); "
                      "call 4 PASSED", said)

    def test_a_call_that_breaks_costs_the_next_nothing(self):
        ran = []

        def check(call, budget, out, clock):
            ran.append(call)
            if call == 1:
                raise RuntimeError("boom")
            return 0

        rc, said = self.series(["--calls", "1,4"], check)
        self.assertEqual((ran, rc), ([1, 4], 1))
        self.assertIn("call 1 broke: RuntimeError: boom; call 4 PASSED", said)

    def test_a_series_that_passes_every_call_exits_0(self):
        rc, said = self.series(["--calls", "2,3"], lambda call, budget, out, clock: 0)
        self.assertEqual(rc, 0, said)

    def test_a_required_step_left_out_by_the_budget_fails_the_report(self):
        with FakeRun() as run, mock.patch.dict(os.environ, {"GPU_CHECK_BUDGET": "100"}):
            run.main("--call", "4")  # export-gpu (90 s) does not fit beside the binaries' 20
            last = run.reports[-1]
            self.assertIn("export-gpu", last["left_out_of_this_call"])
            self.assertIn("step export-gpu: left out, no room in this call's budget", last["failures"])
            self.assertFalse(last["passed"])

    def test_a_bad_series_is_one_line_and_exit_2(self):
        for args in (["--for", "500"], ["--calls", "1,1"], ["--calls", "1,99"], ["--calls", "one"], ["--calls", ""],
                     ["--calls", "1", "--call", "2"], ["--calls", "1", "--plan"], ["--calls", "1", "--for", "76"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as stop:
                cli.main(args + [self.folder()])
            self.assertEqual(stop.exception.code, 2, args)
            self.assertEqual(len(err.getvalue().strip().splitlines()), 1, args)
            self.assertIn("gpu-check: error:", err.getvalue(), args)


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
        suite = next(s for s in plan(1) if s.name == "gpu-suite")
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
            manifest = [{"name": n, "suite": suites, "cmd": ["@PYTHON@", "-c", f"import sys; sys.exit({rc})"],
                         "env": {}, "timeout": 30}
                        for n, suites, rc in (("good", ["gpu"], 0), ("skipped", ["gpu"], 77), ("bad", ["gpu"], 1),
                                              ("cpu", ["cpu"], 0), ("export", ["export"], 0),
                                              ("export-gpu", ["export", "gpu"], 0))]
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
                                                                           ("bad", "FAIL"), ("export-gpu", "OK")])
            # Every suite named, not any: call 4's selection is the GPU suite's export test alone.
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(cli.main(argv + ["--suite", "export"]), 0)
            with open(log) as f:
                self.assertEqual([json.loads(line)["name"] for line in f], ["export-gpu"])
            # Every test skipped (no GPU): 77, never 0.
            argv[argv.index("gpu")] = "none"
            with open(os.path.join(tmp, "m.json"), "w") as f:
                json.dump([dict(manifest[1], suite=["none"])], f)
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(cli.main(argv), 77)


if __name__ == "__main__":
    unittest.main(verbosity=2)
