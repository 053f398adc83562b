#!/usr/bin/python3
"""`revgraph export` without a GPU: every exported entry — one per band of bench/race.json, and
rev88 — passes the challenge's static rules (tools/race check), fits its size, compiles with nvcc
for sm_80 and sm_90 and with NVRTC exactly as the entry compiles itself, imports with no side
effect, refuses CPU tensors in one clear line, draws PyTorch's initial parameters and numpy's epoch
orders (held to the engine's hashes, an independent implementation of both), its CUDA text —
compiled as host code and run on the CPU — gives the float32 trainer's very bits, and the entry's
own Python, run end to end on a GPU made of the host (host_device.py), trains to the bits of
`revgraph run --backend cpu-reference`.

  /usr/bin/python3 test/export/test_export.py SOURCE_ROOT BUILD_ROOT

Needs Debian's numpy (and torch for the import checks: skipped without it). The GPU half — the
entry run by CUDA on a device, hash for hash with revgraph's backends — is test_export_gpu.py.
"""
import ast
import ctypes
import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
REVGRAPH = os.path.join(BUILD, "tools", "revgraph")
RACE = os.path.join(ROOT, "tools", "race")
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
NVRTC = next(iter(glob.glob("/usr/local/cuda/lib64/libnvrtc.so*")), None)
sys.path.insert(0, os.path.join(BUILD, "python"))


def bands_file():
    race = os.path.join(ROOT, "bench", "race.json")
    return race if os.path.exists(race) else os.path.join(ROOT, "bench", "frontier", "frontier.json")


def build_cxx():
    """The C++ compiler command BUILD's engine library was compiled with (meson's introspection; a
    list, as meson keeps it: ["c++"], ["clang++"], or with a wrapper first, ["ccache", "c++"])."""
    with open(os.path.join(BUILD, "meson-info", "intro-targets.json")) as f:
        targets = json.load(f)
    engine = next(t for t in targets if t["name"] == "revgraph_engine")
    return next(s["compiler"] for s in engine["target_sources"] if s.get("language") == "cpp")


def torch_installed():
    """Whether torch imports: not load()'s stand-in module (find_spec refuses a module without a spec)."""
    module = sys.modules.get("torch")
    if module is not None:
        return getattr(module, "__spec__", None) is not None
    return importlib.util.find_spec("torch") is not None


def exported(tmp, *args):
    out = os.path.join(tmp, "entry.py")
    p = subprocess.run([REVGRAPH, "export", *args, "--output", out, "--quiet"], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"revgraph export {' '.join(args)}: {p.stderr.strip()}")
    with open(out) as f:
        return out, f.read()


def module_constant(text, name):
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"the entry defines no {name}")


# C++ preprocessing tokens, enough for the entry's text: literals, pp-numbers (digit separators
# too), identifiers, and punctuators longest first (digraphs among them), whitespace between.
_PUNCTUATORS = sorted("%:%: ... <<= >>= ->* <=> :: -> ++ -- << >> <= >= == != && || += -= *= /= %= &= |= ^= ## "
                      "<: :> <% %> %: .* { } [ ] ( ) ; : ? . ~ ! + - * / % ^ & | = < > , #".split(), key=len, reverse=True)
_TOKEN = re.compile(r'\s*("(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|\.?\d(?:[eEpP][+-]|\'\w|[\w.])*|[A-Za-z_]\w*|'
                    + "|".join(re.escape(p) for p in _PUNCTUATORS) + ")")


def cpp_tokens(text):
    out, at = [], 0
    while text[at:].strip():
        m = _TOKEN.match(text, at)
        if m is None:
            raise AssertionError(f"no C++ token at {text[at:at + 40]!r}")
        out.append(m.group(1))
        at = m.end()
    return out


