"""bench/results/INDEX.md and README.md's GPU status, written from the reports themselves.

  tools/gpu-check index [--check]              write them (--check: exit 1 where they are stale)
  tools/gpu-check file OUT_DIR [OUT_DIR ...]   copy a GPU machine's reports into bench/results under
                                               their names, then write the index

Every measured GPU figure of revgraph lives in one place, the index, generated from the committed
reports: what speaks for this tree first (the report `auto` and `gpu-check current` take, with its
headline figures), then every run newest first — date, commit, call, verdict (a failed one marked
FAILED with why), what it measured — and the CPU measurements. README.md carries a short block of
the same text between its gpu-status markers, so the front door never disagrees with the evidence.
test/tools/test_gpu_check_index.py fails when either file is not what this module writes.

File names: <date>-<HHMM>-<gpu>-<commit>-<what>.<ext>, the time being the run's (its first report's
written_utc), so the folder lists in the order the runs happened; `file` gives new reports theirs.
"""
import glob
import json
import os
import re
import shutil
import sys

from . import currency
from .report_shapes import shape_line
from .steps import ROOT, OneLineParser

INDEX = "INDEX.md"
README_BEGIN = "<!-- measured: written by tools/gpu-check index from bench/results; do not edit -->"
README_END = "<!-- /measured -->"
# The engine's GPU backends, in the index's column order, by hand: the index is written from the
# source tree, with no build to ask. python/tests/test_gpu_check_backends.py holds this list to
# `revgraph backends --json`'s rows with gpu true.
BACKENDS = ("cuda-fused", "cuda")
_STEM = re.compile(r"^(\d{4}-\d{2}-\d{2})-(\d{4})-([a-z0-9]+)-([0-9a-f]{7,40})-(.+)$")


def _ms(x):
    return "—" if not isinstance(x, (int, float)) else (f"{x:.2f}" if x < 100 else f"{x:.0f}")


def _get(d, *keys):
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None
    return d


def gpu_slug(device):
    """'NVIDIA H200, 580.1, 143771 MiB' -> 'h200'."""
    name = str(device or "gpu").split(",")[0].split("(")[0].strip().lower().replace("nvidia", "").strip()
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu"


def report_stem(report):
    """The stem every file of a report's run shares: <date>-<HHMM>-<gpu>-<commit7>."""
    when = str(report.get("written_utc", "0000-00-00T00:00"))
    return f"{when[:10]}-{when[11:13]}{when[14:16]}-{gpu_slug(report.get('device'))}-{str(report.get('git_commit'))[:7]}"


def report_file_name(report):
    return f"{report_stem(report)}-call{report.get('call', 1)}.json"


def _task(timing, backend):
    return _get(timing, backend, "task_ms", "median"), _get(timing, backend, "task_ms_cold", "median")


def measured(report):
    """One line: what the report measured, from its own keys."""
    parts = []
    timing = report.get("timing") or {}
    speed = {b: _get(report, "targets", b, "speedup_vs_torch-cuda-graph", "measured") for b in BACKENDS}
    for b in BACKENDS + ("torch-cuda-graph", "torch-eager"):
        warm, _ = _task(timing, b)
        if warm is not None:
            parts.append(f"{b} {_ms(warm)} ms" + (f" ({speed[b]}×)" if speed.get(b) else ""))
    for b, e in (report.get("energy") or {}).items():
        if isinstance(e, dict) and isinstance(e.get("joules_per_task"), (int, float)):
            parts.append(f"{b} {e['joules_per_task']:.3f} J/task net")
    same = _get(report, "programmatic_launch", "same_call")
    if isinstance(same, dict) and same.get("saving") is not None:
        parts.append(f"PDL {_ms(same.get('pdl_ms'))} vs plain {_ms(same.get('plain_ms'))} ms")
    for t in report.get("throughput") if isinstance(report.get("throughput"), list) else []:
        if t.get("tasks") == 16 and "cuda-fused" in str(t.get("name")):
            parts.append(f"16 tasks: cuda-fused {_ms(t.get('ms_per_task'))} ms/task")
    san = report.get("compute_sanitizer")
    if isinstance(san, dict) and san:
        verdicts = sorted({v.get("verdict") for v in san.values() if isinstance(v, dict)} - {None})
        parts.append(f"compute-sanitizer {'/'.join(verdicts) or 'run'} ({len(san)} runs)")
    for band, r in sorted((report.get("race") or {}).items(), key=lambda x: -float(x[0])):
        parts.append(f"race {band} %: {_ms(r.get('mean_ms'))} ms a call, {r.get('ranked_correct')} correct"
                     + (f" ({r.get('result')})" if r.get("result") else ""))
    for eid, row in (report.get("shapes") or {}).items():  # calls 5-7: the frontier's and the race's shapes
        if isinstance(row, dict):
            parts.append(shape_line(eid, row))
    if report.get("ncu_csv"):
        parts.append("ncu per kernel")
    if report.get("cuda_fused_bit_equal_to_cpu_reference") is True:
        parts.append("cuda-fused bit-equal to the CPU trainer")
    return "; ".join(parts) or "(no timing: see its steps)"


