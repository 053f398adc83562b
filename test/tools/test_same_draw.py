#!/usr/bin/env python3
"""The same draw on both sides of gpu-check's timing: tools/make_synthetic.py writes the archive,
and revgraph (RESULT.json's input_hashes: what `revgraph run` and gpu_validation --input report)
and the PyTorch side (bench/compare/torch_gpu.py's input_hashes, through torchref's own reader) must name
the sha256 of the very bytes numpy drew. (The engine's own synthetic draw, what gpu_validation
replays without --input, is those bytes too: test/data/test_synthetic.cpp checks that in C++.)

  test_same_draw.py SOURCE_ROOT BUILD/tools/revgraph
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1)
REVGRAPH = sys.argv.pop(1)
sys.path.insert(0, os.path.join(ROOT, "bench", "compare"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import torch_gpu  # noqa: E402
from torchref.inputs import load_inputs  # noqa: E402  (numpy only)


class SameDraw(unittest.TestCase):
    def test_revgraph_and_the_torch_side_read_the_bytes_numpy_drew(self):
        with tempfile.TemporaryDirectory() as tmp:
            draw = os.path.join(tmp, "draw.npz")
            p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_synthetic.py"), "--train", "300",
                                "--query", "50", "--seed", "2026091400", "--output", draw],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            numpy_side = json.loads(p.stdout)
            out = os.path.join(tmp, "r.json")
            p = subprocess.run([REVGRAPH, "run", "--backend", "cpu", "--input", draw, "--output", out, "--quiet"],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                revgraph_side = json.load(f)["input_hashes"]
            torch_side = torch_gpu.input_hashes(load_inputs(draw))
            keys = ("train_images", "train_labels", "test_images")
            self.assertEqual({k: numpy_side[k] for k in keys}, revgraph_side)
            self.assertEqual(revgraph_side, torch_side)
            # A different draw is told apart: the check can fail.
            other = os.path.join(tmp, "other.npz")
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_synthetic.py"), "--train", "300",
                            "--query", "50", "--seed", "2026091401", "--output", other], capture_output=True,
                           check=True, timeout=120)
            self.assertNotEqual(torch_gpu.input_hashes(load_inputs(other)), revgraph_side)


if __name__ == "__main__":
    unittest.main(verbosity=2)
