"""Which GPU backends `auto` may pick: those a passing gpu-check report speaks for, fastest first.

  python3 tools/gpu_check/verified.py SOURCE_ROOT

prints one line, "<backends>;<report>;<why>" (backends comma-separated, fastest first by the report's
median task time; empty where none), which engine/meson.build's vcs_tag writes into the build's
gpu_verified_tag.cpp on every build (engine/gpu_verified.cpp parses it). A backend is verified where
the newest call-1 report of the tree's engine/ and graphs/ under bench/results passed
(currency.verdict); a GPU path whose sources changed after its report is unverified
again, and `auto` then runs on the CPU. The line holds no ';' or '"' of its own, so it can sit in a
C++ string literal as it is. Not checked yet: that the GPU `auto` meets, or the build's gpu_arch,
is the report's (an sm_90 H200); the engine side of that waits on the next GPU-verified change.
"""
import os
import sys

if __package__ in (None, ""):  # run as a script by the build: import the package beside it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from gpu_check.currency import gpu_sources, newest_report, verdict  # noqa: E402
else:
    from .currency import gpu_sources, newest_report, verdict

GPU_BACKENDS = ("cuda", "cuda-fused")


def _clean(text):
    """The text with nothing that would split the build's line or end its C++ string literal."""
    return text.replace(";", ",").replace('"', "'").replace("\\", "/")


def verified(root, results_dir=None):
    """{"backends": [...] fastest first, "report": path relative to root or "", "why": one line},
    exactly as the build writes them (engine/gpu_verified.cpp parses them back). The report is the
    newest call-1 report of this tree's engine/ and graphs/ (a newer report of other sources, say a
    branch's, does not hide it); where there is none, the newest call-1 report says why not."""
    results_dir = results_dir or os.path.join(root, "bench", "results")
    tree = gpu_sources(root)
    path, report = newest_report(results_dir, sources=tree["sha256"])
    if report is None:
        path, report = newest_report(results_dir)
    if report is None:
        return {"backends": [], "report": "", "why": "no gpu-check report under bench/results"}
    ok, line = verdict(report, tree)
    rel, line = _clean(os.path.relpath(path, root)), _clean(line)
    if not ok:
        return {"backends": [], "report": rel, "why": line}
    timing = report.get("timing") or {}
    ms = {b: ((timing.get(b) or {}).get("task_ms") or {}).get("median") for b in GPU_BACKENDS}
    backends = sorted((b for b in GPU_BACKENDS if isinstance(ms[b], (int, float))), key=lambda b: ms[b])
    return {"backends": backends, "report": rel, "why": line}


def tag(root):
    v = verified(root)
    return f"{','.join(v['backends'])};{v['report']};{v['why']}"


if __name__ == "__main__":
    print(tag(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")))
