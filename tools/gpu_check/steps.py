"""A gpu-check step, the paths of one run, and the device calls' budget their steps must fit."""
import argparse
import dataclasses
import os
import sys


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools")  # the import root of the tools' Python packages


CALL_SECONDS = 300  # each call's time limit: two calls and a machine start fit a 15-minute slot with room


SLACK = 0.10  # of each call kept free: start-up, the report after every step, the archive


STEP_BUDGET = int(CALL_SECONDS * (1 - SLACK))  # 270 s: what one call's step limits may add up to


CALLS = (1, 2, 3, 4, 5, 6, 7, 8)  # 1: the decisive evidence; 2: the rest, or a rerun of what failed; 3: what fits
# neither; 4: the race entries (revgraph export) through the local harness, as the challenge runs them;
# 5-7: the frontier's shapes (each entry's config: both backends, the PyTorch learner, energy, sanitizers);
# 8: cuda-fused's epochs on a thread-block cluster beside its two-kernel step (issue 49)


GROUPS = ("binaries", "gpu-suite", "task", "gpu-validation", "two-process", "timing", "energy", "kernel-lab",
          "sanitizer", "throughput", "ncu", "pdl", "cluster", "validate", "race", "shapes", "rest")


@dataclasses.dataclass
class Step:
    name: str
    limit: int  # seconds
    group: str
    cmd: list
    required: bool = False  # the report fails where it does not exit 0
    ours: bool = True  # one of our binaries: gets the library path of the packed runtime
    env: dict = None
    serves: tuple = ()  # steps it only exists for: where a budget keeps none of them, it goes too


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


def self_command(python, *args):
    """One of this package's subcommands as a step: `python -m gpu_check ARGS`, with self_env()."""
    return [python, "-m", "gpu_check", *args]


def self_env():
    """tools/ ahead on PYTHONPATH, so a self_command step finds the package whoever started gpu-check."""
    old = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": TOOLS + (os.pathsep + old if old else "")}


class OneLineParser(argparse.ArgumentParser):
    """A bad command line is one line on stderr ("PROG: error: ...") and exit 2."""

    def error(self, message):
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)
