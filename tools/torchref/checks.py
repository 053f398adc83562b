"""--check-gradients: independent checks of the reference's gradients and SGD on one batch."""
import numpy as np
import torch
import torch.nn.functional as F

from .model import ReversibleCore, core_forward, core_inverse, scores_of
from .spec import PIXELS, sha256
from .task import Task

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
            lambda x_, *w_: ReversibleCore.apply(F.pad(x_, (0, xb.shape[1] - PIXELS)), alpha, *w_), (x, *ws),
            eps=1e-6, atol=1e-8, rtol=1e-6))
    with torch.no_grad():
        half = xb.shape[1] // 2
        l, r = core_forward(xb[:, :half], xb[:, half:], params[:-2], alpha)
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
