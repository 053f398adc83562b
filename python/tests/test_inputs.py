"""What revgraph refuses: inputs that are not exactly the CLI's arrays (never cast), bad values
and bad config as ValueError with the CLI's message, a backend this build cannot run as
RuntimeError. The caller's arrays are never written to."""
import numpy as np
import pytest

import revgraph
from conftest import make_task, run_cli


@pytest.fixture(scope="module")
def good():
    train, labels, test, _ = make_task(5, train=200, test=30)
    return train, labels, test


def refuse(train, labels, test, match, error=ValueError, **kwargs):
    with pytest.raises(error, match=match):
        revgraph.Task(train, labels, test, backend="cpu", **kwargs)
    with pytest.raises(error, match=match):
        revgraph.fit_predict(train, labels, test, backend="cpu", **kwargs)


def test_masked_arrays_raise(good):
    train, labels, test = good
    masked = np.ma.masked_array(train, mask=train < 0.1)  # the engine would read what the mask hides
    refuse(masked, labels, test, "train_images is a masked array", error=TypeError)
    refuse(train, labels, np.ma.masked_array(test), "test_images is a masked array", error=TypeError)


def test_float64_images_raise_never_cast(good):
    train, labels, test = good
    refuse(train.astype(np.float64), labels, test, r"train_images must be float32 \(<f4\), got <f8")
    refuse(train, labels, test.astype(np.float64), r"test_images must be float32 \(<f4\), got <f8")
    refuse(train.astype(np.float16), labels, test, r"got <f2")
    # One line that names the fix: the caller's own cast.
    refuse(train.astype(np.float64), labels, test, r"got <f8 \(revgraph casts nothing; numpy: x\.astype\('<f4'\)\)$")
    refuse(train, labels.astype(np.int32), test, r"got <i4 \(revgraph casts nothing; numpy: x\.astype\('<i8'\)\)$")


def test_other_dtypes_raise(good):
    train, labels, test = good
    refuse(train, labels.astype(np.int32), test, r"train_labels must be int64 \(<i8\), got <i4")
    refuse(train, labels.astype(np.uint8), test, r"train_labels must be int64 \(<i8\), got \|u1")
    refuse(train, labels.astype(np.float32), test, r"train_labels must be int64")
    refuse(train.astype(">f4"), labels, test, r"train_images must be float32 \(<f4\), got >f4")
    refuse(train, labels.astype(">i8"), test, r"got >i8")


def test_non_arrays_raise_type_error(good):
    # A wrong type is TypeError; a numpy array with a wrong dtype, shape or order is ValueError.
    train, labels, test = good
    refuse(train.tolist(), labels, test, "train_images must be a numpy array, got list", TypeError)
    refuse(train, list(labels), test, "train_labels must be a numpy array", TypeError)
    refuse(train, labels, None, "test_images must be a numpy array, got NoneType", TypeError)


def test_non_contiguous_raise(good):
    train, labels, test = good
    refuse(np.asfortranarray(train), labels, test,
           r"train_images must be C-contiguous \(numpy: numpy\.ascontiguousarray\(x\)\)$")
    refuse(train, np.repeat(labels, 2)[::2], test, "train_labels must be C-contiguous")
    wide = np.zeros((test.shape[0], 2, 9, 9), np.float32)
    refuse(train, labels, wide[:, :1], "test_images must be C-contiguous")


def test_shapes_raise(good):
    train, labels, test = good
    refuse(train.reshape(-1, 81), labels, test, r"train_images must have shape \(N, 1, 9, 9\), got \(200, 81\)")
    refuse(train, labels, test.reshape(-1, 9, 9), r"test_images must have shape \(N, 1, 9, 9\), got \(30, 9, 9\)")
    refuse(train, labels.reshape(-1, 1), test, r"train_labels must have shape \(N,\), got \(200, 1\)")
    refuse(train, labels[:-1].copy(), test, "input: 200 train images but 199 train labels")


