"""The Python API over the engine: Task (prepare once, run many times), Result, fit_predict,
run_together, backends. The engine does all the work in revgraph._core; this layer only names
things and turns the engine's results into numpy arrays and dicts."""
from __future__ import annotations

import copy
import json
import numbers
import os
import warnings
from collections.abc import Sequence
from typing import Any, Callable, Iterable, Optional

import numpy as np
import numpy.typing as npt

from . import _core


# The argument checks, written once: a value of the wrong type is one TypeError line naming the
# argument, before pybind11 would answer with its multi-line signature list (and the arrays' repr).
def _int(name: str, value: Any, lo: Optional[int] = None, hi: Optional[int] = None) -> int:
    """value as an int; with a range, ValueError outside lo..hi (the engine's C++ integer types)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if lo is not None and hi is not None and not lo <= value <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {value}")
    return value


_INT64_MAX, _UINT64_MAX = 2**63 - 1, 2**64 - 1


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {value!r}")
    return value


def _path(name: str, value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {value!r}")
    path = os.fspath(value)
    if not isinstance(path, str):
        raise TypeError(f"{name} must be a text path, got {value!r}")
    if not path:  # as the command line refuses an empty value: "" names no file (the engine saw ": ...")
        raise ValueError(f"{name} is an empty path")
    return path


def _band(value: Any, example: str = "\"12\" or \"7.5\"") -> str:
    if not isinstance(value, str):
        raise TypeError(f"band must be a decimal string such as {example}, got {value!r}")
    return value


def _progress(value: Any) -> Any:
    if value is not None and not callable(value):
        raise TypeError(f"progress must be a callable taking one str, or None, got {value!r}")
    return value


# Keyword arguments a config is not, but a caller may think it: where each goes instead (a config's
# unknown key is otherwise the engine's one-line refusal with its closest key).
_NOT_CONFIG = {
    **{k: f"a GPU option of the process: revgraph.configure_gpu({k}=...) before the first GPU task"
       for k in ("device", "workspace_bytes", "pdl", "cluster_blocks")},
    "metadata": "an option of a run: Task(...).run(metadata=False), or run_together(..., metadata=False)",
    "test_labels": "never an input: score the predictions against the labels afterwards "
                   "((result.predictions == test_labels).mean())",
}


def _config_kwargs(config: dict[str, Any]) -> dict[str, Any]:
    for key in config:
        if key in _NOT_CONFIG and key not in _core.CONFIG_KEYS:
            raise ValueError(f"config: unknown key '{key}': {_NOT_CONFIG[key]}")
    # numpy scalars (np.int64(3), np.float32(0.5)) mean their value. A known key's value that is no
    # number at all (a str, None, a bool) is a TypeError here, as every other argument's wrong type
    # is; numbers, and unknown keys, go to the engine's config reader, which refuses what is wrong
    # (2.5 for depth, a range, a misspelt name) as ValueError with the command's message.
    out = {}
    for key, value in config.items():
        if isinstance(value, np.generic) and not isinstance(value, np.bool_):
            if isinstance(value, numbers.Integral):
                value = int(value)
            elif isinstance(value, numbers.Real):
                value = float(value)
        if key in _core.CONFIG_KEYS and (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float))):
            kind = "an integer" if _core.CONFIG_KEYS[key] else "a number"
            raise TypeError(f"config: {key} must be {kind}, got {value!r}")
        out[key] = value
    return out


class _Kept:
    """A run's outputs as plain values (copies, no engine object): what a pickled or copied Result
    holds, with the methods of the engine's RunOutput that Result reads."""

    def __init__(self, predictions: Any, scores: Any, state: dict[str, Any], metadata_json: Optional[str],
                 run_seconds: float, outputs_seconds: float, predictions_npy: bytes, divergence_warning: str) -> None:
        self._predictions, self._scores, self._state = predictions, scores, state
        for a in (predictions, scores, *state.values()):
            a.setflags(write=False)  # as the engine's: a run's own bytes
        self._metadata_json, self._predictions_npy = metadata_json, predictions_npy
        self.run_seconds, self.outputs_seconds, self._divergence_warning = run_seconds, outputs_seconds, divergence_warning

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Kept, (self._predictions, self._scores, self._state, self._metadata_json, self.run_seconds,
                        self.outputs_seconds, self._predictions_npy, self._divergence_warning))

    def predictions(self) -> Any:
        return self._predictions

    def scores(self) -> Any:
        return self._scores

    def state(self) -> dict[str, Any]:
        return {name: a.copy() for name, a in self._state.items()}  # Result makes them read-only

    @property
    def has_metadata(self) -> bool:
        return self._metadata_json is not None

    def metadata_json(self) -> str:
        assert self._metadata_json is not None
        return self._metadata_json

    def predictions_npy(self) -> bytes:
        return self._predictions_npy

    def divergence_warning(self) -> str:
        return self._divergence_warning


