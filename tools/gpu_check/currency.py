"""Whether a GPU report still speaks for this tree.

Every gpu-check report records the digest of the GPU path it ran (gpu_path.py: what engine/cuda/ and
graphs/ compile, includes found by the compiler's -MM, each file by its tokens), and a report speaks
for a tree whose GPU path has that digest. A report written before that rule recorded the sha256 of
every byte of engine/ and graphs/ instead (`gpu_sources`, LEGACY_SCHEME); `carry` computes the new
digest of such a report's commit from git and records it beside the report
(<report>.carried.json), after checking that the commit's tree gives the digest the report
recorded — so the evidence of a run survives the change of rule, and nothing else does.

  tools/gpu-check current [--results DIR] [--report FILE]
  tools/gpu-check carry REPORT [--commit C]

`current` prints one line and exits 0 only where the newest call-1 report under DIR (default
bench/results; newest by its written_utc) or FILE is current for this tree and passed; 1 where it is
stale, failed, records no digest of this rule, or there is none; 2 on a bad command line or where the
digest cannot be computed. `carry` exits 0 with the sidecar written, 1 where the commit's tree is not
the report's. test/tools/test_gpu_check_currency.py checks both on the real history and on made-up
trees and reports.
"""
import argparse
import datetime
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

from . import gpu_path
from .steps import ROOT, OneLineParser

LEGACY_SCHEME = "engine+graphs/bytes"  # what reports recorded as gpu_sources before gpu-path/1
LEGACY_DIRS = ("engine", "graphs")
CARRIED_SUFFIX = ".carried.json"


def legacy_sources(root):
    """The digest reports recorded before gpu-path/1: a sha256sum-style listing of every file under
    engine/ and graphs/ (bytes, paths relative to root, sorted), hashed. Kept to check a carry."""
    lines = []
    for top in LEGACY_DIRS:
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs[:] = sorted(x for x in subdirs if x != "__pycache__")
            for name in files:
                if name.endswith(".pyc"):
                    continue
                path = os.path.join(d, name)
                with open(path, "rb") as f:
                    lines.append(f"{hashlib.sha256(f.read()).hexdigest()}  {os.path.relpath(path, root)}\n")
    lines.sort(key=lambda line: line.split("  ", 1)[1])
    return {"scheme": LEGACY_SCHEME, "sha256": hashlib.sha256("".join(lines).encode()).hexdigest(),
            "files": len(lines)}


def tree_digest(root):
    """The GPU path digest of the tree at root (gpu_path.digest)."""
    return gpu_path.digest(root)


def load_report(path):
    """A gpu-check report (any call), or None for any other file."""
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return None
    return r if isinstance(r, dict) and "steps" in r and "git_commit" in r and "written_utc" in r else None


def carried_path(report_path):
    return report_path[:-len(".json")] + CARRIED_SUFFIX if report_path.endswith(".json") else report_path + CARRIED_SUFFIX


def digests(report_path, report):
    """[(sha256, how)]: the GPU path digests a report speaks for — its own, where it recorded one of
    this rule, and one carried beside it."""
    out = []
    own = report.get("gpu_path") or {}
    if own.get("scheme") == gpu_path.SCHEME and own.get("sha256"):
        out.append((own["sha256"], "its own"))
    try:
        with open(carried_path(report_path)) as f:
            carried = json.load(f)
        c = carried.get("gpu_path") or {}
        if c.get("scheme") == gpu_path.SCHEME and c.get("sha256"):
            out.append((c["sha256"], f"carried ({os.path.basename(carried_path(report_path))})"))
    except (OSError, ValueError, AttributeError):
        pass
    return out


def reports(results_dir, call=1):
    """[(written_utc, path, report)] of every gpu-check report of `call` under results_dir, newest
    first. Reports written before calls were numbered count as call 1 (their kind was "main")."""
    found = []
    for path in glob.glob(os.path.join(results_dir, "*.json")):
        r = load_report(path)
        if r is None or r.get("call", 1 if r.get("kind") in (None, "main") else None) != call:
            continue
        found.append((r.get("written_utc", ""), path, r))
    return sorted(found, key=lambda x: (x[0], x[1]), reverse=True)


def newest_report(results_dir, call=1, sources=None):
    """(path, report) of the newest gpu-check report of `call` under results_dir (only those that
    speak for the GPU path digest `sources`, where given), or (None, None)."""
    for _, path, r in reports(results_dir, call):
        if sources is None or any(d == sources for d, _ in digests(path, r)):
            return path, r
    return None, None


def speaking_report(results_dir, tree):
    """(path, report): the report that speaks for the tree — the newest call-1 report of its GPU
    path (a newer report of other sources, say an experiment's, does not hide it) — or, where none
    is of this GPU path, the newest call-1 report, whose verdict then says why not; (None, None)
    where there is no report. One rule for `current`, `auto` (verified.py) and the index."""
    path, report = newest_report(results_dir, sources=tree["sha256"])
    return (path, report) if report is not None else newest_report(results_dir)