def test_values_raise_with_the_clis_message(tmp_path, good):
    train, labels, test = good
    cases = []
    t = train.copy()
    t[3, 0, 4, 5] = np.nan
    cases.append((t, labels, test, "NaN pixel"))
    t = test.copy()
    t[0, 0, 0, 1] = 1.5
    cases.append((train, labels, t, "outside"))
    bad_labels = labels.copy()
    bad_labels[7] = 10
    cases.append((train, bad_labels, test, "train label 10 at index 7 is outside 0..9"))
    cases.append((train[:0].copy(), labels[:0].copy(), test, "train set is empty"))
    for k, (tr, tl, te, fragment) in enumerate(cases):
        with pytest.raises(ValueError) as raised:
            revgraph.fit_predict(tr, tl, te, backend="cpu")
        message = str(raised.value)
        assert fragment in message
        # The CLI, on the same arrays, prints "revgraph: error: <archive>: <the same message>".
        path = tmp_path / f"bad{k}.npz"
        np.savez(path, train_images=tr, train_labels=tl, test_images=te)
        p = run_cli("run", "--input", str(path), "--backend", "cpu", "--quiet", check=False)
        assert p.returncode == 1
        assert p.stderr == f"revgraph: error: {path}: {message}\n"


@pytest.mark.parametrize("key,value,cli_value", [
    ("depth", 0, "0"), ("epochs", -1, "-1"), ("momentum", 1.0, "1"), ("batch_size", 0, "0"),
    ("learning_rate", float("nan"), "nan"), ("alpha", float("inf"), "inf"), ("weight_decay", -0.5, "-0.5"),
    ("width", 81, "81"), ("width", 83, "83"), ("width", 1026, "1026"),
    # Past 64 bits: the same out-of-range line from the command's digits and Python's int.
    ("depth", 10**20, "100000000000000000000"), ("seed", 2**64, "18446744073709551616")])
def test_bad_config_values_give_the_clis_message(good, key, value, cli_value):
    train, labels, test = good
    with pytest.raises(ValueError) as raised:
        revgraph.fit_predict(train, labels, test, backend="cpu", **{key: value})
    p = run_cli("run", "--set", f"{key}={cli_value}", "--quiet", check=False)
    assert p.returncode == 1
    assert p.stderr == f"revgraph: error: --set {key}={cli_value}: {raised.value}\n"


def test_bad_config_types_raise(good):
    train, labels, test = good
    refuse(train, labels, test, "config: unknown key 'dept'", dept=2)
    # A keyword that belongs elsewhere says where.
    for key, where in (("device", "configure_gpu"), ("cluster_blocks", "configure_gpu"),
                       ("metadata", "run\\(metadata=False\\)"), ("test_labels", "never an input")):
        refuse(train, labels, test, f"config: unknown key '{key}': .*{where}", **{key: 0})
    refuse(train, labels, test, "config: depth must be an integer, got 2.5$", depth=2.5)
    # A float with no value as JSON (which says null for it) is named as Python wrote it.
    refuse(train, labels, test, "config: epochs must be an integer, got nan$", epochs=float("nan"))
    refuse(train, labels, test, "config: depth must be an integer, got inf$", depth=float("inf"))
    refuse(train, labels, test, "config: seed must be an integer, got -inf$", seed=float("-inf"))
    # No number at all is the wrong type, as for every other argument: TypeError naming key and value.
    refuse(train, labels, test, "config: depth must be an integer, got True$", TypeError, depth=True)
    refuse(train, labels, test, "config: depth must be an integer, got '2'$", TypeError, depth="2")
    refuse(train, labels, test, "config: alpha must be a number, got None$", TypeError, alpha=None)
    refuse(train, labels, test, "config: seed must be an integer, got \\[1\\]$", TypeError, seed=[1])
    refuse(train, labels, test, "config: unknown key 'dept'", dept="2")  # the name first, a ValueError
    refuse(train, labels, test, "config: seed must be a non-negative integer, got -1$", seed=-1)
    refuse(train, labels, test, "config: seed is out of range", seed=2**64)
    refuse(train, labels, test, "config: depth is out of range", depth=2**40)
    # The value as written, not as narrowed on the way (2^63 was reported as 2^40, 1099511627776).
    refuse(train, labels, test, "config: depth is out of range: 9223372036854775808$", depth=2**63)
    refuse(train, labels, test, "config: batch_size is out of range: 1099511627781$", batch_size=2**40 + 5)
    # A whole float too large to be exact, or digits past 64 bits: out of range too, as in the command.
    refuse(train, labels, test, "config: depth is out of range: 1.152921504606847e\\+18$", depth=2.0**60)
    refuse(train, labels, test, "config: seed is out of range: 1e\\+300$", seed=1e300)
    refuse(train, labels, test, "config: depth must be an integer, got 2.5$", depth=2.5)
    refuse(train, labels, test, "config: unknown key 'dept'", dept=2**70)  # the name first, as for 2
    refuse(train, labels, test, "config: learning_rate is out of range", learning_rate=10**400)  # past a double
    # Past 64 bits a real-valued key is the double --config reads the same digits as (10**30 is 1e30).
    big = revgraph.Task(train, labels, test, backend="cpu", learning_rate=10**30, epochs=0).run()
    assert big.metadata["config"]["learning_rate"] == 1e30
    # A whole number written as a float is that integer, as in a --config file (2.0 is 2).
    assert revgraph.Task(train, labels, test, backend="cpu", depth=2.0, epochs=0).run().metadata["config"]["depth"] == 2
    # The largest seed is fine.
    revgraph.Task(train, labels, test, backend="cpu", seed=2**64 - 1, epochs=0)


