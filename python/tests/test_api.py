"""revgraph's Python API against the `revgraph` command and against itself: the CLI's bytes for
the same inputs and config, byte-identical repeats, run_together equal to solo runs, and two
Python threads running tasks at once."""
import hashlib
import copy
import io
import json
import os
import pickle
import shlex
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import revgraph
from conftest import CLI, TIME_KEYS, make_task, run_cli

CONFIG = {"depth": 3, "width": 82, "alpha": 0.25, "seed": 5, "epochs": 3, "learning_rate": 0.05, "batch_size": 64,
          "momentum": 0.8, "weight_decay": 0.0001}


def sha256(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def assert_same_run(a, b):
    assert a.predictions.tobytes() == b.predictions.tobytes()
    assert a.scores.tobytes() == b.scores.tobytes()
    assert list(a.state) == list(b.state)
    for name in a.state:
        assert a.state[name].tobytes() == b.state[name].tobytes(), name
    for key in a.metadata:
        if key not in TIME_KEYS | {"run_count"}:
            assert a.metadata[key] == b.metadata[key], key


@pytest.mark.parametrize("backend", ["cpu", "cpu-reference"])
@pytest.mark.parametrize("width", [82, 128])
def test_fit_predict_gives_the_cli_bytes(tmp_path, task_arrays, backend, width):
    train, labels, test, _ = task_arrays
    config = dict(CONFIG, width=width)
    np.savez(tmp_path / "draw.npz", train_images=train, train_labels=labels, test_images=test)
    (tmp_path / "config.json").write_text(json.dumps(config))
    run_cli("run", "--input", str(tmp_path / "draw.npz"), "--config", str(tmp_path / "config.json"),
            "--backend", backend, "--output", str(tmp_path / "r.json"), "--state", str(tmp_path / "s.npz"), "--quiet")
    cli_meta = json.loads((tmp_path / "r.json").read_text())
    cli_predictions = (tmp_path / "r.predictions.npy").read_bytes()

    result = revgraph.fit_predict(train, labels, test, backend=backend, **config)

    # Predictions: the same .npy bytes, and the same values as numpy reads them.
    assert result.predictions_npy() == cli_predictions
    assert result.predictions.dtype == np.int64 and result.predictions.shape == (test.shape[0],)
    assert np.array_equal(result.predictions, np.load(tmp_path / "r.predictions.npy"))
    assert result.scores.dtype == np.float32 and result.scores.shape == (test.shape[0], 10)
    # Every hash: recomputed here from the arrays Python got, and equal to the CLI's.
    assert sha256(result.predictions) == cli_meta["predictions_sha256"]
    assert sha256(result.scores) == cli_meta["scores_sha256"]
    assert cli_meta["input_hashes"] == {"train_images": sha256(train), "train_labels": sha256(labels),
                                        "test_images": sha256(test)}
    # The state: the archive --state wrote, array by array, in order.
    with np.load(tmp_path / "s.npz") as state:
        assert list(state.files) == list(result.state)
        for name in state.files:
            assert state[name].dtype == result.state[name].dtype == np.float32
            assert state[name].shape == result.state[name].shape, name
            assert state[name].tobytes() == result.state[name].tobytes(), name
    for name, a in result.state.items():
        key = "final_velocity_sha256" if name.startswith("velocity.") else "final_parameter_sha256"
        assert sha256(a) == cli_meta[key][name.removeprefix("velocity.")], name
    # Metadata: RESULT.json's keys (less the file name --output adds) and values, times aside.
    meta = result.metadata
    sibling_files = {"predictions_file", "state_file", "scores_file"}  # what only the CLI writes
    assert set(meta) == set(cli_meta) - sibling_files
    for key in cli_meta:
        if key not in TIME_KEYS | {"input"} | sibling_files:
            assert meta[key] == cli_meta[key], key
    assert meta["config"] == config
    assert result.state["head.weight"].shape == (10, width)
    assert result.state["weights.0"].shape == (width // 2, width // 2)
    assert meta["training_prediction_seconds"] == result.run_seconds > 0


def test_defaults_are_the_clis(tmp_path, task_arrays):
    train, labels, test, _ = task_arrays
    np.savez(tmp_path / "draw.npz", train_images=train, train_labels=labels, test_images=test)
    cli_meta = json.loads(run_cli("run", "--input", str(tmp_path / "draw.npz"), "--backend", "cpu", "--quiet").stdout)
    result = revgraph.fit_predict(train, labels, test, backend="cpu")
    assert result.metadata["config"] == cli_meta["config"]
    assert result.metadata["final_parameter_sha256"] == cli_meta["final_parameter_sha256"]
    assert result.metadata["predictions_sha256"] == cli_meta["predictions_sha256"]


def test_task_run_repeats_byte_identical(task_arrays):
    train, labels, test, _ = task_arrays
    task = revgraph.Task(train, labels, test, backend="cpu", **CONFIG)
    assert task.preparation_seconds > 0
    assert task.config == CONFIG
    first = task.run()
    second = task.run()
    third = task.run()
    assert_same_run(first, second)
    assert_same_run(first, third)
    assert [r.metadata["run_count"] for r in (first, second, third)] == [1, 2, 3]
    # A run's arrays are its own: the next run does not change them under the caller.
    assert first.predictions.base is not second.predictions.base
    # And training did something: the final parameters differ from the initial ones.
    assert first.metadata["final_parameter_sha256"] != first.metadata["initial_parameter_sha256"]


def test_numpy_scalars_in_config(task_arrays):
    train, labels, test, _ = task_arrays
    a = revgraph.fit_predict(train, labels, test, backend="cpu", depth=np.int64(2), alpha=np.float32(0.5), epochs=1)
    b = revgraph.fit_predict(train, labels, test, backend="cpu", depth=2, alpha=0.5, epochs=1)
    assert_same_run(a, b)


def test_run_together_equals_solo_runs():
    tasks, solo = [], []
    for k, backend in enumerate(["cpu", "cpu-reference", "cpu", "cpu"]):
        train, labels, test, _ = make_task(100 + k, train=300 + 50 * k, test=40 + k)
        config = dict(seed=k, epochs=2, depth=1 + k % 3, batch_size=32)
        tasks.append(revgraph.Task(train, labels, test, backend=backend, **config))
        solo.append(revgraph.fit_predict(train, labels, test, backend=backend, **config))
    together = revgraph.run_together(tasks, threads=2)
    assert len(together) == len(tasks)
    for a, b in zip(together, solo):
        assert_same_run(a, b)
    # Different tasks, different answers: the comparison above is not between equal runs.
    assert together[0].metadata["predictions_sha256"] != together[2].metadata["predictions_sha256"]
    # Then each task's own run() still gives the same bytes.
    for t, b in zip(tasks, solo):
        assert_same_run(t.run(), b)


def test_a_signal_handler_that_raises_stops_a_long_run(task_arrays):
    """Ctrl-C in a notebook: a handler that raises (SIGINT's KeyboardInterrupt; SIGALRM's here, as a
    test cannot press keys) stops run() and run_together() at an epoch, not when they end (the long
    task below trains for about half a minute here), and its exception is what the caller gets. A
    handler that runs the task again is refused (it would wait for its own lock). Both tasks stay
    usable: the short one's next run is byte-identical to a fresh one's."""
    train, labels, test, _ = task_arrays
    long = revgraph.Task(train, labels, test, backend="cpu", epochs=50_000)
    short = revgraph.Task(train, labels, test, backend="cpu", epochs=3)

    class Stop(Exception):
        pass

    def stop(signum, frame):
        raise Stop

    def run_again(signum, frame):
        long.run()

    previous = signal.signal(signal.SIGALRM, stop)
    try:
        for handler, error, run in ((stop, Stop, long.run),
                                    (stop, Stop, lambda: revgraph.run_together([short, long], threads=2)),
                                    (run_again, RuntimeError, long.run),
                                    (run_again, RuntimeError, lambda: revgraph.run_together([long, short])),
                                    (stop, Stop, long.run)):
            signal.signal(signal.SIGALRM, handler)
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            start = time.monotonic()
            with pytest.raises(error) as raised:
                run()
            assert time.monotonic() - start < 5, "not stopped at an epoch: the run went on"
            if error is RuntimeError:
                assert "a task this thread is running" in str(raised.value)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert_same_run(short.run(), revgraph.fit_predict(train, labels, test, backend="cpu", epochs=3))


def test_run_together_refuses_a_task_twice_and_non_tasks(task_arrays):
    train, labels, test, _ = task_arrays
    task = revgraph.Task(train, labels, test, backend="cpu", epochs=1)
    with pytest.raises(ValueError, match="listed twice"):
        revgraph.run_together([task, task])
    with pytest.raises(TypeError):
        revgraph.run_together([task, "not a task"])
    assert revgraph.run_together([]) == []
    # More threads than tasks is as many as tasks: the same bytes as one thread.
    one, many = (revgraph.run_together([task], threads=t)[0] for t in (1, 2**70))
    assert one.predictions.tobytes() == many.predictions.tobytes()


def test_every_argument_of_the_wrong_type_is_one_line_naming_it(task_arrays, tmp_path):
    """Each argument the API passes on to the engine is checked first: a wrong type is TypeError, an
    integer out of the engine's range ValueError, one line naming the argument — never pybind11's
    multi-line list of signatures (with the arrays' repr in it) and never a quiet conversion."""
    train, labels, test, _ = task_arrays
    task = revgraph.Task(train, labels, test, backend="cpu", epochs=1)
    cases = [
        (lambda: revgraph.fit_predict(train, labels, test, backend=None), TypeError, "backend must be a string, got None"),
        (lambda: revgraph.Task(train, labels, test, backend="cuda-fused", emulate="yes"), TypeError,
         "emulate must be True or False, got 'yes'"),
        (lambda: task.run(metadata=1), TypeError, "metadata must be True or False, got 1"),
        (lambda: revgraph.run_together([task], threads=-1), ValueError, "threads must be 0 (one per CPU this process may use) or more, got -1"),
        (lambda: revgraph.run_together([task], threads=1.0), TypeError, "threads must be an integer, got 1.0"),
        (lambda: revgraph.run_together([task], metadata=None), TypeError, "metadata must be True or False, got None"),
        (lambda: revgraph.band_rule("12", 100.7, 10), TypeError, "total must be an integer, got 100.7"),
        (lambda: revgraph.band_rule("12", "abc", 10), TypeError, "total must be an integer, got 'abc'"),
        (lambda: revgraph.band_rule("12", 2**70, 10), ValueError, f"total must be in 0..{2**63 - 1}, got {2**70}"),
        (lambda: revgraph.band_rule("12", 100, None), TypeError, "per_draw must be an integer, got None"),
        (lambda: revgraph.qualify(None), TypeError, "idx_dir must be a path (str or os.PathLike), got None"),
        (lambda: revgraph.qualify(tmp_path, submission=3), TypeError, "submission must be a path (str or os.PathLike), got 3"),
        (lambda: revgraph.qualify(tmp_path, together="no"), TypeError, "together must be True or False, got 'no'"),
        (lambda: revgraph.qualify(tmp_path, backend=5), TypeError, "backend must be a string, got 5"),
        (lambda: revgraph.qualify(tmp_path, first_seed=2**64), ValueError, f"first_seed must be in 0..{2**64 - 1}, got {2**64}"),
        (lambda: revgraph.verify("s", "i", backend=5), TypeError, "backend must be a string, got 5"),
        (lambda: revgraph.verify(b"s", "i"), TypeError, "submission must be a path (str or os.PathLike), got b's'"),
        (lambda: revgraph.verify("s", "i", retrain="yes"), TypeError, "retrain must be True or False, got 'yes'"),
        (lambda: revgraph.export(12), TypeError,
         'band must be a decimal string such as "12" (a leaderboard: 12, 8, 5, 3, 2), got 12'),
        (lambda: revgraph.export("12", from_file=1), TypeError, "from_file must be a path (str or os.PathLike), got 1"),
        # An empty path names no file: refused as the command refuses an empty value (it reached the
        # engine, which said ": not a directory" or threw a filesystem_error).
        (lambda: revgraph.qualify(""), ValueError, "idx_dir is an empty path"),
        (lambda: revgraph.qualify(tmp_path, submission="", draws=1), ValueError, "submission is an empty path"),
        (lambda: revgraph.data_mnist("", seed=1), ValueError, "idx_dir is an empty path"),
        (lambda: revgraph.verify("", tmp_path), ValueError, "submission is an empty path"),
        (lambda: revgraph.export("12", from_file=""), ValueError, "from_file is an empty path"),
        # A folder for a file: the engine's one reader's words, as for --config (was an ifstream's
        # "basic_filebuf::underflow", a RuntimeError).
        (lambda: revgraph.export("12", from_file=tmp_path), ValueError, f"cannot read {tmp_path}: it is a directory"),
    ]
    for call, kind, message in cases:
        with pytest.raises(kind) as raised:
            call()
        assert str(raised.value) == message


def test_two_threads_run_tasks_at_once():
    """The GIL is released while a task runs: two threads each run their own task, this one
    keeps executing Python meanwhile, and both results are those of a run on its own."""
    inputs = [make_task(7, train=4000, test=500), make_task(8, train=4000, test=500)]
    configs = [dict(seed=1, epochs=12, depth=4), dict(seed=2, epochs=12, depth=3)]
    tasks = [revgraph.Task(tr, tl, te, backend="cpu", **c) for (tr, tl, te, _), c in zip(inputs, configs)]
    expected = [revgraph.fit_predict(tr, tl, te, backend="cpu", **c) for (tr, tl, te, _), c in zip(inputs, configs)]
    results = [None, None]
    ticks = [0]  # counted by this thread while the workers run
    ticks_during_run = [None, None]  # each worker: how many ticks happened while it was inside run()
    barrier = threading.Barrier(2)

    def work(k):
        barrier.wait()
        before = ticks[0]
        results[k] = tasks[k].run()
        ticks_during_run[k] = ticks[0] - before

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        ticks[0] += 1
        time.sleep(0.0005)
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        assert got is not None
        assert_same_run(got, want)
    # Had run() kept the GIL, this thread could not have ticked while a worker was inside it
    # (at most once, between reading `before` and entering the engine). A run takes tens of ms.
    assert min(ticks_during_run) > 5, ticks_during_run


def test_backends_matches_the_cli():
    cli = json.loads(run_cli("backends", "--json").stdout)
    assert revgraph.backends() == cli
    assert revgraph.__version__ == cli["version"]
    usable = {b["requested"] for b in cli["backends"] if b["usable"]}
    assert {"cpu", "cpu-reference", "auto"} <= usable


def test_result_arrays_outlive_the_task(task_arrays):
    train, labels, test, _ = task_arrays
    task = revgraph.Task(train, labels, test, backend="cpu", epochs=1)
    result = task.run()
    predictions, scores = result.predictions, result.scores
    expected = predictions.copy(), scores.copy()
    # Views of the run's own bytes, which its hashes and predictions_npy() speak for: read-only.
    for view in (predictions, scores):
        assert not view.flags.writeable
        with pytest.raises(ValueError):
            view[0] = 7
    assert np.array_equal(np.load(io.BytesIO(result.predictions_npy())), expected[0])
    del task, result
    assert np.array_equal(predictions, expected[0]) and np.array_equal(scores, expected[1])


def test_state_is_read_only(task_arrays):
    train, labels, test, _ = task_arrays
    result = revgraph.fit_predict(train, labels, test, backend="cpu", epochs=1)
    name = next(iter(result.state))
    with pytest.raises(ValueError):
        result.state[name][0] = 1  # the run's own bytes, as predictions and scores are


@pytest.mark.parametrize("metadata", [True, False])
def test_a_result_pickles_and_copies_to_its_bytes(task_arrays, metadata):
    """For ProcessPoolExecutor and joblib sweeps: a Result crosses a pickle (and deepcopy) with its
    arrays, metadata and predictions_npy() intact and still read-only; to_dict() is plain values."""
    train, labels, test, _ = task_arrays
    task = revgraph.Task(train, labels, test, backend="cpu", epochs=2)
    result = task.run(metadata=metadata)
    for copied in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result)):
        assert copied is not result and copied.predictions.base is not result.predictions.base
        assert copied.predictions.tobytes() == result.predictions.tobytes()
        assert copied.scores.tobytes() == result.scores.tobytes()
        assert list(copied.state) == list(result.state)
        for name in result.state:
            assert copied.state[name].tobytes() == result.state[name].tobytes(), name
        assert copied.metadata == result.metadata
        assert copied.run_seconds == result.run_seconds
        assert copied.predictions_npy() == result.predictions_npy()
        assert not copied.predictions.flags.writeable and not copied.state[name].flags.writeable
    d = result.to_dict()
    assert set(d) == {"predictions", "scores", "state", "metadata", "run_seconds"}
    assert d["predictions"] is result.predictions and d["metadata"] == result.metadata
    assert list(d["state"]) == list(result.state)
    d["state"].clear()  # the caller's own dicts: the Result keeps its state and metadata
    if metadata:
        d["metadata"]["config"]["depth"] = 99
        assert result.metadata["config"]["depth"] == 2
    assert list(result.state) and copy.copy(result).state is not result.state
    # The next run of the task leaves a pickle of this one as it was.
    kept = pickle.dumps(result)
    revgraph.Task(train, labels, test, backend="cpu", epochs=2, seed=99).run()
    assert pickle.loads(kept).predictions.tobytes() == result.predictions.tobytes()


