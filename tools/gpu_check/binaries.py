"""The binaries of a run: prebuilt by tools/pack-gpu-deps where their sources are this tree's and
they start here (check-backends), else configured and built on the device."""
import json
import os
import shutil
import subprocess
import tarfile

from .commit import tracked_files_match
from .machine import gpu_arch, toolkit_library_dir
from .meson_tests import portable_manifest
from .steps import ROOT, Step, self_command, self_env


def prebuilt_dir(root):
    d = os.path.join(root, ".gpudeps", "prebuilt")
    return d if os.path.exists(os.path.join(d, "tools", "revgraph")) else None


def use_prebuilt(ctx, env):
    """Prebuilt binaries where they exist, their sources are this tree's and they are wanted: (yes, why)."""
    if env.get("GPU_CHECK_PREBUILT", "1") == "0":
        return False, "GPU_CHECK_PREBUILT=0"
    # tools/pack-gpu-deps packs them compressed (35 MB of programs, 8 MB so): unpacked on first use.
    if not prebuilt_dir(ROOT) and not os.path.exists(packed_archive(ROOT, "prebuilt")):
        return False, "no prebuilt binaries (tools/pack-gpu-deps makes them)"
    same, why = tracked_files_match(ROOT)
    if not same:
        return False, f"prebuilt binaries are of another tree: {why}"
    unpacked = unpack_packed(ROOT, "prebuilt", ("prebuilt",))
    pre = prebuilt_dir(ROOT)
    if not pre:
        return False, f"no prebuilt binaries: {unpacked or 'no tools/revgraph in .gpudeps/prebuilt'}"
    ctx.bindir, ctx.manifest, ctx.ld_path = pre, os.path.join(pre, "tests.json"), os.path.join(pre, "lib")
    return True, f"prebuilt binaries in {pre}" + (f" ({unpacked})" if unpacked else "")


def packed_arch(pre):
    try:
        with open(os.path.join(pre, "ARCH")) as f:
            return f.read().strip()
    except OSError:
        return None


# What the binaries must be able to run on the GPU machine: the report's required GPU steps.
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
                self_command(ctx.python, "check-backends", "--revgraph", ctx.bin("tools/revgraph")), True,
                env=self_env())


def packed_archive(root, name):
    return os.path.join(root, ".gpudeps", name + ".tar.xz")


# What call 4's race reads (tools/pack-gpu-deps packs them gzipped): the training split its draws are
# made of, and the test split its warm-up is drawn from where no Fashion-MNIST is given.
RACE_FILES = tuple(f"{name}.gz" for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))


def packed_state(root):
    """Lines saying what tools/pack-gpu-deps left in root/.gpudeps for a GPU machine, read before a run
    spends device time: whether the prebuilt binaries are this tree's (else the machine builds them,
    +160 s of its first call) and whether call 4's race has its data."""
    deps = os.path.join(root, ".gpudeps")
    if not os.path.isdir(deps):
        return ["no .gpudeps: run tools/pack-gpu-deps on a clean tree (else the machine builds the binaries, "
                "and call 4's race has no data)"]
    lines = []
    if not prebuilt_dir(root) and not os.path.exists(packed_archive(root, "prebuilt")):
        lines.append("prebuilt binaries: none (tools/pack-gpu-deps without --no-prebuilt makes them)")
    else:
        same, why = tracked_files_match(root)
        lines.append("prebuilt binaries: this tree's" if same else
                     f"prebuilt binaries: of another tree ({why}): run tools/pack-gpu-deps again, or the machine builds")
    missing = [f for f in RACE_FILES if not os.path.isfile(os.path.join(deps, "race-data", f))]
    lines.append("race data: all four files" if not missing else
                 f"race data: {', '.join(missing)} missing from .gpudeps/race-data: call 4's race steps will fail "
                 f"(tools/pack-gpu-deps fetches them)")
    return lines


