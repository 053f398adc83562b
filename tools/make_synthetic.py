#!/usr/bin/python3
"""Write a small synthetic MNIST-medium-shaped task (docs/spec.md §2) from a seed, with numpy only.

One numpy Generator(PCG64(seed)) draws, in this order:
  train_images (N,1,9,9) float32 uniform [0,1)   rng.random(shape, dtype=np.float32)
  train_labels (N,)      int64 in 0..9           rng.integers(0, 10, N, dtype=np.int64)
  test_images  (Q,1,9,9) float32 uniform [0,1)
  test_labels  (Q,)      int64 in 0..9
The task archive holds exactly the three learner inputs; the query labels go to a separate .npy
(an archive with any extra array is rejected by the learner, docs/spec.md §2). Both are checked
before the draw (not the same file, folder there and writable) and written whole at exactly the
names given (torchref/outputs.py); a bad one is one line and exit status 2.

  /usr/bin/python3 tools/make_synthetic.py --train 19 --query 7 --seed 1907 \
      --output test/vectors/synthetic_19x7.npz --labels-output test/vectors/synthetic_19x7_test_labels.npy
"""
import argparse
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_with import require  # noqa: E402

require("numpy")

import numpy as np

from torchref.outputs import Outputs, check_outputs  # noqa: E402  (numpy alone)
from torchref.spec import Fail  # noqa: E402


def make(train, query, seed):
    rng = np.random.Generator(np.random.PCG64(seed))
    train_images = rng.random((train, 1, 9, 9), dtype=np.float32)
    train_labels = rng.integers(0, 10, train, dtype=np.int64)
    test_images = rng.random((query, 1, 9, 9), dtype=np.float32)
    test_labels = rng.integers(0, 10, query, dtype=np.int64)
    return train_images, train_labels, test_images, test_labels


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=int, required=True, help="N, training images")
    ap.add_argument("--query", type=int, required=True, help="Q, query images")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--output", required=True, help="task archive (.npz, compressed)")
    ap.add_argument("--labels-output", help="query labels (.npy)")
    a = ap.parse_args(argv)
    if a.train < 1 or a.query < 1 or a.seed < 0:
        ap.error("--train and --query must be >= 1 and --seed >= 0")
    outputs = [("--output", a.output), ("--labels-output", a.labels_output)]
    try:
        check_outputs(outputs, [])
        tri, trl, tei, tel = make(a.train, a.query, a.seed)
        with Outputs() as files:
            files.add("--output", a.output,
                      lambda f: np.savez_compressed(f, train_images=tri, train_labels=trl, test_images=tei))
            if a.labels_output:
                files.add("--labels-output", a.labels_output, lambda f: np.save(f, tel, allow_pickle=False))
    except Fail as e:
        print(f"make_synthetic: error: {e}", file=sys.stderr)
        return 2
    json.dump({"train_images": sha(tri), "train_labels": sha(trl), "test_images": sha(tei),
               "test_labels": sha(tel)}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
