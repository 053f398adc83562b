"""revgraph qualify --submission and revgraph verify on a small made-up IDX set (20,011 images,
two draws): the folder's claims against numpy and hashlib (permutations, index hashes, file
hashes, correct counts), all-or-nothing writing, and tampered copies, each caught by its own
line. Usage: test_submission.py REVGRAPH. Exit 77 (SKIP) where numpy is missing."""
import gzip
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed for", sys.executable)
    sys.exit(77)

REVGRAPH = sys.argv[1]
N = 20011


def rg(*args):
    return subprocess.run([REVGRAPH, *map(str, args)], capture_output=True, text=True, timeout=300)


def write_idx(folder, seed, compress=False):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, N).astype(np.uint8)
    base = rng.integers(0, 256, (10, 28, 28)).astype(np.int16)
    # Noisy class templates: learnable, but not perfectly (so swapped draws score differently).
    pixels = np.clip(base[labels] + rng.integers(-200, 200, (N, 28, 28)), 0, 255).astype(np.uint8)
    os.makedirs(folder)
    files = {"train-images-idx3-ubyte": struct.pack(">iiii", 2051, N, 28, 28) + pixels.tobytes(),
             "train-labels-idx1-ubyte": struct.pack(">ii", 2049, N) + labels.tobytes()}
    for name, data in files.items():
        if compress:
            name, data = name + ".gz", gzip.compress(data, 1, mtime=0)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    return labels


def sha(data):
    return hashlib.sha256(data).hexdigest()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, obj):
    with open(path, "w") as f:
        f.write(json.dumps(obj, indent=2) + "\n")


