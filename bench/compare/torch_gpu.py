#!/usr/bin/python3
"""The same-spec PyTorch learner on a GPU, timed and measured the way revgraph is, in ONE process:

  python3 bench/compare/torch_gpu.py --input DRAW.npz [--config FILE] [--set KEY=VALUE ...]
      [--mode graph|eager] [--warmup W]
      [--timing-runs N] [--cold-runs N] [--test-labels L.npy] [--predictions P.npy]
      [--energy [--settle-seconds 3] [--idle-seconds 10] [--seconds 20] [--idle-after-seconds 10]
                [--min-tasks 50]] [--output OUT.json]

Uses the reference learner's Task and GraphRunner (tools/torchref/) as they are, at rev88 or at the
config that --config (a JSON object of docs/spec.md §1's keys, as `revgraph run --config` reads)
and then each --set give, the last one winning: depth, width (the 81 pixels lifted to `width`
coordinates with zeros appended, docs/spec.md §2), alpha, seed, epochs, learning_rate, batch_size,
momentum, weight_decay, checked by torchref's own reader (tools/torchref/spec.py parse_config); a
bad key or value is one error line and exit 2. The report records the config it ran.
Timing (--timing-runs N): N complete tasks back to back, each between two CUDA events (task_ms),
then --cold-runs more, each after an L2 flush (a write of 2 x L2 of device memory, untimed;
task_ms_cold): the group's GPU board times both ways, and so does gpu_validation for revgraph.
The report carries the sha256 of the three input arrays as read (RESULT.json's input_hashes), so a
comparison can show both sides timed the very same bytes, and the hashes of the results.
Energy (--energy): NVML through ctypes (libnvidia-ml.so.1), by revgraph_bench --energy's protocol
(bench/harness/energy.hpp): settle with nothing running (NVML's power is a ~1 s average on Hopper), sample
idle power, read the energy counter around back-to-back tasks, settle and sample idle again
(recorded only); gross J/task = counter delta / tasks, net = (delta - idle before x duration) /
tasks; the window used is recorded. Where NVML is missing the energy part says "not available"
and why (exit 0). A bad command line is one line on stderr and exit 2; a missing CUDA device for
timing is one line and exit 1. test/tools/test_torch_gpu.py checks the arithmetic and the order
of the measurement on a made-up board.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/compare/ -> the root
sys.path.insert(0, os.path.join(ROOT, "tools"))  # the tools' packages (torchref, python_with) live there

from arguments import OneLineParser, same_file  # noqa: E402 (bench/compare/, this script's folder)

PROTOCOL = "the group's: ~20 s of tasks, ~10 s of idle each side"


class NvmlMissing(Exception):
    pass


class Nvml:
    """The board's power (W) and energy counter (mJ) through NVML, and the clock: an energy probe."""

    def __init__(self, library="libnvidia-ml.so.1", index=0):
        try:
            self.lib = ctypes.CDLL(library)
        except OSError as e:
            raise NvmlMissing(f"NVML not available: cannot load {library} ({e})") from None
        for name in ("nvmlInit_v2", "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetTotalEnergyConsumption",
                     "nvmlDeviceGetPowerUsage", "nvmlDeviceGetName", "nvmlShutdown"):
            if not hasattr(self.lib, name):
                raise NvmlMissing(f"NVML not available: {library} lacks {name}")
        self._check(self.lib.nvmlInit_v2(), "nvmlInit")
        self.device = ctypes.c_void_p()
        self._check(self.lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(self.device)),
                    f"device {index}")
        name = ctypes.create_string_buffer(96)
        self.lib.nvmlDeviceGetName(self.device, name, ctypes.c_uint(96))
        self.name = name.value.decode(errors="replace")
        self.energy_mj()  # fails here where the counter is unsupported

    @staticmethod
    def _check(r, what):
        if r != 0:
            raise NvmlMissing(f"NVML: {what} failed with status {r}")

    def energy_mj(self):
        v = ctypes.c_ulonglong()
        self._check(self.lib.nvmlDeviceGetTotalEnergyConsumption(self.device, ctypes.byref(v)), "energy counter")
        return v.value

    def power_w(self):
        v = ctypes.c_uint()
        self._check(self.lib.nvmlDeviceGetPowerUsage(self.device, ctypes.byref(v)), "power usage")
        return v.value / 1e3

    now = staticmethod(time.perf_counter)
    sleep = staticmethod(time.sleep)


