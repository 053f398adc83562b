"""python3 -m revgraph learn|score: the MNIST-medium harness's way in.

learn reads only train_images, train_labels and test_images from the harness's archive (np.load
is lazy: the other members, test_labels and the index arrays among them, are never read), trains
and writes int64 predictions (.npy); score reads the predictions (.npy, or .npz with one array)
and the archive's test_labels and prints, as the group's evaluator does, one JSON object:
accuracy, correct, total, confusion_matrix (rows = true class), per_class_accuracy,
required_correct (the engine's exact band rule), meets_accuracy_target, error_rate_percent.

Errors are one line `revgraph: error: ...` on stderr: exit 1 for bad data or config, 2 for usage.
A valid score is exit 0 whether or not it meets the band (`--fail-below`: exit 3 below it, as
`revgraph qualify`). Nothing is written unless everything is. A reader that closes standard output
early (`| head -1`) ends the command quietly with status 141, as a closed pipe ends the `revgraph`
command (SIGPIPE): no traceback, and a cut-short output is never exit 0. Ctrl-C (SIGINT) ends it
as it ends the command: killed by SIGINT (a shell's 130), no traceback, nothing written.
"""
import argparse
import json
import os
import sys
import warnings
import zipfile

import numpy as np

from . import _api, _core

LEARN_INPUTS = ("train_images", "train_labels", "test_images")


class Failure(Exception):
    """A one-line error for the user; exit status 1 (bad data/config) or 2 (usage)."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own mistakes, in the CLI's one-line form
        raise Failure(message, 2)


def _leftovers(command, words):
    """What argparse left over, as a usage mistake; for learn, "--epochs 2" (as the command, which
    takes --set) names the config key meant, in the command's words."""
    name = words[0].split("=", 1)[0]
    key = name[2:].replace("-", "_") if name.startswith("--") else ""
    if command == "learn" and key in _core.CONFIG_KEYS:
        value = (words[0].split("=", 1)[1] if "=" in words[0]
                 else words[1] if len(words) > 1 and not words[1].startswith("--") else "VALUE")
        return Failure(f"{name} is a config key: use --set {key}={value}", 2)
    return Failure("unrecognized arguments: " + " ".join(words), 2)


def _parser():
    p = _Parser(prog="python3 -m revgraph", description="revgraph for the MNIST-medium harness.")
    p.add_argument("--version", action="version", version=f"revgraph {_core.version()} ({_core.git_commit()})")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    learn = sub.add_parser("learn", help="train on the archive's train set and predict its test images")
    learn.add_argument("--data", required=True, help="the harness's medium.npz")
    learn.add_argument("--predictions", required=True, help="where to write int64 (Q,) predictions (.npy)")
    learn.add_argument("--config", help="a JSON object of config keys")
    learn.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="one config key (repeatable)")
    learn.add_argument("--backend", default="auto", help=_core.backend_name_list())
    learn.add_argument("--metadata", help="where to write RESULT.json's metadata for this run")
    learn.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    score = sub.add_parser("score", help="accuracy of predictions against the archive's test_labels")
    score.add_argument("--data", required=True, help="the harness's medium.npz")
    score.add_argument("--predictions", required=True, help="int predictions (.npy, or .npz holding one array)")
    score.add_argument("--error-target", default=_core.PUBLISHED_BAND,
                       help=f"the band: at most this error, a decimal number of percent (default {_core.PUBLISHED_BAND})")
    score.add_argument("--fail-below", action="store_true", help="exit 3 when the band is not met (for scripts)")
    return p


_NUMPY_SIGNATURES = (b"\x93NUMPY", b"PK\x03\x04", b"PK\x05\x06")  # .npy; a zip (.npz), empty or not


def _np_load(path, kind):
    """np.load without pickles; an unreadable or malformed file is one Failure line naming `kind`.
    A file that is neither .npy nor zip (a text file, say) is named as such before np.load would
    take it for a pickle and speak of "pickled data"."""
    try:
        with open(path, "rb") as f:
            head = f.read(6)
        if not head.startswith(_NUMPY_SIGNATURES):
            raise Failure(f"{path}: not an {kind}: it is no numpy file (neither a .npy header nor a zip archive)")
        return np.load(path, allow_pickle=False)
    except OSError as e:
        raise Failure(f"cannot read {path}: {e.strerror or e}")
    except (ValueError, zipfile.BadZipFile, EOFError) as e:
        raise Failure(f"{path}: not an {kind} ({e})")