class Result:
    """One run's results, byte for byte what `revgraph run` writes for the same inputs and config.

    predictions: int64 (Q,); scores: float32 (Q, 10), the head's logits (argmax is the
    prediction; no softmax applied); state: every parameter by name and velocity.<name> (float32),
    as --state writes them; metadata: RESULT.json's keys and values (docs/spec.md §7: config,
    hashes, counts, times, device, backend); run_seconds: the engine's own time for the run (device
    time on a GPU, wall time on the CPU). Every array is read-only; state and metadata are new
    dicts each access, so changing them changes nothing in the Result. A Result pickles and copies
    (its arrays copied; e.g. from a ProcessPoolExecutor's workers); to_dict() gives it as plain
    values. A run that diverged (NaN scores) warns when it returns (RuntimeWarning) and counts the
    rows in metadata["non_finite_score_rows"].
    """

    __slots__ = ("_out", "_predictions", "_scores", "_state", "_metadata")

    def __init__(self, out: Any) -> None:
        self._out = out
        # Views onto the engine's buffers, which `out` owns: no copy.
        self._predictions = out.predictions()
        self._scores = out.scores()
        self._state: Optional[dict[str, npt.NDArray[np.float32]]] = None
        self._metadata: Optional[dict[str, Any]] = None

    @property
    def predictions(self) -> npt.NDArray[np.int64]:
        """int64 (Q,): the class (0..9) predicted for each query image."""
        return self._predictions

    @property
    def scores(self) -> npt.NDArray[np.float32]:
        """float32 (Q, 10): the head's logits for each query image (no softmax)."""
        return self._scores

    @property
    def state(self) -> dict[str, npt.NDArray[np.float32]]:
        """Every parameter by name, then velocity.<name>: float32, read-only, as --state writes them.
        Each access is a new dict (the caller's to change) of the same read-only arrays."""
        if self._state is None:  # built on first use: most callers only want predictions
            state = self._out.state()
            for a in state.values():
                a.setflags(write=False)
            self._state = state
        # A new dict each time, not the cached one: a key a caller added or removed would otherwise
        # stick to the Result, and pickling (which copies every value) would meet whatever was added
        # there. The arrays are shared, not copied: they are read-only, the run's own bytes.
        return dict(self._state)

    @property
    def metadata(self) -> Optional[dict[str, Any]]:
        """RESULT.json's keys and values; None for a run(metadata=False). Each access is a new dict
        (nested ones too), the caller's to change."""
        if self._metadata is None and self._out.has_metadata:
            metadata = json.loads(self._out.metadata_json())
            # The CLI's RESULT.json names where the inputs came from; here they came from the caller.
            # (The rest, timings included, is the engine's: a Result is one run's.)
            metadata["input"] = "numpy arrays (train_images, train_labels, test_images)"
            self._metadata = metadata
        # A deep copy each time: a caller's change (metadata["config"]["epochs"] = 99) would otherwise
        # stick to this Result but not to a pickle or deepcopy of it, which rebuild metadata from the
        # engine's RESULT.json text. JSON values only, so the copy is small and exact.
        return None if self._metadata is None else copy.deepcopy(self._metadata)

    @property
    def run_seconds(self) -> float:
        """The engine's time for the run: device time on a GPU, wall time on the CPU."""
        return self._out.run_seconds

    def predictions_npy(self) -> bytes:
        """The predictions as the bytes of an .npy file (what `revgraph run` writes)."""
        return self._out.predictions_npy()

    def to_dict(self) -> dict[str, Any]:
        """predictions, scores, state, metadata and run_seconds as a dict of plain values: the arrays
        the Result's own (read-only), the dicts the caller's own (changing them changes nothing
        here); metadata None for a run(metadata=False)."""
        # state and metadata are already new dicts each access (see those properties).
        return {"predictions": self.predictions, "scores": self.scores, "state": self.state,
                "metadata": self.metadata, "run_seconds": self.run_seconds}

    def __reduce__(self) -> tuple[Any, ...]:
        out = self._out
        kept = _Kept(self._predictions.copy(), self._scores.copy(), {k: a.copy() for k, a in self.state.items()},
                     out.metadata_json() if out.has_metadata else None, out.run_seconds, out.outputs_seconds,
                     out.predictions_npy(), out.divergence_warning())
        return (Result, (kept,))

    def __deepcopy__(self, memo: dict[int, Any]) -> Result:
        make, args = self.__reduce__()
        return make(*args)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return (f"<revgraph.Result: {self._predictions.shape[0]} predictions, "
                f"run {self.run_seconds * 1e3:.1f} ms>")