def summarize(s):
    """The report from raw readings (bench/harness/energy.cpp's summarize, the same arithmetic): only the idle
    sampled BEFORE the tasks is subtracted; the idle after is recorded beside it."""
    tasks = len(s["task_seconds"])
    before, after = s["idle_before_watts"], s["idle_after_watts"]
    total = (s["energy_end_mj"] - s["energy_start_mj"]) / 1e3
    net_known = bool(before)
    idle_w = statistics.mean(before) if before else None
    idle_j = idle_w * s["run_seconds"] if net_known else None
    r = {"available": tasks > 0 and s["energy_end_mj"] >= s["energy_start_mj"], "tasks": tasks,
         "run_seconds": s["run_seconds"],
         "task_ms": ({"median": statistics.median(s["task_seconds"]) * 1e3, "min": min(s["task_seconds"]) * 1e3,
                      "max": max(s["task_seconds"]) * 1e3} if tasks else None),
         "idle_watts": {"before": idle_w, "after": statistics.mean(after) if after else None, "used": idle_w},
         "average_watts": total / s["run_seconds"] if s["run_seconds"] > 0 else None,
         "total_joules": total, "idle_joules": idle_j, "net_joules": total - idle_j if net_known else None,
         "joules_per_task": (total - idle_j) / tasks if net_known and tasks else None,
         "gross_joules_per_task": total / tasks if tasks else None,
         "window": {"tasks_seconds": s["run_seconds"], "settle_seconds_before_each_idle": s["settle_seconds"],
                    "idle_before_seconds": s["idle_before_seconds"], "idle_after_seconds": s["idle_after_seconds"],
                    "idle_samples_before": len(before), "idle_samples_after": len(after), "protocol": PROTOCOL},
         "method": "as revgraph_bench --energy: counter delta (gross) minus idle power sampled before the tasks, "
                   "after a settle, x the tasks' duration (net); idle after recorded, not subtracted"}
    if s["energy_end_mj"] < s["energy_start_mj"]:
        r["reason"] = "the energy counter went backwards (driver reloaded during the run?)"
    elif not tasks:
        r["reason"] = "no task ran between the counter's readings"
    elif not net_known:
        r["note"] = "no idle sample before the run: gross joules only"
    elif r["net_joules"] <= 0:
        r["note"] = "net energy <= 0: the run did not rise measurably above idle; use more tasks"
    return r


def sample_power(probe, seconds, interval):
    watts = []
    if seconds <= 0:
        return watts
    start = probe.now()
    while True:
        watts.append(probe.power_w())
        probe.sleep(interval)
        if probe.now() - start >= seconds:
            return watts


def measure_energy(probe, run_round, o):
    """settle -> idle before -> counter -> tasks (>= o.seconds and >= o.min_tasks) -> counter ->
    settle -> idle after; `run_round()` runs one complete task, synchronised, and returns its seconds."""
    s = {"task_seconds": []}
    t = probe.now()
    probe.sleep(o.settle_seconds)
    s["settle_seconds"] = probe.now() - t
    t = probe.now()
    s["idle_before_watts"] = sample_power(probe, o.idle_seconds, o.sample_interval)
    s["idle_before_seconds"] = probe.now() - t
    s["energy_start_mj"], start = probe.energy_mj(), probe.now()
    while len(s["task_seconds"]) < o.min_tasks or probe.now() - start < o.seconds:
        s["task_seconds"].append(run_round())
    s["energy_end_mj"], s["run_seconds"] = probe.energy_mj(), probe.now() - start
    s["idle_after_watts"], s["idle_after_seconds"] = [], 0.0
    if o.idle_after_seconds > 0:
        probe.sleep(o.settle_seconds)
        t = probe.now()
        s["idle_after_watts"] = sample_power(probe, o.idle_after_seconds, o.sample_interval)
        s["idle_after_seconds"] = probe.now() - t
    return summarize(s)


INPUT_KEYS = ("train_images", "train_labels", "test_images")


def input_hashes(inputs):
    """sha256 of each input array as the learner holds it (RESULT.json's input_hashes keys)."""
    from torchref.spec import sha256
    return {k: sha256(v) for k, v in zip(INPUT_KEYS, inputs)}


def timing_summary(ms):
    return {"median": statistics.median(ms), "min": min(ms), "max": max(ms), "runs": len(ms)}


