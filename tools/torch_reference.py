#!/usr/bin/python3
"""Same-spec PyTorch learner for revgraph, written from docs/spec.md (§2-§8).

One task = reset the model from its seed, normalise the raw train and query pixels, train
`epochs` epochs of SGD on PCG64-shuffled batches, predict the query images. This script is
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
"""
import os

# The published learner configured cuBLAS's workspace before CUDA initialisation (seed report,
# "workspace": ":16:8"); it must be in the environment before torch touches the GPU.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":16:8")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_with import require  # noqa: E402

require("numpy", "torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

PIXELS, FEATURES, HALF, CLASSES = 81, 82, 41, 10
CONFIG_TYPES = {  # docs/spec.md §1 names and order, rev88 defaults
    "depth": (int, 2), "alpha": (float, 0.5), "seed": (int, 11), "epochs": (int, 2),
    "learning_rate": (float, 0.1), "batch_size": (int, 128), "momentum": (float, 0.9),
    "weight_decay": (float, 0.0),
}
INPUT_KEYS = ("train_images", "train_labels", "test_images")


class Fail(Exception):
    """A one-line error for the user."""


# ----------------------------------------------------------------------------- configuration
def parse_config(pairs):
    cfg = {k: v for k, (_, v) in CONFIG_TYPES.items()}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or key not in CONFIG_TYPES:
            raise Fail(f"--set {pair!r}: expected key=value with key one of {', '.join(CONFIG_TYPES)}")
        kind = CONFIG_TYPES[key][0]
        try:
            cfg[key] = kind(text) if kind is float else int(text, 10)
        except ValueError:
            raise Fail(f"--set {key}: {text!r} is not a valid {kind.__name__}") from None
    checks = [
        ("depth", cfg["depth"] >= 1, "must be >= 1"),
        ("alpha", math.isfinite(cfg["alpha"]), "must be finite"),
        ("seed", 0 <= cfg["seed"] < 2**64, "must be in [0, 2^64)"),
        ("epochs", cfg["epochs"] >= 1, "must be >= 1"),
        ("learning_rate", math.isfinite(cfg["learning_rate"]) and cfg["learning_rate"] >= 0, "must be >= 0"),
        ("batch_size", cfg["batch_size"] >= 1, "must be >= 1"),
        ("momentum", math.isfinite(cfg["momentum"]) and cfg["momentum"] >= 0, "must be >= 0"),
        ("weight_decay", math.isfinite(cfg["weight_decay"]) and cfg["weight_decay"] >= 0, "must be >= 0"),
    ]
    for key, ok, why in checks:
        if not ok:
            raise Fail(f"config {key}={cfg[key]!r} {why}")
    return cfg


def param_names(depth):
    return [f"weights.{i}" for i in range(2 * depth)] + ["head.weight", "head.bias"]


def param_shapes(depth):
    return [(HALF, HALF)] * (2 * depth) + [(CLASSES, FEATURES), (CLASSES,)]


def sha256(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


# ----------------------------------------------------------------------------- inputs
def load_inputs(path):
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = set(z.files)
            if keys != set(INPUT_KEYS):
                extra, missing = sorted(keys - set(INPUT_KEYS)), sorted(set(INPUT_KEYS) - keys)
                raise Fail(f"{path}: must hold exactly {', '.join(INPUT_KEYS)}"
                           + (f"; extra arrays {extra} rejected (no query labels may reach the learner)" if extra else "")
                           + (f"; missing {missing}" if missing else ""))
            arrays = {k: np.ascontiguousarray(z[k]) for k in INPUT_KEYS}
    except (OSError, ValueError) as e:
        raise Fail(f"{path}: cannot read npz: {e}") from None
    tri, trl, tei = (arrays[k] for k in INPUT_KEYS)
    for name, a in (("train_images", tri), ("test_images", tei)):
        if a.dtype != np.float32 or a.ndim != 4 or a.shape[1:] != (1, 9, 9) or a.shape[0] < 1:
            raise Fail(f"{name}: expected (n,1,9,9) float32 with n >= 1, got {a.shape} {a.dtype}")
        if not np.all((a >= 0) & (a <= 1)):
            raise Fail(f"{name}: pixels must be in [0,1]")
    if trl.dtype != np.int64 or trl.shape != (tri.shape[0],):
        raise Fail(f"train_labels: expected ({tri.shape[0]},) int64, got {trl.shape} {trl.dtype}")
    if trl.min() < 0 or trl.max() >= CLASSES:
        raise Fail("train_labels: must be in 0..9")
    return tri, trl, tei


def load_test_labels(path, q):
    lab = np.load(path, allow_pickle=False)
    if lab.shape != (q,) or lab.dtype.kind not in "iu":
        raise Fail(f"{path}: expected ({q},) integer labels, got {lab.shape} {lab.dtype}")
    return lab.astype(np.int64)


# ----------------------------------------------------------------------------- seeds (docs/spec.md §6)
def initial_parameters(seed, depth):
    """float32 CPU tensors in name order: torch.manual_seed, normal_ per branch, default Linear."""
    torch.manual_seed(seed)
    std = 0.05 / math.sqrt(HALF)
    branches = [torch.empty(HALF, HALF, dtype=torch.float32).normal_(0.0, std) for _ in range(2 * depth)]
    head = torch.nn.Linear(FEATURES, CLASSES)  # default init: weight, then bias
    return branches + [head.weight.detach().clone(), head.bias.detach().clone()]


def epoch_permutations(seed, n, epochs):
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.stack([rng.permutation(n).astype(np.int64) for _ in range(epochs)])


# ----------------------------------------------------------------------------- model (docs/spec.md §3, §4)
def core_forward(left, right, ws, alpha):
    """left += a*linear(relu(right), W2k); right += a*linear(relu(left), W2k+1), k = 0..D-1.
    addmm(C, A, Wᵀ, alpha=a) = C + a·(A Wᵀ): one BLAS call per branch, out of place."""
    for k in range(len(ws) // 2):
        left = torch.addmm(left, F.relu(right), ws[2 * k].t(), alpha=alpha)
        right = torch.addmm(right, F.relu(left), ws[2 * k + 1].t(), alpha=alpha)
    return left, right


def core_inverse(left, right, ws, alpha):
    for k in reversed(range(len(ws) // 2)):
        right = torch.addmm(right, F.relu(left), ws[2 * k + 1].t(), alpha=-alpha)
        left = torch.addmm(left, F.relu(right), ws[2 * k].t(), alpha=-alpha)
    return left, right


class ReversibleCore(torch.autograd.Function):
    """Core whose backward rebuilds earlier states by the inverse (docs/spec.md §4): it saves one
    B x 82 state (its output) plus references to the 2D branch weights, whatever the depth."""

    @staticmethod
    def forward(ctx, x, alpha, *ws):
        left, right = core_forward(x[:, :HALF], x[:, HALF:], ws, alpha)
        z = torch.cat((left, right), 1)
        ctx.alpha = alpha
        ctx.save_for_backward(z, *ws)
        return z

    @staticmethod
    def backward(ctx, gz):
        z, *ws = ctx.saved_tensors
        alpha = ctx.alpha
        l, r = z[:, :HALF], z[:, HALF:]
        dl, dr = gz[:, :HALF], gz[:, HALF:]
        dws = [None] * len(ws)
        for k in reversed(range(len(ws) // 2)):
            wf, wg = ws[2 * k], ws[2 * k + 1]
            # G branch: rebuild r before block k's G, then its gradients.
            a = F.relu(l)
            r = torch.addmm(r, a, wg.t(), alpha=-alpha)
            dws[2 * k + 1] = torch.mm(dr.t(), a).mul_(alpha)
            dl = torch.add(dl, torch.mm(dr, wg).masked_fill_(l <= 0, 0.0), alpha=alpha)
            # F branch: its gradients, then rebuild l before block k's F. In block 0 the rebuilt
            # input and its gradient only matter for an input gradient (unused in training).
            a = F.relu(r)
            dws[2 * k] = torch.mm(dl.t(), a).mul_(alpha)
            if k > 0 or ctx.needs_input_grad[0]:
                l = torch.addmm(l, a, wf.t(), alpha=-alpha)
                dr = torch.add(dr, torch.mm(dl, wf).masked_fill_(r <= 0, 0.0), alpha=alpha)
        dx = torch.cat((dl, dr), 1) if ctx.needs_input_grad[0] else None
        return (dx, None, *dws)


def core(x, ws, alpha, backward):
    if backward == "reconstruct" and torch.is_grad_enabled():
        return ReversibleCore.apply(x, alpha, *ws)
    left, right = core_forward(x[:, :HALF], x[:, HALF:], ws, alpha)
    return torch.cat((left, right), 1)


def scores_of(x, params, alpha, backward):
    ws, hw, hb = params[:-2], params[-2], params[-1]
    return F.linear(core(x, ws, alpha, backward), hw, hb)


# ----------------------------------------------------------------------------- the task
class Task:
    """Everything that allocates happens here; run() only resets, copies and computes on static
    buffers (so that the same methods can be captured as CUDA graphs, docs/spec.md §8)."""

    def __init__(self, cfg, inputs, device, dtype, backward):
        tri, trl, tei = inputs
        self.cfg, self.device, self.dtype, self.backward = cfg, device, dtype, backward
        self.n, self.q = tri.shape[0], tei.shape[0]
        self.depth = cfg["depth"]
        self.names, self.shapes = param_names(self.depth), param_shapes(self.depth)
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.count = sum(self.sizes)

        self.perms_host = epoch_permutations(cfg["seed"], self.n, cfg["epochs"])
        self.init_host = initial_parameters(cfg["seed"], self.depth)  # float32, CPU
        init_flat = torch.cat([p.reshape(-1) for p in self.init_host]).to(dtype)

        dev = torch.device(device)
        self.raw_train = torch.from_numpy(tri).to(dev).view(self.n, PIXELS)
        self.raw_test = torch.from_numpy(tei).to(dev).view(self.q, PIXELS)
        self.labels = torch.from_numpy(trl).to(dev)
        self.perms = torch.from_numpy(self.perms_host).to(dev)  # resident (E, N)
        self.init_flat = init_flat.to(dev)
        self.perm_buf = torch.empty(self.n, dtype=torch.int64, device=dev)  # what epoch() reads
        self.x_train = torch.empty(self.n, FEATURES, dtype=dtype, device=dev)
        self.x_test = torch.empty(self.q, FEATURES, dtype=dtype, device=dev)
        self.p = torch.empty(self.count, dtype=dtype, device=dev)   # parameters, name order
        self.g = torch.empty(self.count, dtype=dtype, device=dev)   # gradients
        self.v = torch.empty(self.count, dtype=dtype, device=dev)   # momentum
        self.scores = torch.empty(self.q, CLASSES, dtype=dtype, device=dev)
        self.predictions = torch.empty(self.q, dtype=torch.int64, device=dev)
        offsets = np.cumsum([0] + self.sizes)
        self.params = [self.p[offsets[i]:offsets[i + 1]].view(s).requires_grad_(True)
                       for i, s in enumerate(self.shapes)]
        self.batches = [(s, min(s + cfg["batch_size"], self.n)) for s in range(0, self.n, cfg["batch_size"])]
        self.trace = None  # list of per-step records when tracing

    # -- the timed pieces ------------------------------------------------------------------
    @torch.no_grad()
    def reset(self):
        """Fresh parameters and momentum from the seed; normalise raw pixels (docs/spec.md §2)."""
        self.p.copy_(self.init_flat)
        self.v.zero_()
        for raw, x in ((self.raw_train, self.x_train), (self.raw_test, self.x_test)):
            pix = x[:, :PIXELS]
            pix.copy_(raw)
            pix.mul_(4.0).sub_(0.5)   # multiply by 4, then subtract 0.5 (in self.dtype)
            x[:, PIXELS].zero_()      # the appended zero

    def set_epoch(self, e):
        self.perm_buf.copy_(self.perms[e])  # device-to-device on GPU

    def epoch(self):
        for s, e in self.batches:
            self.step(s, e)

    def step(self, s, e):
        idx = self.perm_buf[s:e]
        xb = self.x_train.index_select(0, idx)
        yb = self.labels.index_select(0, idx)
        with torch.enable_grad():
            loss = F.cross_entropy(scores_of(xb, self.params, self.cfg["alpha"], self.backward), yb)
            grads = torch.autograd.grad(loss, self.params)
        with torch.no_grad():
            torch.cat([g.reshape(-1) for g in grads], out=self.g)
            self.sgd()
        if self.trace is not None:
            self.trace.append({"batch": idx.cpu().numpy().copy(), "loss": float(loss),
                               "grad": self.g.cpu().numpy().copy(), "param": self.p.cpu().numpy().copy(),
                               "velocity": self.v.cpu().numpy().copy()})

    def sgd(self):
        """torch.optim.SGD's step (dampening 0, no Nesterov), on the flat buffers, op for op:
        d = g + wd*p; v = momentum*v + d (v starts at 0); p = p - lr*v."""
        c = self.cfg
        d = self.g.add(self.p, alpha=c["weight_decay"]) if c["weight_decay"] != 0 else self.g
        if c["momentum"] != 0:
            self.v.mul_(c["momentum"]).add_(d)
            self.p.add_(self.v, alpha=-c["learning_rate"])
        else:
            self.v.copy_(d)  # torch keeps no buffer; v reported as the last step's d
            self.p.add_(d, alpha=-c["learning_rate"])

    @torch.no_grad()
    def predict(self):
        sc = scores_of(self.x_test, self.params, self.cfg["alpha"], self.backward)
        self.scores.copy_(sc)
        self.predictions.copy_(torch.argmax(sc, dim=1))  # first index of the maximum

    def run(self):
        """The complete task (what is timed)."""
        self.reset()
        for e in range(self.cfg["epochs"]):
            self.set_epoch(e)
            self.epoch()
        self.predict()

    # -- results ---------------------------------------------------------------------------
    def outputs(self):
        def split(flat):
            out, o = {}, 0
            for name, shape, size in zip(self.names, self.shapes, self.sizes):
                out[name] = flat[o:o + size].reshape(shape)
                o += size
            return out
        p = self.p.detach().cpu().numpy().copy()
        v = self.v.detach().cpu().numpy().copy()
        return {"params": split(p), "velocity": split(v), "state": p,
                "scores": self.scores.cpu().numpy().copy(), "predictions": self.predictions.cpu().numpy().copy()}

    def saved_core_bytes(self, rows=3):
        """Bytes the core keeps for backward on a batch of `rows`, counted from the real saved
        tensors (unique storages, parameters excluded). Diagnostic, not timed."""
        seen = {}
        pptr = self.p.untyped_storage().data_ptr() if hasattr(self.p, "untyped_storage") else self.p.storage().data_ptr()

        def pack(t):
            st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
            if st.data_ptr() != pptr:
                seen[st.data_ptr()] = st.nbytes() if hasattr(st, "nbytes") else st.size() * t.element_size()
            return t
        x = self.x_train[:rows].clone()
        with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            z = core(x, self.params[:-2], self.cfg["alpha"], self.backward)
        del z
        return sum(seen.values()), len(seen)


# ----------------------------------------------------------------------------- CUDA graphs
class GraphRunner:
    """reset, one epoch (reading perm_buf) and predict, each captured once as a CUDA graph.
    run(): replay reset; per epoch copy the resident permutation into perm_buf (device to
    device) and replay the epoch graph; replay predict. Warm-up runs on a side stream first.
    With emulate=True (CPU only, for checking the sequencing), "capture" records the Python
    callable and "replay" calls it."""

    def __init__(self, task, warmups=2, emulate=False):
        """warmups: eager runs of the whole task on a side stream before capture."""
        self.task, self.emulate = task, emulate
        t0 = time.perf_counter()
        if emulate:
            self.graphs = {"reset": task.reset, "epoch": task.epoch, "predict": task.predict}
            self.capture_seconds = 0.0
            return
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmups):
                task.run()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.warmup_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.graphs = {}  # each graph keeps its own private memory pool
        task.set_epoch(0)  # perm_buf holds a valid permutation while capturing
        for name, fn in (("reset", task.reset), ("epoch", task.epoch), ("predict", task.predict)):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn()
            self.graphs[name] = g
        torch.cuda.synchronize()
        self.capture_seconds = time.perf_counter() - t0

    def _replay(self, name):
        g = self.graphs[name]
        g() if self.emulate else g.replay()

    def run(self):
        self._replay("reset")
        for e in range(self.task.cfg["epochs"]):
            self.task.set_epoch(e)
            self._replay("epoch")
        self._replay("predict")


# ----------------------------------------------------------------------------- checks
def gradient_check(task):
    """On the first batch of epoch 0 at the initial parameters: reconstructing vs storing
    backward, central finite differences of the loss for every parameter, torch gradcheck of
    the reconstructing core (input and weights), inverse(core(x)) vs x, and our flat SGD vs
    torch.optim.SGD. Meaningful in float64."""
    task.reset()
    task.set_epoch(0)
    s, e = task.batches[0]
    idx = task.perm_buf[s:e]
    xb = task.x_train.index_select(0, idx)
    yb = task.labels.index_select(0, idx)
    alpha = task.cfg["alpha"]
    params = [p.detach().clone().requires_grad_(True) for p in task.params]
    res = {"dtype": str(task.dtype).replace("torch.", ""), "rows": e - s}

    def grads(mode):
        sc = scores_of(xb, params, alpha, mode)
        return sc.detach(), torch.autograd.grad(F.cross_entropy(sc, yb), params)
    s_rec, g_rec = grads("reconstruct")
    s_sto, g_sto = grads("autograd")
    flat_rec = torch.cat([g.reshape(-1) for g in g_rec])
    flat_sto = torch.cat([g.reshape(-1) for g in g_sto])
    res["forward_bitwise_equal"] = bool(torch.equal(s_rec, s_sto))
    res["reconstruct_vs_autograd_max_abs"] = float((flat_rec - flat_sto).abs().max())
    res["autograd_gradient_sha256"] = sha256(flat_sto.cpu().numpy())  # = a trace's step0.grad

    # central finite differences over every parameter
    h = 1e-6 if task.dtype == torch.float64 else 1e-2
    base = torch.cat([p.detach().reshape(-1) for p in params])
    offsets = np.cumsum([0] + task.sizes)

    def loss_at(flat):
        ps = [flat[offsets[i]:offsets[i + 1]].view(sh) for i, sh in enumerate(task.shapes)]
        return float(F.cross_entropy(scores_of(xb, ps, alpha, "autograd"), yb))
    fd = torch.empty_like(base)
    with torch.no_grad():
        for i in range(base.numel()):
            old = float(base[i])
            base[i] = old + h
            lp = loss_at(base)
            base[i] = old - h
            lm = loss_at(base)
            base[i] = old
            fd[i] = (lp - lm) / (2 * h)
    err = (fd - flat_sto).abs()
    res["finite_difference"] = {"step": h, "max_abs_error": float(err.max()),
                                "max_abs_error_reconstruct": float((fd - flat_rec).abs().max()),
                                "max_abs_gradient": float(flat_sto.abs().max()),
                                "max_rel_error_where_abs_grad_gt_1e-6": float(
                                    (err / flat_sto.abs())[flat_sto.abs() > 1e-6].max())}
    if task.dtype == torch.float64:
        # inputs: the 81 pixel coordinates; the appended zero sits exactly on relu's kink
        x = xb[:, :PIXELS].detach().clone().requires_grad_(True)
        ws = [p.detach().clone().requires_grad_(True) for p in params[:-2]]
        res["gradcheck_reconstructing_core"] = bool(torch.autograd.gradcheck(
            lambda x_, *w_: ReversibleCore.apply(F.pad(x_, (0, 1)), alpha, *w_), (x, *ws),
            eps=1e-6, atol=1e-8, rtol=1e-6))
    with torch.no_grad():
        l, r = core_forward(xb[:, :HALF], xb[:, HALF:], params[:-2], alpha)
        li, ri = core_inverse(l, r, params[:-2], alpha)
        res["inverse_max_abs_error"] = float(torch.cat((li, ri), 1).sub(xb).abs().max())

    # flat SGD (two steps, with weight decay) vs torch.optim.SGD, bitwise
    cfg = dict(task.cfg, weight_decay=1e-3)
    ref = [p.detach().clone().requires_grad_(True) for p in params]
    opt = torch.optim.SGD(ref, lr=cfg["learning_rate"], momentum=cfg["momentum"], dampening=0,
                          weight_decay=cfg["weight_decay"], nesterov=False)
    mine = Task.__new__(Task)
    mine.cfg, mine.p = cfg, base.detach().clone()
    mine.v, mine.g = torch.zeros_like(mine.p), torch.empty_like(mine.p)
    for step in range(2):
        gs = [(g * (step + 1)).detach() for g in g_sto]
        for p_, g_ in zip(ref, gs):
            p_.grad = g_.clone()
        opt.step()
        torch.cat([g.reshape(-1) for g in gs], out=mine.g)
        with torch.no_grad():
            mine.sgd()
    ref_p = torch.cat([p.detach().reshape(-1) for p in ref])
    same = torch.equal(ref_p, mine.p)
    if cfg["momentum"] != 0:  # torch keeps no momentum buffer without momentum
        same = same and torch.equal(torch.cat([opt.state[p]["momentum_buffer"].reshape(-1) for p in ref]), mine.v)
    res["sgd_bitwise_equal_torch_optim"] = bool(same)
    return res


# ----------------------------------------------------------------------------- main
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
        "retained_core_states": core_bytes / (3 * FEATURES * task.p.element_size()),
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
        "normalization": f"4*x - 0.5 in {a.dtype} (raw float32 pixels cast first), then one appended 0",
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

    if a.predictions:
        np.save(a.predictions, out["predictions"])
    if a.state:
        arrays = dict(out["params"])
        arrays.update({f"velocity.{n}": v for n, v in out["velocity"].items()})
        np.savez_compressed(a.state, **arrays)
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
        np.savez_compressed(a.trace, **tr)
        meta["trace"] = {"steps": len(task.trace), "file": os.path.basename(a.trace)}
    text = json.dumps(meta, indent=1)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    print(f"{meta['backend']} {a.dtype} {a.backward}: task_ms median {meta['task_ms']['median']:.3f} "
          f"(min {meta['task_ms']['min']:.3f}, {a.repeat} runs)"
          + (f", accuracy {meta['accuracy']:.4f}" if test_labels is not None else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