def _results(outs: Iterable[Any]) -> list[Result]:
    """Results of runs that just ended, a RuntimeWarning (at the line of the public function's
    caller: _results is always called from that function itself) for each that diverged."""
    results = []
    for out in outs:
        if warning := out.divergence_warning():
            warnings.warn(warning, RuntimeWarning, stacklevel=3)
        results.append(Result(out))
    return results


class Task:
    """A task prepared once: inputs checked and hashed, initial parameters and every epoch's
    permutation drawn, everything handed to the backend (uploaded and captured on a GPU).
    run() trains from the seed and predicts; every call gives the same bytes.

    Inputs: train_images float32 (N,1,9,9), train_labels int64 (N,), test_images float32
    (Q,1,9,9), all C-contiguous, aligned numpy arrays (another dtype, shape or order raises
    ValueError, never a cast; something that is not a numpy array TypeError). They are used in
    place, not copied: the task holds them, and CPU runs read them each time, so do not write to
    them while the task lives.
    Config keys: depth width alpha seed epochs learning_rate batch_size momentum weight_decay.
    emulate=True runs the GPU backend named by `backend` ("cuda", "cuda-fused") as its launch plan on
    the CPU (revgraph run --emulate): slowly, and for cuda-fused with the very bytes the device gives.
    """

    def __init__(self, train_images: npt.NDArray[np.float32], train_labels: npt.NDArray[np.int64],
                 test_images: npt.NDArray[np.float32], *, backend: str = "auto", emulate: bool = False,
                 **config: Any) -> None:
        for name, a in (("train_images", train_images), ("train_labels", train_labels), ("test_images", test_images)):
            if isinstance(a, np.ma.MaskedArray):  # the engine would read the masked values too
                raise TypeError(f"{name} is a masked array, whose mask would be ignored: pass a plain array "
                                "(np.ma.getdata(a), or a.filled(value))")
        self._task = _core.Task(train_images, train_labels, test_images, _str("backend", backend),
                                _config_kwargs(config), _bool("emulate", emulate))

    def run(self, *, metadata: bool = True) -> Result:
        """Reset from the seed, train every epoch, predict: a Result. The GIL is released meanwhile;
        Ctrl-C (called from the main thread) stops a CPU run at its next epoch.

        metadata=False skips docs/spec.md §7's hashes (Result.metadata is then None): for callers that
        run a task many times and only want the predictions, scores or state.
        """
        return _results([self._task.run(_bool("metadata", metadata))])[0]

    @property
    def preparation_seconds(self) -> float:
        """Seconds the task took to prepare, once, when it was made (input checks and hashes, the
        initialisation draws and permutations, allocation, upload, graph capture): RESULT.json's
        preparation_seconds, outside every run's time."""
        return self._task.preparation_seconds

    @property
    def backend(self) -> str:
        """The backend that runs it (its row of `revgraph.backends()`: "cpu", "cpu-reference", "cuda", "cuda-fused")."""
        return self._task.backend

    @property
    def device(self) -> str:
        """What it runs on, in RESULT.json's words: "cpu: <model> (1 thread, avx512)" for `cpu`, the
        GPU and its architecture for a CUDA backend, "CPU emulation of cuda-fused's launch plan
        (cpu: <model>)" for an emulated one."""
        return self._task.device

    @property
    def config(self) -> dict[str, Any]:
        """The nine config keys and their values, defaults included."""
        return self._task.config

    def __repr__(self) -> str:
        return (f"<revgraph.Task: {self._task.train_count} train / {self._task.test_count} query "
                f"on {self.backend} ({self.device})>")


