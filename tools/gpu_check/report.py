"""gpu-check's report, OUT/report.json, from what its steps left behind; cli calls it after every
step, and a person can run it on a scratch folder by hand:

  tools/gpu-check report --out OUT --scratch SCRATCH [--artifacts DIR] [--git-commit C]
                         [--gpu-arch A] [--partial AFTER_STEP]

SCRATCH holds steps.tsv (name, exit status, seconds per step), plan.tsv (the steps gpu-check
meant to run: name, limit, group, required), left-out.tsv (what the call's budget had no room for),
the test logs, the task archive, the runs' JSON and predictions; the tools' files (GPU validation,
validate, the PyTorch learner, energy, bench, ncu, sanitizer logs) are in ARTIFACTS. A report
written on the way (`complete: false`, `written_after`) judges only the steps that have run, and
never passes. `passed` is true only when every required step of the call exited 0, the GPU test
suite ran to OK, both GPU validations passed, two fresh processes per GPU backend gave the same
hashes, every timed contender read the same draw (`same_draw`) and compute-sanitizer found no
hazard and no API error outside cuBLASLt (an API error inside cuBLASLt, a tool that cannot run on
the machine and a sanitizer that ran out of time are recorded, not failures), and, in calls 5-7,
at each frontier or race shape (`shapes`: report_shapes.py) both backends' validations passed and its
contenders read the same bytes at the same config; `failures` says what failed. `targets` judges the issue's targets on what was measured (recorded, not part of
`passed`). test/tools/test_gpu_check_report.py checks it on made-up runs, so a broken report never
costs a GPU run.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

from .report_timing import energy, same_draw, targets, timings
from .report_shapes import shape_failures, shapes
from .report_timing import load_json as load  # a step's JSON, or None where it left none
from .sanitizer import sanitizer_verdicts

# Required where no plan.tsv says otherwise (reports of scratch folders made by hand): call 1's.
DEFAULT_REQUIRED = ("binaries", "gpu-suite", "gpu-validation", "gpu-validation-fused", "run-cuda-1", "run-cuda-2",
                    "run-fused-1", "run-fused-2")
# What two runs of one task must share to count as the same result.
RESULT_HASHES = ("state_vector_sha256", "final_parameter_sha256", "final_velocity_sha256", "predictions_sha256",
                 "scores_sha256")


def read_plan(scratch):
    """gpu-check's plan.tsv: [(name, limit, group, required)] in order, or None."""
    try:
        rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(scratch, "plan.tsv")) if line.strip()]
        return [(n, int(limit), group, req == "1") for n, limit, group, req in rows]
    except (OSError, ValueError):
        return None


def read_steps(scratch):
    """steps.tsv: {name: {"exit": status (int, or a word such as "skipped"), "seconds": s}}."""
    steps = {}
    for line in open(os.path.join(scratch, "steps.tsv")):
        name, rc, seconds = line.rstrip("\n").split("\t")
        steps[name] = {"exit": int(rc) if rc.lstrip("-").isdigit() else rc, "seconds": float(seconds)}
    return steps


def header(git_commit, gpu_arch, partial):
    """The report's first keys: what was checked, where, when, and whether the report is whole."""
    report = {"git_commit": git_commit, "device": None, "gpu_arch": gpu_arch, "passed": False,
              "complete": not partial,
              "written_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if partial:
        report["written_after"] = partial
    try:
        report["device"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                           "--format=csv,noheader"],
                                          capture_output=True, text=True, timeout=20).stdout.strip() or None
    except Exception:
        pass
    return report


def meson_test_results(scratch):
    """Every test's result; on a GPU machine a skipped GPU suite is a failure. The GPU suite is what
    `meson test --suite gpu` ran (testlog-gpu.json), not every name holding "gpu": the CPU suites
    have gpu-check-report, which may SKIP where python3 lacks numpy. Call 4's export-gpu test
    (testlog-export.json) is listed too: each race entry against the engine, hash for hash."""
    tests = []
    for log in ("testlog-gpu.json", "testlog-export.json", "testlog-rest.json"):
        try:
            for line in open(os.path.join(scratch, log)):
                t = json.loads(line)
                tests.append({"name": t.get("name"), "result": t.get("result"),
                              "seconds": round(t.get("duration", 0), 2)})
        except Exception:
            pass
    counts = {}
    for t in tests:
        counts[t["result"]] = counts.get(t["result"], 0) + 1
    gpu_tests = []
    try:
        for line in open(os.path.join(scratch, "testlog-gpu.json")):
            gpu_tests.append(json.loads(line).get("result"))
    except Exception:
        pass
    return {"counts": counts, "tests": tests, "gpu_suite_ran": bool(gpu_tests) and all(r == "OK" for r in gpu_tests)}


