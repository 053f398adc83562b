#!/usr/bin/env python3
"""An exported entry run by CUDA on a GPU, hash for hash with revgraph: for each band of
bench/race.json (and rev88), the entry's predictions on a draw — first call (compile and capture),
and a replay after the inputs' contents were replaced — equal `revgraph run --backend cpu-reference`
on the same arrays and config (the float32 trainer's bits, which cuda-fused gives too), and equal
cuda-fused's where this build's cuda-fused runs the width.

  python3 test/export/test_export_gpu.py SOURCE_ROOT BUILD_ROOT

Needs a CUDA device, PyTorch with CUDA and cuda-python's cuda.bindings (the challenge's image has
them); exit 77 (SKIP) with the reason where any is missing.
"""
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build")
REVGRAPH = os.path.join(BUILD, "tools", "revgraph")


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def run(*args):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(map(str, args))}: {p.stderr.strip()[-2000:]}")
    return p


def main():
    try:
        import numpy as np
        import torch
    except ImportError as e:
        skip(f"{e}")
    if not torch.cuda.is_available():
        skip("no CUDA device for PyTorch")
    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.bindings") is None:
        skip("cuda-python's cuda.bindings is not installed")
    bands_file = os.path.join(ROOT, "bench", "race.json")
    if not os.path.exists(bands_file):
        bands_file = os.path.join(ROOT, "bench", "frontier", "frontier.json")
    with open(bands_file) as f:
        bands = [b["band"] for b in json.load(f)["bands"] if b["band"] in ("12", "8", "5", "3", "2")]
    fused = json.loads(run(REVGRAPH, "backends", "--json").stdout)
    fused_usable = any(b["requested"] == "cuda-fused" and b["usable"] for b in fused["backends"])
    failures = 0
    with tempfile.TemporaryDirectory(prefix="export-gpu.") as tmp:
        draw, labels = os.path.join(tmp, "draw.npz"), os.path.join(tmp, "labels.npy")
        run(sys.executable, os.path.join(ROOT, "tools", "make_synthetic.py"), "--train", 3000, "--query", 2000,
            "--seed", 2026120501, "--output", draw, "--labels-output", labels)
        d = np.load(draw)
        # The warm-up's contents: other images of the same shapes (the judge warms up on a foreign draw).
        other = dict(d)
        other["train_images"] = np.random.default_rng(7).random(d["train_images"].shape, dtype=np.float32)
        warm = os.path.join(tmp, "warm.npz")
        np.savez(warm, train_images=other["train_images"], train_labels=d["train_labels"], test_images=d["test_images"])
        for name, args in [(b, ["--from", bands_file, "--band", b]) for b in bands] + [("rev88", ["--band", "12"])]:
            entry_path = os.path.join(tmp, f"entry_{name}.py")
            run(REVGRAPH, "export", *args, "--output", entry_path, "--quiet")
            spec = importlib.util.spec_from_file_location(f"entry_{name}", entry_path)
            entry = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(entry)
            sets = [x for k, v in entry.CONFIG.items() for x in ("--set", f"{k}={v}")]
            tensors = [torch.from_numpy(np.ascontiguousarray(other[k])).cuda()
                       for k in ("train_images", "train_labels", "test_images")]
            # The first call (compile, capture, replay) on the warm-up's contents, then the draw staged
            # into the same tensors and a replay: both against revgraph on the same arrays.
            calls = []
            for arrays, source in ((other, warm), (d, draw)):
                for t, k in zip(tensors, ("train_images", "train_labels", "test_images")):
                    t.copy_(torch.from_numpy(np.ascontiguousarray(arrays[k])))
                torch.cuda.synchronize()
                calls.append((source, entry.custom_kernel(tuple(tensors)).cpu().numpy().astype(np.int64)))
            for (source, got), call in zip(calls, ("first call", "replay")):
                for backend in ["cpu-reference"] + (["cuda-fused"] if fused_usable else []):
                    out = os.path.join(tmp, f"{name}-{backend}-{call[0]}.json")
                    p = subprocess.run([REVGRAPH, "run", "--input", source, "--backend", backend, *sets, "--quiet",
                                        "--output", out], capture_output=True, text=True)
                    if p.returncode != 0:
                        if backend == "cuda-fused" and "runs width" in p.stderr:  # a width cuda-fused runs not yet
                            print(f"{name} {call} vs {backend}: not compared ({p.stderr.strip()})")
                            continue
                        print(f"{name} {call} vs {backend}: FAIL, revgraph run failed: {p.stderr.strip()}")
                        failures += 1
                        continue
                    want = np.load(out[:-len(".json")] + ".predictions.npy")
                    with open(out) as f:
                        meta = json.load(f)
                    same = np.array_equal(got, want) and hashlib.sha256(got.tobytes()).hexdigest() == meta["predictions_sha256"]
                    print(f"{name} {call} vs {backend}: {'equal' if same else 'DIFFERENT'} "
                          f"({int((got == want).sum())} of {len(want)} predictions equal)")
                    failures += not same
    if failures:
        print(f"FAIL: {failures} comparisons differ")
        return 1
    print("OK: every entry predicts what revgraph predicts, hash for hash")
    return 0


if __name__ == "__main__":
    sys.exit(main())
