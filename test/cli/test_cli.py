#!/usr/bin/python3
"""End-to-end tests of the `revgraph` command.

usage: test_cli.py REVGRAPH [CLI_API_RUN] [unittest options]
(or REVGRAPH / CLI_API_RUN in the environment). Exit 77 (meson's "skipped") without numpy.

What is checked:
- bad input of every kind (archives numpy writes, truncated and corrupt files, config files,
  --set values, usage mistakes): exit 1 (bad data/config) or 2 (usage), exactly one stderr line
  `revgraph: error: ...` naming the problem, nothing on stdout, and no output file created or,
  where one existed from an earlier good run, left byte-identical;
- good runs: docs/spec.md §7 metadata whose hashes numpy recomputes from the files, the state archive,
  byte-identical repeats, progress lines, --config/--set order, the published seed-11 hashes,
  the embedded default, and agreement with the engine API (cli_api_run);
- `data mnist` on fake IDX files against a numpy transcription of docs/spec.md §9; `qualify` (which must
  say the fake files are not the official MNIST ones, with hashlib's md5/sha256); `validate`;
- the command line: --help for every command, the nearest real option for a mistyped one, the
  valid config keys for an unknown one, 2.0 for an integer key, --device/--pdl refused on CPU;
- honest outputs: --repeat's summary and run_seconds, provenance keys, sibling file names, and
  --scores against numpy's float64 forward of the saved state.
"""
import datetime
import fractions
import gzip
import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
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