def test_a_callers_changes_to_state_or_metadata_stay_the_callers(task_arrays):
    """state and metadata are the caller's to change (each access a fresh dict; state's arrays the
    run's own, read-only): a key added to state once made pickle.dumps fail (AttributeError on the
    added value's .copy()), and a changed metadata disagreed with the Result's own copies."""
    train, labels, test, _ = task_arrays
    result = revgraph.fit_predict(train, labels, test, backend="cpu", epochs=1)
    names, depth = list(result.state), result.metadata["config"]["depth"]
    result.state["note"] = "x"
    del result.state[names[0]]
    result.metadata["config"]["depth"] = 99
    result.metadata["note"] = "x"
    assert list(result.state) == names and result.metadata["config"]["depth"] == depth
    assert "note" not in result.metadata
    for copied in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result)):
        assert copied.metadata == result.metadata and list(copied.state) == names
    assert result.to_dict()["metadata"] == result.metadata
    assert result.state is not result.state and result.metadata is not result.metadata
    # Still no copy of the arrays themselves: the run's own bytes, read-only.
    assert result.state[names[0]] is result.state[names[0]]
    assert not result.state[names[0]].flags.writeable


def test_a_run_that_diverged_says_so(task_arrays):
    """learning_rate=2 blows the parameters up to NaN: every score row is non-finite, predictions mean
    nothing. The count (held against numpy's own isfinite) is in the metadata, Python warns at the
    caller's line, the command prints one warning line even with --quiet; a run that did not diverge
    says nothing and counts 0."""
    train, labels, test, _ = task_arrays
    with pytest.warns(RuntimeWarning, match=r"^150 of 150 query rows scored NaN or infinity") as caught:
        diverged = revgraph.fit_predict(train, labels, test, backend="cpu", learning_rate=2.0)
    assert caught[0].filename == __file__
    rows = int((~np.isfinite(diverged.scores)).any(axis=1).sum())
    assert rows == 150 and diverged.metadata["non_finite_score_rows"] == rows
    task = revgraph.Task(train, labels, test, backend="cpu", learning_rate=2.0)
    for call in (lambda: task.run(metadata=False), lambda: revgraph.run_together([task])):
        with pytest.warns(RuntimeWarning, match="diverged") as caught:
            call()
        assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fine = revgraph.fit_predict(train, labels, test, backend="cpu")
    assert fine.metadata["non_finite_score_rows"] == 0 and np.isfinite(fine.scores).all()

    p = run_cli("run", "--set", "learning_rate=2", "--quiet")
    assert p.stderr.startswith("revgraph: warning: 5000 of 5000 query rows scored NaN or infinity: the run "
                               "diverged") and p.stderr.count("\n") == 1
    assert json.loads(p.stdout)["non_finite_score_rows"] == 5000
    assert run_cli("run", "--quiet").stderr == ""


