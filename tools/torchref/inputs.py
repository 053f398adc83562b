"""A task's inputs as the learner may see them: exactly train_images, train_labels and
test_images (no query labels), checked for dtype, shape and range; query labels apart, for accuracy."""
import numpy as np

from .spec import CLASSES, INPUT_KEYS, Fail

def load_inputs(path):
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = set(z.files)
            if keys != set(INPUT_KEYS):
                extra, missing = sorted(keys - set(INPUT_KEYS)), sorted(set(INPUT_KEYS) - keys)
                raise Fail(f"{path}: must hold exactly {', '.join(INPUT_KEYS)}"
                           + (f"; extra arrays {extra} rejected (no query labels may reach the learner)" if extra else "")
                           + (f"; missing {missing}" if missing else ""))
            arrays = {k: np.ascontiguousarray(z[k]) for k in INPUT_KEYS}
    except (OSError, ValueError) as e:
        raise Fail(f"{path}: cannot read npz: {e}") from None
    tri, trl, tei = (arrays[k] for k in INPUT_KEYS)
    for name, a in (("train_images", tri), ("test_images", tei)):
        if a.dtype != np.float32 or a.ndim != 4 or a.shape[1:] != (1, 9, 9) or a.shape[0] < 1:
            raise Fail(f"{name}: expected (n,1,9,9) float32 with n >= 1, got {a.shape} {a.dtype}")
        if not np.all((a >= 0) & (a <= 1)):
            raise Fail(f"{name}: pixels must be in [0,1]")
    if trl.dtype != np.int64 or trl.shape != (tri.shape[0],):
        raise Fail(f"train_labels: expected ({tri.shape[0]},) int64, got {trl.shape} {trl.dtype}")
    if trl.min() < 0 or trl.max() >= CLASSES:
        raise Fail("train_labels: must be in 0..9")
    return tri, trl, tei


def load_test_labels(path, q):
    lab = np.load(path, allow_pickle=False)
    if lab.shape != (q,) or lab.dtype.kind not in "iu":
        raise Fail(f"{path}: expected ({q},) integer labels, got {lab.shape} {lab.dtype}")
    return lab.astype(np.int64)