def test_backends_unknown_is_valueerror_unavailable_is_runtimeerror(good):
    train, labels, test = good
    with pytest.raises(ValueError, match="backend: unknown backend 'gpu'"):
        revgraph.Task(train, labels, test, backend="gpu")
    for b in revgraph.backends()["backends"]:
        if not b["usable"]:
            with pytest.raises(RuntimeError) as raised:
                revgraph.Task(train, labels, test, backend=b["requested"])
            if b["reason"].startswith("backend:"):  # the factory's own refusal, word for word
                assert str(raised.value) == b["reason"]


def test_inputs_are_not_written_to(good):
    train, labels, test = good
    copies = [a.copy() for a in good]
    for a in good:
        a.flags.writeable = False  # read-only arrays are accepted: revgraph only reads them
    try:
        revgraph.fit_predict(train, labels, test, backend="cpu", epochs=1)
    finally:
        for a in good:
            a.flags.writeable = True
    for a, b in zip(good, copies):
        assert a.tobytes() == b.tobytes()


def usable_backends():
    return [b["requested"] for b in revgraph.backends()["backends"] if b["usable"]]


@pytest.mark.parametrize("backend", usable_backends())
def test_inputs_are_used_in_place_not_copied(good, backend):
    # The engine reads the arrays' own memory: the addresses it holds are the arrays' data pointers.
    train, labels, test = good
    task = revgraph.Task(train, labels, test, backend=backend, epochs=1)
    assert task._task.input_addresses() == [a.ctypes.data for a in (train, labels, test)]


def test_the_task_keeps_its_arrays_alive(good):
    # The caller may drop every reference: the task holds the arrays (alive while it lives, freed
    # with it), and runs give the bytes of a task made from copies.
    import gc
    import weakref
    train, labels, test = (a.copy() for a in good)
    refs = [weakref.ref(a) for a in (train, labels, test)]
    task = revgraph.Task(train, labels, test, backend="cpu", epochs=1)
    addresses = [a.ctypes.data for a in (train, labels, test)]
    del train, labels, test
    gc.collect()
    assert all(r() is not None for r in refs)
    assert task._task.input_addresses() == addresses
    expect = revgraph.fit_predict(*good, backend="cpu", epochs=1)
    got = task.run()
    assert got.predictions.tobytes() == expect.predictions.tobytes()
    assert got.scores.tobytes() == expect.scores.tobytes()
    assert got.metadata["input_hashes"] == expect.metadata["input_hashes"]
    del task, got
    gc.collect()
    assert all(r() is None for r in refs)


def test_unaligned_arrays_raise(good):
    train, labels, test = good
    raw = bytearray(train.nbytes + 1)
    unaligned = np.frombuffer(raw, dtype=np.float32, count=train.size, offset=1).reshape(train.shape)
    assert not unaligned.flags.aligned and unaligned.flags.c_contiguous
    refuse(unaligned, labels, test, "train_images is not aligned to its dtype")