def test_run_without_metadata_gives_the_same_arrays(task_arrays):
    train, labels, test, _ = task_arrays
    task = revgraph.Task(train, labels, test, backend="cpu", **CONFIG)
    full = task.run()
    bare = task.run(metadata=False)
    assert bare.metadata is None
    assert bare.predictions.tobytes() == full.predictions.tobytes()
    assert bare.scores.tobytes() == full.scores.tobytes()
    for name in full.state:
        assert bare.state[name].tobytes() == full.state[name].tobytes(), name
    together = revgraph.run_together([task], metadata=False)[0]
    assert together.metadata is None and together.predictions.tobytes() == full.predictions.tobytes()


CONFIGURE_SCRIPT = r"""
import json, sys
import numpy as np
import revgraph
out = {"defaults": revgraph.configure_gpu()}
out["set"] = revgraph.configure_gpu(device=0, workspace_bytes=1 << 20, pdl=False, cluster_blocks=4)
out["kept"] = revgraph.configure_gpu()
errors = []
for kwargs in ({"device": -1}, {"device": 1.5}, {"device": True}, {"workspace_bytes": 2**33}, {"pdl": "yes"},
               {"device": 2**40}, {"workspace_bytes": 2**70}, {"device": np.int64(1024)}, {"cluster_blocks": 17},
               {"cluster_blocks": True}):
    try:
        revgraph.configure_gpu(**kwargs)
        errors.append(None)
    except (TypeError, ValueError) as e:
        errors.append(f"{type(e).__name__}: {e}")
out["errors"] = errors
out["after_errors"] = revgraph.configure_gpu()
# cuda-fused emulated with epochs on a cluster of 4 (set above): the reference's predictions.
rng = np.random.default_rng(1)
x, y = rng.random((50, 1, 9, 9), dtype=np.float32), rng.integers(0, 10, 50)
on_cluster = revgraph.Task(x, y, x, backend="cuda-fused", emulate=True, batch_size=16).run()
reference = revgraph.Task(x, y, x, backend="cpu-reference", batch_size=16).run()
out["cluster_emulated_equal"] = (on_cluster.predictions.tobytes() == reference.predictions.tobytes() and
                                 on_cluster.metadata["state_vector_sha256"] == reference.metadata["state_vector_sha256"])
# Two such tasks run together: one launch group (two clusters of one launch), each its own bytes.
group = revgraph.run_together([revgraph.Task(x, y, x, backend="cuda-fused", emulate=True, batch_size=16, seed=s)
                               for s in (2, 3)])
alone = [revgraph.Task(x, y, x, backend="cpu-reference", batch_size=16, seed=s).run() for s in (2, 3)]
out["cluster_group_equal"] = all(g.predictions.tobytes() == a.predictions.tobytes() and
                                 g.metadata["state_vector_sha256"] == a.metadata["state_vector_sha256"]
                                 for g, a in zip(group, alone))
revgraph.configure_gpu(cluster_blocks=0)  # `cuda`, which the GPU part below may pick, has no clusters
gpu = [b["requested"] for b in revgraph.backends()["backends"] if b["usable"] and b["gpu"]]
if gpu:
    rng = np.random.default_rng(0)
    tr = rng.random((20, 1, 9, 9), dtype=np.float32)
    revgraph.fit_predict(tr, rng.integers(0, 10, 20), tr, backend=gpu[0], epochs=1)
    try:
        revgraph.configure_gpu(workspace_bytes=2 << 20)
        out["late"] = "accepted"
    except RuntimeError as e:
        out["late"] = str(e)
    out["same_after_start"] = revgraph.configure_gpu(workspace_bytes=1 << 20)
print(json.dumps(out))
"""


