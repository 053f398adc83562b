"""An entry's calls, staged and timed the way the judge's harness does it.

Why each step is as it is (docs/race.md, "A call"):
  - the entry is compiled from the bytes the static rules read (never re-read from disk), into a
    fresh module, with the sandbox armed: what its import opens is checked like what its calls open;
  - three input tensors are allocated once on the device, and every call's draw is copied into those
    same objects (copy_), untimed: an entry may keep references, and must not rely on new objects;
  - one warm-up call on foreign data (untimed) comes first: compilation, autotuning and allocation
    happen there, and an entry that memorised the ranked draws learns nothing from it;
  - before each timed call: synchronize, write 256 MB (the L2 flush: a byte tensor filled), synchronize;
    then the call between two CUDA events (GPU) or two perf_counter reads (CPU), then synchronize;
  - the output is checked after the second event (untimed): a plain torch.Tensor on the inputs'
    device, shape (10000,), an integer dtype of the protocol, values 0..9; anything else stops the run
    with one line naming the call (InvalidOutput: the entry fails, as the judge fails it).
"""
import linecache
import os
import platform
import sys
import threading
import time
import traceback
import types

from .errors import RaceError
from . import verdict
from .sandbox import SANDBOX

FLUSH_BYTES = 256 << 20
OUTPUT_DTYPES = ("int64", "int32", "int16", "uint8", "int8")
ENTRY_MODULE = "race_entry"


class InvalidOutput(RaceError):
    """A call returned what the protocol does not take (type, device, shape, dtype, values): the
    entry fails by the judge's rules, a verdict (FAIL, exit 3), not an error of the harness. An
    exception raised by the entry stays an error: here it may be this machine's (a module missing,
    another torch), not the entry's."""
    status = 3


# What an exported entry imports beside torch (`from cuda.bindings import driver, nvrtc`): a machine
# with CUDA torch but without cuda-python fails its import, and the bare ModuleNotFoundError does not
# say which package holds the module `cuda` (pip's cuda-python; the judge's image has its 13).
CUDA_PYTHON_HINT = ("the entry needs cuda-python 13 (`cuda.bindings`, pip install 'cuda-python>=13') beside a "
                    "CUDA build of torch")
# Where torch sees no GPU, cuda-python would not help: the entry is for a GPU machine.
NO_GPU_HINT = ("the entry is for a machine with a CUDA GPU and cuda-python 13; here, `tools/race engine` races "
               "its config's very predictions computed on the CPU (docs/race.md)")


def describe_exception(e, path):
    """'TypeError: message (entry.py line 12)': one line, at the entry's last frame where it has one."""
    frames = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == path]
    text = str(e).strip().splitlines()
    at = f" ({os.path.basename(path)} line {frames[-1]})" if frames else ""
    hint = ""
    if isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] == "cuda":
        torch = sys.modules.get("torch")
        gpu = torch is not None and hasattr(torch, "cuda") and torch.cuda.is_available()
        hint = f"; {CUDA_PYTHON_HINT if gpu else NO_GPU_HINT}"
    return f"{type(e).__name__}{': ' + text[0][:300] if text else ''}{at}{hint}"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class Device:
    """Where the inputs live, how a call is timed, and the L2 flush's buffer."""

    def __init__(self, torch, kind):
        self.torch, self.kind = torch, kind
        if kind == "cuda":
            if not torch.cuda.is_available():
                raise RaceError(f"--device cuda: torch {torch.__version__} here sees no CUDA device "
                                f"(run with a CUDA build of torch, e.g. `python3 tools/race ...`, or --device cpu)")
            index = torch.cuda.current_device()
            self.device = torch.device("cuda", index)
            self.name = torch.cuda.get_device_name(index)
            self.timer = "cuda-events"
        else:
            self.device = torch.device("cpu")
            self.name = cpu_name()
            self.timer = "wall-clock (time.perf_counter)"
        self.flush_buffer = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=self.device)
        self.flushes = 0

    def synchronize(self):
        if self.kind == "cuda":
            self.torch.cuda.synchronize()

    def flush(self, k):
        """Write 256 MB: on a GPU this evicts the L2 (40 MB on an A100, 60 MB on an H200); on the CPU
        the last-level cache."""
        self.flush_buffer.fill_(k & 0xFF)

    def timed(self, fn, data):
        """(output, milliseconds) of fn(data), after synchronize, flush, synchronize."""
        self.synchronize()
        self.flushes += 1
        self.flush(self.flushes)
        self.synchronize()
        if self.kind == "cuda":
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            out = fn(data)
            end.record()
            self.torch.cuda.synchronize()
            return out, float(start.elapsed_time(end))
        t0 = time.perf_counter()
        out = fn(data)
        return out, (time.perf_counter() - t0) * 1e3


# A timed call still running this long past the judge's limit (verdict.CALL_LIMIT_MS: any call over
# 60 s fails) is not waited for: a call that never returns would hang the run. The warm-up has no
# limit (compiling there is its purpose, and the protocol times it not at all).
WATCHDOG_GRACE_S = 5.0


class Watchdog:
    """Around one timed call: past the limit and the grace, on_overrun(why) runs on the watchdog's
    thread (and ends the process: the call itself cannot be stopped from another thread)."""

    def __init__(self, on_overrun):
        self.on_overrun, self.timer = on_overrun, None
        self.lock, self.fired, self.disarmed = threading.Lock(), False, False

    def arm(self, label):
        if self.on_overrun is None:
            return
        seconds = verdict.CALL_LIMIT_MS / 1e3 + WATCHDOG_GRACE_S

        def fire():
            with self.lock:  # the call returned as the time ran out: it is judged as any other
                if self.disarmed:
                    return
                self.fired = True
            SANDBOX.armed = False  # the report may be written where a forbidden word is
            self.on_overrun(f"{label}: custom_kernel still running {seconds:g} s after it was called (the judge "
                            f"fails any call over {verdict.CALL_LIMIT_MS / 1e3:g} s); stopped")

        self.timer = threading.Timer(seconds, fire)
        self.timer.daemon = True
        self.timer.start()

    def disarm(self):
        if self.timer is not None:
            self.timer.cancel()
            with self.lock:
                self.disarmed = True
                fired = self.fired
            if fired:  # it fired before the call returned: it is ending the process
                threading.Event().wait()


