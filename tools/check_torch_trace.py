#!/usr/bin/python3
"""Check a trace written by tools/torch_reference.py --trace with numpy alone (no torch):
permutations (PCG64), batch slices, the normalised lift, every step's gradient against central
finite differences of a numpy forward (float64), the SGD recurrence between steps, and the final
scores and predictions. Prints a JSON report; exit status 1 when a check fails; 2, with one line,
when an option or file is not usable (a --trace that is not tools/torch_reference.py's for this
--input and --set, a --fd-step that is not a finite number > 0).

  /usr/bin/python3 tools/check_torch_trace.py --input test/vectors/synthetic_19x7.npz \
      --trace test/vectors/torch_trace_d2_s781_f64.npz --set depth=2 --set seed=781 --set batch_size=8
"""
import argparse
import json
import math
import sys

from python_with import require

require("numpy")

import numpy as np  # noqa: E402

# The spec's sizes, config and permutations from the reference learner's numpy-only part (no torch).
from torchref.inputs import load_inputs, read_npz  # noqa: E402
from torchref.spec import CLASSES, Fail, epoch_permutations, param_shapes, parse_config  # noqa: E402

TRACE_KEYS = ("permutations", "initial_params", "train_inputs", "test_inputs", "scores", "predictions")
STEP_KEYS = ("batch", "grad", "param", "velocity")


def unflatten(flat, depth, width):
    """The state vector's parameters in name order: 2*depth branch weights, the head's weight and bias."""
    out, o = [], 0
    for shape in param_shapes(depth, width):
        size = int(np.prod(shape))
        out.append(flat[o:o + size].reshape(shape))
        o += size
    return out[:-2], out[-2], out[-1]


def scores(flat, x, depth, alpha):
    ws, hw, hb = unflatten(flat, depth, x.shape[1])
    half = x.shape[1] // 2
    l, r = x[:, :half], x[:, half:]
    for k in range(depth):
        l = l + alpha * (np.maximum(r, 0) @ ws[2 * k].T)
        r = r + alpha * (np.maximum(l, 0) @ ws[2 * k + 1].T)
    return np.concatenate([l, r], 1) @ hw.T + hb


def loss(flat, x, y, depth, alpha):
    s = scores(flat, x, depth, alpha)
    m = s.max(1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(s - m).sum(1))
    return float(np.mean(lse - s[np.arange(len(y)), y]))