def test_a_task_that_fails_to_prepare_lets_go_of_its_arrays(good):
    # Refused after the engine took hold of the arrays (a bad config; a backend that cannot run
    # here, where there is one): every reference it took is given back.
    import sys
    train, labels, test = (a.copy() for a in good)
    before = [sys.getrefcount(a) for a in (train, labels, test)]
    for b in revgraph.backends()["backends"]:
        if not b["usable"]:
            with pytest.raises(RuntimeError):
                revgraph.Task(train, labels, test, backend=b["requested"])
    with pytest.raises(ValueError):
        revgraph.Task(train, labels, test, backend="cpu", depth=0)
    assert [sys.getrefcount(a) for a in (train, labels, test)] == before


RELEASE_WITHOUT_GIL = r"""
import sys
import numpy as np
import revgraph
rng = np.random.default_rng(0)
arrays = [rng.random((30, 1, 9, 9), dtype=np.float32), rng.integers(0, 10, 30), rng.random((5, 1, 9, 9), dtype=np.float32)]
before = [sys.getrefcount(a) for a in arrays]
revgraph.configure_gpu(device=1023)  # no such device: preparation fails inside the GIL-free section
try:
    revgraph.Task(*arrays, backend=sys.argv[1])
    print("prepared")
except RuntimeError:
    pass
print([sys.getrefcount(a) for a in arrays] == before)
"""


def test_a_gpu_task_failing_in_preparation_releases_its_arrays_with_the_gil():
    # The one path where the engine drops its hold on the arrays with the GIL released: the
    # owner takes the GIL to let go (without it the interpreter would crash here). GPU only.
    import subprocess
    import sys
    gpu = [b["requested"] for b in revgraph.backends()["backends"] if b["usable"] and b["gpu"]]
    if not gpu:
        pytest.skip("no usable CUDA backend here")
    for backend in gpu:
        p = subprocess.run([sys.executable, "-c", RELEASE_WITHOUT_GIL, backend], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert p.stdout == "True\n", p.stdout


def test_the_command_and_python_give_one_message_per_bad_input(good, tmp_path):
    # The engine's one input check (check_input_arrays, then TaskInputs::validate): for each
    # defect, Python's ValueError is the command's error line after the file's name.
    train, labels, test = good
    bad_pixel = train.copy()
    bad_pixel[3, 0, 4, 4] = 1.5
    bad_label = labels.copy()
    bad_label[7] = 10
    cases = {
        "dtype": (train.astype(np.float64), labels, test),
        "labels_dtype": (train, labels.astype(np.int32), test),
        "shape": (train.reshape(-1, 81), labels, test),
        "labels_shape": (train, labels.reshape(-1, 1), test),
        "count": (train, labels[:-1].copy(), test),
        "pixel": (bad_pixel, labels, test),
        "label": (train, bad_label, test),
    }
    for name, (tr, lb, te) in cases.items():
        path = tmp_path / f"{name}.npz"
        np.savez(path, train_images=tr, train_labels=lb, test_images=te)
        with pytest.raises(ValueError) as raised:
            revgraph.Task(tr, lb, te, backend="cpu")
        assert str(raised.value).startswith("input: "), name
        p = run_cli("run", "--input", str(path), "--backend", "cpu", "--quiet", check=False)
        assert (p.returncode, p.stdout) == (1, ""), name
        assert p.stderr == f"revgraph: error: {path}: {raised.value}\n", name


def test_engine_errors_reach_python_through_one_translator(tmp_path):
    # _core's registered translator: a --set syntax error is SetSyntaxError (a ValueError), any
    # other engine error that is not the caller's value mistake is RuntimeError with its message.
    from revgraph import _core
    with pytest.raises(_core.SetSyntaxError, match="--set needs key=value, got 'depth'"):
        _core.config_from(None, ["depth"])
    assert issubclass(_core.SetSyntaxError, ValueError)
    with pytest.raises(ValueError, match="config: depth must be in 1..1024"):
        _core.config_from(None, ["depth=0"])
    with pytest.raises(RuntimeError, match="missing"):
        _core.write_files_atomic([(str(tmp_path / "missing" / "f.bin"), b"x")])
    assert not (tmp_path / "missing").exists()
