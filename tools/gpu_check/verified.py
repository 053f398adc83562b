"""Which GPU backends `auto` may pick: those a passing gpu-check report speaks for, fastest first.

  python3 tools/gpu_check/verified.py SOURCE_ROOT [--gpu-arch=LIST]

prints one line, "<backends>;<report>;<why>;<device>;<gpu_arch>" (backends comma-separated, fastest
first by the report's median task time, empty where none; device: the GPU the report ran on, as
cuda::describe_device() names it, "NVIDIA H200 (sm_90)"; gpu_arch: the build's, as given), which engine/meson.build's vcs_tag writes into the build's
gpu_verified_tag.cpp on every build (engine/gpu_verified.cpp parses it). A backend is verified where
the report that speaks for the tree's GPU path (currency.speaking_report) passed
(currency.verdict); a GPU path whose sources changed after its report is unverified
again, and `auto` then runs on the CPU. The line holds no ';' or '"' of its own, so it can sit in a
C++ string literal as it is. A report speaks only for a build with its machine code (--gpu-arch,
the build's gpu_arch list, must be the report's one architecture) and, at run time, only for its GPU:
`auto` compares the device it finds with <device> (engine/backends.cpp).
"""
import os
import sys

if __package__ in (None, ""):  # run as a script by the build: import the package beside it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from gpu_check.currency import speaking_report, tree_digest, verdict  # noqa: E402
    from gpu_check.gpu_path import GpuPathError  # noqa: E402
else:
    from .currency import speaking_report, tree_digest, verdict
    from .gpu_path import GpuPathError

# The engine's GPU backends, by hand: this script runs while the engine is built (its line goes into
# the engine's own sources), so there is no `revgraph backends --json` to ask yet.
# python/tests/test_gpu_check_backends.py holds this list to that JSON's rows with gpu true.
GPU_BACKENDS = ("cuda", "cuda-fused")


def _clean(text):
    """The text with nothing that would split the build's line or end its C++ string literal."""
    return text.replace(";", ",").replace('"', "'").replace("\\", "/")


def verified(root, results_dir=None, gpu_arch=None):
    """{"backends": [...] fastest first, "report": path relative to root or "", "why": one line},
    "device": the report's GPU or ""},
    exactly as the build writes them (engine/gpu_verified.cpp parses them back). gpu_arch: the
    build's architectures ("90", "80,90"; "" for a build without CUDA; None: not checked). The report is the
    newest call-1 report of this tree's GPU path (a newer report of other sources, say a
    branch's, does not hide it); where there is none, the newest call-1 report says why not."""
    results_dir = results_dir or os.path.join(root, "bench", "results")
    try:
        tree = tree_digest(root)
    except GpuPathError as e:
        return {"backends": [], "report": "", "why": _clean(f"no verdict: {e}"), "device": ""}
    path, report = speaking_report(results_dir, tree)
    if report is None:
        return {"backends": [], "report": "", "why": "no gpu-check report under bench/results", "device": ""}
    ok, line = verdict(path, report, tree)
    rel, line = _clean(os.path.relpath(path, root)), _clean(line)
    device = _clean(str((report.get("numerical_validation") or {}).get("device") or ""))
    if ok and gpu_arch is not None and gpu_arch != str(report.get("gpu_arch")):
        ok, line = False, _clean(f"this build's gpu_arch ({gpu_arch or 'no CUDA'}) is not the report's "
                                 f"({report.get('gpu_arch')}): {line}")
    if ok and not device:
        ok, line = False, _clean(f"the report names no device: {line}")
    if not ok:
        return {"backends": [], "report": rel, "why": line, "device": device}
    timing = report.get("timing") or {}
    ms = {b: ((timing.get(b) or {}).get("task_ms") or {}).get("median") for b in GPU_BACKENDS}
    backends = sorted((b for b in GPU_BACKENDS if isinstance(ms[b], (int, float))), key=lambda b: ms[b])
    return {"backends": backends, "report": rel, "why": line, "device": device}


def tag(root, gpu_arch=None):
    v = verified(root, gpu_arch=gpu_arch)
    return f"{','.join(v['backends'])};{v['report']};{v['why']};{v['device']};{gpu_arch or ''}"


if __name__ == "__main__":
    args = sys.argv[1:]
    arch = next((a.split("=", 1)[1] for a in args if a.startswith("--gpu-arch=")), None)
    roots = [a for a in args if not a.startswith("--")]
    print(tag(os.path.abspath(roots[0] if roots else "."), arch))
