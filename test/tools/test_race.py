#!/usr/bin/env python3
"""tools/race, the local race harness (docs/race.md), against values it did not produce:

  - the draw scheme: this file's own plain-numpy reading of the IDX files, resize, split, draws and
    labels (labels and rows exactly, images within one float32 step), and the engine's own
    double-precision resize (`revgraph data mnist`, image for image by pool index);
  - the static rules: made-up entries that break one rule each, and good ones (every exported entry);
  - usage mistakes, an empty path among them;
  - the verdict arithmetic on made-up counts at the exact boundaries, computed here;
  - end to end on the CPU: test/tools/race/centroid_entry.py through `tools/race run --device cpu`,
    its per-draw counts against the entry's function run here on this file's own draws; hold-out
    calls; the sandbox refusing a forbidden open (and saying its refusals on the verdict line);
    invalid outputs (FAIL, exit 3); a broken rule refused before import; an entry without cuda-python;
  - `tools/race engine` against revgraph.fit_predict on this file's draws: rev88 with --backend cpu (its
    report says the predictions are not the GPU entry's), and a short config with the default backend,
    cpu-reference (the entry's very predictions);
  - `tools/race draws` against this file's draws.

  test_race.py SOURCE_ROOT BUILD_ROOT BUILD/tools/revgraph   (meson puts tools/ on PYTHONPATH; by
  hand: PYTHONPATH=tools /usr/bin/python3 test/tools/test_race.py . build build/tools/revgraph)

The real MNIST files come from tools/fetch-mnist (cached; $REVGRAPH_MNIST_DIR if set). What needs
them, torch or the built package is skipped with the reason where they are missing; if anything
was skipped and nothing failed, the exit is 77 (meson's SKIP), never a silent pass.
"""
import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
import unittest
from unittest import mock

ROOT = os.path.abspath(sys.argv.pop(1))
BUILD = os.path.abspath(sys.argv.pop(1))
REVGRAPH = os.path.abspath(sys.argv.pop(1))
RACE = os.path.join(ROOT, "tools", "race")
CENTROID = os.path.join(ROOT, "test", "tools", "race", "centroid_entry.py")

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed for", sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.join(ROOT, "tools"))
from race_harness import DEFAULT_SEED, draws, package, rules, verdict  # noqa: E402

try:
    import torch
    TORCH = ""
except ImportError as e:
    torch, TORCH = None, f"torch is not installed for {sys.executable} ({e})"

REVGRAPH_PKG, PACKAGE_WHY = package.load(BUILD)
SKIPPED = []


def fetch_mnist():
    args = [os.path.join(ROOT, "tools", "fetch-mnist")]
    if os.environ.get("REVGRAPH_MNIST_DIR"):
        args.append(os.environ["REVGRAPH_MNIST_DIR"])
    p = subprocess.run([sys.executable] + args, capture_output=True, text=True, timeout=900)
    if p.returncode == 77:
        return None, "the real MNIST files could not be fetched: " + p.stderr.strip()
    if p.returncode != 0:
        raise SystemExit(f"tools/fetch-mnist failed: {p.stderr.strip()}")
    return p.stdout.strip(), ""


IDX, IDX_WHY = fetch_mnist()


def need(*what):
    """Skip (recorded) unless every named thing is here: 'idx', 'torch', 'package'."""
    why = {"idx": IDX_WHY if IDX is None else "", "torch": TORCH,
           "package": "" if REVGRAPH_PKG is not None else PACKAGE_WHY}
    missing = [why[w] for w in what if why[w]]
    if missing:
        SKIPPED.append(missing[0])
        raise unittest.SkipTest(missing[0])


def race(*args, timeout=600):
    p = subprocess.run([sys.executable, RACE, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, REVGRAPH_BUILD=BUILD))
    return p


def file_sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def last_line(p):
    """The run's last word: its error line (stderr) where it failed with one, else its verdict (stdout)."""
    err = [line for line in p.stderr.splitlines() if line.strip()]
    if err and err[-1].startswith("race: error:"):
        return err[-1]
    out = [line for line in p.stdout.splitlines() if line.strip()]
    return out[-1] if out else (err[-1] if err else "")


# ------------------------------------------------------------------------ this file's own draw code
_OWN = {}


def own_pool():
    """(images (60000, 9, 9) float32, labels (60000,) int64), read and resized here: IDX bytes by
    hand, A from floating-point interval arithmetic, numpy float32 matmuls."""
    if "pool" not in _OWN:
        with open(os.path.join(IDX, "train-images-idx3-ubyte"), "rb") as f:
            raw = f.read()
        assert int.from_bytes(raw[:4], "big") == 2051 and raw[4:16] == bytes.fromhex("0000ea60 0000001c 0000001c")
        x28 = np.frombuffer(raw, np.uint8, offset=16).reshape(60000, 28, 28)
        with open(os.path.join(IDX, "train-labels-idx1-ubyte"), "rb") as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
        scale = 28.0 / 9.0
        a = np.zeros((9, 28))
        for i in range(9):
            for j in range(28):
                a[i, j] = max(0.0, min(j + 1.0, (i + 1) * scale) - max(float(j), i * scale)) / scale
        a32 = a.astype(np.float32)
        images = np.empty((60000, 9, 9), np.float32)
        for k in range(0, 60000, 6000):
            x = x28[k:k + 6000].astype(np.float32) / np.float32(255.0)
            images[k:k + 6000] = np.clip(a32 @ x @ a32.T, np.float32(0.0), np.float32(1.0))
        _OWN["pool"] = (images, labels)
    return _OWN["pool"]


def own_draws(seed):
    """The 11 ranked draws of the published scheme, written here from its description."""
    if seed not in _OWN:
        images, labels = own_pool()
        p = np.random.default_rng([seed, 0x5711]).permutation(60000)
        train_half, test_half = p[:30000], p[30000:]
        out = []
        for i in range(1, 12):
            s = seed + 13 * i
            rng = np.random.default_rng([s, 0xD4A7])
            tr = rng.choice(train_half, 10000, replace=False)
            te = rng.choice(test_half, 10000, replace=False)
            perm = np.random.default_rng([s, 0x5EED]).permutation(10)
            out.append({"train_rows": tr, "test_rows": te, "perm": perm,
                        "train_x": images[tr][:, None], "train_y": perm[labels[tr]],
                        "test_x": images[te][:, None], "test_y": perm[labels[te]]})
        _OWN[seed] = out
    return _OWN[seed]


