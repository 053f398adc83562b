"""Same-spec PyTorch learner for revgraph, written from docs/spec.md (§2-§8).

One task = reset the model from its seed, normalise the raw train and query pixels, train
`epochs` epochs of SGD on PCG64-shuffled batches, predict the query images. The command
(tools/torch_reference.py) is
  (a) the CPU reference (Debian torch 1.13 / numpy 1.24: run it with /usr/bin/python3),
  (b) the GPU baseline revgraph's benchmark is compared against (--device cuda, eager or graph),
  (c) the maker of independent test vectors (--trace, --state, --predictions, --output).

  /usr/bin/python3 tools/torch_reference.py --input task.npz [--test-labels labels.npy] \
      [--set depth=2 --set batch_size=8 ...] [--device cpu|cuda] [--mode eager|graph] \
      [--dtype float32|float64] [--backward reconstruct|autograd] [--threads T] \
      [--repeat R --warmup W] [--output run.json] [--predictions p.npy] [--state s.npz] \
      [--trace t.npz] [--check-gradients]

Backward: `reconstruct` (default, as the published learner) is a custom autograd.Function that
keeps only the final core state and rebuilds earlier states by the inverse (docs/spec.md §4);
`autograd` is plain PyTorch autograd through the core, storing every intermediate (the
independent reference). The head and the loss always use ordinary autograd.
Graph mode (CUDA only) captures reset (+ normalisation), one epoch (reading a static permutation
buffer that each epoch's resident permutation is copied into, device to device) and predict.
Trace and vector formats: test/vectors/TORCH_VECTORS.md; tools/check_torch_trace.py re-checks a
trace with numpy alone.
Outputs (torchref/outputs.py): refused before any work when one is an input or another output or its
folder is missing; written only at the end, each whole (a temporary file renamed into place) at
exactly the name given (no .npy or .npz appended).
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch

from .checks import gradient_check
from .graphs import GraphRunner
from .inputs import load_inputs, load_test_labels
from .outputs import Outputs, check_outputs
from .spec import Fail, parse_config, sha256
from .task import Task


def describe_device(device):
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", required=True, help="npz with exactly train_images, train_labels, test_images")
    ap.add_argument("--test-labels", help="query labels (.npy) for accuracy")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config (docs/spec.md §1 names)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--mode", choices=("eager", "graph"), default="eager")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--backward", choices=("reconstruct", "autograd"), default="reconstruct")
    ap.add_argument("--threads", type=int, help="torch CPU threads (torch.set_num_threads)")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs of the complete task")
    ap.add_argument("--warmup", type=int, default=0, help="untimed runs before the timed ones")
    ap.add_argument("--output", help="metadata + timing JSON")
    ap.add_argument("--predictions", help="int64 predictions (.npy)")
    ap.add_argument("--state", help="final parameters by name and momentum as velocity.<name> (.npz)")
    ap.add_argument("--trace", help="per-step gradients, parameters, momentum (.npz; eager mode)")
    ap.add_argument("--check-gradients", action="store_true",
                    help="finite-difference/gradcheck sanity checks on the first batch (use float64)")
    ap.add_argument("--emulate-graph", action="store_true",
                    help="CPU only: run the graph-mode sequencing with Python callables instead of graphs")
    a = ap.parse_args(argv)
    try:
        return run_main(a)
    except Fail as e:
        print(f"torch_reference: error: {e}", file=sys.stderr)
        return 2


def run_main(a):
    cfg = parse_config(a.set)
    # Before any work: no output is an input or another output, each one's folder is writable.
    check_outputs([("--output", a.output), ("--predictions", a.predictions), ("--state", a.state),
                   ("--trace", a.trace)], [("--input", a.input), ("--test-labels", a.test_labels)])
    if a.repeat < 1 or a.warmup < 0:
        raise Fail("--repeat must be >= 1 and --warmup >= 0")
    if a.device == "cuda" and not torch.cuda.is_available():
        raise Fail("--device cuda: this torch has no usable CUDA device "
                   f"(torch {torch.__version__}, built with CUDA {torch.version.cuda})")
    if a.mode == "graph" and a.device != "cuda":
        raise Fail("--mode graph needs --device cuda (CUDA graphs); --emulate-graph checks the sequencing on CPU")
    if a.emulate_graph and (a.device != "cpu" or a.mode != "eager"):
        raise Fail("--emulate-graph is for --device cpu --mode eager")
    if a.trace and a.mode == "graph":
        raise Fail("--trace records after every step, which graph mode cannot do: use --mode eager")
    if a.threads is not None:
        if a.threads < 1:
            raise Fail("--threads must be >= 1")
        torch.set_num_threads(a.threads)
        try:
            torch.set_num_interop_threads(a.threads)
        except RuntimeError:
            pass
    dtype = {"float32": torch.float32, "float64": torch.float64}[a.dtype]
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if hasattr(torch, "set_float32_matmul_precision"):
            torch.set_float32_matmul_precision("highest")

    t_prep = time.perf_counter()
    inputs = load_inputs(a.input)
    test_labels = load_test_labels(a.test_labels, inputs[2].shape[0]) if a.test_labels else None
    task = Task(cfg, inputs, a.device, dtype, a.backward)
    task.reset()
    core_bytes, core_storages = task.saved_core_bytes(rows=3)
    if a.device == "cuda":
        torch.cuda.synchronize()
    runner, capture_seconds, capture_warmup_seconds = task, 0.0, 0.0
    if a.mode == "graph" or a.emulate_graph:
        runner = GraphRunner(task, warmups=2, emulate=a.emulate_graph)
        capture_seconds = runner.capture_seconds
        capture_warmup_seconds = getattr(runner, "warmup_seconds", 0.0)
    preparation_seconds = time.perf_counter() - t_prep

    gradient_report = gradient_check(task) if a.check_gradients else None

    t0 = time.perf_counter()
    for _ in range(a.warmup):
        runner.run()
    if a.device == "cuda":
        torch.cuda.synchronize()
    warmup_seconds = time.perf_counter() - t0

    times, first = [], None
    for i in range(a.repeat):
        if a.trace and i == a.repeat - 1:
            task.trace = []
        if a.device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            runner.run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            runner.run()
            times.append((time.perf_counter() - t) * 1e3)
        if i == 0:
            first = task.outputs()
    out = task.outputs()
    identical = all(np.array_equal(first[k], out[k]) for k in ("state", "scores", "predictions")) and \
        np.array_equal(np.concatenate([v.reshape(-1) for v in first["velocity"].values()]),
                       np.concatenate([v.reshape(-1) for v in out["velocity"].values()]))

    tri, trl, tei = inputs
    meta = {
        "config": cfg,
        "parameter_count": task.count,
        "train_count": task.n,
        "test_count": task.q,
        "input_hashes": {"train_images": sha256(tri), "train_labels": sha256(trl), "test_images": sha256(tei)},
        "epoch_permutation_sha256": [sha256(p) for p in task.perms_host],
        "initial_parameter_sha256": {n: sha256(p.numpy()) for n, p in zip(task.names, task.init_host)},
        "final_parameter_sha256": {n: sha256(v) for n, v in out["params"].items()},
        "final_velocity_sha256": {n: sha256(v) for n, v in out["velocity"].items()},
        "state_vector_sha256": sha256(out["state"]),
        "predictions_sha256": sha256(out["predictions"]),
        "scores_sha256": sha256(out["scores"]),
        "preparation_seconds": preparation_seconds,
        "training_prediction_seconds": statistics.median(times) / 1e3,
        "run_count": a.repeat + a.warmup,
        "retained_core_states": core_bytes / (3 * cfg["width"] * task.p.element_size()),
        "core_saved_bytes_per_example": core_bytes / 3,
        "core_saved_storages": core_storages,
        "device": describe_device(a.device),
        "backend": {("cpu", "eager"): "torch-cpu-eager", ("cuda", "eager"): "torch-cuda-eager",
                    ("cuda", "graph"): "torch-cuda-graph"}[(a.device, a.mode)]
        + ("-emulated-graph" if a.emulate_graph else ""),
        "backward": a.backward + (" (custom autograd.Function, docs/spec.md §4)" if a.backward == "reconstruct"
                                  else " (plain autograd through the core, storing)"),
        "dtype": a.dtype,
        "hash_dtype": f"parameters, momentum and scores hashed as {a.dtype}",
        "normalization": f"4*x - 0.5 in {a.dtype} (raw float32 pixels cast first), then "
                         + ("one appended 0" if cfg["width"] == 82 else f"{cfg['width'] - 81} appended zeros"),
        "task_ms": {"median": statistics.median(times), "min": min(times), "max": max(times), "runs": times},
        "timing_method": "CUDA events" if a.device == "cuda" else "time.perf_counter",
        "timing_scope": "reset (parameters, momentum), normalisation of raw train and query pixels, per-epoch "
                        "permutation copies, training, prediction; excludes loading, permutation generation, "
                        "initialisation draws, allocation, transfers, warm-up and capture",
        "capture_seconds": capture_seconds,
        "capture_warmup_seconds": capture_warmup_seconds,
        "warmup_seconds": warmup_seconds,
        "warmup_runs": a.warmup,
        "repeat_runs_byte_identical": bool(identical),
        "batch_rows": [e - s for s, e in task.batches],
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "threads": torch.get_num_threads() if a.device == "cpu" else None,
    }
    if a.device == "cuda":
        meta["cuda"] = {"torch_cuda": torch.version.cuda, "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
                        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32}
    if test_labels is not None:
        correct = int((out["predictions"] == test_labels).sum())
        meta["correct"] = correct
        meta["accuracy"] = correct / task.q
    if gradient_report is not None:
        meta["gradient_check"] = gradient_report

    # Every output at the end, each whole at exactly its name (numpy writes to the open file, so no
    # .npy or .npz is appended), all renamed into place once every one is complete.
    with Outputs() as files:
        if a.predictions:
            files.add("--predictions", a.predictions, lambda f: np.save(f, out["predictions"], allow_pickle=False))
        if a.state:
            arrays = dict(out["params"])
            arrays.update({f"velocity.{n}": v for n, v in out["velocity"].items()})
            files.add("--state", a.state, lambda f: np.savez_compressed(f, **arrays))
        if a.trace:
            tr = {
                "permutations": task.perms_host,
                "initial_params": task.init_flat.cpu().numpy(),
                "train_inputs": task.x_train.cpu().numpy(),
                "test_inputs": task.x_test.cpu().numpy(),
                "scores": out["scores"],
                "predictions": out["predictions"],
                "loss": np.array([r["loss"] for r in task.trace], dtype=np.float64),
            }
            for k, rec in enumerate(task.trace):
                for key in ("batch", "grad", "param", "velocity"):
                    tr[f"step{k}.{key}"] = rec[key]
            files.add("--trace", a.trace, lambda f: np.savez_compressed(f, **tr))
            meta["trace"] = {"steps": len(task.trace), "file": os.path.basename(a.trace)}
        text = json.dumps(meta, indent=1)
        if a.output:
            files.add("--output", a.output, lambda f: f.write((text + "\n").encode()))
    if not a.output:
        print(text)
    print(f"{meta['backend']} {a.dtype} {a.backward}: task_ms median {meta['task_ms']['median']:.3f} "
          f"(min {meta['task_ms']['min']:.3f}, {a.repeat} runs)"
          + (f", accuracy {meta['accuracy']:.4f}" if test_labels is not None else ""), file=sys.stderr)
    return 0
