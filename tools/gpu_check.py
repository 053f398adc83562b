#!/usr/bin/env python3
"""gpu-check: the GPU evidence of this tree in one short run on a lent GPU machine.

  tools/gpu-check [OUT_DIR]              the main run (fits a 540 s device call; README says how)
  tools/gpu-check --follow-up [OUT_DIR]  what did not fit: torch energy, PDL, torch eager, benchmarks,
                                         throughput, ncu, the CPU suites
  tools/gpu-check --plan [--follow-up]   print the steps, their limits and groups; run nothing

Steps run in the order of what the report needs, each under a time limit, and the limits of the
main run add up to less than its budget, so every step gets its whole limit (test/tools checks
that): the binaries (prebuilt here by tools/pack-gpu-deps where their sources are this tree's,
else built on the device) -> the GPU test suite -> GPU validation of both backends -> the same
rev88 task in two fresh processes per backend -> `revgraph validate` -> the PyTorch CUDA-graph
baseline -> the kernel lab (the fused step's launch shapes) -> energy -> compute-sanitizer. OUT_DIR/report.json is written after the
binaries and after every step (complete: false), so a run stopped anywhere brings back
all it had; the last one is complete. Beside it: gpu-check.log and artifacts.tar.gz (the tools'
own files): three files, as the device tool returns at most eight.

The commit: git's HEAD where .git exists, else $GIT_COMMIT, else the one tools/pack-gpu-deps
recorded in .gpudeps/COMMIT, which counts only where every tracked file still has the content it
had then (.gpudeps/sources.sha256). Knobs: GPU_CHECK_BUDGET (seconds for the steps; default the
call's 540 s less 25 s for the report), GPU_CHECK_REPLAYS (100), GPU_CHECK_ARCH (build on the device
for these architectures, default the GPU's), GPU_CHECK_BUILD (build folder, build-gpucheck),
GPU_CHECK_PREBUILT=0 (build on the device even where prebuilt binaries fit).
Needs Python 3.8+ and nothing else but what the steps run (numpy, torch for the baselines).
"""
import argparse
import dataclasses
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gpu_check_report  # noqa: E402  (the report, a module of its own, tested on made-up runs)

CALL_SECONDS = 540  # the device call's timeout_s
RESERVE_SECONDS = 25  # start-up, the last report and the archive
FOLLOW_UP_SECONDS = 200  # the follow-up's steps: a call of 240 s, while the machine is still warm
GROUPS = ("binaries", "gpu-suite", "gpu-validation", "two-process", "validate", "timing", "kernel-lab", "energy",
          "sanitizer", "rest")
SANITIZERS = (("memcheck", "cuda-fused", 30), ("racecheck", "cuda-fused", 35), ("initcheck", "cuda-fused", 25),
              ("memcheck", "cuda", 30))


@dataclasses.dataclass
class Step:
    name: str
    limit: int  # seconds
    group: str
    cmd: list
    required: bool = False  # the report fails where it does not exit 0
    ours: bool = True  # one of our binaries: gets the library path of the packed runtime
    env: dict = None


class Context:
    """Paths of one gpu-check run and where its binaries are."""

    def __init__(self, out, scratch, replays, python):
        self.out, self.scratch, self.replays, self.python = out, scratch, replays, python
        self.art = os.path.join(scratch, "artifacts")
        self.bindir = None  # a build folder or .gpudeps/prebuilt: tools/revgraph, test/cuda/... inside
        self.manifest = None  # the tests to run (tools/pack-gpu-deps' tests.json, or made from the build)
        self.ld_path = ""  # for our binaries only (PyTorch keeps its own CUDA libraries)

    def bin(self, rel):
        return os.path.join(self.bindir or os.path.join(ROOT, "build-gpucheck"), rel)

    def s(self, name):
        return os.path.join(self.scratch, name)

    def a(self, name):
        return os.path.join(self.art, name)


def run_cmd(c, name, backend, *extra):
    return [c.bin("tools/revgraph"), "run", "--backend", backend, "--input", c.s("rev88.npz"), "--output",
            c.s(name), "--quiet", *extra]