def verdict_cell(report):
    if report.get("passed") is True:
        return "passed" if report.get("complete", True) else "passed (incomplete)"
    why = "; ".join(report.get("failures") or []) or ("incomplete" if not report.get("complete") else "see the report")
    return f"**FAILED** — {why}"


def _group_files(results_dir):
    """{stem: [file names]} for every file named by the rule, and [other files]."""
    groups, others = {}, []
    for path in sorted(glob.glob(os.path.join(results_dir, "*"))):
        name = os.path.basename(path)
        if name == INDEX or os.path.isdir(path):
            continue
        m = _STEM.match(name)
        if m:
            groups.setdefault("-".join(m.groups()[:4]), []).append(name)
        else:
            others.append(name)
    return groups, others


def headline(results_dir, root, tree):
    """(speaking path or None, ok, verdict line, the report)."""
    path, report = currency.speaking_report(results_dir, tree)
    if report is None:
        return None, False, "no gpu-check report under bench/results", None
    ok, line = currency.verdict(path, report, tree)
    return path, ok, line, report


def figures_table(report, companions):
    """The headline table of a call-1 report (and facts its later calls of the same commit add)."""
    timing = report.get("timing") or {}
    energy = dict(report.get("energy") or {})
    for c in companions:
        for k, v in (c.get("energy") or {}).items():
            energy.setdefault(k, v)
    rows = ["| rev88, one 10k/10k task | ms a task (after an L2 flush) | × vs the PyTorch CUDA graph | J a task, net of idle (gross) |",
            "|---|---|---|---|"]
    for b in BACKENDS + ("torch-cuda-graph",):
        warm, cold = _task(timing, b)
        if warm is None:
            continue
        speed = "1" if b == "torch-cuda-graph" else str(_get(report, "targets", b, "speedup_vs_torch-cuda-graph", "measured") or "—")
        e = energy.get(b) or {}
        joules = (f"{e['joules_per_task']:.3f} ({e.get('gross_joules_per_task', 0):.2f})"
                  if isinstance(e.get("joules_per_task"), (int, float)) else "—")
        rows.append(f"| `{b}` | {_ms(warm)} ({_ms(cold)}) | {speed} | {joules} |")
    return rows