def unpack_packed(root, name, parts):
    """.gpudeps/<name>.tar.xz (tools/pack-gpu-deps compresses what only some calls need, or what is
    large) unpacked into .gpudeps/ once and whole, the folders `parts` it holds: None where there is
    no such archive, else what the log says."""
    deps = os.path.join(root, ".gpudeps")
    archive, done = packed_archive(root, name), os.path.join(deps, "." + name + "-unpacked")
    if not os.path.exists(archive):
        return None
    said = f"unpacked from .gpudeps/{name}.tar.xz"
    if os.path.exists(done):  # a call before this one unpacked it whole
        return said
    for part in parts:  # what an unpack stopped half-way left
        shutil.rmtree(os.path.join(deps, part), ignore_errors=True)
    try:
        with tarfile.open(archive) as t:
            # Only plain files, folders and links that stay inside .gpudeps; Pythons before the
            # filter (3.11.4) trust the archive pack-gpu-deps made.
            t.extractall(deps, filter="data") if hasattr(tarfile, "data_filter") else t.extractall(deps)
        open(done, "w").close()
    except (OSError, tarfile.TarError) as e:  # what needed it then fails on what it misses, and says so
        return f".gpudeps/{name}.tar.xz not unpacked: {e}"
    return said


def unpack_build_deps(root):
    """Before a build: the build's dependencies that tools/pack-gpu-deps compressed beside prebuilt
    binaries (build-deps.tar.xz) unpacked into .gpudeps/, where gpudeps_env finds them. Returns what
    the log says."""
    said = unpack_packed(root, "build-deps", ("include", "lib", "bin"))
    if said is not None:
        return "build dependencies: " + said
    if os.path.isdir(os.path.join(root, ".gpudeps", "lib", "pkgconfig")):
        return "build dependencies: packed in .gpudeps"  # tools/pack-gpu-deps --no-prebuilt
    return "build dependencies: none packed (tools/pack-gpu-deps packs them): this machine's own"


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


# What the three calls run of ours, as ninja targets: the fallback build makes these and nothing else
# (the CPU suites, the Python package and the other tools are CI's; test/tools holds the list to the
# plan's commands).
BUILD_TARGETS = ("tools/revgraph", "test/cuda/gpu_validation", "test/cuda/test_cuda_gpu", "test/cuda/test_cuda_ops_gpu",
                 "test/graphs/test_graphs_gpu", "bench/revgraph_bench", "bench/revgraph_kernel_lab",
                 "bench/revgraph_sum_lab")
CONFIGURE_SECONDS, BUILD_SECONDS = 30, 150


def build_steps(ctx, env, commit):
    """configure (skipped where this build folder was configured for this commit and architecture: a
    warm machine's second call) and ninja of BUILD_TARGETS."""
    # Absolute: the steps run in the tree (runner.py), this function in the caller's folder.
    build = os.path.abspath(env.get("GPU_CHECK_BUILD", os.path.join(ROOT, "build-gpucheck")))
    arch = env.get("GPU_CHECK_ARCH") or gpu_arch()
    ctx.bindir, ctx.manifest, ctx.ld_path = build, ctx.s("tests.json"), ""
    stamp_path, stamp_text = os.path.join(build, ".gpu-check-stamp"), f"{commit} sm_{arch}\n"
    try:
        with open(stamp_path) as f:
            reuse = f.read() == stamp_text and os.path.exists(os.path.join(build, "build.ninja"))
    except OSError:
        reuse = False
    # Without .git, tools/git-commit takes the commit the build embeds from REVGRAPH_GIT_COMMIT.
    # The Python package is not built: the device has no pybind11, and no step needs it.
    stamp = {"REVGRAPH_GIT_COMMIT": commit, **gpudeps_env(ROOT, env)}
    steps = []
    if not reuse:
        shutil.rmtree(build, ignore_errors=True)
        # Writes the stamp only once meson has configured the folder.
        steps.append(Step("configure", CONFIGURE_SECONDS, "binaries",
                          ["sh", "-c", 'meson setup "$@" && printf %s "$STAMP" > "$0/.gpu-check-stamp"', build, build,
                           "-Dcuda=enabled", f"-Dgpu_arch={arch}", "--buildtype=release", "-Dpython=disabled"],
                          True, False, dict(stamp, STAMP=stamp_text)))
    steps.append(Step("build", BUILD_SECONDS, "binaries",
                      ["ninja", "-C", build, "-j", str(os.cpu_count() or 4), *BUILD_TARGETS], True, False, stamp))
    return steps, arch


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
