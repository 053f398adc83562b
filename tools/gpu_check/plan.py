"""The steps of each device call, in the order of what the report needs, with their time limits.

Call 1 is the decisive evidence: the GPU test suite, GPU validation of both backends, rev88 twice in
fresh processes per backend, the PyTorch learner captured in a CUDA graph on the same draw, and the
NVML energy of cuda-fused. Call 2 gathers the rest (kernel lab, compute-sanitizer, throughput, ncu,
PDL, the PyTorch learner's energy), or, given call 1's report, first reruns what did not pass (all of
call 1 where the tree changed since: a fix). Call 3 holds what fits neither. Each call's limits,
the binaries' check included, add up to at most steps.STEP_BUDGET (test/tools/test_gpu_check_plan.py
holds them to it and pins the order of the decisive steps).
"""
import os

from .steps import ROOT, STEP_BUDGET, Step, self_command, self_env

BINARIES_SECONDS = 20  # the prebuilt binaries' check (binaries.prebuilt_step), the first step of every call
TASK_SEED = "2026091400"  # rev88's draw: make_synthetic.py's, byte for byte data::synthetic_task's


def run_cmd(c, name, backend, *extra):
    return [c.bin("tools/revgraph"), "run", "--backend", backend, "--input", c.s("rev88.npz"), "--output",
            c.s(name), "--quiet", *extra]


def tests_step(c, name, limit, group, suites, exclude, log, required, doctest_args=()):
    cmd = self_command(c.python, "run-tests", "--manifest", c.manifest or "", "--bin", c.bindir or "", "--python",
                       c.python, "--testlog", c.s(log))
    cmd += [x for s in suites for x in ("--suite", s)] + [x for s in exclude for x in ("--exclude-suite", s)]
    cmd += [f"--doctest-arg={a}" for a in doctest_args]
    return Step(name, limit, group, cmd, required=required, ours=True, env=self_env())


def make_task_step(c, required):
    # The one archive every timed contender reads (revgraph run, gpu_validation --input, torch_gpu.py).
    return Step("make-task", 10, "task",
                [c.python, os.path.join(ROOT, "tools", "make_synthetic.py"), "--train", "10000", "--query", "10000",
                 "--seed", TASK_SEED, "--output", c.s("rev88.npz"), "--labels-output", c.s("rev88_labels.npy")],
                required=required, ours=False)


def make_small_task_step(c):
    return Step("make-small-task", 5, "sanitizer",
                [c.python, os.path.join(ROOT, "tools", "make_synthetic.py"), "--train", "300", "--query", "50",
                 "--seed", "7", "--output", c.s("small.npz")], ours=False)


def validation_step(c, name, limit, backend, required, *extra):
    return Step(name, limit, "gpu-validation" if required else "pdl",
                [c.bin("test/cuda/gpu_validation"), "--backend", backend, "--input", c.s("rev88.npz"), "--replays",
                 str(c.replays), *extra, "--output", c.a(name + ".json")], required)


def torch_step(c, name, limit, group, *args):
    cmd = [c.python, os.path.join(ROOT, "bench", "compare", "torch_gpu.py"), "--input", c.s("rev88.npz"), *args,
           "--output", c.a(name + ".json")]
    # The published learner's cuBLAS setting, for deterministic products.
    return Step(name, limit, group, cmd, ours=False, env={"CUBLAS_WORKSPACE_CONFIG": ":16:8"})


def energy_step(c, name, limit, backend, window, *extra):
    """revgraph_bench --energy; window = (settle, idle before, tasks, idle after) seconds."""
    settle, idle, tasks, after = window
    return Step(name, limit, "energy",
                [c.bin("bench/revgraph_bench"), "--energy", f"--energy-backend={backend}", f"--input={c.s('rev88.npz')}",
                 f"--settle-seconds={settle}", f"--idle-seconds={idle}", f"--energy-seconds={tasks}",
                 f"--idle-after-seconds={after}", *extra, f"--energy-out={c.a(name + '.json')}"])


# The energy windows (settle, idle before, seconds of tasks, idle after): the group's protocol is
# ~20 s of tasks and ~10 s idle each side; call 1 fits half of it, call 3 runs it whole. Every report
# records the window it used.
SHORT_WINDOW = (3, 5, 10, 3)
PROTOCOL_WINDOW = (3, 10, 20, 10)


