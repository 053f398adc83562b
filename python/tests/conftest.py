"""Shared pieces of the Python package's tests: made-up tasks, the harness's archive, and the
`revgraph` command (REVGRAPH_CLI, set by meson test) to compare against."""
import os
import subprocess

import numpy as np
import pytest

CLI = os.environ.get("REVGRAPH_CLI")
TIME_KEYS = {"preparation_seconds", "training_prediction_seconds", "run_seconds", "created_utc"}


def make_task(seed, train=600, test=150):
    """A made-up task with some structure (each class brightens its own pixels), so training
    moves the parameters and predictions are not all one class."""
    rng = np.random.default_rng(seed)
    train_labels = rng.integers(0, 10, train, dtype=np.int64)
    test_labels = rng.integers(0, 10, test, dtype=np.int64)

    def images(labels):
        x = rng.random((labels.size, 1, 9, 9), dtype=np.float32) * np.float32(0.5)
        flat = x.reshape(labels.size, 81)
        for k in range(10):
            flat[labels == k, k * 8:(k + 1) * 8] += np.float32(0.5)
        return x

    return images(train_labels), train_labels, images(test_labels), test_labels


def write_medium(path, seed, train=600, test=150):
    """The harness's archive: the three inputs, test_labels and the index arrays."""
    tr, tl, te, ql = make_task(seed, train, test)
    np.savez(path, train_images=tr, train_labels=tl, test_images=te, test_labels=ql,
             train_indices=np.arange(train, dtype=np.int64),
             test_indices=np.arange(train, train + test, dtype=np.int64))
    return tr, tl, te, ql


def run_cli(*args, check=True):
    if not CLI:
        pytest.skip("REVGRAPH_CLI is not set (meson test sets it to the built revgraph command)")
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"revgraph {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


@pytest.fixture(scope="session")
def task_arrays():
    return make_task(1234)