def _open_archive(path):
    archive = _np_load(path, ".npz archive")
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise Failure(f"{path}: not an .npz archive (it holds a single array)")
    return archive


def _member(archive, path, name):
    """One array of the archive, read on its own (NpzFile reads a member only when asked)."""
    if name not in archive.files:
        raise Failure(f"{path}: missing array '{name}'")
    try:
        return archive[name]
    except Exception as e:  # a corrupt member: zlib, zipfile, or numpy's format errors
        raise Failure(f"{path}: cannot read array '{name}': {e}")


def learn(args):
    if not args.predictions.endswith(".npy"):
        raise Failure(f"--predictions {args.predictions}: the predictions file's name must end in .npy", 2)
    outputs = [("--predictions", args.predictions)]
    if args.metadata:
        outputs.append(("--metadata", args.metadata))
    # The command's check (engine/io/file_identity.hpp), before any work: no output is an input or
    # another output, and each can be written.
    try:
        _core.require_outputs(outputs, [(what, path) for what, path in (("--data", args.data), ("--config", args.config))
                                        if path is not None])
    except _core.SameFileError as e:
        raise Failure(str(e), 2)
    except RuntimeError as e:
        raise Failure(str(e))
    try:
        config = _core.config_from(args.config, args.set)
    except _core.SetSyntaxError as e:  # a usage mistake, exit 2 as the command's
        raise Failure(str(e), 2)
    except ValueError as e:
        raise Failure(str(e))

    with _open_archive(args.data) as archive:
        arrays = [_member(archive, args.data, name) for name in LEARN_INPUTS]
    try:
        task = _api.Task(*arrays, backend=args.backend, **config)
    except ValueError as e:
        message = str(e)
        # Input problems name the archive, as `revgraph run --input` does.
        raise Failure(f"{args.data}: {message}" if message.startswith("input:") else message)
    except RuntimeError as e:
        raise Failure(str(e))
    if not args.quiet:
        print(f"revgraph: {arrays[1].shape[0]} train / {arrays[2].shape[0]} query, depth {config['depth']}, "
              f"width {config['width']}, {config['epochs']} epochs, batch {config['batch_size']} on {task.backend} "
              f"({task.device}); "
              f"prepared in {task.preparation_seconds * 1e3:.1f} ms", file=sys.stderr)
    try:
        # A run that diverged says so as `revgraph run` does: one line, also with --quiet.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            result = task.run()
    except RuntimeError as e:
        raise Failure(str(e))
    for w in caught:
        print(f"revgraph: warning: {w.message}", file=sys.stderr)

    files = [(args.predictions, result.predictions_npy())]
    if args.metadata:
        import json

        metadata = dict(result.metadata)
        metadata["input"] = args.data
        metadata["predictions_file"] = os.path.basename(args.predictions)
        files.append((args.metadata, (json.dumps(metadata, indent=2) + "\n").encode()))
    try:
        _core.write_files_atomic(files)
    except RuntimeError as e:
        raise Failure(str(e))
    if not args.quiet:
        print(f"revgraph: run {result.run_seconds * 1e3:.1f} ms; wrote {args.predictions}", file=sys.stderr)
    return 0


def _required_correct(total, target):
    """The engine's exact band rule (engine/qualify/band.hpp): ceil(total * (100 - target) / 100)."""
    try:
        return _core.required_correct(total, target, "--error-target")
    except ValueError as e:
        raise Failure(str(e), 2)


def _check_predictions_name(path):
    if not path.endswith((".npy", ".npz")):
        raise Failure(f"{path}: predictions must be a .npy or .npz file", 2)


def _load_predictions(path):
    loaded = _np_load(path, ".npy/.npz file")
    if isinstance(loaded, np.lib.npyio.NpzFile):
        with loaded:
            names = loaded.files
            if len(names) != 1:
                raise Failure(f"{path}: an .npz of predictions must hold exactly one array, it holds {len(names)}")
            return _member(loaded, path, names[0])
    return loaded


