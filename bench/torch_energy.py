#!/usr/bin/python3
"""Joules per task of the same-spec PyTorch learner on a GPU, measured like revgraph_bench --energy.

  /usr/bin/python3 bench/torch_energy.py --input task.npz [--mode graph|eager] [--seconds 5]
      [--min-tasks 50] [--idle-seconds 1] [--warmup 10] [--output energy.json]

Uses the reference learner's Task (and GraphRunner for --mode graph; tools/torchref/) as they are, and NVML
through ctypes (libnvidia-ml.so.1, loaded at run time): idle power (nvmlDeviceGetPowerUsage)
sampled for --idle-seconds before and after; the energy counter
(nvmlDeviceGetTotalEnergyConsumption, mJ) read before and after back-to-back tasks, each
synchronised; joules per task = (counter delta - mean idle power x duration) / tasks. Where NVML
or a CUDA device is missing, the report says "not available" and why, and the exit status is 0.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))  # the tools' packages (torchref, python_with) live there


class NvmlMissing(Exception):
    pass


class Nvml:
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

    def idle(self, seconds, interval=0.02):
        samples, t0 = [], time.perf_counter()
        while True:
            samples.append(self.power_w())
            time.sleep(interval)
            if time.perf_counter() - t0 >= seconds:
                return samples


def measure(a):
    try:
        nvml = Nvml(a.nvml_library, a.nvml_index)
    except NvmlMissing as e:
        return {"available": False, "reason": str(e)}
    from python_with import require
    require("numpy", "torch")  # after NVML: a machine without it reports so without torch
    import torch
    from torchref.graphs import GraphRunner
    from torchref.inputs import load_inputs
    from torchref.spec import parse_config
    from torchref.task import Task
    if not torch.cuda.is_available():
        return {"available": False, "reason": f"torch {torch.__version__} sees no CUDA device"}
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    task = Task(parse_config([]), load_inputs(a.input), "cuda", torch.float32, "reconstruct")
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

    before = nvml.idle(a.idle_seconds)
    e0, t0, times = nvml.energy_mj(), time.perf_counter(), []
    while len(times) < a.min_tasks or time.perf_counter() - t0 < a.seconds:
        times.append(one())
    e1, duration = nvml.energy_mj(), time.perf_counter() - t0
    after = nvml.idle(a.idle_seconds)
    idle_w = (statistics.mean(before) + statistics.mean(after)) / 2
    total = (e1 - e0) / 1e3
    net = total - idle_w * duration
    return {"available": True, "backend": f"torch-cuda-{a.mode}", "nvml_device": nvml.name, "tasks": len(times),
            "run_seconds": duration,
            "task_ms": {"median": statistics.median(times), "min": min(times), "max": max(times)},
            "idle_watts": {"before": statistics.mean(before), "after": statistics.mean(after), "used": idle_w},
            "average_watts": total / duration, "total_joules": total, "idle_joules": idle_w * duration,
            "net_joules": net, "joules_per_task": net / len(times), "gross_joules_per_task": total / len(times),
            "method": "as revgraph_bench --energy (energy counter delta minus idle power x duration)"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", required=True)
    ap.add_argument("--mode", choices=("graph", "eager"), default="graph")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--min-tasks", type=int, default=50)
    ap.add_argument("--idle-seconds", type=float, default=1.0)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--nvml-library", default="libnvidia-ml.so.1")
    ap.add_argument("--nvml-index", type=int, default=0, help="NVML device index (CUDA_VISIBLE_DEVICES is not mapped)")
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    report = measure(a)
    line = (f"energy: torch-cuda-{a.mode} on {report['nvml_device']}: {report['tasks']} tasks, "
            f"task {report['task_ms']['median']:.3f} ms median; {report['joules_per_task']:.4f} J/task net of idle "
            f"({report['gross_joules_per_task']:.4f} gross)" if report["available"]
            else f"energy: not available: {report['reason']}")
    print(line)
    if a.output:
        with open(a.output, "w") as f:
            json.dump({"energy": report}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