def test_configure_gpu_sets_the_commands_gpu_options():
    # In a fresh interpreter: the options are the process's, fixed once a GPU task starts.
    import json
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", CONFIGURE_SCRIPT], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["defaults"] == {"device": 0, "workspace_bytes": 32 << 20, "pdl": True, "cluster_blocks": 0,
                               "initialized": False}
    assert out["set"] == {"device": 0, "workspace_bytes": 1 << 20, "pdl": False, "cluster_blocks": 4,
                          "initialized": False}
    assert out["kept"] == out["set"] and out["after_errors"] == out["set"]
    assert out["cluster_emulated_equal"] is True
    assert out["cluster_group_equal"] is True
    # A wrong type is TypeError, a wrong value ValueError; the ranges are the command's (the engine's).
    assert out["errors"] == ["ValueError: device must be in 0..1023, got -1",
                             "TypeError: device must be an integer, got 1.5",
                             "TypeError: device must be an integer, got True",
                             "ValueError: workspace_bytes must be in 0..4294967296, got 8589934592",
                             "TypeError: pdl must be True or False, got 'yes'",
                             f"ValueError: device must be in 0..1023, got {2**40}",
                             f"ValueError: workspace_bytes must be in 0..4294967296, got {2**70}",
                             "ValueError: device must be in 0..1023, got 1024",
                             "ValueError: cluster_blocks must be in 0..16, got 17",
                             "TypeError: cluster_blocks must be an integer, got True"]
    if "late" in out:  # a GPU task ran: other options are refused, the same ones accepted
        assert out["late"].startswith("runtime: the GPU is already initialised with device 0")
        assert out["same_after_start"]["initialized"] is True


