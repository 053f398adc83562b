"""Whether a GPU report still speaks for this tree: every gpu-check report records the sha256 of
the GPU path's sources (engine/ and graphs/, gpu_sources below), and a report whose digest is not the
tree's is of other code, so the GPU path is unverified again.

  tools/gpu-check current [--results DIR] [--report FILE]

prints one line and exits 0 only where the newest gpu-check report under DIR (default bench/results;
newest by its written_utc) or FILE is current for this tree and passed; 1 where it is stale, failed,
records no digest, or there is none; 2 on a bad command line. test/tools/test_gpu_check_currency.py
checks it on made-up trees and reports.
"""
import argparse
import glob
import hashlib
import json
import os
import sys

from .steps import ROOT, OneLineParser

GPU_SOURCE_DIRS = ("engine", "graphs")  # what the GPU backends are built from (tools/ and bench/ drive them)
SKIPPED = ("__pycache__",)


def gpu_sources(root):
    """{"sha256", "files", "dirs"}: the digest of a sha256sum-style listing ("<sha256>  <path>" per
    file, paths relative to root, sorted) of every file under GPU_SOURCE_DIRS. The same on a tree
    with .git and on the device's copy without it (a file walk, not git's index)."""
    lines = []
    for top in GPU_SOURCE_DIRS:
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = sorted(x for x in subdirs if x not in SKIPPED)
            for name in files:
                if name.endswith(".pyc"):
                    continue
                path = os.path.join(d, name)
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                lines.append(f"{digest}  {os.path.relpath(path, root)}\n")
    lines.sort(key=lambda line: line.split("  ", 1)[1])
    return {"sha256": hashlib.sha256("".join(lines).encode()).hexdigest(), "files": len(lines),
            "dirs": list(GPU_SOURCE_DIRS)}


def load_report(path):
    """A gpu-check report (any call), or None for any other file."""
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return None
    return r if isinstance(r, dict) and "steps" in r and "git_commit" in r and "written_utc" in r else None


def newest_report(results_dir, call=1, sources=None):
    """(path, report) of the newest gpu-check report of `call` under results_dir (only those of the
    GPU sources digest `sources`, where given), or (None, None). Reports written before calls were
    numbered count as call 1 (their kind was "main")."""
    found = []
    for path in glob.glob(os.path.join(results_dir, "*.json")):
        r = load_report(path)
        if r is None or r.get("call", 1 if r.get("kind") in (None, "main") else None) != call:
            continue
        if sources is None or (r.get("gpu_sources") or {}).get("sha256") == sources:
            found.append((r.get("written_utc", ""), path, r))
    if not found:
        return None, None
    _, path, r = max(found)
    return path, r


def verdict(report, tree):
    """(current and passed, one line)."""
    recorded = (report.get("gpu_sources") or {}).get("sha256")
    what = f"commit {report.get('git_commit')}, written {report.get('written_utc')}"
    if not recorded:
        return False, f"unverified: the report ({what}) records no digest of the GPU sources"
    if recorded != tree["sha256"]:
        return False, (f"unverified: engine/ and graphs/ changed since the report ({what}; its sources "
                       f"{recorded[:12]}, here {tree['sha256'][:12]})")
    if report.get("passed") is not True:
        return False, f"current but not passing: the report ({what}) did not pass"
    return True, f"current and passed: the report ({what}) is of these engine/ and graphs/ ({recorded[:12]})"


def main(argv=None):
    ap = OneLineParser(prog="gpu-check current", description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--report", help="this report instead of the newest under --results")
    ap.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)  # the tree (tests)
    a = ap.parse_args(argv)
    if a.report:
        path, report = a.report, load_report(a.report)
        if report is None:
            print(f"gpu-check current: error: {a.report} is not a gpu-check report", file=sys.stderr)
            return 2
    else:
        path, report = newest_report(a.results)
        if report is None:
            print(f"unverified: no gpu-check report under {a.results}")
            return 1
    ok, line = verdict(report, gpu_sources(a.root))
    print(f"{line} [{os.path.relpath(path, a.root) if path.startswith(a.root) else path}]")
    return 0 if ok else 1
