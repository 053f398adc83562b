"""The model in torch (docs/spec.md §3, §4, §6): initial parameters from the seed, the reversible
core forward and inverse, the core whose backward rebuilds states by the inverse, and the scores."""
import math

import torch
import torch.nn.functional as F

from .spec import CLASSES, FEATURES

def initial_parameters(seed, depth, width=FEATURES):
    """float32 CPU tensors in name order: torch.manual_seed, normal_(0, 0.05/sqrt(width/2)) per
    width/2 x width/2 branch, then the default nn.Linear(width, 10)."""
    torch.manual_seed(seed)
    half = width // 2
    std = 0.05 / math.sqrt(half)
    branches = [torch.empty(half, half, dtype=torch.float32).normal_(0.0, std) for _ in range(2 * depth)]
    head = torch.nn.Linear(width, CLASSES)  # default init: weight, then bias
    return branches + [head.weight.detach().clone(), head.bias.detach().clone()]


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
    B x width state (its output) plus references to the 2D branch weights, whatever the depth."""

    @staticmethod
    def forward(ctx, x, alpha, *ws):
        half = x.shape[1] // 2
        left, right = core_forward(x[:, :half], x[:, half:], ws, alpha)
        z = torch.cat((left, right), 1)
        ctx.alpha = alpha
        ctx.save_for_backward(z, *ws)
        return z

    @staticmethod
    def backward(ctx, gz):
        z, *ws = ctx.saved_tensors
        alpha = ctx.alpha
        half = z.shape[1] // 2
        l, r = z[:, :half], z[:, half:]
        dl, dr = gz[:, :half], gz[:, half:]
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
    half = x.shape[1] // 2
    left, right = core_forward(x[:, :half], x[:, half:], ws, alpha)
    return torch.cat((left, right), 1)


def scores_of(x, params, alpha, backward):
    ws, hw, hb = params[:-2], params[-2], params[-1]
    return F.linear(core(x, ws, alpha, backward), hw, hb)
