"""`revgraph data mnist` against a numpy transcription of docs/spec.md §9, `qualify` on fake files, and
`validate` (test_cli.py runs it)."""
import gzip
import hashlib
import json
import math
import os
import struct

import numpy as np

from cli_support import (
    REVGRAPH, SPEC_KEYS, DEFAULT_CONFIG, read_bytes, write_bytes, rg, box_matrix, resize_28_to_9, idx_images,
    idx_labels, CliTestCase)


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
        # The last seed there is: the engine's range, as Python's qualify(first_seed=2**64 - 1) takes it.
        q3 = os.path.join(self.fresh_dir("qualify3"), "Q.json")
        p = rg("qualify", "--idx-dir", self.raw, "--draws", "1", "--first-seed", str(2**64 - 1), "--band", "95",
               "--set", "epochs=0", "--output", q3, "--quiet")
        self.assertIn(p.returncode, (0, 3), p.stderr)
        with open(q3) as f:
            self.assertEqual(json.load(f)["draws"][0]["seed"], 2**64 - 1)

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
            (["--idx-dir", self.raw, "--first-seed", str(2**64)], 2, ["first-seed", str(2**64 - 1)]),
            (["--idx-dir", self.raw, "--first-seed", str(2**64 - 1), "--draws", "2"], 2,
             ["--first-seed", "leaves no room for 2 draws"]),
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
        # The report never replaces what qualify reads: an IDX file of --idx-dir (raw or gzip, however
        # spelled) or the --config file; refused before any draw, every file as it was.
        config = os.path.join(out, "c.json")
        write_bytes(config, b'{"epochs": 1}')
        for idx_dir, target, which in ((self.raw, os.path.join(self.raw, ".", "train-images-idx3-ubyte"), "--idx-dir"),
                                       (self.gz, os.path.join(self.gz, "train-labels-idx1-ubyte.gz"), "--idx-dir"),
                                       (self.raw, config, "--config")):
            with self.subTest(output=target):
                before = read_bytes(target)
                p = rg("qualify", "--idx-dir", idx_dir, "--config", config, "--output", target, "--quiet")
                self.assert_clean_error(p, 2, ["same file", which])
                self.assertEqual(read_bytes(target), before)
        self.assertEqual(os.listdir(out), ["c.json"])


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
        p = rg("validate", "--backend", "bogus")  # refused before any check runs (and says it ran)
        self.assert_clean_error(p, 1, ["bogus"])
        # validate's checks run shapes of their own: a config it would not use is refused, not ignored
        # (it once wrote its report for --set width=96 as if width 82 were what was asked).
        config = os.path.join(self.fresh_dir("validate-config"), "c.json")
        write_bytes(config, b'{"epochs": 1}')
        report = os.path.join(self.fresh_dir("validate-config-out"), "v.json")
        for args, option in ((["--config", config], "--config"), (["--set", "width=96"], "--set")):
            p = rg("validate", "--quiet", *args, "--output", report)
            self.assert_clean_error(p, 2, [option])
            self.assertFalse(os.path.exists(report))
        self.assertEqual(read_bytes(config), b'{"epochs": 1}')