class Stage:
    """The three input tensors, allocated once; stage(draw) copies a draw into them in place."""

    def __init__(self, torch, device, per_draw):
        self.torch, self.device = torch, device
        self.train_x = torch.empty((per_draw, 1, 9, 9), dtype=torch.float32, device=device)
        self.train_y = torch.empty((per_draw,), dtype=torch.int64, device=device)
        self.test_x = torch.empty((per_draw, 1, 9, 9), dtype=torch.float32, device=device)
        self.data = (self.train_x, self.train_y, self.test_x)
        self.ids = tuple(id(t) for t in self.data)

    def stage(self, draw):
        for tensor, array in zip(self.data, (draw.train_x, draw.train_y, draw.test_x)):
            tensor.copy_(self.torch.from_numpy(array))


def validate(torch, out, device, per_draw):
    """'' for a valid output, else why not (one line)."""
    if type(out) is not torch.Tensor:
        return f"returned a {type(out).__module__}.{type(out).__name__}, not a plain torch.Tensor"
    if out.device != device:
        return f"returned a tensor on {out.device}, not on the inputs' device {device}"
    if tuple(out.shape) != (per_draw,):
        return f"returned shape {tuple(out.shape)}, not ({per_draw},)"
    name = str(out.dtype).replace("torch.", "")
    if name not in OUTPUT_DTYPES:
        return f"returned dtype {name}, not one of {', '.join(OUTPUT_DTYPES)}"
    low, high = int(out.min()), int(out.max())
    if low < 0 or high > 9:
        return f"returned values in {low}..{high}, not in 0..9"
    return ""


def import_entry(path, source):
    """The entry as a fresh module, compiled from `source` (the bytes the rules read); sandbox armed
    by the caller. RaceError with one line where its import raises."""
    module = types.ModuleType(ENTRY_MODULE)
    module.__file__ = path
    # Its lines for tracebacks, warnings and inspect (triton.jit reads its functions' source) come
    # from the bytes the rules read, not from a second read of a file that may have changed since.
    text = source.decode("utf-8")
    linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
    sys.modules[ENTRY_MODULE] = module  # dataclasses, pickling and torch.compile look modules up
    try:
        exec(compile(source, path, "exec"), module.__dict__)
    except Exception as e:  # noqa: BLE001 — whatever the entry raises is its failure, in one line
        raise RaceError(f"importing {path} failed: {describe_exception(e, path)}") from None
    except SystemExit as e:
        raise RaceError(f"importing {path} failed: it called exit ({e.code})") from None
    fn = getattr(module, "custom_kernel", None)
    if not callable(fn):
        raise RaceError(f"{path} defines no callable custom_kernel")
    return fn


class Progress:
    """What the run has done so far (the report's calls), kept when a call stops the run."""

    def __init__(self):
        self.calls = []
        self.device = None


def call_label(record):
    if record["kind"] == "warmup":
        return "the warm-up call"
    return f"call {record['position']} ({record['kind']} draw {record['draw']})"


def run_entry(torch, path, source, warmup, timed_draws, device_kind, progress, per_draw=10000, on_overrun=None):
    """Import the entry and make its calls: the warm-up, then each of timed_draws (ranked and hold-out
    Draws in call order). Appends one record a call to progress.calls; InvalidOutput where a call
    returns what the protocol does not take, RaceError where the import or a call fails;
    on_overrun(why) where a timed call runs past the limit (Watchdog)."""
    dev = Device(torch, device_kind)
    progress.device = dev
    stage = Stage(torch, dev.device, per_draw)
    dev.synchronize()
    SANDBOX.install()
    SANDBOX.exempt = {os.path.abspath(path)}
    SANDBOX.armed = True
    try:
        fn = import_entry(path, source)
        for position, draw in enumerate([warmup] + list(timed_draws)):
            record = {"position": position, "kind": draw.kind, "draw": draw.index, "data": draw.data}
            stage.stage(draw)
            if tuple(id(t) for t in stage.data) != stage.ids:
                raise RaceError("internal: the staged tensors changed identity")
            watchdog = Watchdog(on_overrun if draw.kind != "warmup" else None)
            watchdog.arm(call_label(record))
            try:
                out, ms = dev.timed(fn, stage.data)
            except Exception as e:  # noqa: BLE001
                raise RaceError(f"{call_label(record)}: custom_kernel raised {describe_exception(e, path)}") from None
            except SystemExit as e:
                raise RaceError(f"{call_label(record)}: custom_kernel called exit ({e.code})") from None
            finally:
                watchdog.disarm()
            why = validate(torch, out, dev.device, per_draw)
            if why:
                record["error"] = why
                progress.calls.append(record)
                raise InvalidOutput(f"{call_label(record)}: custom_kernel {why}")
            predictions = out.to(torch.int64).cpu().numpy()
            record.update(correct=int((predictions == draw.test_y).sum()), ms=ms, timed=draw.kind != "warmup",
                          dtype=str(out.dtype).replace("torch.", ""))
            progress.calls.append(record)
    finally:
        SANDBOX.armed = False
    return progress.calls