def checks_lines(report, companions):
    lines = []
    nv = {b: _get(report, k, "passed") for b, k in (("cuda", "numerical_validation"), ("cuda-fused", "numerical_validation_fused"))}
    lines.append("- step by step against the float64 reference: " + ", ".join(
        f"`{b}` {'passed' if v else 'not passed' if v is False else 'not run'}" for b, v in nv.items()))
    if report.get("cuda_fused_bit_equal_to_cpu_reference") is not None:
        lines.append(f"- `cuda-fused` gives the float32 CPU trainer's very bits: "
                     f"{'yes' if report['cuda_fused_bit_equal_to_cpu_reference'] else 'NO'}")
    two = [_get(report, k, "identical") for k in ("two_process_repeatability", "two_process_repeatability_fused")]
    if any(t is not None for t in two):
        lines.append(f"- two fresh processes byte-identical: {'yes' if all(two) else 'NO'}")
    for c in companions:
        same = _get(c, "programmatic_launch", "same_call")
        if isinstance(same, dict) and same.get("saving") is not None:
            lines.append(f"- call {c.get('call')}: `cuda-fused` with Programmatic Dependent Launch {_ms(same.get('pdl_ms'))} ms "
                         f"against {_ms(same.get('plain_ms'))} plain ({100 * same['saving']:.1f}% saved)")
        tp = {str(t.get("name")).split("/")[1]: t.get("ms_per_task") for t in (c.get("throughput") if isinstance(c.get("throughput"), list) else []) if t.get("tasks") == 16}
        if tp:
            lines.append(f"- call {c.get('call')}: 16 tasks at once, ms a task: " + ", ".join(f"`{b}` {_ms(v)}" for b, v in sorted(tp.items())))
        for eid, row in (c.get("shapes") or {}).items():  # calls 5-7: each frontier entry's and race band's shape
            if isinstance(row, dict):
                lines.append(f"- call {c.get('call')}: {shape_line(eid, row)}")
        san = c.get("compute_sanitizer")
        if isinstance(san, dict) and san:
            lines.append(f"- call {c.get('call')}: compute-sanitizer " + ", ".join(
                f"{k.replace('sanitize-', '')} {v.get('verdict')}" for k, v in sorted(san.items()) if isinstance(v, dict)))
    return lines


def _companions(results_dir, report):
    out = []
    for call in (2, 3, 5, 6, 7):
        for _, p, r in currency.reports(results_dir, call):
            if r.get("git_commit") == report.get("git_commit"):
                out.append(r)
                break
    return out


def cpu_headline(results_dir):
    """One line from the newest bench/compare/compare_torch report: the fast CPU backend against the
    same-spec PyTorch learner, eager, one thread each, in one run."""
    newest = None
    for path in glob.glob(os.path.join(results_dir, "*-cpu-compare-*.json")):
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, ValueError):
            continue
        key = (str(r.get("date")), path)
        if _get(r, "timing", "cpu", "task_ms", "median") and _get(r, "timing", "torch-eager", "task_ms", "median"):
            newest = max(newest or (key, r), (key, r), key=lambda x: x[0])
    if newest is None:
        return None
    (date, path), r = newest
    cpu, torch = r["timing"]["cpu"]["task_ms"]["median"], r["timing"]["torch-eager"]["task_ms"]["median"]
    name = os.path.basename(path)
    return (f"On the CPU, one thread: `cpu` {_ms(cpu)} ms a rev88 task, {torch / cpu:.1f}× the same-spec PyTorch learner "
            f"(eager, {_ms(torch)} ms) in the same run on a {_get(r, 'machine', 'cpus')}-core "
            f"{_get(r, 'machine', 'cpu_model')} ([bench/results/{name}](bench/results/{name}), {date[:10]}).")


