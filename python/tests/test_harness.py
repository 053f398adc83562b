"""python3 -m revgraph learn|score on a made-up medium.npz: learn reads only the three inputs (a
corrupt test_labels member does not stop it), writes the CLI's predictions, never replaces an
input and writes nothing when it fails; score prints the evaluator's keys (against numpy), its
verdict exact at the band's edge, exit 0 below the band unless --fail-below; a file that is no
numpy file is named as such, and a reader that closes stdout early gets no traceback."""
import json
import os
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import revgraph
from revgraph import _harness
from conftest import make_task, run_cli, write_medium


def score(data, predictions, *extra):
    return harness("score", "--data", str(data), "--predictions", str(predictions), *extra)


def harness(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "revgraph", *args], capture_output=True, text=True, cwd=cwd)


def corrupt_member(path, name):
    """Overwrites the first bytes of a stored member's data: reading it fails (bad magic, bad CRC)."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name + ".npy")
        assert info.compress_type == zipfile.ZIP_STORED
    with open(path, "r+b") as f:
        f.seek(info.header_offset + 26)
        name_len, extra_len = struct.unpack("<HH", f.read(4))
        f.seek(info.header_offset + 30 + name_len + extra_len)
        f.write(b"\xffcorrupt member\xff")


@pytest.fixture
def medium(tmp_path):
    path = tmp_path / "medium.npz"
    arrays = write_medium(path, seed=42, train=500, test=120)
    return path, arrays


def test_learn_writes_the_api_and_cli_predictions(tmp_path, medium):
    path, (train, labels, test, _) = medium
    out = tmp_path / "predictions.npy"
    meta = tmp_path / "meta.json"
    (tmp_path / "c.json").write_text(json.dumps({"depth": 3, "epochs": 4, "seed": 9}))
    p = harness("learn", "--data", str(path), "--predictions", str(out), "--config", str(tmp_path / "c.json"),
                "--set", "epochs=3", "--set", "batch_size=50", "--backend", "cpu", "--metadata", str(meta))
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    predictions = np.load(out)
    assert predictions.dtype == np.int64 and predictions.shape == (120,)
    # The same as the API with the same config (the file's, then --set in order) ...
    expected = revgraph.fit_predict(train, labels, test, backend="cpu", depth=3, epochs=3, seed=9, batch_size=50)
    assert out.read_bytes() == expected.predictions_npy()
    # ... and as the command on an archive of the three inputs.
    np.savez(tmp_path / "draw.npz", train_images=train, train_labels=labels, test_images=test)
    run_cli("run", "--input", str(tmp_path / "draw.npz"), "--config", str(tmp_path / "c.json"), "--set", "epochs=3",
            "--set", "batch_size=50", "--backend", "cpu", "--output", str(tmp_path / "r.json"), "--quiet")
    assert out.read_bytes() == (tmp_path / "r.predictions.npy").read_bytes()
    m = json.loads(meta.read_text())
    cli = json.loads((tmp_path / "r.json").read_text())
    assert set(m) == set(cli)
    assert m["input"] == str(path) and m["predictions_file"] == "predictions.npy"
    for key in ("config", "input_hashes", "final_parameter_sha256", "predictions_sha256", "scores_sha256"):
        assert m[key] == cli[key], key


def test_learn_says_a_run_diverged_as_the_command_does(tmp_path, medium):
    path, _ = medium
    out = tmp_path / "predictions.npy"
    p = harness("learn", "--data", str(path), "--predictions", str(out), "--set", "learning_rate=2", "--backend",
                "cpu", "--quiet")
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == ["revgraph: warning: 120 of 120 query rows scored NaN or infinity: the run "
                                     "diverged, and their predictions mean nothing (a smaller learning_rate, alpha or weight_decay may help)"]
    p = harness("learn", "--data", str(path), "--predictions", str(tmp_path / "p2.npy"), "--backend", "cpu", "--quiet")
    assert p.returncode == 0 and p.stderr == ""


def test_learn_never_reads_test_labels_or_indices(tmp_path, medium):
    path, (train, labels, test, _) = medium
    for name in ("test_labels", "train_indices", "test_indices"):
        corrupt_member(path, name)
        with np.load(path) as z, pytest.raises(Exception):
            z[name]  # the member really is unreadable
    out = tmp_path / "p.npy"
    p = harness("learn", "--data", str(path), "--predictions", str(out), "--backend", "cpu", "--quiet")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert out.read_bytes() == revgraph.fit_predict(train, labels, test, backend="cpu").predictions_npy()


def test_learn_asks_the_archive_for_three_members_only(tmp_path, medium, monkeypatch):
    path, _ = medium
    asked = []
    original = np.lib.npyio.NpzFile.__getitem__

    def recording(self, key):
        asked.append(key)
        return original(self, key)

    monkeypatch.setattr(np.lib.npyio.NpzFile, "__getitem__", recording)
    assert _harness.main(["learn", "--data", str(path), "--predictions", str(tmp_path / "p.npy"), "--backend", "cpu",
                          "--set", "epochs=1", "--quiet"]) == 0
    assert asked == ["train_images", "train_labels", "test_images"]


def test_a_config_key_as_an_option_points_at_set(tmp_path, medium):
    """learn --epochs 2 (as the command, which takes --set) is a usage mistake that names the way."""
    path, _ = medium
    out = str(tmp_path / "p.npy")
    for extra, said in ((["--epochs", "2"], "--epochs is a config key: use --set epochs=2"),
                        (["--learning-rate=0.2"], "--learning-rate is a config key: use --set learning_rate=0.2"),
                        (["--depth"], "--depth is a config key: use --set depth=VALUE"),
                        (["--bogus", "1"], "unrecognized arguments: --bogus 1")):
        p = harness("learn", "--data", str(path), "--predictions", out, *extra)
        assert p.returncode == 2 and p.stderr == f"revgraph: error: {said}\n", (extra, p.stderr)
        assert not os.path.exists(out)
    # score has no --set: no such hint there.
    p = harness("score", "--data", str(path), "--predictions", out, "--epochs", "2")
    assert p.returncode == 2 and p.stderr == "revgraph: error: unrecognized arguments: --epochs 2\n", p.stderr


def test_learn_refuses_to_replace_an_input(tmp_path, medium):
    path, _ = medium
    before = path.read_bytes()
    (tmp_path / "c.json").write_text("{}")
    for args in (["--predictions", str(path)],
                 ["--predictions", str(tmp_path / "." / "medium.npz")],
                 ["--predictions", str(tmp_path / "p.npy"), "--metadata", str(tmp_path / "c.json"),
                  "--config", str(tmp_path / "c.json")],
                 ["--predictions", str(tmp_path / "p.npy"), "--metadata", str(tmp_path / "p.npy")]):
        p = harness("learn", "--data", str(path), "--backend", "cpu", *args)
        assert p.returncode == 2, p.stderr
        assert p.stderr.startswith("revgraph: error: ") and p.stderr.count("\n") == 1, p.stderr
    os.link(path, tmp_path / "hardlink.npy")  # a .npy name: the same-file check, not the name rule
    p = harness("learn", "--data", str(path), "--predictions", str(tmp_path / "hardlink.npy"), "--backend", "cpu")
    assert p.returncode == 2 and "may not replace an input" in p.stderr
    assert path.read_bytes() == before
    assert (tmp_path / "c.json").read_text() == "{}"
    assert not (tmp_path / "p.npy").exists()


def test_learn_failures_write_nothing(tmp_path, medium):
    path, _ = medium
    out = tmp_path / "p.npy"
    out.write_bytes(b"an earlier result")
    cases = [
        (["--set", "depth=0"], 1, "revgraph: error: --set depth=0: config: depth must be in 1..1024, got 0\n"),
        (["--set", "depth"], 2, "revgraph: error: --set needs key=value, got 'depth'\n"),
        (["--backend", "gpu"], 1, "revgraph: error: backend: unknown backend 'gpu' "
                                   "(expected auto, cpu, cpu-reference, cuda or cuda-fused)\n"),
        (["--metadata", str(tmp_path / "missing" / "m.json")], 1, None),
        (["--config", str(tmp_path / "absent.json")], 1, None),
        (["--bogus"], 2, None),
    ]
    for extra, status, stderr in cases:
        p = harness("learn", "--data", str(path), "--predictions", str(out), *extra)
        assert p.returncode == status, (extra, p.stderr)
        assert p.stderr.startswith("revgraph: error: ") and p.stderr.count("\n") == 1, p.stderr
        if stderr:
            assert p.stderr == stderr
        assert out.read_bytes() == b"an earlier result"
    # The command says the same about a bad --set.
    cli = run_cli("run", "--set", "depth=0", check=False)
    assert cli.stderr == cases[0][2]


def test_learn_reads_config_as_the_command_does(tmp_path, medium):
    # One reader (engine/config_from.hpp) for both: a NUL inside a config file, trailing text, an
    # unknown --set key and a --set that repairs the file's value get the command's words.
    path, _ = medium
    (tmp_path / "nul.json").write_bytes(b'{"depth": 2}\x00{"depth": 0}')
    (tmp_path / "trailing.json").write_text('{"depth": 2} extra')
    (tmp_path / "zero.json").write_text('{"depth": 0, "epochs": 1}')
    cases = [(["--config", str(tmp_path / "nul.json")], 1), (["--config", str(tmp_path / "trailing.json")], 1),
             (["--set", "dept=2"], 1), (["--config", str(tmp_path / "zero.json")], 1),
             # The file is read before the --set items: its error comes first, with its status.
             (["--config", str(tmp_path / "trailing.json"), "--set", "depth"], 1),
             (["--config", str(tmp_path / "zero.json"), "--set", "depth"], 2)]
    for extra, status in cases:
        p = harness("learn", "--data", str(path), "--predictions", str(tmp_path / "p.npy"), *extra)
        cli = run_cli("run", *extra, "--quiet", check=False)
        assert p.returncode == cli.returncode == status, (extra, p.stderr, cli.stderr)
        assert p.stderr == cli.stderr, extra
    assert not (tmp_path / "p.npy").exists()
    p = harness("learn", "--data", str(path), "--predictions", str(tmp_path / "p.npy"), "--backend", "cpu",
                "--config", str(tmp_path / "zero.json"), "--set", "depth=1")
    assert p.returncode == 0, p.stderr


def test_learn_bad_archives(tmp_path):
    tr, tl, te, _ = make_task(3, train=100, test=20)
    out = tmp_path / "p.npy"
    np.savez(tmp_path / "no_test.npz", train_images=tr, train_labels=tl)
    bad_pixels = tr.copy()
    bad_pixels[0, 0, 0, 0] = np.nan
    np.savez(tmp_path / "nan.npz", train_images=bad_pixels, train_labels=tl, test_images=te)
    np.savez(tmp_path / "f64.npz", train_images=tr.astype(np.float64), train_labels=tl, test_images=te)
    np.save(tmp_path / "single.npy", tr)
    (tmp_path / "text.npz").write_text("not an archive")
    cases = {
        "no_test.npz": "no_test.npz: missing array 'test_images'",
        "nan.npz": "nan.npz: input: train_images has a NaN pixel at flat index 0",
        "f64.npz": "train_images must be float32 (<f4), got <f8",
        "single.npy": "not an .npz archive",
        "text.npz": "not an .npz archive",
        "absent.npz": "cannot read",
    }
    for name, fragment in cases.items():
        p = harness("learn", "--data", str(tmp_path / name), "--predictions", str(out), "--backend", "cpu")
        assert p.returncode == 1, (name, p.stderr)
        assert p.stderr.startswith("revgraph: error: ") and p.stderr.count("\n") == 1, p.stderr
        assert fragment in p.stderr, p.stderr
        assert not out.exists()


def write_predictions(tmp_path, labels, wrong):
    predictions = labels.copy()
    predictions[:wrong] = (predictions[:wrong] + 1) % 10
    np.save(tmp_path / "p.npy", predictions)
    return tmp_path / "p.npy"


def scored(p):
    """score's JSON object on stdout (one line on stderr says the verdict)."""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("revgraph: score: "), p.stderr
    return json.loads(p.stdout)