def fit_predict(train_images: npt.NDArray[np.float32], train_labels: npt.NDArray[np.int64],
                test_images: npt.NDArray[np.float32], *, backend: str = "auto", emulate: bool = False,
                **config: Any) -> Result:
    """Prepare and run one task: Task(...).run()."""
    task = Task(train_images, train_labels, test_images, backend=backend, emulate=emulate, **config)
    return _results([task._task.run(True)])[0]


def run_together(tasks: Iterable[Task], *, threads: int = 0, metadata: bool = True) -> list[Result]:
    """Run every task at once (GPU tasks each on its own stream, CPU tasks on up to `threads`
    worker threads, 0: one per CPU this process may use); each Result is the bytes of that task's run().
    With configure_gpu(cluster_blocks=N), cuda-fused tasks of one launch shape (one depth, the
    width 82) train as N-block clusters of ONE launch, that launch's time each one's."""
    tasks = list(tasks)
    for t in tasks:
        if not isinstance(t, Task):
            raise TypeError(f"run_together: expected revgraph.Task items, got {type(t).__name__}")
    threads = _int("threads", threads)
    if threads < 0:
        raise ValueError(f"threads must be 0 (one per CPU this process may use) or more, got {threads}")
    # The engine starts at most one worker a task, so a larger count means as many as there are
    # tasks (and then fits the engine's unsigned).
    threads = min(threads, max(1, len(tasks)))
    return _results(_core.run_together([t._task for t in tasks], threads, _bool("metadata", metadata)))


def configure_gpu(*, device: Optional[int] = None, workspace_bytes: Optional[int] = None,
                  pdl: Optional[bool] = None, cluster_blocks: Optional[int] = None) -> dict[str, Any]:
    """The process's GPU options, as the command's --device, --workspace-bytes, --pdl/--no-pdl and
    --cluster-blocks: the CUDA device index, the cuBLASLt workspace of the `cuda` backend,
    Programmatic Dependent Launch for `cuda-fused` (on by default), and whether `cuda-fused` (width
    82) runs each epoch in one launch of a thread-block cluster of that many blocks (1..16, sm_90+;
    0, the default: two kernels a step; built to give the same bytes either way, unverified on a GPU;
    an emulated cuda-fused follows it too; while it is not 0, a cuda-fused task of another width is
    refused, RuntimeError). None leaves an option as it is; returns the options in force (and whether a GPU task has
    started). Set them before the first GPU task: afterwards only the options already
    in force are accepted (RuntimeError). A value of the wrong type raises TypeError, an
    out-of-range one ValueError (the engine's ranges, those of the command)."""
    # As decimal text: the engine checks the range of an int of any size.
    def text(name: str, value: Any) -> Optional[str]:
        return None if value is None else str(_int(name, value))

    return _core.configure_gpu(text("device", device), text("workspace_bytes", workspace_bytes),
                               None if pdl is None else _bool("pdl", pdl), text("cluster_blocks", cluster_blocks))


