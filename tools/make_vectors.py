#!/usr/bin/python3
"""Generates the rng test vectors under test/vectors/ from numpy and torch themselves.

Run with Debian's interpreter, which has numpy 1.24 and torch 1.13 (the versions docs/spec.md §6 names):
    /usr/bin/python3 tools/make_vectors.py
Writes test/vectors/rng_numpy.json and test/vectors/rng_torch.json. float32 values are stored as
their uint32 bit patterns and hashes are sha256 of raw little-endian bytes (docs/spec.md §7), so the C++
tests compare bit for bit. The script refuses to write anything if torch's normal_ would not take
its AVX2 path here, since the published hashes come from that path.
"""
import json
import math
import os
import sys

from python_with import require

require("numpy", "torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from torchref.model import initial_parameters  # noqa: E402  (the reference learner's own draws)
from torchref.spec import param_names, sha256 as sha  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "test", "vectors")


def bits(a):
    return [int(v) for v in np.asarray(a, dtype=np.float32).view(np.uint32)]


# ---------------------------------------------------------------- numpy

SEEDS_NP = [0, 1, 2, 11, 781, 65535, 2**31, 2**32 - 1, 2**32, 2**32 + 11, 2**40 + 7,
            2**63, 2**64 - 1, 2026091400]


def seed_sequence_states():
    out = []
    for s in SEEDS_NP:
        ss = np.random.SeedSequence(s)
        out.append({"seed": s, "pool": [int(v) for v in ss.pool],
                    "state": [int(v) for v in ss.generate_state(4, np.uint64)]})
    return out


def pcg64_raw():
    out = []
    for s in SEEDS_NP:
        bg = np.random.PCG64(s)
        next64 = [int(v) for v in bg.random_raw(6)]
        # next32 hands out the low then the high half of one next64; a next64 in between does not
        # disturb the buffered half. Record an interleaved sequence of calls.
        bg = np.random.PCG64(s)
        c = bg.ctypes
        ops = ["32", "32", "32", "64", "32", "64", "64", "32", "32"]
        mixed = [int(c.next_uint32(c.state)) if op == "32" else int(c.next_uint64(c.state)) for op in ops]
        out.append({"seed": s, "next64": next64, "mixed_ops": ops, "mixed": mixed})
    return out


def interval_model(raw64, maxv):
    """random_interval for max > 2^32-1 on a stream of next64 outputs (cross-check only)."""
    mask = maxv
    for sh in (1, 2, 4, 8, 16, 32):
        mask |= mask >> sh
    out, i = [], 0
    while len(out) < 4:
        v = raw64[i] & mask
        i += 1
        if v <= maxv:
            out.append(v)
    return out


def interval64():
    # RandomState(PCG64).randint on uint64 uses numpy's masked rejection with next_uint64 when
    # the range exceeds 32 bits: the same draws as Generator's random_interval there.
    out = []
    for s in [0, 11, 2**40 + 7]:
        for maxv in [2**32, 2**32 + 1, 3 * 2**33 + 5, 2**40 - 3, 2**63 + 12345, 2**64 - 2]:
            rs = np.random.RandomState(np.random.PCG64(s))
            got = [int(v) for v in rs.randint(0, maxv + 1, size=4, dtype=np.uint64)]
            model = interval_model([int(v) for v in np.random.PCG64(s).random_raw(64)], maxv)
            assert got == model, (s, maxv, got, model)
            out.append({"seed": s, "max": maxv, "values": got})
    return out


def permutations():
    out = []
    cases = [(s, n, 3) for s in SEEDS_NP for n in (0, 1, 2, 3, 19, 100, 1000)]
    cases += [(s, 10000, 2) for s in (0, 11, 781, 2**32 + 11, 2**64 - 1)]
    # docs/spec.md §9: the MNIST-medium draws, Generator(PCG64(s)).permutation(60000).
    cases += [(s, 60000, 1) for s in range(2026091400, 2026091411)]
    for s, n, count in cases:
        g = np.random.Generator(np.random.PCG64(s))
        perms = [g.permutation(n).astype(np.int64) for _ in range(count)]
        entry = {"seed": s, "n": n, "count": count, "sha256": [sha(p) for p in perms]}
        if n <= 19:
            entry["values"] = [[int(v) for v in p] for p in perms]
        out.append(entry)
    return out


# ---------------------------------------------------------------- torch

SEEDS_T = [0, 1, 11, 199, 781, 123456789, 2**32 - 1, 2**32 + 11, 2**64 - 1, 2026091400]


def mt_raw(seed, n):
    """Raw mt19937 outputs with init_genrand(seed & 0xffffffff), from numpy (independent of torch)."""
    bg = np.random.MT19937()
    bg._legacy_seeding(seed & 0xFFFFFFFF)
    return [int(v) for v in bg.random_raw(n)]


def mt19937():
    out = []
    for s in SEEDS_T:
        raw = mt_raw(s, 1300)
        torch.manual_seed(s)
        u = torch.empty(1300).uniform_().numpy()
        assert np.array_equal(u, (np.array(raw) & 0xFFFFFF).astype(np.float32) * np.float32(2**-24)), s
        # the first outputs and some across the 624-word regenerations
        out.append({"seed": s, "first": raw[:8], "at_620": raw[620:630], "at_1245": raw[1245:1255]})
    return out


NORMAL_PARAMS = [(0.0, 0.05 / math.sqrt(41)), (0.0, 1.0), (1.5, 3.0), (-0.25, 0.001)]


