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

The package (tools/gpu_check/; `python3 -m gpu_check` with tools/ on PYTHONPATH, which
tools/gpu-check sets):
  cli          the command line: the run, --plan, and the subcommands the steps call
  steps        Step, Context, the device call's budget
  plan         the main run's and the follow-up's steps, in order, with their limits
  binaries     prebuilt or built on the device, and whether they start here
  machine      what the lent machine has (GPU architecture, toolkit, the environment log)
  runner       runs steps under their limits, records steps.tsv, packs the artifacts
  meson_tests  meson's test list made portable, and the test steps' runner
  commit       the commit of a tree with or without .git
  report       OUT/report.json from what the steps left (also `gpu-check report`)
  sanitizer    compute-sanitizer's logs, judged
"""
