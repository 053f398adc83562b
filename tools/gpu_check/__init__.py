"""gpu-check: the GPU evidence of this tree in short calls (1-8, each <= 300 s) on a GPU machine (docs/gpu.md).

  tools/gpu-check [OUT_DIR]                    call 1: the decisive evidence (<= 300 s)
  tools/gpu-check --call 2 [OUT_DIR]           call 2: the rest (kernel lab, compute-sanitizer,
                                               throughput, ncu, PDL, the PyTorch learner's energy)
  tools/gpu-check --after REPORT [OUT_DIR]     call 2 after call 1's report: first what did not pass
                                               there (all of call 1 where the tree changed since), then
                                               call 2's steps as far as its budget goes
  tools/gpu-check --call 3 [OUT_DIR]           what fits neither (a later run with time to spare)
  tools/gpu-check --call 4 [OUT_DIR]           the race entries: each band of bench/race.json exported and
                                               run through tools/race on the GPU (needs .gpudeps/race-data)
  tools/gpu-check --call 5|6|7 [OUT_DIR]       the frontier's shapes: at each frontier.json entry, then each
                                               race.json band, both backends warm and cold and the PyTorch
                                               learner; cuda-fused's energy; compute-sanitizer at width 128
  tools/gpu-check --calls 1,4,2 [--for S] [OUT_DIR]   whole calls back to back, each into OUT_DIR/callN, for a
                                               machine held S seconds: each within what is left, none
                                               started with under a minute
  tools/gpu-check --plan [--call N | --after REPORT]   print the steps, limits and groups; run nothing
  tools/gpu-check current [--results DIR]      does a passing report speak for this tree's GPU path?
  tools/gpu-check carry REPORT                 record a legacy report's digest under the gpu-path rule
  tools/gpu-check index                        write bench/results/INDEX.md from the reports

Call 1, in order: the binaries (prebuilt here by tools/pack-gpu-deps where their sources are this
tree's, else built on the device: only what the calls run) -> the GPU test suite -> GPU validation
of both backends (replays timed warm and after an L2 flush) -> the rev88 10k/10k task in two fresh
processes per backend, hash for hash -> the same-spec PyTorch learner captured in a CUDA graph on
the same archive -> NVML energy of cuda-fused. Every call's limits add up to at most 270 s of its
300 s (test/tools checks that, and the order), so every step gets its whole limit; what a budget has
no room for is named, never dropped silently. OUT_DIR/report.json (report-call2.json, ...) is
written after the binaries and after every step (complete: false), so a call stopped anywhere
brings back all it had; the last one is complete. Beside it: gpu-check.log and artifacts.tar.gz
(the tools' own files): three files, few enough to copy back from any machine.

The commit: git's HEAD where .git exists, else $GIT_COMMIT, else the one tools/pack-gpu-deps
recorded in .gpudeps/COMMIT, which counts only where every tracked file still has the content it
had then (.gpudeps/sources.sha256). Every report also records the digest of the GPU path it ran
(gpu_path: what engine/cuda/ and graphs/ compile, by tokens; gpu_path.py), which `current` compares
with a tree. Knobs: GPU_CHECK_BUDGET (seconds for a call's
steps; default 270), GPU_CHECK_REPLAYS (100), GPU_CHECK_ARCH (build on the device for these
architectures, default the GPU's), GPU_CHECK_BUILD (build folder, build-gpucheck),
GPU_CHECK_PREBUILT=0 (build on the device even where prebuilt binaries fit).
Needs Python 3.8+ and nothing else but what the steps run (numpy, torch for the baselines).

The package (tools/gpu_check/; `python3 -m gpu_check` with tools/ on PYTHONPATH, which
tools/gpu-check sets):
  cli            the command line: a call, --plan, and the subcommands the steps call
  steps          Step, Context, the calls' budget
  plan           each call's steps, in order, with their limits; call 2's rerun plan
  binaries       prebuilt or built on the device, and whether they start here
  machine        what the GPU machine has (GPU architecture, toolkit, the environment log)
  runner         runs steps under their limits, records steps.tsv, packs the artifacts
  meson_tests    meson's test list made portable, and the test steps' runner
  commit         the commit of a tree with or without .git
  cxx_tokens     C++ source as tokens (comments and layout do not count)
  gpu_path       what the GPU path compiles (-MM from engine/cuda/ and graphs/) and its digest
  currency       whether a report speaks for a tree; carrying a legacy report's evidence
  report         OUT/report.json from what the steps left (also `gpu-check report`)
  report_timing  one draw for every contender, times side by side, energy, the targets
  sanitizer      compute-sanitizer's logs, judged
"""