def revgraph_validate(cli, steps):
    """`revgraph validate`'s verdicts, from its JSON."""
    if cli is None:
        return None
    return {"passed": cli.get("passed"), "exit": steps.get("revgraph-validate", {}).get("exit"),
            "numerical_validation_passed": (cli.get("numerical_validation") or {}).get("passed"),
            "api_cli_smoke_passed": (cli.get("api_cli_smoke") or {}).get("passed"),
            "cpu_numerical_validation_passed": (cli.get("cpu_numerical_validation") or {}).get("passed")}


def two_processes(scratch, first, second):
    """Two processes, one task: every hash equal."""
    r1, r2 = load(os.path.join(scratch, first)), load(os.path.join(scratch, second))
    if not (r1 and r2):
        return {"identical": False, "missing": [f for f, r in ((first, r1), (second, r2)) if not r]}
    return {"identical": all(r1.get(k) == r2.get(k) for k in RESULT_HASHES),
            "state_vector_sha256": r1.get("state_vector_sha256"), "predictions_sha256": r1.get("predictions_sha256"),
            "scores_sha256": r1.get("scores_sha256"), "input_hashes": r1.get("input_hashes"),
            "backend": r1.get("backend"), "device": r1.get("device"),
            "training_prediction_seconds": [r1.get("training_prediction_seconds"), r2.get("training_prediction_seconds")],
            "preparation_seconds": [r1.get("preparation_seconds"), r2.get("preparation_seconds")],
            "core_saved_bytes_per_example": r1.get("core_saved_bytes_per_example")}


def fused_bit_equal_to_reference(fused1, reference):
    """cuda-fused is built to give the float32 reference's very bits (recorded; the GPU suite tests it)."""
    if not (fused1 and reference):
        return None
    return all(fused1.get(k) == reference.get(k)
               for k in ("state_vector_sha256", "final_velocity_sha256", "scores_sha256", "predictions_sha256"))


def prediction_agreement(scratch):
    """Prediction agreement of the cuda run with the CPU backend, cuda-fused and PyTorch on the same
    task, and accuracies."""
    agreement = {}
    try:
        import numpy as np
        labels = np.load(os.path.join(scratch, "rev88_labels.npy"))

        def preds(result):
            if result and "predictions_file" in result:
                return np.load(os.path.join(scratch, result["predictions_file"]))
            return None
        cuda_p = preds(load(os.path.join(scratch, "run1.json")))
        others = {"cpu-reference": preds(load(os.path.join(scratch, "run_cpu_reference.json"))),
                  "cuda-fused": preds(load(os.path.join(scratch, "fused1.json")))}
        tp = os.path.join(scratch, "torch_predictions.npy")
        if os.path.exists(tp):
            others["torch-cuda-graph"] = np.load(tp)
        if cuda_p is not None:
            agreement["cuda_accuracy_on_synthetic_labels"] = float((cuda_p == labels).mean())
            for name, p in others.items():
                if p is not None:
                    agreement["cuda_vs_" + name] = float((cuda_p == p).mean())
    except Exception as e:
        agreement["error"] = str(e)
    emb = load(os.path.join(scratch, "embedded.json"))
    if emb:
        agreement["embedded_digits_accuracy"] = emb.get("accuracy")
    return agreement


def replay(gv):
    """A gpu_validation report's replay section ({} where there is none)."""
    return (gv or {}).get("replay_repeatability") or {}