def sanitize_step(c, tool, backend, limit):
    # A finding fails the report; an API error inside cuBLASLt, a tool that cannot run on the machine
    # and a step that runs out of time are recorded.
    name = f"sanitize-{tool}-{backend}"
    return Step(name, limit, "sanitizer",
                ["compute-sanitizer", "--tool", tool, "--error-exitcode", "3", "--log-file", c.a(name + ".log"),
                 c.bin("tools/revgraph"), "run", "--backend", backend, "--input", c.s("small.npz"), "--output",
                 c.s(name + ".json"), "--quiet"])


def ncu_step(c, backend, skip, count, limit):
    # Per-kernel device times (Nsight Compute; nsys made no report on the H200 machines used so far): one step's
    # kernels of each backend in the first epoch, as graph nodes.
    return Step(f"ncu-{backend}", limit, "ncu",
                ["ncu", "--clock-control", "none", "--graph-profiling", "node", "--launch-skip", str(skip),
                 "--launch-count", str(count), "--metrics", "gpu__time_duration.sum", "--csv", "--log-file",
                 c.a(f"ncu-{backend}.csv")] + run_cmd(c, f"ncu-{backend}.json", backend))


def call1_steps(c):
    """The decisive evidence, most needed first (after the binaries' check)."""
    steps = [
        # Each test case's seconds in the log as it ends (doctest --duration): a suite stopped by its
        # limit still names what had finished, and the case it stopped in is the last one begun.
        # (The exported race entries' GPU test is call 4's.)
        tests_step(c, "gpu-suite", 75, "gpu-suite", ["gpu"], ["export"], "testlog-gpu.json", True, ["--duration=true"]),
        make_task_step(c, True),
        # Both backends against the float64 reference step by step, then rev88's replays on the draw
        # (CUDA events; back to back, and each after an L2 flush).
        validation_step(c, "gpu-validation", 30, "cuda", True, "--cold-replays", "20"),
        validation_step(c, "gpu-validation-fused", 25, "cuda-fused", True, "--cold-replays", "20"),
    ]
    for name, backend, label in (("run1.json", "cuda", "run-cuda-1"), ("run2.json", "cuda", "run-cuda-2"),
                                 ("fused1.json", "cuda-fused", "run-fused-1"),
                                 ("fused2.json", "cuda-fused", "run-fused-2")):
        steps.append(Step(label, 10, "two-process", run_cmd(c, name, backend, "--repeat", "3"), True))
    # cuda-fused is built to give the float32 CPU trainer's very bits: its hashes on the same draw
    # (well under a second of CPU; recorded, the GPU suite tests it step by step).
    steps.append(Step("run-cpu-reference", 5, "two-process", run_cmd(c, "run_cpu_reference.json", "cpu-reference")))
    steps.append(torch_step(c, "torch-cuda-graph", 35, "timing", "--mode", "graph", "--warmup", "5", "--timing-runs",
                            "20", "--cold-runs", "10", "--test-labels", c.s("rev88_labels.npy"), "--predictions",
                            c.s("torch_predictions.npy")))
    steps.append(energy_step(c, "energy-cuda-fused", 30, "cuda-fused", SHORT_WINDOW))
    return steps


