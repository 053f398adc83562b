"""`revgraph run` on good input: metadata numpy recomputes, the state archive, repeats, the API, and honest
outputs (test_cli.py runs it)."""
import datetime
import json
import os
import subprocess
import time
import unittest

import numpy as np

from cli_support import (
    VECTORS, REVGRAPH, API_RUN, SPEC_KEYS, TIMING_KEYS, VOLATILE_KEYS, DEFAULT_CONFIG, sha, read_bytes,
    write_bytes, rg, make_draw, save_npz, CliTestCase)


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

    def test_emulated_gpu_backends_at_other_widths_write_cpu_references_outputs(self):
        # cuda-fused's launch plan at a width other than 82 runs engine/cuda/fused_any/'s kernels, cuda's
        # its operations at the width's halves; emulated on the CPU (products in the reference's order)
        # both give the float32 reference's very predictions, state and hashes.
        for width, backend in (("128", "cuda-fused"), ("90", "cuda-fused"), ("128", "cuda")):
            sets = ["--set", "width=" + width, "--set", "batch_size=8"]
            out_e, emulated, _ = self.run_to("emulated-" + width, "--input", self.stored, "--backend", backend,
                                              "--emulate", *sets)
            out_r, reference, _ = self.run_to("reference-" + width, "--input", self.stored, "--backend",
                                              "cpu-reference", *sets)
            self.assertEqual(emulated["backend"], backend)
            self.assertEqual(emulated["config"]["width"], int(width))
            for key in ("predictions_sha256", "scores_sha256", "state_vector_sha256", "final_parameter_sha256"):
                self.assertEqual(emulated[key], reference[key], key)
            self.assertEqual(read_bytes(os.path.join(out_e, "r.predictions.npy")),
                             read_bytes(os.path.join(out_r, "r.predictions.npy")))
            with np.load(os.path.join(out_e, "s.npz")) as e, np.load(os.path.join(out_r, "s.npz")) as r:
                self.assertEqual(sorted(e.files), sorted(r.files))
                for name in e.files:
                    self.assertEqual(e[name].tobytes(), r[name].tobytes(), name)

    def test_emulated_cluster_epochs_write_cpu_references_outputs(self):
        # --cluster-blocks N: cuda-fused runs each epoch as one launch of a thread-block cluster; its
        # emulation (the same loop on the CPU) gives the float32 reference's very hashes, at clusters
        # of 16 and of 3 blocks (a step's units not a multiple of it).
        sets = ["--set", "batch_size=37", "--set", "epochs=2"]
        _, reference, _ = self.run_to("cluster-ref", "--input", self.stored, "--backend", "cpu-reference", *sets)
        for blocks in ("16", "3"):
            with self.subTest(blocks=blocks):
                _, emulated, _ = self.run_to("cluster-" + blocks, "--input", self.stored, "--backend", "cuda-fused",
                                             "--emulate", "--cluster-blocks", blocks, *sets)
                for key in ("predictions_sha256", "scores_sha256", "state_vector_sha256", "final_parameter_sha256",
                            "final_velocity_sha256"):
                    self.assertEqual(emulated[key], reference[key], key)

    def test_repeat_runs_byte_identical(self):
        a, ra, _ = self.run_to("twice-a", "--input", self.compressed)
        b, rb, _ = self.run_to("twice-b", "--input", self.compressed)
        c, rc_, _ = self.run_to("twice-c", "--input", self.compressed, "--repeat", "3")
        self.assertEqual(rc_["run_count"], 3)
        # Each run's bytes held to the first's: the key says so with --repeat only.
        self.assertIs(rc_["replays_byte_identical"], True)
        self.assertNotIn("replays_byte_identical", ra)
        _, emulated, _ = self.run_to("twice-emulated", "--input", self.compressed, "--backend", "cuda-fused",
                                     "--emulate", "--repeat", "2", "--set", "epochs=1")
        self.assertIs(emulated["replays_byte_identical"], True)
        for n in ("r.predictions.npy", "s.npz"):
            self.assertEqual(read_bytes(os.path.join(a, n)), read_bytes(os.path.join(b, n)), n)
            self.assertEqual(read_bytes(os.path.join(a, n)), read_bytes(os.path.join(c, n)), n)
        strip = lambda r: {k: v for k, v in r.items()
                           if k not in VOLATILE_KEYS | {"run_count", "training_prediction_seconds_statistic",
                                                        "replays_byte_identical"}}
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
