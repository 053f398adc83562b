"""One task on static buffers: reset, per-epoch permutation copies, SGD steps, predict."""
import numpy as np
import torch
import torch.nn.functional as F

from .model import core, initial_parameters, scores_of
from .spec import CLASSES, PIXELS, epoch_permutations, param_names, param_shapes

class Task:
    """Everything that allocates happens here; run() only resets, copies and computes on static
    buffers (so that the same methods can be captured as CUDA graphs, docs/spec.md §8)."""

    def __init__(self, cfg, inputs, device, dtype, backward):
        tri, trl, tei = inputs
        self.cfg, self.device, self.dtype, self.backward = cfg, device, dtype, backward
        self.n, self.q = tri.shape[0], tei.shape[0]
        self.depth, self.width = cfg["depth"], cfg["width"]
        self.names, self.shapes = param_names(self.depth), param_shapes(self.depth, self.width)
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.count = sum(self.sizes)

        self.perms_host = epoch_permutations(cfg["seed"], self.n, cfg["epochs"])
        self.init_host = initial_parameters(cfg["seed"], self.depth, self.width)  # float32, CPU
        init_flat = torch.cat([p.reshape(-1) for p in self.init_host]).to(dtype)

        dev = torch.device(device)
        self.raw_train = torch.from_numpy(tri).to(dev).view(self.n, PIXELS)
        self.raw_test = torch.from_numpy(tei).to(dev).view(self.q, PIXELS)
        self.labels = torch.from_numpy(trl).to(dev)
        self.perms = torch.from_numpy(self.perms_host).to(dev)  # resident (E, N)
        self.init_flat = init_flat.to(dev)
        self.perm_buf = torch.empty(self.n, dtype=torch.int64, device=dev)  # what epoch() reads
        self.x_train = torch.empty(self.n, self.width, dtype=dtype, device=dev)
        self.x_test = torch.empty(self.q, self.width, dtype=dtype, device=dev)
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
            x[:, PIXELS:].zero_()     # the width - 81 appended zeros

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
