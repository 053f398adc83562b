#!/usr/bin/env python3
"""tools/torchref, the same-spec PyTorch learner, imported as a package (PYTHONPATH=SOURCE/tools from
meson's test environment; by hand: PYTHONPATH=tools /usr/bin/python3 test/tools/test_torchref.py .).
Its tasks must give the bytes of the committed torch vectors (test/vectors/TORCH_VECTORS.md), which
the command made before the learner was a package; its numpy part must import without torch (for
tools/check_torch_trace.py); the command must still refuse bad input with one line.

  test_torchref.py SOURCE_ROOT
"""
import json
import os
import subprocess
import sys
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

from torchref.graphs import GraphRunner  # noqa: E402
from torchref.inputs import load_inputs  # noqa: E402
from torchref.spec import parse_config, sha256  # noqa: E402
from torchref.task import Task  # noqa: E402

V = os.path.join(ROOT, "test", "vectors")
SETS = ["batch_size=8", "epochs=2"]


def published(name):
    with open(os.path.join(V, name)) as f:
        return json.load(f)


def task(sets, dtype, backward):
    torch.set_num_threads(1)  # as the vectors were made (--threads 1)
    inputs = load_inputs(os.path.join(V, "synthetic_19x7.npz"))
    return Task(parse_config(SETS + sets), inputs, "cpu", dtype, backward)


class CommittedVectors(unittest.TestCase):
    def check_hashes(self, t, want):
        out = t.outputs()
        self.assertEqual([sha256(p) for p in t.perms_host], want["epoch_permutation_sha256"])
        self.assertEqual({n: sha256(p.numpy()) for n, p in zip(t.names, t.init_host)}, want["initial_parameter_sha256"])
        self.assertEqual({n: sha256(v) for n, v in out["params"].items()}, want["final_parameter_sha256"])
        self.assertEqual({n: sha256(v) for n, v in out["velocity"].items()}, want["final_velocity_sha256"])
        self.assertEqual(sha256(out["state"]), want["state_vector_sha256"])
        self.assertEqual(sha256(out["scores"]), want["scores_sha256"])
        self.assertEqual(sha256(out["predictions"]), want["predictions_sha256"])

    def test_the_reconstructing_learner_gives_the_smoke_vectors_bytes(self):
        t = task(["depth=2", "seed=11"], torch.float32, "reconstruct")
        t.run()
        self.check_hashes(t, published("torch_smoke_d2_s11_f32.json"))

    def test_the_emulated_graph_sequencing_gives_the_same_bytes(self):
        t = task(["depth=2", "seed=11"], torch.float32, "reconstruct")
        GraphRunner(t, emulate=True).run()
        self.check_hashes(t, published("torch_smoke_d2_s11_f32.json"))

    def check_trace(self, sets, name):
        t = task(sets, torch.float64, "autograd")
        t.trace = []
        t.run()
        self.check_hashes(t, published(name + ".json"))
        with np.load(os.path.join(V, name + ".npz")) as tr:
            self.assertEqual(len(t.trace), len([k for k in tr.files if k.endswith(".grad")]))
            for k, rec in enumerate(t.trace):
                for key in ("batch", "grad", "param", "velocity"):
                    self.assertTrue(np.array_equal(rec[key], tr[f"step{k}.{key}"]), (k, key))

    def test_every_step_of_the_float64_trace(self):
        self.check_trace(["depth=1", "seed=781"], "torch_trace_d1_s781_f64")

    def test_every_step_of_the_float64_trace_at_width_90(self):
        self.check_trace(["depth=1", "seed=781", "width=90"], "torch_trace_d1_s781_w90_f64")
        t = task(["depth=1", "width=90"], torch.float64, "autograd")
        self.assertEqual([p.shape for p in t.init_host], [(45, 45), (45, 45), (10, 90), (10,)])
        self.assertEqual(tuple(t.x_train.shape), (19, 90))


class Package(unittest.TestCase):
    def test_the_numpy_part_imports_without_torch(self):
        code = "import sys, torchref.spec, torchref.inputs; sys.exit(int('torch' in sys.modules))"
        self.assertEqual(subprocess.run([sys.executable, "-c", code]).returncode, 0)

    def test_the_command_refuses_bad_config_with_one_line(self):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "torch_reference.py"), "--input",
                            os.path.join(V, "synthetic_19x7.npz"), "--set", "depth=0"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "torch_reference: error: config depth=0 must be in 1..1024\n")
        self.assertEqual(p.stdout, "")
        for width in ("81", "83", "1026", "0"):
            p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "torch_reference.py"), "--input",
                                os.path.join(V, "synthetic_19x7.npz"), "--set", "width=" + width],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertEqual(p.stderr, f"torch_reference: error: config width={width} must be an even integer "
                                       "in 82..1024\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