def test_score_at_the_band_edge(tmp_path):
    labels = np.arange(200, dtype=np.int64) % 10
    np.savez(tmp_path / "m.npz", test_labels=labels)
    # 12% of 200: at least ceil(200 * 88 / 100) = 176 correct.
    p = score(tmp_path / "m.npz", write_predictions(tmp_path, labels, 24))
    assert p.returncode == 0, p.stderr
    r = scored(p)
    assert (r["correct"], r["total"], r["required_correct"], r["meets_accuracy_target"]) == (176, 200, 176, True)
    assert r["accuracy"] == 0.88 and r["error_rate_percent"] == 12.0
    # Below the band is still a valid score: exit 0, meets_accuracy_target false; --fail-below: 3.
    p = score(tmp_path / "m.npz", write_predictions(tmp_path, labels, 25))
    assert p.returncode == 0, p.stderr
    r = scored(p)
    assert (r["correct"], r["required_correct"], r["meets_accuracy_target"]) == (175, 176, False)
    assert "NOT met (1 short)" in p.stderr
    assert score(tmp_path / "m.npz", tmp_path / "p.npy", "--fail-below").returncode == 3
    assert score(tmp_path / "m.npz", write_predictions(tmp_path, labels, 24), "--fail-below").returncode == 0


def test_score_confusion_matrix_against_numpy(tmp_path):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 9, 300).astype(np.int64)  # class 9 never occurs: its accuracy is null
    predictions = np.where(rng.random(300) < 0.7, labels, rng.integers(0, 10, 300)).astype(np.int64)
    np.savez(tmp_path / "m.npz", test_labels=labels)
    np.save(tmp_path / "p.npy", predictions)
    r = scored(score(tmp_path / "m.npz", tmp_path / "p.npy"))
    expect = [[int(np.sum((labels == t) & (predictions == q))) for q in range(10)] for t in range(10)]
    assert r["confusion_matrix"] == expect
    assert r["per_class_accuracy"][:9] == [expect[k][k] / sum(expect[k]) for k in range(9)]
    assert r["per_class_accuracy"][9] is None
    assert r["correct"] == int(np.sum(labels == predictions)) == sum(expect[k][k] for k in range(10))
    assert list(r) == ["accuracy", "correct", "total", "error_rate_percent", "error_target_percent",
                       "required_correct", "meets_accuracy_target", "confusion_matrix", "per_class_accuracy"]
    # The same predictions in an .npz of one array score the same.
    np.savez(tmp_path / "p.npz", predictions=predictions)
    assert scored(score(tmp_path / "m.npz", tmp_path / "p.npz")) == r