def call2_steps(c):
    """The rest, most wanted first, when call 1 passed."""
    steps = [make_task_step(c, False),
             # The fused step's launch shapes (bench/labs/kernel_lab.cpp), each checked against the
             # emulator's bits and timed side by side: the first GPU run chooses the launch constants.
             # 10.1 s on the H200 at b46778a; since then the sum-orders and cluster tables (~13-17 s).
             Step("kernel-lab", 30, "kernel-lab", [c.bin("bench/revgraph_kernel_lab")]),
             # One 41-term phase eleven ways (bench/labs/sum_lab.cu): index order against split sums in a fixed
             # tree, each checked against its host run's bits; what `cuda-fused`'s contract costs.
             Step("sum-lab", 10, "kernel-lab", [c.bin("bench/revgraph_sum_lab")]),
             make_small_task_step(c),
             # Limits about ten times what these took on the H200 (its call-2 logs), to leave room below.
             sanitize_step(c, "memcheck", "cuda-fused", 10),
             sanitize_step(c, "racecheck", "cuda-fused", 15),
             sanitize_step(c, "memcheck", "cuda", 10),
             Step("bench-throughput", 25, "throughput",  # 7.5 s at b46778a
                  [c.bin("bench/revgraph_bench"), "--benchmark_filter=^throughput/cuda.*/tasks:(1|4|16)(/|$)",
                   f"--input={c.s('rev88.npz')}", "--gpu-min-time=0.5", "--warmup=2",
                   f"--benchmark_out={c.a('bench-throughput.json')}", "--benchmark_out_format=json"]),
             ncu_step(c, "cuda-fused", 200, 6, 15),  # 2.6 and 3.1 s at b46778a
             ncu_step(c, "cuda", 2000, 50, 15),
             # Plain, then programmatic, by the same harness back to back: whether PDL pays (the first
             # H200 runs timed the two in different calls).
             validation_step(c, "gpu-validation-fused-plain", 20, "cuda-fused", False, "--no-pdl"),
             validation_step(c, "gpu-validation-fused-pdl", 20, "cuda-fused", False, "--pdl"),
             Step("run-fused-plain", 10, "pdl", run_cmd(c, "fused1.json", "cuda-fused", "--no-pdl", "--repeat", "3"),
                  serves=("run-fused-pdl",)),  # the plain launches' bytes, for PDL's to equal
             Step("run-fused-pdl", 10, "pdl", run_cmd(c, "fused-pdl.json", "cuda-fused", "--pdl", "--repeat", "3")),
             # 31.3 s of 35 at b46778a (a 21 s window, torch's start and its capture): room for a slower start.
             torch_step(c, "energy-torch-cuda-graph", 45, "energy", "--mode", "graph", "--warmup", "5", "--energy",
                        *window_args(SHORT_WINDOW))]
    return steps


def window_args(window):
    settle, idle, tasks, after = window
    return ["--settle-seconds", str(settle), "--idle-seconds", str(idle), "--seconds", str(tasks),
            "--idle-after-seconds", str(after)]


def call3_steps(c):
    """What fits neither call: recorded evidence for a later run with time to spare."""
    return [make_task_step(c, False),
            make_small_task_step(c),
            sanitize_step(c, "initcheck", "cuda-fused", 20),
            Step("revgraph-validate", 40, "validate",
                 [c.bin("tools/revgraph"), "validate", "--backend", "cuda", "--replays", "10", "--output",
                  c.a("validate.json")]),
            torch_step(c, "torch-cuda-eager", 40, "timing", "--mode", "eager", "--warmup", "2", "--timing-runs", "10"),
            energy_step(c, "energy-cuda-fused-protocol", 55, "cuda-fused", PROTOCOL_WINDOW),
            energy_step(c, "energy-cuda", 35, "cuda", SHORT_WINDOW),
            energy_step(c, "energy-cuda-fused-x16", 35, "cuda-fused", SHORT_WINDOW, "--energy-tasks=16"),
            Step("run-cuda-embedded", 10, "rest",
                 [c.bin("tools/revgraph"), "run", "--backend", "cuda", "--output", c.s("embedded.json"), "--quiet"])]


def call8_steps(c):
    """Issue 49's cluster launch: cuda-fused with each epoch ONE launch of a 16-block thread-block cluster
    (--cluster-blocks 16), validated and timed by the same harness right after the two-kernel step with
    PDL (the engine's default), its bytes against the PDL run's, and both energies over the group's
    whole window (the kernel lab in call 2 prices the cluster sizes and K tasks a launch); and K tasks
    at once as the engine runs them with clusters (run_together: K clusters of ONE launch), 1, 4 and 16."""
    return [make_task_step(c, False),
            validation_step(c, "gpu-validation-fused-pdl", 20, "cuda-fused", False, "--pdl"),
            validation_step(c, "gpu-validation-fused-cluster", 20, "cuda-fused", False, "--cluster-blocks", "16"),
            Step("run-fused-pdl", 10, "pdl", run_cmd(c, "fused-pdl.json", "cuda-fused", "--pdl", "--repeat", "3")),
            Step("run-fused-cluster", 10, "cluster",
                 run_cmd(c, "fused-cluster.json", "cuda-fused", "--cluster-blocks", "16", "--repeat", "3")),
            energy_step(c, "energy-cuda-fused-protocol", 55, "cuda-fused", PROTOCOL_WINDOW),
            energy_step(c, "energy-cuda-fused-cluster-protocol", 55, "cuda-fused", PROTOCOL_WINDOW,
                        "--cluster-blocks=16"),
            Step("bench-throughput-cluster", 35, "cluster",
                 [c.bin("bench/revgraph_bench"), "--benchmark_filter=^throughput/cuda-fused/tasks:(1|4|16)(/|$)",
                  f"--input={c.s('rev88.npz')}", "--gpu-min-time=0.5", "--warmup=2", "--cluster-blocks=16",
                  f"--benchmark_out={c.a('bench-throughput-cluster.json')}", "--benchmark_out_format=json"])]


