"""tools/torchref (the same-spec PyTorch learner) states the config ranges of docs/spec.md §1 on its
own: it must stay independent of the build (it is the reference the engine is checked against, and
tools/check_torch_trace.py uses its numpy part alone). So its ranges are checked here against the
engine's, value by value at every edge: the same accept/refuse decision for each, but for the one
case torchref cannot run (epochs=0, see tools/torchref/spec.py). They once drifted (no upper bound
for depth, epochs or batch_size; momentum 1 and above accepted)."""
import importlib.util
import os
import sys

import pytest

from revgraph import _core

ROOT = os.environ.get("REVGRAPH_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def torchref_spec():
    # tools/torchref/spec.py on its own (numpy alone, no torch): not the package, whose
    # __init__ sets a cuBLAS variable, and not a sys.path edit that other tests would see.
    path = os.path.join(ROOT, "tools", "torchref", "spec.py")
    spec = importlib.util.spec_from_file_location("torchref_spec_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EDGES = {
    "depth": ["0", "1", "1024", "1025"],
    "width": ["80", "81", "82", "83", "1024", "1025", "1026"],
    "alpha": ["-1e300", "0", "1e300", "inf", "-inf", "nan"],
    "seed": ["0", "-1", str(2**64 - 1), str(2**64)],
    "epochs": ["-1", "1", "1000000", "1000001", "2147483648"],
    "learning_rate": ["-1e-300", "-0.0", "0", "1e300", "inf", "nan"],
    "batch_size": ["0", "1", str(1 << 20), str((1 << 20) + 1)],
    "momentum": ["-1e-300", "-0.0", "0", "0.999999", "1", "1.5", "inf", "nan"],
    "weight_decay": ["-1e-9", "0", "1e300", "inf", "nan"],
}
# What torchref refuses though the engine runs it, each for a reason given in tools/torchref/spec.py.
TORCHREF_NARROWER = {"epochs=0"}


def engine_accepts(setting):
    try:
        _core.config_from(None, [setting])
        return True
    except ValueError:
        return False


def torchref_accepts(spec, setting):
    try:
        spec.parse_config([setting])
        return True
    except spec.Fail:
        return False


def test_every_key_is_checked():
    assert list(torchref_spec().CONFIG_TYPES) == list(_core.CONFIG_KEYS) == list(EDGES)


@pytest.mark.parametrize("setting", [f"{k}={v}" for k, vs in EDGES.items() for v in vs])
def test_torchref_accepts_what_the_engine_accepts(setting):
    spec = torchref_spec()
    assert torchref_accepts(spec, setting) == engine_accepts(setting), setting


def test_torchref_refuses_zero_epochs_in_one_line():
    # The one known difference: the engine runs 0 epochs (predicts from the initial parameters),
    # torchref refuses it with one line saying why, never an IndexError from deep inside.
    spec = torchref_spec()
    for setting in TORCHREF_NARROWER:
        assert engine_accepts(setting) and not torchref_accepts(spec, setting)
    with pytest.raises(spec.Fail, match="epochs"):
        spec.parse_config(["epochs=0"])
