"""The report's measurements: one draw for every timed contender (same_draw), their times side by side
(CUDA events, warm and after an L2 flush), the energy reports, and the issue's targets judged on them.
Speedups are given only between contenders that read the very same bytes."""
import hashlib
import os

INPUT_KEYS = ("train_images", "train_labels", "test_images")

# The targets of "The GPU engine, measured" (issue 30): per complete rev88 task, against the same-spec
# PyTorch learner captured in a CUDA graph on the same draw, and NVML energy net of idle.
TARGETS = {"cuda": {"max_ms": 8.0, "min_speedup": 3.0},
           "cuda-fused": {"max_ms": 1.0, "min_speedup": 20.0, "max_joules": 0.100}}
BASELINE = "torch-cuda-graph"


def load_json(path):
    """A step's JSON, or None where it left none (or a broken one): the report says what is missing."""
    import json
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:
        return None


def archive_hashes(path):
    """sha256 of each input array of a task archive, as numpy reads it (None where it cannot)."""
    try:
        import numpy as np
        with np.load(path, allow_pickle=False) as z:
            return {k: hashlib.sha256(np.ascontiguousarray(z[k]).tobytes()).hexdigest() for k in INPUT_KEYS}
    except Exception:
        return None


def same_draw(scratch, out):
    """Who read which bytes: the archive itself (numpy), revgraph run, gpu_validation of each backend and
    the PyTorch learner, each by the sha256 of the three input arrays it reports. `identical` is true
    only where every reader that ran reports the archive's hashes."""
    readers = {}
    for name, doc, key in (
            ("revgraph run cuda", load_json(os.path.join(scratch, "run1.json")), None),
            ("revgraph run cuda-fused", load_json(os.path.join(scratch, "fused1.json")), None),
            ("gpu_validation cuda", load_json(os.path.join(out, "gpu-validation.json")), "replay_repeatability"),
            ("gpu_validation cuda-fused", load_json(os.path.join(out, "gpu-validation-fused.json")),
             "replay_repeatability"),
            (BASELINE, load_json(os.path.join(out, BASELINE + ".json")), None)):
        hashes = ((doc or {}).get(key) or {}) if key else (doc or {})
        if hashes.get("input_hashes"):
            readers[name] = hashes["input_hashes"]
    archive = archive_hashes(os.path.join(scratch, "rev88.npz"))
    reference = archive or (next(iter(readers.values())) if readers else None)
    differs = sorted(n for n, h in readers.items() if h != reference)
    return {"file": "rev88.npz (tools/make_synthetic.py --train 10000 --query 10000 --seed 2026091400)",
            "archive_sha256": archive, "readers": readers, "differs": differs,
            "identical": bool(readers) and not differs}


def replay_timing(validation, diagnostics):
    """One backend's device time from a gpu_validation's replays: warm (back to back) and cold (each
    after an L2 flush), with the draw they ran on; None where the validation has no timing."""
    replays = (validation or {}).get("replay_repeatability")
    if not (isinstance(replays, dict) and "task_ms" in replays):
        return None
    entry = {"task_ms": replays["task_ms"], "task_ms_cold": replays.get("task_ms_cold"),
             "source": "gpu_validation replays (CUDA events)", "inputs": replays.get("inputs"),
             "input_hashes": replays.get("input_hashes")}
    for key in diagnostics:
        entry[key] = (replays.get("diagnostics") or {}).get(key)
    return entry


def torch_timing(doc):
    """bench/compare/torch_gpu.py's timing (CUDA events, warm and cold), or None."""
    t = (doc or {}).get("timing")
    if not (isinstance(t, dict) and t.get("task_ms")):
        return None
    return {"task_ms": t["task_ms"], "task_ms_cold": t.get("task_ms_cold"),
            "source": "bench/compare/torch_gpu.py (CUDA events)",
            "device": doc.get("device"), "input_hashes": doc.get("input_hashes"),
            "repeat_runs_byte_identical": doc.get("repeat_runs_byte_identical"), "accuracy": doc.get("accuracy"),
            "torch_version": doc.get("torch_version")}