class RunBadInput(CliTestCase):
    """`run` refuses bad input cleanly and leaves its outputs alone."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.draw = make_draw()
        cls.good = save_npz(os.path.join(cls.tmp, "good.npz"), cls.draw)
        cls.good_z = save_npz(os.path.join(cls.tmp, "good_z.npz"), cls.draw, compressed=True)
        cls.labels = os.path.join(cls.tmp, "labels.npy")
        np.save(cls.labels, np.arange(7, dtype=np.int64) % 10)
        # Outputs of an earlier good run, to check that a failing run leaves them byte-identical.
        cls.previous = os.path.join(cls.tmp, "previous")
        os.makedirs(cls.previous)
        p = rg("run", "--input", cls.good, "--set", "batch_size=8", "--quiet",
               "--output", os.path.join(cls.previous, "r.json"), "--state", os.path.join(cls.previous, "s.npz"))
        assert p.returncode == 0, p.stderr
        cls.previous_files = {n: read_bytes(os.path.join(cls.previous, n)) for n in os.listdir(cls.previous)}
        assert sorted(cls.previous_files) == ["r.json", "r.predictions.npy", "s.npz"], cls.previous_files
        cls.case = 0

    def bad_run(self, args, rc, mentions=(), quiet=False, what=""):
        """Runs `revgraph run ARGS --output .../r.json --state .../s.npz` twice: into an empty
        directory (nothing may appear there, not even a temporary file) and into one holding a
        good run's outputs (they must stay byte-identical)."""
        type(self).case += 1
        what = what or " ".join(map(str, args))
        extra = ["--quiet"] if quiet else []
        empty = self.fresh_dir("out-%d" % self.case)
        p = rg("run", *args, "--output", os.path.join(empty, "r.json"), "--state", os.path.join(empty, "s.npz"), *extra)
        line = self.assert_clean_error(p, rc, mentions, what)
        self.assertEqual(os.listdir(empty), [], "a failed run left files behind: " + what)
        kept = self.fresh_dir("kept-%d" % self.case)
        for n, b in self.previous_files.items():
            write_bytes(os.path.join(kept, n), b)
        p = rg("run", *args, "--output", os.path.join(kept, "r.json"), "--state", os.path.join(kept, "s.npz"), *extra)
        self.assert_clean_error(p, rc, mentions, what)
        self.assertEqual(sorted(os.listdir(kept)), sorted(self.previous_files), what)
        for n, b in self.previous_files.items():
            self.assertEqual(read_bytes(os.path.join(kept, n)), b, "%s changed by a failed run: %s" % (n, what))
        shutil.rmtree(empty)
        shutil.rmtree(kept)
        return line

    def bad_archive(self, name, arrays, rc=1, mentions=(), allow_pickle=False):
        """The archive written by np.savez and by np.savez_compressed; the message must name the
        file and every string of `mentions`."""
        for compressed in (False, True):
            with self.subTest(archive=name, compressed=compressed):
                path = os.path.join(self.tmp, "%s%s.npz" % (name, "_z" if compressed else ""))
                save_npz(path, arrays, compressed)
                self.bad_run(["--input", path], rc, [path] + list(mentions), what=name)

    def variant(self, **changes):
        arrays = {k: v.copy() for k, v in self.draw.items()}
        for k, v in changes.items():
            if v is None:
                del arrays[k]
            else:
                arrays[k] = v
        return arrays

    # --- the archive's contents -------------------------------------------------------------

    def test_extra_arrays(self):
        q_labels = np.arange(7, dtype=np.int64) % 10
        self.bad_archive("with_test_labels", self.variant(test_labels=q_labels), mentions=["test_labels"])
        self.bad_archive("with_other", self.variant(notes=np.zeros(3)), mentions=["notes"])
        self.bad_archive("with_labels_int32", self.variant(test_labels=q_labels.astype(np.int32)),
                         mentions=["test_labels"])

    def test_missing_arrays(self):
        for k in self.draw:
            self.bad_archive("missing_" + k, self.variant(**{k: None}), mentions=["missing", k])
        self.bad_archive("nothing", {}, mentions=["missing"])

    def test_wrong_dtypes(self):
        d = self.draw
        cases = [
            ("train_images", d["train_images"].astype(np.float64), "<f8"),
            ("train_images", d["train_images"].astype(np.float16), "<f2"),
            ("train_images", (d["train_images"] * 255).astype(np.uint8), "u1"),
            ("test_images", d["test_images"].astype(np.float64), "<f8"),
            ("train_labels", d["train_labels"].astype(np.int32), "<i4"),
            ("train_labels", d["train_labels"].astype(np.uint8), "u1"),
            ("train_labels", d["train_labels"].astype(np.float32), "<f4"),
            ("train_labels", d["train_labels"].astype(np.uint64), "<u8"),
        ]
        for i, (k, a, got) in enumerate(cases):
            self.bad_archive("dtype_%d" % i, self.variant(**{k: a}), mentions=[k, got])

    def test_unsupported_npy_encodings(self):
        d = self.draw
        self.bad_archive("big_endian", self.variant(train_images=d["train_images"].astype(">f4")),
                         mentions=["big-endian"])
        self.bad_archive("fortran", self.variant(test_images=np.asfortranarray(d["test_images"])),
                         mentions=["fortran"])
        self.bad_archive("object", self.variant(train_labels=np.array([1, None] * 9 + [2], dtype=object)),
                         mentions=["object"])

    def test_wrong_shapes(self):
        d = self.draw
        cases = [
            ("train_images", d["train_images"].reshape(19, 9, 9)),
            ("train_images", d["train_images"].reshape(19, 81)),
            ("train_images", d["train_images"].reshape(19, 1, 81, 1)),
            ("train_images", d["train_images"].reshape(1, 19, 9, 9)),
            ("train_images", np.zeros((19, 1, 9, 8), np.float32)),
            ("train_images", np.zeros((19, 1, 9, 9, 1), np.float32)),
            ("train_images", np.float32(0.5)),
            ("test_images", d["test_images"].reshape(7, 1, 3, 27)),
            ("test_images", d["test_images"].reshape(7 * 81)),
            ("train_labels", d["train_labels"].reshape(19, 1)),
            ("train_labels", np.int64(3)),
        ]
        for i, (k, a) in enumerate(cases):
            self.bad_archive("shape_%d" % i, self.variant(**{k: a}), mentions=[k, "shape"])

    def test_non_finite_pixels(self):
        for k in ("train_images", "test_images"):
            for i, (v, word) in enumerate(((np.nan, "a NaN"), (np.inf, "an infinite"), (-np.inf, "an infinite"))):
                a = self.draw[k].copy()
                a.flat[40 + i] = v
                self.bad_archive("nonfinite_%s_%d" % (k, i), self.variant(**{k: a}),
                                 mentions=[k, word, "index %d" % (40 + i)])

    def test_pixels_outside_unit_interval(self):
        above = np.nextafter(np.float32(1), np.float32(2))
        below = -np.nextafter(np.float32(0), np.float32(1))  # the smallest negative float32
        # The refused value is printed exactly enough (9 significant digits round-trip a float32) to
        # see why: neither "-0.000000" nor "1.000000".
        values = ((above, "pixel 1.00000012 "), (below, "pixel -1.40129846e-45 "), (np.float32(255), "pixel 255 "),
                  (np.float32(-0.5), "pixel -0.5 "), (np.float32(-1e-7), "pixel -1.00000001e-07 "),
                  (np.float32(1.0000001), "pixel 1.00000012 "))
        for k in ("train_images", "test_images"):
            for i, (v, text) in enumerate(values):
                a = self.draw[k].copy()
                a.flat[-1] = v
                self.bad_archive("range_%s_%d" % (k, i), self.variant(**{k: a}), mentions=[k, "outside", text])
        # -0.0, 0 and 1 are inside [0, 1]
        a = self.draw["train_images"].copy()
        a.flat[:3] = [0.0, -0.0, 1.0]
        path = save_npz(os.path.join(self.tmp, "edges.npz"), self.variant(train_images=a))
        p = rg("run", "--input", path, "--quiet", "--set", "epochs=1")
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_labels_outside_classes(self):
        for i, v in enumerate((-1, 10, 2 ** 40, -2 ** 63)):
            labels = self.draw["train_labels"].copy()
            labels[5] = v
            self.bad_archive("label_%d" % i, self.variant(train_labels=labels), mentions=["label", str(v)])

    def test_count_mismatch(self):
        d = self.draw
        self.bad_archive("fewer_labels", self.variant(train_labels=d["train_labels"][:-1]),
                         mentions=["19 train images", "18 train labels"])
        self.bad_archive("more_labels", self.variant(train_labels=np.concatenate([d["train_labels"], [1]])),
                         mentions=["19 train images", "20 train labels"])

    def test_empty_inputs(self):
        d = self.draw
        self.bad_archive("empty_train", self.variant(train_images=d["train_images"][:0], train_labels=d["train_labels"][:0]),
                         mentions=["train", "empty"])
        self.bad_archive("empty_test", self.variant(test_images=d["test_images"][:0]), mentions=["test", "empty"])

    # --- the archive as a file --------------------------------------------------------------

    def test_truncated_archives(self):
        for src in (self.good, self.good_z):
            data = read_bytes(src)
            n = len(data)
            cuts = sorted({0, 1, 3, 4, 10, 29, 30, 31, 64, 100, 200, n // 3, n // 2, n - 200, n - 100,
                           n - 23, n - 22, n - 21, n - 1})
            for cut in cuts:
                with self.subTest(source=os.path.basename(src), cut=cut):
                    path = os.path.join(self.tmp, "cut.npz")
                    write_bytes(path, data[:cut])
                    self.bad_run(["--input", path], 1, [path], what="cut %s at %d" % (src, cut))

    def test_corrupt_archives(self):
        """Flipped bytes anywhere in the zip structure (the first and last bytes: local header,
        .npy header, central directory, end record) and at random places: a clean error or, for
        bytes no reader needs, a normal run; never a crash. Flips inside a member's data must be
        caught (CRC-32)."""
        from concurrent.futures import ThreadPoolExecutor
        for src in (self.good, self.good_z):
            data = read_bytes(src)
            n = len(data)
            g = np.random.Generator(np.random.PCG64(77))
            positions = sorted(set(range(0, 48)) | set(range(n - 230, n, 2)) | set(g.integers(0, n, 24).tolist()))

            def flip(pos):
                path = os.path.join(self.tmp, "flip-%d.npz" % pos)
                flipped = bytearray(data)
                flipped[pos] ^= 0x5A
                write_bytes(path, bytes(flipped))
                p = rg("run", "--input", path, "--set", "epochs=1", "--quiet")
                os.remove(path)
                return pos, path, p

            with ThreadPoolExecutor(4) as pool:
                for pos, path, p in pool.map(flip, positions):
                    if p.returncode == 0:
                        self.assertEqual(p.stderr, "")
                        self.assertIn("predictions_sha256", json.loads(p.stdout))
                    else:
                        self.assert_clean_error(p, 1, [path], "flip %s at %d" % (src, pos))
            # Flips in the middle of the pixel data (stored) or the deflate stream: always refused.
            path = os.path.join(self.tmp, "flip.npz")
            for pos in (n // 2, n // 3):
                flipped = bytearray(data)
                flipped[pos] ^= 0x01
                write_bytes(path, bytes(flipped))
                self.bad_run(["--input", path], 1, [path], what="flip %s at %d" % (src, pos))

    def test_not_an_archive(self):
        d = self.fresh_dir("a-directory.npz")
        self.bad_run(["--input", d], 1, [d])
        missing = os.path.join(self.tmp, "does-not-exist.npz")
        self.bad_run(["--input", missing], 1, [missing])
        npy = os.path.join(self.tmp, "plain.npy")
        np.save(npy, self.draw["train_images"])
        self.bad_run(["--input", npy], 1, [npy])
        text = os.path.join(self.tmp, "text.npz")
        write_bytes(text, b"train_images,train_labels,test_images\n1,2,3\n")
        self.bad_run(["--input", text], 1, [text])
        self.bad_run(["--input", "/dev/zero"], 1, ["/dev/zero"])
        self.bad_run(["--input", "/dev/null"], 1, ["/dev/null"])
        newline = os.path.join(self.tmp, "two\nlines.npz")
        write_bytes(newline, b"PK")
        self.bad_run(["--input", newline], 1, ["two lines.npz"])
        zero = os.path.join(self.tmp, "zero.npz")
        write_bytes(zero, b"")
        self.bad_run(["--input", zero], 1, [zero])
        # A zip of something else than .npy members.
        import zipfile
        z = os.path.join(self.tmp, "other.zip")
        with zipfile.ZipFile(z, "w") as f:
            f.writestr("train_images.txt", "hello")
        self.bad_run(["--input", z], 1, [z])

    def test_lying_npy_headers(self):
        """Members whose .npy header promises more (or less) data than they hold, or absurd
        shapes: refused without trying to allocate what the header claims."""
        import zipfile

        def npy(header_dict, payload):
            header = repr(header_dict).encode() + b" "
            header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
            return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + payload

        d = self.draw
        good = {k: np.lib.format.header_data_from_array_1_0(v) for k, v in d.items()}
        cases = [
            ("huge", dict(good["train_images"], shape=(10 ** 12, 1, 9, 9)), d["train_images"].tobytes()),
            ("overflow", dict(good["train_images"], shape=(2 ** 62, 2 ** 62, 9, 9)), d["train_images"].tobytes()),
            ("negative", dict(good["train_images"], shape=(-19, 1, 9, 9)), d["train_images"].tobytes()),
            ("short", good["train_images"], d["train_images"].tobytes()[:-4]),
            ("long", good["train_images"], d["train_images"].tobytes() + b"\0" * 4),
            ("descr", dict(good["train_images"], descr="<f4x"), d["train_images"].tobytes()),
            ("nodict", "train_images", b""),
        ]
        for name, header, payload in cases:
            with self.subTest(case=name):
                path = os.path.join(self.tmp, "lying_%s.npz" % name)
                with zipfile.ZipFile(path, "w") as z:
                    z.writestr("train_images.npy", npy(header, payload))
                    for k in ("train_labels", "test_images"):
                        z.writestr(k + ".npy", npy(good[k], d[k].tobytes()))
                self.bad_run(["--input", path], 1, [path, "train_images"], what=name)

    # --- query labels given with --test-labels ----------------------------------------------

    def test_bad_test_labels(self):
        cases = [
            ("labels_i4", np.arange(7, dtype=np.int32), ["int64"]),
            ("labels_f8", np.arange(7, dtype=np.float64), ["int64"]),
            ("labels_short", np.arange(6, dtype=np.int64), ["7"]),
            ("labels_2d", np.arange(7, dtype=np.int64).reshape(7, 1), ["7"]),
            ("labels_10", np.array([0, 1, 2, 3, 4, 5, 10], dtype=np.int64), ["10", "0..9"]),
            ("labels_neg", np.array([0, 1, 2, 3, 4, 5, -1], dtype=np.int64), ["-1", "0..9"]),
        ]
        for name, a, mentions in cases:
            with self.subTest(name=name):
                path = os.path.join(self.tmp, name + ".npy")
                np.save(path, a)
                self.bad_run(["--input", self.good, "--test-labels", path], 1, [path] + mentions)
        cut = os.path.join(self.tmp, "labels_cut.npy")
        write_bytes(cut, read_bytes(self.labels)[:-3])
        self.bad_run(["--input", self.good, "--test-labels", cut], 1, [cut])
        missing = os.path.join(self.tmp, "no-labels.npy")
        self.bad_run(["--input", self.good, "--test-labels", missing], 1, [missing])

    # --- configuration ----------------------------------------------------------------------

    def config_file(self, name, text):
        path = os.path.join(self.tmp, name)
        write_bytes(path, text.encode() if isinstance(text, str) else text)
        return path

    def test_bad_config_files(self):
        cases = [
            ("not_json", "{depth: 2}", ["json"]),
            ("truncated", '{"depth": 2', ["json"]),
            ("empty", "", ["json"]),
            ("nan", '{"alpha": NaN}', ["json"]),
            ("infinity", '{"alpha": Infinity}', ["json"]),
            ("overflow", '{"alpha": 1e999}', []),
            ("binary", b"\xff\xfe\x00\x01", ["json"]),
            ("trailing", '{"depth": 2} x', ["json"]),
            # The JSON parser takes a NUL for the end of the text: whatever follows must not be ignored.
            ("nul_then_junk", b'{"depth": 1}\x00 junk {{{', ["json", "NUL"]),
            ("nul_at_end", b'{"depth": 1}\x00', ["json", "NUL"]),
            ("nul_inside", b'{"depth":\x00 1}', ["json", "NUL"]),
            ("array", "[1, 2]", ["object"]),
            ("number", "3", ["object"]),
            ("unknown_key", '{"depth": 2, "dropout": 0.1}', ["dropout"]),
            ("case", '{"Depth": 2}', ["Depth"]),
            ("string_depth", '{"depth": "2"}', ["depth"]),
            ("float_depth", '{"depth": 2.5}', ["depth"]),
            ("bool_depth", '{"depth": true}', ["depth"]),
            ("null_alpha", '{"alpha": null}', ["alpha"]),
            ("string_alpha", '{"alpha": "0.5"}', ["alpha"]),
            ("list_lr", '{"learning_rate": [0.1]}', ["learning_rate"]),
            ("negative_seed", '{"seed": -1}', ["seed"]),
            ("float_seed", '{"seed": 1.5}', ["seed"]),
            ("huge_seed", '{"seed": 18446744073709551616}', ["seed"]),
            ("zero_depth", '{"depth": 0}', ["depth"]),
            ("zero_batch", '{"batch_size": 0}', ["batch_size"]),
            ("huge_batch", '{"batch_size": 99999999999}', ["batch_size"]),
            ("huge_depth", '{"depth": 18446744073709551615}', ["depth"]),
            ("negative_epochs", '{"epochs": -1}', ["epochs"]),
            ("momentum_one", '{"momentum": 1.0}', ["momentum"]),
            ("negative_lr", '{"learning_rate": -0.1}', ["learning_rate"]),
            ("negative_wd", '{"weight_decay": -1e-4}', ["weight_decay"]),
            ("odd_width", '{"width": 83}', ["width", "even integer in 82..1024", "got 83"]),
            ("narrow_width", '{"width": 80}', ["width", "even integer in 82..1024", "got 80"]),
            ("wide_width", '{"width": 1026}', ["width", "even integer in 82..1024", "got 1026"]),
            ("string_width", '{"width": "128"}', ["width", "integer"]),
            ("float_width", '{"width": 128.5}', ["width", "integer"]),
        ]
        for name, text, mentions in cases:
            with self.subTest(config=name):
                path = self.config_file("config_%s.json" % name, text)
                self.bad_run(["--input", self.good, "--config", path], 1, [path] + mentions, what=name)
        d = self.fresh_dir("config-dir.json")
        self.bad_run(["--input", self.good, "--config", d], 1, [d])
        missing = os.path.join(self.tmp, "no-config.json")
        self.bad_run(["--input", self.good, "--config", missing], 1, [missing])

    def test_bad_set_values(self):
        cases = [
            "depth=0", "depth=-1", "depth=1025", "depth=2.5", "depth=abc", "depth=", "depth=99999999999",
            "depth=nan", "depth= 2", "epochs=-1", "epochs=1e3", "batch_size=0", "batch_size=-1",
            "batch_size=1048577", "learning_rate=-0.1", "learning_rate=nan", "learning_rate=inf",
            "learning_rate=-inf", "learning_rate=1e999", "learning_rate=0.1x", "momentum=1", "momentum=-0.5",
            "momentum=nan", "momentum=inf", "weight_decay=-1e-3", "weight_decay=inf", "weight_decay=nan",
            "alpha=nan", "alpha=inf", "alpha=-inf", "alpha=", "seed=-1", "seed=1.5", "seed=abc",
            "seed=18446744073709551616", "width=81", "width=83", "width=80", "width=0", "width=-82", "width=1025",
            "width=1026", "width=128.5", "width=wide", "width=", "width=1e2",
        ]
        for kv in cases:
            with self.subTest(set=kv):
                self.bad_run(["--input", self.good, "--set", kv], 1, [kv.split("=")[0]], what="--set " + kv)
        # Out-of-range values are named with what was given.
        for kv, got in (("depth=0", "got 0"), ("momentum=1", "got 1"), ("learning_rate=nan", "got nan"),
                        ("weight_decay=-inf", "got -inf"), ("batch_size=-1", "got -1"),
                        ("width=81", "width must be an even integer in 82..1024 (81 pixels and at least one "
                                     "appended zero), got 81")):
            with self.subTest(set=kv):
                self.bad_run(["--input", self.good, "--set", kv], 1, ["--set " + kv, got])
        # Validation happens after every --set: a later good value repairs an earlier bad one,
        # and a later bad one wins over an earlier good one.
        self.bad_run(["--input", self.good, "--set", "depth=3", "--set", "depth=0"], 1, ["depth"])
        self.bad_run(["--input", self.good, "--set", "dropout=0.1"], 1, ["dropout"])

    # --- usage ------------------------------------------------------------------------------

    def test_usage_errors(self):
        g = self.good
        cases = [
            (["--input", g, "--bogus"], ["--bogus"]),
            (["--input", g, "-x"], ["-x"]),
            (["--input", g, "extra"], ["extra"]),
            (["--input", g, "--repeat", "0"], ["repeat"]),
            (["--input", g, "--repeat", "-1"], ["repeat"]),
            (["--input", g, "--repeat", "x"], ["repeat"]),
            (["--input", g, "--repeat", "1.5"], ["repeat"]),
            (["--input", g, "--repeat="], ["repeat"]),
            (["--input", ""], ["--input", "empty"]),
            (["--input", g, "--state", ""], ["--state", "empty"]),
            (["--input", g, "--set="], ["--set", "empty"]),
            (["--input", g, "--quiet=yes"], ["quiet"]),
            (["--input", g, "--set", "depth"], ["depth"]),
            (["--input", g, "--set", "=3"], ["=3"]),
            (["--input", g, "--device", "-1"], ["device"]),
            (["--input", g, "--workspace-bytes", "-5"], ["workspace-bytes"]),
            (["--test-labels", self.labels], ["--test-labels", "--input"]),
        ]
        for args, mentions in cases:
            with self.subTest(args=args):
                self.bad_run(args, 2, mentions)
        # An option without its value: the output options must stay last, so run by hand.
        for opt in ("--input", "--set", "--config", "--repeat", "--backend", "--test-labels"):
            with self.subTest(missing_value=opt):
                out = self.fresh_dir("missing-value")
                p = rg("run", "--output", os.path.join(out, "r.json"), opt)
                self.assert_clean_error(p, 2, [opt, "value"])
                self.assertEqual(os.listdir(out), [])
        p = rg("run", "--input", self.good, "--quiet", "--output", "")
        self.assert_clean_error(p, 2, ["--output", "empty"])
        # A forgotten value is not taken from the next option.
        p = rg("run", "--input", "--quiet")
        self.assert_clean_error(p, 2, ["--input", "value"])
        p = rg("run", "--input", self.good, "--set", "--quiet")
        self.assert_clean_error(p, 2, ["--set", "value"])
        p = rg("frobnicate")
        self.assert_clean_error(p, 2, ["frobnicate"])
        p = rg("data")
        self.assert_clean_error(p, 2, ["mnist"])
        p = rg("data", "bogus")
        self.assert_clean_error(p, 2, ["bogus"])
        p = rg()
        self.assertEqual(p.returncode, 2)
        self.assertIn("usage", p.stdout)

    def test_same_file_for_two_outputs(self):
        out = self.fresh_dir("same")
        p = rg("run", "--input", self.good, "--output", os.path.join(out, "x"), "--state", os.path.join(out, "x"))
        self.assert_clean_error(p, 2, ["same"])
        # --state on the predictions file that --output implies
        p = rg("run", "--input", self.good, "--output", os.path.join(out, "r.json"),
               "--state", os.path.join(out, "r.predictions.npy"))
        self.assert_clean_error(p, 2, ["r.predictions.npy"])
        # The same file named two ways
        p = rg("run", "--input", self.good, "--output", os.path.join(out, "r.json"),
               "--state", os.path.join(out, ".", "r.json"))
        self.assert_clean_error(p, 2, ["same"])
        self.assertEqual(os.listdir(out), [])

    def test_output_is_an_input(self):
        """No output may replace an input, however the two are spelled: exit 2, inputs byte-identical,
        nothing written."""
        d = self.fresh_dir("out-is-in")
        inp = os.path.join(d, "in.npz")
        shutil.copy(self.good, inp)
        labels = os.path.join(d, "lab.predictions.npy")
        shutil.copy(self.labels, labels)
        config = os.path.join(d, "c.json")
        write_bytes(config, b'{"depth": 1}')
        os.symlink("in.npz", os.path.join(d, "link.npz"))
        os.link(inp, os.path.join(d, "hard.npz"))
        os.symlink(d, os.path.join(self.tmp, "out-is-in-link"))
        originals = {n: read_bytes(os.path.join(d, n)) for n in ("in.npz", "lab.predictions.npy", "c.json")}
        cases = [
            (["--state", inp], "--input"),
            (["--output", inp], "--input"),
            (["--state", os.path.join(d, ".", "sub", "..", "in.npz")], "--input"),
            (["--state", os.path.join(self.tmp, "out-is-in-link", "in.npz")], "--input"),
            (["--state", os.path.join(d, "link.npz")], "--input"),
            (["--state", os.path.join(d, "hard.npz")], "--input"),
            # --output lab.json implies lab.predictions.npy, the query labels
            (["--test-labels", labels, "--output", os.path.join(d, "lab.json")], "--test-labels"),
            (["--config", config, "--state", config], "--config"),
            (["--config", config, "--output", config], "--config"),
        ]
        os.makedirs(os.path.join(d, "sub"))
        for extra, which in cases:
            with self.subTest(args=extra):
                p = rg("run", "--input", inp, "--quiet", *extra)
                self.assert_clean_error(p, 2, ["same file", which])
                for n, b in originals.items():
                    self.assertEqual(read_bytes(os.path.join(d, n)), b, n)
                self.assertEqual(sorted(os.listdir(d)), sorted(list(originals) + ["link.npz", "hard.npz", "sub"]))

    def test_outputs_that_are_not_regular_files(self):
        """Devices, fifos and links to them are refused before any work; nothing appears beside them."""
        d = self.fresh_dir("non-regular")
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        os.symlink("/dev/null", os.path.join(d, "null-link.json"))
        before_dev = sorted(os.listdir("/dev"))
        for opt, path, kind in (("--output", "/dev/null", "character device"), ("--state", "/dev/null", "character device"),
                                ("--state", fifo, "fifo"), ("--output", os.path.join(d, "null-link.json"), "character device"),
                                ("--output", "/dev/stdout", "fifo")):
            with self.subTest(option=opt, path=path):
                p = rg("run", "--input", self.good, "--quiet", opt, path)  # stdout is a pipe here
                self.assert_clean_error(p, 1, [path, kind, "not a regular file"])
        self.assertEqual(sorted(os.listdir("/dev")), before_dev)
        self.assertTrue(os.path.islink(os.path.join(d, "null-link.json")))
        self.assertEqual(sorted(os.listdir(d)), ["fifo", "null-link.json"])

    def test_output_through_a_link(self):
        """A link to a regular file is written through: the file it points to is replaced, the link stays."""
        d = self.fresh_dir("through-link")
        os.makedirs(os.path.join(d, "real"))
        write_bytes(os.path.join(d, "real", "s.npz"), b"old")
        os.symlink(os.path.join("real", "s.npz"), os.path.join(d, "s.npz"))
        p = rg("run", "--input", self.good, "--quiet", "--state", os.path.join(d, "s.npz"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.islink(os.path.join(d, "s.npz")))
        self.assertEqual(sorted(np.load(os.path.join(d, "real", "s.npz")).files)[:1], ["head.bias"])

    def test_unwritable_outputs(self):
        missing_dir = os.path.join(self.tmp, "no-such-dir")
        for opt in ("--output", "--state"):
            with self.subTest(option=opt):
                p = rg("run", "--input", self.good, opt, os.path.join(missing_dir, "x.json"))
                self.assert_clean_error(p, 1, [missing_dir])
        out = self.fresh_dir("dir-targets")
        os.makedirs(os.path.join(out, "r.json"))
        p = rg("run", "--input", self.good, "--output", os.path.join(out, "r.json"), "--state", os.path.join(out, "s.npz"))
        self.assert_clean_error(p, 1, ["r.json", "directory"])
        self.assertEqual(os.listdir(out), ["r.json"])
        os.rmdir(os.path.join(out, "r.json"))
        # The implied predictions file is a directory: nothing may be written either.
        os.makedirs(os.path.join(out, "r.predictions.npy"))
        p = rg("run", "--input", self.good, "--output", os.path.join(out, "r.json"), "--state",
               os.path.join(out, "s.npz"), "--quiet")
        self.assert_clean_error(p, 1, ["r.predictions.npy", "directory"])
        self.assertEqual(os.listdir(out), ["r.predictions.npy"])

    def test_backends(self):
        p = rg("run", "--input", self.good, "--backend", "bogus", "--quiet")
        self.assert_clean_error(p, 1, ["bogus"])
        for gpu in ("cuda", "cuda-fused"):
            p = rg("run", "--input", self.good, "--backend", gpu, "--quiet")
            if not os.path.exists("/dev/nvidiactl"):
                self.assert_clean_error(p, 1, [gpu])
        self.bad_run(["--input", self.good, "--backend", "bogus"], 1, ["bogus"])
        results = {}
        for b in ("cpu", "cpu-reference", "auto"):
            p = rg("run", "--input", self.good, "--backend", b, "--quiet")
            self.assertEqual(p.returncode, 0, p.stderr)
            results[b] = json.loads(p.stdout)
        if results["auto"]["backend"].startswith("cpu"):
            for b in results:
                self.assertEqual(results[b]["predictions_sha256"], results["cpu"]["predictions_sha256"])


class RunGood(CliTestCase):
    """Good runs: files numpy writes in, files numpy reads out."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.draw = make_draw(n=19, q=7, seed=4321)
        cls.stored = save_npz(os.path.join(cls.tmp, "draw.npz"), cls.draw)
        cls.compressed = save_npz(os.path.join(cls.tmp, "draw_z.npz"), cls.draw, compressed=True)

    def run_to(self, name, *args, quiet=True):
        out = self.fresh_dir(name)
        r, s = os.path.join(out, "r.json"), os.path.join(out, "s.npz")
        p = rg("run", *args, "--output", r, "--state", s, *(["--quiet"] if quiet else []))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")
        with open(r) as f:
            result = json.load(f)
        return out, result, p

    def check_outputs(self, out, result, draw, depth=2):
        for k in SPEC_KEYS:
            self.assertIn(k, result)
        n, q = draw["train_labels"].shape[0], draw["test_images"].shape[0]
        self.assertEqual(result["train_count"], n)
        self.assertEqual(result["test_count"], q)
        self.assertEqual(result["input_hashes"], {k: sha(draw[k]) for k in ("train_images", "train_labels", "test_images")})
        self.assertEqual(result["parameter_count"], 2 * depth * 41 * 41 + 10 * 82 + 10)
        self.assertEqual(result["retained_core_states"], 1)
        self.assertEqual(result["core_saved_bytes_per_example"], 82 * 4)
        self.assertEqual(len(result["epoch_permutation_sha256"]), result["config"]["epochs"])
        for k in TIMING_KEYS:
            self.assertIsInstance(result[k], float)
            self.assertGreaterEqual(result[k], 0.0)
        self.assertEqual(result["run_count"], 1)
        self.assertEqual(result["predictions_file"], "r.predictions.npy")

        predictions = np.load(os.path.join(out, "r.predictions.npy"))
        self.assertEqual(predictions.dtype, np.dtype("<i8"))
        self.assertEqual(predictions.shape, (q,))
        self.assertTrue(((predictions >= 0) & (predictions <= 9)).all())
        self.assertEqual(result["predictions_sha256"], sha(predictions))

        names = ["weights.%d" % i for i in range(2 * depth)] + ["head.weight", "head.bias"]
        with np.load(os.path.join(out, "s.npz"), allow_pickle=False) as z:
            state = {k: z[k] for k in z.files}
        self.assertEqual(sorted(state), sorted(names + ["velocity." + k for k in names]))
        shapes = {k: (41, 41) for k in names[:-2]}
        shapes.update({"head.weight": (10, 82), "head.bias": (10,)})
        for k in names:
            for prefix in ("", "velocity."):
                a = state[prefix + k]
                self.assertEqual(a.dtype, np.dtype("<f4"), prefix + k)
                self.assertEqual(a.shape, shapes[k], prefix + k)
                self.assertTrue(np.isfinite(a).all())
        self.assertEqual(result["final_parameter_sha256"], {k: sha(state[k]) for k in names})
        self.assertEqual(list(result["final_parameter_sha256"]), names)
        self.assertEqual(result["final_velocity_sha256"], {k: sha(state["velocity." + k]) for k in names})
        self.assertEqual(result["state_vector_sha256"], sha(np.concatenate([state[k].ravel() for k in names])))

        # The saved parameters predict what the run predicted (plain forward in float64).
        x = np.concatenate([4 * draw["test_images"].reshape(q, 81).astype(np.float64) - 0.5, np.zeros((q, 1))], 1)
        left, right = x[:, :41], x[:, 41:]
        alpha = result["config"]["alpha"]
        for k in range(depth):
            left = left + alpha * np.maximum(right, 0) @ state["weights.%d" % (2 * k)].T.astype(np.float64)
            right = right + alpha * np.maximum(left, 0) @ state["weights.%d" % (2 * k + 1)].T.astype(np.float64)
        scores = np.concatenate([left, right], 1) @ state["head.weight"].T.astype(np.float64) + state["head.bias"]
        np.testing.assert_array_equal(np.argmax(scores, 1), predictions)
        return state, predictions

    def test_stored_and_compressed_round_trip(self):
        results = []
        for path in (self.stored, self.compressed):
            out, result, _ = self.run_to("rt-" + os.path.basename(path), "--input", path, "--set", "batch_size=8")
            self.assertEqual(result["config"], dict(DEFAULT_CONFIG, batch_size=8))
            self.check_outputs(out, result, self.draw)
            results.append((out, result))
        # The same arrays stored or deflated are the same task.
        (a, ra), (b, rb) = results
        self.assertEqual({k: v for k, v in ra.items() if k not in VOLATILE_KEYS | {"input"}},
                         {k: v for k, v in rb.items() if k not in VOLATILE_KEYS | {"input"}})
        for n in ("r.predictions.npy", "s.npz"):
            self.assertEqual(read_bytes(os.path.join(a, n)), read_bytes(os.path.join(b, n)), n)

    def test_npy_format_versions(self):
        """Members in .npy format 2.0 and 3.0 (what np.save picks for huge headers or unicode
        field names), written with zipfile, are the same task as np.savez's."""
        import io
        import zipfile
        _, reference, _ = self.run_to("fmt-ref", "--input", self.stored)
        for version in ((1, 0), (2, 0), (3, 0)):
            with self.subTest(version=version):
                path = os.path.join(self.tmp, "v%d.npz" % version[0])
                with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
                    for k in ("test_images", "train_labels", "train_images"):  # any member order
                        b = io.BytesIO()
                        np.lib.format.write_array(b, self.draw[k], version=version)
                        z.writestr(k + ".npy", b.getvalue())
                out, result, _ = self.run_to("fmt", "--input", path)
                self.check_outputs(out, result, self.draw)
                self.assertEqual(result["state_vector_sha256"], reference["state_vector_sha256"])

    def test_depths_and_odd_sizes(self):
        for depth, n, q, batch in ((1, 1, 1, 1), (3, 33, 5, 7), (2, 10, 3, 128)):
            with self.subTest(depth=depth, n=n, q=q, batch=batch):
                draw = make_draw(n=n, q=q, seed=depth)
                path = save_npz(os.path.join(self.tmp, "odd.npz"), draw)
                out, result, _ = self.run_to("odd", "--input", path, "--set", "depth=%d" % depth,
                                             "--set", "batch_size=%d" % batch, "--set", "epochs=3")
                self.check_outputs(out, result, draw, depth=depth)

    def test_repeat_runs_byte_identical(self):
        a, ra, _ = self.run_to("twice-a", "--input", self.compressed)
        b, rb, _ = self.run_to("twice-b", "--input", self.compressed)
        c, rc_, _ = self.run_to("twice-c", "--input", self.compressed, "--repeat", "3")
        self.assertEqual(rc_["run_count"], 3)
        for n in ("r.predictions.npy", "s.npz"):
            self.assertEqual(read_bytes(os.path.join(a, n)), read_bytes(os.path.join(b, n)), n)
            self.assertEqual(read_bytes(os.path.join(a, n)), read_bytes(os.path.join(c, n)), n)
        strip = lambda r: {k: v for k, v in r.items()
                           if k not in VOLATILE_KEYS | {"run_count", "training_prediction_seconds_statistic"}}
        self.assertEqual(strip(ra), strip(rb))
        self.assertEqual(strip(ra), strip(rc_))
        # Without --output the same result goes to stdout.
        p = rg("run", "--input", self.compressed, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        rs = json.loads(p.stdout)
        self.assertNotIn("predictions_file", rs)
        self.assertNotIn("state_file", rs)
        ra.pop("predictions_file")
        ra.pop("state_file")
        self.assertEqual(strip(rs), strip(ra))
        # The archive through a pipe (/dev/stdin) is the same task.
        p = subprocess.run([REVGRAPH, "run", "--input", "/dev/stdin", "--quiet"], input=read_bytes(self.compressed),
                           capture_output=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(strip(json.loads(p.stdout))["state_vector_sha256"], ra["state_vector_sha256"])
        # A result that cannot be written to stdout is an error, not a silent exit 0.
        with open("/dev/full", "w") as full:
            p = subprocess.run([REVGRAPH, "run", "--input", self.compressed, "--quiet"], stdout=full,
                               stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertIn("standard output", p.stderr)
        # Overwriting earlier outputs works and gives the same bytes.
        before = {n: read_bytes(os.path.join(a, n)) for n in ("r.predictions.npy", "s.npz")}
        p = rg("run", "--input", self.compressed, "--quiet", "--output", os.path.join(a, "r.json"),
               "--state", os.path.join(a, "s.npz"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(a)), ["r.json", "r.predictions.npy", "s.npz"])
        for n, data in before.items():
            self.assertEqual(read_bytes(os.path.join(a, n)), data)

    def test_progress_lines(self):
        _, _, p = self.run_to("quiet", "--input", self.stored, "--set", "epochs=3")
        self.assertEqual(p.stderr, "")
        _, _, p = self.run_to("loud", "--input", self.stored, "--set", "epochs=3", quiet=False)
        lines = p.stderr.splitlines()
        self.assertTrue(all(l.startswith("revgraph: ") for l in lines), p.stderr)
        epoch_lines = [l for l in lines if l.startswith("revgraph: epoch ")]
        self.assertEqual([l.split()[2] for l in epoch_lines], ["1/3", "2/3", "3/3"], p.stderr)
        self.assertFalse(any("error" in l for l in lines), p.stderr)
        # --repeat reports the epochs of one run only.
        _, _, p = self.run_to("loud-repeat", "--input", self.stored, "--set", "epochs=2", "--repeat", "3", quiet=False)
        self.assertEqual(len([l for l in p.stderr.splitlines() if l.startswith("revgraph: epoch ")]), 2, p.stderr)

    def test_published_seed_11_hashes(self):
        """Permutations and initial parameters depend only on seed and N: any 19-example task
        with seed 11 has the published learner's hashes (docs/spec.md §8 smoke, seed report)."""
        with open(os.path.join(VECTORS, "validation-report.json")) as f:
            published = json.load(f)["api_cli_smoke"]["metadata"]
        _, result, _ = self.run_to("seed11", "--input", self.stored, "--set", "batch_size=8")
        self.assertEqual(result["epoch_permutation_sha256"], published["epoch_permutation_sha256"])
        self.assertEqual(result["initial_parameter_sha256"], published["initial_parameter_sha256"])
        self.assertEqual(result["parameter_count"], published["parameter_count"])
        self.assertEqual(result["core_saved_bytes_per_example"], published["core_saved_bytes_per_example"])
        # And numpy's own permutation hashes.
        g = np.random.Generator(np.random.PCG64(11))
        self.assertEqual(result["epoch_permutation_sha256"], [sha(g.permutation(19).astype(np.int64)) for _ in range(2)])
        # The torch vectors' synthetic task: the same predictions as the PyTorch learner.
        with open(os.path.join(VECTORS, "torch_smoke_d2_s11_f32.json")) as f:
            torch_smoke = json.load(f)
        p = rg("run", "--input", os.path.join(VECTORS, "synthetic_19x7.npz"), "--set", "batch_size=8", "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        result = json.loads(p.stdout)
        self.assertEqual(result["input_hashes"], torch_smoke["input_hashes"])
        self.assertEqual(result["initial_parameter_sha256"], torch_smoke["initial_parameter_sha256"])
        self.assertEqual(result["predictions_sha256"], torch_smoke["predictions_sha256"])

    def test_config_file_and_set_order(self):
        config = os.path.join(self.tmp, "c.json")
        with open(config, "w") as f:
            json.dump({"epochs": 1, "batch_size": 16, "seed": 5, "learning_rate": 0.05}, f)
        _, r1, _ = self.run_to("cfg1", "--input", self.stored, "--config", config,
                               "--set", "batch_size=4", "--set", "momentum=0.5", "--set", "batch_size=8")
        self.assertEqual(r1["config"], dict(DEFAULT_CONFIG, epochs=1, batch_size=8, seed=5, learning_rate=0.05,
                                            momentum=0.5))
        _, r2, _ = self.run_to("cfg2", "--input", self.stored, "--set", "epochs=1", "--set", "batch_size=8",
                               "--set", "seed=5", "--set", "learning_rate=0.05", "--set", "momentum=0.5")
        self.assertEqual(r1["config"], r2["config"])
        for k in ("state_vector_sha256", "predictions_sha256", "scores_sha256", "final_velocity_sha256"):
            self.assertEqual(r1[k], r2[k], k)
        # A full config file equals the defaults; an empty object changes nothing.
        with open(config, "w") as f:
            json.dump(DEFAULT_CONFIG, f)
        _, r3, _ = self.run_to("cfg3", "--input", self.stored, "--config", config)
        write_bytes(config, b"{}")
        _, r4, _ = self.run_to("cfg4", "--input", self.stored, "--config", config)
        self.assertEqual(r3["config"], DEFAULT_CONFIG)
        self.assertEqual(r3["state_vector_sha256"], r4["state_vector_sha256"])
        # An out-of-range value in the file may be repaired by --set (validation comes last);
        # if not, the error names the file (checked in RunBadInput.test_bad_config_files).
        write_bytes(config, b'{"depth": 0}')
        _, r5, _ = self.run_to("cfg5", "--input", self.stored, "--config", config, "--set", "depth=1")
        self.assertEqual(r5["config"]["depth"], 1)
        # Edge values that are in range.
        _, r6, _ = self.run_to("cfg6", "--input", self.stored, "--set", "epochs=0", "--set", "momentum=0",
                               "--set", "learning_rate=0", "--set", "alpha=0", "--set", "seed=18446744073709551615")
        self.assertEqual(r6["epoch_permutation_sha256"], [])
        self.assertEqual(r6["config"]["seed"], 18446744073709551615)

    @unittest.skipUnless(API_RUN, "cli_api_run not given")
    def test_agrees_with_api(self):
        api = self.fresh_dir("api")
        settings = ["batch_size=8", "epochs=3", "seed=99"]
        p = subprocess.run([API_RUN, self.compressed, api] + settings, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        out, result, _ = self.run_to("api-cli", "--input", self.compressed, *sum((["--set", s] for s in settings), []))
        with open(os.path.join(api, "metadata.json")) as f:
            meta = json.load(f)
        for k in SPEC_KEYS:
            if k not in TIMING_KEYS:
                self.assertEqual(result[k], meta[k], k)
        self.assertEqual(read_bytes(os.path.join(api, "predictions.npy")), read_bytes(os.path.join(out, "r.predictions.npy")))
        self.assertEqual(read_bytes(os.path.join(api, "state.npz")), read_bytes(os.path.join(out, "s.npz")))

    def test_default_embedded_run(self):
        p = rg("run", "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        default = json.loads(p.stdout)
        self.assertEqual(default["config"], DEFAULT_CONFIG)
        self.assertEqual((default["train_count"], default["test_count"]), (5000, 5000))
        self.assertEqual(default["correct"], round(default["accuracy"] * 5000))
        self.assertGreater(default["accuracy"], 0.8)  # real digits, rev88
        for k in SPEC_KEYS:
            self.assertIn(k, default)
        d = self.fresh_dir("embedded")
        archive, labels = os.path.join(d, "D.npz"), os.path.join(d, "L.npy")
        p = rg("data", "embedded", "--output", archive, "--test-labels-output", labels, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        with np.load(archive, allow_pickle=False) as z:
            self.assertEqual(sorted(z.files), ["test_images", "train_images", "train_labels"])
            arrays = {k: z[k] for k in z.files}
        self.assertEqual(default["input_hashes"], {k: sha(v) for k, v in arrays.items()})
        query_labels = np.load(labels)
        self.assertEqual((query_labels.dtype, query_labels.shape), (np.dtype("<i8"), (5000,)))
        p = rg("run", "--input", archive, "--test-labels", labels, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        from_files = json.loads(p.stdout)
        for k in ("predictions_sha256", "accuracy", "correct", "state_vector_sha256", "input_hashes"):
            self.assertEqual(from_files[k], default[k], k)
        # Without --test-labels there is no accuracy to report.
        p = rg("run", "--input", archive, "--quiet", "--set", "epochs=0")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("accuracy", json.loads(p.stdout))
        # Another split seed is another task.
        p = rg("data", "embedded", "--output", archive, "--split-seed", "12", "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        with np.load(archive) as z:
            self.assertNotEqual(sha(z["train_labels"]), default["input_hashes"]["train_labels"])


class DataMnist(CliTestCase):
    """`data mnist` and `qualify` on fake IDX files (random bytes, 20,011 images)."""

    N = 20011

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        g = np.random.Generator(np.random.PCG64(2026))
        cls.pixels = g.integers(0, 256, (cls.N, 28, 28), dtype=np.uint8)
        cls.labels = g.integers(0, 10, cls.N).astype(np.uint8)
        cls.raw = os.path.join(cls.tmp, "raw")
        cls.gz = os.path.join(cls.tmp, "gz")
        os.makedirs(cls.raw)
        os.makedirs(cls.gz)
        cls.images_bytes, cls.labels_bytes = idx_images(cls.pixels), idx_labels(cls.labels)
        write_bytes(os.path.join(cls.raw, "train-images-idx3-ubyte"), cls.images_bytes)
        write_bytes(os.path.join(cls.raw, "train-labels-idx1-ubyte"), cls.labels_bytes)
        write_bytes(os.path.join(cls.gz, "train-images-idx3-ubyte.gz"), gzip.compress(cls.images_bytes, 1, mtime=0))
        write_bytes(os.path.join(cls.gz, "train-labels-idx1-ubyte.gz"), gzip.compress(cls.labels_bytes, 1, mtime=0))

    def make_draw(self, idx_dir, seed, name):
        out = self.fresh_dir(name)
        x, l = os.path.join(out, "X.npz"), os.path.join(out, "L.npy")
        p = rg("data", "mnist", "--idx-dir", idx_dir, "--seed", seed, "--output", x, "--test-labels-output", l)
        self.assertEqual(p.returncode, 0, p.stderr)
        # One line per IDX file (md5, sha256, verdict), the warning that these are not the official
        # files, and the line naming what was written.
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 4, p.stderr)
        self.assertIn("NOT the official MNIST", lines[2])
        self.assertTrue(lines[3].startswith("revgraph: wrote "), p.stderr)
        return x, l

    def test_outputs_that_are_idx_inputs(self):
        """`data mnist` refuses to write over the IDX files it reads (exit 2, files unchanged)."""
        for opt in ("--output", "--test-labels-output"):
            for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
                with self.subTest(option=opt, file=name):
                    target = os.path.join(self.raw, ".", name)
                    other = os.path.join(self.tmp, "other.npy" if opt == "--output" else "other.npz")
                    args = ["--output", target, "--test-labels-output", other] if opt == "--output" else \
                        ["--output", other, "--test-labels-output", target]
                    p = rg("data", "mnist", "--idx-dir", self.raw, "--seed", 7, *args)
                    self.assert_clean_error(p, 2, ["same file", "--idx-dir"])
                    self.assertFalse(os.path.exists(other))
        self.assertEqual(read_bytes(os.path.join(self.raw, "train-images-idx3-ubyte")), self.images_bytes)
        self.assertEqual(read_bytes(os.path.join(self.raw, "train-labels-idx1-ubyte")), self.labels_bytes)
        p = rg("data", "mnist", "--idx-dir", self.gz, "--seed", 7, "--output",
               os.path.join(self.gz, "train-labels-idx1-ubyte.gz"))
        self.assert_clean_error(p, 2, ["same file"])

    def test_draw_matches_numpy(self):
        for seed in (2026091400, 7):
            with self.subTest(seed=seed):
                x, l = self.make_draw(self.raw, seed, "draw-raw")
                if seed == 7:  # the .gz files give the same bytes
                    xz, lz = self.make_draw(self.gz, seed, "draw-gz")
                    self.assertEqual(read_bytes(x), read_bytes(xz))
                    self.assertEqual(read_bytes(l), read_bytes(lz))
                perm = np.random.Generator(np.random.PCG64(seed)).permutation(self.N)
                train, test = perm[:10000], perm[10000:20000]
                with np.load(x, allow_pickle=False) as z:
                    self.assertEqual(sorted(z.files), ["test_images", "train_images", "train_labels"])
                    got = {k: z[k] for k in z.files}
                for k, idx in (("train_images", train), ("test_images", test)):
                    a = got[k]
                    self.assertEqual((a.dtype, a.shape), (np.dtype("<f4"), (10000, 1, 9, 9)), k)
                    expect = resize_28_to_9(self.pixels[idx])
                    np.testing.assert_allclose(a, expect, rtol=0, atol=1e-6, err_msg=k)
                    self.assertTrue(((a >= 0) & (a <= 1)).all())
                self.assertEqual(got["train_labels"].dtype, np.dtype("<i8"))
                np.testing.assert_array_equal(got["train_labels"], self.labels[train].astype(np.int64))
                query = np.load(l)
                self.assertEqual((query.dtype, query.shape), (np.dtype("<i8"), (10000,)))
                np.testing.assert_array_equal(query, self.labels[test].astype(np.int64))

    def test_box_matrix(self):
        a = box_matrix()
        np.testing.assert_allclose(a.sum(1), 1.0, atol=1e-15)
        np.testing.assert_allclose(a.sum(0), 9 / 28, atol=1e-15)
        # A flat image stays flat.
        np.testing.assert_allclose(resize_28_to_9(np.full((1, 28, 28), 255, np.uint8)), 1.0, atol=1e-7)

    def bad_idx(self, name, images, labels, mentions, rc=1, gz=False):
        d = self.fresh_dir("bad-idx-" + name)
        suffix = ".gz" if gz else ""
        wrap = (lambda b: gzip.compress(b, 1, mtime=0)) if gz else (lambda b: b)
        if images is not None:
            write_bytes(os.path.join(d, "train-images-idx3-ubyte" + suffix), wrap(images))
        if labels is not None:
            write_bytes(os.path.join(d, "train-labels-idx1-ubyte" + suffix), wrap(labels))
        out = self.fresh_dir("bad-idx-out")
        p = rg("data", "mnist", "--idx-dir", d, "--seed", "1", "--output", os.path.join(out, "X.npz"),
               "--test-labels-output", os.path.join(out, "L.npy"))
        self.assert_clean_error(p, rc, mentions, name)
        self.assertEqual(os.listdir(out), [], name)

    def test_bad_idx_files(self):
        # Small files: every check here comes before the draw needs 20,000 images.
        im, lb = idx_images(self.pixels[:300]), idx_labels(self.labels[:300])
        cases = [
            ("images_magic", lb, lb, ["train-images", "2051"]),
            ("labels_magic", im, im, ["train-labels", "2049"]),
            ("images_truncated", im[:-1], lb, ["train-images"]),
            ("images_header_cut", im[:10], lb, ["train-images"]),
            ("images_empty", b"", lb, ["train-images"]),
            ("labels_truncated", im, lb[:-5], ["train-labels"]),
            ("images_trailing", im + b"\0", lb, ["train-images"]),
            ("count_mismatch", im, idx_labels(self.labels[:299]), ["300", "299"]),
            ("label_10", im, idx_labels(np.concatenate([self.labels[:299], [10]])), ["train-labels", "10"]),
            ("rows_27", struct.pack(">IIII", 2051, 1, 27, 28) + bytes(27 * 28), idx_labels(self.labels[:1]), ["27"]),
            ("too_few", im, lb, ["300"]),
            ("no_images", None, lb, ["train-images-idx3-ubyte"]),
            ("no_labels", im, None, ["train-labels-idx1-ubyte"]),
        ]
        for name, images, labels, mentions in cases:
            with self.subTest(case=name):
                self.bad_idx(name, images, labels, mentions)
        with self.subTest(case="gz_truncated"):
            d = self.fresh_dir("bad-gz")
            write_bytes(os.path.join(d, "train-images-idx3-ubyte.gz"), gzip.compress(im, 1, mtime=0)[:-10])
            write_bytes(os.path.join(d, "train-labels-idx1-ubyte.gz"), gzip.compress(lb, 1, mtime=0))
            out = self.fresh_dir("bad-gz-out")
            p = rg("data", "mnist", "--idx-dir", d, "--seed", "1", "--output", os.path.join(out, "X.npz"))
            self.assert_clean_error(p, 1, ["train-images"])
            self.assertEqual(os.listdir(out), [])
        with self.subTest(case="gz_magic"):
            self.bad_idx("gz_magic", lb, lb, ["2051"], gz=True)
        out = self.fresh_dir("usage-out")
        for args, rc, mentions in (
            (["--seed", "1", "--output", os.path.join(out, "X.npz")], 2, ["--idx-dir"]),
            (["--idx-dir", self.raw, "--output", os.path.join(out, "X.npz")], 2, ["--seed"]),
            (["--idx-dir", self.raw, "--seed", "1"], 2, ["--output"]),
            (["--idx-dir", self.raw, "--seed", "-1", "--output", os.path.join(out, "X.npz")], 2, ["seed"]),
            (["--idx-dir", self.raw, "--seed", "x", "--output", os.path.join(out, "X.npz")], 2, ["seed"]),
            (["--idx-dir", os.path.join(self.tmp, "nowhere"), "--seed", "1", "--output", os.path.join(out, "X.npz")],
             1, ["nowhere"]),
            (["--idx-dir", self.raw, "--seed", "1", "--output", os.path.join(self.tmp, "nowhere", "X.npz")],
             1, ["nowhere"]),
            (["--idx-dir", self.raw, "--seed", "1", "--output", os.path.join(out, "X.npz"),
              "--test-labels-output", os.path.join(self.tmp, "nowhere", "L.npy")], 1, ["nowhere"]),
            (["--idx-dir", self.raw, "--seed", "1", "--output", os.path.join(out, "X.npz"),
              "--test-labels-output", os.path.join(out, "X.npz")], 2, ["X.npz"]),
            (["--idx-dir", self.raw, "--seed", "1", "--output", os.path.join(out, "X.npz"), "--bogus"], 2, ["--bogus"]),
        ):
            with self.subTest(args=args):
                p = rg("data", "mnist", *args)
                self.assert_clean_error(p, rc, mentions)
                self.assertEqual(os.listdir(out), [])

    def test_qualify(self):
        seeds = [2026091400, 2026091401]
        runs = []
        for s in seeds:
            x, l = self.make_draw(self.raw, s, "q-%d" % s)
            p = rg("run", "--input", x, "--test-labels", l, "--quiet")
            self.assertEqual(p.returncode, 0, p.stderr)
            runs.append(json.loads(p.stdout))
        q = os.path.join(self.fresh_dir("qualify"), "Q.json")
        p = rg("qualify", "--idx-dir", self.gz, "--draws", "2", "--output", q, "--quiet")
        self.assertEqual(p.returncode, 3, p.stderr)  # random labels: about 10% correct
        self.assertIn("FAILED", p.stderr.splitlines()[-1])
        self.assertEqual(p.stdout, "")
        with open(q) as f:
            report = json.load(f)
        self.assertEqual([d["seed"] for d in report["draws"]], seeds)
        self.assertEqual([d["correct"] for d in report["draws"]], [r["correct"] for r in runs])
        self.assertEqual([d["predictions_sha256"] for d in report["draws"]], [r["predictions_sha256"] for r in runs])
        self.assertEqual([d["test_count"] for d in report["draws"]], [10000, 10000])
        self.assertEqual(report["total_correct"], sum(r["correct"] for r in runs))
        self.assertEqual(report["total_count"], 20000)
        self.assertEqual(report["total_needed"], math.ceil(0.88 * 10000 * 2))
        self.assertEqual(report["per_draw_floor"], math.ceil((100 - 12 - 1.5) / 100 * 10000))
        self.assertEqual(report["band_percent"], 12)
        self.assertEqual(report["config"], DEFAULT_CONFIG)
        self.assertIs(report["passed"], False)
        self.assertIs(report["together"], False)
        # Every draw at once: the very same per-draw results.
        qt = os.path.join(self.fresh_dir("qualify-together"), "Q.json")
        p = rg("qualify", "--idx-dir", self.gz, "--draws", "2", "--together", "--output", qt, "--quiet")
        self.assertEqual(p.returncode, 3, p.stderr)
        with open(qt) as f:
            together = json.load(f)
        self.assertIs(together["together"], True)
        for key in ("seed", "correct", "test_count", "predictions_sha256", "backend"):
            self.assertEqual([d[key] for d in together["draws"]], [d[key] for d in report["draws"]], key)
        self.assertEqual(together["total_correct"], report["total_correct"])
        # A band so wide that chance passes: exit 0 (untrained, one draw, for speed).
        q2 = os.path.join(self.fresh_dir("qualify2"), "Q.json")
        p = rg("qualify", "--idx-dir", self.raw, "--draws", "1", "--first-seed", "7", "--band", "95",
               "--set", "epochs=0", "--output", q2, "--quiet")
        with open(q2) as f:
            report = json.load(f)
        self.assertEqual(report["total_needed"], 500)
        self.assertEqual(report["per_draw_floor"], 350)
        self.assertEqual(report["draws"][0]["seed"], 7)
        self.assertEqual(p.returncode, 0 if report["total_correct"] >= 500 else 3, p.stderr)
        self.assertIs(report["passed"], report["total_correct"] >= 500)

    def test_not_the_official_mnist(self):
        """Made-up IDX files never read as the official ones: qualify's report says official_mnist
        false with each file's md5 and sha256 (hashlib's), and stderr says so plainly."""
        files = {"raw": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
                 "gz": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")}
        for kind, d in (("raw", self.raw), ("gz", self.gz)):
            with self.subTest(kind=kind):
                q = os.path.join(self.fresh_dir("official-" + kind), "Q.json")
                p = rg("qualify", "--idx-dir", d, "--draws", "1", "--set", "epochs=0", "--band", "95", "--output", q)
                self.assertIn(p.returncode, (0, 3), p.stderr)
                with open(q) as f:
                    report = json.load(f)
                self.assertIs(report["official_mnist"], False)
                self.assertIs(report["qualified"], False)
                for key, name in zip(("train_images", "train_labels"), files[kind]):
                    entry = report["idx_files"][key]
                    data = read_bytes(os.path.join(d, name))
                    self.assertEqual(entry["path"], os.path.join(d, name))
                    self.assertEqual(entry["md5"], hashlib.md5(data).hexdigest())
                    self.assertEqual(entry["sha256"], hashlib.sha256(data).hexdigest())
                    self.assertEqual(entry["bytes"], len(data))
                    self.assertIs(entry["official"], False)
                    self.assertNotIn("rule", entry)
                    raw_official = {"train_images": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
                                    "train_labels": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"}[key]
                    self.assertIn(raw_official, entry["reason"])
                    if kind == "raw":
                        self.assertIs(entry["compressed"], False)
                        self.assertNotIn("decompressed_sha256", entry)
                        self.assertIn(entry["sha256"], entry["reason"])
                    else:
                        content = gzip.decompress(data)
                        self.assertIs(entry["compressed"], True)
                        self.assertEqual(entry["decompressed_bytes"], len(content))
                        self.assertEqual(entry["decompressed_sha256"], hashlib.sha256(content).hexdigest())
                        official = {"train_images": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
                                    "train_labels": "d53e105ee54ea40749a09fcbcd1e9432"}[key]
                        self.assertIn(official, entry["reason"])
                        self.assertIn(entry["md5"], entry["reason"])
                        self.assertIn(entry["decompressed_sha256"], entry["reason"])
                lines = p.stderr.splitlines()
                self.assertTrue(any("NOT the official MNIST" in l for l in lines), p.stderr)
                self.assertIn("NOT a qualification", lines[-1])
                # Said under --quiet too: it changes what the report means.
                p = rg("qualify", "--idx-dir", d, "--draws", "1", "--set", "epochs=0", "--band", "95", "--quiet",
                       "--output", q)
                self.assertTrue(any("NOT the official MNIST" in l for l in p.stderr.splitlines()), p.stderr)
        # data mnist prints the same sums and verdict.
        out = self.fresh_dir("official-data")
        p = rg("data", "mnist", "--idx-dir", self.gz, "--seed", "3", "--output", os.path.join(out, "X.npz"))
        self.assertEqual(p.returncode, 0, p.stderr)
        for name in files["gz"]:
            data = read_bytes(os.path.join(self.gz, name))
            line = [l for l in p.stderr.splitlines() if name + ":" in l and "md5" in l][0]
            self.assertIn(hashlib.md5(data).hexdigest(), line)
            self.assertIn(hashlib.sha256(data).hexdigest(), line)
            self.assertIn("not the official MNIST file", line)

    def test_qualify_bad_arguments(self):
        out = self.fresh_dir("qualify-bad")
        q = os.path.join(out, "Q.json")
        for args, rc, mentions in (
            (["--draws", "2"], 2, ["--idx-dir"]),
            (["--idx-dir", self.raw, "--draws", "0"], 2, ["draws"]),
            (["--idx-dir", self.raw, "--band", "0"], 2, ["band"]),
            (["--idx-dir", self.raw, "--band", "nan"], 2, ["band"]),
            (["--idx-dir", self.raw, "--band", "100"], 2, ["band"]),
            (["--idx-dir", self.raw, "--first-seed", "-3"], 2, ["first-seed"]),
            (["--idx-dir", self.raw, "--set", "depth=0"], 1, ["depth"]),
            (["--idx-dir", self.raw, "extra"], 2, ["extra"]),
            (["--idx-dir", os.path.join(self.tmp, "nowhere")], 1, ["nowhere"]),
            (["--idx-dir", self.raw, "--backend", "bogus"], 1, ["bogus"]),
            (["--idx-dir", self.raw, "--backend", "cpu", "--pdl"], 2, ["--pdl", "cuda"]),
        ):
            with self.subTest(args=args):
                p = rg("qualify", *args, "--output", q, "--quiet")
                self.assert_clean_error(p, rc, mentions)
                self.assertEqual(os.listdir(out), [])
        p = rg("qualify", "--idx-dir", self.raw, "--output", os.path.join(self.tmp, "nowhere", "Q.json"), "--quiet")
        self.assert_clean_error(p, 1, ["nowhere"])


class Validate(CliTestCase):

    def test_validate_report(self):
        out = self.fresh_dir("validate")
        r = os.path.join(out, "R.json")
        p = rg("validate", "--output", r, "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(os.listdir(out), ["R.json"])
        with open(r) as f:
            report = json.load(f)
        self.assertIs(report["passed"], True)
        cpu = report["cpu_numerical_validation"]
        self.assertIs(cpu["passed"], True)
        self.assertGreaterEqual(len(cpu["checks"]), 4)
        smoke = report["api_cli_smoke"]
        self.assertIs(smoke["passed"], True)
        self.assertEqual((smoke["train_examples"], smoke["query_examples"], smoke["batch_sizes"]), (19, 7, [8, 8, 3]))
        self.assertEqual(smoke["cli_exit_code"], 0)
        for k in ("predictions_equal", "final_parameters_equal", "final_velocity_equal", "scores_equal",
                  "repeated_api_replay_byte_equal", "query_label_archive_rejected"):
            self.assertIs(smoke[k], True, k)
        gpu_ran = report["numerical_validation"]["run"]
        if not os.path.exists("/dev/nvidiactl"):
            self.assertIsInstance(smoke["late_cuda_initialization_rejected"], str)
            self.assertTrue(smoke["late_cuda_initialization_rejected"].startswith("not run"))
            self.assertIs(gpu_ran, False)
            self.assertIsNone(report["numerical_validation"]["passed"])
        meta = smoke["metadata"]
        for k in SPEC_KEYS:
            self.assertIn(k, meta)
        self.assertEqual(report["binary_sha256"], hashlib.sha256(read_bytes(REVGRAPH)).hexdigest())

    def test_validate_says_what_it_did_not_run(self):
        r = os.path.join(self.fresh_dir("validate-loud"), "R.json")
        p = rg("validate", "--output", r)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(r) as f:
            report = json.load(f)
        lines = p.stderr.splitlines()
        gpu = [l for l in lines if "GPU replay (" in l]
        self.assertEqual(len(gpu), 1, p.stderr)
        if report["numerical_validation"]["run"]:
            self.assertTrue(gpu[0].endswith("passed" if report["numerical_validation"]["passed"] else "FAILED"))
            self.assertEqual(lines[-1], "revgraph: validate: passed")
        else:
            # Never "passed" for a step that did not run, nor an unqualified "passed" at the end.
            self.assertIn("NOT RUN (" + report["numerical_validation"]["reason"] + ")", gpu[0])
            self.assertNotIn("passed", gpu[0])
            self.assertEqual(lines[-1], "revgraph: validate: passed on the CPU only; the GPU replay was not run")
        self.assertTrue(any(l.endswith("CPU numerics (float64/float32, depth 1, 2, 8): passed") for l in lines))

    def test_validate_errors(self):
        p = rg("validate", "--bogus")
        self.assert_clean_error(p, 2, ["--bogus"])
        p = rg("validate", "extra")
        self.assert_clean_error(p, 2, ["extra"])
        p = rg("validate", "--quiet", "--output", os.path.join(self.tmp, "nowhere", "R.json"))
        self.assert_clean_error(p, 1, ["nowhere"])
        p = rg("validate", "--quiet", "--replays", "x")
        self.assert_clean_error(p, 2, ["replays"])
        p = rg("validate", "--quiet", "--backend", "bogus")
        self.assert_clean_error(p, 1, ["bogus"])


class CommandLine(CliTestCase):
    """Help for every command, the nearest real option for a mistyped one, config keys."""

    COMMANDS = {
        ("run",): ["--input", "--test-labels", "--output", "--state", "--scores", "--repeat", "--config", "--set",
                   "--backend", "--device", "--workspace-bytes", "--pdl", "--quiet", "batch_size 128"],
        ("data",): ["mnist", "embedded"],
        ("data", "mnist"): ["--idx-dir", "--seed", "--output", "--test-labels-output", "--quiet"],
        ("data", "embedded"): ["--output", "--test-labels-output", "--split-seed", "--quiet"],
        ("qualify",): ["--idx-dir", "--band", "--first-seed", "--draws", "--output", "--together", "--set",
                       "--backend", "depth 2"],
        ("validate",): ["--output", "--replays", "--backend", "--quiet"],
        ("backends",): ["--device", "--json"],
    }

    def test_help_for_each_command(self):
        for command, mentions in self.COMMANDS.items():
            for flag in ("--help", "-h"):
                with self.subTest(command=command, flag=flag):
                    p = rg(*command, flag)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertEqual(p.stderr, "")
                    self.assertIn("revgraph " + " ".join(command), p.stdout)
                    for m in mentions:
                        self.assertIn(m, p.stdout)
        # The overview names every command once; help after other options still wins.
        p = rg("--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        for c in ("run", "data", "qualify", "validate", "backends", "version"):
            self.assertIn("\n  " + c, p.stdout)
        self.assertEqual(rg("help", "data", "mnist").stdout, rg("data", "mnist", "--help").stdout)
        self.assertEqual(rg("help").stdout, rg("--help").stdout)
        p = rg("run", "--set", "depth=3", "--help")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertIn("--repeat", p.stdout)

    def test_mistyped_option_names_the_nearest(self):
        d = self.fresh_dir("typo")
        for args, typo, near in (
            (["run", "--outptu", os.path.join(d, "r.json")], "--outptu", "--output"),
            (["run", "--inptu=x.npz"], "--inptu", "--input"),
            (["run", "--repaet", "2"], "--repaet", "--repeat"),
            (["data", "mnist", "--idx-dri", d, "--seed", "1", "--output", os.path.join(d, "x.npz")], "--idx-dri",
             "--idx-dir"),
            (["data", "embedded", "--outptu", os.path.join(d, "x.npz")], "--outptu", "--output"),
            (["qualify", "--idx-dir", d, "--drasw", "2"], "--drasw", "--draws"),
            (["validate", "--replay", "3"], "--replay", "--replays"),
            (["backends", "--jsno"], "--jsno", "--json"),
        ):
            with self.subTest(args=args):
                line = self.assert_clean_error(rg(*args), 2, [typo, "did you mean %s?" % near])
                self.assertIn(args[0], line)
        self.assertEqual(os.listdir(d), [])
        # Nothing close: no guess, a pointer to the help.
        line = self.assert_clean_error(rg("run", "--frobnicate"), 2, ["--frobnicate", "revgraph run --help"])
        self.assertNotIn("did you mean", line)
        # A mistyped command or kind is named with the nearest too.
        self.assert_clean_error(rg("rn"), 2, ["'rn'", "did you mean run?"])
        self.assert_clean_error(rg("data", "mnsit"), 2, ["'mnsit'", "did you mean mnist?"])

    def test_unknown_config_key_lists_the_valid_ones(self):
        valid = "valid keys: depth, width, alpha, seed, epochs, learning_rate, batch_size, momentum, weight_decay"
        self.assert_clean_error(rg("run", "--set", "dropout=0.1", "--quiet"), 1, ["dropout", valid])
        line = self.assert_clean_error(rg("run", "--set", "batchsize=8", "--quiet"), 1,
                                       ["batchsize", "did you mean batch_size?", valid])
        config = os.path.join(self.tmp, "typo-config.json")
        write_bytes(config, b'{"learning-rate": 0.05}')
        self.assert_clean_error(rg("run", "--config", config, "--quiet"), 1,
                                [config, "learning-rate", "did you mean learning_rate?", valid])
        self.assertIn("--set", line)

    def test_integer_keys_take_a_zero_fraction(self):
        draw = save_npz(os.path.join(self.tmp, "int-draw.npz"), make_draw(n=19, q=7, seed=77))
        runs = {}
        config = os.path.join(self.tmp, "float-config.json")
        write_bytes(config, b'{"batch_size": 8.0, "seed": 5.0}')
        for name, args in (("ints", ["--set", "depth=2", "--set", "epochs=1", "--set", "batch_size=8",
                                     "--set", "seed=5"]),
                           ("floats", ["--set", "depth=2.0", "--set", "epochs=1.", "--config", config])):
            p = rg("run", "--input", draw, "--quiet", *args)
            self.assertEqual(p.returncode, 0, p.stderr)
            runs[name] = json.loads(p.stdout)
        self.assertEqual(runs["floats"]["config"], runs["ints"]["config"])
        self.assertEqual(runs["floats"]["config"]["batch_size"], 8)
        self.assertIsInstance(runs["floats"]["config"]["depth"], int)
        self.assertEqual(runs["floats"]["state_vector_sha256"], runs["ints"]["state_vector_sha256"])
        self.assert_clean_error(rg("run", "--input", draw, "--set", "depth=2.5", "--quiet"), 1, ["depth", "2.5"])
        write_bytes(config, b'{"batch_size": 8.5}')
        self.assert_clean_error(rg("run", "--input", draw, "--config", config, "--quiet"), 1, ["batch_size"])


class HonestOutputs(CliTestCase):
    """What a result says about itself: every run's time and the statistic reported, the build and
    time that made it, its sibling files, and the scores whose hash it records."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.draw = make_draw(n=37, q=11, seed=515)
        cls.path = save_npz(os.path.join(cls.tmp, "draw.npz"), cls.draw)

    def test_repeat_summary_and_run_times(self):
        out = self.fresh_dir("repeat")
        r = os.path.join(out, "r.json")
        p = rg("run", "--input", self.path, "--set", "batch_size=8", "--repeat", "3", "--output", r)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(r) as f:
            result = json.load(f)
        times = result["run_seconds"]
        self.assertEqual(len(times), 3)
        self.assertTrue(all(isinstance(t, float) and t >= 0 for t in times), times)
        self.assertEqual(result["run_count"], 3)
        self.assertEqual(result["training_prediction_seconds_statistic"], "median")
        self.assertEqual(result["training_prediction_seconds"], sorted(times)[1])
        lines = p.stderr.splitlines()
        per_run = [l for l in lines if l.startswith("revgraph: run ")]
        self.assertEqual([l.split()[2] for l in per_run], ["1/3:", "2/3:", "3/3:"], p.stderr)
        for line, t in zip(per_run, times):
            self.assertAlmostEqual(float(line.split()[3]), t * 1e3, delta=0.051)
        summary = [l for l in lines if l.startswith("revgraph: 3 runs: ")]
        self.assertEqual(len(summary), 1, p.stderr)
        words = summary[0].replace(",", "").split()
        stats = {words[i]: float(words[i + 1]) for i in range(len(words) - 1) if words[i] in ("median", "min", "max")}
        self.assertAlmostEqual(stats["median"], sorted(times)[1] * 1e3, delta=0.051)
        self.assertAlmostEqual(stats["min"], min(times) * 1e3, delta=0.051)
        self.assertAlmostEqual(stats["max"], max(times) * 1e3, delta=0.051)
        # The epoch lines are those of the last run, and say so.
        epochs = [l for l in lines if l.startswith("revgraph: epoch ")]
        self.assertEqual(len(epochs), 2, p.stderr)
        self.assertTrue(all("of run 3/3" in l for l in epochs), p.stderr)
        # One run: its own time, called what it is.
        p = rg("run", "--input", self.path, "--set", "batch_size=8", "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        single = json.loads(p.stdout)
        self.assertEqual(single["training_prediction_seconds_statistic"], "single run")
        self.assertEqual(single["run_seconds"], [single["training_prediction_seconds"]])

    def test_provenance_and_sibling_files(self):
        out = self.fresh_dir("provenance")
        r, s, sc = (os.path.join(out, n) for n in ("res.json", "st.npz", "sc.npy"))
        before = time.time()
        p = rg("run", "--input", self.path, "--set", "batch_size=8", "--quiet", "--output", r, "--state", s,
               "--scores", sc)
        after = time.time()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["res.json", "res.predictions.npy", "sc.npy", "st.npz"])
        with open(r) as f:
            result = json.load(f)
        v = rg("version")
        self.assertEqual(v.returncode, 0)
        # "revgraph 0.1.0 (<commit>)"
        self.assertEqual(v.stdout.strip(), "revgraph %s (%s)" % (result["revgraph_version"], result["git_commit"]))
        self.assertRegex(result["git_commit"], r"^([0-9a-f]{40}(-dirty)?|unknown|\S+)$")
        created = datetime.datetime.strptime(result["created_utc"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
        self.assertTrue(int(before) <= created <= after + 1, (before, result["created_utc"], after))
        self.assertEqual((result["predictions_file"], result["state_file"], result["scores_file"]),
                         ("res.predictions.npy", "st.npz", "sc.npy"))
        b = rg("backends", "--json")
        rows = {x["requested"]: x for x in json.loads(b.stdout)["backends"]}
        self.assertEqual((result["backend"], result["device"]), (rows["auto"]["backend"], rows["auto"]["device"]))
        # The scores numpy reads are the ones hashed, float32 (Q, 10), and they predict what was predicted.
        scores = np.load(sc, allow_pickle=False)
        self.assertEqual((scores.dtype, scores.shape), (np.dtype("<f4"), (11, 10)))
        self.assertEqual(sha(scores), result["scores_sha256"])
        predictions = np.load(os.path.join(out, "res.predictions.npy"))
        np.testing.assert_array_equal(np.argmax(scores, 1), predictions)
        # And they are the final parameters' scores, recomputed in float64 by numpy.
        with np.load(s) as z:
            state = {k: z[k].astype(np.float64) for k in z.files}
        q = scores.shape[0]
        x = np.concatenate([4 * self.draw["test_images"].reshape(q, 81).astype(np.float64) - 0.5, np.zeros((q, 1))], 1)
        left, right = x[:, :41], x[:, 41:]
        for k in range(2):
            left = left + 0.5 * np.maximum(right, 0) @ state["weights.%d" % (2 * k)].T
            right = right + 0.5 * np.maximum(left, 0) @ state["weights.%d" % (2 * k + 1)].T
        expect = np.concatenate([left, right], 1) @ state["head.weight"].T + state["head.bias"]
        np.testing.assert_allclose(scores, expect, rtol=1e-4, atol=1e-4)
        # The library's metadata carries the provenance keys too (cli_api_run writes it as is).
        if API_RUN:
            api = self.fresh_dir("provenance-api")
            a = subprocess.run([API_RUN, self.path, api, "batch_size=8"], capture_output=True, text=True)
            self.assertEqual(a.returncode, 0, a.stderr)
            with open(os.path.join(api, "metadata.json")) as f:
                meta = json.load(f)
            for k in ("revgraph_version", "git_commit", "backend", "device"):
                self.assertEqual(meta[k], result[k], k)
            self.assertIn("created_utc", meta)
        # Without --state/--scores the result names no such files; --scores on --output is refused.
        p = rg("run", "--input", self.path, "--set", "batch_size=8", "--quiet")
        self.assertFalse({"state_file", "scores_file", "predictions_file"} & set(json.loads(p.stdout)))
        bad = self.fresh_dir("scores-same")
        p = rg("run", "--input", self.path, "--quiet", "--output", os.path.join(bad, "r.json"),
               "--scores", os.path.join(bad, "r.json"))
        self.assert_clean_error(p, 2, ["same"])
        p = rg("run", "--input", self.path, "--quiet", "--scores", os.path.join(bad, "nowhere", "s.npy"))
        self.assert_clean_error(p, 1, ["nowhere"])
        self.assertEqual(os.listdir(bad), [])


class Misc(CliTestCase):

    def test_version_and_help(self):
        p = rg("version")
        self.assertEqual(p.returncode, 0)
        self.assertTrue(p.stdout.startswith("revgraph "))
        p = rg("--help")
        self.assertEqual(p.returncode, 0)
        for c in ("run", "data", "qualify", "validate", "backends"):
            self.assertIn(c, p.stdout)

    def test_backends(self):
        p = rg("backends", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        report = json.loads(p.stdout)
        rows = {b["requested"]: b for b in report["backends"]}
        self.assertEqual(list(rows), ["auto", "cpu", "cpu-reference", "cuda", "cuda-fused"])
        for name in ("auto", "cpu", "cpu-reference"):
            self.assertIs(rows[name]["usable"], True, name)
        for b in rows.values():
            # usable rows say what they build and where; the others say why not, and nothing else
            self.assertEqual(set(b), {"requested", "usable", "backend", "device", "needs"} if b["usable"]
                             else {"requested", "usable", "reason", "needs"}, b)
        # cuda-fused needs no cuBLASLt (it never loads it); the cuBLASLt path says it does.
        self.assertIn("no cuBLASLt", rows["cuda-fused"]["needs"])
        self.assertIn("and cuBLASLt", rows["cuda"]["needs"])
        if not os.path.exists("/dev/nvidiactl"):
            for name in ("cuda", "cuda-fused"):
                self.assertIs(rows[name]["usable"], False, name)
                self.assertIn(name, rows[name]["reason"])
        # What it says `auto` and `cpu` build is what a run with them records.
        out = self.fresh_dir("backends")
        for name in ("auto", "cpu"):
            r = os.path.join(out, name + ".json")
            q = rg("run", "--backend", name, "--set", "epochs=1", "--quiet", "--output", r)
            self.assertEqual(q.returncode, 0, q.stderr)
            with open(r) as f:
                meta = json.load(f)
            self.assertEqual((meta["backend"], meta["device"]), (rows[name]["backend"], rows[name]["device"]), name)
        # The plain form: one line per name, the same verdicts.
        p = rg("backends")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual([ln.split()[0] for ln in lines], list(rows))
        for ln in lines:
            self.assertEqual(ln.split()[1], "yes" if rows[ln.split()[0]]["usable"] else "no", ln)
            self.assertTrue(ln.endswith("[needs " + rows[ln.split()[0]]["needs"] + "]"), ln)
        self.assert_clean_error(rg("backends", "extra"), 2, ["extra"])
        self.assert_clean_error(rg("backends", "--pdl"), 2, ["--pdl"])  # a task option, not this command's

    def test_gpu_option_ranges_are_the_engines(self):
        # RuntimeOptions' ranges (0..1023, 0..2**32), the same numbers Python's configure_gpu takes.
        for option, value, rng in (("--device", "1024", "0..1023"), ("--device", "-1", "0..1023"),
                                   ("--workspace-bytes", "4294967297", "0..4294967296"),
                                   ("--workspace-bytes", "99999999999999999999999", "0..4294967296")):
            with self.subTest(option=option, value=value):
                err = self.assert_clean_error(rg("backends", option, value) if option == "--device" else
                                              rg("run", "--backend", "cuda", option, value, "--quiet"), 2, [option])
                self.assertEqual(err, f"revgraph: error: option {option} must be in {rng}, got {value}")
        err = self.assert_clean_error(rg("backends", "--device", "x"), 2, ["device"])
        self.assertEqual(err, "revgraph: error: option --device needs an integer, got 'x'")
        # The edges themselves are accepted (no such device here: the row says so, exit 0).
        self.assertEqual(rg("backends", "--device", "1023").returncode, 0)

    def test_backend_names_come_from_one_table(self):
        # `revgraph backends --json` lists the engine's backend table; every help text and the
        # unknown-name error must name exactly those rows, in the same order.
        p = rg("backends", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [b["requested"] for b in json.loads(p.stdout)["backends"]]

        def names_in(text):  # "a, b, c or d" -> [a, b, c, d]
            head, _, last = text.rpartition(" or ")
            return head.split(", ") + [last]

        for command in ("run", "sweep", "validate", "qualify"):
            with self.subTest(command=command):
                q = rg(command, "--help")
                self.assertEqual(q.returncode, 0, q.stderr)
                line = next(ln for ln in q.stdout.splitlines() if ln.strip().startswith("--backend"))
                listed = line.split(None, 2)[2].split(" (", 1)[0]
                self.assertEqual(names_in(listed), rows, line)
        err = self.assert_clean_error(rg("run", "--backend", "bogus", "--quiet"), 1, ["bogus"])
        self.assertEqual(names_in(err.split("(expected ", 1)[1].rstrip(")")), rows, err)
        # A backend that runs reports the name it was asked by (auto, an alias, reports its pick).
        for b in json.loads(p.stdout)["backends"]:
            if b["usable"] and b["requested"] != "auto":
                self.assertEqual(b["backend"], b["requested"], b)

    def test_gpu_options_refused_on_cpu_backends(self):
        # --device and --pdl steer the CUDA backends only: on a CPU one they are a usage error,
        # before any work and before any output, not silently ignored.
        out = self.fresh_dir("pdl")
        r = os.path.join(out, "r.json")
        for backend in ("cpu", "cpu-reference"):
            for extra in (["--pdl"], ["--device", "0"]):
                with self.subTest(backend=backend, option=extra[0]):
                    p = rg("run", "--backend", backend, "--set", "epochs=1", "--quiet", "--output", r, *extra)
                    self.assert_clean_error(p, 2, [extra[0], "cuda", backend])
                    self.assertEqual(os.listdir(out), [])
        if not os.path.exists("/dev/nvidiactl"):  # auto picks a CPU backend here
            p = rg("run", "--device", "0", "--set", "epochs=1", "--quiet", "--output", r)
            self.assert_clean_error(p, 2, ["--device", "auto", "cpu"])
            self.assertEqual(os.listdir(out), [])
        self.assert_clean_error(rg("backends", "--device", "x"), 2, ["device"])
        # Without them, the CPU backend runs.
        p = rg("run", "--backend", "cpu", "--set", "epochs=1", "--quiet", "--output", r)
        self.assertEqual(p.returncode, 0, p.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + _args, verbosity=1)