def render(results_dir=None, root=ROOT):
    """(INDEX.md text, README block lines)."""
    results_dir = results_dir or os.path.join(root, "bench", "results")
    tree = currency.tree_digest(root)
    path, ok, line, report = headline(results_dir, root, tree)
    rel = os.path.basename(path) if path else None
    out = ["# Results", "",
           "Written by `tools/gpu-check index` from the files in this folder; do not edit by hand (the",
           "`results-index` test fails where this page and the folder disagree). Every measured GPU figure",
           "of revgraph is here; README.md's GPU status is a few lines of the same text. How a run is made:",
           "[docs/gpu.md](../../docs/gpu.md).", "",
           "## What speaks for this tree's GPU path", ""]
    readme = []
    digest = f"`{tree['scheme']}` {tree['sha256'][:12]}, {len(tree['files'])} files"
    if ok:
        companions = _companions(results_dir, report)
        when = str(report.get("written_utc"))[:16].replace("T", " ")
        how = "its own digest" if "its own" in line else "the digest carried beside it"
        out += [f"**Verified.** [{rel}]({rel}) — {str(report.get('device')).split(',')[0]}, commit "
                f"`{str(report.get('git_commit'))[:7]}`, {when} UTC, call 1 passed — speaks for this tree's GPU path "
                f"({digest}; by {how}).", ""]
        out += figures_table(report, companions) + [""]
        out += checks_lines(report, companions) + [""]
        gpu = str(report.get("device")).split(",")[0]
        t = report.get("timing") or {}
        fused, plain = _task(t, "cuda-fused")[0], _task(t, "cuda")[0]
        torch_ms = _task(t, "torch-cuda-graph")[0]
        sp = {b: _get(report, "targets", b, "speedup_vs_torch-cuda-graph", "measured") for b in BACKENDS}
        e = _get(report, "energy", "cuda-fused", "joules_per_task")
        readme += [f"**Verified on an {gpu}** by [bench/results/{rel}](bench/results/{rel}) (commit "
                   f"`{str(report.get('git_commit'))[:7]}`, {when[:10]}), which speaks for this tree's GPU path.",
                   f"rev88, one 10k/10k task, CUDA events: `cuda-fused` **{_ms(fused)} ms** ({sp['cuda-fused']}× the same-spec "
                   f"PyTorch learner captured in a CUDA graph, {_ms(torch_ms)} ms), `cuda` {_ms(plain)} ms ({sp['cuda']}×)"
                   + (f"; `cuda-fused` {e:.3f} J a task net of idle." if isinstance(e, (int, float)) else ".")]
    else:
        last = f"[{rel}]({rel}), commit `{str(report.get('git_commit'))[:7]}`" if report else "none"
        out += [f"**Unverified.** No passing report speaks for this tree's GPU path ({digest}): {line}. "
                "`cuda` and `cuda-fused` run when named with `--backend`, unverified; `auto` picks `cpu`. "
                f"The newest call-1 report: {last}.", ""]
        readme += [f"**The GPU path of this tree is unverified**: no passing GPU report speaks for it (it changed since "
                   f"the last one, {('commit `' + str(report.get('git_commit'))[:7] + '`') if report else 'none'}). "
                   "`cuda` and `cuda-fused` run when named with `--backend`; `auto` picks `cpu`.",
                   "What the last runs measured is in the index below; they are not of this code."]
    cpu = cpu_headline(results_dir)
    if cpu:
        readme.append(cpu)
    readme += ["Every run, passing or not, with what it measured: [bench/results/INDEX.md](bench/results/INDEX.md); "
               "how to make a GPU report on any GPU machine: [docs/gpu.md](docs/gpu.md)."]

    out += ["## Every GPU run, newest first", "",
            "| when (UTC) | commit | call | verdict | what it measured | files |", "|---|---|---|---|---|---|"]
    groups, others = _group_files(results_dir)
    listed = set()
    runs = []
    for call in (1, 2, 3):
        for when, p, r in currency.reports(results_dir, call):
            runs.append((when, call, p, r))
    for when, call, p, r in sorted(runs, key=lambda x: (x[0], x[1]), reverse=True):
        name = os.path.basename(p)
        stem = name[:-len(".json")]
        siblings = sorted(f for f in os.listdir(results_dir) if f.startswith(stem + ".") and f != name)
        listed.update([name] + siblings)
        files = ", ".join([f"[json]({name})"] + [f"[{f[len(stem) + 1:]}]({f})" for f in siblings])
        out.append(f"| {when[:16].replace('T', ' ')} | `{str(r.get('git_commit'))[:7]}` | {call} | {verdict_cell(r)} | "
                   f"{measured(r)} | {files} |")
    out += ["", "Other files of those runs (the labs' tables, ncu CSVs, extra energy runs), by run:", ""]
    for stem in sorted(groups, reverse=True):
        rest = [f for f in groups[stem] if f not in listed]
        if rest:
            out.append(f"- `{stem}`: " + ", ".join(f"[{f[len(stem):].lstrip('.-')}]({f})" for f in rest))
    cpu = [o for o in others if o.endswith(".json")]
    if cpu:
        out += ["", "## CPU measurements", "", "| file | when | commit | what |", "|---|---|---|---|"]
        for name in sorted(cpu, reverse=True):
            try:
                with open(os.path.join(results_dir, name)) as f:
                    r = json.load(f)
            except (OSError, ValueError):
                continue
            ctx = r.get("context") or {}
            when = str(r.get("date") or ctx.get("date") or "")[:16].replace("T", " ")
            commit = str(_get(r, "git", "commit") or ctx.get("git_commit") or "—")[:7]
            what = r.get("what") or ("Google Benchmark: " + ", ".join(sorted({str(b.get("name")).split("/")[0] for b in r.get("benchmarks", [])})))
            timing = r.get("timing") or {}
            med = ", ".join(f"{k} {_ms(_get(v, 'task_ms', 'median'))} ms" for k, v in timing.items() if _get(v, "task_ms", "median"))
            what = what.split(";")[0].split(" (")[0]
            out.append(f"| [{name}]({name}) | {when} | `{commit}` | {what}{': ' + med if med else ''} |")
    return "\n".join(out) + "\n", readme