def load_trace(path, cfg, n, q):
    """The trace's arrays and its step count, after checking that they are a --trace of
    tools/torch_reference.py for this config (parameter count, width) and input (n, q): the checks
    below then compare values, never fail on a shape."""
    tr = read_npz(path)
    what = f"{path}: not a --trace of tools/torch_reference.py"
    steps = len([k for k in tr if k.startswith("step") and k.endswith(".grad")])
    missing = [k for k in TRACE_KEYS if k not in tr] + \
        [f"step{k}.{key}" for k in range(steps) for key in STEP_KEYS if f"step{k}.{key}" not in tr]
    if missing:
        more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
        raise Fail(f"{what}: missing {', '.join(missing[:4])}{more}")
    if steps == 0:
        raise Fail(f"{what}: no step0.grad (no training step recorded)")
    count, width = sum(int(np.prod(s)) for s in param_shapes(cfg["depth"], cfg["width"])), cfg["width"]
    init = tr["initial_params"]
    if init.dtype not in (np.float32, np.float64) or init.shape != (count,):
        raise Fail(f"{path}: initial_params is {init.shape} {init.dtype}; depth={cfg['depth']} width={width} has "
                   f"({count},) float32 or float64 parameters: was the trace made with other --set values?")
    for key, shape in (("train_inputs", (n, width)), ("test_inputs", (q, width)), ("scores", (q, CLASSES)),
                       ("predictions", (q,))):
        if tr[key].shape != shape:
            raise Fail(f"{path}: {key} is {tr[key].shape}, expected {shape} for this --input and width={width}: "
                       "was the trace made from another input or config?")
    for k in range(steps):
        b = tr[f"step{k}.batch"]
        if b.ndim != 1 or b.size == 0 or b.dtype.kind not in "iu" or b.min() < 0 or b.max() >= n:
            raise Fail(f"{path}: step{k}.batch must be a non-empty list of training rows in 0..{n - 1}")
        for key in ("grad", "param", "velocity"):
            if tr[f"step{k}.{key}"].shape != (count,):
                raise Fail(f"{path}: step{k}.{key} is {tr[f'step{k}.{key}'].shape}, expected ({count},)")
    return tr, steps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--fd-step", type=float, default=1e-6, help="central difference step, a finite number > 0")
    a = ap.parse_args(argv)
    try:
        cfg = parse_config(a.set)
        if not (math.isfinite(a.fd_step) and a.fd_step > 0):
            raise Fail(f"--fd-step {a.fd_step}: must be a finite number > 0")
        tri, trl, tei = load_inputs(a.input)
        tr, steps = load_trace(a.trace, cfg, tri.shape[0], tei.shape[0])
    except Fail as e:
        print(f"check_torch_trace: error: {e}", file=sys.stderr)
        return 2
    d, alpha = cfg["depth"], cfg["alpha"]
    inp = {"train_images": tri, "train_labels": trl, "test_images": tei}
    n = inp["train_images"].shape[0]
    rep, ok = {"config": cfg}, True

    perms = epoch_permutations(cfg["seed"], n, cfg["epochs"])
    rep["permutations_equal"] = bool(np.array_equal(perms, tr["permutations"]))
    dt = tr["initial_params"].dtype
    lift = lambda im: np.pad(im.reshape(len(im), 81).astype(dt) * dt.type(4) - dt.type(0.5),
                             ((0, 0), (0, cfg["width"] - 81)))
    rep["train_inputs_equal"] = bool(np.array_equal(lift(inp["train_images"]), tr["train_inputs"]))
    rep["test_inputs_equal"] = bool(np.array_equal(lift(inp["test_images"]), tr["test_inputs"]))
    ok &= rep["permutations_equal"] and rep["train_inputs_equal"] and rep["test_inputs_equal"]

    x = tr["train_inputs"].astype(np.float64)
    y = inp["train_labels"]
    bs = cfg["batch_size"]
    expected_batches = [perms[e][s:s + bs] for e in range(cfg["epochs"]) for s in range(0, n, bs)]
    rep["steps"] = steps
    rep["batches_equal"] = steps == len(expected_batches) and all(
        np.array_equal(tr[f"step{k}.batch"], b) for k, b in enumerate(expected_batches))
    ok &= rep["batches_equal"]

    p_prev = tr["initial_params"].astype(np.float64)
    v_prev = np.zeros_like(p_prev)
    fd_err, fd_rel, sgd_v, sgd_p = [], [], [], []
    h = a.fd_step
    for k in range(steps):
        idx = tr[f"step{k}.batch"]
        g = tr[f"step{k}.grad"].astype(np.float64)
        xb, yb = x[idx], y[idx]
        fd = np.empty_like(p_prev)
        q = p_prev.copy()
        for i in range(q.size):
            o = q[i]
            q[i] = o + h
            lp = loss(q, xb, yb, d, alpha)
            q[i] = o - h
            lm = loss(q, xb, yb, d, alpha)
            q[i] = o
            fd[i] = (lp - lm) / (2 * h)
        fd_err.append(float(np.abs(fd - g).max()))
        big = np.abs(g) > 1e-4
        fd_rel.append(float((np.abs(fd - g)[big] / np.abs(g[big])).max()) if big.any() else 0.0)
        v = tr[f"step{k}.velocity"].astype(np.float64)
        p = tr[f"step{k}.param"].astype(np.float64)
        sgd_v.append(float(np.abs(v - (cfg["momentum"] * v_prev + g + cfg["weight_decay"] * p_prev)).max()))
        sgd_p.append(float(np.abs(p - (p_prev - cfg["learning_rate"] * v)).max()))
        p_prev, v_prev = p, v
    rep["finite_difference"] = {"step": h, "max_abs_error_per_step": fd_err,
                                "max_rel_error_per_step_where_abs_grad_gt_1e-4": fd_rel}
    rep["sgd_recurrence_max_abs"] = {"velocity": max(sgd_v), "param": max(sgd_p)}
    sc = scores(p_prev, tr["test_inputs"].astype(np.float64), d, alpha)
    rep["scores_max_abs_vs_numpy_forward"] = float(np.abs(sc - tr["scores"]).max())
    rep["predictions_equal_numpy_argmax"] = bool(np.array_equal(np.argmax(tr["scores"], 1), tr["predictions"]))
    f64 = dt == np.float64
    tol_fd, tol_rec, tol_sc = (1e-8, 1e-15, 1e-12) if f64 else (2e-5, 2e-7, 2e-5)
    ok &= max(fd_err) < tol_fd and max(sgd_v) < tol_rec * 10 and max(sgd_p) < tol_rec
    ok &= rep["scores_max_abs_vs_numpy_forward"] < tol_sc and rep["predictions_equal_numpy_argmax"]
    rep["tolerances"] = {"finite_difference_abs": tol_fd, "sgd_param_abs": tol_rec, "sgd_velocity_abs": tol_rec * 10,
                         "scores_abs": tol_sc}
    rep["passed"] = bool(ok)
    json.dump(rep, sys.stdout, indent=1)
    print()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