def ratio(base, ours, key):
    try:
        return round(base[key]["median"] / ours[key]["median"], 2)
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def timings(out, gv, gvf, gvp):
    """Device time of one complete task (reset, normalisation, permutation copies, training, predict)
    per backend and baseline, and the speedups side by side from this one run, warm and cold: only
    between entries whose input_hashes are equal (else `not_same_draw` names the baseline)."""
    timing = {}
    for name, validation, diagnostics in (
            ("cuda", gv, ("launches_per_step", "graph_nodes", "matmuls_on_hand_kernel")),
            ("cuda-fused", gvf, ("launches_per_step", "fused_weights_in_shared_memory", "graph_nodes")),
            ("cuda-fused-pdl", gvp, ("programmatic_dependent_launch",))):
        entry = replay_timing(validation, diagnostics)
        if entry is not None:
            timing[name] = entry
    for name, file in ((BASELINE, BASELINE + ".json"), ("torch-eager", "torch-cuda-eager.json")):
        entry = torch_timing(load_json(os.path.join(out, file)))
        if entry is not None:
            timing[name] = entry
    for ours in ("cuda-fused", "cuda", "cuda-fused-pdl"):
        for base in (BASELINE, "torch-eager"):
            if ours not in timing or base not in timing:
                continue
            o, b = timing[ours], timing[base]
            if not o.get("input_hashes") or o.get("input_hashes") != b.get("input_hashes"):
                o.setdefault("not_same_draw", []).append(base)
                continue
            o.setdefault("speedup_vs", {})[base] = ratio(b, o, "task_ms")
            cold = ratio(b, o, "task_ms_cold")
            if cold is not None:
                o.setdefault("speedup_vs_cold_l2", {})[base] = cold
    return timing


ENERGY_FILES = (("cuda-fused", "energy-cuda-fused.json"), ("cuda-fused-protocol", "energy-cuda-fused-protocol.json"),
                ("cuda", "energy-cuda.json"), ("torch-cuda-graph", "energy-torch-cuda-graph.json"),
                ("cuda-fused-16-at-once", "energy-cuda-fused-x16.json"),
                ("cuda-fused-cluster-protocol", "energy-cuda-fused-cluster-protocol.json"))


def energy(out):
    found = {}
    for name, file in ENERGY_FILES:
        ej = load_json(os.path.join(out, file))
        if ej:
            found[name] = ej.get("energy", ej)
    return found or "not measured"


def targets(timing, energies):
    """Each target with what was measured and whether it is met (None: not measured). Warm medians
    decide; the cold (after an L2 flush) ones are shown beside."""
    out = {}
    for name, t in TARGETS.items():
        entry = timing.get(name) or {}
        ms = (entry.get("task_ms") or {}).get("median")
        cold = (entry.get("task_ms_cold") or {}).get("median")
        speedup = (entry.get("speedup_vs") or {}).get(BASELINE)
        row = {"ms_per_task": {"max": t["max_ms"], "measured": ms, "measured_cold_l2": cold,
                               "met": None if ms is None else ms <= t["max_ms"]},
               "speedup_vs_" + BASELINE: {"min": t["min_speedup"], "measured": speedup,
                                          "met": None if speedup is None else speedup >= t["min_speedup"]}}
        if "max_joules" in t:
            e = energies if isinstance(energies, dict) else {}
            chosen = next((k for k in ("cuda-fused-protocol", "cuda-fused")
                           if (e.get(k) or {}).get("joules_per_task") is not None), None)
            joules = e[chosen]["joules_per_task"] if chosen else None
            row["joules_per_task"] = {"max": t["max_joules"], "measured": joules, "from": chosen,
                                      "window": (e.get(chosen) or {}).get("window") if chosen else None,
                                      "met": None if joules is None else joules <= t["max_joules"]}
        out[name] = row
    met = [v["met"] for row in out.values() for v in row.values()]
    out["all_met"] = None if None in met else all(met)
    return out
