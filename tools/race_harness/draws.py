"""The draws of the race, made as the published generator makes them (docs/race.md, "The draws.").

Why here and not in the engine: the race's scheme is not the engine's qualification protocol
(docs/spec.md §9: one PCG64 permutation a seed, a double-precision resize). The judge resizes with
float32 numpy matmuls and draws from two fixed halves of the pool with numpy's Generator.choice, so
the harness does exactly that, in numpy, where the judge's own numpy would do it.

  pool    the 60,000 official MNIST training images: bytes / 255 in float32, box-area resize
          28 -> 9 (out = A·X·Aᵀ, float32 matmuls, A the exact overlap weights), clipped to [0, 1]
  halves  default_rng([seed, 0x5711]).permutation(60000): first half train rows, second test rows
  draw i  (i = 1..11) s = seed + 13 i; rng = default_rng([s, 0xD4A7]); train rows
          rng.choice(train_half, 10000, replace=False), then test rows from test_half (same rng);
          labels y' = perm[y], perm = default_rng([s, 0x5EED]).permutation(10)
  seed    a public case seed a paired with a secret b: a + (a+b)(a+b+1)/2

The foreign draws (the warm-up, and the hold-out calls on Fashion-MNIST) are this harness's own
choice of rows and label permutation from the seed: the judge does not publish how it draws them.
"""
import gzip
import hashlib
import os
import zlib

import numpy as np

# The official files' names and sha256 (their decompressed bytes), shared with tools/fetch-mnist.
from mnist_files import OFFICIAL_SHA256, TEST_IMAGES, TEST_LABELS, TRAIN_IMAGES, TRAIN_LABELS  # noqa: F401

from .errors import RaceError

SIDE = 28
OUT_SIDE = 9
PER_DRAW = 10000
RANKED_DRAWS = 11
POOL_SIZE = 60000
SEED_STEP = 13
SPLIT_SALT = 0x5711
DRAW_SALT = 0xD4A7
LABEL_SALT = 0x5EED
# This harness's own salts (not published): the warm-up draw, the hold-out draws, their positions.
WARMUP_SALT = 0x3A53
HOLDOUT_SALT = 0x40D0
HOLDOUT_POSITION_SALT = 0x401D
HOLDOUT_CALLS = 2

IMAGES_MAGIC = 2051
LABELS_MAGIC = 2049


# ----------------------------------------------------------------------------------------- files
def idx_path(folder, name):
    """FOLDER/NAME, or FOLDER/NAME.gz; RaceError naming both when neither is a file."""
    for candidate in (os.path.join(folder, name), os.path.join(folder, name + ".gz")):
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    raise RaceError(f"{folder}: neither {name} nor {name}.gz is there")


def read_idx(path, magic):
    """An IDX file (raw, or gzip where the name ends .gz) -> (uint8 array of its shape, sha256 of
    the decompressed bytes). Checks the magic number and that the size is exactly the header's."""
    try:
        with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
            data = f.read()
    except (OSError, EOFError, zlib.error) as e:  # zlib.error: a damaged .gz body (gzip.BadGzipFile is an OSError)
        raise RaceError(f"{path}: {e}") from None
    ndim = 3 if magic == IMAGES_MAGIC else 1
    header = 4 + 4 * ndim
    if len(data) < header or int.from_bytes(data[:4], "big") != magic:
        got = int.from_bytes(data[:4], "big") if len(data) >= 4 else None
        raise RaceError(f"{path}: not an IDX file of magic {magic} (got {got})")
    shape = tuple(int.from_bytes(data[4 + 4 * k:8 + 4 * k], "big") for k in range(ndim))
    if len(data) != header + int(np.prod(shape, dtype=np.int64)):
        raise RaceError(f"{path}: {len(data)} bytes, but its header {shape} needs {header + int(np.prod(shape))}")
    array = np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)
    return array, hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------- pixels
def box_weights():
    """A (9x28) float32: A[i, j] = |[i·28/9, (i+1)·28/9) ∩ [j, j+1)| / (28/9), exactly: in ninths of a
    pixel the overlap is the integer |[28i, 28i+28) ∩ [9j, 9j+9)|, so A[i, j] = that / 28."""
    u = np.array([[max(0, min(SIDE * (i + 1), OUT_SIDE * (j + 1)) - max(SIDE * i, OUT_SIDE * j))
                   for j in range(SIDE)] for i in range(OUT_SIDE)], dtype=np.float64)
    return (u / SIDE).astype(np.float32)