def tests_step(c, name, limit, group, suites, exclude, log, required, doctest_args=()):
    cmd = [c.python, os.path.abspath(__file__), "run-tests", "--manifest", c.manifest or "", "--bin", c.bindir or "",
           "--python", c.python, "--testlog", c.s(log)]
    cmd += [x for s in suites for x in ("--suite", s)] + [x for s in exclude for x in ("--exclude-suite", s)]
    cmd += [f"--doctest-arg={a}" for a in doctest_args]
    return Step(name, limit, group, cmd, required=required, ours=True)


def make_task_step(c, limit, group, required):
    return Step("make-task", limit, group,
                [c.python, os.path.join(ROOT, "tools", "make_synthetic.py"), "--train", "10000", "--query", "10000",
                 "--seed", "2026091400", "--output", c.s("rev88.npz"), "--labels-output", c.s("rev88_labels.npy")],
                required=required, ours=False)


def torch_step(c, name, limit, mode, repeat, warmup, group):
    cmd = [c.python, os.path.join(ROOT, "tools", "torch_reference.py"), "--input", c.s("rev88.npz"), "--test-labels",
           c.s("rev88_labels.npy"), "--device", "cuda", "--mode", mode, "--repeat", str(repeat), "--warmup",
           str(warmup), "--output", c.a(f"{name}.json")]
    if mode == "graph":
        cmd += ["--predictions", c.s("torch_predictions.npy")]
    # The published learner's cuBLAS setting, for deterministic products.
    return Step(name, limit, group, cmd, ours=False, env={"CUBLAS_WORKSPACE_CONFIG": ":16:8"})


def main_plan(c):
    """The steps after the binaries, in the order of what the report needs."""
    r = str(c.replays)
    steps = [
        # Each test case's seconds in the log as it ends (doctest --duration): a suite stopped by its
        # limit still names what had finished, and the case it stopped in is the last one begun.
        tests_step(c, "gpu-suite", 75, "gpu-suite", ["gpu"], [], "testlog-gpu.json", True, ["--duration=true"]),
        Step("gpu-validation", 30, "gpu-validation",
             [c.bin("test/cuda/gpu_validation"), "--replays", r, "--output", c.a("gpu-validation.json")], True),
        Step("gpu-validation-fused", 30, "gpu-validation",
             [c.bin("test/cuda/gpu_validation"), "--backend", "cuda-fused", "--replays", r, "--output",
              c.a("gpu-validation-fused.json")], True),
        make_task_step(c, 15, "two-process", True),
    ]
    for name, backend in (("run1.json", "cuda"), ("run2.json", "cuda"), ("fused1.json", "cuda-fused"),
                          ("fused2.json", "cuda-fused")):
        label = {"run1.json": "run-cuda-1", "run2.json": "run-cuda-2", "fused1.json": "run-fused-1",
                 "fused2.json": "run-fused-2"}[name]
        steps.append(Step(label, 12, "two-process", run_cmd(c, name, backend, "--repeat", "20"), True))
    steps.append(Step("revgraph-validate", 40, "validate",
                      [c.bin("tools/revgraph"), "validate", "--backend", "cuda", "--replays", "10", "--output",
                       c.a("validate.json")], True))
    # Timings: both backends' come from the validations' replays (CUDA events, 100 a backend);
    # the baseline is the same-spec PyTorch learner captured in a CUDA graph, on the same draw.
    steps.append(torch_step(c, "torch-cuda-graph", 40, "graph", 12, 2, "timing"))
    # The fused step's launch shapes (bench/kernel_lab.cpp): the only GPU run of rows_per_block and
    # tile other than the defaults, each checked against the emulator's bits and timed side by side
    # (its table is in the log). Here, not in the follow-up, which fits only while the machine is warm.
    steps.append(Step("kernel-lab", 40, "kernel-lab", [c.bin("bench/revgraph_kernel_lab")]))
    for backend, limit in (("cuda-fused", 20), ("cuda", 20)):
        steps.append(Step(f"energy-{backend}", limit, "energy",
                          [c.bin("bench/revgraph_bench"), "--energy", f"--energy-backend={backend}",
                           f"--input={c.s('rev88.npz')}", f"--energy-out={c.a('energy-' + backend + '.json')}"]))
    # compute-sanitizer on a small task: a finding fails the report; an API error it reports inside
    # cuBLASLt, a tool that cannot run on the machine and a step that runs out of time are recorded.
    steps.append(Step("make-small-task", 10, "sanitizer",
                      [c.python, os.path.join(ROOT, "tools", "make_synthetic.py"), "--train", "300", "--query", "50",
                       "--seed", "7", "--output", c.s("small.npz")], ours=False))
    for tool, backend, limit in SANITIZERS:
        name = f"sanitize-{tool}-{backend}"
        steps.append(Step(name, limit, "sanitizer",
                          ["compute-sanitizer", "--tool", tool, "--error-exitcode", "3", "--log-file",
                           c.a(name + ".log"), c.bin("tools/revgraph"), "run", "--backend", backend, "--input",
                           c.s("small.npz"), "--output", c.s(name + ".json"), "--quiet"]))
    return steps