def verdict(report_path, report, tree):
    """(current and passed, one line) of a report for a tree's digest (tree_digest)."""
    what = f"commit {report.get('git_commit')}, written {report.get('written_utc')}"
    known = digests(report_path, report)
    if not known:
        return False, (f"unverified: the report ({what}) records no digest of the GPU path ({gpu_path.SCHEME}) "
                       f"and none is carried beside it")
    match = next((how for d, how in known if d == tree["sha256"]), None)
    if match is None:
        return False, (f"unverified: the GPU path changed since the report ({what}; its digest "
                       f"{known[0][0][:12]}, here {tree['sha256'][:12]})")
    if report.get("passed") is not True:
        return False, f"current but not passing: the report ({what}) did not pass"
    return True, (f"current and passed: the report ({what}) is of this GPU path "
                  f"({tree['sha256'][:12]}, {len(tree['files'])} files; digest {match})")


def _git(args, cwd):
    return subprocess.run(["git", "-C", cwd] + args, capture_output=True, text=True)


def checkout(commit, root, into):
    """The tree of `commit` (from root's git) unpacked into the folder `into`."""
    archive = subprocess.run(["git", "-C", root, "archive", "--format=tar", commit], capture_output=True)
    if archive.returncode != 0:
        raise ValueError(f"git cannot give commit {commit}: {archive.stderr.decode().strip()[:200]}")
    subprocess.run(["tar", "-x", "-C", into], input=archive.stdout, check=True)


def carry(report_path, commit=None, root=ROOT, now=None):
    """The carried digest of a legacy report: its commit's tree checked against the report's
    gpu_sources, then digested by gpu-path/1. Returns the sidecar's content (not written)."""
    report = load_report(report_path)
    if report is None:
        raise ValueError(f"{report_path} is not a gpu-check report")
    recorded = (report.get("gpu_sources") or {}).get("sha256")
    if not recorded:
        raise ValueError(f"{report_path} records no legacy digest (gpu_sources) to check a carry against")
    commit = commit or report.get("git_commit")
    full = _git(["rev-parse", "--verify", f"{commit}^{{commit}}"], root)
    if full.returncode != 0:
        raise ValueError(f"commit {commit} is not in this repository's history (a shallow clone?)")
    full = full.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="gpu-check-carry.") as tree:
        checkout(full, root, tree)
        legacy = legacy_sources(tree)
        if legacy["sha256"] != recorded:
            raise ValueError(f"commit {full[:12]}'s engine/ and graphs/ are not the report's "
                             f"({legacy['sha256'][:12]} against the recorded {recorded[:12]})")
        new = tree_digest(tree)
    return {"report": os.path.basename(report_path), "commit": full,
            "legacy": {"scheme": LEGACY_SCHEME, "sha256": recorded, "checked_equal": True},
            "gpu_path": new,
            "how": f"git archive {full[:12]}; tools/gpu-check carry (tools/gpu_check/currency.py)",
            "written_utc": now or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def carry_main(argv):
    ap = OneLineParser(prog="gpu-check carry", description="record the gpu-path digest of a legacy report's commit beside it")
    ap.add_argument("report")
    ap.add_argument("--commit", help="the commit to check (default: the report's git_commit)")
    ap.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    try:
        sidecar = carry(a.report, a.commit, a.root)
    except (ValueError, gpu_path.GpuPathError, OSError, subprocess.CalledProcessError) as e:
        print(f"gpu-check carry: error: {e}", file=sys.stderr)
        return 1
    out = carried_path(a.report)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(sidecar, f, indent=1)
        f.write("\n")
    os.replace(tmp, out)
    print(f"gpu-check carry: {os.path.basename(out)}: commit {sidecar['commit'][:12]} checked "
          f"({LEGACY_SCHEME} {sidecar['legacy']['sha256'][:12]}), {gpu_path.SCHEME} {sidecar['gpu_path']['sha256'][:12]}")
    return 0


def main(argv=None):
    ap = OneLineParser(prog="gpu-check current", description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--report", help="this report instead of the newest under --results")
    ap.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)  # the tree (tests)
    a = ap.parse_args(argv)
    try:
        tree = tree_digest(a.root)
    except gpu_path.GpuPathError as e:
        print(f"gpu-check current: error: {e}", file=sys.stderr)
        return 2
    if a.report:
        path, report = a.report, load_report(a.report)
        if report is None:
            print(f"gpu-check current: error: {a.report} is not a gpu-check report", file=sys.stderr)
            return 2
    else:
        path, report = speaking_report(a.results, tree)
        if report is None:
            print(f"unverified: no gpu-check report under {a.results}")
            return 1
    ok, line = verdict(path, report, tree)
    print(f"{line} [{os.path.relpath(path, a.root) if path.startswith(a.root) else path}]")
    return 0 if ok else 1