def same_call(gv_base, gv_new, base, new, source):
    """Two median task times by the same harness in one call, and the saving (1 - new/base), or None."""
    base_ms, new_ms = ((replay(g).get("task_ms") or {}).get("median") for g in (gv_base, gv_new))
    if not (isinstance(base_ms, (int, float)) and isinstance(new_ms, (int, float)) and base_ms > 0):
        return None
    return {base: base_ms, new: new_ms, "saving": round(1 - new_ms / base_ms, 4), "source": source}


def same_bytes(a, b):
    """Whether two revgraph run results hold the same result hashes (None where either is missing)."""
    return None if not (a and b) else all(a.get(k) == b.get(k) for k in RESULT_HASHES)


def programmatic_launch(gvp, fused1, fused_pdl, gv_plain=None):
    """cuda-fused with PDL (recorded only): validated like cuda-fused, its bytes against the plain launches',
    and (call 2) its median task time against plain launches timed by the same harness just before."""
    return {"same_call": same_call(gv_plain, gvp, "plain_ms", "pdl_ms",
                                   "gpu_validation replays (CUDA events), plain then --pdl, one call"),
            "validation_passed": None if gvp is None else gvp.get("passed"),
            "same_bytes_as_plain_launches": same_bytes(fused1, fused_pdl),
            "in_use": None if gvp is None else (replay(gvp).get("diagnostics") or {}).get("programmatic_dependent_launch")}


def cluster_launch(gvc, gvp, fused_pdl, fused_cluster, tj):
    """cuda-fused with each epoch one launch of a thread-block cluster (call 8; recorded only): validated
    like cuda-fused, its bytes against the two-kernel step's (PDL), its median task time against that
    step's timed by the same harness just before, and K tasks at once as K clusters of one launch."""
    return {"throughput_one_launch": throughput(tj) if tj else None,
            "same_call": same_call(gvp, gvc, "two_kernels_pdl_ms", "cluster_ms",
                                   "gpu_validation replays (CUDA events), --pdl then --cluster-blocks 16, one call"),
            "validation_passed": None if gvc is None else gvc.get("passed"),
            "same_bytes_as_two_kernel_launches": same_bytes(fused_pdl, fused_cluster),
            "cluster_blocks": None if gvc is None else (replay(gvc).get("diagnostics") or {}).get("cluster_blocks")}


def bench(bj):
    return [{k: b.get(k) for k in ("name", "real_time", "cpu_time", "time_unit", "iterations")}
            for b in bj.get("benchmarks", [])]


def throughput(tj):
    """K tasks at once, each on its own stream (bench throughput/<backend>/tasks:K): recorded only."""
    return [{"name": b.get("name", "").removesuffix("/manual_time"),
             **{k: b.get(k) for k in ("tasks", "median_ms", "ms_per_task", "tasks_per_second")}}
            for b in tj.get("benchmarks", []) if not b.get("error_occurred")]


def read_left_out(scratch):
    """left-out.tsv: the steps this call's budget had no room for (another call runs them), as
    (name, required)."""
    try:
        rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(scratch, "left-out.tsv")) if line.strip()]
    except OSError:
        return []
    return [(r[0], len(r) > 2 and r[2] == "1") for r in rows]


def plan_rows(plan):
    return None if plan is None else [
        {"name": n, "limit_seconds": limit, "group": g, "required": req} for n, limit, g, req in plan]


def evidence_failures(steps, plan, partial, report, gv, gvf, crosses, draw):
    """A required step (plan.tsv's) that did not exit 0, and each piece of evidence that is not what
    it must be. A report on the way judges only the steps that have run."""
    required = [n for n, _, _, req in plan if req] if plan is not None else list(DEFAULT_REQUIRED)
    planned = None if plan is None else {n for n, _, _, _ in plan}

    def due(step):  # evidence this call meant to gather (all of it without a plan), and has got to
        return (planned is None or step in planned) and (not partial or step in steps)
    reasons = []
    for name in required:
        rc = steps.get(name, {}).get("exit", "not run")
        if due(name) and rc != 0:  # 77: the program's SKIP, for want of a usable GPU; never a pass
            reasons.append(f"step {name}: {rc}" + (" (skipped: no usable GPU)" if rc == 77 else ""))
    if due("gpu-suite") and not report["meson_test"]["gpu_suite_ran"]:
        reasons.append("the GPU test suite did not run to OK")
    if due("gpu-validation") and not (gv and gv.get("passed") is True):
        reasons.append("gpu_validation did not pass")
    if due("gpu-validation-fused") and not (gvf and gvf.get("passed") is True):
        reasons.append("gpu_validation of cuda-fused did not pass")
    for what, c, last in crosses:
        if not due(last):
            continue
        if c.get("missing"):
            reasons.append(f"{what}: runs missing ({', '.join(c['missing'])})")
        elif not c.get("identical"):
            reasons.append(f"{what} gave different hashes")
    if draw["differs"]:
        reasons.append(f"not the same draw: {', '.join(draw['differs'])} read other bytes than rev88.npz")
    return reasons


