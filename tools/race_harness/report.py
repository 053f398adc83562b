"""The race's JSON report and its one-line verdict; outputs written whole.

Why: a run's worth is in what can be checked afterwards: which draws (seed), which tree (git
commit), which machine and library versions, every call's count and time, and each rule's
arithmetic. The keys are listed in docs/race.md ("The report"). Every file is written to a
temporary beside its destination, fsynced, then renamed: all of it or none; and never over an
input of the run.
"""
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading

from . import HARNESS, PROTOCOL
from .errors import RaceError, UsageError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JUDGE_GPU = "A100"


def git_state(root=ROOT):
    """{"commit": HEAD or None, "dirty": tracked files changed (None unknown)}."""
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=60)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"commit": None, "dirty": None}
        status = git("status", "--porcelain", "--untracked-files=no")
        return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None}
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}


def environment(torch=None):
    import numpy
    env = {"python": platform.python_version(), "numpy": numpy.__version__,
           "torch": getattr(torch, "__version__", None), "platform": platform.platform(), "git": git_state(),
           "judge": {"gpu": JUDGE_GPU, "python": "3.13", "torch": "2.12", "numpy": "2.3"}}
    return env


def _same(a, b):
    """The same file: one inode where both exist, else the same path once links are resolved."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path, inputs):
    """Before any work: the output is not one of the inputs, and its folder exists."""
    check_outputs([path] if path is not None else [], inputs)


def check_outputs(paths, inputs, new_folder=None):
    """Before any work: no output is an input or another output of the run (the later one would
    replace it), and each one's folder exists, or is new_folder, which the command makes itself."""
    for k, path in enumerate(paths):
        if not path or path.endswith(os.sep):
            raise RaceError(f"{path!r}: an output is a file's path, not empty nor a folder's")
        for p in inputs:
            if p and _same(path, p):  # a usage mistake (exit 2), as the engine's commands take it
                raise UsageError(f"{path}: is an input of this run; the race never writes over an input")
        for other in paths[:k]:
            if _same(path, other):
                raise UsageError(f"{other}: this run would write it twice" + (f" (also as {path})" if path != other else "")
                                 + "; the second would replace the first")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder) and not (new_folder and os.path.abspath(new_folder) == folder):
            raise RaceError(f"{path}: the folder {folder} does not exist")
        if os.path.isdir(path):
            raise RaceError(f"{path}: is a folder")


def _temporary(path, writer, made):
    """writer(file object) into a temporary beside path (mode 0666 less the umask, as open() would
    make it), fsynced. Its name goes into `made` the moment it exists, signals held from mkstemp to
    there: a Ctrl-C landing between the two would leave a file no one knows to remove (CI saw one).
    The caller removes what `made` holds where anything fails."""
    folder = os.path.dirname(os.path.abspath(path))
    with _signals_held():
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
        made.append(tmp)
    with os.fdopen(fd, "wb") as f:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(f.fileno(), 0o666 & ~umask)
        writer(f)
        f.flush()
        os.fsync(f.fileno())


def _remove(tmp):
    if tmp is not None:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def write_with(path, writer):
    """writer(file object) into a temporary beside path, fsync, rename; nothing left where it fails."""
    write_all([(path, writer)])


HELD = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _signals_held():
    """Ctrl-C and SIGTERM noted, not acted on, inside; the first one noted is raised again on the way
    out. Handlers, not a signal mask: a mask is the calling thread's, and a signal sent to the
    process goes to any thread not masking it (numpy's BLAS threads), after which Python runs the
    handler in the main thread anyway. Handlers are the main thread's to set; elsewhere, nothing
    is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted = []
    before = {s: signal.signal(s, lambda signum, frame: noted.append(signum)) for s in HELD}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)  # None: a handler set outside Python
        if noted:
            signal.raise_signal(noted[0])  # its own handler now: Terminated, KeyboardInterrupt


def write_all(items):
    """[(path, writer)] as one: every file into its temporary first, then the renames, with Ctrl-C and
    SIGTERM held back until the last is done. A failure or a signal before the renames leaves every
    path as it was (the temporaries removed); after, every path is new. Files written one by one
    would leave, stopped half-way, a folder of two runs' files that reads as one."""
    tmps, renamed = [], 0
    try:
        for path, writer in items:
            _temporary(path, writer, tmps)
        with _signals_held():
            for tmp, (path, _) in zip(tmps, items):  # a rename that fails leaves the ones before it done
                os.replace(tmp, path)
                renamed += 1
    except BaseException:
        for tmp in tmps[renamed:]:
            _remove(tmp)
        raise


