"""revgraph.qualify(...) and revgraph.verify(...): the engine's protocol from Python, on a made-up
IDX set of 20,011 images; the same report and folder as `revgraph qualify`, checked by the CLI's
`verify` and by numpy (the correct counts)."""
import hashlib
import json
import re
import os
import signal
import struct
import subprocess
import threading
import time

import numpy as np
import pytest

import revgraph
from conftest import CLI

N = 20011


@pytest.fixture(scope="module")
def idx(tmp_path_factory):
    d = tmp_path_factory.mktemp("idx")
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 10, N).astype(np.uint8)
    base = rng.integers(0, 256, (10, 28, 28)).astype(np.int16)
    pixels = np.clip(base[labels] + rng.integers(-200, 200, (N, 28, 28)), 0, 255).astype(np.uint8)
    (d / "train-images-idx3-ubyte").write_bytes(struct.pack(">iiii", 2051, N, 28, 28) + pixels.tobytes())
    (d / "train-labels-idx1-ubyte").write_bytes(struct.pack(">ii", 2049, N) + labels.tobytes())
    return d, labels


def test_qualify_and_verify(tmp_path, idx):
    d, labels = idx
    sub = tmp_path / "sub"
    report = revgraph.qualify(d, submission=sub, draws=2, band="60", backend="cpu", epochs=1)
    assert report["config"]["epochs"] == 1 and report["total_count"] == 20000
    assert report["total_needed"] == 8000 and report["official_mnist"] is False and report["qualified"] is False
    for i, draw in enumerate(report["draws"]):
        p = np.random.Generator(np.random.PCG64(2026091400 + i)).permutation(N)
        predictions = np.load(sub / "predictions" / f"draw-{i:02d}.npy")
        assert draw["correct"] == int(np.count_nonzero(predictions == labels[p[10000:20000]]))
    assert report["passed"] is (report["total_correct"] >= 8000 and all(x["correct"] >= 3850 for x in report["draws"]))
    held = revgraph.verify(sub, d)
    assert held["holds"] is True and held["failures"] == [] and held["claims"] > 2 * 3  # each draw's several keys
    assert revgraph.verify(sub, d, retrain=True, backend="cpu")["holds"] is True
    # The CLI's verify agrees, and a changed total is one failure line from either.
    if CLI:
        assert subprocess.run([CLI, "verify", str(sub), "--idx-dir", str(d), "--quiet"]).returncode == 0
    acc = json.loads((sub / "accuracy.json").read_text())
    acc["total_correct"] += 1
    (sub / "accuracy.json").write_text(json.dumps(acc, indent=2) + "\n")
    v = revgraph.verify(sub, d)
    assert v["holds"] is False and [f.split(":")[:2] for f in v["failures"]] == [["accuracy.json", " total_correct"]]


def test_a_width_reaches_the_submissions_protocol_and_verify_retrains_it(tmp_path, idx):
    d, _ = idx
    wide, narrow = tmp_path / "wide", tmp_path / "narrow"
    report = revgraph.qualify(d, submission=wide, draws=2, band="60", backend="cpu", epochs=1, width=96)
    assert report["config"]["width"] == 96
    assert json.loads((wide / "protocol.json").read_text())["config"]["width"] == 96
    # The width trains another model: rev88's width on the same draws predicts other bytes...
    revgraph.qualify(d, submission=narrow, draws=2, band="60", backend="cpu", epochs=1)
    assert (wide / "predictions" / "draw-00.npy").read_bytes() != (narrow / "predictions" / "draw-00.npy").read_bytes()
    # ...so verify, retraining from the protocol alone on the reference backend, used width 96.
    assert revgraph.verify(wide, d, retrain=True, backend="cpu-reference")["holds"] is True