class Layout(unittest.TestCase):
    """kernel_text.py's layout-only tightening: the same tokens, never a merged or altered one."""

    def test_the_entrys_text_has_the_same_tokens_tight_and_loose(self):
        # The whole text, not only the cases below: tightened, it must read as the same token
        # sequence as before (a merge such as `a - -b` -> `a--b` or `a % ::f` -> `a%::f` changes
        # it; the tokenizer sees both, asserted first).
        sys.path.insert(0, os.path.join(ROOT, "engine", "export"))
        try:
            from kernel_text import kernel_text
        finally:
            sys.path.pop(0)
        self.assertNotEqual(cpp_tokens("x=a%::f(b);"), cpp_tokens("x=a % ::f(b);"))
        self.assertNotEqual(cpp_tokens("w=a--b;"), cpp_tokens("w=a - -b;"))
        loose, tight = kernel_text(ROOT, tight=False), kernel_text(ROOT)
        self.assertLess(len(tight), len(loose))
        self.assertEqual(cpp_tokens(tight), cpp_tokens(loose))

    def test_commas_assignments_and_products_lose_their_spaces_and_nothing_else_does(self):
        sys.path.insert(0, os.path.join(ROOT, "engine", "export"))
        try:
            from kernel_text import tighten
        finally:
            sys.path.pop(0)
        cases = {
            "int a = f(x, y);": "int a=f(x,y);",
            "acc[l] = acc[2 * l] + acc[2 * l + 1];": "acc[l]=acc[2*l] + acc[2*l + 1];",
            "r = item / width, k = i % L, s = (a * b) * c;": "r=item/width,k=i%L,s=(a*b)*c;",
            "q = a / *p, v = a * *p, w = a - -b, x = y + +z;": "q=a / *p,v=a * *p,w=a - -b,x=y + +z;",
            "float* p = x * y; f(a * -b); g(-a * b);": "float* p=x*y; f(a*-b); g(-a*b);",
            "s = \"a * b\"; c = '*';": "s=\"a * b\"; c='*';",
            "#define SQ(x) x * x": "#define SQ(x) x * x",
            "x = a % ::f(b) % c;": "x=a % ::f(b)%c;",  # `%:` would be the digraph of `#`
            "template <int kH, int kL = kSumLanes, class Exec>": "template <int kH,int kL=kSumLanes,class Exec>",
            "a >>= b; c += d; e == f; g != h; i <= j;": "a >>= b; c += d; e == f; g != h; i <= j;",
            "v<int> = x;": "v<int> = x;",  # a '>' before '=': left alone
            's = ", = ";': 's=", = ";',  # string literals as they are
            "c = ','; d = '=';": "c=','; d='=';",
            "n = 1'000, m;": "n=1'000,m;",  # a digit separator is no quote
            "#define X = 1, 2": "#define X = 1, 2",  # preprocessor lines untouched
        }
        for line, want in cases.items():
            self.assertEqual(tighten(line), want, line)