def write_bytes(path, data):
    write_with(path, lambda f: f.write(data))


def write_json(path, data):
    write_bytes(path, (json.dumps(data, indent=1) + "\n").encode())


def header(command):
    return {"protocol": PROTOCOL, "harness": HARNESS, "command": command, "argv": sys.argv[1:]}


# ---------------------------------------------------------------------------------- verdict line
def _band_part(band):
    head = f"band {band['band']} % — {band['total_correct']:,} / {band['total']:,}"
    if not band.get("available"):
        return f"{head} (no band rule: {band['why']})"
    total_ok = band["meets_total"]
    part = f"{head} ({'>=' if total_ok else '<'} {band['required_correct']:,})"
    floor = band["per_draw_floor"]
    if band["meets_floor"]:
        part += f", worst draw {band['worst_draw']:,} (>= {floor:,})"
    else:
        part += (f", worst draw {band['worst_draw']:,} (< {floor:,}: draw"
                 f"{'s' if len(band['draws_below_floor']) > 1 else ''} {', '.join(map(str, band['draws_below_floor']))})")
    return part


def _times_part(times, device_kind, device_name, timer):
    if times.get("passed") is None:
        return "no timed calls"
    where = "cuda" if device_kind == "cuda" else "cpu wall clock"
    part = (f"ranked mean {times['mean_ms']:.3f} ms over {times['calls']} calls ({where}, {device_name} — not the "
            f"judge's {JUDGE_GPU})")
    if times["consistent"]:
        part += ", consistency ok"
    else:
        part += (f", consistency FAILED (slowest {times['max_ms']:.3f} ms > 2 × median {times['median_ms']:.3f} + 2 = "
                 f"{times['consistency_limit_ms']:.3f} ms)")
    if times["calls_over_60s"]:
        part += f", {len(times['calls_over_60s'])} call(s) over 60 s"
    return part


def _holdout_part(holdout):
    if holdout["status"] == "skipped":
        return f"hold-out skipped ({holdout['why']})"
    sign = ">=" if holdout["passed"] else "<"
    return f"hold-out {holdout['status']} ({holdout['mean_percent']:.1f} % {sign} {holdout['percent_needed']} %)"


def overall(parts):
    """'PASS', 'FAIL' or 'NO VERDICT' from the rules' passed values (None: not judged)."""
    if any(p is False for p in parts):
        return "FAIL"
    if any(p is None for p in parts):
        return "NO VERDICT"
    return "PASS"


def sandbox_part(refused, said=""):
    """'; the sandbox refused N path(s), first: 'PATH'' where the entry was refused a path (the
    sandbox's refused list), else ''. A refusal alone fails nothing: the judge's sandbox only makes
    the open fail, and an entry may catch that and go on; but a verdict that hid it would pass an
    entry that looks for the digits on disk and would find them elsewhere. `said`: a line that already
    names the one path refused (the PermissionError an entry let through) is not told it twice."""
    paths = list(dict.fromkeys(r["path"] for r in refused))
    if not paths:
        return ""
    first = repr(paths[0][:200])  # repr: one line whatever the path holds
    if len(paths) == 1 and first in said:
        return ""
    return f"; the sandbox refused {len(paths)} path{'s' if len(paths) > 1 else ''}, first: {first}"


def run_verdict_line(word, band, times, holdout, device_kind, device_name, timer, refused=()):
    return (f"race: {word} {_band_part(band)}, {_times_part(times, device_kind, device_name, timer)}, "
            f"{_holdout_part(holdout)}{sandbox_part(refused)}")


def engine_verdict_line(word, band, backend, run_seconds, entry_predictions=True, entry_backend="cpu-reference"):
    mean = 1e3 * sum(run_seconds) / len(run_seconds) if run_seconds else 0.0
    line = (f"race: {word} {_band_part(band)}, time not a GPU call (engine {backend}: {mean:.1f} ms a draw on this "
            f"machine, for information), hold-out not run (engine predictions)")
    if not entry_predictions:
        line += f"; predictions of {backend}, not the GPU entry's ({entry_backend}'s are)"
    return line


EXIT = {"PASS": 0, "FAIL": 3, "NO VERDICT": 1}
