#!/usr/bin/env python3
"""tools/torchref, the same-spec PyTorch learner, imported as a package (PYTHONPATH=SOURCE/tools from
meson's test environment; by hand: PYTHONPATH=tools /usr/bin/python3 test/tools/test_torchref.py .).
Its tasks must give the bytes of the committed torch vectors (test/vectors/TORCH_VECTORS.md), which
the command made before the learner was a package; its numpy part must import without torch (for
tools/check_torch_trace.py); the command must still refuse bad input with one line. The command,
tools/check_torch_trace.py and tools/make_synthetic.py refuse bad input and outputs with one line
before any work, never write over an input, and write each output whole at exactly its name.

  test_torchref.py SOURCE_ROOT
"""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

import check_torch_trace  # noqa: E402
import make_synthetic  # noqa: E402
from torchref import cli  # noqa: E402
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
        code = "import sys, torchref.spec, torchref.inputs, torchref.outputs; sys.exit(int('torch' in sys.modules))"
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

def call(main, argv):
    """A tool's main(argv) in this process: (exit status, stdout, stderr); a traceback fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(x) for x in argv])
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def snapshot(folder):
    """Every file under folder, by relative path, with its bytes."""
    files = {}
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, folder)] = f.read()
    return files


class ToolCase(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.syn = os.path.join(self.tmp, "syn.npz")
        self.lab = os.path.join(self.tmp, "lab.npy")
        shutil.copyfile(os.path.join(V, "synthetic_19x7.npz"), self.syn)
        shutil.copyfile(os.path.join(V, "synthetic_19x7_test_labels.npy"), self.lab)
        cwd = os.getcwd()
        os.chdir(self.tmp)
        self.addCleanup(os.chdir, cwd)

    def refused(self, main, argv, prefix, rc=2):
        """One line on stderr, nothing on stdout, exit rc, and no file made, changed or removed."""
        before = snapshot(self.tmp)
        code, out, err = call(main, argv)
        self.assertEqual(code, rc, (argv, err))
        self.assertEqual(out, "", argv)
        self.assertTrue(err.startswith(prefix + ": error: ") and err.endswith("\n") and err.count("\n") == 1,
                        (argv, err))
        self.assertEqual(snapshot(self.tmp), before, argv)
        return err


class CommandOutputs(ToolCase):
    """tools/torch_reference.py: outputs checked before any work, written whole at exactly their names."""
    RUN = ["--set", "depth=2", "--set", "seed=11"] + [x for s in SETS for x in ("--set", s)]

    def refused(self, argv, rc=2):
        return super().refused(cli.main, ["--input", self.syn] + argv, "torch_reference", rc)

    def test_no_output_replaces_an_input_or_another_output(self):
        os.link(self.syn, "hard.npz")
        os.symlink(self.syn, "soft.npz")
        for argv in (["--output", "syn.npz"], ["--state", "syn.npz"], ["--trace", "syn.npz"],
                     ["--predictions", "./syn.npz"],
                     ["--output", os.path.join("..", os.path.basename(self.tmp), "syn.npz")],
                     ["--output", "hard.npz"], ["--state", "soft.npz"],
                     ["--test-labels", "lab.npy", "--predictions", "lab.npy"],
                     ["--predictions", "p.npy", "--state", "p.npy"], ["--output", "o.json", "--trace", "./o.json"],
                     ["--state", "s.npz", "--output", "x/../s.npz"]):
            self.refused(self.RUN + argv)

    def test_an_unwritable_output_stops_the_run_before_any_work(self):
        for argv in (["--predictions", "hp.npy", "--state", "hs.npz", "--output", "/nonexistent-revgraph/o.json"],
                     ["--predictions", "hp.npy", "--trace", "missing/t.npz"],
                     ["--predictions", "hp.npy", "--output", self.tmp], ["--state", "hs.npz", "--output", "sub/"]):
            self.refused(self.RUN + argv)
        # The command itself, as the reviewer ran it: one line, no traceback, nothing written.
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "torch_reference.py"), "--input", self.syn,
                            "--predictions", "hp.npy", "--state", "hs.npz", "--output", "/nonexistent-revgraph/o.json"],
                           capture_output=True, text=True, cwd=self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertRegex(p.stderr, r"\Atorch_reference: error: --output /nonexistent-revgraph/o.json: [^\n]*\n\Z")
        self.assertEqual(sorted(os.listdir(self.tmp)), ["lab.npy", "syn.npz"])

    def test_inputs_of_the_wrong_kind_are_refused_with_one_line(self):
        os.mkdir("folder")
        with open("empty.npy", "wb"):
            pass
        with open("syn.npz", "rb") as f, open("cut.npz", "wb") as g:
            g.write(f.read()[:3000])
        for labels in ("syn.npz", "missing.npy", "folder", "empty.npy", "cut.npz"):
            self.refused(self.RUN + ["--test-labels", labels])
        for bad in ("lab.npy", "missing.npz", "folder", "empty.npy", "cut.npz"):
            self.refused(["--input", bad])

    def test_outputs_are_written_whole_at_exactly_their_names(self):
        with open("p", "wb") as f:
            f.write(b"an older file of that name, replaced whole")
        code, out, err = call(cli.main, ["--input", self.syn, "--test-labels", self.lab] + self.RUN +
                              ["--predictions", "p", "--state", "s", "--output", "o"])
        self.assertEqual(code, 0, err)
        self.assertEqual(out, "")
        self.assertEqual(sorted(os.listdir(self.tmp)), ["lab.npy", "o", "p", "s", "syn.npz"])
        want = published("torch_smoke_d2_s11_f32.json")
        self.assertEqual(sha256(np.load("p")), want["predictions_sha256"])
        with open("o") as f:
            self.assertEqual(json.load(f)["predictions_sha256"], want["predictions_sha256"])
        with np.load("s") as z:
            self.assertEqual(sha256(z["head.bias"]), want["final_parameter_sha256"]["head.bias"])
        # A trace at a name without .npz, one step, checked by the numpy checker.
        sets = ["--set", "depth=1", "--set", "epochs=1", "--set", "batch_size=19"]
        code, out, err = call(cli.main, ["--input", self.syn, "--dtype", "float64", "--backward", "autograd",
                                         "--trace", "t.trace", "--output", "t.json"] + sets)
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["lab.npy", "o", "p", "s", "syn.npz", "t.json", "t.trace"])
        code, out, err = call(check_torch_trace.main, ["--input", self.syn, "--trace", "t.trace"] + sets)
        self.assertEqual(code, 0, err)
        self.assertTrue(json.loads(out)["passed"])

    def test_a_failed_write_leaves_the_old_files_and_no_temporaries(self):
        from torchref.outputs import Outputs
        from torchref.spec import Fail
        with open("a.npy", "wb") as f:
            f.write(b"old a")

        def broken(f):
            f.write(b"half")
            raise OSError(28, "No space left on device")
        with self.assertRaisesRegex(Fail, "^--state b.npz: cannot write: No space left on device$"):
            with Outputs() as out:
                out.add("--predictions", "a.npy", lambda f: np.save(f, np.arange(3)))
                out.add("--state", "b.npz", broken)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["a.npy", "lab.npy", "syn.npz"])
        with open("a.npy", "rb") as f:
            self.assertEqual(f.read(), b"old a")


class TraceChecker(ToolCase):
    """tools/check_torch_trace.py: a bad --input, --trace or --fd-step is one line, not a traceback."""
    SETS = ["--set", "depth=1", "--set", "seed=781", "--set", "batch_size=8"]

    def refused(self, argv):
        return super().refused(check_torch_trace.main, argv, "check_torch_trace")

    def test_a_bad_trace_or_step_is_refused_with_one_line(self):
        trace = os.path.join(V, "torch_trace_d1_s781_f64.npz")
        with open(trace, "rb") as f:
            data = f.read()
        with open("cut.npz", "wb") as f:
            f.write(data[:len(data) // 2])
        with open("corrupt.npz", "wb") as f:  # the central directory intact, a member's bytes not
            f.write(data[:1000] + bytes(b ^ 0xFF for b in data[1000:200000]) + data[200000:])
        with open("empty.npz", "wb"):
            pass
        np.savez("partial.npz", permutations=np.zeros((2, 19), np.int64))
        os.mkdir("folder")
        for bad in ("missing.npz", "folder", "cut.npz", "corrupt.npz", "empty.npz", "syn.npz", "lab.npy",
                    "partial.npz"):
            self.refused(["--input", self.syn, "--trace", bad] + self.SETS)
        # Another config's trace (width 90, depth 2) against this config.
        self.refused(["--input", self.syn, "--trace", os.path.join(V, "torch_trace_d1_s781_w90_f64.npz")] + self.SETS)
        self.refused(["--input", self.syn, "--trace", os.path.join(V, "torch_trace_d2_s781_f64.npz")] + self.SETS)
        # Another input than the trace's.
        self.refused(["--input", "lab.npy", "--trace", trace] + self.SETS)
        for step in ("0", "-1e-6", "nan", "inf"):
            self.refused(["--input", self.syn, "--trace", trace, "--fd-step=" + step] + self.SETS)


class MakeSynthetic(ToolCase):
    """tools/make_synthetic.py: outputs checked first, written whole at exactly their names."""
    ARGS = ["--train", "5", "--query", "3", "--seed", "7"]

    def refused(self, argv):
        return super().refused(make_synthetic.main, self.ARGS + argv, "make_synthetic")

    def test_bad_outputs_are_refused_with_one_line(self):
        os.mkdir("folder")
        for argv in (["--output", "/nonexistent-revgraph/x.npz"], ["--output", "folder"], ["--output", "folder/"],
                     ["--output", "ms.npz", "--labels-output", "ms.npz"],
                     ["--output", "ms.npz", "--labels-output", "./folder/../ms.npz"],
                     ["--output", "ms.npz", "--labels-output", "missing/l.npy"]):
            self.refused(argv)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_synthetic.py")] + self.ARGS +
                           ["--output", "/nonexistent-revgraph/x.npz"], capture_output=True, text=True, cwd=self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertRegex(p.stderr, r"\Amake_synthetic: error: --output /nonexistent-revgraph/x.npz: [^\n]*\n\Z")

    def test_outputs_are_written_at_exactly_their_names(self):
        code, out, err = call(make_synthetic.main, self.ARGS + ["--output", "ms", "--labels-output", "ml"])
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["lab.npy", "ml", "ms", "syn.npz"])
        tri, trl, tei, tel = make_synthetic.make(5, 3, 7)
        self.assertEqual(json.loads(out)["test_labels"], sha256(tel))
        self.assertTrue(np.array_equal(np.load("ml"), tel))
        inputs = load_inputs("ms")
        self.assertTrue(all(np.array_equal(a, b) for a, b in zip(inputs, (tri, trl, tei))))


if __name__ == "__main__":
    unittest.main(verbosity=2)