def backends() -> dict[str, Any]:
    """What `revgraph backends --json` prints: version, git_commit, and for each backend name
    `requested`, `gpu` (runs on a CUDA device: ask this, not the name), `usable`, `backend` and
    `device` or `reason`, `needs`; then `gpu_verified` (docs/results.md)."""
    return _core.backends()


# ----- the data: `revgraph data embedded|mnist` as arrays -----
def data_embedded(*, split_seed: int = 11) -> dict[str, npt.NDArray[Any]]:
    """`revgraph data embedded`: the embedded default task (10,000 real MNIST digits, 9x9, split by
    split_seed into 5,000 train and 5,000 held-out query images) as a dict of train_images float32
    (N,1,9,9), train_labels int64 (N,), test_images float32 (Q,1,9,9), test_labels int64 (Q,): the
    very arrays the command writes, ready for Task(...) or fit_predict(...)."""
    return _core.data_embedded(_int("split_seed", split_seed, 0, _UINT64_MAX))


def data_mnist(idx_dir: str | os.PathLike[str], *, seed: int) -> dict[str, Any]:
    """`revgraph data mnist`: the MNIST-medium draw for `seed` from the training IDX files in idx_dir
    (raw or .gz): 10,000 train / 10,000 query images resized to 9x9, the four arrays of
    data_embedded, plus official_mnist (whether the files are the official ones, by content; a
    draw of others is made all the same and must not be reported as MNIST's). RuntimeError where
    the files are missing or malformed."""
    return _core.data_mnist(_path("idx_dir", idx_dir), _int("seed", seed, 0, _UINT64_MAX))


# ----- qualify / verify (issue 24): engine/qualify over Python -----
def qualify(idx_dir: str | os.PathLike[str], *, submission: Optional[str | os.PathLike[str]] = None,
            draws: int = _core.PUBLISHED_DRAWS, first_seed: int = _core.PUBLISHED_FIRST_SEED,
            band: str = _core.PUBLISHED_BAND, backend: str = "auto", together: bool = False,
            progress: Optional[Callable[[str], Any]] = None, **config: Any) -> dict[str, Any]:
    """The qualification protocol of docs/spec.md §9 on the MNIST training IDX files in idx_dir, as
    `revgraph qualify`: returns its JSON report as a dict (passed, qualified, total_correct, ...).
    With submission="OUT/", also writes the verifiable submission folder (all or nothing, never into
    a non-empty folder). band is a decimal string ("12", "7.5"). TypeError for an argument of the
    wrong type (band not a str, draws or first_seed not an int); ValueError for a bad value (the
    band or draws outside the engine's ranges, a bad config or backend name); RuntimeError for what
    the run meets (missing IDX files, an existing folder). progress(line) is called with each of the
    command's progress lines (a draw trained, a draw scored); Ctrl-C is heard at the next line,
    between draws (with together=True, once all have trained), and stops the run before its
    submission folder is written, as an exception from progress does."""
    band = _band(band)
    draws = _int("draws", draws, 1, _core.MAX_DRAWS)  # the engine's range, said as the engine says it
    first_seed = _int("first_seed", first_seed, 0, _UINT64_MAX)
    return _core.qualify(_path("idx_dir", idx_dir), None if submission is None else _path("submission", submission),
                         band, first_seed, draws, _bool("together", together), _str("backend", backend),
                         _config_kwargs(config), _progress(progress))