class Fail(Exception):
    pass


def task_config(config_file, sets):
    """The learner's config: rev88's defaults, then the JSON file's keys, then each KEY=VALUE of `sets`
    (the last one winning), checked once by torchref.spec.parse_config. Raises Fail, naming the file
    or --set that was wrong."""
    from torchref.spec import CONFIG_TYPES, Fail as ConfigFail, parse_config
    pairs = []
    if config_file:
        try:
            with open(config_file) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise Fail(f"--config {config_file}: {e}") from None
        if not isinstance(doc, dict):
            raise Fail(f"--config {config_file}: expected a JSON object of config keys")
        for key, value in doc.items():
            if key not in CONFIG_TYPES:
                raise Fail(f"--config {config_file}: unknown key {key!r} (one of {', '.join(CONFIG_TYPES)})")
            kind = CONFIG_TYPES[key][0]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and
                                                                              not isinstance(value, int)):
                raise Fail(f"--config {config_file}: {key} must be {'an integer' if kind is int else 'a number'}, "
                           f"got {value!r}")
            pairs.append(f"{key}={value}")
    origin = {p.partition("=")[0]: f"--config {config_file}: " for p in pairs}
    for pair in sets or []:
        origin[pair.partition("=")[0].strip()] = ""  # parse_config's message names the --set itself
    try:
        return parse_config(pairs + list(sets or []))
    except ConfigFail as e:
        text = str(e)  # "config KEY=VALUE must be ...": the value checked once all are in; say where it came from
        key = text[len("config "):].partition("=")[0] if text.startswith("config ") else None
        where = origin.get(key, "") if key else ""
        if key and not where:
            where = f"--set {next(p for p in reversed(sets) if p.partition('=')[0].strip() == key)}: "
        raise Fail(where + text) from None


def build_task(cfg, inputs, device):
    """The same-spec learner at `cfg` on `inputs`, in float32, the backward pass reconstructing (as timed here)."""
    import torch
    from torchref.task import Task
    return Task(cfg, inputs, device, torch.float32, "reconstruct")