def test_the_package_is_typed():
    # PEP 561: py.typed ships beside the modules, and the public functions say their types.
    import importlib.resources
    import typing
    assert importlib.resources.files("revgraph").joinpath("py.typed").is_file()
    assert typing.get_type_hints(revgraph.fit_predict)["return"] is revgraph.Result
    assert typing.get_type_hints(revgraph.Task.run)["return"] is revgraph.Result
    assert typing.get_type_hints(revgraph.configure_gpu)["device"] == typing.Optional[int]


def test_the_readme_example_runs_as_written(tmp_path):
    # README.md's Python section: its shell line makes the archive and labels its code loads, and
    # the code, run as written, prints the predictions' hash of `revgraph run` on the same task.
    if not CLI:
        pytest.skip("REVGRAPH_CLI is not set (meson test sets it to the built revgraph command)")
    root = os.environ.get("REVGRAPH_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        section = f.read().split("\n## Python", 1)[1].split("\n## ", 1)[0]
    shell = section.split("```sh\n", 1)[1].split("```", 1)[0].strip()
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert shell.startswith("build/tools/revgraph data embedded "), shell
    p = subprocess.run([CLI, *shlex.split(shell)[1:]], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(revgraph.__file__)))  # this package
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    accuracy, predictions_sha256 = p.stdout.splitlines()[0].split()
    assert 0.8 < float(accuracy) < 1
    command = json.loads(run_cli("run", "--backend", "auto", "--quiet").stdout)
    assert predictions_sha256 == command["predictions_sha256"]