def test_score_is_exact_where_floats_are_not(tmp_path):
    # 7 labels, target 12.5%: 7 * 87.5 / 100 = 6.125, so all 7 must be right.
    labels = np.arange(7, dtype=np.int64)
    np.savez(tmp_path / "m.npz", test_labels=labels)
    r = scored(score(tmp_path / "m.npz", write_predictions(tmp_path, labels, 1), "--error-target", "12.5"))
    assert (r["correct"], r["required_correct"], r["meets_accuracy_target"]) == (6, 7, False)
    # 0.7 * 100 is 70.00000000000001 in floats; in integers 100 labels at 30% need exactly 70 correct.
    labels = np.arange(100, dtype=np.int64) % 10
    np.savez(tmp_path / "m.npz", test_labels=labels)
    r = scored(score(tmp_path / "m.npz", write_predictions(tmp_path, labels, 30), "--error-target", "30"))
    assert (r["required_correct"], r["meets_accuracy_target"]) == (70, True)
    # The engine's one rule, as revgraph qualify uses it.
    assert revgraph._core.required_correct(110000, "12") == 96800
    assert revgraph._core.required_correct(7, "12.5") == 7


def test_score_refuses_bad_predictions(tmp_path):
    labels = np.arange(50, dtype=np.int64) % 10
    np.savez(tmp_path / "m.npz", test_labels=labels)
    cases = {"short.npy": labels[:-1], "float.npy": labels.astype(np.float32), "range.npy": labels + 1,
             "2d.npy": labels.reshape(5, 10)}
    for name, array in cases.items():
        np.save(tmp_path / name, array)
        p = harness("score", "--data", str(tmp_path / "m.npz"), "--predictions", str(tmp_path / name))
        assert p.returncode == 1, (name, p.stderr)
        assert p.stderr.startswith("revgraph: error: ") and p.stderr.count("\n") == 1
    # Not .npy/.npz by name: refused as the harness's evaluator does, whatever the content.
    np.save(tmp_path / "good.npy", labels)
    os.rename(tmp_path / "good.npy", tmp_path / "good.bin")
    p = harness("score", "--data", str(tmp_path / "m.npz"), "--predictions", str(tmp_path / "good.bin"))
    assert p.returncode == 2 and ".npy or .npz" in p.stderr
    np.savez(tmp_path / "two.npz", a=labels, b=labels)
    p = harness("score", "--data", str(tmp_path / "m.npz"), "--predictions", str(tmp_path / "two.npz"))
    assert p.returncode == 1 and "exactly one array" in p.stderr
    for target in ("-1", "101", "twelve", "1e1", "12."):
        p = harness("score", "--data", str(tmp_path / "m.npz"), "--predictions", str(tmp_path / "short.npy"),
                    "--error-target", target)
        assert p.returncode == 2 and "--error-target" in p.stderr, (target, p.stderr)


