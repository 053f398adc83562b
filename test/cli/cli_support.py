"""What test_cli.py's modules share: the revgraph command's path (from test_cli.py's command line or
REVGRAPH / CLI_API_RUN in the environment), the spec's keys, file helpers, numpy transcriptions of
the IDX format and the 28->9 resize, and CliTestCase (a temp folder and the one-line error check).
Exit 77 (meson's "skipped") without numpy."""
import fractions
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    print("numpy is not available: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("REVGRAPH_SOURCE_ROOT", os.path.dirname(os.path.dirname(HERE)))
VECTORS = os.path.join(SOURCE_ROOT, "test", "vectors")

REVGRAPH = os.environ.get("REVGRAPH")
API_RUN = os.environ.get("CLI_API_RUN")
# test_cli.py REVGRAPH [CLI_API_RUN] [unittest options]: the paths here, the rest for unittest.
_args = sys.argv[1:]
if _args and not _args[0].startswith("-"):
    REVGRAPH = os.path.abspath(_args.pop(0))
if _args and not _args[0].startswith("-"):
    API_RUN = os.path.abspath(_args.pop(0))
if not REVGRAPH:
    sys.exit("usage: test_cli.py REVGRAPH [CLI_API_RUN] [unittest options]")

PARAM_NAMES_D2 = ["weights.0", "weights.1", "weights.2", "weights.3", "head.weight", "head.bias"]
SPEC_KEYS = ["config", "parameter_count", "train_count", "test_count", "input_hashes",
             "epoch_permutation_sha256", "initial_parameter_sha256", "final_parameter_sha256",
             "final_velocity_sha256", "state_vector_sha256", "predictions_sha256", "scores_sha256",
             "preparation_seconds", "training_prediction_seconds", "run_count", "retained_core_states",
             "core_saved_bytes_per_example", "device", "backend"]
TIMING_KEYS = {"preparation_seconds", "training_prediction_seconds"}
# Keys that differ between two runs of the same task: times, and when the result was made.
VOLATILE_KEYS = TIMING_KEYS | {"run_seconds", "created_utc"}
DEFAULT_CONFIG = {"depth": 2, "width": 82, "alpha": 0.5, "seed": 11, "epochs": 2, "learning_rate": 0.1,
                  "batch_size": 128, "momentum": 0.9, "weight_decay": 0.0}


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def rg(*args, timeout=240):
    """Runs revgraph; returns CompletedProcess with text stdout/stderr."""
    return subprocess.run([REVGRAPH] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout)


def make_draw(n=19, q=7, seed=1234):
    """A small task as numpy makes it: pixels in [0, 1) float32, labels int64 in 0..9."""
    g = np.random.Generator(np.random.PCG64(seed))
    return {
        "train_images": g.random((n, 1, 9, 9), dtype=np.float32),
        "train_labels": g.integers(0, 10, n).astype(np.int64),
        "test_images": g.random((q, 1, 9, 9), dtype=np.float32),
    }


def save_npz(path, arrays, compressed=False):
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return path


def box_matrix():
    """A (9x28): overlap of output cell i ([i·28/9, (i+1)·28/9)) with pixel [j, j+1), / (28/9)."""
    a = np.zeros((9, 28), dtype=np.float64)
    width = fractions.Fraction(28, 9)
    for i in range(9):
        lo, hi = i * width, (i + 1) * width
        for j in range(28):
            overlap = max(fractions.Fraction(0), min(hi, j + 1) - max(lo, fractions.Fraction(j)))
            a[i, j] = float(overlap / width)
    return a


def resize_28_to_9(images28):
    x = images28.astype(np.float32) / np.float32(255)
    a = box_matrix()
    y = a @ x.astype(np.float64) @ a.T
    return np.clip(y, 0.0, 1.0).astype(np.float32).reshape(-1, 1, 9, 9)


def idx_images(pixels):
    return struct.pack(">IIII", 2051, pixels.shape[0], 28, 28) + pixels.astype(np.uint8).tobytes()


def idx_labels(labels):
    return struct.pack(">II", 2049, labels.shape[0]) + labels.astype(np.uint8).tobytes()


class CliTestCase(unittest.TestCase):
    maxDiff = 4000

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="revgraph-cli-test-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def fresh_dir(self, name):
        d = os.path.join(self.tmp, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def assert_clean_error(self, proc, rc, mentions=(), what=""):
        """Exit `rc`, nothing on stdout, one stderr line `revgraph: error: ...` holding every
        string of `mentions` (case-insensitive)."""
        ctx = "%s\nexit %d\nstdout: %r\nstderr: %r" % (what, proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
        self.assertTrue(0 < proc.returncode < 128, "not a clean non-zero exit (signal/abort?)\n" + ctx)
        self.assertEqual(proc.returncode, rc, "wrong exit code\n" + ctx)
        self.assertEqual(proc.stdout, "", "an error must print nothing on stdout\n" + ctx)
        self.assertTrue(proc.stderr.endswith("\n"), ctx)
        lines = proc.stderr.splitlines()
        self.assertEqual(len(lines), 1, "stderr must be exactly one line\n" + ctx)
        self.assertTrue(lines[0].startswith("revgraph: error: "), ctx)
        self.assertGreater(len(lines[0]), len("revgraph: error: ") + 5, ctx)
        for m in mentions:
            self.assertIn(str(m).lower(), lines[0].lower(), "the error should name %r\n%s" % (m, ctx))
        return lines[0]


def unittest_args():
    return list(_args)