RACE_DATA = os.path.join(ROOT, ".gpudeps", "race-data")  # the official MNIST files, packed by tools/pack-gpu-deps


def race_bands():
    """The bands of bench/race.json (else the frontier's): the entries call 4 runs."""
    import json
    for rel in (("bench", "race.json"), ("bench", "frontier", "frontier.json")):
        path = os.path.join(ROOT, *rel)
        if os.path.exists(path):
            with open(path) as f:
                return path, [b["band"] for b in json.load(f).get("bands", [])
                              if b.get("band") in ("12", "8", "5", "3", "2") and b.get("qualified", True) is not False]
    return None, []


def call4_steps(c):
    """Issue 48's GPU evidence: each band's entry, exported from this tree, through tools/race run on
    the GPU (11 ranked draws of the official files, a warm-up, the L2 flush, CUDA events), and the
    entries hash for hash with revgraph's backends (the export-gpu test)."""
    source, bands = race_bands()
    # 90 s: the test runs cpu-reference twice an entry on 3,000 rows, ~30 s of one core for the 5 %
    # entry (width 256, depth 3, 32 epochs) alone.
    steps = [tests_step(c, "export-gpu", 90, "race", ["export", "gpu"], [], "testlog-export.json", True)]
    for band in bands:
        entry = c.s(f"entry-{band}.py")
        steps.append(Step(f"export-{band}", 5, "race", [c.bin("tools/revgraph"), "export", "--from", source, "--band", band,
                                                         "--output", entry, "--quiet"], serves=(f"race-{band}",)))
        # --build: the band's verdict from this run's own revgraph (the packed or fallback build), not
        # from a build/ the GPU machine does not have.
        steps.append(Step(f"race-{band}", 45, "race", [c.python, os.path.join(ROOT, "tools", "race"), "run", entry, "--device",
                                                        "cuda", "--idx-dir", RACE_DATA, "--build", c.bindir,
                                                        "--report", c.a(f"race-{band}.json")],
                          ours=False))
    return steps


# Calls 5-7 (issue 47 item 4): the frontier's shapes. For each qualified entry of bench/frontier/frontier.json,
# then each band of bench/race.json: both backends (gpu_validation --config: warm replays and replays
# after an L2 flush) and the same-spec PyTorch learner in a CUDA graph, on make_task_step's draw; then
# cuda-fused's NVML energy at each frontier entry; then compute-sanitizer at one frontier shape wider than
# 82; then the race's bands the same way. Packed in that order, an entry's steps together, into as few
# calls as the budget allows (shape_calls).
SHAPE_KEYS = ("depth", "width", "alpha", "seed", "epochs", "learning_rate", "batch_size", "momentum", "weight_decay")
SHAPE_CALLS = (5, 6, 7)
SANITIZE_EPOCHS = 2  # under compute-sanitizer (10-100x slower): the entry's shape and full-size draw, 2 epochs


def shape_entries():
    """[(id, source, band, config)]: frontier.json's qualified entries, then race.json's bands, in file order."""
    import json
    out = []
    for prefix, rel, qualified_only in (("frontier", ("bench", "frontier", "frontier.json"), True),
                                        ("race", ("bench", "race.json"), False)):
        path = os.path.join(ROOT, *rel)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for b in json.load(f).get("bands", []):
                if qualified_only and b.get("qualified") is not True:
                    continue
                out.append((f"{prefix}-{b['band']}", os.path.relpath(path, ROOT), str(b["band"]), dict(b["config"])))
    return out


def shape_sets(config, **override):
    """The entry's config as --set KEY=VALUE, every key (docs/spec.md §1 order): the command carries it whole."""
    merged = dict(config, **override)
    return [x for k in SHAPE_KEYS if k in merged for x in ("--set", f"{k}={merged[k]}")]