def run(a):
    if a.energy and not a.timing_runs:  # NVML first: a machine without it says so without torch
        try:
            Nvml(a.nvml_library, a.nvml_index)
        except NvmlMissing as err:
            return {"backend": f"torch-cuda-{a.mode}", "energy": {"available": False, "reason": str(err)}}
    from python_with import require
    require("numpy", "torch")
    import numpy as np
    import torch
    from torchref.graphs import GraphRunner
    from torchref.inputs import load_inputs, load_test_labels
    from torchref.spec import Fail as InputFail, sha256
    if not torch.cuda.is_available():
        raise Fail(f"torch {torch.__version__} sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    try:
        inputs = load_inputs(a.input)
        labels = load_test_labels(a.test_labels, inputs[2].shape[0]) if a.test_labels else None
    except InputFail as e:
        raise Fail(str(e)) from None
    task = build_task(a.cfg, inputs, "cuda")
    task.reset()
    runner = GraphRunner(task, warmups=2) if a.mode == "graph" else task
    for _ in range(a.warmup):
        runner.run()
    torch.cuda.synchronize()

    def one():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        runner.run()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    flush_bytes = 2 * l2 if l2 else 256 << 20
    flush = torch.empty(flush_bytes, dtype=torch.uint8, device="cuda") if a.cold_runs else None
    report = {"backend": f"torch-cuda-{a.mode}", "device": torch.cuda.get_device_name(0),
              "torch_version": torch.__version__, "torch_cuda": torch.version.cuda,
              "input": a.input, "input_hashes": input_hashes(inputs), "config": a.cfg}
    if a.timing_runs:
        warm = [one() for _ in range(a.timing_runs)]
        first = task.outputs()
        cold = []
        for i in range(a.cold_runs):
            flush.fill_((i + 1) % 256)  # a different byte each time, untimed
            torch.cuda.synchronize()
            cold.append(one())
        out = task.outputs()
        same = all(np.array_equal(first[k], out[k]) for k in ("state", "scores", "predictions"))
        report["timing"] = {"task_ms": timing_summary(warm), "task_ms_cold": timing_summary(cold) if cold else None,
                            "method": "CUDA events around each complete task; cold: after an L2 flush",
                            "l2_flush": f"fill_ of {flush_bytes >> 20} MiB ({'2 x L2' if l2 else 'L2 size unknown'})"
                                        " before each cold task, untimed" if cold else None,
                            "warmup_runs": a.warmup}
        report["repeat_runs_byte_identical"] = bool(same)
        report["state_vector_sha256"] = sha256(out["state"])
        report["predictions_sha256"] = sha256(out["predictions"])
        report["scores_sha256"] = sha256(out["scores"])
        if labels is not None:
            report["accuracy"] = float((out["predictions"] == labels).mean())
        if a.predictions:
            np.save(a.predictions, out["predictions"])
    del flush
    if a.energy:
        try:
            probe = Nvml(a.nvml_library, a.nvml_index)
            torch.cuda.synchronize()
            e = measure_energy(probe, lambda: one() / 1e3, a)
            e["nvml_device"], e["backend"] = probe.name, report["backend"]
        except NvmlMissing as err:
            e = {"available": False, "reason": str(err)}
        report["energy"] = e
    return report


def parse(argv):
    ap = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, name="torch_gpu")
    ap.add_argument("--input", required=True)
    ap.add_argument("--config", help="a JSON object of config keys (docs/spec.md §1), as revgraph run --config")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="after --config; the last wins")
    ap.add_argument("--mode", choices=("graph", "eager"), default="graph")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--timing-runs", type=int, default=0, help="complete tasks timed back to back")
    ap.add_argument("--cold-runs", type=int, default=0, help="then this many, each after an L2 flush")
    ap.add_argument("--test-labels")
    ap.add_argument("--predictions")
    ap.add_argument("--energy", action="store_true")
    ap.add_argument("--settle-seconds", type=float, default=3.0)
    ap.add_argument("--idle-seconds", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=20.0, help="minimum seconds of tasks for --energy")
    ap.add_argument("--idle-after-seconds", type=float, default=10.0)
    ap.add_argument("--min-tasks", type=int, default=50)
    ap.add_argument("--sample-interval", type=float, default=0.02)
    ap.add_argument("--nvml-library", default="libnvidia-ml.so.1")
    ap.add_argument("--nvml-index", type=int, default=0, help="NVML device index (CUDA_VISIBLE_DEVICES is not mapped)")
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    for name in ("warmup", "timing_runs", "cold_runs", "settle_seconds", "idle_seconds", "seconds",
                 "idle_after_seconds"):
        if getattr(a, name) < 0:
            ap.error(f"--{name.replace('_', '-')} must be >= 0")
    if a.min_tasks < 1 or a.sample_interval <= 0:
        ap.error("--min-tasks must be >= 1 and --sample-interval > 0")
    if a.cold_runs and not a.timing_runs:
        ap.error("--cold-runs needs --timing-runs")
    if not (a.timing_runs or a.energy):
        ap.error("nothing to do: give --timing-runs N and/or --energy")
    try:
        a.cfg = task_config(a.config, a.set)
    except Fail as e:
        ap.error(str(e))
    if a.output:  # never over an input, nor a hard or symbolic link to one
        for option, path in (("--input", a.input), ("--config", a.config)):
            if path and same_file(path, a.output):
                ap.error(f"--output {a.output} is {option}: an output never replaces an input")
    return a


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    if a.output and not os.path.isdir(os.path.dirname(os.path.abspath(a.output))):  # before any GPU work
        print(f"torch_gpu: error: --output {a.output}: its folder does not exist", file=sys.stderr)
        return 1
    try:
        report = run(a)
    except Fail as e:
        print(f"torch_gpu: error: {e}", file=sys.stderr)
        return 1
    t, e = report.get("timing"), report.get("energy")
    if t:
        cold = f", cold L2 {t['task_ms_cold']['median']:.3f}" if t["task_ms_cold"] else ""
        print(f"{report['backend']}: task_ms median {t['task_ms']['median']:.3f}{cold} ({t['task_ms']['runs']} runs)")
    if e is not None:
        print(f"energy: {report['backend']}: {e['joules_per_task']} J/task net, {e['gross_joules_per_task']} gross, "
              f"window {e['window']}" if e.get("available") else f"energy: not available: {e.get('reason')}")
    if a.output:  # whole or not at all: a temporary beside it, renamed over it
        tmp = f"{a.output}.tmp-{os.getpid()}"
        try:
            with open(tmp, "w") as f:
                json.dump(report, f, indent=1)
                f.write("\n")
            os.replace(tmp, a.output)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