def sha256_file(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_submission_written_before_width_existed_still_verifies(tmp_path, idx):
    # Such a folder has no `width` in protocol.json nor in results/draw-NN.json: it means 82.
    d, _ = idx
    sub = tmp_path / "old"
    revgraph.qualify(d, submission=sub, draws=2, band="60", backend="cpu", epochs=1)

    def rewrite(name, change):
        j = json.loads((sub / name).read_text())
        change(j)
        (sub / name).write_text(json.dumps(j, indent=2) + "\n")

    rewrite("protocol.json", lambda j: j["config"].pop("width"))
    rewrite("draw-manifest.json", lambda j: j.update(protocol_sha256=sha256_file(sub / "protocol.json")))
    for i in range(2):
        rewrite(f"results/draw-{i:02d}.json", lambda j: j["config"].pop("width"))

    def manifest(j):
        j.update(protocol_sha256=sha256_file(sub / "protocol.json"),
                 draw_manifest_sha256=sha256_file(sub / "draw-manifest.json"))
        for draw in j["draws"]:
            draw["result_sha256"] = sha256_file(sub / draw["result_file"])
    rewrite("prediction-manifest.json", manifest)
    rewrite("accuracy.json", lambda j: j.update(prediction_manifest_sha256=sha256_file(sub / "prediction-manifest.json")))
    v = revgraph.verify(sub, d, retrain=True, backend="cpu")
    assert v["failures"] == [] and v["holds"] is True


def test_qualify_refusals(tmp_path, idx):
    d, _ = idx
    # A wrong type is TypeError, a wrong value ValueError (the module's rule, _core.cpp).
    for kwargs in ({"band": 12}, {"band": 12.0}, {"draws": 1.0}, {"draws": True}, {"draws": "1"},
                   {"first_seed": 1.5}, {"first_seed": False}):
        with pytest.raises(TypeError):
            revgraph.qualify(d, **{"draws": 1, "band": "12", **kwargs})
    for kwargs in ({"band": "1e1"}, {"band": "100"}, {"band": "0"}, {"draws": 0}, {"draws": 1001},
                   {"first_seed": -1}, {"backend": "nope"}, {"epochs": -1}):
        with pytest.raises(ValueError):
            revgraph.qualify(d, **{"draws": 1, "band": "12", **kwargs})
    # One range said for any band qualify refuses, a number or not (a text that is none was told
    # "in 0..100", then "0" was refused).
    for band in ("100", "0", "abc", "1e1"):
        with pytest.raises(ValueError, match=f"^band must be a decimal percentage in \\(0, 100\\) \\(\"12\", \"7.5\"\\), "
                                             f"got '{band}'$"):
            revgraph.qualify(d, draws=1, band=band)
    for draws in (1001, 2**70, -2**70):  # beyond int64 too: the engine's range, not C++'s
        with pytest.raises(ValueError, match=f"^draws must be in 1..1000, got {draws}$"):
            revgraph.qualify(d, draws=draws)
    # The draws' seeds follow one another: none may wrap past 2^64 - 1 (to seed 0).
    with pytest.raises(ValueError, match="leaves no room for 2 draws"):
        revgraph.qualify(d, first_seed=2**64 - 1, draws=2)
    revgraph.qualify(d, first_seed=2**64 - 1, draws=1)  # the last seed there is
    # A backend without retrain steers nothing: refused as the command refuses --backend without --retrain.
    with pytest.raises(ValueError, match="retrain"):
        revgraph.verify(tmp_path, d, backend="cpu")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("")
    with pytest.raises(RuntimeError, match="not empty"):
        revgraph.qualify(d, submission=tmp_path / "taken", draws=1)
    with pytest.raises(RuntimeError, match="no train-images-idx3-ubyte"):
        revgraph.qualify(tmp_path, draws=1)
    # Said for Python too: no command-line option is named.
    with pytest.raises(RuntimeError, match=r"nowhere: not a directory \(the folder of the MNIST IDX files\)$"):
        revgraph.qualify(tmp_path / "nowhere", draws=1)
    assert os.listdir(tmp_path / "taken") == ["x"]


def test_band_rule_is_the_engines_exact_integers():
    # The bands on 11 draws of 10,000: 96,800 / 101,200 / 104,500 / 106,700 / 107,800.
    got = [revgraph.band_rule(b, 110000, 10000) for b in ("12", "8", "5", "3", "2")]
    assert [g["required_correct"] for g in got] == [96800, 101200, 104500, 106700, 107800]
    # 1.5 points below each band, per draw of 10,000: 86.5 %, 90.5 %, 93.5 %, 95.5 %, 96.5 %.
    assert [g["per_draw_floor"] for g in got] == [8650, 9050, 9350, 9550, 9650]
    # Exact: a ceiling, never a float that rounds the wrong way (7.5 % of 3 draws of 7 -> 19.425 -> 20).
    assert revgraph.band_rule("7.5", 21, 7) == {"required_correct": 20, "per_draw_floor": 7}
    # What `revgraph qualify` reports for the same band: one rule.
    with pytest.raises(ValueError, match="band"):
        revgraph.band_rule("12%", 100, 10)
    with pytest.raises(TypeError):
        revgraph.band_rule(12, 100, 10)
    # Counts no draws can have: a draw of no image, a total of less than one draw.
    with pytest.raises(ValueError, match=re.escape("per_draw must be in 1..")):
        revgraph.band_rule("12", 100, 0)
    with pytest.raises(ValueError, match="less than one draw of 10"):
        revgraph.band_rule("12", 5, 10)


def test_band_verdict_is_the_published_rule_at_its_edges():
    # 11 draws of 10,000 at 12 %: 96,800 in all and no draw below 8,650 (the numbers, not
    # the engine's). At the edge of each: the total one short, one draw one below the floor.
    at = [8650] + [8815] * 10  # 96,800 exactly
    v = revgraph.band_verdict("12", at, 10000)
    assert v == {"passed": True, "total_correct": 96800, "total": 110000, "required_correct": 96800,
                 "per_draw_floor": 8650, "meets_total": True, "meets_floor": True, "draws_below_floor": []}
    short = revgraph.band_verdict("12", [8650] + [8815] * 9 + [8814], 10000)
    assert (short["passed"], short["meets_total"], short["meets_floor"]) == (False, False, True)
    low = revgraph.band_verdict("12", [9900, 8649] + [9900] * 9, 10000)
    assert (low["passed"], low["meets_total"], low["draws_below_floor"]) == (False, True, [2])
    # Draws of their own sizes: each held to its own floor (7.5 % - 1.5 = 9 % below: ceil(0.91 t)).
    v = revgraph.band_verdict("7.5", np.array([91, 9]), [100, 10])
    assert (v["total"], v["required_correct"], v["per_draw_floor"], v["draws_below_floor"]) == (110, 102, 91, [2])
    for args, error, said in ((("12", [], 10000), ValueError, "at least one draw"),
                              (("12", [5, 5], [10]), ValueError, "2 draws"),
                              (("12", [11], 10), ValueError, "11 correct of 10"),
                              (("12", [0], 0), ValueError, "a total of 0"),
                              (("12%", [5], 10), ValueError, "band"),
                              ((12, [5], 10), TypeError, "band"),
                              (("12", 5, 10), TypeError, "correct"),
                              (("12", [5.5], 10), TypeError, "correct[0]"),
                              (("12", [-1], 10), ValueError, "correct[0]")):
        with pytest.raises(error, match=re.escape(said)):
            revgraph.band_verdict(*args)


def test_band_rule_docstring_names_the_errors_it_raises():
    # The docstring once said "ValueError otherwise" while a band that is no str (12, 7.5) raised
    # TypeError, as every argument of the wrong type does: the docstring must say which is which.
    doc = " ".join(revgraph.band_rule.__doc__.split())
    for call, error in ((lambda: revgraph.band_rule(12, 100, 10), TypeError),
                        (lambda: revgraph.band_rule(7.5, 100, 10), TypeError),
                        (lambda: revgraph.band_rule("12", 1.5, 10), TypeError),
                        (lambda: revgraph.band_rule("12%", 100, 10), ValueError),
                        (lambda: revgraph.band_rule("100.5", 100, 10), ValueError),
                        (lambda: revgraph.band_rule("12", -1, 10), ValueError)):
        with pytest.raises(error):
            call()
    assert "TypeError" in doc and "ValueError" in doc
    assert "TypeError for a band that is not a str" in doc, doc


def test_progress_lines_and_a_stop_between_draws(tmp_path, idx):
    """progress= gets the command's lines; an exception from it, or Ctrl-C (heard between draws),
    stops the run before anything of its submission folder is written."""
    d, _ = idx
    lines = []
    revgraph.qualify(d, draws=2, band="60", backend="cpu", epochs=1, progress=lines.append)
    if CLI:
        p = subprocess.run([CLI, "qualify", "--idx-dir", str(d), "--draws", "2", "--band", "60", "--backend", "cpu",
                            "--set", "epochs=1"], capture_output=True, text=True)
        said = [line[len("revgraph: "):] for line in p.stderr.splitlines() if line.startswith("revgraph: draw")]
        untimed = [line.split(": trained")[0] for line in lines]
        assert untimed == [line.split(": trained")[0] for line in said], (lines, said)
    assert len(lines) == 4 and lines[0].startswith("draw 0 (seed 2026091400)") and lines[3].endswith("correct")
    # A draw scored is named as a draw trained was: its index, then its seed.
    assert lines[2].startswith("draw 0 (seed 2026091400): ") and lines[3].startswith("draw 1 (seed 2026091401): ")

    class Stop(Exception):
        pass

    def stop(line):
        raise Stop(line)

    def stop_when_scored(line):  # the last lines: a draw scored, said before the folder is committed
        if line.endswith("correct"):
            raise Stop(line)

    for k, callback in enumerate((stop, stop_when_scored)):
        with pytest.raises(Stop):
            revgraph.qualify(d, submission=tmp_path / f"stopped{k}", draws=2, band="60", backend="cpu", epochs=1,
                             progress=callback)
        assert not (tmp_path / f"stopped{k}").exists()
    with pytest.raises(TypeError, match="progress must be a callable"):
        revgraph.qualify(d, draws=1, progress="yes")
    # SIGINT while the engine trains (the GIL released, no Python callback): KeyboardInterrupt at the
    # next progress line, no folder. 3 draws of 200 epochs take seconds here (~2 s a draw), far
    # longer than the 0.2 s before the signal on any machine, and every progress line, the scores'
    # included, comes before the folder is committed.
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            revgraph.qualify(d, submission=tmp_path / "interrupted", draws=3, band="60", backend="cpu", epochs=200)
    finally:
        timer.cancel()
    assert not (tmp_path / "interrupted").exists(), f"the run ended after {time.monotonic() - start:.2f} s"


def test_data_arrays_are_the_commands_files(tmp_path, idx):
    """revgraph.data_mnist and data_embedded give the very arrays `revgraph data mnist|embedded`
    writes (the draw archive and the query labels), the labels checked against numpy's permutation
    of the made-up IDX labels, and any uint64 seed through both."""
    d, labels = idx
    for seed in (5, 2**64 - 1):
        got = revgraph.data_mnist(d, seed=seed)
        assert got["official_mnist"] is False
        assert [got[k].shape for k in ("train_images", "train_labels", "test_images", "test_labels")] == [
            (10000, 1, 9, 9), (10000,), (10000, 1, 9, 9), (10000,)]
        p = np.random.Generator(np.random.PCG64(seed)).permutation(N)
        assert np.array_equal(got["train_labels"], labels[p[:10000]])
        assert np.array_equal(got["test_labels"], labels[p[10000:20000]])
        if CLI:
            out, lab = tmp_path / f"d{seed}.npz", tmp_path / f"l{seed}.npy"
            subprocess.run([CLI, "data", "mnist", "--idx-dir", str(d), "--seed", str(seed), "--output", str(out),
                            "--test-labels-output", str(lab), "--quiet"], check=True)
            with np.load(out) as z:
                for k in ("train_images", "train_labels", "test_images"):
                    assert z[k].dtype == got[k].dtype and z[k].tobytes() == got[k].tobytes(), k
            assert np.load(lab).tobytes() == got["test_labels"].tobytes()
    e = revgraph.data_embedded()
    assert e["train_images"].shape == (5000, 1, 9, 9) and e["test_labels"].shape == (5000,)
    if CLI:
        out, lab = tmp_path / "e.npz", tmp_path / "e.npy"
        subprocess.run([CLI, "data", "embedded", "--split-seed", "12", "--output", str(out), "--test-labels-output",
                        str(lab), "--quiet"], check=True)
        e12 = revgraph.data_embedded(split_seed=12)
        with np.load(out) as z:
            assert all(z[k].tobytes() == e12[k].tobytes() for k in ("train_images", "train_labels", "test_images"))
        assert np.load(lab).tobytes() == e12["test_labels"].tobytes()
        assert e12["train_labels"].tobytes() != e["train_labels"].tobytes()
    # Straight into a task: the arrays are what Task takes.
    r = revgraph.fit_predict(e["train_images"], e["train_labels"], e["test_images"], backend="cpu", epochs=1)
    assert r.predictions.shape == e["test_labels"].shape
    with pytest.raises(RuntimeError, match="not a directory"):
        revgraph.data_mnist(tmp_path / "nowhere", seed=1)
    with pytest.raises(ValueError, match="seed"):
        revgraph.data_mnist(d, seed=-1)
    with pytest.raises(TypeError):
        revgraph.data_embedded(split_seed="11")