def within_one_step(a, b):
    """|a - b| <= one float32 step at the larger magnitude, everywhere."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    step = np.spacing(np.maximum(np.abs(a), np.abs(b)))
    return a.shape == b.shape and bool(np.all(np.abs(a.astype(np.float64) - b.astype(np.float64)) <= step))


def within_float32_sums(reference, a):
    """a (float32 matmuls) against the engine's double-precision resize rounded once: every term of
    A·x·Aᵀ is non-negative and each output sums at most 5 non-zero products a stage, so float32's
    rounding (x, A, two stages of sums and products) stays within about 13 units of 2^-24 of the
    value; held to 16 (measured on MNIST: 4.4). Zeros are exact both ways. One float32 step is not a
    bound here: the two computations round differently."""
    reference, a = np.asarray(reference, np.float64), np.asarray(a, np.float64)
    if reference.shape != a.shape or not np.array_equal(reference == 0, a == 0):
        return False
    return bool(np.all(np.abs(reference - a) <= 16 * 2.0 ** -24 * reference))


def load_entry(path):
    spec = importlib.util.spec_from_file_location("race_test_entry", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def entry_counts(fn, draw_list):
    out = []
    for d in draw_list:
        data = tuple(torch.from_numpy(np.ascontiguousarray(d[k])) for k in ("train_x", "train_y", "test_x"))
        out.append(int((fn(data).to(torch.int64).numpy() == d["test_y"]).sum()))
    return out


HEADER = "#!POPCORN leaderboard mnist-medium-12pct\n#!POPCORN gpu A100\n"
GOOD_BODY = '''"""A made-up entry."""
import torch
import torch.nn.functional as F
from math import sqrt

torch.backends.cuda.matmul.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
torch.backends.cudnn.benchmark = False
SIZE = 81
SCALE = 1.0 / 2.0 if SIZE else 0.5
PAIRS = {"a": (1, 2), "b": [3, 4]}
ACT = F.relu
BIG = "x" * 4096


class Holder:
    """Constants only."""
    N = 10

    def value(self, k=3):
        return k


@torch.no_grad()
def custom_kernel(data):
    train_x, train_y, test_x = data
    return torch.zeros(test_x.shape[0], dtype=torch.int64, device=test_x.device)
'''


# -------------------------------------------------------------------------------------------- rules
class Rules(unittest.TestCase):
    def check(self, text, **kw):
        raw = text.encode() if isinstance(text, str) else text
        return rules.check_source(raw)

    def assertOneBroken(self, text, rule, fragment=""):
        problems, _ = self.check(text)
        self.assertEqual(len(problems), 1, problems)
        self.assertTrue(problems[0].startswith(rule + ":"), problems)
        self.assertIn(fragment, problems[0])

    def test_good_entries_pass(self):
        problems, info = self.check(HEADER + GOOD_BODY)
        self.assertEqual(problems, [])
        self.assertEqual((info["band"], info["gpu"]), (12, "A100"))
        with open(CENTROID, "rb") as f:
            self.assertEqual(rules.check_source(f.read())[0], [])
        for band in (8, 5, 3, 2):
            problems, info = self.check(HEADER.replace("12pct", f"{band}pct") + GOOD_BODY)
            self.assertEqual((problems, info["band"]), ([], band))

    def test_each_rule_broken_alone(self):
        self.assertOneBroken(HEADER + GOOD_BODY + "#" * 20480 + "\n", "size", "more than 20,480")
        self.assertOneBroken(HEADER + GOOD_BODY + 'S = "' + "y" * 4097 + '"\n', "literals", "4,097 characters")
        self.assertOneBroken(HEADER + GOOD_BODY + "B = b'" + "y" * 4097 + "'\n", "literals", "4,097 bytes")
        self.assertOneBroken(HEADER + GOOD_BODY + 'S = ("' + "y" * 2100 + '" "' + "z" * 2100 + '")\n', "literals")
        self.assertOneBroken(HEADER.replace("leaderboard", "board") + GOOD_BODY, "header", "line 1")
        self.assertOneBroken(HEADER.replace("12pct", "7pct") + GOOD_BODY, "header", "leaderboards")
        self.assertOneBroken(HEADER.replace("A100", "H100") + GOOD_BODY, "header", "line 2")
        swapped, _ = self.check("#!POPCORN gpu A100\n" + HEADER.splitlines()[0] + "\n" + GOOD_BODY)
        self.assertEqual([p[:14] for p in swapped], ["header: line 1", "header: line 2"])
        for line in ('print("hello")', "X = torch.zeros(3)", "if __name__ == '__main__':\n    pass",
                     "for i in (1, 2):\n    pass", "try:\n    import triton\nexcept ImportError:\n    pass",
                     "L = [i for i in (1, 2)]", "torch.manual_seed(0)", "with open('x') as f:\n    pass",
                     "@functools.lru_cache(maxsize=None)\ndef f():\n    pass",
                     "def g(x=torch.zeros(1)):\n    pass", "class C:\n    W = torch.ones(2)", "x: int = len('a')",
                     "W = F.relu(1)", "open('/tmp/marker', 'w')"):
            self.assertOneBroken(HEADER + GOOD_BODY + line + "\n", "inert")
        self.assertOneBroken(HEADER + GOOD_BODY.replace("def custom_kernel(data)", "def kernel(data)"), "kernel",
                             "no module-level")
        self.assertOneBroken(HEADER + GOOD_BODY.replace("def custom_kernel(data)", "def custom_kernel(data, k)"),
                             "kernel", "one argument")
        self.assertOneBroken(HEADER + GOOD_BODY.replace("def custom_kernel(data)", "async def custom_kernel(data)"),
                             "kernel", "async")
        # Allowed shapes of custom_kernel's signature.
        for sig in ("def custom_kernel(data, k=1)", "def custom_kernel(*args)", "def custom_kernel(data, *, k=2)"):
            self.assertEqual(self.check(HEADER + GOOD_BODY.replace("def custom_kernel(data)", sig))[0], [], sig)
        problems, _ = self.check(HEADER + "def custom_kernel(data:\n")
        self.assertEqual(len(problems), 1)
        self.assertTrue(problems[0].startswith("source: does not parse"), problems)
        # What Python's parser raises other than SyntaxError (a NUL byte before 3.12; nesting past its
        # limits) is the same one problem, not a traceback.
        for text in ("# \x00\n", "X = " + "-" * 15000 + "1\n", "X = " + "not " * 4000 + "1\n"):
            problems, _ = self.check(HEADER + GOOD_BODY + text)
            self.assertEqual(len(problems), 1, problems)
            self.assertTrue(problems[0].startswith("source: does not parse"), problems)
        # Shallower, Python parses it and the rules' own walk would recurse past its limit.
        for text in ("X = " + "-" * 1000 + "1\n", "X = " + "not " * 1000 + "1\n", "X = f" + "()" * 1000 + "\n"):
            problems, _ = self.check(HEADER + GOOD_BODY + text)
            self.assertEqual(len(problems), 1, problems)
            self.assertTrue(problems[0].startswith("source: "), problems)

    def test_what_def_and_class_run_at_import(self):
        """A decorator is a call at import, and a def evaluates its annotations and defaults, a class
        statement its bases, keywords and a base's __init_subclass__: each of these runs code when the
        module is imported (shown here by running it), so each breaks `inert`."""
        runs = ("@print\ndef f():\n    pass", "@print\nclass D:\n    pass", "def r() -> print('x'):\n    pass",
                "def r(a: print('x')):\n    pass", "def r(*, k: print('x') = 1):\n    pass",
                "def r(**k: print('x')):\n    pass", "class D:\n    @print\n    def f(self):\n        pass",
                "class D(metaclass=print):\n    pass",
                "class B:\n    def __init_subclass__(cls):\n        print('x')\n\n\nclass D(B):\n    pass",
                "class B:\n    __class_getitem__ = print\n\n\nX = B[1]")
        for body in runs:
            calls = []
            try:
                exec(compile(body, "entry", "exec"), {"print": lambda *a, **k: calls.append(a) or type})
            except TypeError:
                pass  # print as a metaclass returns nothing usable: it ran all the same
            self.assertTrue(calls, body)
            problems, _ = self.check(HEADER + GOOD_BODY + body + "\n")
            # `X = B[1]` is refused twice: the hook it runs, and a subscript of what is not a constant.
            self.assertEqual([p.split(":")[0] for p in problems], ["inert"] * (2 if "B[1]" in body else 1),
                             (body, problems))
        for body in ("@functools.lru_cache\ndef f():\n    pass", "@torch.jit.script\ndef f(x):\n    return x",
                     "@torch.no_grad(True)\ndef f():\n    pass", "@torch.compile(backend=print())\ndef f():\n    pass",
                     "class D:\n    @q.setter\n    def q(self, v):\n        pass"):
            self.assertOneBroken(HEADER + GOOD_BODY + body + "\n", "inert", "decorator")
        # The wrappers (of modules imported as themselves), constant annotations and library bases stay allowed.
        fine = ("import abc\nimport typing\n\nimport triton\n\n\nclass M(torch.nn.Module):\n    @staticmethod\n    def s(x: torch.Tensor) -> int:\n        return 1\n\n"
                "    @classmethod\n    def c(cls, *a: int, **k: float):\n        return 2\n\n    @property\n"
                "    def p(self) -> 'M':\n        return self\n\n    @p.setter\n    def p(self, v):\n        pass\n\n"
                "    @abc.abstractmethod\n    def a(self):\n        pass\n\n\n@torch.inference_mode()\n"
                "def g(x: SIZE = 3) -> None:\n    pass\n\n\n@torch.compile(mode='max-autotune')\ndef h(x):\n"
                "    return x\n\n\n@triton.jit\ndef k(x):\n    pass\n\n\n@typing.overload\ndef o(x: int) -> int:\n"
                "    pass\n")
        self.assertEqual(self.check(HEADER + GOOD_BODY + fine)[0], [])
        # The command: one line naming the rule, exit 1 (the reviewer's entry: @print above custom_kernel).
        with tempfile.TemporaryDirectory() as tmp:
            loud = os.path.join(tmp, "loud.py")
            with open(loud, "w") as f:
                f.write(HEADER + "import torch\n\n\n@print\ndef custom_kernel(data):\n    return data[1]\n")
            p = race("check", loud)
            self.assertEqual(p.returncode, 1, p.stdout)
            self.assertEqual([line.split(": ")[1] for line in p.stdout.splitlines()[:-1]], ["inert"], p.stdout)

    def test_annotations_run_nothing_of_an_imported_object(self):
        """Annotations are evaluated at import (a module's, a class's, a def's): an operator or a
        subscript there runs a method of what it works on, as an assignment's value would. Each refused
        form is shown to run code on a stand-in `os` first; the types entries write stay allowed."""
        class Spy:
            def __init__(self):
                self.calls = []

            def __getitem__(self, key):
                self.calls.append(key)
                return int

            def __rmod__(self, other):
                self.calls.append(other)
                return int

            def __or__(self, other):
                self.calls.append(other)
                return int

        refused = ("def f(x: '%(HOME)s' % os.environ):\n    pass", "X: os.environ['HOME'] = 1",
                   "class C:\n    X: os.environ['HOME'] = 1", "X: os.environ | os.environ = 1",
                   "def f() -> os.environ['HOME']:\n    pass", "def f(x: typing.Optional[os.environ['A']]):\n    pass")
        for body in refused:
            spy = Spy()
            exec(compile(body, "entry", "exec"), {"os": types.SimpleNamespace(environ=spy),
                                                  "typing": __import__("typing")})
            self.assertTrue(spy.calls, body)
            self.assertOneBroken(HEADER + "import os\nimport typing\n" + GOOD_BODY + body + "\n", "inert",
                                 "annotation")
        # A string joined by | fails at import ('"int" | None'); an imported class joined so runs its own __or__.
        for body in ('X: "int" | None = 1', "X: torch.Tensor | None = None"):
            self.assertOneBroken(HEADER + GOOD_BODY + body + "\n", "inert", "annotation")
        fine = ("def f(x: torch.Tensor, y: 'T', z: int | None = None) -> tuple[int, int]:\n    pass\n\n\n"
                "def g(x: typing.Optional[torch.Tensor], c: typing.Callable[[int, str], None]) -> None:\n    pass\n\n\n"
                "X: int = 1\nY: dict[str, list[int]] = {}\n")
        self.assertEqual(self.check(HEADER + "import typing\n" + GOOD_BODY + fine)[0], [])

    def test_torch_settings_targets_and_written_literals(self):
        """What a reviewer slipped past the rules: calls through a module torch imports, a name torch
        that is not torch, a subscript hidden in a tuple target, literals whose value is short but
        whose written text is long, and a band in digits no leaderboard is named with."""
        for body in ("torch.backends.cudnn.os.system('true')", "torch.backends.cudnn.os.environ = {}",
                     "torch.manual_seed = None", "torch._C._set_x(1)", "torch.backends._private.f(1)",
                     "(os.environ['A'],) = ('1',)", "[sys.x] = [1]", "A, (B, os.x) = 1, (2, 3)",
                     "A, *os.environ['x'] = 1, 2"):
            self.assertOneBroken(HEADER + "import os\nimport sys\n" + GOOD_BODY + body + "\n", "inert")
        for rebind in ("import os as torch", "from os import path as torch", "torch = 3", "def torch():\n    pass"):
            problems, _ = self.check(HEADER + GOOD_BODY + rebind + "\ntorch.set_num_threads(1)\n")
            self.assertTrue(problems and all(p.startswith("inert:") for p in problems), (rebind, problems))
            self.assertIn("binds the name torch (to something other than the torch module", problems[0])
        # The settings users write stay allowed, as do plain tuple and starred targets.
        fine = ("torch.backends.cuda.enable_flash_sdp(False)\ntorch.use_deterministic_algorithms(True)\n"
                "torch.backends.cudnn.allow_tf32 = False\ntorch.backends.cudnn.conv.fp32_precision = 'ieee'\n"
                "torch._dynamo.config.cache_size_limit = 8\nimport torch as torch\nA, *B = 1, 2, 3\n[C, D] = 4, 5\n")
        self.assertEqual(self.check(HEADER + GOOD_BODY + fine)[0], [])
        # Written length: escapes and an f-string's parts count as typed.
        self.assertOneBroken(HEADER + GOOD_BODY + "B = b'" + "\\x00" * 1100 + "'\n", "literals", "written in 4,400")
        self.assertOneBroken(HEADER + GOOD_BODY + "S = '" + "\\n" * 2049 + "'\n", "literals", "written in 4,098")
        self.assertOneBroken(HEADER + GOOD_BODY + "def f(x):\n    return f'" + "a" * 3000 + "{x}" + "b" * 3000 + "'\n",
                             "literals", "an f-string literal written in 6,003")
        self.assertEqual(self.check(HEADER + GOOD_BODY + 'R = r"""' + "y" * 4096 + '"""\n')[0], [])
        for digits in ("012", "\u0661\u0662", "12 "):
            problems, info = self.check(HEADER.replace("12pct", digits + "pct") + GOOD_BODY)
            self.assertEqual([p[:7] for p in problems], ["header:"], (digits, problems))
            self.assertIsNone(info["band"])

    def test_names_the_rules_trust_are_what_they_say(self):
        """A second reviewer ran code at import through names the rules trusted by spelling (a class
        named triton, a rebound property, a class body's own torch), a property companion of a name
        since rebound, and an augmented assignment to an imported object; each now breaks `inert`,
        each shown to run code when executed as written."""
        runs = ("class triton:\n    jit = lambda f: print('x')\n\n\n@triton.jit\ndef k():\n    pass",
                "property = lambda f: print('x')\n\n\n@property\ndef k():\n    pass",
                "class C:\n    class torch:\n        set_x = print\n    torch.set_x('x')",
                "class K:\n    setter = lambda f: print('x')\n\n\nclass D:\n    @property\n    def p(self):\n"
                "        pass\n    p = K\n\n    @p.setter\n    def q(self):\n        pass")
        for body in runs:
            calls = []
            exec(compile(body, "entry", "exec"), {"print": lambda *a, **k: calls.append(a)})
            self.assertTrue(calls, body)
            problems, _ = self.check(HEADER + GOOD_BODY + body + "\n")
            self.assertTrue(problems and all(p.startswith("inert:") for p in problems), (body, problems))
        for body in ("from os import environ\nenviron |= {'A': '1'}", "from sys import path\npath += ['/x']",
                     "class C:\n    import os as torch\n    torch.set_blocking(0, True)",
                     "import os\nE = os.environ\nE |= {'A': '1'}", "environ = {}\nfrom os import *"):
            problems, _ = self.check(HEADER + GOOD_BODY + body + "\n")
            self.assertTrue(problems and all(p.startswith("inert:") for p in problems), (body, problems))
        # A third reviewer's: an Enum runs its own __init__ for each member as the class is made, and a
        # module's own __getattr__ runs on a missing attribute read at import; shown, then refused.
        for body in ("import enum\n\n\nclass E(enum.Enum):\n    a = 1\n\n    def __init__(self, v):\n        print('x')",
                     "import sys\n\n\ndef __getattr__(n):\n    print('x')\n\n\nX = sys.modules[__name__].anything"):
            calls = []
            module = types.ModuleType("entry_probe")
            module.print = lambda *a, **k: calls.append(a)
            sys.modules["entry_probe"] = module
            try:
                exec(compile(body.replace("__name__", "'entry_probe'"), "entry", "exec"), module.__dict__)
            finally:
                del sys.modules["entry_probe"]
            self.assertTrue(calls, body)
            problems, _ = self.check(HEADER + GOOD_BODY + body + "\n")
            # `sys.modules[__name__]` is refused too: a subscript of what is not a constant.
            self.assertEqual([p.split(":")[0] for p in problems], ["inert"] * (2 if "sys.modules" in body else 1),
                             (body, problems))
        # What users write stays allowed: a constant updated in place, a property and its setter, the
        # wrappers of modules imported as themselves, settings inside a class body.
        fine = ("X = 1\nX += 2\n\n\nclass D:\n    @property\n    def p(self):\n        return 1\n\n    @p.setter\n"
                "    def p(self, v):\n        pass\n\n    torch.set_num_threads(1)\n\n\n"
                "torch.autograd.set_detect_anomaly(False)\ntorch._inductor.config.triton.cudagraphs = False\n")
        self.assertEqual(self.check(HEADER + GOOD_BODY + fine)[0], [])

    def test_constants_are_worked_out_from_literals_only(self):
        """The published rule allows constant assignments only; a subscript, operator, test or
        unpacking of an imported object runs that object's code at import (`os.environ["HOME"]`
        reads the environment: shown here by running each on a recording stand-in), so each is
        refused, in one line naming its line and the part that is not constant. Aliases of a module's
        names and values worked out from literals stay allowed, as does every exported entry."""
        class Recording:
            def __init__(self):
                self.seen = []

            def __getitem__(self, key):
                self.seen.append("getitem")
                return "x"

            def __iter__(self):
                self.seen.append("iter")
                return iter(("a", "b"))

            def __bool__(self):
                self.seen.append("bool")
                return True

            def keys(self):
                self.seen.append("keys")
                return ["a"]

        prefix = HEADER + "import os\n" + GOOD_BODY
        runs = (('X = os.environ["HOME"]', 0, "`os.environ['HOME']` subscripts `os.environ`"),
                ('X = "%(HOME)s" % os.environ', 0, "`'%(HOME)s' % os.environ` applies % to `os.environ`"),
                ("X = 1 if os.environ else 2", 0, "tests `os.environ`"),
                ("A, B = os.environ", 0, "it unpacks `os.environ`"),
                ("X = [*os.environ]", 0, "`*os.environ` unpacks `os.environ`"),
                ("X = {**os.environ}", 0, "unpacks `os.environ`"),
                ('E = os.environ\nX = E["HOME"]', 1, "`E['HOME']` subscripts `E`"),
                ("X = 1\nX += os.environ['N']", 1, "subscripts `os.environ`"),
                ('def f(home=os.environ["HOME"]):\n    return home', 0,
                 "a default argument of f is not constant: `os.environ['HOME']` subscripts"),
                ('class C:\n    HOME = os.environ["HOME"]', 1, "class C assigns a value that is not constant"))
        for body, at, fragment in runs:
            environ = Recording()
            try:
                exec(compile(body, "entry", "exec"), {"os": types.SimpleNamespace(environ=environ)})
            except TypeError:
                pass  # `1 += "x"`: the subscript ran all the same
            self.assertTrue(environ.seen, body)
            problems, _ = self.check(prefix + body + "\n")
            self.assertEqual(len(problems), 1, (body, problems))
            line = prefix.count("\n") + 1 + at
            self.assertTrue(problems[0].startswith(f"inert: line {line}: "), (body, problems))
            self.assertIn(fragment, problems[0])
            self.assertIn("not constant", problems[0])
        for body, fragment in (('torch.set_num_threads(os.environ["N"])', "a torch setting's argument is not constant"),
                               ("X = np.float32 * 2", "applies * to `np.float32`"),
                               ('X = "".__class__', "reads a private attribute (__class__)"),
                               ("X = os.getcwd()", "`os.getcwd()` is a call")):
            problems, _ = self.check(prefix + "import numpy as np\n" + body + "\n")
            self.assertEqual(len(problems), 1, (body, problems))
            self.assertIn(fragment, problems[0])
        fine = ("import numpy as np\nF4, F8, U4 = np.float32, np.float64, np.uint32\nE = os.environ\nA = 3\n"
                "B = A * 2 + 1\nCONFIG = {'width': 96, 'depth': 2}\nW = CONFIG['width'] // 2\nJ = ', '.join\n"
                "K = {np.float32: 4, 'n': (A, np.int64)}\nX = 1\nX += 2\nX += B\nZ = W if A > 2 else -W\n"
                "L = lambda k=W: k\n\n\nclass C:\n    N = A + 1\n    M = N * 2\n\n\n"
                "def f(k=W * 2, t=np.float32) -> tuple[int, int]:\n    return k, os.environ['HOME']\n")
        self.assertEqual(self.check(prefix + fine)[0], [])
        # Every entry this tree exports, one a band of bench/race.json, and rev88.
        with open(os.path.join(ROOT, "bench", "race.json")) as f:
            bands = [b["band"] for b in json.load(f)["bands"]]
        with tempfile.TemporaryDirectory() as tmp:
            for band in bands + ["rev88"]:
                out = os.path.join(tmp, f"entry-{band}.py")
                args = ["--from", os.path.join(ROOT, "bench", "race.json"), "--band", band] if band != "rev88" else \
                    ["--band", "12"]
                p = subprocess.run([REVGRAPH, "export", *args, "--output", out], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(rules.check_file(out)[0], [], band)

    def test_several_broken_rules_are_one_line_each(self):
        text = "# no header\n" + GOOD_BODY.replace("def custom_kernel", "def other") + "print(1)\n"
        problems, _ = self.check(text)
        self.assertEqual(sorted(p.split(":")[0] for p in problems), ["header", "header", "inert", "kernel"], problems)

    def test_check_command(self):
        p = race("check", CENTROID)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(p.stdout.strip().splitlines()[-1].startswith("race: PASS"), p.stdout)
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.py")
            with open(bad, "w") as f:
                f.write(HEADER.replace("A100", "H100") + GOOD_BODY + "print(1)\n")
            p = race("check", bad)
            self.assertEqual(p.returncode, 1)
            out = p.stdout.strip().splitlines()
            self.assertEqual(len(out), 3, out)
            self.assertTrue(out[0].startswith(bad + ": header: line 2") and out[1].startswith(bad + ": inert:"), out)
            self.assertTrue(out[2].startswith("race: FAIL"), out)
            p = race("check", os.path.join(tmp, "missing.py"))
            self.assertEqual((p.returncode, last_line(p)[:12]), (1, "race: error:"))


class Usage(unittest.TestCase):
    def test_a_refusal_on_the_default_seed_is_one_line(self):
        """The default seed's notice comes when the draws are made, after every check: a refusal
        before any work is its one error line."""
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, "none.json")
            for args in (["engine", "--band", 12, "--idx-dir", tmp, "--config", missing],
                         ["draws", "--idx-dir", tmp, "--output", os.path.join(tmp, "no", "d.npz")],
                         ["draws", "--idx-dir", tmp, "--output", os.path.join(tmp, "d.npz")]):  # no IDX files
                p = race(*args)
                self.assertNotEqual(p.returncode, 0, p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, (args, p.stderr))
                self.assertTrue(p.stderr.startswith("race: error: "), p.stderr)
            # run reads the t10k files too (its warm-up): a folder of the train files alone is refused
            # in one line, after the training pool was read.
            if IDX is not None and not TORCH:
                train_only = os.path.join(tmp, "train-only")
                os.mkdir(train_only)
                for name in os.listdir(IDX):
                    if name.startswith("train-"):
                        os.symlink(os.path.join(IDX, name), os.path.join(train_only, name))
                entry = os.path.join(tmp, "e.py")
                with open(entry, "w") as f:
                    f.write(HEADER + GOOD_BODY)
                p = race("run", entry, "--idx-dir", train_only, "--device", "cpu")
                self.assertNotEqual(p.returncode, 0, p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertIn("t10k", p.stderr)

    def test_seeds_sharing_a_draw(self):
        """draws.shares_draw_seeds against its definition, two runs with a draw seed in common (draw i
        of seed s from s + 13 i, i = 1..11); and `choose` refuses a selection seed that shares one
        with the default seed, which judges the choice, before any work."""
        for d in range(-200, 201):
            a, b = DEFAULT_SEED + d, DEFAULT_SEED
            common = any(a + 13 * i == b + 13 * j for i in range(1, 12) for j in range(1, 12))
            self.assertEqual(draws.shares_draw_seeds(a, b), common, d)
        with tempfile.TemporaryDirectory() as tmp:
            for seed, shares in ((DEFAULT_SEED - 130, True), (DEFAULT_SEED + 143, False)):
                p = race("choose", "shortlist", "--work", tmp, "--results", "s1", "--seeds", seed,
                         "--output", os.path.join(tmp, "out.json"))
                if shares:
                    self.assertEqual(p.returncode, 1, p.stderr)
                    self.assertEqual(last_line(p), f"race: error: seed {seed} shares draws with {DEFAULT_SEED}, the "
                                                   "default local seed, which judges the choice: not a selection seed")
                else:  # past the seed check: no results in the work folder
                    self.assertNotIn("not a selection seed", p.stderr)

    def test_bands_and_backends_are_usage_mistakes(self):
        """engine takes the leaderboards only, as check and revgraph export do (rules.LEADERBOARDS),
        and its two backends; every usage mistake exits 2 with one line, before any work."""
        self.assertEqual(rules.LEADERBOARDS, (12, 8, 5, 3, 2))
        # The engine's own list (qualify::leaderboard_bands(): revgraph.LEADERBOARD_BANDS, and what
        # `revgraph export` takes) is the same: each of these is taken, and bands beside them are not.
        if REVGRAPH_PKG is not None:
            self.assertEqual(REVGRAPH_PKG.LEADERBOARD_BANDS, tuple(map(str, rules.LEADERBOARDS)))
        for band in [*rules.LEADERBOARDS, 7, 4, 10]:
            p = subprocess.run([REVGRAPH, "export", "--band", str(band), "--quiet"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0 if band in rules.LEADERBOARDS else 2, (band, p.stderr))
        self.assertEqual([rules.leaderboard(b) for b in ("12", "8", "5.0", " 3", "2")], ["12", "8", "5", "3", "2"])
        for band in ("12.5", "7", "foo", "0", "100", "nan"):
            with self.assertRaises(ValueError):
                rules.leaderboard(band)
            p = race("engine", "--band", band, "--idx-dir", "/nonexistent")
            self.assertEqual(p.returncode, 2, (band, p.stderr))
            self.assertEqual(p.stderr.splitlines(), [f"race: error: argument --band: band {band!r} is not a "
                                                     f"leaderboard of the race (12, 8, 5, 3 or 2)"])
        for args in (("--backend", "cuda"), ("--from", "bench/race.json", "--set", "depth=1"),
                     ("--from", "bench/race.json", "--config", "c.json")):
            p = race("engine", "--band", 12, "--seed", 1, "--idx-dir", "/nonexistent", *args)
            self.assertEqual((p.returncode, len(p.stderr.splitlines())), (2, 1), (args, p.stderr))
            self.assertTrue(last_line(p).startswith("race: error:"), p.stderr)
        p = race("choose", "shortlist", "--work", "/nonexistent", "--results", "x", "--seeds", 1, "--bands", "7",
                 "--output", "/nonexistent/s.json")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("(12, 8, 5, 3 or 2)", last_line(p))

    def test_integers_out_of_range_are_usage_mistakes(self):
        """Counts below their least, negative or repeated seeds, a seed past 64 bits, a number of 5,000
        digits: exit 2, one short line that does not echo the text whole, before any file is read."""
        shortlist = ("choose", "shortlist", "--work", "/nonexistent", "--results", "x", "--output", "/nonexistent/s")
        confirm = ("choose", "confirm", "--work", "/nonexistent", "--results", "x", "--seeds", 1)
        draws_ = ("draws", "--idx-dir", "/nonexistent", "--output", "/nonexistent/d.npz")
        for args, fragment in (((*shortlist, "--seeds", -5), "-5: an integer 0..18446744073709551615"),
                               ((*shortlist, "--seeds", 1, "--top", 0), "0: an integer 1 or more"),
                               ((*shortlist, "--seeds", 1, "--top", -1), "-1: an integer 1 or more"),
                               ((*shortlist, "--seeds", 7, 9, 7), "--seeds names 7 twice"),
                               ((*confirm, "--need", 0), "an integer 1 or more"),
                               ((*confirm, "--most", 0), "an integer 1 or more"),
                               ((*confirm, "--jobs", -1), "-1: an integer 0 or more"),
                               ((*draws_, "--seed", 2**64), "18446744073709551616: an integer 0.."),
                               ((*draws_, "--seed", "1e3"), "1e3: an integer 0.."),
                               ((*draws_, "--case-seed", "9" * 5000, "--secret", 1), "9999...: an integer 0..")):
            p = race(*args)
            self.assertEqual(p.returncode, 2, (args[:3], p.stderr[-300:]))
            self.assertEqual(p.stderr.splitlines(), [last_line(p)], p.stderr[-300:])
            self.assertTrue(last_line(p).startswith("race: error:"), p.stderr[-300:])
            self.assertIn(fragment, last_line(p))
            self.assertLess(len(last_line(p)), 200)
        # The largest seed is taken: its draws are made (or here, the missing folder is what is said).
        p = race(*draws_, "--case-seed", 2**64 - 1, "--secret", 2**64 - 1)
        self.assertEqual((p.returncode, last_line(p)),
                         (1, "race: error: /nonexistent/d.npz: the folder /nonexistent does not exist"), p.stderr)


    def test_an_empty_path_is_a_usage_mistake(self):
        """`--idx-dir "$(tools/fetch-mnist)"` is `--idx-dir ""` where the fetch failed: a usage mistake
        (exit 2) in one line that says so, before any work, as for every path option and ENTRY.py;
        never ": not a folder", nor an option dropped (`--fashion-dir ""` skipping the hold-out,
        `--report ""` writing no report, `--task-dir ""` no task archives)."""
        hint = " (did tools/fetch-mnist fail?)"
        run = ("run", "/nonexistent/e.py", "--idx-dir", "/nonexistent")
        engine = ("engine", "--band", 12, "--seed", 1, "--idx-dir", "/nonexistent")
        draws_ = ("draws", "--idx-dir", "/nonexistent", "--seed", 1, "--output", "/nonexistent/d.npz")
        shortlist = ("choose", "shortlist", "--seeds", 1, "--output", "/nonexistent/s.json")
        for args, option, why in ((("run", "/nonexistent/e.py", "--idx-dir", ""), "--idx-dir", hint),
                                  (("engine", "--band", 12, "--idx-dir", ""), "--idx-dir", hint),
                                  (("draws", "--idx-dir", "", "--output", "/nonexistent/d.npz"), "--idx-dir", hint),
                                  (("run", "", "--idx-dir", "/nonexistent"), "ENTRY.py", ""),
                                  (("check", ""), "ENTRY.py", ""),
                                  ((*run, "--fashion-dir", ""), "--fashion-dir", ""),
                                  ((*run, "--report", ""), "--report", ""),
                                  ((*run, "--build", ""), "--build", ""),
                                  ((*engine, "--from", ""), "--from", ""),
                                  ((*engine, "--config", ""), "--config", ""),
                                  ((*engine, "--report", ""), "--report", ""),
                                  (("draws", "--idx-dir", "/nonexistent", "--output", ""), "--output", ""),
                                  ((*draws_, "--task-dir", ""), "--task-dir", ""),
                                  ((*shortlist, "--work", "", "--results", "x"), "--work", ""),
                                  ((*shortlist, "--work", "/nonexistent", "--results", "x", ""), "--results", ""),
                                  (("choose", "verified", "--race", ""), "--race", "")):
            p = race(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr[-300:]))
            self.assertEqual(p.stderr.splitlines(), [f"race: error: argument {option}: an empty path{why}"], args)
            self.assertEqual(p.stdout, "", args)

# ------------------------------------------------------------------------------------------ verdict
FLOORS = {1200: 8650, 800: 9050, 500: 9350, 300: 9550, 200: 9650}  # the published per-draw floors


class Verdict(unittest.TestCase):
    def test_band_boundaries(self):
        need("package")
        for bp, floor in FLOORS.items():
            band = str(bp // 100)
            required = -(-110000 * (10000 - bp) // 10000)  # ceil, in integers
            self.assertEqual(floor, -(-10000 * (10000 - bp - 150) // 10000))
            base = [required // 11] * 11
            base[0] += required - sum(base)
            self.assertGreaterEqual(min(base), floor)
            v = verdict.judge_band(base, band, REVGRAPH_PKG)
            self.assertEqual((v["required_correct"], v["per_draw_floor"], v["passed"]), (required, floor, True), v)
            short = list(base)
            short[3] -= 1
            v = verdict.judge_band(short, band, REVGRAPH_PKG)
            self.assertEqual((v["meets_total"], v["meets_floor"], v["passed"]), (False, True, False), v)
            # One draw at the floor passes, one below it fails however large the total.
            at = [floor] + [min(10000, -(-(required - floor) // 10))] * 10
            self.assertGreaterEqual(sum(at), required)
            self.assertTrue(verdict.judge_band(at, band, REVGRAPH_PKG)["passed"])
            below = [floor - 1] + [10000] * 10
            v = verdict.judge_band(below, band, REVGRAPH_PKG)
            self.assertEqual((v["meets_total"], v["meets_floor"], v["draws_below_floor"], v["passed"]),
                             (True, False, [1], False), v)
        self.assertEqual(verdict.band_basis_points("12"), 1200)
        self.assertIsNone(verdict.judge_band([9000] * 11, "12", None, "no package")["passed"])

    def test_a_band_that_is_no_leaderboard_is_refused_in_one_line(self):
        """The harness judges the race's leaderboards only (docs/race.md: `--band` and the header
        take no other): verdict once took any band to hundredths (7.5 judged, 12.001 refused with a
        message of its own while the engine takes nine decimals). Now one rule, rules.leaderboard's:
        a leaderboard in any spelling the harness takes, anything else one line naming them."""
        for band, bp in (("12", 1200), ("12.0", 1200), (" 8 ", 800), (12, 1200), ("2", 200), (5, 500)):
            self.assertEqual(verdict.band_basis_points(band), bp, band)
        for band in ("7.5", "7", "12.5", "12.001", "12.000000001", "0", "100", "12%", "", "nan", "inf", 7):
            with self.assertRaises(verdict.RaceError) as e:
                verdict.band_basis_points(band)
            self.assertEqual(str(e.exception), f"band {band!r} is not a leaderboard of the race "
                                               f"({rules.LEADERBOARD_WORDS})", band)
            with self.assertRaises(verdict.RaceError):
                verdict.judge_band([9000] * 11, band, None, "no package")

    def test_the_binary_gives_the_same_rule(self):
        """`revgraph band`, what the harness asks where the package does not import: the published
        floors and this file's integer ceil, and an error in one line for a bad band."""
        rule = package.BinaryBandRule(REVGRAPH)
        for bp, floor in FLOORS.items():
            got = rule.band_rule(str(bp // 100), 110000, 10000)
            self.assertEqual(got, {"required_correct": -(-110000 * (10000 - bp) // 10000), "per_draw_floor": floor})
        self.assertEqual(rule.band_rule("7.5", 110000, 10000)["required_correct"], 101750)
        with self.assertRaises(ValueError) as e:
            rule.band_rule("12%", 110000, 10000)
        self.assertEqual(len(str(e.exception).splitlines()), 1)
        self.assertIn("band", str(e.exception))
        # The verdict too: the published floors' edges, as the package judges them.
        for counts in ([8650] + [8815] * 10, [8650] + [8815] * 9 + [8814], [9900, 8649] + [9900] * 9):
            got = rule.band_verdict("12", counts, 10000)
            self.assertEqual((got["passed"], got["total_correct"], got["required_correct"], got["per_draw_floor"]),
                             (sum(counts) >= 96800 and min(counts) >= 8650, sum(counts), 96800, 8650), counts)
            self.assertEqual(got["draws_below_floor"], [k + 1 for k, c in enumerate(counts) if c < 8650])
            if REVGRAPH_PKG is not None:
                self.assertEqual(got, REVGRAPH_PKG.band_verdict("12", counts, 10000))
        # The report says which gave the verdict: the package, or the binary asked in its place.
        self.assertTrue(verdict.judge_band([9000] * 11, "12", rule)["rule"].startswith(f"{REVGRAPH} band --correct"))
        if REVGRAPH_PKG is not None:
            self.assertTrue(verdict.judge_band([9000] * 11, "12", REVGRAPH_PKG)["rule"].startswith("revgraph.band_verdict"))
        with self.assertRaises(ValueError) as e:
            rule.band_verdict("12", [10001], 10000)
        self.assertEqual(str(e.exception), "--correct: draw 1: 10001 correct of 10000")

    def test_the_binary_is_asked_with_the_library_path_it_is_given(self):
        """On a GPU machine the build's revgraph may need libraries the loader does not find (a packed
        build's lib/, the toolkit's runtime): $REVGRAPH_LD_PATH (tools/gpu-check sets it) goes on
        `revgraph band`'s loader path alone, never into this process's environment (which runs torch
        with its own CUDA libraries)."""
        with tempfile.TemporaryDirectory() as tmp:
            exe = os.path.join(tmp, "revgraph")
            with open(exe, "w") as f:  # answers with the loader path it was given
                f.write('#!/bin/sh\nprintf \'{"required_correct": 1, "per_draw_floor": 2, "lib": "%s"}\' '
                        '"$LD_LIBRARY_PATH"\n')
            os.chmod(exe, 0o755)
            before = dict(os.environ)
            with mock.patch.dict(os.environ, {"LD_LIBRARY_PATH": "/elsewhere"}):
                os.environ.pop("REVGRAPH_LD_PATH", None)
                self.assertEqual(package.BinaryBandRule(exe)._ask("12", 10000, "--total", "110000")["lib"],
                                 "/elsewhere")  # none given: the environment as it is
                os.environ["REVGRAPH_LD_PATH"] = "/packed/lib:/toolkit/lib"
                self.assertEqual(package.BinaryBandRule(exe)._ask("12", 10000, "--total", "110000")["lib"],
                                 "/packed/lib:/toolkit/lib:/elsewhere")
                self.assertEqual(os.environ["LD_LIBRARY_PATH"], "/elsewhere")
            self.assertEqual(dict(os.environ), before)

    def test_holdout_and_times(self):
        self.assertTrue(verdict.judge_holdout([1500, 1500])["passed"])
        self.assertFalse(verdict.judge_holdout([1500, 1499])["passed"])
        self.assertEqual(verdict.judge_holdout([], skipped_why="x")["status"], "skipped")
        t = verdict.judge_times([1.0] * 12 + [4.0])
        self.assertEqual((t["consistency_limit_ms"], t["consistent"], t["passed"]), (4.0, True, True))
        self.assertEqual(t["mean_ms"], (12 + 4.0) / 13)
        self.assertFalse(verdict.judge_times([1.0] * 12 + [4.001])["consistent"])
        t = verdict.judge_times([60000.5] * 13)
        self.assertEqual((t["consistent"], t["calls_over_60s"][:2], t["passed"]), (True, [0, 1], False))


# -------------------------------------------------------------------------------------------- draws
class Draws(unittest.TestCase):
    def setUp(self):
        need("idx")

    def test_cantor(self):
        self.assertEqual(draws.cantor(3, 4), 3 + 7 * 8 // 2)
        self.assertEqual(draws.cantor(0, 0), 0)
        a, b = 2026120512345, 987654321987654321
        self.assertEqual(draws.cantor(a, b), a + (a + b) * (a + b + 1) // 2)

    def test_scheme_against_this_files_numpy(self):
        images, labels = own_pool()
        pool = draws.load_pool(IDX, count=60000)
        self.assertTrue(pool.official)
        self.assertTrue(np.array_equal(pool.labels, labels))
        self.assertTrue(within_one_step(pool.images[:, 0], images))
        for seed in (DEFAULT_SEED, 11, draws.cantor(5, 2 ** 70)):
            mine, theirs = own_draws(seed), draws.ranked_draws(pool, seed)
            self.assertEqual(len(theirs), 11)
            for k, (m, t) in enumerate(zip(mine, theirs)):
                self.assertEqual((t.index, t.seed), (k + 1, seed + 13 * (k + 1)))
                self.assertTrue(np.array_equal(m["train_rows"], t.train_rows) and np.array_equal(m["test_rows"], t.test_rows))
                self.assertTrue(np.array_equal(m["perm"], t.perm))
                for key in ("train_y", "test_y"):
                    self.assertEqual(getattr(t, key).dtype, np.int64)
                    self.assertTrue(np.array_equal(m[key], getattr(t, key)), (seed, k, key))
                for key in ("train_x", "test_x"):
                    arr = getattr(t, key)
                    self.assertEqual((arr.dtype, arr.shape, arr.flags.c_contiguous), (np.float32, (10000, 1, 9, 9), True))
                    self.assertTrue(within_one_step(m[key], arr), (seed, k, key))
                # Train and query rows come from the two halves: no image in both.
                self.assertEqual(np.intersect1d(t.train_rows, t.test_rows).size, 0)

    def test_resize_against_the_engines_double_precision(self):
        images, labels = own_pool()
        pool = draws.load_pool(IDX, count=60000)
        seed = 2026091400
        with tempfile.TemporaryDirectory() as tmp:
            x, y = os.path.join(tmp, "x.npz"), os.path.join(tmp, "y.npy")
            p = subprocess.run([REVGRAPH, "data", "mnist", "--idx-dir", IDX, "--seed", str(seed), "--output", x,
                                "--test-labels-output", y], capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            with np.load(x) as z:
                engine_train, engine_test = z["train_images"], z["test_images"]
            engine_labels = np.load(y)
        order = np.random.Generator(np.random.PCG64(seed)).permutation(60000)  # the engine's draw (spec.md §9)
        self.assertTrue(np.array_equal(engine_labels, labels[order[10000:20000]]))
        for rows, engine in ((order[:10000], engine_train), (order[10000:20000], engine_test)):
            self.assertTrue(within_float32_sums(engine, pool.images[rows]))
            self.assertTrue(within_float32_sums(engine[:, 0], images[rows]))
            # The judge's float32 sums are not the engine's double ones: some pixels differ (else this
            # check would not be telling the two computations apart).
            self.assertFalse(np.array_equal(engine, pool.images[rows]))

    def test_draws_command(self):
        seed = 11  # = 1 + (1 + 3)(1 + 3 + 1)/2: --case-seed 1 --secret 3
        with tempfile.TemporaryDirectory() as tmp:
            out, tasks = os.path.join(tmp, "d.npz"), os.path.join(tmp, "tasks")
            p = race("draws", "--idx-dir", IDX, "--case-seed", 1, "--secret", 3, "--output", out, "--task-dir", tasks)
            self.assertEqual(p.returncode, 0, p.stderr)
            with np.load(out) as z:
                self.assertEqual(str(z["seed"]), str(seed))
                for i, m in enumerate(own_draws(seed), 1):
                    n = f"{i:02d}"
                    for key in ("train_y", "test_y", "train_rows", "test_rows"):
                        self.assertTrue(np.array_equal(z[f"{key}_{n}"], m[key]), (i, key))
                    self.assertTrue(np.array_equal(z[f"label_perm_{n}"], m["perm"]))
                    for key in ("train_x", "test_x"):
                        self.assertTrue(within_one_step(z[f"{key}_{n}"], m[key]), (i, key))
            self.assertEqual(sorted(os.listdir(tasks)), sorted([f"draw-{i:02d}.npz" for i in range(1, 12)]
                                                                + [f"draw-{i:02d}-labels.npy" for i in range(1, 12)]))
            m = own_draws(seed)[0]
            with np.load(os.path.join(tasks, "draw-01.npz")) as z:
                self.assertEqual(sorted(z.files), ["test_images", "train_images", "train_labels"])
                self.assertTrue(np.array_equal(z["train_labels"], m["train_y"]))
                self.assertTrue(within_one_step(z["test_images"], m["test_x"]))
            self.assertTrue(np.array_equal(np.load(os.path.join(tasks, "draw-01-labels.npy")), m["test_y"]))
            # The archive is a revgraph task: the command runs it.
            r = subprocess.run([REVGRAPH, "run", "--backend", "cpu", "--set", "epochs=1", "--input",
                                os.path.join(tasks, "draw-01.npz"), "--test-labels",
                                os.path.join(tasks, "draw-01-labels.npy"), "--output", os.path.join(tmp, "r.json"),
                                "--quiet"], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            # Never over an input; usage mistakes exit 2.
            before = file_sha256(os.path.join(IDX, "train-labels-idx1-ubyte"))
            p = race("draws", "--idx-dir", IDX, "--output", os.path.join(IDX, "train-labels-idx1-ubyte"))
            self.assertEqual(p.returncode, 2)
            self.assertIn("input", last_line(p))
            after = file_sha256(os.path.join(IDX, "train-labels-idx1-ubyte"))
            self.assertEqual(before, after)
            for args in (("--seed", 1, "--case-seed", 2, "--secret", 3), ("--case-seed", 2), ("--seed", -4)):
                p = race("draws", "--idx-dir", IDX, "--output", os.path.join(tmp, "x.npz"), *args)
                self.assertEqual(p.returncode, 2, args)
                self.assertTrue(last_line(p).startswith("race: error:"), p.stderr)
            # An output that is no file's path: one line, nothing written (it was a traceback for ""; an
            # empty path is now a usage mistake, as for every path option).
            for output, status, line in (("", 2, "race: error: argument --output: an empty path"),
                                         (os.path.join(tmp, "new") + os.sep, 1,
                                          f"race: error: {os.path.join(tmp, 'new') + os.sep!r}: an output is a file's "
                                          f"path, not empty nor a folder's")):
                p = race("draws", "--idx-dir", IDX, "--output", output)
                self.assertEqual((p.returncode, last_line(p)), (status, line), p.stderr)
                self.assertEqual([line for line in p.stderr.splitlines() if "error" in line], [last_line(p)])

    def test_a_damaged_gz_is_one_line(self):
        """A .gz whose header is sound and whose deflate body is not (zlib.error, not an OSError): one line
        naming the file, exit 1."""
        with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as elsewhere:
            for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
                with open(os.path.join(IDX, name), "rb") as f:
                    body = bytearray(gzip.compress(f.read()))
                if "images" in name:
                    body[200:260] = bytes(b ^ 0xFF for b in body[200:260])
                with open(os.path.join(tmp, name + ".gz"), "wb") as f:
                    f.write(body)
            out = os.path.join(elsewhere, "d.npz")  # never among the inputs
            p = race("draws", "--idx-dir", tmp, "--output", out)
            self.assertEqual(p.returncode, 1, p.stderr[-300:])
            self.assertEqual([line for line in p.stderr.splitlines() if "error" in line.lower()], [last_line(p)])
            self.assertTrue(last_line(p).startswith(f"race: error: {tmp}/train-images-idx3-ubyte.gz: "), p.stderr)
            self.assertFalse(os.path.exists(out))


    def test_draws_outputs_never_replace_each_other(self):
        """DRAWS.npz named as one of --task-dir's files: refused in one line before anything is written
        (it was written, then replaced by a 3-array task archive)."""
        with tempfile.TemporaryDirectory() as tmp:
            col = os.path.join(tmp, "col")
            for name in ("draw-01.npz", "draw-02-labels.npy", os.path.join("..", "col", "draw-11.npz")):
                p = race("draws", "--idx-dir", IDX, "--seed", 3, "--output", os.path.join(col, name), "--task-dir", col)
                self.assertEqual(p.returncode, 2, (name, p.stderr))  # a usage mistake, as the engine's
                self.assertIn("would write it twice", last_line(p))
                self.assertEqual([line for line in p.stderr.splitlines() if "error" in line], [last_line(p)])
                self.assertFalse(os.path.exists(col), name)
            # DRAWS.npz of another name in the --task-dir the command makes: written there, beside the archives.
            p = race("draws", "--idx-dir", IDX, "--seed", 3, "--output", os.path.join(col, "all.npz"), "--task-dir", col)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(os.listdir(col)), 1 + 2 * 11)
            with np.load(os.path.join(col, "all.npz")) as z:
                self.assertEqual(len(z.files), 1 + 7 * 11)

    def test_sigterm_and_ctrl_c_leave_no_temporary(self):
        """SIGTERM or Ctrl-C (SIGINT) while an output is being written: the temporary beside it is
        removed, one error line is said (Ctrl-C gave a traceback), and the process dies of the signal."""
        for sig, said in ((signal.SIGTERM, "race: error: terminated (SIGTERM)"),
                          (signal.SIGINT, "race: error: interrupted (Ctrl-C)")):
            with self.subTest(signal=sig):
                self.signal_while_writing(sig, said)
        # --output is never put among the IDX files (the t10k files `run` reads live there).
        never = os.path.join(IDX, "never.npz")
        try:
            p = race("draws", "--idx-dir", IDX, "--seed", 3, "--output", never)
            self.assertEqual((p.returncode, last_line(p)), (2, f"race: error: {never}: is in the IDX folder; the "
                                                               f"race never writes among its inputs"))
            self.assertFalse(os.path.exists(never))
        finally:  # the IDX folder is the shared cache: whatever a regression wrote goes
            if os.path.exists(never):
                os.unlink(never)

    def test_a_stopped_draws_leaves_one_seeds_files(self):
        """SIGTERM as the first new file lands in a --task-dir of another seed's draws: every file is
        then the old seed's or every one the new seed's, never some of each (written one by one, the
        folder held one new file and 22 old, and read as one seed's draws)."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "k.npz")
            p = race("draws", "--idx-dir", IDX, "--seed", 5, "--output", out, "--task-dir", tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            names = sorted(os.listdir(tmp))
            old = {n: file_sha256(os.path.join(tmp, n)) for n in names}
            inode = os.stat(out).st_ino
            p = subprocess.Popen([sys.executable, RACE, "draws", "--idx-dir", IDX, "--seed", "3", "--output", out,
                                  "--task-dir", tmp], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, REVGRAPH_BUILD=BUILD))
            while p.poll() is None and os.stat(out).st_ino == inode:
                time.sleep(0.001)
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=120)
            self.assertIn(p.returncode, (0, -signal.SIGTERM), err)
            self.assertEqual(sorted(os.listdir(tmp)), names)  # nor a temporary left
            changed = [n for n in names if file_sha256(os.path.join(tmp, n)) != old[n]]
            self.assertIn(len(changed), (0, len(names)), changed)

    def test_a_signal_during_the_renames_waits_for_the_last(self):
        """report.write_all: a SIGTERM sent to the process while the renames run, with another thread
        alive that masks nothing (numpy's BLAS pool does so), is acted on only after the last rename.
        A signal mask held it for the calling thread only, and the signal reached the other one."""
        from race_harness import report

        class Stopped(Exception):
            pass

        def stop(signum, frame):
            raise Stopped()

        landed, real_replace = [], os.replace

        def replace(a, b):
            if b.endswith("f1"):  # the second rename: a SIGTERM to the process, and time to act on it
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.2)
            real_replace(a, b)
            landed.append(os.path.basename(b))

        pool = threading.Event()
        worker = threading.Thread(target=pool.wait, daemon=True)
        worker.start()
        before = signal.signal(signal.SIGTERM, stop)
        try:
            with tempfile.TemporaryDirectory() as tmp, mock.patch("os.replace", replace):
                with self.assertRaises(Stopped):
                    report.write_all([(os.path.join(tmp, f"f{i}"), lambda f: f.write(b"x")) for i in range(5)])
                self.assertEqual(landed, [f"f{i}" for i in range(5)])
                self.assertEqual(sorted(os.listdir(tmp)), landed)  # and no temporary
        finally:
            signal.signal(signal.SIGTERM, before)
            pool.set()

    def signal_while_writing(self, sig, said):
        with tempfile.TemporaryDirectory() as tmp:
            # The window is the writing of 23 files; on a loaded machine a poll can miss it, so up to
            # three tries (the poll sleeps, not to starve the command on two cores).
            for _ in range(3):
                for n in os.listdir(tmp):
                    os.unlink(os.path.join(tmp, n))
                p = subprocess.Popen([sys.executable, RACE, "draws", "--idx-dir", IDX, "--seed", "3", "--output",
                                      os.path.join(tmp, "k.npz"), "--task-dir", tmp], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=dict(os.environ, REVGRAPH_BUILD=BUILD))
                seen = []
                while p.poll() is None and not seen:
                    seen = [n for n in os.listdir(tmp) if n.endswith(".tmp")]
                    time.sleep(0.002)
                p.send_signal(sig)
                _, err = p.communicate(timeout=120)
                if seen:
                    break
            self.assertTrue(seen, "the command ended before a temporary was seen, three times")
            self.assertEqual(p.returncode, -sig, err)
            self.assertEqual([n for n in os.listdir(tmp) if n.startswith(".")], [])
            self.assertEqual(err.splitlines()[-1][:len(said)], said, err)
            self.assertEqual(len(err.splitlines()), 1, err)


# ---------------------------------------------------------------------------------------- end to end
class Run(unittest.TestCase):
    def setUp(self):
        need("idx", "torch")
        self.tmp = tempfile.mkdtemp(prefix="race-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def entry(self, name, body, header=HEADER):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(header + body)
        return path

    def run_race(self, entry, *extra):
        rep = os.path.join(self.tmp, os.path.basename(entry) + ".report.json")
        p = race("run", entry, "--idx-dir", IDX, "--device", "cpu", "--report", rep, *extra)
        data = None
        if os.path.exists(rep):
            with open(rep) as f:
                data = json.load(f)
        return p, data

    def test_centroid_entry_counts_and_report(self):
        p, rep = self.run_race(CENTROID)
        # A verdict with or without the package: the build's `revgraph band` gives the rule where the
        # package does not import (asan-check's build has none).
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        line = p.stdout.strip().splitlines()[-1]
        expected = load_entry(CENTROID).custom_kernel
        mine = own_draws(DEFAULT_SEED)
        counts = entry_counts(expected, mine)
        ranked = [c for c in rep["calls"] if c["kind"] == "ranked"]
        self.assertEqual([c["draw"] for c in ranked], list(range(1, 12)))
        self.assertEqual([c["correct"] for c in ranked], counts)
        self.assertEqual(rep["totals"]["ranked_correct"], sum(counts))
        self.assertEqual([c["kind"] for c in rep["calls"]], ["warmup"] + ["ranked"] * 11)
        self.assertTrue(all(c["ms"] > 0 for c in rep["calls"]))
        self.assertIn("not Fashion data", rep["warmup"]["what"])
        self.assertEqual(rep["holdout"]["status"], "skipped")
        self.assertIn("hold-out skipped (no --fashion-dir)", line)
        self.assertEqual(rep["seed"], {"seed": DEFAULT_SEED, "source": "default", "default": True})
        self.assertEqual(rep["environment"]["torch"], torch.__version__)
        self.assertEqual(rep["environment"]["numpy"], np.__version__)
        self.assertIn("commit", rep["environment"]["git"])
        self.assertEqual(rep["device"]["kind"], "cpu")
        self.assertEqual(rep["verdict"]["line"], line)
        self.assertTrue(all(r["passed"] for r in rep["rules"]))
        # ~80 %: far below band 12's 96,800.
        required = -(-110000 * 88 // 100)
        self.assertLess(sum(counts), required)
        self.assertTrue(line.startswith(f"race: FAIL band 12 % — {sum(counts):,} / 110,000 (< {required:,})"), line)
        self.assertEqual(rep["band"]["required_correct"], required)
        times = [c["ms"] for c in rep["calls"] if c["timed"]]
        self.assertAlmostEqual(rep["timing"]["mean_ms"], sum(times) / 11)

    def test_verdict_without_the_package_comes_from_the_binary(self):
        """A build folder with the revgraph binary but no Python package (a GPU machine's CUDA
        PyTorch under another Python than the build's): the band's verdict is still given."""
        build = os.path.join(self.tmp, "build-no-python")
        os.makedirs(os.path.join(build, "tools"))
        os.symlink(REVGRAPH, os.path.join(build, "tools", "revgraph"))
        p, rep = self.run_race(CENTROID, "--build", build)
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)  # FAIL: ~80 %, far below band 12
        self.assertEqual(rep["band"]["required_correct"], 96800)
        self.assertEqual(rep["band"]["per_draw_floor"], 8650)
        self.assertIs(rep["band"]["passed"], False)
        # Neither the package nor the binary: every call still made and reported, the band not judged
        # (NO VERDICT, exit 1; or FAIL, exit 3, where this busy machine's CPU times fail consistency).
        empty = os.path.join(self.tmp, "build-empty")
        os.makedirs(empty)
        p, rep = self.run_race(CENTROID, "--build", empty)
        self.assertIn(p.returncode, (1, 3), p.stdout + p.stderr)
        self.assertIn("no band rule", rep["verdict"]["line"])
        self.assertEqual(len([c for c in rep["calls"] if c["kind"] == "ranked"]), 11)
        self.assertIsNone(rep["band"]["passed"])

    def test_holdout_calls(self):
        # A stand-in for Fashion-MNIST's training files: MNIST's t10k images inverted, labels
        # shifted (not MNIST's bytes, which --fashion-dir refuses; the centroid entry learns them:
        # hold-out passes), then noise with random labels (it cannot: hold-out fails).
        fake = os.path.join(self.tmp, "foreign")
        os.mkdir(fake)
        for src, dst, change in (("t10k-images-idx3-ubyte", "train-images-idx3-ubyte", lambda x: 255 - x),
                                 ("t10k-labels-idx1-ubyte", "train-labels-idx1-ubyte", lambda y: (y + 1) % 10)):
            with open(os.path.join(IDX, src), "rb") as f:
                raw = f.read()
            head = 16 if "images" in src else 8
            with open(os.path.join(fake, dst), "wb") as f:
                f.write(raw[:head] + change(np.frombuffer(raw, np.uint8, offset=head)).astype(np.uint8).tobytes())
        p, rep = self.run_race(CENTROID, "--fashion-dir", fake, "--seed", 5)
        self.assertIn(p.returncode, (1, 3), p.stderr)
        kinds = [c["kind"] for c in rep["calls"]]
        self.assertEqual((kinds[0], kinds.count("ranked"), kinds.count("holdout")), ("warmup", 11, 2))
        positions = [k for k, c in enumerate(rep["calls"]) if c["kind"] == "holdout"]
        self.assertEqual(positions, rep["holdout_positions"])
        self.assertEqual(rep["holdout_positions"], [q + 1 for q in draws.holdout_positions(5)])
        self.assertEqual(rep["holdout"]["status"], "passed")
        self.assertEqual(rep["warmup"]["data"], "fashion-train")
        self.assertEqual(rep["timing"]["calls"], 13)
        self.assertIn("hold-out passed", last_line(p))
        rng = np.random.default_rng(0)
        noise = os.path.join(self.tmp, "noise")
        os.mkdir(noise)
        with open(os.path.join(noise, "train-images-idx3-ubyte"), "wb") as f:
            f.write((2051).to_bytes(4, "big") + (20000).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2
                    + rng.integers(0, 256, 20000 * 784, dtype=np.uint8).tobytes())
        with open(os.path.join(noise, "train-labels-idx1-ubyte"), "wb") as f:
            f.write((2049).to_bytes(4, "big") + (20000).to_bytes(4, "big") + rng.integers(0, 10, 20000, dtype=np.uint8).tobytes())
        p, rep = self.run_race(CENTROID, "--fashion-dir", noise, "--seed", 5)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(rep["holdout"]["status"], "failed")
        self.assertLess(rep["holdout"]["mean_percent"], 15)
        self.assertIn("hold-out failed", last_line(p))
        self.assertEqual(rep["verdict"]["result"], "FAIL")

    def test_fashion_dir_that_is_mnist_is_refused(self):
        """--fashion-dir holding MNIST (the --idx-dir itself, or a copy of the official training
        files): one line, exit 1, no call made and no report, never "hold-out passed"."""
        copy = os.path.join(self.tmp, "mnist-copy")
        os.mkdir(copy)
        for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
            shutil.copyfile(os.path.join(IDX, name), os.path.join(copy, name))
        for folder in (IDX, copy):
            p, rep = self.run_race(CENTROID, "--fashion-dir", folder, "--seed", 5)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIsNone(rep)
            self.assertTrue(last_line(p).startswith("race: error: --fashion-dir: "), last_line(p))
            self.assertIn("is MNIST's official train-images-idx3-ubyte, not Fashion-MNIST", last_line(p))
            self.assertNotIn("hold-out", p.stdout)
        # The rule itself, on a pool that is not the official one: a file of the ranked pool is refused too.
        pool = draws.Pool(None, None, [{"path": "/a/train-images-idx3-ubyte", "sha256": "ab" * 32}])
        foreign = draws.Pool(None, None, [{"path": "/b/train-images-idx3-ubyte", "sha256": "ab" * 32}])
        with self.assertRaises(draws.RaceError) as e:
            draws.check_foreign(foreign, pool, "--fashion-dir", "--idx-dir")
        self.assertIn("holds the bytes of --idx-dir's /a/train-images-idx3-ubyte", str(e.exception))

    def test_the_docs_example_failure_is_what_a_run_prints(self):
        """docs/race.md's example of an invalid output, made: the second ranked call returns float32.
        The entry fails (exit 3, its verdict on stdout), as the judge would fail it."""
        with open(os.path.join(ROOT, "docs", "race.md")) as f:
            doc = " ".join(f.read().split())
        example = doc[doc.index("`race: FAIL call ") + 1:]
        example = example[:example.index("`")]
        entry = self.entry("third.py", "import torch\n\nCALLS = [0]\n\n\ndef custom_kernel(data):\n"
                                       "    CALLS[0] += 1\n    out = torch.zeros(10000)\n"
                                       "    return out if CALLS[0] == 3 else out.to(torch.int64)\n")
        p, rep = self.run_race(entry)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(last_line(p), example)
        self.assertEqual(p.stdout.strip().splitlines()[-1], example)
        self.assertEqual([(c["kind"], c["draw"]) for c in rep["calls"]], [("warmup", 0), ("ranked", 1), ("ranked", 2)])

    def test_sandbox_refuses_a_forbidden_open(self):
        secret = os.path.join(self.tmp, "mnist-labels.bin")
        with open(secret, "wb") as f:
            f.write(b"\x00" * 10000)
        entry = self.entry("peek.py", f'''import numpy
import torch

PATH = {secret!r}


def custom_kernel(data):
    labels = numpy.fromfile(PATH, dtype=numpy.uint8)
    return torch.from_numpy(labels.astype("int64"))
''')
        self.assertEqual(rules.check_file(entry)[0], [])
        p, rep = self.run_race(entry)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        line = last_line(p)
        self.assertTrue(line.startswith("race: error: the warm-up call: custom_kernel raised PermissionError: race "
                                        "sandbox: open of"), line)
        self.assertIn("refused (the path contains 'mnist')", line)
        self.assertNotIn("the sandbox refused", line)  # the error names the one path already
        self.assertEqual(rep["sandbox"]["refused"][0]["path"], secret)
        self.assertEqual(rep["verdict"]["result"], "ERROR")
        # os.listdir of the digits' folder is refused too.
        entry = self.entry("look.py", f'''import os
import torch

PATH = {IDX!r}


def custom_kernel(data):
    os.listdir(PATH)
    return torch.zeros(10000, dtype=torch.int64)
''')
        p, _ = self.run_race(entry)
        self.assertEqual(p.returncode, 1)
        self.assertIn("os.listdir of", last_line(p))

    def test_sandbox_refusals_show_in_the_verdict_line(self):
        """An entry that catches the sandbox's refusal goes on (the judge's sandbox only makes the open
        fail): the refusals fail nothing by themselves, but the verdict line says them, how many paths
        and the first, whatever the verdict; and so does an error line that does not name them."""
        cache = os.path.join(self.tmp, "mnist-cache")
        os.mkdir(cache)
        first, second = os.path.join(cache, "labels.bin"), os.path.join(self.tmp, "t10k-labels.npy")
        with open(CENTROID) as f:
            centroid = f.read().split("\n", 2)[2]  # past its two header lines
        entry = self.entry("peeks.py", centroid.replace("def custom_kernel(data):", "def _centroid(data):") + f'''

PATHS = ({first!r}, {second!r})


def custom_kernel(data):
    for path in PATHS:
        try:
            open(path, "rb")
        except OSError:
            pass  # refused: the entry goes on without it
    return _centroid(data)
''')
        self.assertEqual(rules.check_file(entry)[0], [])
        p, rep = self.run_race(entry)
        plain, plain_rep = self.run_race(CENTROID)
        self.assertEqual((p.returncode, plain.returncode), (3, 3), p.stdout + p.stderr)  # the band, as the centroid's
        line = last_line(p)
        self.assertTrue(line.endswith(f"; the sandbox refused 2 paths, first: {first!r}"), line)
        self.assertEqual(line.split(", ranked mean")[0], last_line(plain).split(", ranked mean")[0])
        self.assertEqual(rep["totals"]["per_draw"], plain_rep["totals"]["per_draw"])
        untimed = ("rules", "valid_outputs", "band_total", "band_floor", "holdout")  # CPU times vary here
        self.assertEqual([rep["verdict"]["checks"][k] for k in untimed], [plain_rep["verdict"]["checks"][k] for k in untimed])
        self.assertEqual(len(rep["sandbox"]["refused"]), 2 * 12)  # both paths, at every call
        self.assertNotIn("sandbox", last_line(plain))
        # An error after a refusal the entry caught: the error line says the refusal too.
        entry = self.entry("peek-then-raise.py", f'''import torch


def custom_kernel(data):
    try:
        open({first!r}, "rb")
    except OSError:
        pass
    raise ValueError("no model")
''')
        p, rep = self.run_race(entry)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(last_line(p), f"race: error: the warm-up call: custom_kernel raised ValueError: no model "
                                       f"(peek-then-raise.py line 11); the sandbox refused 1 path, first: {first!r}")
        self.assertEqual(rep["verdict"]["line"], last_line(p))
        # A verdict's word is the rules' alone: a passing run that was refused a path still passes.
        from race_harness import report
        band = {"band": "12", "total_correct": 97000, "total": 110000, "available": True, "meets_total": True,
                "required_correct": 96800, "per_draw_floor": 8650, "meets_floor": True, "worst_draw": 8700}
        times = {"passed": True, "mean_ms": 1.0, "calls": 11, "consistent": True, "calls_over_60s": []}
        holdout = {"status": "skipped", "why": "no --fashion-dir"}
        refused = [{"event": "open", "path": "/d/mnist\nx", "word": "mnist"}, {"event": "open", "path": "/d/mnist\nx",
                                                                           "word": "mnist"}]
        line = report.run_verdict_line("PASS", band, times, holdout, "cpu", "a CPU", "wall", refused)
        self.assertTrue(line.startswith("race: PASS band 12 %"), line)
        self.assertTrue(line.endswith("; the sandbox refused 1 path, first: '/d/mnist\\nx'"), line)
        self.assertEqual(len(line.splitlines()), 1)

    def test_an_entry_in_a_folder_named_so_is_not_refused_its_own_file(self):
        """A traceback (and a warning) reads the entry's lines back: from the rules' bytes, so an
        entry kept under ~/mnist-race/ is judged on what it does, as on the judge's paths."""
        folder = os.path.join(self.tmp, "mnist-race")
        os.mkdir(folder)
        entry = os.path.join(folder, "loud.py")
        with open(entry, "w") as f:
            f.write(HEADER + "import warnings\n\nimport torch\n\n\ndef custom_kernel(data):\n"
                             "    warnings.warn('look')\n    raise ValueError('no model')\n")
        p, rep = self.run_race(entry)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(last_line(p), "race: error: the warm-up call: custom_kernel raised ValueError: no model "
                                       "(loud.py line 10)")
        self.assertEqual(rep["sandbox"]["refused"], [])

    def test_a_pool_that_is_not_the_official_files_is_said_in_the_verdict(self):
        changed = os.path.join(self.tmp, "digits")
        os.mkdir(changed)
        for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                     "t10k-labels-idx1-ubyte"):
            shutil.copyfile(os.path.join(IDX, name), os.path.join(changed, name))
        with open(os.path.join(changed, "train-images-idx3-ubyte"), "r+b") as f:
            f.seek(16 + 28 * 14 + 14)  # a pixel of the first image's middle
            f.write(bytes([255 - f.read(1)[0]]))
        p = race("run", CENTROID, "--idx-dir", changed, "--device", "cpu")
        self.assertIn(p.returncode, (0, 3), p.stderr)
        self.assertTrue(last_line(p).endswith("; the pool is NOT the official MNIST files (the report's sources)"),
                        last_line(p))
        p = race("run", CENTROID, "--idx-dir", IDX, "--device", "cpu")
        self.assertNotIn("NOT the official", last_line(p))

    def test_a_timed_call_that_never_returns_fails_at_the_limit(self):
        """The judge fails any call over 60 s; a call that never returns is stopped past the limit (here
        the limit is made 1 s in the harness's own process) with FAIL, its report and exit 3. The
        warm-up, which compiles, has no limit: it is the first ranked call that hangs."""
        entry = self.entry("hang.py", "import time\n\nimport torch\n\nCALLS = [0]\n\n\ndef custom_kernel(data):\n"
                                      "    CALLS[0] += 1\n    while CALLS[0] == 2:\n        time.sleep(0.01)\n"
                                      "    return torch.zeros(10000, dtype=torch.int64)\n")
        rep = os.path.join(self.tmp, "hang.json")
        code = ("import sys\nfrom race_harness import cli, runner, verdict\nverdict.CALL_LIMIT_MS = 1000.0\n"
                "runner.WATCHDOG_GRACE_S = 0.5\nsys.exit(cli.main(sys.argv[1:]))\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools") + os.pathsep + os.environ.get("PYTHONPATH", ""))
        p = subprocess.run([sys.executable, "-c", code, "run", entry, "--idx-dir", IDX, "--device", "cpu", "--report",
                            rep], capture_output=True, text=True, env=env, timeout=600)
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertEqual(last_line(p), "race: FAIL call 1 (ranked draw 1): custom_kernel still running 1.5 s after it "
                                       "was called (the judge fails any call over 1 s); stopped")
        with open(rep) as f:
            data = json.load(f)
        self.assertEqual(data["verdict"]["result"], "FAIL")
        self.assertEqual([c["kind"] for c in data["calls"]], ["warmup"])

    def test_invalid_outputs_fail_with_one_line(self):
        """An output the protocol does not take is the entry's failure by the judge's rules: FAIL,
        exit 3, the verdict line naming the call and what was wrong (as a broken static rule is), not
        an error of the harness (exit 1)."""
        for name, ret, why in (("f32.py", "torch.zeros(10000)", "returned dtype float32, not one of int64"),
                               ("short.py", "torch.zeros(9999, dtype=torch.int64)", "returned shape (9999,), not (10000,)"),
                               ("ten.py", "torch.full((10000,), 10)", "returned values in 10..10, not in 0..9"),
                               ("array.py", "data[1].numpy()", "returned a numpy.ndarray, not a plain torch.Tensor")):
            entry = self.entry(name, f"import torch\n\n\ndef custom_kernel(data):\n    return {ret}\n")
            p, rep = self.run_race(entry)
            self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
            line = (f"race: FAIL the warm-up call: custom_kernel {why}" +
                    (", int32, int16, uint8, int8" if "dtype" in why else ""))
            self.assertEqual(p.stdout.strip().splitlines()[-1], line)
            self.assertNotIn("race: error", p.stderr)
            self.assertEqual(rep["calls"][-1]["kind"], "warmup")
            self.assertEqual(rep["calls"][-1]["error"], line.split("custom_kernel ", 1)[1])
            self.assertEqual((rep["verdict"]["result"], rep["verdict"]["line"]), ("FAIL", line))
            self.assertIs(rep["verdict"]["checks"]["valid_outputs"], False)
            self.assertNotIn("error", rep)
        from race_harness import runner
        cpu = torch.device("cpu")
        cases = [(torch.zeros(10000, dtype=torch.int64), torch.device("meta"), "not on the inputs' device meta"),
                 (np.zeros(10000, np.int64), cpu, "not a plain torch.Tensor"),
                 (torch.nn.Parameter(torch.zeros(10000), requires_grad=False), cpu, "not a plain torch.Tensor"),
                 (torch.zeros(1, 10000, dtype=torch.int64), cpu, "shape (1, 10000)"),
                 (torch.zeros(10000, dtype=torch.bool), cpu, "dtype bool"),
                 (torch.full((10000,), 10, dtype=torch.uint8), cpu, "values in 10..10"),
                 (torch.full((10000,), -1, dtype=torch.int8), cpu, "values in -1..-1")]
        for out, device, fragment in cases:
            self.assertIn(fragment, runner.validate(torch, out, device, 10000))
        for dtype in (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8):
            self.assertEqual(runner.validate(torch, torch.full((10000,), 9, dtype=dtype), cpu, 10000), "")

    def test_an_entry_without_cuda_python_says_what_it_needs(self):
        """An exported entry imports cuda-python (`from cuda.bindings import ...`) beside torch: where
        the module `cuda` is missing (made so here, whatever this machine has), the one error line
        says the entry needs cuda-python 13 beside CUDA torch; at the import or at a call alike."""
        entry = os.path.join(self.tmp, "entry-12.py")
        p = subprocess.run([REVGRAPH, "export", "--band", "12", "--output", entry], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(entry) as f:
            at = next(k for k, text in enumerate(f, 1) if text.startswith("from cuda.bindings import"))
        lazy = self.entry("lazy.py", "import torch\n\n\ndef custom_kernel(data):\n    from cuda.bindings import nvrtc\n"
                                     "    return nvrtc\n")
        other = self.entry("other.py", "import torch\nimport race_no_such_module\n\n\ndef custom_kernel(data):\n"
                                       "    return data[1]\n")
        # torch's view of a GPU made what the test needs (RACE_TEST_GPU): with one, the hint names
        # cuda-python; without, the CPU way to race the same config.
        code = ("import os\nimport sys\nimport torch\nfrom race_harness import cli\n\n\n"
                "class NoCudaPython:  # this machine without cuda-python\n"
                "    @staticmethod\n    def find_spec(name, path=None, target=None):\n"
                "        if name.split('.')[0] == 'cuda':\n"
                "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n\n\n"
                "torch.cuda.is_available = lambda: os.environ['RACE_TEST_GPU'] == '1'\n"
                "sys.meta_path.insert(0, NoCudaPython)\nsys.exit(cli.main(sys.argv[1:]))\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools") + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   REVGRAPH_BUILD=BUILD)
        hints = {"1": "the entry needs cuda-python 13 (`cuda.bindings`, pip install 'cuda-python>=13') beside a CUDA "
                      "build of torch",
                 "0": "the entry is for a machine with a CUDA GPU and cuda-python 13; here, `tools/race engine` races "
                      "its config's very predictions computed on the CPU (docs/race.md)"}
        for gpu, needs in hints.items():
            for path, line in ((entry, f"race: error: importing {entry} failed: ModuleNotFoundError: No module named "
                                       f"'cuda' (entry-12.py line {at}); {needs}"),
                               (lazy, "race: error: the warm-up call: custom_kernel raised ModuleNotFoundError: No "
                                      f"module named 'cuda' (lazy.py line 7); {needs}"),
                               (other, f"race: error: importing {other} failed: ModuleNotFoundError: No module named "
                                       f"'race_no_such_module' (other.py line 4)")):
                p = subprocess.run([sys.executable, "-c", code, "run", path, "--idx-dir", IDX, "--device", "cpu",
                                    "--seed", "5"], capture_output=True, text=True, env=dict(env, RACE_TEST_GPU=gpu),
                                   timeout=600)
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertEqual(last_line(p), line)

    def test_broken_rule_is_refused_before_import(self):
        marker = os.path.join(self.tmp, "imported")
        entry = self.entry("loud.py", f"import torch\nopen({marker!r}, 'w')\n\n\ndef custom_kernel(data):\n"
                                      f"    return torch.zeros(10000, dtype=torch.int64)\n")
        p, rep = self.run_race(entry)
        self.assertEqual(p.returncode, 3)  # FAIL, as the judge would have it
        self.assertFalse(os.path.exists(marker))
        self.assertTrue(last_line(p).startswith(f"race: FAIL {entry} breaks 1 static rule; it was not imported"),
                        last_line(p))
        self.assertIn(f"{entry}: inert: line 4", p.stdout)
        self.assertNotIn("calls", rep)
        self.assertEqual(rep["verdict"]["result"], "FAIL")
        # The report never goes over an input.
        with open(CENTROID, "rb") as f:
            before = f.read()
        p = race("run", CENTROID, "--idx-dir", IDX, "--device", "cpu", "--report", CENTROID)
        self.assertEqual(p.returncode, 2)  # a usage mistake, as the engine's commands take it
        with open(CENTROID, "rb") as f:
            self.assertEqual(f.read(), before)


class Engine(unittest.TestCase):
    def setUp(self):
        need("idx", "package")

    def test_default_backend_is_the_entrys(self):
        """Without --backend, `race engine` runs cpu-reference: the float32 reference trainer, whose
        predictions the exported GPU entry gives bit for bit (depth 1, 1 epoch at batch 512: seconds)."""
        with tempfile.TemporaryDirectory() as tmp:
            rep_path = os.path.join(tmp, "engine.json")
            p = race("engine", "--band", 12, "--idx-dir", IDX, "--set", "depth=1", "--set", "epochs=1",
                     "--set", "batch_size=512", "--report", rep_path)
            self.assertIn(p.returncode, (0, 3), p.stderr)
            with open(rep_path) as f:
                rep = json.load(f)
        self.assertEqual(rep["backend"]["requested"], "cpu-reference")
        self.assertEqual(rep["backend"]["ran"], "cpu-reference")
        self.assertIs(rep["backend"]["entry_predictions"], True)
        self.assertNotIn("not the GPU entry's", last_line(p))
        counts = []
        for d in own_draws(DEFAULT_SEED):
            r = REVGRAPH_PKG.fit_predict(np.ascontiguousarray(d["train_x"]), d["train_y"],
                                         np.ascontiguousarray(d["test_x"]), backend="cpu-reference", depth=1, epochs=1,
                                         batch_size=512)
            counts.append(int((r.predictions == d["test_y"]).sum()))
        self.assertEqual(rep["totals"]["per_draw"], counts)
        # The help says so.
        h = race("engine", "--help")
        self.assertEqual(h.returncode, 0)
        self.assertIn("default cpu-reference", " ".join(h.stdout.split()))

    def test_a_band_its_file_records_as_failed_is_judged_and_said(self):
        """export refuses a band its file records as failed (frontier.json's "qualified": false,
        race.json's verify.passed false); engine still judges its config, and its line says what the
        file records (depth 1, 1 epoch at batch 512: seconds)."""
        small = {"depth": 1, "epochs": 1, "batch_size": 512}
        with tempfile.TemporaryDirectory() as tmp:
            frontier_like = os.path.join(tmp, "f.json")
            with open(frontier_like, "w") as f:
                json.dump({"bands": [{"band": "12", "config": small, "qualified": False, "total_correct": 1,
                                      "total": 110000, "required_correct": 96800}]}, f)
            race_like = os.path.join(tmp, "r.json")
            with open(race_like, "w") as f:
                json.dump({"bands": [{"band": "12", "config": small,
                                      "verify": {"passed": False, "total": 5, "worst_draw": 1}}]}, f)
            recorded = {frontier_like: "did not qualify there (1 of 110000 correct, 96800 required)",
                        race_like: "failed its verification there (5 correct in all, worst draw 1)"}
            for path, words in recorded.items():
                e = subprocess.run([REVGRAPH, "export", "--from", path, "--band", "12"], capture_output=True, text=True)
                self.assertEqual(e.returncode, 1, e.stderr)
                self.assertEqual(e.stderr, f"revgraph: error: export: band 12 of {path} {words}: its entry would fail "
                                           f"the leaderboard\n")
            rep_path = os.path.join(tmp, "engine.json")
            p = race("engine", "--band", 12, "--idx-dir", IDX, "--from", frontier_like, "--report", rep_path)
            self.assertIn(p.returncode, (0, 3), p.stderr)
            self.assertTrue(last_line(p).endswith(f"; the file records: band 12 of {frontier_like} {recorded[frontier_like]}"),
                            last_line(p))
            with open(rep_path) as f:
                rep = json.load(f)
            self.assertEqual({k: rep["config"][k] for k in small}, small)
            self.assertEqual(rep["sources"]["recorded_failure"], f"band 12 of {frontier_like} {recorded[frontier_like]}")

    def test_a_seed_the_file_chose_on_is_said(self):
        """A seed sharing a draw with the --from file's selection seeds (bench/race.json records them)
        is judged all the same, with a warning, the line saying so and the report naming the seeds;
        a file without them says nothing (depth 1, 1 epoch at batch 512: seconds)."""
        small = {"depth": 1, "epochs": 1, "batch_size": 512}
        with tempfile.TemporaryDirectory() as tmp:
            race_like = os.path.join(tmp, "r.json")
            seeds = [DEFAULT_SEED + 13 * 10, DEFAULT_SEED + 13 * 11, DEFAULT_SEED + 1]  # only the first shares a draw
            with open(race_like, "w") as f:
                json.dump({"selection_seeds": seeds, "bands": [{"band": "12", "config": small}]}, f)
            rep_path = os.path.join(tmp, "engine.json")
            p = race("engine", "--band", 12, "--idx-dir", IDX, "--from", race_like, "--seed", DEFAULT_SEED,
                     "--report", rep_path)
            self.assertIn(p.returncode, (0, 3), p.stderr)
            self.assertIn(f"race: seed {DEFAULT_SEED} shares draws with {race_like}'s selection seeds ({seeds[0]}): "
                          "the config was chosen on them", p.stderr)
            self.assertTrue(last_line(p).endswith(f"; seed {DEFAULT_SEED} shares draws with the file's selection "
                                                  "seeds: not an unseen check"), last_line(p))
            with open(rep_path) as f:
                self.assertEqual(json.load(f)["seed"]["selection_seeds_of_file"], [seeds[0]])
            with open(race_like, "w") as f:
                json.dump({"bands": [{"band": "12", "config": small}]}, f)
            q = race("engine", "--band", 12, "--idx-dir", IDX, "--from", race_like, "--seed", DEFAULT_SEED,
                     "--report", rep_path)
            self.assertIn(q.returncode, (0, 3), q.stderr)
            self.assertNotIn("selection seeds", q.stderr + q.stdout)
            with open(rep_path) as f:
                rep = json.load(f)
            self.assertNotIn("selection_seeds_of_file", rep["seed"])
            self.assertEqual(rep["seed"]["seed"], DEFAULT_SEED)

    def test_rev88_band_12_against_fit_predict(self):
        with tempfile.TemporaryDirectory() as tmp:
            rep_path = os.path.join(tmp, "engine.json")
            p = race("engine", "--band", 12, "--idx-dir", IDX, "--backend", "cpu", "--report", rep_path)
            self.assertIn(p.returncode, (0, 3), p.stderr)
            with open(rep_path) as f:
                rep = json.load(f)
            print("\n" + last_line(p))
        counts = []
        for d in own_draws(DEFAULT_SEED):
            r = REVGRAPH_PKG.fit_predict(np.ascontiguousarray(d["train_x"]), d["train_y"],
                                         np.ascontiguousarray(d["test_x"]), backend="cpu")
            counts.append(int((r.predictions == d["test_y"]).sum()))
        self.assertEqual(rep["totals"]["per_draw"], counts)
        self.assertEqual([c["correct"] for c in rep["calls"]], counts)
        self.assertEqual(rep["timing"]["time"], "not a GPU call")
        self.assertEqual(rep["backend"]["ran"], "cpu")
        required, floor = 96800, 8650
        passed = sum(counts) >= required and min(counts) >= floor
        self.assertEqual((rep["band"]["passed"], p.returncode), (passed, 0 if passed else 3))
        self.assertTrue(last_line(p).startswith(f"race: {'PASS' if passed else 'FAIL'} band 12 % — {sum(counts):,} / "
                                                f"110,000"), last_line(p))
        self.assertIn("time not a GPU call", last_line(p))
        # cpu sums in another order than the float32 reference trainer: its report says these are not the
        # exported GPU entry's predictions, in the report and on the verdict line.
        self.assertIs(rep["backend"]["entry_predictions"], False)
        self.assertIn("NOT the exported GPU entry's", rep["backend"]["note"])
        self.assertTrue(last_line(p).endswith("; predictions of cpu, not the GPU entry's (cpu-reference's are)"),
                        last_line(p))
        # A bad config key: one line, exit 1.
        p = race("engine", "--band", 12, "--idx-dir", IDX, "--set", "nope=1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("unknown key 'nope'", last_line(p))


class TimeModel(unittest.TestCase):
    def test_its_parameter_count_is_the_engines(self):
        # The model's count of parameters (what the grads kernel sums and a block stages) against the
        # engine's RESULT.json, at shapes of every band's entries and beyond.
        from race_harness import timemodel
        tmp = tempfile.mkdtemp(prefix="race-timemodel-")
        try:
            for depth, width in ((1, 82), (2, 96), (3, 256), (4, 128), (1, 1024)):
                out = os.path.join(tmp, f"{depth}-{width}.json")
                p = subprocess.run([REVGRAPH, "run", "--set", f"depth={depth}", "--set", f"width={width}", "--set",
                                    "epochs=1", "--backend", "cpu", "--quiet", "--output", out],
                                   capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(out) as f:
                    self.assertEqual(timemodel.param_count(depth, width), json.load(f)["parameter_count"],
                                     (depth, width))
        finally:
            shutil.rmtree(tmp)


    def test_its_launch_shape_is_the_exported_entrys(self):
        # timemodel prices the entry's launches from shapes it states again (CONSTANTS["entry"]); the
        # entry's text (engine/export/entry.py.in, as `revgraph export` writes it) is what runs. A
        # change of either shape fails here until the other follows.
        import re
        from race_harness import timemodel
        p = subprocess.run([REVGRAPH, "export", "--band", "12"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        text, e = p.stdout, timemodel.CONSTANTS["entry"]

        def launch(name, count):
            m = re.search(r'launch\("%s", \((\w+(?:\.\w+)?) \+ (\d+)\) // (\d+), (\d+)\)' % name, text)
            self.assertIsNotNone(m, f"the entry's {name} launch is not where this test reads it")
            self.assertEqual(m.group(1), count, name)
            self.assertEqual(int(m.group(2)) + 1, int(m.group(3)), name)  # ceil(count / per block)
            return int(m.group(3)), int(m.group(4))

        self.assertEqual(launch("rows", "a.rows"), (e["rows_per_block"], e["rows_threads"]))
        self.assertEqual(launch("grads", "a.params"), (e["grads_items"], e["grads_threads"]))
        self.assertEqual(launch("predict", "q"), (e["predict_rows_per_block"], e["predict_threads"]))
        # The kernels read the same shapes from Args and from their own constant.
        # Args.rows_per_block: set before the training launches, then before the predict launch.
        sets = [int(v) for v in re.findall(r"a\.rows_per_block = [^\n]*, (\d+)\n", text)]
        self.assertEqual(sets, [e["rows_per_block"], e["predict_rows_per_block"]],
                         "the entry's two rows_per_block settings are not where this test reads them")
        self.assertIn(f"kGradsItems={e['grads_items']};", text)


class Choose(unittest.TestCase):
    def setUp(self):
        need("package")
        self.tmp = tempfile.mkdtemp(prefix="race-choose-")
        self.out = os.path.join(self.tmp, "x.jsonl")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def evaluate(self, configs_text, *extra):
        path = os.path.join(self.tmp, "configs.json")
        if configs_text is not None:
            with open(path, "w") as f:
                f.write(configs_text)
        return race("choose", "evaluate", "--work", self.tmp, "--configs", path, "--seeds", 910001,
                    "--output", self.out, *extra)

    def test_evaluate_refuses_in_one_line_and_writes_nothing(self):
        config = {"depth": 1, "width": 96, "alpha": 0.5, "seed": 11, "epochs": 1, "learning_rate": 0.4,
                  "batch_size": 1024, "momentum": 0.9, "weight_decay": 0}
        no_depth = {k: v for k, v in config.items() if k != "depth"}
        cases = ((None, "No such file"), ("{bad", "not JSON"), ('{"configs": {}}', "no 'configs' list"),
                 (json.dumps({"configs": [no_depth]}), "config 1 has no depth"),
                 (json.dumps({"configs": [dict(config, depth=0)]}), "depth must be in"),
                 (json.dumps({"configs": [config]}), "draw-01.npz: not there"))  # the draws are not made
        for text, fragment in cases:
            p = self.evaluate(text)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stderr.splitlines(), [last_line(p)], p.stderr)  # one line, no traceback
            self.assertTrue(last_line(p).startswith("race: error:"), p.stderr)
            self.assertIn(fragment, last_line(p))
            self.assertFalse(os.path.exists(self.out), text)
        p = self.evaluate(json.dumps({"configs": [config]}), "--jobs", -1)
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_a_damaged_draw_is_one_line_naming_its_file(self):
        """A cut or foreign draw archive (BadZipFile, not an OSError) or labels file: one line naming
        the file that is damaged, exit 1, no result line."""
        config = {"depth": 1, "width": 96, "alpha": 0.5, "seed": 11, "epochs": 1, "learning_rate": 0.4,
                  "batch_size": 1024, "momentum": 0.9, "weight_decay": 0}
        sel = os.path.join(self.tmp, "sel-910001")
        os.mkdir(sel)
        x, y = np.zeros((4, 1, 9, 9), np.float32), np.zeros(4, np.int64)
        for n in range(1, 12):
            np.savez(os.path.join(sel, f"draw-{n:02d}.npz"), train_images=x, train_labels=y, test_images=x)
            np.save(os.path.join(sel, f"draw-{n:02d}-labels.npy"), y)
        archive, labels = os.path.join(sel, "draw-01.npz"), os.path.join(sel, "draw-01-labels.npy")
        with open(archive, "rb") as f:
            whole = f.read()
        for damaged, text in ((archive, whole[:len(whole) // 2]), (labels, b"not an array")):
            with open(damaged, "wb") as f:
                f.write(text)
            p = self.evaluate(json.dumps({"configs": [config]}), "--backend", "cpu")
            self.assertEqual(p.returncode, 1, p.stderr[-300:])
            self.assertEqual(p.stderr.splitlines(), [last_line(p)], p.stderr[-300:])
            self.assertTrue(last_line(p).startswith(f"race: error: {damaged}: "), p.stderr)
            self.assertFalse(os.path.exists(self.out))
            with open(archive, "wb") as f:
                f.write(whole)

    def test_pick_takes_the_fastest_that_meets_the_rule_on_the_entrys_backend(self):
        """Hand-made results on one selection seed: A (1 epoch, the fastest) meets every band on cpu and
        none on cpu-reference; B (2 epochs) meets every band on both; C (3 epochs) only the 12 % band.
        pick must choose B for every band, C its runner-up at 12 %, write each config where
        --summary-dir says, record those paths relative to --root, and remove an earlier pick's config
        of a band it no longer chooses (verify reads every config-B.json there)."""
        base = {"depth": 1, "width": 96, "alpha": 0.5, "seed": 11, "learning_rate": 0.4, "batch_size": 1024,
                "momentum": 0.9, "weight_decay": 0}
        a, b, c = (dict(base, epochs=e) for e in (1, 2, 3))
        seed = 910001
        on = {"cpu": ((a, 9950), (b, 9950), (c, 9000)), "cpu-reference": ((a, 8000), (b, 9950), (c, 9000))}
        os.mkdir(os.path.join(self.tmp, "screen"))
        for n in range(1, 12):
            with open(os.path.join(self.tmp, "screen", f"{seed}-{n:02d}.jsonl"), "w") as f:
                for config, correct in on["cpu"]:
                    f.write(json.dumps({"backend": "cpu", "config": config, "correct": correct}) + "\n")
        with open(os.path.join(self.tmp, "confirm.jsonl"), "w") as f:
            for n in range(1, 12):
                for config, correct in on["cpu-reference"]:
                    f.write(json.dumps({"config": config, "backend": "cpu-reference", "selection_seed": seed,
                                        "draw": n, "correct": correct}) + "\n")
        root = os.path.join(self.tmp, "root")
        summaries = os.path.join(root, "sums")
        os.makedirs(summaries)
        stale = os.path.join(summaries, "config-7.json")
        with open(stale, "w") as f:
            f.write("{}\n")
        record = os.path.join(root, "race.json")
        p = race("choose", "pick", "--work", self.tmp, "--screen", "screen", "--confirm", "confirm", "--seeds", seed,
                 "--output", record, "--summary-dir", summaries, "--root", root)
        self.assertEqual(p.returncode, 0, p.stderr[-400:])
        with open(record) as f:
            doc = json.load(f)
        self.assertEqual([x["band"] for x in doc["bands"]], ["12", "8", "5", "3", "2"])
        self.assertEqual(doc["unreached"], [])
        for x in doc["bands"]:
            self.assertEqual(x["config"], b, x["band"])
            self.assertEqual((x["config_file"], x["verify_report"]),
                             (f"sums/config-{x['band']}.json", f"sums/verify-{x['band']}.json"))
            with open(os.path.join(root, x["config_file"])) as f:
                self.assertEqual(json.load(f), b)
            self.assertEqual(x["runner_up"]["config"] if x["runner_up"] else None, c if x["band"] == "12" else None)
        self.assertFalse(os.path.exists(stale))
        self.assertEqual(sorted(os.listdir(summaries)), sorted(["screen-cpu.csv", "confirm-cpu-reference.csv"]
                                                               + [f"config-{x}.json" for x in (12, 8, 5, 3, 2)]))
        with open(os.path.join(summaries, "confirm-cpu-reference.csv")) as f:
            rows = [line.split(",") for line in f.read().splitlines()[2:]]
        self.assertEqual(sorted((int(r[4]), int(r[-2]), int(r[-1])) for r in rows),
                         [(1, 88000, 8000), (2, 109450, 9950), (3, 99000, 9000)])  # epochs, total, worst

    def test_choose_never_writes_over_what_it_reads_and_verified_says_what_is_missing(self):
        results = os.path.join(self.tmp, "ev.jsonl")
        with open(results, "w") as f:
            f.write("")  # a result name's file: shortlist reads it
        p = race("choose", "shortlist", "--work", self.tmp, "--results", "ev", "--seeds", 910001, "--output", results)
        self.assertEqual((p.returncode, last_line(p)), (2, f"race: error: --output {results} is the same file as the "
                                                           f"input --results {results}: an output may not replace an "
                                                           f"input"), p.stderr)
        with open(results) as f:
            self.assertEqual(f.read(), "")
        record = os.path.join(self.tmp, "race.json")
        for text, fragment in (("{bad", "the race record is not JSON"), ('{"x": 1}', 'no "bands" list'),
                               (json.dumps({"bands": [{"band": "12", "verify_report": "v-12.json"}]}),
                                "v-12.json: band 12's verify report is missing")):
            with open(record, "w") as f:
                f.write(text)
            p = race("choose", "verified", "--race", record, "--root", self.tmp)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stderr.splitlines(), [last_line(p)], p.stderr)
            self.assertIn(fragment, last_line(p))
            with open(record) as f:
                self.assertEqual(f.read(), text)

    def write_screen(self, name, seed, config):
        """WORK/NAME/SEED-NN.jsonl: sweep lines of one config on the seed's 11 draws, meeting every band."""
        os.makedirs(os.path.join(self.tmp, name), exist_ok=True)
        for n in range(1, 12):
            with open(os.path.join(self.tmp, name, f"{seed}-{n:02d}.jsonl"), "w") as f:
                f.write(json.dumps({"backend": "cpu", "config": config, "correct": 9950}) + "\n")

    def files(self):
        """Every file under the work folder, with its bytes."""
        out = {}
        for folder, _, names in os.walk(self.tmp):
            for name in names:
                with open(os.path.join(folder, name), "rb") as f:
                    out[os.path.relpath(os.path.join(folder, name), self.tmp)] = f.read()
        return out

    def test_shortlist_never_writes_over_a_draw_or_a_result_and_needs_every_seeds_results(self):
        """shortlist's --output over any file of its run, however spelled (a selection draw, its labels,
        a result file; through a symlinked folder, "..", a hard link): the engine's check refuses it in
        one line, exit 1, every file as it was. A selection seed with no results: one line naming it,
        not an empty shortlist."""
        config = {"depth": 1, "width": 96, "alpha": 0.5, "seed": 11, "epochs": 1, "learning_rate": 0.4,
                  "batch_size": 1024, "momentum": 0.9, "weight_decay": 0}
        seed = 910001
        self.write_screen("ev", seed, config)
        sel = os.path.join(self.tmp, f"sel-{seed}")
        os.mkdir(sel)
        for n in range(1, 12):
            for path in (os.path.join(sel, f"draw-{n:02d}.npz"), os.path.join(sel, f"draw-{n:02d}-labels.npy")):
                with open(path, "w") as f:
                    f.write(f"draw {n}")
        os.symlink(sel, os.path.join(self.tmp, "link"))
        os.link(os.path.join(self.tmp, "ev", f"{seed}-05.jsonl"), os.path.join(self.tmp, "hard.json"))
        before = self.files()
        t = self.tmp
        for output, input_ in ((os.path.join(sel, "draw-01.npz"), os.path.join(sel, "draw-01.npz")),
                               (os.path.join(t, "link", "draw-11-labels.npy"), os.path.join(sel, "draw-11-labels.npy")),
                               (os.path.join(t, "ev", "..", f"sel-{seed}", "draw-03.npz"),
                                os.path.join(sel, "draw-03.npz")),
                               (os.path.join(t, "hard.json"), os.path.join(t, "ev", f"{seed}-05.jsonl"))):
            p = race("choose", "shortlist", "--work", t, "--results", "ev", "--seeds", seed, "--bands", 12,
                     "--output", output)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stderr.splitlines(), [last_line(p)], p.stderr)
            self.assertTrue(last_line(p).startswith(f"race: error: --output {output} is the same file as the input "),
                            p.stderr)
            self.assertIn(input_, last_line(p))
            self.assertEqual(self.files(), before, output)
        out = os.path.join(t, "shortlist.json")
        p = race("choose", "shortlist", "--work", t, "--results", "ev", "--seeds", seed, seed + 1, "--bands", 12,
                 "--output", out)
        self.assertEqual((p.returncode, last_line(p)),
                         (1, f"race: error: no cpu results for seed {seed + 1} in ev under {t} (run them, or leave "
                             f"the seed out of --seeds)"), p.stderr)
        self.assertEqual(p.stderr.splitlines(), [last_line(p)], p.stderr)
        self.assertEqual(self.files(), before)
        p = race("choose", "shortlist", "--work", t, "--results", "ev", "--seeds", seed, "--bands", 12, "--output", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["configs"], [config])

    def test_pick_refuses_a_summary_dir_that_is_a_file_in_one_line(self):
        """--summary-dir naming a file (or a folder under one): one line before any work, exit 1,
        nothing written, the file as it was (not FileExistsError's traceback at the end)."""
        config = {"depth": 1, "width": 96, "alpha": 0.5, "seed": 11, "epochs": 1, "learning_rate": 0.4,
                  "batch_size": 1024, "momentum": 0.9, "weight_decay": 0}
        seed = 910001
        self.write_screen("screen", seed, config)
        entry = os.path.join(self.tmp, "e12.py")
        with open(entry, "w") as f:
            f.write("x = 1\n")
        before = self.files()
        record = os.path.join(self.tmp, "race.json")
        for folder, fragment in ((entry, f"--summary-dir {entry}: is not a folder"),
                                 (os.path.join(entry, "sums"), f"--summary-dir {entry}/sums: {entry} is not a folder")):
            p = race("choose", "pick", "--work", self.tmp, "--screen", "screen", "--confirm", "screen", "--seeds", seed,
                     "--output", record, "--summary-dir", folder, "--root", self.tmp)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stderr.splitlines(), [last_line(p)], p.stderr)
            self.assertTrue(last_line(p).startswith(f"race: error: {fragment}"), p.stderr)
            self.assertEqual(self.files(), before)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    import unittest_exit  # noqa: E402
    unittest_exit.main(extra_skips=SKIPPED)