# Issue 48's targets on the GPU, a call's mean time by band (ms): recorded, never part of `passed`.
RACE_TARGETS_MS = {"12": 0.5, "8": 3.0}


def race(out):
    """Call 4: each band's tools/race run report, in brief — the verdict line, the ranked figure
    (mean CUDA-event ms of the calls), totals, the device — with issue 48's time targets judged; or None."""
    import glob
    found = {}
    for path in sorted(glob.glob(os.path.join(out, "race-*.json"))):
        r = load(path)
        if not isinstance(r, dict):
            continue
        band = os.path.basename(path)[len("race-"):-len(".json")]
        timing, totals = r.get("timing") or {}, r.get("totals") or {}
        mean = timing.get("mean_ms")
        target = RACE_TARGETS_MS.get(band)
        found[band] = {"verdict": (r.get("verdict") or {}).get("line"), "result": (r.get("verdict") or {}).get("result"),
                       "mean_ms": mean, "median_ms": timing.get("median_ms"), "max_ms": timing.get("max_ms"),
                       "ranked_correct": totals.get("ranked_correct"), "worst_draw": totals.get("worst_draw"),
                       "per_draw": totals.get("per_draw"), "device": (r.get("device") or {}).get("name"),
                       "config": (r.get("entry") or {}).get("config"),
                       "target_ms": target, "target_met": None if target is None or mean is None else mean <= target}
    return found or None


def sanitizer_failures(sanitizers):
    return [f"{name} found errors: {'; '.join(v.get('examples') or []) or 'see gpu-check.log'}"
            for name, v in sanitizers.items() if v["verdict"] == "found errors"]