def test_usage_mistakes_come_before_any_file_is_read(tmp_path, medium):
    """A command line's mistake is exit 2 whatever the files: a bad --error-target or predictions
    name with a --data that does not exist, and an empty value (an unset shell variable), as the
    `revgraph` command refuses them."""
    missing = str(tmp_path / "missing.npz")
    for extra in (["--predictions", "p.txt"], ["--predictions", "p.npy", "--error-target", "abc"]):
        p = harness("score", "--data", missing, *extra)
        assert p.returncode == 2 and p.stderr.count("\n") == 1, (extra, p.stderr)
        assert "missing.npz" not in p.stderr, p.stderr
    path, _ = medium
    for extra in (["--backend", ""], ["--config", ""], ["--metadata", ""]):
        p = harness("learn", "--data", str(path), "--predictions", str(tmp_path / "p.npy"), "--quiet", *extra)
        assert p.returncode == 2 and "an empty value" in p.stderr and extra[0] in p.stderr, (extra, p.stderr)
        assert not (tmp_path / "p.npy").exists()
    p = harness("score", "--data", "", "--predictions", "p.npy")
    assert p.returncode == 2 and "--data: an empty value" in p.stderr, p.stderr


def test_learn_refuses_a_predictions_name_not_npy(tmp_path, medium):
    path, _ = medium
    for name in ("p.npz", "p", "p.npy.txt"):
        p = harness("learn", "--data", str(path), "--predictions", str(tmp_path / name), "--quiet")
        assert p.returncode == 2 and "must end in .npy" in p.stderr, (name, p.stderr)
        assert not (tmp_path / name).exists()