def export(band: str, *, from_file: Optional[str | os.PathLike[str]] = None, **config: Any) -> str:
    """The one-file entry of the MNIST-medium time challenge for `band` ("12", "8", "5", "3", "2"),
    as `revgraph export` writes it: from_file's band (bench/race.json, bench/frontier/frontier.json),
    or the config keys given (rev88's defaults for the rest). ValueError, one line, where the band,
    the config or the file is not right, or where the file records the band as failed ("qualified":
    false, verify.passed false) or unreached: its entry would fail the leaderboard (docs/race.md)."""
    leaderboards = "\"12\" (a leaderboard: " + ", ".join(LEADERBOARD_BANDS) + ")"
    return _core.export_entry(_band(band, leaderboards), None if from_file is None else _path("from_file", from_file),
                              _config_kwargs(config))


# The group's leaderboards, in percent error ("12", ..., "2"): the bands a qualification is for (one
# at another band records "published_protocol": false) and the only ones `export` writes an entry for.
LEADERBOARD_BANDS: tuple[str, ...] = tuple(_core.leaderboard_bands())


def band_rule(band: str, total: int, per_draw: int) -> dict[str, int]:
    """The engine's exact band rule (docs/spec.md §9) for `total` query images over draws of
    `per_draw`: {"required_correct": ceil(total × (100 − band) / 100), "per_draw_floor": the same
    1.5 points below the band}. band is a decimal string ("12", "7.5"): TypeError for a band that is
    not a str (12, 7.5) or a total or per_draw that is not an int, as for every argument of the wrong
    type; ValueError for a str that is no band in 0..100 ("12%") or counts out of range (a draw of
    less than 1, a total of less than one draw)."""
    band = _band(band)
    return _core.band_numbers(band, _int("total", total, 0, _INT64_MAX), _int("per_draw", per_draw, 1, _INT64_MAX))


def band_verdict(band: str, correct: Sequence[int], per_draw: int | Sequence[int]) -> dict[str, Any]:
    """The engine's verdict at `band` (docs/spec.md §9) on draws with correct[i] right of per_draw
    query images each (or per_draw[i], a sequence as long as correct): {"passed", "total_correct",
    "total", "required_correct", "per_draw_floor", "meets_total", "meets_floor",
    "draws_below_floor" (1-based)}; passed is meets_total and meets_floor. Each draw is held to the
    floor of its own size; per_draw_floor is the largest draw's (draws of one size, as the protocol's
    are, share it: band_rule(band, total, n) gives another size's). The one rule qualify
    judges by. TypeError for arguments of the wrong type, as band_rule's; ValueError for a band
    that is not one, no draw, lengths that differ, a total below 1 or a count outside 0..total."""
    band = _band(band)
    many = lambda v: (isinstance(v, Sequence) and not isinstance(v, (str, bytes))  # noqa: E731
                      or isinstance(v, np.ndarray) and v.ndim > 0)
    if not many(correct):
        raise TypeError(f"correct must be a sequence of integers, got {correct!r}")
    counts = [_int(f"correct[{i}]", c, 0, _INT64_MAX) for i, c in enumerate(correct)]
    if many(per_draw):
        totals = [_int(f"per_draw[{i}]", t, 0, _INT64_MAX) for i, t in enumerate(per_draw)]
    else:
        totals = [_int("per_draw", per_draw, 0, _INT64_MAX)] * len(counts)
    return _core.band_verdict(band, counts, totals)


def verify(submission: str | os.PathLike[str], idx_dir: str | os.PathLike[str], *, retrain: bool = False,
           backend: Optional[str] = None, progress: Optional[Callable[[str], Any]] = None) -> dict[str, Any]:
    """`revgraph verify`: every claim of a submission folder re-derived from the IDX files in
    idx_dir. Returns {"holds": bool, "failures": ["FILE: KEY: ...", ...], "claims": n}; with
    retrain=True every draw is trained again (on `backend`, default the protocol's) and its
    predictions must be byte-equal. A backend without retrain is ValueError (it steers nothing).
    progress(line): as qualify's (the command's `revgraph: verify:` lines)."""
    return _core.verify(_path("submission", submission), _path("idx_dir", idx_dir), _bool("retrain", retrain),
                        None if backend is None else _str("backend", backend), _progress(progress))