def test_export_is_the_commands_entry():
    """revgraph.export gives the very text `revgraph export` writes, from a file of bands or from config
    keys, and refuses what the command refuses, in one line."""
    root = os.environ.get("REVGRAPH_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    frontier = os.path.join(root, "bench", "frontier", "frontier.json")
    text = revgraph.export("5", from_file=frontier)
    assert text.startswith("#!POPCORN leaderboard mnist-medium-5pct\n#!POPCORN gpu A100\n")
    assert len(text.encode()) <= 20480
    assert text == run_cli("export", "--from", frontier, "--band", "5").stdout
    assert revgraph.export("12", depth=1, batch_size=512) == run_cli("export", "--band", "12", "--set", "depth=1",
                                                                      "--set", "batch_size=512").stdout.replace(
        "(--set)", "(Python)")
    for kwargs, words in (({"band": "7"}, "leaderboards"), ({"band": "12", "width": 81}, "width"),
                          ({"band": "12", "from_file": frontier, "depth": 3},
                           "from_file takes its band's config from the file; give no config keys"),
                          ({"band": "2", "from_file": frontier}, "has no band 2"),
                          ({"band": "7", "from_file": frontier}, "leaderboards")):
        with pytest.raises(ValueError) as raised:
            revgraph.export(**kwargs)
        assert words in str(raised.value) and "\n" not in str(raised.value)


def test_leaderboard_bands_are_the_challenges():
    """LEADERBOARD_BANDS: the group's five leaderboards (docs/race.md), each one export writes an entry
    for, and a qualification at one of them is of the published protocol; no other band is."""
    assert revgraph.LEADERBOARD_BANDS == ("12", "8", "5", "3", "2")
    for band in revgraph.LEADERBOARD_BANDS:
        assert revgraph.export(band).startswith(f"#!POPCORN leaderboard mnist-medium-{band}pct\n")
    with pytest.raises(ValueError) as raised:
        revgraph.export("7")
    assert "12, 8, 5, 3 or 2" in str(raised.value)


def test_emulate_runs_a_gpu_backends_plan_on_the_cpu(tmp_path, task_arrays):
    """emulate=True: cuda-fused's launch plan on the CPU gives the float32 trainer's very bytes (what the
    device gives), as `revgraph run --emulate` does; a CPU backend named with it is a bad value."""
    tr, tl, te, _ = task_arrays
    emulated = revgraph.fit_predict(tr, tl, te, backend="cuda-fused", emulate=True, epochs=2, batch_size=64)
    reference = revgraph.fit_predict(tr, tl, te, backend="cpu-reference", epochs=2, batch_size=64)
    for key in ("predictions_sha256", "scores_sha256", "state_vector_sha256", "final_velocity_sha256"):
        assert emulated.metadata[key] == reference.metadata[key], key
    assert emulated.metadata["backend"] == "cuda-fused"
    assert "emulation" in emulated.metadata["device"]
    path = tmp_path / "t.npz"
    np.savez(path, train_images=tr, train_labels=tl, test_images=te)
    out = tmp_path / "r.json"
    run_cli("run", "--input", str(path), "--backend", "cuda-fused", "--emulate", "--set", "epochs=2", "--set",
            "batch_size=64", "--quiet", "--output", str(out))
    with open(out) as f:
        assert json.load(f)["predictions_sha256"] == emulated.metadata["predictions_sha256"]
    with pytest.raises(ValueError, match="emulate=True runs a GPU backend's launch plan on the CPU: the backend must be cuda or cuda-fused, not cpu$"):
        revgraph.Task(tr, tl, te, backend="cpu", emulate=True)


def test_emulate_cuda_fused_at_other_widths(task_arrays):
    """cuda-fused runs every width (engine/cuda/fused_any/'s kernels at all but 82): emulated, the float32
    trainer's very bytes at depths 1 and 4 too."""
    tr, tl, te, _ = task_arrays
    for width, depth, backend in ((128, 2, "cuda-fused"), (90, 1, "cuda-fused"), (256, 4, "cuda-fused"),
                                  (128, 2, "cuda")):
        config = dict(width=width, depth=depth, epochs=1, batch_size=32)
        emulated = revgraph.fit_predict(tr, tl, te, backend=backend, emulate=True, **config)
        reference = revgraph.fit_predict(tr, tl, te, backend="cpu-reference", **config)
        for key in ("predictions_sha256", "scores_sha256", "state_vector_sha256", "final_velocity_sha256"):
            assert emulated.metadata[key] == reference.metadata[key], (width, depth, backend, key)


def test_the_extension_keeps_the_engines_symbols_inside():
    """_core links the engine statically, and the engine's symbols stay inside it. Its cuBLASLt
    forwarders (extern "C", cublasLt.h's own names; CUDA builds) were once exported: in a process where
    another library had put cuBLASLt's names in the global scope first (torch loads its CUDA libraries
    RTLD_GLOBAL), the `cuda` backend's calls went there instead of to the library the engine loads.
    revgraph::make_backend, in every build, stands for the engine's other symbols."""
    import ctypes
    lib = ctypes.CDLL(revgraph._core.__file__)
    assert hasattr(lib, "PyInit__core")
    for name in ("cublasLtCreate", "cublasLtMatmul", "cublasLtMatmulAlgoGetHeuristic",
                 "_ZN8revgraph12make_backendERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"):
        assert not hasattr(lib, name), name


FORK_SCRIPT = r"""
import json, multiprocessing, sys
import numpy as np
import revgraph

def child(gpu, queue):
    rng = np.random.default_rng(3)
    x = rng.random((40, 1, 9, 9), dtype=np.float32)
    try:
        revgraph.Task(x, rng.integers(0, 10, 40), x, backend=gpu, epochs=1).run()
        queue.put("ran")
    except Exception as e:  # any: an uncaught one would leave the parent waiting on the queue
        queue.put(f"{type(e).__name__}: {e}")

if __name__ == "__main__":
    gpu = [b["requested"] for b in revgraph.backends()["backends"] if b["usable"] and b["gpu"]]
    if not gpu:
        print(json.dumps({"gpu": None}))
        sys.exit(0)
    rng = np.random.default_rng(4)
    x = rng.random((40, 1, 9, 9), dtype=np.float32)
    alive = revgraph.Task(x, rng.integers(0, 10, 40), x, backend=gpu[0], epochs=1)  # still alive at exit
    alive.run()
    out = {"gpu": gpu[0]}
    for method in ("fork", "spawn"):
        context = multiprocessing.get_context(method)
        queue = context.Queue()
        worker = context.Process(target=child, args=(gpu[0], queue))
        worker.start()
        out[method] = queue.get(timeout=300)
        worker.join()
    print(json.dumps(out))
"""


def test_a_forked_worker_is_refused_the_gpu_in_one_line_and_a_spawned_one_runs(tmp_path):
    """multiprocessing forks by default on Linux, and a child of fork() cannot use the CUDA its parent
    initialised: it is told so (naming the start methods that work), and a spawned worker runs; the
    parent exits cleanly with a GPU task still alive. Skipped where no GPU backend is usable."""
    import subprocess
    script = tmp_path / "fork_gpu.py"
    script.write_text(FORK_SCRIPT)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    if out["gpu"] is None:
        pytest.skip("no usable GPU backend here")
    assert out["fork"] == (f"RuntimeError: backend: {out['gpu']} requested but CUDA was initialised before this process was forked, "
                           "and a child of fork() cannot use it: start worker processes with the 'spawn' or "
                           "'forkserver' method (multiprocessing.get_context)"), out
    assert out["spawn"] == "ran", out