def test_learn_then_score(tmp_path, medium):
    path, (train, labels, test, test_labels) = medium
    out = tmp_path / "p.npy"
    assert harness("learn", "--data", str(path), "--predictions", str(out), "--set", "epochs=8", "--backend", "cpu",
                   "--quiet").returncode == 0
    p = harness("score", "--data", str(path), "--predictions", str(out), "--error-target", "100")
    assert p.returncode == 0
    correct = int(np.count_nonzero(np.load(out) == test_labels))
    assert scored(p)["correct"] == correct
    # The made-up classes are easy: training learnt them (far better than chance, 12 of 120).
    assert correct > 60, correct


def test_a_text_file_is_named_for_what_it_is_not(tmp_path, medium):
    # np.load(allow_pickle=False) on a text file speaks of "pickled data": say what was expected.
    path, (_, _, _, test_labels) = medium
    np.save(tmp_path / "p.npy", test_labels)
    for name in ("notes.txt", "notes.npz", "notes.npy", "empty.npz"):
        (tmp_path / name).write_text("" if name.startswith("empty") else "train_images: see the wiki\n")
    no_numpy = "it is no numpy file (neither a .npy header nor a zip archive)"
    cases = (
        (["learn", "--data", tmp_path / "notes.txt", "--predictions", tmp_path / "out.npy"],
         f"{tmp_path / 'notes.txt'}: not an .npz archive: {no_numpy}"),
        (["learn", "--data", tmp_path / "empty.npz", "--predictions", tmp_path / "out.npy"],
         f"{tmp_path / 'empty.npz'}: not an .npz archive: {no_numpy}"),
        (["score", "--data", tmp_path / "notes.npz", "--predictions", tmp_path / "p.npy"],
         f"{tmp_path / 'notes.npz'}: not an .npz archive: {no_numpy}"),
        (["score", "--data", path, "--predictions", tmp_path / "notes.npy"],
         f"{tmp_path / 'notes.npy'}: not an .npy/.npz file: {no_numpy}"),
    )
    for args, line in cases:
        p = harness(*map(str, args))
        assert (p.returncode, p.stdout, p.stderr) == (1, "", f"revgraph: error: {line}\n"), (args, p.stderr)
        assert "pickle" not in p.stderr
    assert not (tmp_path / "out.npy").exists()


