"""meson's tests run without meson: the test list made portable (tools/pack-gpu-deps and the
device build write it), and the `run-tests` subcommand the test steps call."""
import json
import os
import signal
import subprocess
import time

from .steps import ROOT


def portable_manifest(tests, build_dir, source_dir):
    """meson's test list (`meson introspect --tests`) with the build folder, the source folder and the
    Python interpreter as placeholders, so the tests run from a copy of the binaries elsewhere."""
    build_dir, source_dir = os.path.realpath(build_dir), os.path.realpath(source_dir)

    def portable(s, first=False):
        if first and os.path.basename(s).startswith("python"):
            return "@PYTHON@"  # the machine's own python3, the one with numpy
        if os.path.isabs(s):
            s = os.path.normpath(s)  # BUILD/../test/x.py is SOURCE/test/x.py
            for path, mark in ((build_dir, "@BUILD@"), (source_dir, "@SOURCE@")):
                if s == path or s.startswith(path + os.sep):
                    return mark + s[len(path):]
        return s

    return [{"name": t["name"], "suite": [x.split(":", 1)[-1] for x in t.get("suite", [])],
             "cmd": [portable(x, i == 0) for i, x in enumerate(t["cmd"])],
             "env": {k: portable(v) for k, v in (t.get("env") or {}).items()},
             "timeout": t.get("timeout") or 60} for t in tests]


def resolve(s, bindir, python):
    return s.replace("@BUILD@", bindir).replace("@SOURCE@", ROOT).replace("@PYTHON@", python)


def is_doctest(test):
    """Our doctest programs: the build's test/**/test_* executables (they take doctest's options)."""
    exe = test["cmd"][0] if test["cmd"] else ""
    return exe.startswith("@BUILD@/test/") and os.path.basename(exe).startswith("test_")


class StepStopped(Exception):
    """The step's limit: gpu-check sent SIGTERM to the step's process group."""


def run_tests(args):
    """Runs a manifest's tests (those in every --suite named and in no --exclude-suite) and writes
    meson's testlog.json lines: name, result, duration. A test running when the step's limit stops it
    is logged as STOPPED, so the report names it. Exit 0 where none failed, 77 where every one skipped
    (ran nothing), else 1. Every suite, not any: `--suite export --suite gpu` is the export test of the
    GPU suite, not also CI's export test (nvcc, NVRTC and the host device: minutes of a GPU call)."""
    with open(args.manifest) as f:
        tests = json.load(f)
    selected = [t for t in tests
                if set(args.suite) <= set(t["suite"]) and not set(t["suite"]) & set(args.exclude_suite)]

    def stopped(signum, frame):
        raise StepStopped()

    signal.signal(signal.SIGTERM, stopped)
    failed, results = 0, []
    with open(args.testlog, "w") as log:
        for t in selected:
            cmd = [resolve(x, args.bin, args.python) for x in t["cmd"]]
            if is_doctest(t):
                cmd += args.doctest_arg
            env = dict(os.environ, **{k: resolve(v, args.bin, args.python) for k, v in t["env"].items()})
            t0 = time.time()
            halt = False
            try:
                p = subprocess.run(cmd, cwd=args.bin, env=env, timeout=t["timeout"], stdin=subprocess.DEVNULL)
                result = {0: "OK", 77: "SKIP"}.get(p.returncode, "FAIL")
            except subprocess.TimeoutExpired:
                result = "TIMEOUT"
            except StepStopped:
                result, halt = "STOPPED", True
            except OSError as e:
                print(f"run-tests: {t['name']}: {e}", flush=True)
                result = "FAIL"
            failed += result not in ("OK", "SKIP")
            results.append(result)
            log.write(json.dumps({"name": t["name"], "result": result, "duration": time.time() - t0}) + "\n")
            log.flush()
            print(f"run-tests: {t['name']}: {result} ({time.time() - t0:.1f}s)", flush=True)
            if halt:
                return 1
    if not selected:
        print("run-tests: no test selected", flush=True)
        return 1
    if all(r == "SKIP" for r in results):  # nothing ran: never a pass (the GPU suite without a GPU)
        print("run-tests: every test skipped (exit 77)", flush=True)
        return 77
    return 1 if failed else 0