def build_report(scratch, out, git_commit, commit_source, gpu_arch, partial, binaries, kind, extra=None):
    """The report as a dict, its keys in the order they are written."""
    steps = read_steps(scratch)
    report = header(git_commit, gpu_arch, partial)
    report.update(extra or {})
    report["steps"] = steps
    report["meson_test"] = meson_test_results(scratch)
    gv, gvf = load(os.path.join(out, "gpu-validation.json")), load(os.path.join(out, "gpu-validation-fused.json"))
    report["numerical_validation"] = gv
    report["numerical_validation_fused"] = gvf
    report["revgraph_validate"] = revgraph_validate(load(os.path.join(out, "validate.json")), steps)
    cross, cross_fused = two_processes(scratch, "run1.json", "run2.json"), two_processes(scratch, "fused1.json", "fused2.json")
    report["two_process_repeatability"] = cross
    report["two_process_repeatability_fused"] = cross_fused
    fused1 = load(os.path.join(scratch, "fused1.json"))
    report["cuda_fused_bit_equal_to_cpu_reference"] = fused_bit_equal_to_reference(
        fused1, load(os.path.join(scratch, "run_cpu_reference.json")))
    report["prediction_agreement"] = prediction_agreement(scratch)
    gvp = load(os.path.join(out, "gpu-validation-fused-pdl.json"))
    report["programmatic_launch"] = programmatic_launch(gvp, fused1, load(os.path.join(scratch, "fused-pdl.json")),
                                                        load(os.path.join(out, "gpu-validation-fused-plain.json")))
    gvc = load(os.path.join(out, "gpu-validation-fused-cluster.json"))
    if gvc is not None:
        report["cluster_launch"] = cluster_launch(gvc, gvp, load(os.path.join(scratch, "fused-pdl.json")),
                                                  load(os.path.join(scratch, "fused-cluster.json")),
                                                  load(os.path.join(out, "bench-throughput-cluster.json")))
    draw = same_draw(scratch, out)
    report["same_draw"] = draw
    report["timing"] = timings(out, gv, gvf, gvp)
    report["energy"] = energy(out)
    report["targets"] = targets(report["timing"], report["energy"])
    report["ncu_csv"] = [f for f in ("ncu-cuda-fused.csv", "ncu-cuda.csv") if os.path.exists(os.path.join(out, f))]
    bj = load(os.path.join(out, "bench.json"))
    if bj:
        report["bench"] = bench(bj)
    tj = load(os.path.join(out, "bench-throughput.json"))
    if tj:
        report["throughput"] = throughput(tj)
    race_runs = race(out)
    if race_runs:
        report["race"] = race_runs
    shape_rows = shapes(out)  # calls 5-7: each frontier entry's and race band's shape
    if shape_rows:
        report["shapes"] = shape_rows
    plan = read_plan(scratch)
    report["plan"] = plan_rows(plan)
    left_out = read_left_out(scratch)
    report["left_out_of_this_call"] = [name for name, _ in left_out]
    # Steps that did not run for want of a device, a tool or time: named, never counted as passed.
    report["not_run"] = {n: st["exit"] for n, st in steps.items()
                         if st["exit"] in (77, "not-found", "skipped", 124, 137)}
    reasons = [] if report["device"] else ["no GPU: nvidia-smi named none, so nothing here ran on a GPU"]
    reasons += evidence_failures(steps, plan, partial, report, gv, gvf,
                                (("two processes", cross, "run-cuda-2"),
                                 ("two cuda-fused processes", cross_fused, "run-fused-2")), draw)
    # A budget too small for the call's decisive steps (GPU_CHECK_BUDGET, a series' last minutes)
    # leaves them out of its plan: the call then speaks for nothing, however its other steps went.
    reasons += [f"step {name}: left out, no room in this call's budget" for name, required in left_out if required]
    report["cublaslt_library"] = (gv or {}).get("cublaslt_library")
    sanitizers = sanitizer_verdicts(steps, out)
    report["compute_sanitizer"] = sanitizers or "not run"
    reasons += sanitizer_failures(sanitizers)
    reasons += shape_failures(shape_rows, steps)
    report["kind"] = kind
    report["commit_source"] = commit_source
    report["binaries"] = binaries
    report["failures"] = reasons
    report["passed"] = not reasons and not partial  # only a whole run can pass
    return report


def write_whole(path, report):
    """Whole or not at all: a kill while writing must not leave half a report over the last one."""
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_report(out, scratch, artifacts=None, git_commit="unknown", commit_source=None, gpu_arch=None, partial=None,
                 binaries=None, kind="call 1", name="report.json", extra=None):
    """(Re)writes OUT/NAME from what the steps left (the tools' files in ARTIFACTS); returns the report.
    `extra`: keys the caller knows (call, plan_reason, gpu_path, after_report), after the header."""
    report = build_report(scratch, artifacts or out, git_commit, commit_source, gpu_arch, partial, binaries, kind,
                          extra)
    write_whole(os.path.join(out, name), report)
    if partial:
        print(f"gpu-check: report so far (after {partial}): {len(report['failures'])} open points", file=sys.stderr)
    return report


def main(argv=None):
    ap = argparse.ArgumentParser(prog="gpu-check report", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="where report.json goes")
    ap.add_argument("--scratch", required=True, help="gpu-check's scratch folder (steps.tsv, plan.tsv, test logs, runs)")
    ap.add_argument("--artifacts", help="the tools' files (default: --out)")
    ap.add_argument("--git-commit", default="unknown")
    ap.add_argument("--gpu-arch", help="the gpu_arch the binaries were built for (e.g. 90)")
    ap.add_argument("--partial", metavar="AFTER_STEP", help="written on the way, after this step")
    a = ap.parse_args(argv)
    r = write_report(a.out, a.scratch, a.artifacts, a.git_commit, None, a.gpu_arch, a.partial)
    if not a.partial:
        print("gpu-check:", "PASSED" if r["passed"] else "FAILED: " + "; ".join(r["failures"]))
    return 0
