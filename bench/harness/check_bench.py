#!/usr/bin/python3
"""Smoke checks of revgraph_bench for `meson test --suite bench` (no timing assertions).

  check_bench.py benchmarks BUILD/bench/revgraph_bench         every family on a tiny task -> valid JSON
  check_bench.py energy BUILD/bench/revgraph_bench             --energy: a report, or why not available
  check_bench.py compare bench/compare/compare_torch BUILD     compare_torch on a tiny draw -> valid JSON; its
                                                               refusals; python_overhead.py's command line
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

# A tiny task: more train rows than the largest swept batch, so every batch is a real one.
TINY = ["--train=1100", "--query=100", "--warmup=0", "--gpu-min-time=0.02"]
PHASES = ("reset", "normalize", "epoch", "predict")
DEPTHS = (1, 2, 4, 8)
BATCHES = (8, 16, 32, 64, 128, 256, 512, 1024)
WIDTHS = (82, 128, 256, 512)
SPEC_BYTES_PER_EXAMPLE = 82 * 4  # docs/spec.md §4: one B x 82 float32 state, whatever the depth


def fail(msg):
    print(f"check_bench: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    sys.stdout.write(p.stdout[-4000:])
    sys.stderr.write(p.stderr[-4000:])
    if p.returncode != 0:
        fail(f"exit status {p.returncode}")
    return p


def check_benchmarks(binary):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        run([binary] + TINY + ["--benchmark_min_time=0.01", "--benchmark_format=json",
                               f"--benchmark_out={out}", "--benchmark_out_format=json"])
        with open(out) as f:
            doc = json.load(f)
        ctx = doc.get("context", {})
        for key in ("revgraph_commit", "backends", "cpu_model", "timing", "flush_l2", "task", "programmatic_launch"):
            if key not in ctx:
                fail(f"context lacks {key!r}")
        backends = ctx["backends"].split(",")
        # Google Benchmark appends "/manual_time" to benchmarks timed with SetIterationTime.
        by_name = {b["name"].removesuffix("/manual_time"): b for b in doc.get("benchmarks", [])}
        for b in doc.get("benchmarks", []):
            if b.get("error_occurred"):
                fail(f"{b['name']}: {b.get('error_message')}")
        for backend in backends:
            expected = [f"task/{backend}"] + [f"phase/{backend}/{p}" for p in PHASES] + \
                [f"sweep_depth/{backend}/depth:{d}" for d in DEPTHS] + \
                [f"sweep_batch/{backend}/batch:{b}" for b in BATCHES]
            for name in expected:
                b = by_name.get(name)
                if b is None:
                    fail(f"no benchmark {name!r} (have {sorted(by_name)})")
                for counter in ("median_ms", "min_ms", "max_ms", "retained_core_bytes", "core_bytes_per_example",
                                "depth", "batch_size"):
                    if not isinstance(b.get(counter), (int, float)):
                        fail(f"{name}: counter {counter!r} missing")
                if not b["min_ms"] <= b["median_ms"] <= b["max_ms"]:
                    fail(f"{name}: min/median/max out of order")
                if b["core_bytes_per_example"] != SPEC_BYTES_PER_EXAMPLE:
                    fail(f"{name}: {b['core_bytes_per_example']} bytes kept per example, docs/spec.md §4 says "
                         f"{SPEC_BYTES_PER_EXAMPLE} at every depth")
                if not name.startswith("phase/") or name.endswith(("epoch", "predict", "normalize")):
                    if not b.get("items_per_second", 0) > 0:
                        fail(f"{name}: no items_per_second")
            for d in DEPTHS:
                if by_name[f"sweep_depth/{backend}/depth:{d}"]["depth"] != d:
                    fail(f"sweep_depth {d}: depth counter wrong")
            # Widths where the backend runs them (the CPU ones): one B x W state kept, 4·W bytes an
            # example, and the model's FLOP count of engine/model/cost.hpp.
            if not backend.startswith("cuda"):
                for w in WIDTHS:
                    name = f"sweep_width/{backend}/width:{w}"
                    b = by_name.get(name)
                    if b is None:
                        fail(f"no benchmark {name!r}")
                    if b.get("width") != w or b.get("core_bytes_per_example") != 4 * w:
                        fail(f"{name}: width {b.get('width')}, {b.get('core_bytes_per_example')} bytes an example")
                    if not (b.get("gflop_per_task", 0) > 0 and b.get("gflop_per_second", 0) > 0):
                        fail(f"{name}: gflop_per_task or gflop_per_second missing")
            # K tasks at once: 1, 2, 4, ... up to 16 streams (GPU) or one per CPU this process may use.
            most = 16 if backend.startswith("cuda") else len(os.sched_getaffinity(0))
            counts = [k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256) if k <= most]
            for k in counts:
                name = f"throughput/{backend}/tasks:{k}"
                b = by_name.get(name)
                if b is None:
                    fail(f"no benchmark {name!r}")
                if b.get("tasks") != k:
                    fail(f"{name}: tasks counter {b.get('tasks')}")
                if not (b.get("tasks_per_second", 0) > 0 and b.get("ms_per_task", 0) > 0
                        and b.get("items_per_second", 0) > 0):
                    fail(f"{name}: tasks_per_second, ms_per_task or items_per_second missing")
                if abs(b["ms_per_task"] * k - b["median_ms"]) > 1e-6 * b["median_ms"]:
                    fail(f"{name}: ms_per_task x tasks != median_ms")
        if ctx.get("programmatic_launch", "off") == "off":
            fail("programmatic launch should be on by default")
        # The flag paths: --flush-l2 and --no-pdl are accepted (no-ops for CPU backends) and the
        # context says so.
        out2 = os.path.join(tmp, "flush.json")
        run([binary] + TINY + ["--flush-l2", "--no-pdl", "--benchmark_filter=^task/", "--benchmark_min_time=0.01",
                               f"--benchmark_out={out2}"])
        with open(out2) as f:
            doc2 = json.load(f)
        if doc2["context"].get("flush_l2", "off") == "off":
            fail("--flush-l2 not reflected in the context")
        if doc2["context"].get("programmatic_launch") != "off":
            fail("--no-pdl not reflected in the context")
        if not doc2["benchmarks"]:
            fail("--benchmark_filter=^task/ ran nothing")
    check_bad_options(binary)
    check_out_is_whole_or_untouched(binary)
    print(f"check_bench: ok: {len(by_name)} benchmarks for {', '.join(backends)}")


def check_out_is_whole_or_untouched(binary):
    """--benchmark_out=FILE: a run interrupted part way leaves FILE as it was (the report goes to a
    temporary beside it, renamed only at the end); the next run removes the interrupted one's
    temporary and replaces FILE whole."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        with open(out, "w") as f:
            f.write("the earlier report\n")
        p = subprocess.Popen([binary] + TINY + ["--backends=cpu-reference", "--benchmark_filter=^sweep_batch/",
                                                "--benchmark_min_time=30", f"--benchmark_out={out}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):  # the temporary exists once the run has started
                if any(n.startswith(".bench.json.tmp-") for n in os.listdir(tmp)):
                    break
                time.sleep(0.1)
            else:
                fail("--benchmark_out: no temporary beside the target while the run went on")
            time.sleep(0.5)
            p.send_signal(signal.SIGINT)
            p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        with open(out) as f:
            if f.read() != "the earlier report\n":
                fail("--benchmark_out: an interrupted run changed the earlier report")
        # A listing writes no report: the earlier one stays.
        run([binary] + TINY + ["--backends=cpu-reference", "--benchmark_list_tests=true", f"--benchmark_out={out}"])
        with open(out) as f:
            if f.read() != "the earlier report\n":
                fail("--benchmark_out: --benchmark_list_tests replaced the earlier report")
        run([binary] + TINY + ["--backends=cpu-reference", "--benchmark_filter=^task/", f"--benchmark_out={out}"])
        with open(out) as f:
            if not json.load(f).get("benchmarks"):
                fail("--benchmark_out: the finished run's report has no benchmarks")
        left = [n for n in os.listdir(tmp) if n != "bench.json"]
        if left:
            fail(f"--benchmark_out: left beside the report: {left}")


def check_bad_options(binary):
    """revgraph_bench's own options: an unknown or malformed one is one clear error line and exit 2,
    before any benchmark runs; Google Benchmark's own flags still pass through."""
    for args, word in ((["--bogus-option"], "--bogus-option"), (["--train=0"], "--train"),
                       (["--warmup=x"], "--warmup"), (["--benchmark_list_tests=true", "--query=-1"], "--query"),
                       (["--backends=cpu,cpu-refrence"], "cpu-refrence"), (["--energy-backend=cdua"], "cdua"),
                       (["--gpu-min-time=0"], "--gpu-min-time"), (["--benchmark_min_time=abc"], "--benchmark_min_time"),
                       (["--benchmark_repetitions=0"], "--benchmark_repetitions"),
                       (["--benchmark_out=a.json", "--benchmark_out=b.json"], "--benchmark_out"),
                       # a typo's billions, refused before the draw grows to bad_alloc
                       (["--train=1000001"], "--train"), (["--query=99999999999999999999"], "--query"),
                       # options that would be ignored
                       (["--input=x.npz", "--data-seed=3"], "--data-seed"), (["--energy-out=e.json"], "--energy-out"),
                       (["--energy-set=epochs=1"], "--energy-set")):
        p = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("revgraph_bench: error: ") \
                or word not in lines[0] or p.stdout:
            fail(f"{args}: expected one 'revgraph_bench: error: ...{word}...' line and exit 2, got "
                 f"{p.returncode}: {p.stderr!r} {p.stdout[:200]!r}")
    # An output never replaces an input (exit 2), and one whose folder is missing is refused before
    # any work (exit 1; an energy window is up to a minute): one line each, the files as they were.
    with tempfile.TemporaryDirectory() as tmp:
        archive, config = os.path.join(tmp, "draw.npz"), os.path.join(tmp, "c.json")
        for path, text in ((archive, "not read"), (config, '{"epochs": 1}\n')):
            with open(path, "w") as f:
                f.write(text)
        for args, status, word in (([f"--input={archive}", f"--benchmark_out={archive}"], 2, "may not replace an input"),
                                   (["--energy", f"--energy-config={config}", f"--energy-out={config}"], 2,
                                    "may not replace an input"),
                                   (["--energy", f"--energy-out={tmp}/nowhere/e.json"], 1, "does not exist")):
            p = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
            lines = p.stderr.strip().splitlines()
            if p.returncode != status or len(lines) != 1 or word not in lines[0] or p.stdout:
                fail(f"{args}: expected one '...{word}...' line and exit {status}, got {p.returncode}: "
                     f"{p.stderr!r} {p.stdout[:200]!r}")
        with open(archive) as f, open(config) as g:
            if (f.read(), g.read()) != ("not read", '{"epochs": 1}\n'):
                fail("an output was written over an input")
        # A device is written as Google Benchmark writes it (the staged report is for regular files).
        p = subprocess.run([binary, "--benchmark_out=/dev/null", "--benchmark_list_tests=true"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        if p.returncode != 0:
            fail(f"--benchmark_out=/dev/null: exit {p.returncode}: {p.stderr[-300:]!r}")
    p = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    if p.returncode != 0 or "--benchmark_filter" not in p.stdout or "--energy" not in p.stdout:
        fail("--help: the usage should name our options and Google Benchmark's")
    p = subprocess.run([binary] + TINY + ["--backends=cpu-reference", "--benchmark_list_tests=true"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if p.returncode != 0 or "task/cpu-reference" not in p.stdout:
        fail(f"--benchmark_list_tests with our options: {p.returncode} {p.stderr[-500:]!r}")
    # A filter that matches nothing measured nothing: exit 2, our error line last (Google Benchmark's
    # own line before it); one that is no regular expression is refused in one line before any work.
    for pattern, said, count in (("^nosuch/", "no benchmark matched", None), ("[", "not a regular expression", 1)):
        p = subprocess.run([binary] + TINY + ["--backends=cpu-reference", f"--benchmark_filter={pattern}"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 2 or not lines or said not in lines[-1] or (count and len(lines) != count):
            fail(f"--benchmark_filter={pattern}: expected exit 2 and {said!r}, got "
                 f"{p.returncode}: {p.stderr[-500:]!r}")


def check_energy(binary):
    quick = TINY + ["--settle-seconds=0", "--idle-seconds=0.1", "--idle-after-seconds=0", "--energy-seconds=0.1",
                    "--energy-min-tasks=2"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "energy.json")
        p = run([binary, "--energy", f"--energy-out={out}"] + quick)
        with open(out) as f:
            e = json.load(f)["energy"]
        if not isinstance(e.get("available"), bool):
            fail("energy.available missing")
        if e["available"]:
            if not (e.get("tasks", 0) >= 2 and isinstance(e.get("joules_per_task"), (int, float))
                    and isinstance(e.get("gross_joules_per_task"), (int, float))
                    and (e.get("window") or {}).get("tasks_seconds", 0) > 0):
                fail(f"energy report incomplete: {e}")
        elif not e.get("reason"):
            fail("energy not available but no reason given")
        if "energy:" not in p.stdout:
            fail("no summary line on stdout")
        # The NVML-missing path, forced even on a GPU machine.
        out2 = os.path.join(tmp, "missing.json")
        # With a config (a frontier entry's: --energy-config FILE then --energy-set, the engine's reader), recorded.
        config = os.path.join(tmp, "entry.json")
        with open(config, "w") as f:
            json.dump({"depth": 4, "width": 96, "epochs": 32}, f)
        run([binary, "--energy", "--nvml-library=libnvidia-ml-absent.so.1", f"--energy-out={out2}",
             f"--energy-config={config}", "--energy-set=width=128", "--energy-set=alpha=1"] + quick)
        with open(out2) as f:
            report = json.load(f)
        m = report["energy"]
        if m["available"] or "libnvidia-ml-absent.so.1" not in m.get("reason", ""):
            fail(f"missing NVML not reported: {m}")
        c = report["task"]["config"]
        if (c["depth"], c["width"], c["epochs"], c["alpha"]) != (4, 128, 32, 1.0):
            fail(f"--energy-config/--energy-set did not reach the task's config: {c}")
        for args, word in ((["--energy-set=width=129"], "width"), (["--energy-set=depth"], "key=value"),
                           ([f"--energy-config={os.path.join(tmp, 'absent.json')}"], "absent.json"),
                           (["--energy-set=width=128", "--energy-tasks=2"], "--energy-tasks")):
            p = subprocess.run([binary, "--energy"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=60)
            lines = p.stderr.strip().splitlines()
            if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("revgraph_bench: error: ") \
                    or word not in lines[0]:
                fail(f"{args}: expected one 'revgraph_bench: error: ...{word}...' line and exit 2, got "
                     f"{p.returncode}: {p.stderr!r}")
    print(f"check_bench: ok: energy {'available' if e['available'] else 'not available: ' + e['reason']}")


FAKE_REVGRAPH = """#!{python}
# `revgraph run` as compare_torch calls it, the cpu backend only, whose predictions differ in every process.
import hashlib, json, os, sys
words = [w for w in sys.argv[2:] if w not in ("--quiet", "--timings")]
args = dict(zip(words[::2], words[1::2]))
if args["--backend"] != "cpu":
    sys.exit("revgraph: error: backend: not in this fake")
with open(args["--output"], "w") as f:
    json.dump({{"backend": "cpu", "device": "fake", "git_commit": "fake",
               "run_seconds": [0.001] * int(args.get("--repeat", 1)),
               "predictions_sha256": hashlib.sha256(str(os.getpid()).encode()).hexdigest()}}, f)
"""


def fake_build(tmp):
    """A build folder whose tools/revgraph is FAKE_REVGRAPH: a run that goes wrong harms no real build."""
    fake = os.path.join(tmp, "build", "tools", "revgraph")
    os.makedirs(os.path.dirname(fake))
    with open(fake, "w") as f:
        f.write(FAKE_REVGRAPH.format(python=sys.executable))
    os.chmod(fake, 0o755)
    return os.path.join(tmp, "build")


def compare_refuses(script, build_dir, args, word, cwd=None):
    """compare_torch ARGS: one 'compare: error: ...WORD...' line and exit 2, before any work."""
    p = subprocess.run([sys.executable, script, "--build-dir", build_dir, "--train", "30", "--query", "5",
                        "--only", "cpu", "--repeat", "2", "--warmup", "0", "--allow-missing-torch", *args],  # short
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300, cwd=cwd)
    lines = p.stderr.strip().splitlines()
    if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("compare: error: ") \
            or word not in lines[0] or p.stdout:
        fail(f"compare {args}: expected one 'compare: error: ...{word}...' line and exit 2, got "
             f"{p.returncode}: {p.stderr[-500:]!r} {p.stdout[:200]!r}")


def tree_state(root):
    """Every folder and file under root, with a file's bytes (or a link's target): what a refused run must
    leave as it was."""
    state = {}
    for folder, _, names in os.walk(root):
        state[folder] = None
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                state[path] = os.readlink(path)
            else:
                with open(path, "rb") as f:
                    state[path] = f.read()
    return state


def check_compare_refusals(script):
    """--output never replaces a file the run reads or runs (the revgraph binary, a --keep folder's
    files, a hard or symbolic link to one), is never a folder nor in a missing folder; --keep is no file:
    each one line and exit 2 before any work, every file as it was."""
    with tempfile.TemporaryDirectory() as tmp:
        build_dir = fake_build(tmp)
        binary = os.path.join(build_dir, "tools", "revgraph")
        kept, afile = os.path.join(tmp, "kept"), os.path.join(tmp, "afile.json")
        os.mkdir(kept)
        for path, text in ((os.path.join(kept, "task.npz"), "the kept draw"), (afile, "not a folder")):
            with open(path, "w") as f:
                f.write(text)
        os.link(os.path.join(kept, "task.npz"), os.path.join(tmp, "hard.json"))
        os.symlink(binary, os.path.join(tmp, "soft.json"))
        os.link(binary, os.path.join(tmp, "hard-binary.json"))
        cases = [(["--output", binary], "revgraph binary"),
                 (["--output", "soft.json"], "revgraph binary"),
                 (["--keep", "kept", "--output", "kept/task.npz"], "--keep"),
                 (["--keep", "kept", "--output", "hard.json"], "--keep"),
                 (["--keep", "kept", "--output", "kept/cpu.0.json"], "--keep"),  # written, then read, by the run
                 (["--keep", "new", "--output", "new/tiny.npz"], "--keep"),
                 (["--keep", "new", "--output", "new"], "--keep"),
                 (["--output", tmp], "folder"), (["--output", "kept/"], "folder"),
                 (["--output", "nowhere/compare.json"], "does not exist"),
                 (["--keep", "afile.json", "--output", "compare.json"], "--keep afile.json"),
                 (["--output", "hard-binary.json"], "revgraph binary")]
        before = tree_state(tmp)
        for args, word in cases:
            compare_refuses(script, build_dir, args, word, cwd=tmp)
        if tree_state(tmp) != before:
            fail("a refused compare changed or left files")


def check_compare_rounds_differ(script):
    """Fresh processes of one program on one draw must give the same predictions: where they do not,
    a warning line and a note, and still exit 0."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "compare.json")
        p = run([sys.executable, script, "--build-dir", fake_build(tmp), "--device", "cpu", "--only", "cpu",
                 "--train", "30", "--query", "5", "--repeat", "2", "--rounds", "2", "--warmup", "0",
                 "--allow-missing-torch", "--output", out])
        with open(out) as f:
            doc = json.load(f)
        said = [line for line in p.stderr.splitlines() if "warning" in line and "differ between rounds" in line]
        noted = [n for n in doc["notes"] if "differ between rounds" in n]
        if len(said) != 1 or "cpu" not in said[0] or len(noted) != 1:
            fail(f"predictions that differ between rounds: expected one warning and one note, got {said}, "
                 f"{doc['notes']}")
        shas = [r.get("predictions_sha256") for r in doc["timing"]["cpu"]["rounds"]]
        if len(shas) != 2 or shas[0] == shas[1] or None in shas:
            fail(f"each round's predictions_sha256: {shas}")


def check_python_overhead(script, build_dir):
    """--help needs no revgraph module; without one, one line naming PYTHONPATH=build/python and exit 2."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, script, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60, env=env)
    if p.returncode != 0 or "--runs" not in p.stdout or p.stderr:
        fail(f"python_overhead.py --help: {p.returncode} {p.stderr[-500:]!r}")
    for args, word in ((["--runs", "0"], "--runs"), (["--bogus"], "--bogus")):
        p = subprocess.run([sys.executable, script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60, env=env)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 2 or len(lines) != 1 or word not in lines[0] or p.stdout:
            fail(f"python_overhead.py {args}: expected one line naming {word} and exit 2, got {p.returncode}: "
                 f"{p.stderr[-500:]!r}")
    missing = subprocess.run([sys.executable, "-c", "import revgraph"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=env, timeout=60).returncode != 0
    if missing:  # where revgraph is installed, its absence cannot be shown
        p = subprocess.run([sys.executable, script, "--runs", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60, env=env)
        lines = p.stderr.strip().splitlines()
        if p.returncode != 2 or len(lines) != 1 or "PYTHONPATH=build/python" not in lines[0] or p.stdout:
            fail(f"python_overhead.py without the module: expected one line naming PYTHONPATH=build/python and "
                 f"exit 2, got {p.returncode}: {p.stderr[-500:]!r}")
    module = os.path.join(build_dir, "python")
    if os.path.isdir(os.path.join(module, "revgraph")):  # a build with the Python module: it runs
        p = subprocess.run([sys.executable, script, "--runs", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=300, env={**env, "PYTHONPATH": module})
        if p.returncode != 0 or "python binding" not in p.stdout:
            fail(f"python_overhead.py --runs 1 with PYTHONPATH={module}: {p.returncode} {p.stderr[-500:]!r}")


def check_compare(script, build_dir):
    script, build_dir = os.path.abspath(script), os.path.abspath(build_dir)  # some checks run in another folder
    check_compare_refusals(script)
    check_compare_rounds_differ(script)
    check_python_overhead(os.path.join(os.path.dirname(script), "python_overhead.py"), build_dir)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "compare.json")
        # More rounds than runs was quietly cut to the runs; a negative seed failed inside make_synthetic.py.
        for args, status, word in ((["--repeat", "2", "--rounds", "3"], 1, "--rounds 3"), (["--seed", "-1"], 2, "--seed")):
            p = subprocess.run([sys.executable, script, "--build-dir", build_dir, "--train", "30", "--query", "5",
                                "--warmup", "0", "--allow-missing-torch", "--output", out, *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
            said = [line for line in p.stderr.splitlines() if "error" in line]
            if p.returncode != status or len(said) != 1 or word not in said[0] or os.path.exists(out):
                fail(f"compare {args}: expected exit {status} and one error line naming {word}, got "
                     f"{p.returncode}: {p.stderr[-500:]!r}")
        # The report may go into the --keep folder the run makes (under a name the run does not use).
        kept = os.path.join(tmp, "kept")
        out = os.path.join(kept, "compare.json")
        p = run([sys.executable, script, "--build-dir", build_dir, "--train", "300", "--query", "50", "--repeat", "2",
                 "--rounds", "2", "--warmup", "0", "--allow-missing-torch", "--keep", kept, "--output", out])
        with open(out) as f:
            doc = json.load(f)
        if [n for n in os.listdir(kept) if n.startswith("compare.json")] != ["compare.json"]:
            fail(f"compare left beside its report: {sorted(os.listdir(kept))}")
        # Fresh processes of one binary on one draw: the same bytes every round.
        for name, t in doc["timing"].items():
            shas = [r.get("predictions_sha256") for r in t["rounds"]]
            if len(set(shas)) != 1 or None in shas:
                fail(f"{name}: predictions_sha256 by round {shas}")
        if [n for n in doc["notes"] if "differ between rounds" in n]:
            fail(f"compare warned of predictions that differ between rounds: {doc['notes']}")
        for key in ("machine", "date", "git", "task", "timing", "settings"):
            if key not in doc:
                fail(f"compare report lacks {key!r}")
        if not doc["git"].get("commit"):
            fail("compare report has no git commit")
        if not doc["timing"]:
            fail("compare measured nothing")
        # Each revgraph contender names the commit of the binary measured: the build's, whatever the tree.
        built = subprocess.run([os.path.join(build_dir, "tools", "revgraph"), "version"], stdout=subprocess.PIPE,
                               text=True, timeout=60).stdout
        for name, t in doc["timing"].items():
            if not name.startswith("torch") and (not t.get("revgraph_commit") or t["revgraph_commit"] not in built):
                fail(f"{name}: revgraph_commit {t.get('revgraph_commit')!r}, the binary says {built.strip()!r}")
        for name, t in doc["timing"].items():
            ms = t["task_ms"]
            if len(ms["runs"]) != 2 or not ms["min"] <= ms["median"] <= ms["max"]:
                fail(f"{name}: task_ms malformed: {ms}")
        if "torch-eager" in doc["timing"]:
            for name, t in doc["timing"].items():
                if "vs_torch-eager" not in t["speedup"]:
                    fail(f"{name}: no speedup vs torch-eager")
            # The agreement with torch-eager, in the JSON and as the table's last column.
            head = next((line.split() for line in p.stdout.splitlines() if line.startswith("backend ")), [])
            if head[-1:] != ["agree"]:
                fail(f"the table has no agree column: {head}")
            for name, t in doc["timing"].items():
                agree = t.get("prediction_agreement_with_torch_eager", -1)
                if name != "torch-eager" and not 0 <= agree <= 1:
                    fail(f"{name}: prediction_agreement_with_torch_eager {agree}")
    print(f"check_bench: ok: compare measured {', '.join(doc['timing'])}")


def main(argv):
    modes = {"benchmarks": (check_benchmarks, 3), "energy": (check_energy, 3), "compare": (check_compare, 4)}
    if len(argv) < 2 or argv[1] not in modes or len(argv) != modes[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    modes[argv[1]][0](*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
