"""python -m revgraph learn|score: the MNIST-medium harness's way in.

learn reads only train_images, train_labels and test_images from the harness's archive (np.load
is lazy: the other members, test_labels and the index arrays among them, are never read), trains
and writes int64 predictions; score reads the predictions and the archive's test_labels and says
whether the error is within the band, in exact integer arithmetic.

Errors are one line `revgraph: error: ...` on stderr: exit 1 for bad data or config, 2 for usage.
score exits 0 within the band and 3 outside it. Nothing is written unless everything is.
"""
import argparse
import fractions
import math
import os
import sys
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


def _parser():
    p = _Parser(prog="python -m revgraph", description="revgraph for the MNIST-medium harness.")
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
    score.add_argument("--predictions", required=True, help="int predictions (.npy)")
    score.add_argument("--error-target", default="12", help="the band: at most this error, in percent (default 12)")
    return p


def _open_archive(path):
    try:
        archive = np.load(path, allow_pickle=False)
    except OSError as e:
        raise Failure(f"cannot read {path}: {e.strerror or e}")
    except (ValueError, zipfile.BadZipFile, EOFError) as e:
        raise Failure(f"{path}: not an .npz archive ({e})")
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


def _same_file(a, b):
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _check_outputs(outputs, inputs):
    """Before any work: outputs distinct from each other and from every input, and writable."""
    for i, (what, path) in enumerate(outputs):
        for other_what, other in outputs[:i]:
            if _same_file(path, other):
                raise Failure(f"{other_what} {other} and {what} {path} are the same file", 2)
        for in_what, in_path in inputs:
            if in_path is not None and _same_file(path, in_path):
                raise Failure(f"{what} {path} is the input {in_what} {in_path}: an output never replaces an input", 2)
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise Failure(f"cannot write {path}: directory {parent} does not exist")
        if not os.access(parent, os.W_OK):
            raise Failure(f"cannot write {path}: directory {parent} is not writable")
        if os.path.isdir(path):
            raise Failure(f"cannot write {path}: it is a directory")


def learn(args):
    outputs = [("--predictions", args.predictions)]
    if args.metadata:
        outputs.append(("--metadata", args.metadata))
    _check_outputs(outputs, [("--data", args.data), ("--config", args.config)])
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
              f"{config['epochs']} epochs, batch {config['batch_size']} on {task.backend} ({task.device}); "
              f"prepared in {task.preparation_seconds * 1e3:.1f} ms", file=sys.stderr)
    try:
        result = task.run()
    except RuntimeError as e:
        raise Failure(str(e))

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


def _error_target(text):
    try:
        target = fractions.Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise Failure(f"--error-target must be a number of percent, got '{text}'", 2)
    if not 0 <= target <= 100:
        raise Failure(f"--error-target must be in 0..100, got '{text}'", 2)
    return target


def _percent(numerator, denominator, round_up=False):
    """numerator/denominator in percent with two decimals, rounded in the direction asked."""
    hundredths = -((-numerator * 10000) // denominator) if round_up else (numerator * 10000) // denominator
    return f"{hundredths // 100}.{hundredths % 100:02d}%"


def score(args):
    target = _error_target(args.error_target)
    with _open_archive(args.data) as archive:
        labels = _member(archive, args.data, "test_labels")
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise Failure(f"{args.data}: test_labels must be integer (Q,), got {labels.dtype.str} {labels.shape}")
    try:
        predictions = np.load(args.predictions, allow_pickle=False)
    except OSError as e:
        raise Failure(f"cannot read {args.predictions}: {e.strerror or e}")
    except ValueError as e:
        raise Failure(f"{args.predictions}: not an .npy array ({e})")
    if not isinstance(predictions, np.ndarray) or predictions.dtype.kind not in "iu" or predictions.ndim != 1:
        what = f"{predictions.dtype.str} {predictions.shape}" if isinstance(predictions, np.ndarray) else "an archive"
        raise Failure(f"{args.predictions}: predictions must be integer (Q,), got {what}")
    if predictions.shape[0] != labels.shape[0]:
        raise Failure(f"{args.predictions}: {predictions.shape[0]} predictions for {labels.shape[0]} test labels")
    if labels.shape[0] == 0:
        raise Failure(f"{args.data}: test_labels is empty")
    outside = np.flatnonzero((predictions < 0) | (predictions > 9))
    if outside.size:
        i = int(outside[0])
        raise Failure(f"{args.predictions}: prediction {int(predictions[i])} at index {i} is outside 0..9")

    total = int(labels.shape[0])
    correct = int(np.count_nonzero(predictions == labels))
    # required = ceil(total * (100 - target) / 100), exactly: Fractions, then an integer ceiling.
    required = math.ceil(fractions.Fraction(total) * (100 - target) / 100)
    within = correct >= required
    target_text = str(target.numerator) if target.denominator == 1 else args.error_target.strip()
    # Accuracy rounded down and error rounded up: the two decimals never flatter the result.
    print(f"accuracy {_percent(correct, total)} ({correct}/{total} correct), "
          f"error {_percent(total - correct, total, round_up=True)}")
    if within:
        print(f"band: error at most {target_text}% needs {required}/{total} correct: within the band")
    else:
        print(f"band: error at most {target_text}% needs {required}/{total} correct: outside the band "
              f"({required - correct} short)")
    return 0 if within else 3


def main(argv):
    try:
        args = _parser().parse_args(argv)
        return learn(args) if args.command == "learn" else score(args)
    except Failure as e:
        print("revgraph: error: " + " ".join(str(e).splitlines()), file=sys.stderr)
        return e.status
    except MemoryError:
        print("revgraph: error: out of memory", file=sys.stderr)
        return 1