def normals():
    out = []
    for s in SEEDS_T:
        for n in (16, 17, 31, 32, 40, 100, 1681):
            for mean, std in NORMAL_PARAMS:
                torch.manual_seed(s)
                v = torch.empty(n).normal_(mean, std).numpy()
                entry = {"seed": s, "n": n, "mean": mean, "std": std, "sha256": sha(v)}
                if n <= 100 or (s in (11, 199) and std == NORMAL_PARAMS[0][1]):
                    entry["bits"] = bits(v)
                out.append(entry)
    return out


def normal_large():
    """Hashes of long normal_ runs: a few of the fused multiply-adds in the Cephes functions
    change only about one value in a million, so only millions of values catch them."""
    out = []
    for s, n, mean, std in [(0, 2**22, 0.0, 1.0), (0, 2**22 + 7, 1.5, 3.0)]:
        torch.manual_seed(s)
        out.append({"seed": s, "n": n, "mean": mean, "std": std,
                    "sha256": sha(torch.empty(n).normal_(mean, std).numpy())})
    return out


def normal_sequences():
    """Several normal_ calls on one generator, including the scalar path (n < 16) whose cached
    second Box-Muller value survives an AVX2 call in between."""
    seqs = [[1, 1, 1], [3, 16, 1], [5, 2, 15, 40], [1, 1681, 1, 17], [15, 15], [2, 3]]
    out = []
    for s in (0, 11, 781):
        for sizes in seqs:
            for mean, std in NORMAL_PARAMS[:3]:
                torch.manual_seed(s)
                vals = [bits(torch.empty(n).normal_(mean, std).numpy()) for n in sizes]
                if sum(sizes) > 200:  # keep the file small: hash the long ones
                    vals = [v if len(v) <= 40 else sha(np.array(v, dtype=np.uint32)) for v in vals]
                out.append({"seed": s, "sizes": sizes, "mean": mean, "std": std, "bits": vals})
    return out


def uniforms():
    b_w = math.sqrt(3.0) * (math.sqrt(2.0 / (1 + math.sqrt(5) ** 2)) / math.sqrt(82))
    b_b = 1 / math.sqrt(82)
    ranges = [(0.0, 1.0), (-b_w, b_w), (-b_b, b_b), (-3.7, 11.3), (0.1, 0.7), (2.0, 2.0), (-1e-3, 7.77)]
    out = []
    for s in SEEDS_T:
        for lo, hi in ranges:
            torch.manual_seed(s)
            v = torch.empty(300).uniform_(lo, hi).numpy()
            out.append({"seed": s, "from": lo, "to": hi, "bits": bits(v[:40]), "sha256": sha(v)})
    return out


def init_hashes():
    out = []
    for depth in (1, 2, 3, 8):
        for s in (0, 1, 11, 199, 781, 2**32 + 11, 2026091400):
            # The reference learner's draws (torch.manual_seed, normal_ per branch, nn.Linear's
            # default init): check_published holds them to the published learner's hashes.
            params = {name: p.numpy() for name, p in zip(param_names(depth), initial_parameters(s, depth))}
            state = np.concatenate([p.ravel() for p in params.values()])
            out.append({"depth": depth, "seed": s, "sha256": {k: sha(v) for k, v in params.items()},
                        "state_vector_sha256": sha(state)})
    # Other widths (docs/spec.md §2): W/2 x W/2 branches with std 0.05/sqrt(W/2), nn.Linear(W, 10).
    # 84 and 90 give branch sizes that are not multiples of 16 (normal_'s redrawn tail block).
    for depth, width in ((2, 84), (1, 90), (2, 128), (3, 256), (1, 1024)):
        for s in (0, 11, 2026091400):
            params = {name: p.numpy()
                      for name, p in zip(param_names(depth), initial_parameters(s, depth, width))}
            state = np.concatenate([p.ravel() for p in params.values()])
            out.append({"depth": depth, "width": width, "seed": s,
                        "sha256": {k: sha(v) for k, v in params.items()}, "state_vector_sha256": sha(state)})
    return out


def check_published(torch_vectors):
    """The published torch_init.json (test/vectors/) must agree with what this machine's torch gives."""
    path = os.path.join(ROOT, "test", "vectors", "torch_init.json")
    ours = {(e["depth"], e.get("width", 82), e["seed"]): e["sha256"] for e in torch_vectors["init"]}
    for e in json.load(open(path)):
        key = (e["depth"], e.get("width", 82), e["seed"])
        if key in ours and ours[key] != e["sha256"]:
            sys.exit(f"torch here disagrees with test/vectors/torch_init.json at {key}")


def main():
    config = torch.__config__.show()
    if "CPU capability usage: AVX2" not in config:
        sys.exit("torch does not use its AVX2 kernels here; the published normal_ bits need them")
    meta = {"generator": "tools/make_vectors.py", "numpy": np.__version__, "torch": torch.__version__,
            "float32_values": "uint32 bit patterns", "hashes": "sha256 of raw little-endian bytes"}
    numpy_vectors = {"meta": meta, "seed_sequence": seed_sequence_states(), "pcg64_raw": pcg64_raw(),
                     "interval64": interval64(), "permutation": permutations()}
    torch_vectors = {"meta": meta, "mt19937": mt19937(), "normal": normals(), "normal_large": normal_large(),
                     "normal_sequence": normal_sequences(), "uniform": uniforms(), "init": init_hashes()}
    check_published(torch_vectors)
    os.makedirs(OUT, exist_ok=True)
    for name, data in (("rng_numpy.json", numpy_vectors), ("rng_torch.json", torch_vectors)):
        with open(os.path.join(OUT, name), "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.write("\n")
        print("wrote", os.path.join(OUT, name))


if __name__ == "__main__":
    main()