def follow_up_plan(c):
    """What the main run leaves out, most wanted first, for a second call while the machine is warm
    (its own budget, FOLLOW_UP_SECONDS by default: what does not fit is skipped and said so)."""
    r = str(c.replays)
    steps = [make_task_step(c, 15, "rest", False),
             Step("energy-torch-cuda-graph", 30, "rest",
                  [c.python, os.path.join(ROOT, "bench", "torch_energy.py"), "--input", c.s("rev88.npz"),
                   "--mode", "graph", "--output", c.a("energy-torch-cuda-graph.json")], ours=False),
             Step("bench-throughput", 50, "rest",
                  [c.bin("bench/revgraph_bench"), "--benchmark_filter=^throughput/cuda.*/tasks:(1|4|16)(/|$)",
                   "--gpu-min-time=0.5", "--warmup=2", f"--benchmark_out={c.a('bench-throughput.json')}",
                   "--benchmark_out_format=json"])]
    # Per-kernel device times (Nsight Compute; nsys makes no report on these machines): one step's
    # kernels of each backend in the first epoch, as graph nodes.
    for backend, skip, count in (("cuda-fused", 200, 6), ("cuda", 2000, 50)):
        steps.append(Step(f"ncu-{backend}", 40, "rest",
                          ["ncu", "--clock-control", "none", "--graph-profiling", "node", "--launch-skip", str(skip),
                           "--launch-count", str(count), "--metrics", "gpu__time_duration.sum", "--csv", "--log-file",
                           c.a(f"ncu-{backend}.csv")] + run_cmd(c, f"ncu-{backend}.json", backend)))
    steps += [Step("gpu-validation-fused-pdl", 30, "rest",
                   [c.bin("test/cuda/gpu_validation"), "--backend", "cuda-fused", "--pdl", "--replays", r,
                    "--output", c.a("gpu-validation-fused-pdl.json")]),
              Step("run-fused-1", 12, "rest", run_cmd(c, "fused1.json", "cuda-fused", "--repeat", "20")),
              Step("run-fused-pdl", 12, "rest", run_cmd(c, "fused-pdl.json", "cuda-fused", "--pdl", "--repeat", "20")),
              torch_step(c, "torch-cuda-eager", 60, "eager", 10, 2, "rest"),
              Step("bench", 60, "rest",
                   [c.bin("bench/revgraph_bench"), "--benchmark_filter=^(task|phase)/cuda", "--gpu-min-time=1",
                    f"--benchmark_out={c.a('bench.json')}", "--benchmark_out_format=json"]),
              Step("energy-cuda-fused-x16", 30, "rest",
                   [c.bin("bench/revgraph_bench"), "--energy", "--energy-backend=cuda-fused", "--energy-tasks=16",
                    f"--input={c.s('rev88.npz')}", f"--energy-out={c.a('energy-cuda-fused-x16.json')}"])]
    for name, backend in (("run_cpu.json", "cpu"), ("run_cpu_reference.json", "cpu-reference")):
        steps.append(Step(f"run-{backend}", 20, "rest", run_cmd(c, name, backend)))
    steps.append(Step("run-cuda-embedded", 15, "rest",
                      [c.bin("tools/revgraph"), "run", "--backend", "cuda", "--output", c.s("embedded.json"),
                       "--quiet"]))
    steps.append(tests_step(c, "cpu-suites", 240, "rest", [], ["gpu"], "testlog-rest.json", False))
    return steps


