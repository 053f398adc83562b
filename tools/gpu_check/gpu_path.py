"""What the GPU path compiles, and its digest: the evidence key of every gpu-check report.

The GPU path is every translation unit under engine/cuda/ and graphs/ (the GPU backends' device
code, their host side, the launch plan they run and its CPU interpreter) and every file of the tree
those include, as the compiler's preprocessor sees it: `c++ -MM -MG` over the units, once as the
host compiler compiles them and once for each way nvcc compiles a .cu file (its host pass, and its
device passes for sm_80 and sm_90), the union kept. No list is kept by hand: a header a GPU source
starts to include is in the digest from that commit on, and a header nothing there includes
(qualify, io, the CPU backends) is not. `-MG` lets a missing system header (the CUDA toolkit's,
where none is installed) pass, so the set is the same on a machine with or without CUDA, and no
build is needed.

Each file counts by its C++ tokens (cxx_tokens.py: comments and layout do not count, every token's
spelling does), so a comment or a re-wrapped line anywhere leaves a report current, and any change
to code the GPU compiles makes it not current. The digest is the sha256 of a sha256sum-style
listing ("<sha256 of the file's tokens>  <path>", sorted by path), named by SCHEME so that a digest
of another rule can never be taken for one of this rule.

What it does not see, said where it matters (docs/gpu.md): compile flags (meson.build's nvcc options;
a report records the build's gpu_arch and the device it ran on) and the libraries the build links.
"""
import os
import shlex
import shutil
import subprocess
import sys

from . import cxx_tokens

SCHEME = "gpu-path/1"
ROOT_DIRS = ("engine/cuda", "graphs")  # the GPU backends' folders
UNIT_SUFFIXES = (".cpp", ".cu")
SOURCE_SUFFIXES = (".cpp", ".cu", ".hpp", ".cuh", ".inl", ".h")
# How each kind of unit is preprocessed by the build: the host compiler with CUDA on; nvcc's host
# pass (__CUDACC__) and its device passes (__CUDA_ARCH__) for .cu files.
_HOST = ["-DREVGRAPH_HAVE_CUDA=1"]
_PASSES = {
    ".cpp": [_HOST],
    ".cu": [_HOST + ["-D__CUDACC__"]] + [_HOST + ["-D__CUDACC__", f"-D__CUDA_ARCH__={a}"] for a in (800, 900)],
}


class GpuPathError(RuntimeError):
    """The digest cannot be computed here (no C++ compiler, a file the preprocessor refuses)."""


def compiler(env=None):
    """The C++ compiler whose preprocessor names the includes: $CXX, else c++, g++, clang++."""
    env = os.environ if env is None else env
    for candidate in ([env["CXX"]] if env.get("CXX") else []) + ["c++", "g++", "clang++"]:
        argv = shlex.split(candidate)
        if argv and shutil.which(argv[0]):
            return argv
    raise GpuPathError("the GPU path's digest needs a C++ compiler for its include list (-MM): "
                       "none of $CXX, c++, g++, clang++ is on PATH")


def units(root):
    """The translation units of the GPU path, relative to root, sorted."""
    found = []
    for top in ROOT_DIRS:
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = sorted(s for s in subdirs if s != "__pycache__")
            found += [os.path.relpath(os.path.join(d, f), root) for f in files if f.endswith(UNIT_SUFFIXES)]
    return sorted(found)


def _dependencies(make_rules, root):
    """The paths inside root that make rules ("target: dep dep \\\\ ...") name."""
    text = make_rules.replace("\\\n", " ")
    out = set()
    for line in text.splitlines():
        if ":" not in line:
            continue
        for dep in shlex.split(line.split(":", 1)[1]):
            path = os.path.normpath(dep if os.path.isabs(dep) else os.path.join(root, dep))
            rel = os.path.relpath(path, root)
            if not rel.startswith("..") and os.path.isfile(path):
                out.add(rel.replace(os.sep, "/"))
    return out


def files(root, cxx=None):
    """Every file of the GPU path (units and what they include), relative to root, sorted."""
    cxx = cxx or compiler()
    all_units = units(root)
    deps = set(all_units)
    for suffix, passes in _PASSES.items():
        group = [u for u in all_units if u.endswith(suffix)]
        if not group:
            continue
        for defines in passes:
            lang = ["-x", "c++"]
            argv = cxx + ["-std=c++20", "-MM", "-MG", "-I", "."] + defines + lang + group
            p = subprocess.run(argv, cwd=root, capture_output=True, text=True)
            if p.returncode != 0:
                first = (p.stderr.strip().splitlines() or ["(no message)"])[0]
                raise GpuPathError(f"the preprocessor refused the GPU path ({' '.join(argv[:1])} -MM): {first}")
            deps |= _dependencies(p.stdout, root)
    return sorted(d for d in deps if d.endswith(SOURCE_SUFFIXES))


def file_digest(path):
    """sha256 of one source file's tokens."""
    import hashlib
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return hashlib.sha256(cxx_tokens.token_bytes(text)).hexdigest()
    except cxx_tokens.LexError as e:
        raise GpuPathError(f"{path}: {e}") from None


def digest(root, cxx=None):
    """{"scheme", "sha256", "files": [paths]}: the GPU path of the tree at root."""
    import hashlib
    paths = files(root, cxx)
    listing = "".join(f"{file_digest(os.path.join(root, p))}  {p}\n" for p in paths)
    return {"scheme": SCHEME, "sha256": hashlib.sha256(listing.encode()).hexdigest(), "files": paths}


if __name__ == "__main__":  # python3 -m gpu_check.gpu_path [ROOT]: the listing, then the digest
    here = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    d = digest(here)
    for p in d["files"]:
        print(f"{file_digest(os.path.join(here, p))}  {p}")
    print(f"{d['scheme']} {d['sha256']} ({len(d['files'])} files)")
