"""gpu-check's command line (tools/gpu-check): a device call (--call 1..8, or --calls for several; --after a previous
report), --plan, and the subcommands its own steps call (run-tests, check-backends) or a person runs
(report, current)."""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time

from . import binaries, currency, index, machine, report
from .binaries import check_backends
from .commit import detect_commit
from .meson_tests import run_tests
from .plan import BINARIES_SECONDS, CALL_TITLES, call_plan, fit, rerun_plan, write_plan
from .runner import Runner, pack_artifacts
from .steps import CALL_SECONDS, CALLS, ROOT, STEP_BUDGET, Context, OneLineParser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run-tests"]:  # internal: the test steps
        rt = argparse.ArgumentParser(prog="gpu-check run-tests", description=run_tests.__doc__)
        rt.add_argument("--manifest", required=True)
        rt.add_argument("--bin", required=True)
        rt.add_argument("--python", required=True)
        rt.add_argument("--testlog", required=True)
        rt.add_argument("--suite", action="append", default=[])
        rt.add_argument("--exclude-suite", action="append", default=[])
        rt.add_argument("--doctest-arg", action="append", default=[], help="passed to our doctest programs")
        return run_tests(rt.parse_args(argv[1:]))
    if argv[:1] == ["check-backends"]:  # internal: the prebuilt binaries' check
        cb = argparse.ArgumentParser(prog="gpu-check check-backends", description=check_backends.__doc__)
        cb.add_argument("--revgraph", required=True)
        cb.add_argument("--require", action="append", default=[])
        return check_backends(cb.parse_args(argv[1:]))
    if argv[:1] == ["report"]:  # by hand: the report of a scratch folder
        return report.main(argv[1:])
    if argv[:1] == ["current"]:  # does a passing report speak for this tree's GPU path?
        return currency.main(argv[1:])
    if argv[:1] == ["carry"]:  # a legacy report's evidence under the gpu-path rule
        return currency.carry_main(argv[1:])
    if argv[:1] == ["index"]:  # bench/results/INDEX.md and README's GPU status, from the reports
        return index.main(argv[1:])
    if argv[:1] == ["file"]:  # a GPU machine's reports into bench/results, then the index
        return index.file_main(argv[1:])
    ap = OneLineParser(prog="gpu-check", description=sys.modules[__package__].__doc__.splitlines()[0])
    ap.add_argument("--call", type=int, choices=CALLS, help="which device call (default 1; --plan: all)")
    ap.add_argument("--after", metavar="REPORT", help="call 2 after call 1's report: rerun what did not pass first")
    ap.add_argument("--calls", metavar="LIST", help="several calls back to back, in this order (e.g. 1,4,2), each "
                    "into OUT/callN")
    ap.add_argument("--for", dest="seconds", type=int, metavar="S", help="with --calls: the seconds the machine is "
                    "held; each call runs within what is left, none without room for its required steps")
    ap.add_argument("--plan", action="store_true", help="print the steps and limits, run nothing")
    ap.add_argument("out", nargs="?", help="output folder (default: $OUT, else gpu-check-out)")
    args = ap.parse_args(argv)
    env = os.environ
    try:
        budget = int(env.get("GPU_CHECK_BUDGET", STEP_BUDGET))
    except ValueError:
        budget = -1
    if budget <= 0:
        ap.error(f"GPU_CHECK_BUDGET={env.get('GPU_CHECK_BUDGET')}: a whole number of seconds above 0")
    previous = None
    if args.seconds is not None and args.calls is None:
        ap.error("--for belongs to --calls")
    if args.calls is not None:
        if args.call or args.after or args.plan:
            ap.error("--calls runs whole calls: not with --call, --after or --plan")
        try:
            calls = [int(c) for c in args.calls.split(",")]
        except ValueError:
            calls = []
        if not calls or any(c not in CALLS for c in calls) or len(set(calls)) != len(calls):
            ap.error(f"--calls {args.calls}: a comma-separated list of distinct calls from {min(CALLS)}-{max(CALLS)}")
        least = -(-SERIES_MIN_SECONDS * CALL_SECONDS // STEP_BUDGET) + SERIES_MARGIN_SECONDS
        if args.seconds is not None and args.seconds < least:
            ap.error(f"--for {args.seconds}: under the {least} s the least call needs")
        return run_series(calls, args.out, env, budget, args.seconds)
    if args.after:
        if args.call not in (None, 2):
            ap.error("--after belongs to call 2")
        args.call = 2
        try:
            with open(args.after) as f:
                previous = json.load(f)
        except (OSError, ValueError) as e:
            ap.error(f"--after {args.after}: not a report ({e})")
        # Call 1's report: a JSON object that says which call made it and on which commit (a
        # qualify report or a list would plan a whole rerun, or fail deep inside the planner).
        if not isinstance(previous, dict) or previous.get("call") != 1 or not isinstance(previous.get("steps"), dict) \
                or not isinstance(previous.get("git_commit"), str):
            ap.error(f"--after {args.after}: not a gpu-check report of call 1 (call, git_commit, steps)")
    if args.plan:
        return print_plan(args.call, previous, budget)
    return run_check(args.call or 1, previous, args.out, env, budget)


# A series (--calls): each call keeps this much of --for for its report and the next call's start, and
# none starts unless its required steps fit what is left (so never with under a minute: --for's least).
SERIES_MIN_SECONDS, SERIES_MARGIN_SECONDS = 60, 10


def plan_context():
    """A context for reading plans, not running them: placeholder folders and binaries."""
    ctx = Context("OUT", "SCRATCH", 100, "python3")
    ctx.bindir, ctx.manifest = "BIN", "MANIFEST"
    return ctx


def report_suffix(call):
    """What a call's report and log carry in their names: report.json for call 1, report-callN.json else."""
    return "" if call == 1 else f"-call{call}"


def required_seconds(call):
    """The step budget a call's required steps need: the binaries' check and each required step's limit."""
    return BINARIES_SECONDS + sum(s.limit for s in call_plan(plan_context(), call) if s.required)


def left_out_note(folder, call):
    """' (N steps left out)' where the call's report names steps its budget had no room for."""
    try:
        with open(os.path.join(folder, f"report{report_suffix(call)}.json")) as f:
            n = len(json.load(f).get("left_out_of_this_call") or [])
    except (OSError, ValueError):
        return ""
    return f" ({n} step{'s' if n != 1 else ''} left out)" if n else ""


def run_series(calls, out_arg, env, budget, seconds):
    """Whole calls back to back, each into OUT/callN, for a GPU machine held for `seconds` (or for as
    long as the calls take): each call's steps fit within what is left (the plan's own fit, so what
    does not fit is named as left out), and a call whose required steps do not fit is not started.
    Every call named runs whatever the one before gave (a failed call 1 is rerun with --after). The
    summary names every call; exit 0 only where each ran and passed."""
    out = os.path.abspath(out_arg or env.get("OUT") or os.path.join(ROOT, "gpu-check-out"))
    start, said, passed = time.time(), [], []
    for call in calls:
        call_budget = budget
        if seconds is not None:
            left = seconds - (time.time() - start) - SERIES_MARGIN_SECONDS
            call_budget = min(budget, max(int(left * STEP_BUDGET / CALL_SECONDS), 0))
        need = max(required_seconds(call), SERIES_MIN_SECONDS)
        if call_budget < need:
            said.append(f"call {call} not started (it needs {need} s of steps, {call_budget} s left)")
            passed.append(False)
            continue
        try:
            rc = run_check(call, None, os.path.join(out, f"call{call}"), env, call_budget)
            said.append(f"call {call} {'PASSED' if rc == 0 else 'not passed, see call' + str(call) + '/'}"
                        + left_out_note(os.path.join(out, f"call{call}"), call))
        except Exception as e:  # one call's breakage must not cost the calls after it their time
            rc = 1
            said.append(f"call {call} broke: {type(e).__name__}: {e}")
        passed.append(rc == 0)
    print(f"gpu-check: calls {','.join(map(str, calls))} in {int(time.time() - start)} s: " + "; ".join(said))
    return 0 if all(passed) else 1


def planned(ctx, call, previous, budget):
    """(steps, left out, why) of one call: its plan, or call 2's rerun plan after a report."""
    if previous is not None:
        commit, _ = detect_commit(ROOT, os.environ)
        return rerun_plan(ctx, previous, commit, budget)
    kept, left = fit(call_plan(ctx, call), budget)
    return kept, left, CALL_TITLES[call]


def print_plan(call, previous, budget):
    ctx = plan_context()
    print(f"each call: {CALL_SECONDS} s at most, steps within {budget}s (10% kept for start-up and reports)")
    for c in ([call] if call else list(CALLS)):
        steps, left, why = planned(ctx, c, previous, budget)
        print(f"\ncall {c}: {why}")
        print(f"  {'binaries':36} {BINARIES_SECONDS:4}  binaries  required")
        total = BINARIES_SECONDS
        for s in steps:
            total += s.limit
            print(f"  {s.name:36} {s.limit:4}  {s.group}{'  required' if s.required else ''}")
        print(f"  total {total}s of {budget}s")
        for s in left:
            print(f"  left out (no room in this call): {s.name} {s.limit}s")
    fallback = binaries.CONFIGURE_SECONDS + binaries.BUILD_SECONDS
    print(f"\nwhere the prebuilt binaries do not start: configure {binaries.CONFIGURE_SECONDS}s + build "
          f"{binaries.BUILD_SECONDS}s of {', '.join(binaries.BUILD_TARGETS)} replace the {BINARIES_SECONDS}s check "
          f"(+{fallback - BINARIES_SECONDS}s); the steps that then find no room are recorded as skipped, and call 2 "
          f"--after the report reruns them")
    print("\npacked for the GPU machine (.gpudeps, carried with the tree):")
    for line in binaries.packed_state(ROOT):
        print(f"  {line}")
    return 0


def get_binaries(runner, ctx, env, commit):
    """Prebuilt binaries where they fit this tree and start here, else built here: (the binaries'
    steps for plan.tsv, what the report says of them, the GPU architecture they are for)."""
    prebuilt, why = binaries.use_prebuilt(ctx, env)
    runner.log(why)
    if prebuilt:
        check = binaries.prebuilt_step(ctx)
        if runner.run(check) == 0:
            return [check], why, binaries.packed_arch(ctx.bindir)
        why = "the prebuilt binaries do not start here"
        runner.log(why + ": building on the device")
    runner.log(binaries.unpack_build_deps(ROOT))
    build, arch = binaries.build_steps(ctx, env, commit)
    for s in build:  # the check that failed is recorded, not required: the build replaces it
        runner.run(s)
    binaries.after_build(runner, ctx)
    return build, f"built on the device for sm_{arch} ({why})", arch


def run_check(call, previous, out_arg, env, budget):
    """One device call: the binaries, then every step of its plan, the report after each."""
    out = os.path.abspath(out_arg or env.get("OUT") or os.path.join(ROOT, "gpu-check-out"))
    os.makedirs(out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="gpu-check.")
    ctx = Context(out, scratch, int(env.get("GPU_CHECK_REPLAYS", "100")), sys.executable)
    os.makedirs(ctx.art)
    suffix = report_suffix(call)
    runner = Runner(ctx, budget, os.path.join(out, f"gpu-check{suffix}.log"))
    commit, how = detect_commit(ROOT, env)
    try:
        sources = currency.tree_digest(ROOT)
    except currency.gpu_path.GpuPathError as e:  # the report then records why, and speaks for nothing
        sources = {"scheme": currency.gpu_path.SCHEME, "sha256": None, "files": [], "error": str(e)}
    runner.log(f"call {call}; commit {commit} ({how}); GPU path {str(sources['sha256'])[:12]} ({len(sources['files'])} files); "
               f"output {out}; budget {budget}s")
    machine.environment_log(runner, ctx)

    report_name = f"report{suffix}.json"
    state = {"binaries": "", "arch": None}
    made, state["binaries"], state["arch"] = get_binaries(runner, ctx, env, commit)
    steps, left, why = planned(ctx, call, previous, budget)
    runner.log(f"plan: {why}" + (f"; left out: {', '.join(s.name for s in left)}" if left else ""))
    write_plan(ctx, steps, made, left)
    extra = {"call": call, "plan_reason": why, "gpu_path": sources,
             "after_report": None if previous is None else {k: previous.get(k) for k in
                                                            ("git_commit", "written_utc", "call", "passed")}}

    def write(after=None):
        try:
            report.write_report(out=out, scratch=scratch, artifacts=ctx.art, git_commit=commit,
                                commit_source=how, gpu_arch=state["arch"], partial=after,
                                binaries=state["binaries"], kind=f"call {call}", name=report_name, extra=extra)
            pack_artifacts(ctx)
        except Exception as e:  # a report that cannot be written must not stop the evidence
            runner.log(f"report: {type(e).__name__}: {e}")

    write("binaries")
    for s in steps:
        runner.run(s)
        write(s.name)  # after every step, recorded ones too: a call stopped anywhere brings back all it had
    for f in glob.glob(ctx.s("testlog-*.json")):
        shutil.copy(f, ctx.art)
    write()
    runner.log(f"done in {int(time.time() - runner.start)}s")
    with open(os.path.join(out, report_name)) as f:
        r = json.load(f)
    print(f"gpu-check: call {call}: {'PASSED' if r.get('passed') else 'see ' + report_name}: "
          + "; ".join(r.get("failures", [])))
    return 0 if r.get("passed") else 1