# ---------------------------------------------------------------------------------- the commit
def tracked_files_match(root):
    """(True, "") where every file .gpudeps/sources.sha256 lists has the content it had when packed."""
    listing = os.path.join(root, ".gpudeps", "sources.sha256")
    if not os.path.exists(listing):
        return False, "no .gpudeps/sources.sha256"
    with open(listing, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines:
        digest, _, rel = line.partition("  ")
        try:
            with open(os.path.join(root, rel), "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != digest:
                    return False, f"{rel} differs from the packed commit"
        except OSError:
            return False, f"{rel} is missing"
    return True, ""


def detect_commit(root, env):
    """(commit, how): git's HEAD, else $GIT_COMMIT, else the packed commit where the tree is its."""
    if os.path.isdir(os.path.join(root, ".git")):
        try:
            head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                                  timeout=20).stdout.strip()
            if head:
                return head, "git"
        except (OSError, subprocess.SubprocessError):
            pass
    if env.get("GIT_COMMIT"):
        return env["GIT_COMMIT"], "GIT_COMMIT"
    packed = os.path.join(root, ".gpudeps", "COMMIT")
    if os.path.exists(packed):
        with open(packed) as f:
            commit = f.read().strip()
        same, why = tracked_files_match(root)
        if same:
            return commit, ".gpudeps/COMMIT (every tracked file as packed)"
        return "unknown", f"the tree is not {commit}: {why}"
    return "unknown", "no .git, no GIT_COMMIT, no .gpudeps/COMMIT"


# ---------------------------------------------------------------------------------- tests
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
    """Runs a manifest's tests (suite filter) and writes meson's testlog.json lines: name, result, duration.
    A test running when the step's limit stops it is logged as STOPPED, so the report names it."""
    with open(args.manifest) as f:
        tests = json.load(f)
    selected = [t for t in tests
                if (not args.suite or set(t["suite"]) & set(args.suite)) and not set(t["suite"]) & set(args.exclude_suite)]

    def stopped(signum, frame):
        raise StepStopped()

    signal.signal(signal.SIGTERM, stopped)
    failed = 0
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
            log.write(json.dumps({"name": t["name"], "result": result, "duration": time.time() - t0}) + "\n")
            log.flush()
            print(f"run-tests: {t['name']}: {result} ({time.time() - t0:.1f}s)", flush=True)
            if halt:
                return 1
    if not selected:
        print("run-tests: no test selected", flush=True)
        return 1
    return 1 if failed else 0


# ---------------------------------------------------------------------------------- running
class Runner:
    """Runs steps under their limits within one budget; logs; records steps.tsv for the report."""

    def __init__(self, ctx, budget, log_path):
        self.ctx, self.budget, self.start = ctx, budget, time.time()
        self.log_file = open(log_path, "a", buffering=1)
        self.steps_tsv = ctx.s("steps.tsv")
        open(self.steps_tsv, "a").close()

    def log(self, text):
        line = f"[gpu-check +{int(time.time() - self.start)}s] {text}"
        print(line, file=sys.stderr, flush=True)
        self.log_file.write(line + "\n")

    def record(self, name, rc, seconds):
        with open(self.steps_tsv, "a") as f:
            f.write(f"{name}\t{rc}\t{seconds:.2f}\n")

    def run(self, step):
        left = self.budget - (time.time() - self.start)
        if left < 15:
            self.log(f"{step.name}: skipped, time budget spent")
            self.record(step.name, "skipped", 0)
            return None
        limit = int(min(step.limit, left))
        exe = step.cmd[0]
        if not (os.path.isabs(exe) and os.access(exe, os.X_OK)) and shutil.which(exe) is None:
            self.log(f"{step.name}: not run, {exe} not found")
            self.record(step.name, "not-found", 0)
            return None
        env = dict(os.environ, **(step.env or {}))
        if step.ours and self.ctx.ld_path:
            env["LD_LIBRARY_PATH"] = self.ctx.ld_path + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        self.log(f"{step.name}: start (limit {limit}s)")
        self.log_file.write("$ " + " ".join(step.cmd) + "\n")
        t0 = time.time()
        p = subprocess.Popen(step.cmd, stdin=subprocess.DEVNULL, stdout=self.log_file, stderr=subprocess.STDOUT,
                             env=env, cwd=ROOT, start_new_session=True)
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            rc = 124
        dt = time.time() - t0
        self.record(step.name, rc, dt)
        self.log(f"{step.name}: exit {rc} after {dt:.2f}s")
        return rc


def write_plan(ctx, steps, binaries):
    with open(ctx.s("plan.tsv"), "w") as f:
        for s in binaries + steps:
            f.write(f"{s.name}\t{s.limit}\t{s.group}\t{int(s.required)}\n")


def pack_artifacts(ctx):
    tmp = os.path.join(ctx.out, ".artifacts.tar.gz")
    with tarfile.open(tmp, "w:gz") as tar:
        tar.add(ctx.art, arcname="artifacts")
    os.replace(tmp, os.path.join(ctx.out, "artifacts.tar.gz"))


def prebuilt_dir(root):
    d = os.path.join(root, ".gpudeps", "prebuilt")
    return d if os.path.exists(os.path.join(d, "tools", "revgraph")) else None


def toolkit_library_dir():
    """The CUDA toolkit's library folder holding libcudart, for binaries built on the device."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return ""
    cuda = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    for d in ("lib64", "lib", "targets/x86_64-linux/lib"):
        if glob.glob(os.path.join(cuda, d, "libcudart.so*")):
            return os.path.join(cuda, d)
    return ""


def use_prebuilt(ctx, env):
    """Prebuilt binaries where they exist, their sources are this tree's and they are wanted: (yes, why)."""
    pre = prebuilt_dir(ROOT)
    same, why = tracked_files_match(ROOT)
    if env.get("GPU_CHECK_PREBUILT", "1") == "0":
        return False, "GPU_CHECK_PREBUILT=0"
    if not pre:
        return False, "no prebuilt binaries (tools/pack-gpu-deps makes them)"
    if not same:
        return False, f"prebuilt binaries are of another tree: {why}"
    ctx.bindir, ctx.manifest, ctx.ld_path = pre, os.path.join(pre, "tests.json"), os.path.join(pre, "lib")
    return True, f"prebuilt binaries in {pre}"


def packed_arch(pre):
    try:
        with open(os.path.join(pre, "ARCH")) as f:
            return f.read().strip()
    except OSError:
        return None


# What the binaries must be able to run on the lent machine: the report's required GPU steps.
REQUIRED_BACKENDS = ("cuda-fused",)


def backends_verdict(text, required=REQUIRED_BACKENDS):
    """(ok, why) from `revgraph backends --json`: ok only where every required backend is usable and
    reports the name asked for (a binary that starts but sees no GPU fails here)."""
    try:
        rows = {b.get("requested"): b for b in json.loads(text).get("backends", [])}
    except (ValueError, AttributeError) as e:
        return False, f"revgraph backends --json gave no JSON ({e})"
    for name in required:
        b = rows.get(name)
        if b is None:
            return False, f"{name}: not in revgraph backends"
        if b.get("usable") is not True:
            return False, f"{name}: not usable: {b.get('reason', 'no reason given')}"
        if b.get("backend") != name:
            return False, f"{name}: reports {b.get('backend')!r}, not the name asked for"
    return True, "usable: " + ", ".join(f"{n} ({rows[n].get('device')})" for n in required)


def check_backends(args):
    """Runs `revgraph backends --json` and exits 0 only where the required backends are usable."""
    try:
        p = subprocess.run([args.revgraph, "backends", "--json"], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"check-backends: {args.revgraph} does not start: {e}", flush=True)
        return 1
    print(p.stdout + p.stderr, end="", flush=True)
    if p.returncode != 0:
        print(f"check-backends: revgraph backends exited {p.returncode}", flush=True)
        return 1
    ok, why = backends_verdict(p.stdout, args.require or REQUIRED_BACKENDS)
    print(f"check-backends: {why}", flush=True)
    return 0 if ok else 1


def prebuilt_step(ctx):
    # Will they start here and see the GPU? A binary built on another image may miss a library, and
    # `revgraph backends` exits 0 whatever it finds, so its JSON is judged.
    return Step("binaries", 20, "binaries",
                [ctx.python, os.path.abspath(__file__), "check-backends", "--revgraph", ctx.bin("tools/revgraph")],
                True)


def gpudeps_env(root, env):
    """What configure and build need from .gpudeps on a machine without the dev packages: the packed
    pkg-config files ahead of the machine's own, and the packed tools (pkg-config, pkgconf) on PATH
    after the machine's own, so a machine that has them keeps using them."""
    deps = os.path.join(root, ".gpudeps")
    out = {}
    pc = os.path.join(deps, "lib", "pkgconfig")
    if os.path.isdir(pc):
        out["PKG_CONFIG_PATH"] = pc + (":" + env["PKG_CONFIG_PATH"] if env.get("PKG_CONFIG_PATH") else "")
    tools = os.path.join(deps, "bin")
    if os.path.isdir(tools):
        out["PATH"] = (env.get("PATH", os.defpath) + ":" + tools).lstrip(":")
    return out


def build_steps(ctx, env, commit):
    build = env.get("GPU_CHECK_BUILD", os.path.join(ROOT, "build-gpucheck"))
    arch = env.get("GPU_CHECK_ARCH") or gpu_arch()
    ctx.bindir, ctx.manifest, ctx.ld_path = build, ctx.s("tests.json"), ""
    shutil.rmtree(build, ignore_errors=True)
    # Without .git, tools/git-commit takes the commit the build embeds from REVGRAPH_GIT_COMMIT.
    # The Python package is not built: the device has no pybind11, and no step needs it.
    stamp = {"REVGRAPH_GIT_COMMIT": commit, **gpudeps_env(ROOT, env)}
    return [Step("configure", 60, "binaries",
                 ["meson", "setup", build, "-Dcuda=enabled", f"-Dgpu_arch={arch}", "--buildtype=release",
                  "-Dpython=disabled"], True, False, stamp),
            Step("build", 240, "binaries", ["ninja", "-C", build, "-j", str(os.cpu_count() or 4)], True, False,
                 stamp)], arch


def after_build(runner, ctx):
    """Built here: the test list from meson, and the toolkit's runtime where the loader lacks it."""
    try:
        tests = json.loads(subprocess.run(["meson", "introspect", "--tests", ctx.bindir], capture_output=True,
                                          text=True, timeout=60).stdout)
        with open(ctx.manifest, "w") as f:
            json.dump(portable_manifest(tests, ctx.bindir, ROOT), f)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        runner.log(f"tests: cannot list the build's tests: {e}")
    # The toolkit's runtime, and .gpudeps/lib where the build linked a packed shared library (benchmark).
    packed = os.path.join(ROOT, ".gpudeps", "lib")
    ctx.ld_path = ":".join(d for d in (toolkit_library_dir(), packed if os.path.isdir(packed) else "") if d)


def gpu_arch():
    try:
        cap = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout.split("\n")[0].strip().replace(".", "")
        return cap if cap.isdigit() else "90"
    except (OSError, subprocess.SubprocessError):
        return "90"


def environment_log(runner, ctx):
    def cmd(*argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            return f"({argv[0]}: {e})"

    runner.log_file.write("== nvidia-smi\n" + cmd("nvidia-smi") + "\n")
    runner.log_file.write("== nvcc\n" + cmd("nvcc", "--version") + "\n")
    runner.log_file.write(f"== python {sys.executable} {sys.version.split()[0]}\n")
    for tool in ("compute-sanitizer", "ncu", "nsys", "meson", "ninja"):
        runner.log_file.write(f"== {tool}: {shutil.which(tool) or 'not on the PATH'}\n")
    # Where cuBLASLt could come from (the loader's order: engine/cuda/cublaslt_loader.hpp); the file
    # the `cuda` products ran on is gpu_validation's cublaslt_library, in the report.
    found = sorted(set(glob.glob("/usr/local/cuda*/lib*/libcublasLt.so.*") +
                       glob.glob("/usr/local/cuda*/targets/*/lib/libcublasLt.so.*") +
                       glob.glob(os.path.join(sys.prefix, "lib", "python3*", "*-packages", "nvidia", "*", "lib",
                                              "libcublasLt.so.*"))))
    runner.log_file.write("== libcublasLt candidates: " + (", ".join(found) or "none found") + "\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run-tests"]:  # internal: the test steps
        rt = argparse.ArgumentParser(prog="gpu_check.py run-tests", description=run_tests.__doc__)
        rt.add_argument("--manifest", required=True)
        rt.add_argument("--bin", required=True)
        rt.add_argument("--python", required=True)
        rt.add_argument("--testlog", required=True)
        rt.add_argument("--suite", action="append", default=[])
        rt.add_argument("--exclude-suite", action="append", default=[])
        rt.add_argument("--doctest-arg", action="append", default=[], help="passed to our doctest programs")
        return run_tests(rt.parse_args(argv[1:]))
    if argv[:1] == ["check-backends"]:  # internal: the prebuilt binaries' check
        cb = argparse.ArgumentParser(prog="gpu_check.py check-backends", description=check_backends.__doc__)
        cb.add_argument("--revgraph", required=True)
        cb.add_argument("--require", action="append", default=[])
        return check_backends(cb.parse_args(argv[1:]))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--follow-up", action="store_true", help="the steps that did not fit the main run")
    ap.add_argument("--plan", action="store_true", help="print the steps and limits, run nothing")
    ap.add_argument("out", nargs="?", help="output folder (default: gpu-check-out)")
    args = ap.parse_args(argv)

    env = os.environ
    budget = int(env.get("GPU_CHECK_BUDGET", FOLLOW_UP_SECONDS if args.follow_up else CALL_SECONDS - RESERVE_SECONDS))
    if args.plan:
        ctx = Context("OUT", "SCRATCH", 100, "python3")
        ctx.bindir, ctx.manifest = "BIN", "MANIFEST"
        steps = follow_up_plan(ctx) if args.follow_up else main_plan(ctx)
        total = 20
        print(f"budget {budget}s\n{'binaries':30} {20:4}  binaries  required")
        for s in steps:
            total += s.limit
            print(f"{s.name:30} {s.limit:4}  {s.group}{'  required' if s.required else ''}")
        print(f"total {total}s")
        return 0

    out = os.path.abspath(args.out or env.get("OUT") or os.path.join(ROOT, "gpu-check-out"))
    os.makedirs(out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="gpu-check.")
    ctx = Context(out, scratch, int(env.get("GPU_CHECK_REPLAYS", "100")), sys.executable)
    os.makedirs(ctx.art)
    log_name = "gpu-check-follow-up.log" if args.follow_up else "gpu-check.log"
    runner = Runner(ctx, budget, os.path.join(out, log_name))
    commit, how = detect_commit(ROOT, env)
    runner.log(f"commit {commit} ({how}); output {out}; budget {budget}s")
    environment_log(runner, ctx)

    kind = "follow-up" if args.follow_up else "main"
    report_name = "report-follow-up.json" if args.follow_up else "report.json"
    state = {"binaries": "", "arch": None}

    def report(after=None):
        try:
            gpu_check_report.write_report(out=out, scratch=scratch, artifacts=ctx.art, git_commit=commit,
                                          commit_source=how, gpu_arch=state["arch"], partial=after,
                                          binaries=state["binaries"], kind=kind, name=report_name)
            pack_artifacts(ctx)
        except Exception as e:  # a report that cannot be written must not stop the evidence
            runner.log(f"report: {type(e).__name__}: {e}")

    # The binaries: prebuilt where they fit this tree and start here, else built here.
    prebuilt, why = use_prebuilt(ctx, env)
    runner.log(why)
    binaries = [prebuilt_step(ctx)] if prebuilt else []
    if prebuilt and runner.run(binaries[0]) == 0:
        state.update(binaries=why, arch=packed_arch(ctx.bindir))
    else:
        if prebuilt:
            why = "the prebuilt binaries do not start here"
            runner.log(why + ": building on the device")
        build, arch = build_steps(ctx, env, commit)
        binaries = build  # the check that failed is recorded, not required: the build replaces it
        state.update(binaries=f"built on the device for sm_{arch} ({why})", arch=arch)
        for s in build:
            runner.run(s)
        after_build(runner, ctx)
    steps = follow_up_plan(ctx) if args.follow_up else main_plan(ctx)
    write_plan(ctx, steps, binaries)
    report("binaries")
    for s in steps:
        runner.run(s)
        report(s.name)  # after every step, recorded ones too: a call stopped anywhere brings back all it had
    for f in glob.glob(ctx.s("testlog-*.json")):
        shutil.copy(f, ctx.art)
    report()
    runner.log(f"done in {int(time.time() - runner.start)}s")
    with open(os.path.join(out, report_name)) as f:
        r = json.load(f)
    print(f"gpu-check: {'PASSED' if r.get('passed') else 'see ' + report_name}: " + "; ".join(r.get("failures", [])))
    return 0 if r.get("passed") or args.follow_up else 1


if __name__ == "__main__":
    sys.exit(main())