class Submission(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="revgraph-submission-")
        cls.idx = os.path.join(cls.tmp, "idx")
        cls.labels = write_idx(cls.idx, 5)
        cls.other_idx = os.path.join(cls.tmp, "other-idx")
        write_idx(cls.other_idx, 6, compress=True)
        cls.sub = os.path.join(cls.tmp, "sub")
        cls.report = os.path.join(cls.tmp, "q.json")
        p = rg("qualify", "--idx-dir", cls.idx, "--draws", 2, "--band", "60", "--submission", cls.sub,
               "--output", cls.report, "--quiet")
        assert p.returncode in (0, 3), p.stderr
        cls.qualify_rc = p.returncode

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def copy(self, name):
        d = os.path.join(self.tmp, name)
        shutil.copytree(self.sub, d)
        return d

    def verify(self, folder, *extra, idx=None):
        return rg("verify", folder, "--idx-dir", idx or self.idx, "--quiet", *extra)

    def assert_caught(self, folder, expected, idx=None):
        """verify exits 1, one of its lines starts with each of `expected`, and its count of claims
        adds up: every failure line is one claim that does not hold."""
        p = self.verify(folder, idx=idx)
        self.assertEqual(p.returncode, 1, p.stderr)
        lines = p.stdout.splitlines()
        self.assertTrue(lines and all(line.startswith("FAILED ") for line in lines), p.stdout)
        for e in expected:
            self.assertTrue(any(line.startswith("FAILED " + e) for line in lines), (e, lines))
        held, claims = re.search(r"\((\d+) of (\d+) hold\)", p.stderr).groups()
        self.assertEqual(int(claims) - int(held), len(lines), (p.stderr, lines))
        return lines

    def rechain(self, d):
        """The hash chain recomputed after an edit, so that only the edit itself is wrong."""
        draws = load(os.path.join(d, "draw-manifest.json"))
        draws["protocol_sha256"] = sha(read(os.path.join(d, "protocol.json")))
        save(os.path.join(d, "draw-manifest.json"), draws)
        frozen = load(os.path.join(d, "prediction-manifest.json"))
        frozen["protocol_sha256"] = draws["protocol_sha256"]
        frozen["draw_manifest_sha256"] = sha(read(os.path.join(d, "draw-manifest.json")))
        save(os.path.join(d, "prediction-manifest.json"), frozen)
        accuracy = load(os.path.join(d, "accuracy.json"))
        accuracy["prediction_manifest_sha256"] = sha(read(os.path.join(d, "prediction-manifest.json")))
        save(os.path.join(d, "accuracy.json"), accuracy)

    def test_files_and_claims_against_numpy(self):
        s = self.sub
        self.assertEqual(sorted(os.listdir(s)), ["README.md", "accuracy.json", "draw-manifest.json",
                                                 "prediction-manifest.json", "predictions", "protocol.json",
                                                 "results"])
        protocol, draws, frozen, accuracy = (load(os.path.join(s, n)) for n in (
            "protocol.json", "draw-manifest.json", "prediction-manifest.json", "accuracy.json"))

        def raw(name):
            return read(os.path.join(s, name))

        # The hash chain, by hashlib.
        self.assertEqual(draws["protocol_sha256"], sha(raw("protocol.json")))
        self.assertEqual(frozen["protocol_sha256"], sha(raw("protocol.json")))
        self.assertEqual(frozen["draw_manifest_sha256"], sha(raw("draw-manifest.json")))
        self.assertEqual(accuracy["prediction_manifest_sha256"], sha(raw("prediction-manifest.json")))
        self.assertIs(frozen["test_labels_scored"], False)
        self.assertEqual(protocol["dataset_seeds"], [2026091400, 2026091401])
        self.assertEqual(protocol["required_correct"], 8000)  # ceil(20000 * 40 / 100)
        self.assertEqual(protocol["band_percent"], "60")
        for key, name in (("train_images", "train-images-idx3-ubyte"), ("train_labels", "train-labels-idx1-ubyte")):
            data = read(os.path.join(self.idx, name))
            src = protocol["raw_sources"][key]
            self.assertEqual((src["file"], src["bytes"], src["md5"], src["sha256"]),
                             (name, len(data), hashlib.md5(data).hexdigest(), sha(data)))
        total = 0
        for i, seed in enumerate(protocol["dataset_seeds"]):
            p = np.random.Generator(np.random.PCG64(seed)).permutation(N)
            train, test = p[:10000].astype("<i8"), p[10000:20000].astype("<i8")
            d = draws["draws"][i]
            self.assertEqual((d["index"], d["dataset_seed"]), (i, seed))
            self.assertEqual(d["train_indices_sha256"], sha(train.tobytes()))
            self.assertEqual(d["test_indices_sha256"], sha(test.tobytes()))
            self.assertIs(d["train_test_disjoint"], True)
            self.assertEqual(d["input_sha256"]["train_labels"], sha(self.labels[train].astype("<i8").tobytes()))
            npy = raw(f"predictions/draw-{i:02d}.npy")
            self.assertEqual(frozen["draws"][i]["predictions_sha256"], sha(npy))
            self.assertEqual(frozen["draws"][i]["result_sha256"], sha(raw(f"results/draw-{i:02d}.json")))
            predictions = np.load(os.path.join(s, f"predictions/draw-{i:02d}.npy"))
            self.assertEqual((predictions.dtype.str, predictions.shape), ("<i8", (10000,)))
            result = load(os.path.join(s, f"results/draw-{i:02d}.json"))
            self.assertEqual(result["predictions_sha256"], sha(predictions.tobytes()))
            self.assertEqual(result["input_hashes"], d["input_sha256"])
            self.assertNotIn("correct", result)  # no query label reached the run's result
            truth = self.labels[test].astype("<i8")
            correct = int(np.count_nonzero(predictions == truth))
            a = accuracy["draws"][i]
            self.assertEqual((a["correct"], a["total"], a["test_labels_sha256"]), (correct, 10000, sha(truth.tobytes())))
            total += correct
        self.assertEqual(accuracy["total_correct"], total)
        self.assertAlmostEqual(accuracy["sample_sd_pp"],
                               float(np.std([d["accuracy_percent"] for d in accuracy["draws"]], ddof=1)), places=9)
        self.assertIs(accuracy["band"]["meets_accuracy_target"], total >= 8000)
        self.assertEqual(self.qualify_rc, 0 if accuracy["band"]["passed"] else 3)
        report = load(self.report)
        self.assertEqual(report["total_correct"], total)
        self.assertEqual([d["predictions_sha256"] for d in report["draws"]],
                         [load(os.path.join(s, f"results/draw-{i:02d}.json"))["predictions_sha256"] for i in range(2)])
        readme = raw("README.md").decode()
        self.assertIn("revgraph verify sub --idx-dir DIR", readme)
        self.assertIn(f"**{total}**", readme)

    def test_untampered_holds(self):
        p = self.verify(self.sub)
        self.assertEqual((p.returncode, p.stdout), (0, ""), p.stderr)
        p = self.verify(self.sub, "--retrain")
        self.assertEqual((p.returncode, p.stdout), (0, ""), p.stderr)
        self.assertIn("predictions retrained", p.stderr)

    def test_one_prediction_changed(self):
        d = self.copy("t-prediction")
        path = os.path.join(d, "predictions/draw-01.npy")
        a = np.load(path)
        a[17] = (a[17] + 1) % 10
        np.save(path, a)
        self.assert_caught(d, ["predictions/draw-01.npy: sha256", "results/draw-01.json: predictions_sha256",
                               "accuracy.json: draws[1].correct"])
        # Without the hashes (manifest and result made to agree), the fresh score still catches it.
        pm = load(os.path.join(d, "prediction-manifest.json"))
        pm["draws"][1]["predictions_sha256"] = sha(read(path))
        save(os.path.join(d, "prediction-manifest.json"), pm)
        lines = self.assert_caught(d, ["accuracy.json: draws[1].correct", "accuracy.json: total_correct"])
        self.assertFalse(any(line.startswith("FAILED predictions/draw-01.npy: sha256") for line in lines))

    def test_one_hash_edited(self):
        d = self.copy("t-hash")
        m = load(os.path.join(d, "draw-manifest.json"))
        m["draws"][0]["test_indices_sha256"] = "0" * 64
        save(os.path.join(d, "draw-manifest.json"), m)
        self.assert_caught(d, ["draw-manifest.json: draws[0].test_indices_sha256",
                               "prediction-manifest.json: draw_manifest_sha256"])

    def test_two_draws_swapped(self):
        d = self.copy("t-swap")
        for sub in ("predictions/draw-0%d.npy", "results/draw-0%d.json"):
            a, b = os.path.join(d, sub % 0), os.path.join(d, sub % 1)
            os.rename(a, a + ".x")
            os.rename(b, a)
            os.rename(a + ".x", b)
        self.assert_caught(d, ["predictions/draw-00.npy: sha256", "predictions/draw-01.npy: sha256",
                               "results/draw-00.json: input_hashes", "accuracy.json: draws[0].correct"])

    def test_totals_edited(self):
        d = self.copy("t-totals")
        a = load(os.path.join(d, "accuracy.json"))
        a["total_correct"] += 1
        a["band"]["required_correct"] -= 1
        save(os.path.join(d, "accuracy.json"), a)
        lines = self.assert_caught(d, ["accuracy.json: total_correct", "accuracy.json: band.required_correct"])
        self.assertEqual(len(lines), 2, lines)

    def test_another_protocol_is_no_qualification(self):
        """Two draws at band 60 % may pass their band, but only the published protocol (11 draws from
        seed 2026091400 at a leaderboard's band) makes a qualification: the report, accuracy.json, the
        README and the command's line say so, and verify holds a flipped claim to it."""
        report = load(self.report)
        self.assertIs(report["published_protocol"], False)
        self.assertIs(report["qualified"], False)
        accuracy = load(os.path.join(self.sub, "accuracy.json"))
        self.assertIs(accuracy["published_protocol"], False)
        self.assertIs(accuracy["qualified"], False)
        readme = read(os.path.join(self.sub, "README.md")).decode()
        self.assertIn("The published protocol (11 draws from seed 2026091400 at a leaderboard's band): NO. "
                      "**NOT a qualification.**", readme)
        p = rg("qualify", "--idx-dir", self.idx, "--draws", 1, "--first-seed", 7, "--band", "60", "--set", "epochs=1",
               "--output", os.path.join(self.tmp, "q7.json"))
        self.assertIn(p.returncode, (0, 3), p.stderr)
        self.assertIn("; NOT a qualification: 1 draw from seed 7, not the protocol's 11 from 2026091400; band 60 %, "
                      "not a leaderboard's (12, 8, 5, 3 or 2)", p.stderr.splitlines()[-1])
        d = self.copy("t-qualified")
        a = load(os.path.join(d, "accuracy.json"))
        a["published_protocol"] = a["qualified"] = True
        save(os.path.join(d, "accuracy.json"), a)
        lines = self.assert_caught(d, ["accuracy.json: published_protocol", "accuracy.json: qualified"])
        self.assertEqual(len(lines), 2, lines)

    def test_a_folder_from_before_published_protocol(self):
        """A folder written before published_protocol existed (no such key, no such README sentence)
        still verifies; its qualified claim is held to the published protocol all the same."""
        d = self.copy("t-older")
        a = load(os.path.join(d, "accuracy.json"))
        del a["published_protocol"]
        save(os.path.join(d, "accuracy.json"), a)
        readme = os.path.join(d, "README.md")
        text = read(readme).decode()
        sentence = ". The published protocol (11 draws from seed 2026091400 at a leaderboard's band): NO"
        self.assertIn(sentence, text)
        with open(readme, "w") as f:
            f.write(text.replace(sentence, ""))
        p = self.verify(d)
        self.assertEqual((p.returncode, p.stdout), (0, ""), p.stderr)
        a["qualified"] = True  # as a band-60, two-draw folder of the old rule never said, but could
        save(os.path.join(d, "accuracy.json"), a)
        lines = self.assert_caught(d, ["accuracy.json: qualified"])
        self.assertEqual(len(lines), 1, lines)

    def test_claims_nothing_re_derives(self):
        """A key verify does not re-derive is a claim nothing backs: each one fails, at the top, in
        the band and in a draw's entry."""
        d = self.copy("t-extra")
        a = load(os.path.join(d, "accuracy.json"))
        a["independently_reviewed"] = True
        a["band"]["leaderboard_rank"] = 1
        a["draws"][0]["note"] = "best draw"
        save(os.path.join(d, "accuracy.json"), a)
        lines = self.assert_caught(d, ["accuracy.json: independently_reviewed: claimed, but nothing re-derives it",
                                       "accuracy.json: band.leaderboard_rank: claimed",
                                       "accuracy.json: draws[0].note: claimed"])
        self.assertEqual(len(lines), 3, lines)

    def test_a_key_given_twice(self):
        """JSON parsers keep the last of a repeated key, so a file could show one reader one value and
        another the other: a key given twice (the chain recomputed around it) fails its file, as does
        nesting past 64 levels (which could overflow the stack of whoever prints it)."""
        for name, name_key in (("accuracy.json", "qualified"), ("protocol.json", "official_mnist")):
            d = self.copy(f"t-twice-{name}")
            path = os.path.join(d, name)
            text = read(path).decode()
            with open(path, "w") as f:
                f.write('{"' + name_key + '": true, ' + text.lstrip()[1:])
            if name == "protocol.json":
                self.rechain(d)
            lines = self.assert_caught(d, [f"{name}: not a JSON object (key '{name_key}' is given twice)"])
            self.assertTrue(len(lines) >= 1, lines)
        d = self.copy("t-deep")
        path = os.path.join(d, "accuracy.json")
        text = read(path).decode()
        with open(path, "w") as f:
            f.write(text.replace('"total_correct": ', '"total_correct": ' + "[" * 100000 + "]" * 100000 + ', "was": ', 1))
        self.assert_caught(d, ["accuracy.json: not a JSON object (JSON nested more than 64 deep)"])

    def test_a_report_inside_the_folder_is_refused_before_any_work(self):
        """The folder is renamed into place whole; a report inside it would be written into a
        temporary it owns: refused (exit 2) before any draw, nothing written."""
        target = os.path.join(self.tmp, "inside")
        for folder, report in ((target, os.path.join(target, "q.json")),
                               (target, os.path.join(target, "deeper", "..", "q.json")),
                               (target + "/", os.path.join(target, "q.json"))):  # a folder named with its slash
            p = rg("qualify", "--idx-dir", self.idx, "--draws", 2, "--band", "60", "--submission", folder,
                   "--output", report, "--quiet")
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("is inside the --submission folder", p.stderr)
            self.assertFalse(os.path.exists(target))

    def test_claims_nothing_re_derives_in_the_other_files(self):
        """The same in protocol.json and the two manifests (the hash chain recomputed around the
        edits, so that only the added keys are wrong): a key their writers never write fails."""
        d = self.copy("t-extra-chain")
        edits = {"protocol.json": lambda j: j.update(qualified=True),
                 "draw-manifest.json": lambda j: (j.update(reviewed=True), j["draws"][1].update(note="ok")),
                 "prediction-manifest.json": lambda j: (j.update(qualified=True), j["draws"][0].update(correct=9999))}
        for name, edit in edits.items():
            j = load(os.path.join(d, name))
            edit(j)
            save(os.path.join(d, name), j)
        self.rechain(d)
        lines = self.assert_caught(d, ["protocol.json: qualified: claimed, but nothing re-derives it",
                                       "draw-manifest.json: reviewed: claimed",
                                       "draw-manifest.json: draws[1].note: claimed",
                                       "prediction-manifest.json: qualified: claimed",
                                       "prediction-manifest.json: draws[0].correct: claimed"])
        self.assertEqual(len(lines), 5, lines)

    def test_prediction_manifest_rewritten_after_scoring(self):
        d = self.copy("t-manifest")
        path = os.path.join(d, "prediction-manifest.json")
        m = load(path)
        m["test_labels_scored"] = True
        save(path, m)
        self.assert_caught(d, ["accuracy.json: prediction_manifest_sha256", "prediction-manifest.json: test_labels_scored"])

    def test_a_file_missing(self):
        for name in ("results/draw-01.json", "predictions/draw-00.npy", "protocol.json", "README.md"):
            with self.subTest(name=name):
                d = self.copy("t-missing-" + name.replace("/", "-"))
                os.remove(os.path.join(d, name))
                self.assert_caught(d, [name + ": missing"])

    def test_other_idx_files(self):
        lines = self.assert_caught(self.sub, ["protocol.json: raw_sources.train_images.sha256",
                                              "protocol.json: raw_sources.train_labels.md5",
                                              "draw-manifest.json: draws[0].input_sha256"], idx=self.other_idx)
        self.assertTrue(any(line.startswith("FAILED accuracy.json: draws[1].test_labels_sha256") for line in lines))

    def test_draws_not_a_list(self):
        # A "draws" that is no list of one object per draw is its own line, never "every claim holds".
        for name in ("draw-manifest.json", "prediction-manifest.json", "accuracy.json"):
            for value in (None, {}, "x", []):
                with self.subTest(name=name, value=value):
                    d = self.copy(f"t-draws-{name}-{json.dumps(value)}")
                    obj = load(os.path.join(d, name))
                    obj["draws"] = value
                    save(os.path.join(d, name), obj)
                    self.rechain(d)
                    self.assert_caught(d, [name + ": draws: not a list of 2 objects"])
                    shutil.rmtree(d)

    def test_a_draw_not_an_object(self):
        # draws[0] = 5: a failure line of its own, not a JSON type error ending verify; draw 1 is still checked.
        for name in ("draw-manifest.json", "prediction-manifest.json", "accuracy.json"):
            with self.subTest(name=name):
                d = self.copy("t-entry-" + name)
                obj = load(os.path.join(d, name))
                obj["draws"][0] = 5
                save(os.path.join(d, name), obj)
                self.rechain(d)
                lines = self.assert_caught(d, [name + ": draws[0]: not an object (5)"])
                self.assertEqual(len(lines), 1, lines)
                obj["draws"][1]["index"] = 7  # the other entry is still checked
                save(os.path.join(d, name), obj)
                self.rechain(d)
                self.assert_caught(d, [name + ": draws[0]: not an object", name + ": draws[1].index"])
                shutil.rmtree(d)

    def test_band_out_of_range(self):
        # A band of 100 (every prediction may be wrong), rewritten consistently everywhere: the
        # protocol's range, which qualify refuses, catches it in verify too.
        d = self.copy("t-band-100")
        protocol = load(os.path.join(d, "protocol.json"))
        protocol.update(band_percent="100", required_correct=0, per_draw_floor=0)
        save(os.path.join(d, "protocol.json"), protocol)
        accuracy = load(os.path.join(d, "accuracy.json"))
        accuracy["band"].update(band_percent="100", required_correct=0, per_draw_floor=0, meets_accuracy_target=True,
                                per_draw_floor_met=True, passed=True)
        save(os.path.join(d, "accuracy.json"), accuracy)
        self.rechain(d)
        lines = self.assert_caught(d, ["protocol.json: band_percent: band_percent must be a decimal percentage in (0, 100)"])
        self.assertEqual(len(lines), 1, lines)
        # Counted by hand: 5 files read, 5 links of the hash chain, and the band, which fails; the
        # rest needs a protocol and is not checked. A failed claim counts as a claim.
        self.assertIn("(10 of 11 hold)", self.verify(d).stderr)
        self.assertEqual(rg("qualify", "--idx-dir", self.idx, "--band", "100", "--draws", 1).returncode, 2)

    def test_a_prediction_file_of_another_dtype(self):
        # Big-endian int64: the same values, other bytes; the file named once in its line.
        d = self.copy("t-dtype")
        path = os.path.join(d, "predictions/draw-00.npy")
        np.save(path, np.load(path).astype(">i8"))
        lines = self.assert_caught(d, ["predictions/draw-00.npy: big-endian"])
        self.assertIn("FAILED predictions/draw-00.npy: big-endian dtype '>i8' is not supported", lines)

    def test_a_count_written_as_text_reads_as_text(self):
        # accuracy.json's total_correct as the string of its own value: one failure, and the line
        # shows the two kinds apart (it once read "claims 98208, re-derived 98208").
        d = self.copy("t-text")
        acc = load(os.path.join(d, "accuracy.json"))
        value = acc["total_correct"]
        acc["total_correct"] = str(value)
        save(os.path.join(d, "accuracy.json"), acc)
        lines = self.assert_caught(d, ["accuracy.json: total_correct"])
        self.assertIn(f'FAILED accuracy.json: total_correct: claims "{value}", re-derived {value}', lines)

    def test_a_prediction_outside_the_classes(self):
        # A prediction of 12: no class; the file's line names the value and its place (check_classes).
        d = self.copy("t-class")
        path = os.path.join(d, "predictions/draw-00.npy")
        a = np.load(path)
        a[33] = 12
        np.save(path, a)
        lines = self.assert_caught(d, ["predictions/draw-00.npy: prediction 12 at index 33 is outside 0..9"])
        self.assertIn("FAILED predictions/draw-00.npy: prediction 12 at index 33 is outside 0..9", lines)

    def test_seeds_that_are_no_integers(self):
        # A seed written as a float (or negative) would read as a truncated integer: refused as such.
        for value in (2026091400.5, -1, "2026091400", None):
            with self.subTest(value=value):
                d = self.copy(f"t-seed-{value}")
                protocol = load(os.path.join(d, "protocol.json"))
                protocol["dataset_seeds"][0] = value
                save(os.path.join(d, "protocol.json"), protocol)
                self.rechain(d)
                self.assertEqual(self.assert_caught(d, ["protocol.json: dataset_seeds: a seed is not"]),
                                 [f"FAILED protocol.json: dataset_seeds: a seed is not a non-negative integer: "
                                  f"{json.dumps(value)}"])

    def test_protocol_config_invalid(self):
        d = self.copy("t-config")
        protocol = load(os.path.join(d, "protocol.json"))
        protocol["config"]["epochs"] = -1
        save(os.path.join(d, "protocol.json"), protocol)
        self.rechain(d)
        lines = self.assert_caught(d, ["protocol.json: config: "])
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("(10 of 11 hold)", self.verify(d).stderr)  # as for the band above

    def test_gzip_fifo_refused(self):
        # A FIFO named as the .gz that never ends: refused at the gunzip bound, not read until memory runs out.
        d = os.path.join(self.tmp, "fifo-idx")
        os.makedirs(d)
        shutil.copy(os.path.join(self.idx, "train-labels-idx1-ubyte"), d)
        fifo = os.path.join(d, "train-images-idx3-ubyte.gz")
        os.mkfifo(fifo)

        def endless():
            try:
                with open(fifo, "wb") as f:
                    f.write(b"\x1f\x8b")
                    chunk = bytes(1 << 20)
                    while True:
                        f.write(chunk)
            except (BrokenPipeError, OSError):
                pass
        writer = threading.Thread(target=endless, daemon=True)
        writer.start()
        p = rg("qualify", "--idx-dir", d, "--draws", 1, "--quiet")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("a gzip file of more than 1073741824 bytes", p.stderr)
        writer.join(10)

    def test_readme_edited(self):
        # The README is the published verdict: it must be what the re-derived scores render.
        d = self.copy("t-readme")
        path = os.path.join(d, "README.md")
        text = read(path).decode()
        with open(path, "w") as f:
            f.write(text.replace("Passed: no", "Passed: yes") if "Passed: no" in text
                    else text.replace("Passed: yes", "Passed: no"))
        self.assertEqual(self.assert_caught(d, ["README.md: its score table or verdict"]),
                         ["FAILED README.md: its score table or verdict is not what the re-derived scores give"])
        # A row of the table edited, likewise; a sentence that states no score (the times) is not compared.
        d = self.copy("t-readme-row")
        lines = text.splitlines(keepends=True)
        row = next(i for i, line in enumerate(lines) if line.startswith("| 0 |"))
        lines[row] = lines[row].replace(" | 10000 | ", " | 9999 | ")
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write("".join(lines))
        self.assert_caught(d, ["README.md: its score table or verdict"])
        d = self.copy("t-readme-times")
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write(text.replace("**Time per task.** Mean", "**Time per task.** Average"))
        p = self.verify(d)
        self.assertEqual((p.returncode, p.stdout), (0, ""), p.stderr)

    def test_a_renamed_folder_still_holds(self):
        d = os.path.join(self.tmp, "renamed-elsewhere")
        shutil.copytree(self.sub, d)
        p = self.verify(d)
        self.assertEqual((p.returncode, p.stdout), (0, ""), p.stderr)

    def test_nothing_but_the_submissions_files(self):
        for name, make in (("notes.txt", lambda d: open(os.path.join(d, "notes.txt"), "w").close()),
                           ("predictions/draw-02.npy",
                            lambda d: shutil.copy(os.path.join(d, "predictions/draw-00.npy"),
                                                  os.path.join(d, "predictions/draw-02.npy"))),
                           ("extra", lambda d: os.mkdir(os.path.join(d, "extra"))),
                           (".hidden", lambda d: open(os.path.join(d, ".hidden"), "w").close())):
            with self.subTest(name=name):
                d = self.copy("t-stray-" + name.replace("/", "-"))
                make(d)
                self.assertEqual(self.assert_caught(d, [name + ": not a file of the submission"]),
                                 [f"FAILED {name}: not a file of the submission"])
        # A prediction file that is a link (here to a copy of itself outside the folder).
        d = self.copy("t-link")
        outside = os.path.join(self.tmp, "outside.npy")
        shutil.copy(os.path.join(d, "predictions/draw-00.npy"), outside)
        os.remove(os.path.join(d, "predictions/draw-00.npy"))
        os.symlink(outside, os.path.join(d, "predictions/draw-00.npy"))
        self.assert_caught(d, ["predictions/draw-00.npy: a link"])

    def result_edited(self, name, edit):
        """A copy whose results/draw-00.json `edit` changed, the manifest and chain made to agree."""
        d = self.copy(name)
        path = os.path.join(d, "results/draw-00.json")
        r = load(path)
        edit(r)
        save(path, r)
        pm = load(os.path.join(d, "prediction-manifest.json"))
        pm["draws"][0]["result_sha256"] = sha(read(path))
        save(os.path.join(d, "prediction-manifest.json"), pm)
        self.rechain(d)
        return d

    def test_result_claims(self):
        # A score in a result (written before any label is read), another backend than the protocol's.
        d = self.result_edited("t-result-score", lambda r: r.update(correct=9900, accuracy=0.99))
        self.assertEqual(sorted(self.assert_caught(d, [])),
                         ["FAILED results/draw-00.json: accuracy: a result holds no score (the labels are read after "
                          "it is frozen)", "FAILED results/draw-00.json: correct: a result holds no score (the labels "
                          "are read after it is frozen)"])
        d = self.result_edited("t-result-backend", lambda r: r.update(backend="cuda-fused"))
        self.assert_caught(d, ["results/draw-00.json: backend"])
        # A forged state hash: only a retraining can tell, and it does.
        d = self.result_edited("t-result-state", lambda r: r.update(state_vector_sha256="0" * 64))
        self.assertEqual(self.verify(d).returncode, 0)
        p = self.verify(d, "--retrain")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertTrue(p.stdout.startswith("FAILED results/draw-00.json: state_vector_sha256 (retrain): claims 000"),
                        p.stdout)

    def test_backend_without_retrain(self):
        p = rg("verify", self.sub, "--idx-dir", self.idx, "--backend", "cpu")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--backend only steers --retrain", p.stderr)

    def test_unknown_backend_before_any_file_is_read(self):
        # An IDX folder that does not exist: the name is refused first, so the error is the backend's.
        p = rg("verify", self.sub, "--idx-dir", os.path.join(self.tmp, "nowhere"), "--retrain", "--backend", "bogus")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertIn("unknown backend 'bogus'", p.stderr)

    def test_idx_files_missing_before_anything_is_read(self):
        # Not even the progress line: the IDX folder is checked before the submission is read.
        for idx in (os.path.join(self.tmp, "nowhere"), self.tmp):
            with self.subTest(idx=idx):
                p = rg("verify", self.sub, "--idx-dir", idx)
                self.assertEqual((p.returncode, p.stdout, p.stderr.count("\n")), (1, "", 1), p.stderr)
                self.assertIn("not a directory" if idx != self.tmp else "no train-images-idx3-ubyte", p.stderr)

    def test_all_or_nothing(self):
        # An existing non-empty folder is refused before any work, and left as it was.
        taken = os.path.join(self.tmp, "taken")
        os.makedirs(taken)
        open(os.path.join(taken, "keep"), "w").close()
        p = rg("qualify", "--idx-dir", self.idx, "--draws", 1, "--submission", taken, "--quiet")
        self.assertEqual(p.returncode, 1)
        self.assertIn("not empty", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertEqual(os.listdir(taken), ["keep"])
        # A failure before any file (here: no label file) leaves neither the folder nor a temporary one;
        # a failure with files written is test_submission_writer.cpp's.
        broken = os.path.join(self.tmp, "broken-idx")
        os.makedirs(broken)
        shutil.copy(os.path.join(self.idx, "train-images-idx3-ubyte"), broken)
        out = os.path.join(self.tmp, "never")
        p = rg("qualify", "--idx-dir", broken, "--draws", 1, "--submission", out, "--quiet")
        self.assertEqual(p.returncode, 1)
        self.assertFalse([n for n in os.listdir(self.tmp) if "never" in n])
        # An existing empty folder is filled; the draws together give the same bytes.
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        p = rg("qualify", "--idx-dir", self.idx, "--draws", 2, "--band", "60", "--together", "--submission", empty + "/",
               "--quiet")
        self.assertIn(p.returncode, (0, 3), p.stderr)
        for name in ("predictions/draw-00.npy", "predictions/draw-01.npy"):
            self.assertEqual(read(os.path.join(empty, name)), read(os.path.join(self.sub, name)))
        # The protocol differs (together, frozen_at_utc), the draws do not.
        self.assertEqual(load(os.path.join(empty, "draw-manifest.json"))["draws"],
                         load(os.path.join(self.sub, "draw-manifest.json"))["draws"])
        self.assertEqual(self.verify(empty).returncode, 0)
        self.assertFalse([n for n in os.listdir(self.tmp) if ".tmp-" in n])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=1)
