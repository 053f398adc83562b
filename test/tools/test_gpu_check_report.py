#!/usr/bin/env python3
"""gpu-check's report (tools/gpu_check/report.py, run as `python -m gpu_check report`) on made-up step results: a GPU run is scarce, so the report that sums it
up is tested here, where there is no GPU. One good run (every required step 0, equal hashes, both
validations passed) must pass with the timings side by side; each kind of failure must fail it
with a reason; what is only recorded (CPU suites, a sanitizer that could not run) must not.

  test_gpu_check_report.py SOURCE_ROOT   (meson's test env puts tools/ on PYTHONPATH; by hand:
  PYTHONPATH=tools python3 test/tools/test_gpu_check_report.py .)
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy missing")
    sys.exit(77)

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = [sys.executable, "-m", "gpu_check", "report"]

REQUIRED = ("binaries", "gpu-suite", "gpu-validation", "gpu-validation-fused", "run-cuda-1", "run-cuda-2",
            "run-fused-1", "run-fused-2")
# The made-up draw: rev88.npz in the scratch folder, and what each reader says it read.
DRAW = {"train_images": np.linspace(0, 1, 3 * 81, dtype=np.float32).reshape(3, 1, 9, 9),
        "train_labels": np.array([1, 2, 3], dtype=np.int64),
        "test_images": np.linspace(1, 0, 2 * 81, dtype=np.float32).reshape(2, 1, 9, 9)}
DRAW_HASHES = {k: __import__("hashlib").sha256(v.tobytes()).hexdigest() for k, v in DRAW.items()}
HASHES = {"state_vector_sha256": "aa", "final_parameter_sha256": "bb", "final_velocity_sha256": "cc",
          "predictions_sha256": "dd", "scores_sha256": "ee"}


def validation(median):
    return {"passed": True, "run": True,
            "replay_repeatability": {"task_ms": {"median": median, "min": median * 0.9, "max": median * 1.2, "runs": 100},
                                     "task_ms_cold": {"median": median * 1.5, "min": median, "max": median * 2,
                                                      "runs": 20},
                                     "inputs": "rev88.npz", "input_hashes": dict(DRAW_HASHES),
                                     "diagnostics": {"launches_per_step": {"first_batch": {"launches": 2}},
                                                     "graph_nodes": {"order": [1, 1], "epoch": 158}}}}


def torch_run(median, cold=None):
    return {"backend": "torch-cuda-graph", "input_hashes": dict(DRAW_HASHES), "accuracy": 0.9,
            "repeat_runs_byte_identical": True,
            "timing": {"task_ms": {"median": median, "min": median - 1, "max": median + 3, "runs": 20},
                       "task_ms_cold": None if cold is None else {"median": cold, "min": cold, "max": cold, "runs": 10}}}


class Run:
    """A fabricated gpu-check run: steps, test logs and the tools' files."""

    def __init__(self):
        self.steps = {name: 0 for name in REQUIRED}
        self.steps.update({"sanitize-racecheck-cuda-fused": 0, "torch-cuda-graph": 0})
        self.plan = None  # [(name, required)]: gpu-check's plan.tsv, where the run had one
        self.gpu = True  # nvidia-smi names a GPU
        self.logs = {}  # artifacts' text files: compute-sanitizer logs
        self.tests = [("cuda-gpu", "OK")]  # meson test --suite gpu
        self.rest_tests = [("cpu", "OK"), ("gpu-check-report", "SKIP")]  # every other suite
        self.export_tests = []  # call 4's export-gpu test
        self.out_files = {"gpu-validation.json": validation(10.0), "gpu-validation-fused.json": validation(2.0),
                          "gpu-validation-fused-pdl.json": validation(1.5),
                          "gpu-validation-fused-plain.json": validation(2.0),
                          "validate.json": {"passed": True},
                          "torch-cuda-graph.json": torch_run(30.0, cold=45.0),
                          "torch-cuda-eager.json": torch_run(120.0),
                          "energy-cuda-fused.json": {"energy": {"available": True, "joules_per_task": 0.05,
                                                                "gross_joules_per_task": 0.2,
                                                                "window": {"tasks_seconds": 10.0}}},
                          "energy-cuda-fused-x16.json": {"energy": {"available": True, "joules_per_task": 0.01,
                                                                    "concurrent_tasks": 16}},
                          "bench-throughput.json": {"benchmarks": [
                              {"name": "throughput/cuda-fused/tasks:4/manual_time", "tasks": 4, "median_ms": 4.0,
                               "ms_per_task": 1.0, "tasks_per_second": 1000.0},
                              {"name": "throughput/cuda/tasks:16/manual_time", "error_occurred": True}]}}
        self.runs = {name: dict(HASHES, predictions_file=name.replace(".json", ".predictions.npy"),
                                input_hashes=dict(DRAW_HASHES))
                     for name in ("run1.json", "run2.json", "fused1.json", "fused2.json", "run_cpu_reference.json",
                                  "fused-pdl.json")}

    def report(self, partial=None):
        with tempfile.TemporaryDirectory() as tmp:
            out, scratch, art = os.path.join(tmp, "out"), os.path.join(tmp, "scratch"), os.path.join(tmp, "art")
            os.makedirs(out)
            os.makedirs(scratch)
            os.makedirs(art)
            with open(os.path.join(scratch, "steps.tsv"), "w") as f:
                for name, rc in self.steps.items():
                    f.write(f"{name}\t{rc}\t1.00\n")
            if self.plan is not None:
                with open(os.path.join(scratch, "plan.tsv"), "w") as f:
                    for name, required in self.plan:
                        f.write(f"{name}\t10\tgroup\t{int(required)}\n")
            for name, text in self.logs.items():
                with open(os.path.join(art, name), "w") as f:
                    f.write(text)
            for log, tests in (("testlog-gpu.json", self.tests), ("testlog-rest.json", self.rest_tests),
                               ("testlog-export.json", self.export_tests)):
                with open(os.path.join(scratch, log), "w") as f:
                    for name, result in tests:
                        f.write(json.dumps({"name": name, "result": result, "duration": 1.0}) + "\n")
            for name, content in self.out_files.items():
                with open(os.path.join(art, name), "w") as f:
                    json.dump(content, f)
            np.savez(os.path.join(scratch, "rev88.npz"), **DRAW)
            labels = np.arange(50, dtype=np.int64) % 10
            np.save(os.path.join(scratch, "rev88_labels.npy"), labels)
            for name, content in self.runs.items():
                with open(os.path.join(scratch, name), "w") as f:
                    json.dump(content, f)
                np.save(os.path.join(scratch, content["predictions_file"]), labels)
            # nvidia-smi as a GPU machine answers it (self.gpu), or none on the PATH at all.
            bin_dir = os.path.join(tmp, "bin")
            os.makedirs(bin_dir)
            if self.gpu:
                with open(os.path.join(bin_dir, "nvidia-smi"), "w") as f:
                    f.write("#!/bin/sh\necho 'NVIDIA H200, 580.159.04, 143771 MiB'\n")
                os.chmod(os.path.join(bin_dir, "nvidia-smi"), 0o755)
            env = dict(os.environ, PATH=bin_dir + os.pathsep + os.path.dirname(sys.executable))
            p = subprocess.run(REPORT + ["--out", out, "--artifacts", art, "--scratch", scratch,
                                "--git-commit", "abc123", "--gpu-arch", "90"] + (["--partial", partial] if partial else []),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            if p.returncode != 0:
                raise AssertionError(f"report script exit {p.returncode}: {p.stderr}")
            if os.listdir(out) != ["report.json"] or "report.json" in os.listdir(art):
                raise AssertionError(f"the report belongs in --out alone: {os.listdir(out)}, {os.listdir(art)}")
            with open(os.path.join(out, "report.json")) as f:
                return json.load(f)


class GpuCheckReport(unittest.TestCase):
    def test_a_good_run_passes_with_timings_side_by_side(self):
        r = Run().report()
        self.assertTrue(r["passed"], r["failures"])
        self.assertIs(r["complete"], True)
        self.assertEqual(r["git_commit"], "abc123")
        self.assertEqual(r["gpu_arch"], "90")
        t = r["timing"]
        self.assertEqual(t["cuda-fused"]["task_ms"]["median"], 2.0)
        self.assertEqual(t["cuda"]["task_ms"]["runs"], 100)
        self.assertEqual(t["cuda"]["task_ms_cold"]["runs"], 20)
        self.assertEqual(t["torch-cuda-graph"]["task_ms"], {"median": 30.0, "min": 29.0, "max": 33.0, "runs": 20})
        self.assertEqual(t["torch-eager"]["task_ms"]["runs"], 20)
        self.assertEqual(t["cuda-fused"]["speedup_vs"], {"torch-cuda-graph": 15.0, "torch-eager": 60.0})
        self.assertEqual(t["cuda-fused"]["speedup_vs_cold_l2"], {"torch-cuda-graph": 15.0})  # 45 / 3
        self.assertEqual(t["cuda"]["speedup_vs"]["torch-cuda-graph"], 3.0)
        self.assertTrue(r["same_draw"]["identical"])
        self.assertEqual(r["same_draw"]["archive_sha256"], DRAW_HASHES)
        self.assertEqual(len(r["same_draw"]["readers"]), 5)
        self.assertTrue(r["two_process_repeatability"]["identical"])
        self.assertTrue(r["two_process_repeatability_fused"]["identical"])
        self.assertEqual(r["prediction_agreement"]["cuda_vs_cuda-fused"], 1.0)
        self.assertEqual(r["energy"]["cuda-fused"]["joules_per_task"], 0.05)
        self.assertEqual(r["energy"]["cuda-fused-16-at-once"]["concurrent_tasks"], 16)
        self.assertTrue(r["meson_test"]["gpu_suite_ran"])
        self.assertIs(r["cuda_fused_bit_equal_to_cpu_reference"], True)
        self.assertEqual(r["programmatic_launch"]["validation_passed"], True)
        self.assertEqual(r["programmatic_launch"]["same_bytes_as_plain_launches"], True)
        self.assertEqual(r["programmatic_launch"]["same_call"]["saving"], 0.25)  # 1.5 ms against 2.0 ms
        self.assertEqual(t["cuda-fused-pdl"]["speedup_vs"]["torch-cuda-graph"], 20.0)
        self.assertEqual(r["throughput"], [{"name": "throughput/cuda-fused/tasks:4", "tasks": 4, "median_ms": 4.0,
                                            "ms_per_task": 1.0, "tasks_per_second": 1000.0}])

    def test_call_4s_race_runs_are_summarised_with_issue_48s_time_targets(self):
        run = Run()
        def race(mean, per_draw, line):
            return {"timing": {"mean_ms": mean, "median_ms": mean, "max_ms": mean * 1.2},
                    "totals": {"ranked_correct": sum(per_draw), "worst_draw": min(per_draw), "per_draw": per_draw},
                    "device": {"name": "NVIDIA H200"}, "verdict": {"result": "PASS", "line": line}}
        run.out_files.update({"race-12.json": race(0.42, [8900] * 11, "race: PASS band 12"),
                              "race-8.json": race(3.5, [9300] * 11, "race: PASS band 8"),
                              "race-5.json": race(20.0, [9500] * 11, "race: PASS band 5")})
        run.export_tests = [("export-gpu", "OK")]
        r = run.report()
        self.assertTrue(r["passed"], r["failures"])  # the race is recorded, not part of passing
        self.assertIn({"name": "export-gpu", "result": "OK", "seconds": 1.0}, r["meson_test"]["tests"])
        self.assertEqual(r["race"]["12"]["ranked_correct"], 97900)
        self.assertEqual((r["race"]["12"]["target_ms"], r["race"]["12"]["target_met"]), (0.5, True))
        self.assertEqual((r["race"]["8"]["target_ms"], r["race"]["8"]["target_met"]), (3.0, False))
        self.assertEqual((r["race"]["5"]["target_ms"], r["race"]["5"]["target_met"]), (None, None))  # measured only
        self.assertEqual(r["race"]["5"]["verdict"], "race: PASS band 5")
        self.assertNotIn("race", Run().report())

    def test_call_8s_cluster_launch_is_held_to_the_two_kernel_steps_bytes_and_time(self):
        run = Run()
        cluster = validation(1.2)
        cluster["replay_repeatability"]["diagnostics"]["cluster_blocks"] = 16
        run.out_files.update({"gpu-validation-fused-cluster.json": cluster,
                              "energy-cuda-fused-cluster-protocol.json": {"energy": {"available": True,
                                                                                     "joules_per_task": 0.04}},
                              "bench-throughput-cluster.json": {"benchmarks": [
                                  {"name": "throughput/cuda-fused/tasks:16/manual_time", "tasks": 16,
                                   "median_ms": 4.8, "ms_per_task": 0.3, "tasks_per_second": 3333.0}]}})
        run.runs["fused-cluster.json"] = dict(run.runs["fused-pdl.json"])
        r = run.report()
        self.assertTrue(r["passed"], r["failures"])  # recorded, not part of passing
        c = r["cluster_launch"]
        self.assertEqual(c["same_call"]["saving"], 0.2)  # 1.2 ms against the PDL step's 1.5
        self.assertEqual((c["validation_passed"], c["same_bytes_as_two_kernel_launches"], c["cluster_blocks"]),
                         (True, True, 16))
        self.assertEqual(r["energy"]["cuda-fused-cluster-protocol"]["joules_per_task"], 0.04)
        self.assertEqual(c["throughput_one_launch"], [{"name": "throughput/cuda-fused/tasks:16", "tasks": 16,
                                                       "median_ms": 4.8, "ms_per_task": 0.3,
                                                       "tasks_per_second": 3333.0}])
        self.assertEqual(r["throughput"][0]["tasks"], 4)  # call 2's, without clusters, apart
        run.runs["fused-cluster.json"]["predictions_sha256"] = "other"
        self.assertIs(run.report()["cluster_launch"]["same_bytes_as_two_kernel_launches"], False)
        self.assertNotIn("cluster_launch", Run().report())

    def test_calls_5_to_7_summarise_each_shape_with_the_ratio_to_torch_and_the_energy(self):
        run = Run()
        config = {"depth": 4, "width": 128, "alpha": 1.0, "seed": 11, "epochs": 32, "learning_rate": 0.05,
                  "batch_size": 128, "momentum": 0.9, "weight_decay": 0.0}

        def shape_validation(median):
            v = validation(median)
            v["replay_repeatability"]["config"] = dict(config)
            return v
        run.steps.update({n: 0 for n in ("shape-frontier-5-cuda", "shape-frontier-5-fused", "shape-frontier-5-torch",
                                         "shape-frontier-5-energy", "shape-frontier-12-fused")})
        run.out_files.update({
            "shape-frontier-5-cuda.json": shape_validation(400.0),
            "shape-frontier-5-fused.json": shape_validation(50.0),
            "shape-frontier-5-torch.json": dict(torch_run(1250.0, cold=1300.0), config=dict(config, epochs=32)),
            "shape-frontier-5-energy.json": {"energy": {"available": True, "joules_per_task": 2.5,
                                                        "gross_joules_per_task": 9.0, "window": {"tasks_seconds": 10.0}},
                                             "task": {"config": dict(config)}},
            "shape-frontier-12-fused.json": validation(0.4)})  # rev88's config recorded nowhere: no ratio, no failure
        r = run.report()
        self.assertTrue(r["passed"], r["failures"])
        row = r["shapes"]["frontier-5"]
        self.assertEqual(row["config"], config)
        self.assertEqual(row["ms_a_task"]["cuda"], {"warm": 400.0, "cold_l2": 600.0})
        self.assertEqual(row["ms_a_task"]["cuda-fused"], {"warm": 50.0, "cold_l2": 75.0})
        self.assertEqual(row["ms_a_task"]["torch-cuda-graph"], {"warm": 1250.0, "cold_l2": 1300.0})
        self.assertEqual(row["speedup_vs_torch-cuda-graph"]["cuda-fused"], {"warm": 25.0, "cold_l2": 17.33})
        self.assertEqual(row["target"], {"cuda_fused_speedup_min": 20.0, "measured": 25.0, "met": True})
        self.assertEqual(row["energy_cuda_fused"]["joules_per_task"], 2.5)
        self.assertTrue(row["same_draw"] and row["same_config"])
        self.assertEqual(list(r["shapes"]), ["frontier-12", "frontier-5"])
        self.assertEqual(r["shapes"]["frontier-12"]["speedup_vs_torch-cuda-graph"], {})
        from gpu_check import index
        self.assertIn("frontier-5: cuda-fused 50.00 (75.00) ms, cuda 400 (600) ms, torch-cuda-graph 1250 (1300) ms, "
                      "cuda-fused 25.0× torch, 2.500 J/task", index.measured(r))
        # another config on one side: no ratio, and the report fails; a validation that failed fails it too
        run.out_files["shape-frontier-5-torch.json"]["config"]["width"] = 82
        run.out_files["shape-frontier-5-fused.json"]["passed"] = False
        r = run.report()
        self.assertEqual(r["shapes"]["frontier-5"]["speedup_vs_torch-cuda-graph"], {})
        self.assertIn("shape frontier-5: the contenders ran different configs", r["failures"])
        self.assertIn("shape frontier-5: gpu_validation of cuda-fused did not pass", r["failures"])
        self.assertFalse(r["passed"])
        self.assertNotIn("shapes", Run().report())
        # a validation step that failed without its file fails the report; one stopped by its limit is named only
        run = Run()
        run.steps.update({"shape-frontier-8-cuda": 1, "shape-frontier-8-fused": 124})
        r = run.report()
        self.assertEqual([f for f in r["failures"] if "shape" in f], ["step shape-frontier-8-cuda: 1 (no report of it)"])
        self.assertEqual(r["not_run"], {"shape-frontier-8-fused": 124})

    def test_no_gpu_never_passes_and_what_did_not_run_is_named(self):
        run = Run()
        run.gpu = False
        r = run.report()
        self.assertFalse(r["passed"])
        self.assertIn("no GPU: nvidia-smi named none, so nothing here ran on a GPU", r["failures"])
        self.assertIsNone(r["device"])
        run = Run()
        run.steps.update({"ncu-cuda": "not-found", "kernel-lab": 77, "bench-throughput": 124})
        r = run.report()
        self.assertEqual(r["not_run"], {"ncu-cuda": "not-found", "kernel-lab": 77, "bench-throughput": 124})
        self.assertTrue(r["passed"], r["failures"])  # recorded steps: named, not failures
        self.assertEqual(r["device"], "NVIDIA H200, 580.159.04, 143771 MiB")

    def test_the_targets_are_judged_on_what_was_measured(self):
        r = Run().report()
        g = r["targets"]
        self.assertEqual(g["cuda"]["ms_per_task"], {"max": 8.0, "measured": 10.0, "measured_cold_l2": 15.0,
                                                    "met": False})
        self.assertIs(g["cuda"]["speedup_vs_torch-cuda-graph"]["met"], True)  # 3.0 >= 3
        self.assertIs(g["cuda-fused"]["ms_per_task"]["met"], False)  # 2 ms > 1 ms
        self.assertIs(g["cuda-fused"]["speedup_vs_torch-cuda-graph"]["met"], False)  # 15 < 20
        self.assertEqual(g["cuda-fused"]["joules_per_task"]["from"], "cuda-fused")
        self.assertEqual(g["cuda-fused"]["joules_per_task"]["window"], {"tasks_seconds": 10.0})
        self.assertIs(g["cuda-fused"]["joules_per_task"]["met"], True)
        self.assertIs(g["all_met"], False)
        self.assertTrue(r["passed"])  # targets are recorded, not correctness
        run = Run()
        run.out_files["gpu-validation.json"] = validation(6.0)
        run.out_files["gpu-validation-fused.json"] = validation(0.9)
        run.out_files["torch-cuda-graph.json"] = torch_run(30.0)
        run.out_files["energy-cuda-fused-protocol.json"] = {"energy": {"available": True, "joules_per_task": 0.08}}
        g = run.report()["targets"]
        self.assertIs(g["all_met"], True)
        self.assertEqual(g["cuda-fused"]["joules_per_task"]["from"], "cuda-fused-protocol")  # the whole protocol first
        run.out_files.pop("energy-cuda-fused-protocol.json")
        run.out_files.pop("energy-cuda-fused.json")
        g = run.report()["targets"]
        self.assertIsNone(g["cuda-fused"]["joules_per_task"]["met"])
        self.assertIsNone(g["all_met"])  # not measured is not met

    def test_another_draw_gives_no_speedup_and_fails_the_report(self):
        run = Run()
        run.out_files["torch-cuda-graph.json"]["input_hashes"]["train_labels"] = "0" * 64
        r = run.report()
        self.assertFalse(r["passed"])
        self.assertIn("not the same draw: torch-cuda-graph read other bytes than rev88.npz", r["failures"])
        self.assertNotIn("torch-cuda-graph", r["timing"]["cuda-fused"].get("speedup_vs", {}))
        self.assertEqual(r["timing"]["cuda-fused"]["not_same_draw"], ["torch-cuda-graph"])
        self.assertIsNone(r["targets"]["cuda-fused"]["speedup_vs_torch-cuda-graph"]["met"])
        run = Run()
        run.out_files["gpu-validation-fused.json"]["replay_repeatability"]["input_hashes"]["test_images"] = "1" * 64
        self.assertIn("gpu_validation cuda-fused", run.report()["same_draw"]["differs"])

    def test_each_failure_fails_the_report_with_a_reason(self):
        def failing(change, words):
            run = Run()
            change(run)
            r = run.report()
            self.assertFalse(r["passed"], words)
            self.assertTrue(any(words in reason for reason in r["failures"]), (words, r["failures"]))

        for name in REQUIRED:
            failing(lambda run, name=name: run.steps.__setitem__(name, 1), f"step {name}: 1")
        failing(lambda run: run.steps.__setitem__("gpu-validation", 77), "step gpu-validation: 77 (skipped: no usable GPU)")
        failing(lambda run: run.steps.__setitem__("sanitize-racecheck-cuda-fused", 3), "sanitize-racecheck-cuda-fused found errors")
        failing(lambda run: run.runs["fused2.json"].__setitem__("state_vector_sha256", "zz"), "two cuda-fused processes")
        failing(lambda run: run.runs["run2.json"].__setitem__("scores_sha256", "zz"), "two processes gave different hashes")
        failing(lambda run: run.out_files["gpu-validation-fused.json"].__setitem__("passed", False), "cuda-fused did not pass")
        failing(lambda run: run.out_files.pop("gpu-validation.json"), "gpu_validation did not pass")
        failing(lambda run: run.tests.__setitem__(0, ("cuda-gpu", "SKIP")), "GPU test suite did not run")
        failing(lambda run: run.tests.clear(), "GPU test suite did not run")
        failing(lambda run: run.runs.pop("fused2.json"), "two cuda-fused processes: runs missing (fused2.json)")

    def test_a_report_on_the_way_is_marked_and_never_passes(self):
        run = Run()
        r = run.report(partial="torch-cuda-graph")
        self.assertIs(r["complete"], False)
        self.assertEqual(r["written_after"], "torch-cuda-graph")
        self.assertFalse(r["passed"])
        self.assertEqual(r["failures"], [])  # every step of the made-up run is in: nothing else failed
        self.assertEqual(r["timing"]["cuda-fused"]["speedup_vs"]["torch-cuda-graph"], 15.0)

    def test_what_is_only_recorded_does_not_fail_it(self):
        run = Run()
        run.runs["run_cpu_reference.json"]["scores_sha256"] = "zz"  # recorded: the GPU suite tests it
        run.steps["sanitize-racecheck-cuda-fused"] = 1  # the tool could not run (not a finding)
        run.steps["torch-cuda-graph"] = 1             # no baseline: no speedup, still evidence
        del run.out_files["torch-cuda-graph.json"]
        run.runs["fused-pdl.json"]["scores_sha256"] = "zz"  # the PDL experiment: recorded
        run.out_files["gpu-validation-fused-pdl.json"]["passed"] = False
        r = run.report()
        self.assertTrue(r["passed"], r["failures"])
        self.assertEqual(r["programmatic_launch"]["same_bytes_as_plain_launches"], False)
        self.assertEqual(r["programmatic_launch"]["validation_passed"], False)
        self.assertIs(r["cuda_fused_bit_equal_to_cpu_reference"], False)
        self.assertNotIn("torch-cuda-graph", r["timing"]["cuda-fused"].get("speedup_vs", {}))


API_ERROR_IN_CUBLASLT = """========= COMPUTE-SANITIZER
========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA API call to cudaFuncGetAttributes.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: [0x1234] in libcublasLt.so.13
=========         Host Frame: cublasLtMatmulAlgoGetHeuristic [0x99] in libcublasLt.so.13
=========
========= ERROR SUMMARY: 1 error
"""
OUT_OF_BOUNDS = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at fused_rows_kernel+0x1a0
=========     by thread (3,0,0) in block (1,0,0)
=========     Address 0x7f00 is out of bounds
=========
========= ERROR SUMMARY: 1 error
"""
RACE = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at fused_grads_kernel+0x220
=========     and Read access at fused_grads_kernel+0x300 [1024 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


class Sanitizers(unittest.TestCase):
    def report_with(self, rc, log, name="sanitize-memcheck-cuda"):
        run = Run()
        run.steps[name] = rc
        if log is not None:
            run.logs[name + ".log"] = log
        return run.report()

    def test_api_errors_inside_cublaslt_are_recorded_not_failures(self):
        r = self.report_with(3, API_ERROR_IN_CUBLASLT)
        self.assertTrue(r["passed"], r["failures"])
        v = r["compute_sanitizer"]["sanitize-memcheck-cuda"]
        self.assertEqual(v["verdict"], "API errors inside cuBLASLt only (recorded)")
        self.assertEqual((v["api_errors_in_cublaslt"], v["api_errors_elsewhere"], v["hazards"]), (1, 0, 0))

    def test_an_api_error_elsewhere_fails(self):
        r = self.report_with(3, API_ERROR_IN_CUBLASLT.replace("libcublasLt.so.13", "revgraph"))
        self.assertFalse(r["passed"])
        self.assertTrue(any("sanitize-memcheck-cuda found errors" in f for f in r["failures"]), r["failures"])

    def test_hazards_fail_with_what_was_found(self):
        for name, log in (("sanitize-memcheck-cuda-fused", OUT_OF_BOUNDS), ("sanitize-racecheck-cuda-fused", RACE)):
            r = self.report_with(3, log, name)
            self.assertFalse(r["passed"], name)
            self.assertEqual(r["compute_sanitizer"][name]["hazards"], 1)
            self.assertTrue(any(name in f and ("Invalid __global__ read" in f or "Race reported" in f)
                                for f in r["failures"]), r["failures"])

    def test_a_race_logged_before_the_limit_still_fails(self):
        # The limit's signal ends the program, which the log says too: that line is no finding.
        ended = "========= Error: process didn't terminate successfully\n"
        for rc in (124, 137):
            r = self.report_with(rc, RACE + ended, "sanitize-racecheck-cuda-fused")
            v = r["compute_sanitizer"]["sanitize-racecheck-cuda-fused"]
            self.assertEqual((v["verdict"], v["hazards"], v.get("ran_out_of_time")), ("found errors", 1, True), v)
            self.assertFalse(r["passed"])
            r = self.report_with(rc, ended, "sanitize-racecheck-cuda-fused")
            self.assertEqual(r["compute_sanitizer"]["sanitize-racecheck-cuda-fused"]["verdict"],
                             "ran out of time (recorded)")

    def test_a_racecheck_out_of_time_or_a_tool_that_cannot_run_is_recorded(self):
        for rc, words in ((124, "ran out of time"), (137, "ran out of time"), ("not-found", "not run"),
                          (1, "not run (exit 1")):
            r = self.report_with(rc, "========= Error: Device not supported\n" if rc == 1 else None,
                                 "sanitize-racecheck-cuda-fused")
            v = r["compute_sanitizer"]["sanitize-racecheck-cuda-fused"]
            self.assertTrue(v["verdict"].startswith(words), v)
            self.assertTrue(r["passed"], r["failures"])

    def test_a_limit_line_is_recorded(self):
        r = self.report_with(0, "========= COMPUTE-SANITIZER\n========= Reached the limit of 1000 hazards reported\n"
                                "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n",
                             "sanitize-racecheck-cuda-fused")
        self.assertTrue(r["passed"], r["failures"])
        self.assertEqual(r["compute_sanitizer"]["sanitize-racecheck-cuda-fused"]["limit_lines"],
                         ["Reached the limit of 1000 hazards reported"])


class Plan(unittest.TestCase):
    def test_required_steps_come_from_the_plan(self):
        run = Run()
        run.plan = [(n, True) for n in REQUIRED] + [("must-run", True), ("torch-cuda-graph", False)]
        r = run.report()
        self.assertIn("step must-run: not run", r["failures"])
        run.steps["must-run"] = 0
        self.assertTrue(run.report()["passed"])

    def test_a_call_is_judged_on_the_evidence_its_plan_meant_to_gather(self):
        run = Run()  # call 2: none of call 1's evidence is due, a sanitizer finding is
        run.plan = [("binaries", True), ("kernel-lab", False), ("sanitize-racecheck-cuda-fused", False)]
        run.steps = {"binaries": 0, "kernel-lab": 0, "sanitize-racecheck-cuda-fused": 0}
        run.tests.clear()
        run.runs.clear()
        run.out_files.clear()
        self.assertEqual(run.report()["failures"], [])
        run.steps["sanitize-racecheck-cuda-fused"] = 3
        run.logs["sanitize-racecheck-cuda-fused.log"] = RACE
        self.assertFalse(run.report()["passed"])

    def test_a_report_on_the_way_judges_only_the_steps_that_ran(self):
        run = Run()
        run.plan = [(n, True) for n in REQUIRED]
        for name in REQUIRED[2:]:
            del run.steps[name]
        run.runs.clear()
        run.out_files.clear()
        r = run.report(partial="gpu-suite")
        self.assertEqual(r["failures"], [])
        self.assertFalse(r["passed"])
        run.steps["gpu-validation"] = 1
        self.assertEqual(run.report(partial="gpu-validation")["failures"],
                         ["step gpu-validation: 1", "gpu_validation did not pass"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