def resize(images):
    """uint8 (N, 28, 28) -> float32 (N, 1, 9, 9): x = bytes / 255 in float32, A·x·Aᵀ in float32 numpy
    matmuls (A·x first), clipped to [0, 1]. In blocks, which gives each image the same bits."""
    a = box_weights()
    out = np.empty((images.shape[0], 1, OUT_SIDE, OUT_SIDE), dtype=np.float32)
    for k in range(0, images.shape[0], 10000):
        x = images[k:k + 10000].astype(np.float32) / np.float32(255)
        out[k:k + 10000, 0] = np.clip(np.matmul(np.matmul(a, x), a.T), np.float32(0), np.float32(1))
    return out


class Pool:
    """Resized images (N, 1, 9, 9) float32, labels (N,) int64, and where they came from."""

    def __init__(self, images, labels, sources):
        self.images, self.labels, self.sources = images, labels, sources

    def __len__(self):
        return self.labels.shape[0]

    @property
    def official(self):
        return all(s["official"] for s in self.sources)


def load_pool(folder, images_name=TRAIN_IMAGES, labels_name=TRAIN_LABELS, count=None):
    """The IDX pair in folder as a Pool; RaceError where the files do not make one (or do not hold
    `count` images, where given)."""
    if not os.path.isdir(folder):
        raise RaceError(f"{folder}: not a folder")
    sources, arrays = [], []
    for name, magic in ((images_name, IMAGES_MAGIC), (labels_name, LABELS_MAGIC)):
        path = idx_path(folder, name)
        array, digest = read_idx(path, magic)
        arrays.append(array)
        sources.append({"file": name, "path": path, "sha256": digest, "official": OFFICIAL_SHA256.get(name) == digest})
    images, labels = arrays
    if images.shape[1:] != (SIDE, SIDE):
        raise RaceError(f"{sources[0]['path']}: images of {images.shape[1:]}, not 28x28")
    if images.shape[0] != labels.shape[0]:
        raise RaceError(f"{folder}: {images.shape[0]} images but {labels.shape[0]} labels")
    if labels.size and int(labels.max()) > 9:
        raise RaceError(f"{sources[1]['path']}: a label {int(labels.max())} outside 0..9")
    if count is not None and images.shape[0] != count:
        raise RaceError(f"{sources[0]['path']}: {images.shape[0]} images, the protocol's pool has {count}")
    return Pool(resize(images), labels.astype(np.int64), sources)


def check_foreign(foreign, pool, foreign_option, pool_option):
    """RaceError where a foreign pool (the warm-up's and hold-outs' Fashion-MNIST) is MNIST: any of
    the official MNIST files, or a file of the ranked pool itself. On MNIST, an entry that memorised
    the digits passes the hold-out calls, and the report would call them Fashion-MNIST draws."""
    official = {digest: name for name, digest in OFFICIAL_SHA256.items()}
    mine = {s["sha256"]: s["path"] for s in pool.sources}
    for s in foreign.sources:
        if s["sha256"] in official:
            raise RaceError(f"{foreign_option}: {s['path']} is MNIST's official {official[s['sha256']]}, not "
                            f"Fashion-MNIST: the warm-up and hold-out calls need foreign data")
        if s["sha256"] in mine:
            raise RaceError(f"{foreign_option}: {s['path']} holds the bytes of {pool_option}'s {mine[s['sha256']]}: "
                            f"the warm-up and hold-out calls need foreign data (Fashion-MNIST), not the ranked pool")


# ----------------------------------------------------------------------------------------- seeds
def cantor(a, b):
    """The judge's seed from a public case seed a and a secret b: a + (a+b)(a+b+1)/2."""
    if a < 0 or b < 0:
        raise RaceError(f"case seed and secret must be non-negative integers, got {a} and {b}")
    return a + (a + b) * (a + b + 1) // 2


