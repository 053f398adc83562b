"""`revgraph run` refuses bad input of every kind cleanly and leaves its outputs alone (test_cli.py runs it)."""
import json
import os
import shutil
import struct
import subprocess

import numpy as np

from cli_support import (
    REVGRAPH, read_bytes, write_bytes, rg, make_draw, save_npz, sha, CliTestCase)


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

            # A flip the reader may accept is in bytes no array's value comes from (a timestamp, a
            # comment, padding): the run must then have had the very arrays of the draw.
            want = {k: sha(self.draw[k]) for k in ("train_images", "train_labels", "test_images")}
            with ThreadPoolExecutor(4) as pool:
                for pos, path, p in pool.map(flip, positions):
                    if p.returncode == 0:
                        self.assertEqual(p.stderr, "")
                        self.assertEqual(json.loads(p.stdout)["input_hashes"], want, "flip %s at %d" % (src, pos))
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
        # "-" is other tools' standard output: here it was a file so named, written in the working folder.
        out = self.fresh_dir("dash")
        for command in (["run", "--input", self.good, "--quiet", "--output"], ["run", "--input", self.good, "--state"],
                        ["export", "--band", "12", "--quiet", "--output"]):
            with self.subTest(command=command):
                p = subprocess.run([REVGRAPH, *command, "-"], capture_output=True, text=True, cwd=out, timeout=120)
                self.assert_clean_error(p, 2, [command[-1] + " -", "not standard output"])
                self.assertEqual(os.listdir(out), [])
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

    def test_emulate_names_a_gpu_backend_and_runs_on_the_cpu(self):
        for backend in ("cpu", "cpu-reference", "auto"):
            self.bad_run(["--input", self.good, "--backend", backend, "--emulate"], 1, ["--emulate", backend])
        self.bad_run(["--input", self.good, "--backend", "cuda-fused", "--emulate", "--device", "0"], 2, ["--emulate"])

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
