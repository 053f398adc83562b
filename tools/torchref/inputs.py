"""A task's inputs as the learner may see them: exactly train_images, train_labels and
test_images (no query labels), checked for dtype, shape and range; query labels apart, for accuracy.
Any file numpy cannot read as the kind expected (missing, a folder, truncated, an .npy where an .npz
is expected or the other way round) is a Fail: one line, never a traceback."""
import zipfile
import zlib

import numpy as np

from .spec import CLASSES, INPUT_KEYS, Fail

# What np.load and an archive's members raise on a file that is not what it should be.
READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)


def _why(e):
    return (e.strerror if isinstance(e, OSError) and e.strerror else str(e)) or type(e).__name__


def read_npz(path, check=None):
    """Every array of an .npz archive, read whole, by name; check(names), where given, first."""
    # np.load is given an open file, which is closed here whatever numpy raises.
    try:
        with open(path, "rb") as fh:
            z = np.load(fh, allow_pickle=False)
            if isinstance(z, np.ndarray):
                raise Fail(f"{path}: is one .npy array, not an .npz archive")
            with z:
                if check is not None:
                    check(z.files)
                return {k: np.ascontiguousarray(z[k]) for k in z.files}
    except READ_ERRORS as e:
        raise Fail(f"{path}: cannot read npz: {_why(e)}") from None


def load_inputs(path):
    def exactly_the_inputs(names):
        keys = set(names)
        if keys != set(INPUT_KEYS):
            extra, missing = sorted(keys - set(INPUT_KEYS)), sorted(set(INPUT_KEYS) - keys)
            raise Fail(f"{path}: must hold exactly {', '.join(INPUT_KEYS)}"
                       + (f"; extra arrays {extra} rejected (no query labels may reach the learner)" if extra else "")
                       + (f"; missing {missing}" if missing else ""))
    arrays = read_npz(path, exactly_the_inputs)
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
    try:
        with open(path, "rb") as fh:
            lab = np.load(fh, allow_pickle=False)
            if not isinstance(lab, np.ndarray):
                lab.close()
                raise Fail(f"{path}: is an .npz archive; the query labels are one .npy array")
    except READ_ERRORS as e:
        raise Fail(f"{path}: cannot read npy: {_why(e)}") from None
    if lab.shape != (q,) or lab.dtype.kind not in "iu":
        raise Fail(f"{path}: expected ({q},) integer labels, got {lab.shape} {lab.dtype}")
    return lab.astype(np.int64)
