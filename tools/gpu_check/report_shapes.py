"""Calls 5-7's measurements (plan.shape_units): at each frontier entry's and race band's config, the
ms a task of each backend warm and after an L2 flush (gpu_validation --set), the PyTorch learner's
CUDA graph ms (torch_gpu.py --set), the ratio cuda-fused/torch (the issue's target: >= 20x), and
cuda-fused's joules a task (revgraph_bench --energy-set), each from the step's own file
(shape-<entry>-{cuda,fused,torch,energy}.json). As for rev88 (report_timing), a ratio is given only
between contenders that read the very same bytes, and only at the same config."""
import glob
import os

from .report_timing import BASELINE, load_json, ratio, replay_timing, torch_timing

SUFFIXES = (("cuda", "cuda"), ("fused", "cuda-fused"), ("torch", BASELINE), ("energy", "energy"))
TARGET_SPEEDUP = 20.0  # cuda-fused against the PyTorch CUDA graph, at each shape (issue 47)


def _config(doc, *keys):
    for k in keys:
        doc = doc.get(k) if isinstance(doc, dict) else None
    return {k: float(v) for k, v in doc.items()} if isinstance(doc, dict) else None


def _median(entry, key):
    return ((entry or {}).get(key) or {}).get("median")


def shape_entry(out, eid):
    """One entry's row: what each of its steps left, side by side."""
    files = {tag: load_json(os.path.join(out, f"shape-{eid}-{suffix}.json")) for suffix, tag in SUFFIXES}
    timing, configs, validation = {}, {}, {}
    for tag in ("cuda", "cuda-fused"):
        doc = files[tag]
        if doc is None:
            continue
        validation[tag] = doc.get("passed")
        configs[tag] = _config(doc, "replay_repeatability", "config")
        entry = replay_timing(doc, ())
        if entry is not None:
            timing[tag] = entry
    if files[BASELINE] is not None:
        configs[BASELINE] = _config(files[BASELINE], "config")
        entry = torch_timing(files[BASELINE])
        if entry is not None:
            timing[BASELINE] = entry
    energy = files["energy"]
    if energy is not None:
        configs["energy"] = _config(energy, "task", "config")
    known = {k: v for k, v in configs.items() if v}
    config_agrees = len({tuple(sorted(v.items())) for v in known.values()}) <= 1
    hashes = {k: v.get("input_hashes") for k, v in timing.items()}
    same_draw = bool(hashes) and all(hashes.values()) and len({tuple(sorted(h.items())) for h in hashes.values()}) == 1
    validated = files["cuda-fused"] or files["cuda"] or {}
    config = ((validated.get("replay_repeatability") or {}).get("config") or (files[BASELINE] or {}).get("config")
              or ((energy or {}).get("task") or {}).get("config"))
    row = {"source": eid.split("-")[0], "band": eid.split("-", 1)[1], "config": config,
           "ms_a_task": {k: {"warm": _median(v, "task_ms"), "cold_l2": _median(v, "task_ms_cold")}
                         for k, v in timing.items()},
           "validation_passed": validation, "same_draw": same_draw, "same_config": config_agrees}
    speedup = {}
    if same_draw and config_agrees and BASELINE in timing:
        for tag in ("cuda-fused", "cuda"):
            if tag in timing:
                speedup[tag] = {"warm": ratio(timing[BASELINE], timing[tag], "task_ms"),
                                "cold_l2": ratio(timing[BASELINE], timing[tag], "task_ms_cold")}
    row["speedup_vs_" + BASELINE] = speedup
    fused = (speedup.get("cuda-fused") or {}).get("warm")
    row["target"] = {"cuda_fused_speedup_min": TARGET_SPEEDUP, "measured": fused,
                     "met": None if fused is None else fused >= TARGET_SPEEDUP}
    e = (energy or {}).get("energy") if isinstance(energy, dict) else None
    if isinstance(e, dict):
        row["energy_cuda_fused"] = {"joules_per_task": e.get("joules_per_task"),
                                    "gross_joules_per_task": e.get("gross_joules_per_task"),
                                    "available": e.get("available"), "reason": e.get("reason"),
                                    "window": e.get("window")}
    return row


def entry_ids(out):
    ids = set()
    for path in glob.glob(os.path.join(out, "shape-*.json")):
        stem = os.path.basename(path)[len("shape-"):-len(".json")]
        eid, _, suffix = stem.rpartition("-")
        if suffix in {s for s, _ in SUFFIXES} and eid:
            ids.add(eid)
    # frontier before race, then the bands from the widest margin down (12, 8, 5)
    return sorted(ids, key=lambda i: (i.split("-")[0] != "frontier", -float(i.split("-", 1)[1])
                                      if i.split("-", 1)[1].replace(".", "").isdigit() else 0, i))


def shapes(out):
    """{entry: row} for every entry a step left a file for, or None."""
    rows = {eid: shape_entry(out, eid) for eid in entry_ids(out)}
    return rows or None


def shape_failures(rows, steps=None):
    """A validation that ran and did not pass (or a validation step that failed without leaving its file),
    contenders on other bytes or at other configs: each fails the report. A step stopped by its limit or
    without a GPU is named in not_run; the 20x target and the energy are recorded, as call 1's targets are."""
    reasons = []
    for name, st in sorted((steps or {}).items()):
        eid, _, suffix = name[len("shape-"):].rpartition("-")
        if not name.startswith("shape-") or suffix not in ("cuda", "fused"):
            continue
        tag = "cuda" if suffix == "cuda" else "cuda-fused"
        left_one = tag in (((rows or {}).get(eid) or {}).get("validation_passed") or {})
        if st.get("exit") not in (0, 77, "not-found", "skipped", 124, 137) and not left_one:
            reasons.append(f"step {name}: {st.get('exit')} (no report of it)")
    for eid, row in (rows or {}).items():
        for tag, passed in row["validation_passed"].items():
            if passed is not True:
                reasons.append(f"shape {eid}: gpu_validation of {tag} did not pass")
        if len(row["ms_a_task"]) > 1 and not row["same_draw"]:
            reasons.append(f"shape {eid}: the contenders did not all read the same bytes")
        if not row["same_config"]:
            reasons.append(f"shape {eid}: the contenders ran different configs")
    return reasons


def shape_line(eid, row):
    """One line of an entry for the index: ms a task warm (cold), the ratio, J a task."""
    def ms(x):
        return "—" if not isinstance(x, (int, float)) else (f"{x:.2f}" if x < 100 else f"{x:.0f}")
    parts = []
    for tag in ("cuda-fused", "cuda", BASELINE):
        t = row.get("ms_a_task", {}).get(tag)
        if t:
            parts.append(f"{tag} {ms(t.get('warm'))} ({ms(t.get('cold_l2'))}) ms")
    fused = (row.get("speedup_vs_" + BASELINE) or {}).get("cuda-fused") or {}
    if fused.get("warm") is not None:
        parts.append(f"cuda-fused {fused['warm']}× torch")
    e = row.get("energy_cuda_fused") or {}
    if isinstance(e.get("joules_per_task"), (int, float)):
        parts.append(f"{e['joules_per_task']:.3f} J/task")
    return f"{eid}: " + (", ".join(parts) or "nothing measured")