# ----------------------------------------------------------------------------------------- draws
class Draw:
    """One call's data: kind ("ranked", "warmup", "holdout"), index (ranked 1..11, hold-out 1..,
    warm-up 0), the rows of the pool and the label permutation it was made with, and the arrays:
    train_x float32 (10000,1,9,9), train_y int64, test_x float32, test_y int64 (permuted labels)."""

    def __init__(self, kind, index, seed, pool, train_rows, test_rows, perm, data, note=""):
        self.kind, self.index, self.seed, self.data, self.note = kind, index, seed, data, note
        self.train_rows = np.asarray(train_rows, dtype=np.int64)
        self.test_rows = np.asarray(test_rows, dtype=np.int64)
        self.perm = np.asarray(perm, dtype=np.int64)
        self.train_x = np.ascontiguousarray(pool.images[self.train_rows])
        self.train_y = np.ascontiguousarray(self.perm[pool.labels[self.train_rows]])
        self.test_x = np.ascontiguousarray(pool.images[self.test_rows])
        self.test_y = np.ascontiguousarray(self.perm[pool.labels[self.test_rows]])

    def describe(self):
        d = {"kind": self.kind, "index": self.index, "seed": self.seed, "data": self.data,
             "label_permutation": self.perm.tolist()}
        if self.note:
            d["note"] = self.note
        return d


def halves(seed, n=POOL_SIZE):
    """The run's split of the pool: (train half, test half) of default_rng([seed, 0x5711]).permutation(n)."""
    p = np.random.default_rng([seed, SPLIT_SALT]).permutation(n)
    return p[:n // 2], p[n // 2:]


def shares_draw_seeds(a, b):
    """Whether runs with seeds a and b have a ranked draw's seed in common (draw i of seed s is drawn
    from s + SEED_STEP i, i = 1..11): a - b = SEED_STEP m with |m| <= 10. Equal seeds give the same
    11 draws; overlapping ones the same row choices and label permutation for a draw (the halves
    still differ): either way, draws a choice was made on."""
    d = a - b
    return d % SEED_STEP == 0 and abs(d // SEED_STEP) <= RANKED_DRAWS - 1


def ranked_draw(pool, seed, i, split=None):
    """Ranked draw i (1..11) of the run with this seed."""
    train_half, test_half = split if split is not None else halves(seed, len(pool))
    s = seed + SEED_STEP * i
    rng = np.random.default_rng([s, DRAW_SALT])
    train_rows = rng.choice(train_half, PER_DRAW, replace=False)
    test_rows = rng.choice(test_half, PER_DRAW, replace=False)
    perm = np.random.default_rng([s, LABEL_SALT]).permutation(10)
    return Draw("ranked", i, s, pool, train_rows, test_rows, perm, "mnist-train")


def ranked_draws(pool, seed, count=RANKED_DRAWS):
    """The run's ranked draws 1..count, the pool split once."""
    if len(pool) != POOL_SIZE:
        raise RaceError(f"the ranked draws need the {POOL_SIZE:,} official training images, the pool has {len(pool):,}")
    split = halves(seed, len(pool))
    return [ranked_draw(pool, seed, i, split) for i in range(1, count + 1)]


def _foreign_draw(pool, rng, kind, index, seed, data):
    n = len(pool)
    note = ""
    if n >= 2 * PER_DRAW:
        rows = rng.choice(n, 2 * PER_DRAW, replace=False)
        train_rows, test_rows = rows[:PER_DRAW], rows[PER_DRAW:]
    elif n >= PER_DRAW:
        train_rows = rng.permutation(n)[:PER_DRAW]
        test_rows = rng.permutation(n)[:PER_DRAW]
        note = f"a pool of {n:,} images: the train and query rows are the same images in other orders"
    else:
        raise RaceError(f"{data}: {n:,} images, a call needs at least {PER_DRAW:,}")
    perm = rng.permutation(10)
    return Draw(kind, index, seed, pool, train_rows, test_rows, perm, data, note)


def warmup_draw(pool, seed, data):
    """The untimed warm-up call's data: 10,000 + 10,000 rows of a foreign pool (Fashion-MNIST's
    training files, or MNIST's t10k files where no Fashion folder is given), labels permuted."""
    return _foreign_draw(pool, np.random.default_rng([seed, WARMUP_SALT]), "warmup", 0, seed, data)


def holdout_draw(pool, seed, k):
    """Hold-out call k (1..) on the Fashion-MNIST pool."""
    return _foreign_draw(pool, np.random.default_rng([seed, HOLDOUT_SALT, k]), "holdout", k, seed, "fashion-train")


def holdout_positions(seed, ranked=RANKED_DRAWS, holdouts=HOLDOUT_CALLS):
    """Where the hold-out calls sit among the ranked + hold-out timed calls (0-based, ascending)."""
    rng = np.random.default_rng([seed, HOLDOUT_POSITION_SALT])
    return sorted(int(p) for p in rng.choice(ranked + holdouts, holdouts, replace=False))