def shape_weight(config):
    """The entry's work against rev88's, roughly (steps x depth x width/82): what sizes its replay counts and limits."""
    steps = -(-10000 // config["batch_size"]) * config["epochs"]
    return steps * config["depth"] * config["width"] / 82 / (-(-10000 // 128) * 2 * 2)


# By weight (rev88 = 1; CUDA events on the H200 gave rev88 14 ms cuda, 1.7 ms cuda-fused, 41 ms torch): the
# replays of each backend (warm, after an L2 flush), the learner's runs (warm-up, timed, after a flush), and the
# limits of the validation and learner steps. The heaviest class, ~50x rev88 (width 128, depth 4, 32
# epochs: ~0.7 s a cuda task if it scales, 1-2 s for the learner, whose torchref GraphRunner first runs the
# task twice eagerly), still keeps 8 + 4 replays, and 6 + 4 learner runs, inside its limits.
SHAPE_CLASSES = ((2, (50, 20), (3, 20, 10), 12, 25), (20, (20, 10), (2, 10, 5), 15, 35), (None, (8, 4), (1, 6, 4), 25, 55))


def shape_class(config):
    w = shape_weight(config)
    return next(c for c in SHAPE_CLASSES if c[0] is None or w <= c[0])


def shape_timing_steps(c, entry):
    """Both backends and the PyTorch learner at one entry, on rev88.npz (make_task_step's draw)."""
    eid, _, _, config = entry
    _, (replays, cold), (warmup, runs, cold_runs), val_limit, torch_limit = shape_class(config)
    sets = shape_sets(config)
    steps = []
    for backend, short in (("cuda", "cuda"), ("cuda-fused", "fused")):
        name = f"shape-{eid}-{short}"
        steps.append(Step(name, val_limit, "shapes",
                          [c.bin("test/cuda/gpu_validation"), "--backend", backend, "--input", c.s("rev88.npz"),
                           "--replays", str(replays), "--cold-replays", str(cold), *sets,
                           "--output", c.a(name + ".json")]))
    steps.append(torch_step(c, f"shape-{eid}-torch", torch_limit, "shapes", *sets, "--mode", "graph", "--warmup",
                            str(warmup), "--timing-runs", str(runs), "--cold-runs", str(cold_runs)))
    return steps


def shape_energy_step(c, entry):
    eid, _, _, config = entry
    # call 1's window; 3 untimed warm-up tasks, not the GPU default 10 (up to ~1.5 s at the heaviest entry)
    return energy_step(c, f"shape-{eid}-energy", 30, "cuda-fused", SHORT_WINDOW, "--warmup=3",
                       *[f"--energy-set={v}" for v in shape_sets(config)[1::2]])


def shape_sanitize_steps(c, entry):
    """memcheck, then racecheck, of each backend on the full-size draw at the entry's shape (SANITIZE_EPOCHS epochs)."""
    eid, _, _, config = entry
    sets = shape_sets(config, epochs=SANITIZE_EPOCHS)
    out = []
    for tool, limit in (("memcheck", 20), ("racecheck", 30)):
        for backend in ("cuda-fused", "cuda"):
            name = f"sanitize-{tool}-{backend}-w{config['width']}"
            out.append(Step(name, limit, "sanitizer",
                            ["compute-sanitizer", "--tool", tool, "--error-exitcode", "3", "--log-file",
                             c.a(name + ".log"), *run_cmd(c, name + ".json", backend, *sets)]))
    return out


def shape_units(c):
    """The shape steps in the order of their value, each unit (an entry's timing, an energy, a sanitizer run) whole."""
    entries = shape_entries()
    frontier = [e for e in entries if e[0].startswith("frontier-")]
    race = [e for e in entries if e[0].startswith("race-")]
    units = [shape_timing_steps(c, e) for e in frontier]
    units += [[shape_energy_step(c, e)] for e in frontier]
    wide = next((e for e in frontier if e[3]["width"] != 82), None)
    units += [[s] for s in (shape_sanitize_steps(c, wide) if wide else [])]
    units += [shape_timing_steps(c, e) for e in race]
    units += [[shape_energy_step(c, e)] for e in race]
    return units


def shape_calls(c, budget=STEP_BUDGET):
    """The units packed in order into SHAPE_CALLS, each call opening with the draw; what is left after the
    last one goes to it too (fit() then names it left out)."""
    calls, current, room = [], [], 0
    for unit in shape_units(c):
        need = sum(s.limit for s in unit)
        if not current or (need > room and len(calls) < len(SHAPE_CALLS) - 1):
            if current:
                calls.append(current)
            current, room = [make_task_step(c, False)], budget - BINARIES_SECONDS - 10
        current += unit
        room -= need
    calls.append(current)
    calls += [[make_task_step(c, False)]] * (len(SHAPE_CALLS) - len(calls))
    return dict(zip(SHAPE_CALLS, calls))


def shape_call_steps(call):
    return lambda c: shape_calls(c)[call]


CALL_STEPS = {1: call1_steps, 2: call2_steps, 3: call3_steps, 4: call4_steps,
              **{n: shape_call_steps(n) for n in SHAPE_CALLS}, 8: call8_steps}
CALL_TITLES = {1: "the decisive evidence", 2: "the rest, when call 1 passed", 3: "what fits neither call",
               4: "the race entries on the GPU", 5: "the frontier's shapes", 6: "the frontier's shapes, continued",
               7: "the frontier's shapes, the rest", 8: "cuda-fused's epochs on a thread-block cluster"}


def call_plan(c, call):
    return CALL_STEPS[call](c)


def every_step(c):
    """Each step of every call by name (for reruns)."""
    out = {}
    for call in sorted(CALL_STEPS):
        for s in CALL_STEPS[call](c):
            out.setdefault(s.name, s)
    return out


def fit(steps, budget, taken=BINARIES_SECONDS):
    """(kept, left out): steps in order while their limits, after `taken`, stay within budget; one
    that does not fit is left out, and later smaller ones may still come in. A step that only serves
    others (a task file, the plain run PDL is compared with) is left out with them, and its room
    offered again."""
    candidates = list(steps)
    while True:
        kept, left, room = [], [], budget - taken
        for s in candidates:
            if s.limit <= room:
                kept.append(s)
                room -= s.limit
            else:
                left.append(s)
        names = {s.name for s in kept}
        idle = [s for s in kept if served(s, steps) and not served(s, steps) & names]
        if not idle:
            return kept, left + [s for s in steps if s not in candidates]
        candidates = [s for s in candidates if s not in idle]


def served(step, steps):
    """The names of the steps `step` only exists for: its `serves`, or for a task file's maker the
    steps that read the file."""
    return set(step.serves) | {s.name for s in steps if step.name in needs(s)}


def needs(step):
    """The task files a step reads, as the steps that make them."""
    text = " ".join(step.cmd)
    return [name for name, path in (("make-task", "rev88.npz"), ("make-small-task", "small.npz"))
            if path in text and step.name != name]


def rerun_plan(c, previous, commit, budget=STEP_BUDGET):
    """Call 2 after call 1's report: (steps, left out, why). Where the tree is not the commit call 1
    ran (a fix since), call 1's whole plan again; else what did not pass there, with the task files
    they read, then call 2's own steps as far as the budget goes."""
    before = previous.get("git_commit")
    if not before or before == "unknown" or commit == "unknown" or before != commit:
        return call_plan(c, 1), [], f"the tree is {commit}, call 1 ran {before}: call 1 again"
    plan_names = [row["name"] for row in previous.get("plan") or []]
    # Steps call 1's budget left out of its plan did not pass either (a required one failed it).
    plan_names += [n for n in previous.get("left_out_of_this_call") or [] if n not in plan_names]
    steps_run = previous.get("steps") or {}
    failed = [n for n in plan_names if n != "binaries" and (steps_run.get(n) or {}).get("exit") != 0]
    by_name = every_step(c)
    unknown = [n for n in failed if n not in by_name]
    chosen = []
    for name in failed:
        if name in by_name:
            for pre in needs(by_name[name]):
                if pre not in [s.name for s in chosen]:
                    chosen.append(by_name[pre])
            if name not in [s.name for s in chosen]:
                chosen.append(by_name[name])
    for s in call_plan(c, 2):
        if s.name not in [x.name for x in chosen]:
            chosen.append(s)
    kept, left = fit(chosen, budget)
    why = (f"rerun of call 1's {len(failed)} unfinished step(s) ({', '.join(failed)}), then call 2" if failed
           else "call 1 passed every step: call 2")
    if unknown:
        why += f"; not in any plan now: {', '.join(unknown)}"
    return kept, left, why


def write_plan(ctx, steps, binaries, left=()):
    with open(ctx.s("plan.tsv"), "w") as f:
        for s in binaries + steps:
            f.write(f"{s.name}\t{s.limit}\t{s.group}\t{int(s.required)}\n")
    with open(ctx.s("left-out.tsv"), "w") as f:  # in no step of this call: the budget had no room
        for s in left:
            f.write(f"{s.name}\t{s.limit}\t{int(s.required)}\n")
