"""The steps of the main run and of the follow-up, in the order of what the report needs, with
their time limits (test/tools/test_gpu_check_plan.py holds the main run to the device call's budget)."""
import os

from .steps import ROOT, Step, self_command, self_env


SANITIZERS = (("memcheck", "cuda-fused", 30), ("racecheck", "cuda-fused", 35), ("initcheck", "cuda-fused", 25),
              ("memcheck", "cuda", 30))


def run_cmd(c, name, backend, *extra):
    return [c.bin("tools/revgraph"), "run", "--backend", backend, "--input", c.s("rev88.npz"), "--output",
            c.s(name), "--quiet", *extra]


def tests_step(c, name, limit, group, suites, exclude, log, required, doctest_args=()):
    cmd = self_command(c.python, "run-tests", "--manifest", c.manifest or "", "--bin", c.bindir or "", "--python",
                       c.python, "--testlog", c.s(log))
    cmd += [x for s in suites for x in ("--suite", s)] + [x for s in exclude for x in ("--exclude-suite", s)]
    cmd += [f"--doctest-arg={a}" for a in doctest_args]
    return Step(name, limit, group, cmd, required=required, ours=True, env=self_env())


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


def write_plan(ctx, steps, binaries):
    with open(ctx.s("plan.tsv"), "w") as f:
        for s in binaries + steps:
            f.write(f"{s.name}\t{s.limit}\t{s.group}\t{int(s.required)}\n")