def closed_pipe(*args, unbuffered):
    """python3 -m revgraph ARGS with stdout a pipe whose reader has already gone (`| head -1`);
    unbuffered, each print meets the closed pipe, else the last flush does."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "revgraph", *map(str, args)], stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=300, env=env)
    finally:
        os.close(w)


def test_a_closed_pipe_ends_quietly(tmp_path, medium):
    # `python3 -m revgraph score ... | head -1`: no traceback, status 141 (128 + SIGPIPE) as a shell
    # reports for the `revgraph` command there, so a cut-short result is never exit 0.
    path, (_, _, _, test_labels) = medium
    np.save(tmp_path / "p.npy", test_labels)
    for args in (["score", "--data", path, "--predictions", tmp_path / "p.npy"], ["--help"], ["learn", "--help"],
                 ["--version"]):
        for unbuffered in (False, True):
            p = closed_pipe(*args, unbuffered=unbuffered)
            assert p.returncode == 141, (args, unbuffered, p.stderr)
            for noise in ("Traceback", "BrokenPipe", "Exception ignored"):
                assert noise not in p.stderr, (args, unbuffered, p.stderr)


def test_version_is_the_commands():
    p = harness("--version")
    assert p.returncode == 0
    assert p.stdout == run_cli("version").stdout


def test_learn_help_names_the_backend_table():
    # The harness's --backend help lists the engine's table, as revgraph.backends() reports it.
    rows = [b["requested"] for b in revgraph.backends()["backends"]]
    p = harness("learn", "--help")
    assert p.returncode == 0, p.stderr
    text = " ".join(p.stdout.split())
    listed = text.split("--backend BACKEND ", 1)[1].split(" --", 1)[0]
    head, _, last = listed.rpartition(" or ")
    assert head.split(", ") + [last] == rows


def test_ctrl_c_ends_learn_as_it_ends_the_command(tmp_path, medium):
    # Ctrl-C during a run: no KeyboardInterrupt traceback, and the process dies by SIGINT (a shell's
    # 130), as the `revgraph` command does, so a script (or `timeout -s INT`) sees an interruption,
    # not an exit status of its own. Nothing is written: the outputs are written together at the end.
    import signal
    import time

    path, _ = medium
    out, meta = tmp_path / "out.npy", tmp_path / "meta.json"
    p = subprocess.Popen([sys.executable, "-m", "revgraph", "learn", "--data", str(path), "--predictions", str(out),
                          "--metadata", str(meta), "--backend", "cpu", "--set", "epochs=1000000"],
                         stderr=subprocess.PIPE, text=True)
    try:
        first = p.stderr.readline()  # the "prepared" line: the run is under way
        assert "prepared in" in first, first
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        _, rest = p.communicate(timeout=120)  # a signal ignored fails here, not as the suite's timeout
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGINT, (p.returncode, rest)
    for noise in ("Traceback", "KeyboardInterrupt"):
        assert noise not in rest, rest
    assert not out.exists() and not meta.exists()
    assert [f.name for f in tmp_path.iterdir()] == ["medium.npz"]