def readme_with(readme_text, block):
    """README.md with its gpu-status block replaced by `block` (lines)."""
    if README_BEGIN not in readme_text or README_END not in readme_text:
        raise ValueError("README.md has no gpu-status markers")
    head, rest = readme_text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    return head + README_BEGIN + "\n" + "\n".join(block) + "\n" + README_END + tail


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None):
    ap = OneLineParser(prog="gpu-check index", description="write bench/results/INDEX.md and README.md's GPU status")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 where either is stale")
    ap.add_argument("--root", default=ROOT, help=__import__("argparse").SUPPRESS)
    a = ap.parse_args(argv)
    results = os.path.join(a.root, "bench", "results")
    index, block = render(results, a.root)
    readme_path = os.path.join(a.root, "README.md")
    with open(readme_path) as f:
        readme = f.read()
    try:
        new_readme = readme_with(readme, block)
    except ValueError as e:
        print(f"gpu-check index: error: {e}", file=sys.stderr)
        return 2
    index_path = os.path.join(results, INDEX)
    old_index = open(index_path).read() if os.path.exists(index_path) else ""
    stale = [p for p, old, new in ((index_path, old_index, index), (readme_path, readme, new_readme)) if old != new]
    if a.check:
        for p in stale:
            print(f"gpu-check index: {os.path.relpath(p, a.root)} is not what the reports give: run tools/gpu-check index")
        return 1 if stale else 0
    _write(index_path, index)
    _write(readme_path, new_readme)
    print(f"gpu-check index: wrote {INDEX} and README.md's GPU status")
    return 0


def file_main(argv=None):
    ap = OneLineParser(prog="gpu-check file", description="copy a GPU machine's reports into bench/results, then index")
    ap.add_argument("out_dirs", nargs="+",
                    help="folders a gpu-check call or series left (report*.json, gpu-check*.log; a series: callN/)")
    ap.add_argument("--root", default=ROOT, help=__import__("argparse").SUPPRESS)
    a = ap.parse_args(argv)
    results = os.path.join(a.root, "bench", "results")
    plan = []
    for d in a.out_dirs:
        # A call's folder, or a series' (gpu-check --calls): its calls' folders, callN/.
        found = (sorted(glob.glob(os.path.join(d, "report*.json")))
                 or sorted(glob.glob(os.path.join(d, "call*", "report*.json"))))
        if not found:
            print(f"gpu-check file: error: {d} holds no report*.json", file=sys.stderr)
            return 1
        for p in found:
            r = currency.load_report(p)
            if r is None:
                print(f"gpu-check file: error: {p} is not a gpu-check report", file=sys.stderr)
                return 1
            name = report_file_name(r)
            log = os.path.join(os.path.dirname(p), os.path.basename(p).replace("report", "gpu-check").replace(".json", ".log"))
            plan.append((p, name))
            if os.path.exists(log):
                plan.append((log, name[:-len(".json")] + ".log"))
    for _, name in plan:
        if os.path.exists(os.path.join(results, name)):
            print(f"gpu-check file: error: bench/results/{name} exists already; nothing copied", file=sys.stderr)
            return 1
    for src, name in plan:
        shutil.copyfile(src, os.path.join(results, name))
        print(f"gpu-check file: bench/results/{name}")
    return main(["--root", a.root])