def score(args):
    # The command line's mistakes (exit 2) before any file is read, as the command's.
    _check_predictions_name(args.predictions)
    _required_correct(1, args.error_target.strip())
    with _open_archive(args.data) as archive:
        labels = _member(archive, args.data, "test_labels")
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise Failure(f"{args.data}: test_labels must be integer (Q,), got {labels.dtype.str} {labels.shape}")
    if labels.shape[0] == 0:
        raise Failure(f"{args.data}: test_labels is empty")
    required = _required_correct(int(labels.shape[0]), args.error_target.strip())
    predictions = _load_predictions(args.predictions)
    if not isinstance(predictions, np.ndarray) or predictions.dtype.kind not in "iu" or predictions.ndim != 1:
        raise Failure(f"{args.predictions}: predictions must be integer (Q,), got {predictions.dtype.str} "
                      f"{predictions.shape}")
    if predictions.shape[0] != labels.shape[0]:
        raise Failure(f"{args.predictions}: {predictions.shape[0]} predictions for {labels.shape[0]} test labels")
    for what, a, path in (("prediction", predictions, args.predictions), ("test label", labels, args.data)):
        outside = np.flatnonzero((a < 0) | (a > 9))
        if outside.size:
            i = int(outside[0])
            raise Failure(f"{path}: {what} {int(a[i])} at index {i} is outside 0..9")

    total = int(labels.shape[0])
    correct = int(np.count_nonzero(predictions == labels))
    confusion = np.zeros((10, 10), dtype=np.int64)  # rows: the true class, columns: the prediction
    np.add.at(confusion, (labels.astype(np.int64), predictions.astype(np.int64)), 1)
    per_class = [None if row.sum() == 0 else float(row[k]) / float(row.sum()) for k, row in enumerate(confusion)]
    meets = correct >= required
    result = {
        "accuracy": correct / total,
        "correct": correct,
        "total": total,
        "error_rate_percent": 100.0 * (total - correct) / total,
        "error_target_percent": args.error_target.strip(),
        "required_correct": required,
        "meets_accuracy_target": meets,
        "confusion_matrix": confusion.tolist(),
        "per_class_accuracy": per_class,
    }
    print(json.dumps(result, indent=2))
    print(f"revgraph: score: {correct}/{total} correct; error at most {args.error_target.strip()}% needs {required}: "
          + ("met" if meets else f"NOT met ({required - correct} short)"), file=sys.stderr)
    return 3 if args.fail_below and not meets else 0


def main(argv):
    try:
        try:
            return _main(argv)
        finally:  # argparse's --help exits through here too: its text is flushed while we can catch
            sys.stdout.flush()
    except BrokenPipeError:
        # The reader has gone (`| head -1`): nothing more to say to it, and no traceback. stdout
        # points at /dev/null so the interpreter's own last flush at exit fails no more; 141 is
        # 128 + SIGPIPE, what a shell reports for the `revgraph` command in the same place.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        # Ctrl-C (during a run the engine hears it at its next epoch): end as the `revgraph` command
        # ends, killed by SIGINT (a shell's 130), with no traceback. Dying by the signal itself, not
        # exit(130), tells a calling shell or script that the user interrupted (bash then stops a
        # loop that ran us). Nothing is half-written: learn writes its outputs together, atomically,
        # only after the run.
        _die_by_sigint()
        return 130  # only where the signal cannot end the process


def _die_by_sigint():
    """Restores SIGINT's default action and raises it at this process: the end of an interrupted
    program (a Python handler would only turn it into KeyboardInterrupt again)."""
    import signal

    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


def _main(argv):
    try:
        args, rest = _parser().parse_known_args(argv)
        if rest:
            raise _leftovers(args.command, rest)
        for option in ("data", "predictions", "config", "backend", "metadata", "error_target"):
            if getattr(args, option, None) == "":  # an unset variable's "--backend $B": a mistake, as the command's
                raise Failure(f"option --{option.replace('_', '-')}: an empty value", 2)
        return learn(args) if args.command == "learn" else score(args)
    except Failure as e:
        print("revgraph: error: " + " ".join(str(e).splitlines()), file=sys.stderr)
        return e.status
    except MemoryError:
        print("revgraph: error: out of memory", file=sys.stderr)
        return 1
