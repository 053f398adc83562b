"""A gpu-check step, the paths of one run, and the device call's budget the steps must fit."""
import dataclasses
import os


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools")  # the import root of the tools' Python packages


CALL_SECONDS = 540  # the device call's timeout_s


RESERVE_SECONDS = 25  # start-up, the last report and the archive


FOLLOW_UP_SECONDS = 200  # the follow-up's steps: a call of 240 s, while the machine is still warm


GROUPS = ("binaries", "gpu-suite", "gpu-validation", "two-process", "validate", "timing", "kernel-lab", "energy",
          "sanitizer", "rest")


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


def self_command(python, *args):
    """One of this package's subcommands as a step: `python -m gpu_check ARGS`, with self_env()."""
    return [python, "-m", "gpu_check", *args]


def self_env():
    """tools/ ahead on PYTHONPATH, so a self_command step finds the package whoever started gpu-check."""
    old = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": TOOLS + (os.pathsep + old if old else "")}
