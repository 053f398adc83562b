"""docs/spec.md's sizes, configuration and hashes, with numpy alone (tools/check_torch_trace.py
has no torch): the names, order and defaults of the config (§1), the parameters' names and shapes in
state-vector order, the epoch permutations (§6) and the sha256 of raw bytes (§7)."""
import hashlib
import math

import numpy as np

PIXELS, FEATURES, HALF, CLASSES = 81, 82, 41, 10  # FEATURES, HALF: rev88's width and its half
# The engine's ranges (engine/config.cpp: kMaxDepth, kMaxWidth, kMaxEpochs, kMaxBatch), stated
# again here because torchref must not depend on the build: it is the independent reference the
# engine is checked against. python/tests/test_torchref_config.py runs every edge through both.
MAX_DEPTH = 1024
MAX_WIDTH = 1024
MAX_EPOCHS = 1000000
MAX_BATCH = 1 << 20
CONFIG_TYPES = {  # docs/spec.md §1 names and order, rev88 defaults
    "depth": (int, 2), "width": (int, FEATURES), "alpha": (float, 0.5), "seed": (int, 11), "epochs": (int, 2),
    "learning_rate": (float, 0.1), "batch_size": (int, 128), "momentum": (float, 0.9),
    "weight_decay": (float, 0.0),
}
INPUT_KEYS = ("train_images", "train_labels", "test_images")


class Fail(Exception):
    """A one-line error for the user."""


# ----------------------------------------------------------------------------- configuration
def parse_config(pairs):
    cfg = {k: v for k, (_, v) in CONFIG_TYPES.items()}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or key not in CONFIG_TYPES:
            raise Fail(f"--set {pair!r}: expected key=value with key one of {', '.join(CONFIG_TYPES)}")
        kind = CONFIG_TYPES[key][0]
        try:
            cfg[key] = kind(text) if kind is float else int(text, 10)
        except ValueError:
            raise Fail(f"--set {key}: {text!r} is not a valid {kind.__name__}") from None
    checks = [
        ("depth", 1 <= cfg["depth"] <= MAX_DEPTH, f"must be in 1..{MAX_DEPTH}"),
        ("width", FEATURES <= cfg["width"] <= MAX_WIDTH and cfg["width"] % 2 == 0,
         f"must be an even integer in {FEATURES}..{MAX_WIDTH}"),
        ("alpha", math.isfinite(cfg["alpha"]), "must be finite"),
        ("seed", 0 <= cfg["seed"] < 2**64, "must be in [0, 2^64)"),
        # The engine also runs epochs=0 (predictions from the initial parameters); torchref cannot in
        # all its modes: the CUDA graph capture (graphs.py) and --check-gradients (checks.py) read
        # epoch 0's permutation, which a 0-epoch task does not draw. So 0 stays refused here, in one
        # line, rather than failing deep inside those modes.
        ("epochs", 1 <= cfg["epochs"] <= MAX_EPOCHS,
         f"must be in 1..{MAX_EPOCHS} (the engine's 0 is not run by this reference)"),
        ("learning_rate", math.isfinite(cfg["learning_rate"]) and cfg["learning_rate"] >= 0, "must be >= 0"),
        ("batch_size", 1 <= cfg["batch_size"] <= MAX_BATCH, f"must be in 1..{MAX_BATCH}"),
        ("momentum", math.isfinite(cfg["momentum"]) and 0 <= cfg["momentum"] < 1, "must be in [0, 1)"),
        ("weight_decay", math.isfinite(cfg["weight_decay"]) and cfg["weight_decay"] >= 0, "must be >= 0"),
    ]
    for key, ok, why in checks:
        if not ok:
            raise Fail(f"config {key}={cfg[key]!r} {why}")
    return cfg


def param_names(depth):
    return [f"weights.{i}" for i in range(2 * depth)] + ["head.weight", "head.bias"]


def param_shapes(depth, width=FEATURES):
    """Branches width/2 x width/2, the head 10 x width (docs/spec.md §3)."""
    half = width // 2
    return [(half, half)] * (2 * depth) + [(CLASSES, width), (CLASSES,)]


def sha256(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def epoch_permutations(seed, n, epochs):
    """(epochs, n) int64: one PCG64 generator from the seed, one permutation per epoch."""
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.stack([rng.permutation(n).astype(np.int64) for _ in range(epochs)])