class Entries(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="export-test.")
        with open(bands_file()) as f:
            cls.bands = [b["band"] for b in json.load(f)["bands"] if b["band"] in ("12", "8", "5", "3", "2")]
        cls.entries = {}
        for band in cls.bands:
            d = os.path.join(cls.tmp, band)
            os.makedirs(d)
            cls.entries[band] = exported(d, "--from", bands_file(), "--band", band)
        d = os.path.join(cls.tmp, "rev88")
        os.makedirs(d)
        cls.entries["rev88"] = exported(d, "--band", "12")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_every_entry_passes_the_static_rules_and_fits(self):
        self.assertGreaterEqual(len(self.entries), 2)
        for name, (path, text) in self.entries.items():
            self.assertLessEqual(len(text.encode()), 20480, name)
            p = subprocess.run([sys.executable, RACE, "check", path], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, f"{name}: {p.stdout}{p.stderr}")
            band = name if name != "rev88" else "12"
            self.assertTrue(text.startswith(f"#!POPCORN leaderboard mnist-medium-{band}pct\n#!POPCORN gpu A100\n"), name)
            with open(bands_file()) as f:
                want = next((b["config"] for b in json.load(f)["bands"] if b["band"] == name), None)
            if want is not None:
                self.assertEqual(module_constant(text, "CONFIG"), want, name)

    def test_bad_requests_get_one_line(self):
        frontier = os.path.join(ROOT, "bench", "frontier", "frontier.json")
        with open(frontier) as f:
            failed = [b for b in json.load(f)["bands"] if b.get("qualified") is False]
        self.assertTrue(failed, "frontier.json records a band that did not qualify (its 3 %): the refusal is tested on it")
        b = failed[0]
        failed_words = (f"band {b['band']} of {frontier} did not qualify there ({b['total_correct']} of {b['total']} "
                        f"correct, {b['required_correct']} required): its entry would fail the leaderboard")
        # race.json's search records the bands it did not reach; a file without such a list has no band 2.
        with open(bands_file()) as f:
            unreached = "2" in [u["band"] for u in json.load(f).get("unreached", [])]
        for args, words in ((["--band", "7"], "leaderboards"), (["--from", bands_file(), "--band", "7"], "leaderboards"),
                            (["--from", bands_file(), "--band", "2"],
                             "records band 2 as unreached: no configuration its search tried passed it (it has 12, 8, 5)"
                             if unreached else "has no band 2"),
                            (["--from", frontier, "--band", b["band"]], failed_words),
                            (["--band", "12", "--set", "width=81"], "width"),
                            (["--from", bands_file(), "--band", "12", "--set", "depth=3"], "not with --config or --set"),
                            (["--from", os.path.join(ROOT, "README.md"), "--band", "12"], "is not JSON")):
            p = subprocess.run([REVGRAPH, "export", *args], capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(words, p.stderr, args)
            self.assertEqual(p.stdout, "")

    def test_output_never_replaces_what_it_reads(self):
        """--output on the --config or --from file it reads: exit 2, one line, the file unchanged."""
        with tempfile.TemporaryDirectory() as d:
            config = os.path.join(d, "c.json")
            with open(config, "w") as f:
                f.write('{"epochs": 1}\n')
            bands = os.path.join(d, "bands.json")
            shutil.copyfile(bands_file(), bands)
            before = {path: open(path, "rb").read() for path in (config, bands)}
            for args, which in ((["--band", "12", "--config", config, "--output", config], "--config"),
                                (["--band", "12", "--from", bands, "--output", os.path.join(d, ".", "bands.json")], "--from")):
                p = subprocess.run([REVGRAPH, "export", *args], capture_output=True, text=True)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertIn(f"is the same file as the input {which}", p.stderr)
            for path, content in before.items():
                self.assertEqual(open(path, "rb").read(), content, path)
            self.assertEqual(sorted(os.listdir(d)), ["bands.json", "c.json"])

    def cuda_text(self, name):
        return "".join(module_constant(self.entries[name][1], "CUDA"))

    @unittest.skipIf(NVCC is None, "nvcc is not installed")
    def test_the_cuda_compiles_with_nvcc_for_sm80_and_sm90(self):
        for name in self.entries:
            src = os.path.join(self.tmp, f"{name}.cu")
            with open(src, "w") as f:
                f.write(self.cuda_text(name))
            half = module_constant(self.entries[name][1], "CONFIG")["width"] // 2
            for arch in ("80", "90"):
                p = subprocess.run([NVCC, "-std=c++17", "--fmad=false", f"-DRG_ENTRY_HALF={half}", f"-arch=sm_{arch}",
                                    "-c", src, "-o", os.path.join(self.tmp, f"{name}-{arch}.o")], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, f"{name} sm_{arch}: {p.stderr[-3000:]}")

    @unittest.skipIf(NVRTC is None, "the CUDA toolkit's libnvrtc is not installed")
    def test_nvrtc_compiles_it_as_the_entry_does_with_its_three_kernels(self):
        lib = ctypes.CDLL(NVRTC)
        for name, (_, text) in self.entries.items():
            half = module_constant(text, "CONFIG")["width"] // 2
            for arch in ("80", "90"):
                prog = ctypes.c_void_p()
                self.assertEqual(lib.nvrtcCreateProgram(ctypes.byref(prog), self.cuda_text(name).encode(), b"revgraph.cu",
                                                        0, None, None), 0)
                opts = [f"-arch=sm_{arch}".encode(), b"--fmad=false", b"-std=c++17", f"-DRG_ENTRY_HALF={half}".encode()]
                result = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
                size = ctypes.c_size_t()
                lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
                log = ctypes.create_string_buffer(size.value)
                lib.nvrtcGetProgramLog(prog, log)
                self.assertEqual(result, 0, f"{name} sm_{arch}: {log.value.decode()[:3000]}")
                lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
                cubin = ctypes.create_string_buffer(size.value)
                self.assertEqual(lib.nvrtcGetCUBIN(prog, cubin), 0)
                for kernel in (b"rg_rows", b"rg_grads", b"rg_predict"):
                    self.assertIn(kernel, cubin.raw, f"{name} sm_{arch}")
                lib.nvrtcDestroyProgram(ctypes.byref(prog))

    def host_check(self, name, lanes=1):
        """The entry's CUDA text built as host code against the engine (host_check.cpp), in sum order `lanes`."""
        text = self.entries[name][1]
        half = module_constant(text, "CONFIG")["width"] // 2
        header = os.path.join(self.tmp, f"{name}.cuh")
        with open(header, "w") as f:
            f.write(self.cuda_text(name))
        exe = os.path.join(self.tmp, f"host_check_{name}_{lanes}")
        lib = os.path.join(BUILD, "engine", "librevgraph_engine.a")
        cuda_libs = ["-L/usr/local/cuda/lib64", "-lcudart"] if os.path.exists("/usr/local/cuda/lib64/libcudart.so") else []
        # A sanitized build's library (tools/asan-check's) links only into a program sanitized alike,
        # by the compiler that built it (clang there, g++ in ./build).
        with open(os.path.join(BUILD, "meson-info", "intro-buildoptions.json")) as f:
            sanitize = next((o["value"] for o in json.load(f) if o["name"] == "b_sanitize"), "none")
        cuda_libs += [f"-fsanitize={sanitize}"] if sanitize not in ("none", "") else []
        p = subprocess.run([*build_cxx(), "-std=c++20", "-O1", "-ffp-contract=off", "-Wno-unknown-pragmas", "-D__CUDACC_RTC__", f"-I{ROOT}",
                            f'-DEXPORTED_TEXT="{header}"', f"-DHALF={half}", f"-DLANES={lanes}",
                            os.path.join(ROOT, "test", "export", "host_check.cpp"),
                            lib, "-lz", "-lcrypto", "-lzip", "-lpthread", "-ldl", *cuda_libs, "-o", exe],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr[-4000:])
        return exe

    def test_its_kernel_math_gives_the_float32_trainers_bits_on_the_cpu(self):
        for name, (_, text) in self.entries.items():
            c = module_constant(text, "CONFIG")
            exe = self.host_check(name)
            batch = min(c["batch_size"], 64)  # the band's shape with smaller batches: the same code paths
            p = subprocess.run([exe, str(c["depth"]), str(c["width"]), str(batch), "2", repr(c["alpha"]),
                                repr(c["learning_rate"])], capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, f"{name}: {p.stdout}{p.stderr}")
            self.assertIn("bits equal", p.stdout)

    def test_its_kernel_math_follows_every_sum_order(self):
        # The entry runs the engine's order; the same text in every other order of
        # engine/model/sum_order.hpp must give the trainer's bits in that order, so adopting another
        # (model::kEngineSumLanes) carries the entry with it. rev88 (sums of 41 and 82 terms, 10 classes,
        # row sums of 64 and 37 rows: the device path's 16-term blocks and tails), 2, 4 and 8 lanes.
        c = module_constant(self.entries["rev88"][1], "CONFIG")
        for lanes in (2, 4, 8):
            exe = self.host_check("rev88", lanes)
            p = subprocess.run([exe, str(c["depth"]), str(c["width"]), "64", "2", repr(c["alpha"]),
                                repr(c["learning_rate"])], capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, f"{lanes} lanes: {p.stdout}{p.stderr}")
            self.assertIn(f"{lanes} sum lanes", p.stdout)

    def test_the_ctypes_args_lay_out_as_the_kernels_struct(self):
        exe = self.host_check("rev88")
        p = subprocess.run([exe, "--layout"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        offsets = dict(line.split() for line in p.stdout.splitlines())
        args = self.load("rev88", fake_cuda=True)._args_type()
        for field, _ in args._fields_:
            self.assertEqual(getattr(args, field).offset, int(offsets[field]), field)
        self.assertEqual(ctypes.sizeof(args), int(offsets["sizeof"]))
        self.assertEqual(len(args._fields_), len(offsets) - 1)

    def load(self, name, fake_cuda):
        """The entry imported as a module; `fake_cuda`: a stand-in cuda.bindings that records every call."""
        calls = []
        if not torch_installed():  # the entry imports torch; these checks use none of it
            sys.modules.setdefault("torch", types.ModuleType("torch"))
        if fake_cuda:
            cuda = types.ModuleType("cuda")
            bindings = types.ModuleType("cuda.bindings")
            bindings.driver, bindings.nvrtc = _Recorder("driver", calls), _Recorder("nvrtc", calls)
            cuda.bindings = bindings
            sys.modules.update({"cuda": cuda, "cuda.bindings": bindings})
        spec = importlib.util.spec_from_file_location(f"entry_{name}", self.entries[name][0])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module._calls = calls
        return module

    def test_import_has_no_side_effect_and_cpu_tensors_get_one_clear_error(self):
        if not torch_installed():
            self.skipTest("torch is not installed")
        import torch
        before = torch.initial_seed()
        entry = self.load("rev88", fake_cuda=True)
        self.assertEqual(entry._calls, [])  # no CUDA call at import
        self.assertEqual(torch.initial_seed(), before)
        self.assertIsNone(entry._RUN)
        data = (torch.zeros(10, 1, 9, 9), torch.zeros(10, dtype=torch.int64), torch.zeros(10, 1, 9, 9))
        with self.assertRaises(ValueError) as raised:
            entry.custom_kernel(data)
        self.assertIn("must be contiguous CUDA tensors", str(raised.exception))
        self.assertEqual(len(str(raised.exception).splitlines()), 1)
        self.assertEqual(entry._calls, [])

    def test_initial_parameters_and_epoch_orders_are_the_engines(self):
        try:
            import numpy as np
            import revgraph
        except ImportError as e:
            self.skipTest(f"{e}")
        if not hasattr(revgraph, "fit_predict"):
            # A -Dpython=disabled build (asan-check's): tools/revgraph, the CLI's folder, imports
            # as an empty namespace package in its place.
            self.skipTest(f"no built revgraph package under {os.path.join(BUILD, 'python')}")
        for name, (_, text) in self.entries.items():
            c = module_constant(text, "CONFIG")
            entry = self.load(name, fake_cuda=True)
            init = entry._initial_parameters(c["depth"], c["width"], c["seed"])
            self.assertEqual(init.dtype, np.float32)
            n, q = 300, 7
            rng = np.random.default_rng(5)
            x = rng.random((n, 1, 9, 9), dtype=np.float32)
            y = rng.integers(0, 10, n).astype(np.int64)
            meta = revgraph.fit_predict(x, y, x[:q].copy(), backend="cpu", **dict(c, epochs=min(c["epochs"], 3))).metadata
            h, w = c["width"] // 2, c["width"]
            sizes = [(f"weights.{i}", h * h) for i in range(2 * c["depth"])] + [("head.weight", 10 * w), ("head.bias", 10)]
            self.assertEqual(sum(n for _, n in sizes), init.size)
            at = 0
            for pname, size in sizes:
                self.assertEqual(hashlib.sha256(init[at:at + size].tobytes()).hexdigest(),
                                 meta["initial_parameter_sha256"][pname], (name, pname))
                at += size
            orders = entry._orders(c["seed"], n, len(meta["epoch_permutation_sha256"]))  # the entry's own code
            for e, want in enumerate(meta["epoch_permutation_sha256"]):
                self.assertEqual(hashlib.sha256(orders[e].astype(np.int64).tobytes()).hexdigest(), want, (name, e))

    def test_the_fma_emulation_rounds_once(self):
        from fractions import Fraction
        import numpy as np
        entry = self.load("rev88", fake_cuda=True)
        rng = np.random.default_rng(3)
        a = rng.standard_normal(20000).astype(np.float32)
        b = rng.standard_normal(20000).astype(np.float32)
        c = (rng.standard_normal(20000) * 1e-3).astype(np.float32)
        # made-up ties: a*b + c exactly halfway between two floats after the double rounding
        # Ties made on purpose: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 lies halfway between two floats, and
        # ±2^-60 decides the side — a side a float64 sum forgets (it rounds the 2^-60 away).
        t = np.float32(1 + 2**-12)
        a = np.concatenate([a, [t, t, -t]]).astype(np.float32)
        b = np.concatenate([b, [t, t, t]]).astype(np.float32)
        c = np.concatenate([c, [2**-60, -2**-60, 2**-60]]).astype(np.float32)
        got = entry._fma(a, b, c)
        self.assertEqual(got[-3], np.float32(1 + 2**-11 + 2**-23))
        self.assertEqual(got[-2], np.float32(1 + 2**-11))
        self.assertEqual(got[-1], np.float32(-(1 + 2**-11)))
        for i in list(range(0, 20000, 97)) + [20000, 20001, 20002]:
            exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
            lo = np.float32(float(exact))
            cands = [lo, np.nextafter(lo, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf))]
            best = min(cands, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.frombuffer(v.tobytes(), np.uint32)[0]) & 1))
            self.assertEqual(got[i], best, i)

    def reference_run(self, config, x, y, q):
        """`revgraph run --backend cpu-reference` on these arrays: predictions, parameters, momentum
        (flat, in the layout's order)."""
        import numpy as np
        d = tempfile.mkdtemp(dir=self.tmp)
        np.savez(os.path.join(d, "draw.npz"), train_images=x, train_labels=y, test_images=q)
        sets = [a for k, v in config.items() for a in ("--set", f"{k}={v}")]
        p = subprocess.run([REVGRAPH, "run", "--input", os.path.join(d, "draw.npz"), "--backend", "cpu-reference", *sets,
                            "--output", os.path.join(d, "r.json"), "--state", os.path.join(d, "s.npz"), "--quiet"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        state = np.load(os.path.join(d, "s.npz"))
        names = [f"weights.{i}" for i in range(2 * config["depth"])] + ["head.weight", "head.bias"]
        flat = lambda prefix: np.concatenate([state[prefix + n].ravel() for n in names])
        return np.load(os.path.join(d, "r.predictions.npy")), flat(""), flat("velocity.")

    def test_the_entrys_own_driver_trains_on_a_host_device(self):
        # The entry's Python, not only its kernels: its NVRTC options, buffers, shared-memory requests,
        # the ctypes Args it mutates between launches, every launch's grid, the graph it captures and
        # the replays of later calls, run on host_device.py's GPU made of the host (the kernels as host
        # code, host_device.cpp). After a call the predictions, parameters and momentum must be
        # `revgraph run --backend cpu-reference`'s on the same arrays; a second call on the same
        # tensors, their contents replaced (the harness's protocol), replays the same graph on the new
        # contents. Each entry's shape at 2 epochs, a full batch and a short one; on an A100-like device
        # (parameters staged in shared memory where they fit), and rev88 also on one whose shared
        # memory holds no parameters, with every grid and phase run last to first, and with another
        # device current at the calls (the entry must make the inputs' device current: its module,
        # capture and replay go to the current device). The first call runs the task once before
        # capturing it, as a capture may not be the first launch of a torch kernel (host_device.py).
        if not torch_installed():
            self.skipTest("torch is not installed")
        import numpy as np
        import torch
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import host_device
        cases = [(name, (8, 0), 163 * 1024, False, 0) for name in self.entries] + [("rev88", (9, 0), 16 * 1024, True, 1)]
        cxx = build_cxx()
        for name, capability, optin, reverse, current in cases:
            with self.subTest(entry=name, optin=optin, reverse=reverse, current=current):
                entry = self.load(name, fake_cuda=True)
                entry.CONFIG = dict(entry.CONFIG, epochs=2)
                c = entry.CONFIG
                folder = tempfile.mkdtemp(dir=self.tmp)
                driver, restore = host_device.install(entry, folder, ROOT, cxx, capability, optin, reverse, current)
                self.addCleanup(restore)
                n, q = c["batch_size"] + 37, 45
                rng = np.random.default_rng(len(name) + optin)
                arrays = lambda: (rng.random((n, 1, 9, 9), dtype=np.float32), rng.integers(0, 10, n),
                                  rng.random((q, 1, 9, 9), dtype=np.float32))
                x, y, qx = arrays()
                data = tuple(host_device.as_device_tensor(torch.from_numpy(a)) for a in (x, y, qx))
                launches = c["epochs"] * -(-n // c["batch_size"]) * 2 + 1  # rows and grads a step, one predict
                for call in range(2 if name == "rev88" else 1):
                    if call:  # the same tensors, new contents
                        x, y, qx = arrays()
                        for t, a in zip(data, (x, y, qx)):
                            t.copy_(torch.from_numpy(a))
                        run = entry._RUN
                    got = entry.custom_kernel(data)
                    if call:
                        self.assertIs(entry._RUN, run)  # replayed, not captured again
                    self.assertEqual(driver.launches, launches * (call + 2))  # once before the capture
                    want, param, velocity = self.reference_run(c, x, y, qx)
                    b = entry._RUN.keep[3]
                    self.assertEqual(b["param"].numpy().tobytes(), param.astype(np.float32).tobytes(), "parameters")
                    self.assertEqual(b["velocity"].numpy().tobytes(), velocity.astype(np.float32).tobytes(), "momentum")
                    self.assertEqual(got.dtype, torch.int64)
                    self.assertEqual(got.numpy().tolist(), want.tolist())
                    self.assertTrue(all(p["destroyed"] for p in entry.nvrtc.programs), "an NVRTC program left")

    def test_the_host_device_refuses_a_device_other_than_the_inputs(self):
        # The check that holds the entry's torch.cuda.device to its inputs' device must itself fail
        # an entry that names a fixed device (cuda:0, right only where the inputs are there).
        if not torch_installed():
            self.skipTest("torch is not installed")
        import torch
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import host_device
        with open(self.entries["rev88"][0]) as f:
            text = f.read()
        said = "with torch.cuda.device(data[0].device):"
        self.assertIn(said, text)
        fixed = os.path.join(self.tmp, "fixed_device.py")
        with open(fixed, "w") as f:
            f.write(text.replace(said, "with torch.cuda.device(0):"))
        self.entries["fixed_device"] = (fixed,)
        try:
            entry = self.load("fixed_device", fake_cuda=True)
        finally:
            del self.entries["fixed_device"]
        driver, restore = host_device.install(entry, tempfile.mkdtemp(dir=self.tmp), ROOT, build_cxx())
        self.addCleanup(restore)
        data = tuple(host_device.as_device_tensor(t) for t in (
            torch.zeros(3, 1, 9, 9), torch.zeros(3, dtype=torch.int64), torch.zeros(2, 1, 9, 9)))
        with self.assertRaises(RuntimeError) as caught:
            entry.custom_kernel(data)
        self.assertEqual(str(caught.exception), "host device: torch.cuda.device(0) is not the inputs' device")
        self.assertEqual(driver.launches, 0)

    def test_a_compile_nvrtc_refuses_is_one_error_with_its_log(self):
        # A text NVRTC refuses (a toolkit or device it does not suit) fails the first call with NVRTC's
        # log in the error, less the log's closing NUL, and nothing launched or kept.
        if not torch_installed():
            self.skipTest("torch is not installed")
        import torch
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import host_device
        entry = self.load("rev88", fake_cuda=True)
        driver, restore = host_device.install(entry, tempfile.mkdtemp(dir=self.tmp), ROOT, build_cxx())
        self.addCleanup(restore)
        log = 'revgraph.cu(7): error: identifier "rg_x" is undefined\n1 error detected in the compilation.'
        entry.nvrtc.fail_with = log
        data = tuple(host_device.as_device_tensor(t) for t in (
            torch.zeros(3, 1, 9, 9), torch.zeros(3, dtype=torch.int64), torch.zeros(2, 1, 9, 9)))
        with self.assertRaises(RuntimeError) as caught:
            entry.custom_kernel(data)
        self.assertEqual(str(caught.exception), "revgraph entry: NVRTC: " + log)
        self.assertIsNone(entry._RUN)
        self.assertEqual(driver.launches, 0)


class _Recorder(types.ModuleType):
    """A module whose every attribute is a callable that records its call and returns (0, None)."""

    def __init__(self, name, calls):
        super().__init__(name)
        self._calls = calls

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return lambda *a, **k: self._calls.append((self.__name__, attr)) or (0, None)


if __name__ == "__main__":
    if not os.path.exists(REVGRAPH):
        print(f"SKIP: {REVGRAPH} is not built")
        sys.exit(77)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    import unittest_exit  # noqa: E402
    unittest_exit.main()
