"""gpu-check's command line (tools/gpu-check): the main run or the follow-up, --plan, and the
subcommands its own steps call (run-tests, check-backends) or a person runs (report)."""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time

from . import binaries, machine, report
from .binaries import check_backends
from .commit import detect_commit
from .meson_tests import run_tests
from .plan import follow_up_plan, main_plan, write_plan
from .runner import Runner, pack_artifacts
from .steps import CALL_SECONDS, FOLLOW_UP_SECONDS, RESERVE_SECONDS, ROOT, Context


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
    ap = argparse.ArgumentParser(prog="gpu-check", description=sys.modules[__package__].__doc__.splitlines()[0])
    ap.add_argument("--follow-up", action="store_true", help="the steps that did not fit the main run")
    ap.add_argument("--plan", action="store_true", help="print the steps and limits, run nothing")
    ap.add_argument("out", nargs="?", help="output folder (default: gpu-check-out)")
    args = ap.parse_args(argv)
    env = os.environ
    budget = int(env.get("GPU_CHECK_BUDGET", FOLLOW_UP_SECONDS if args.follow_up else CALL_SECONDS - RESERVE_SECONDS))
    if args.plan:
        return print_plan(args.follow_up, budget)
    return run_check(args.follow_up, args.out, env, budget)


def print_plan(follow_up, budget):
    ctx = Context("OUT", "SCRATCH", 100, "python3")
    ctx.bindir, ctx.manifest = "BIN", "MANIFEST"
    steps = follow_up_plan(ctx) if follow_up else main_plan(ctx)
    total = 20
    print(f"budget {budget}s\n{'binaries':30} {20:4}  binaries  required")
    for s in steps:
        total += s.limit
        print(f"{s.name:30} {s.limit:4}  {s.group}{'  required' if s.required else ''}")
    print(f"total {total}s")
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
    build, arch = binaries.build_steps(ctx, env, commit)
    for s in build:  # the check that failed is recorded, not required: the build replaces it
        runner.run(s)
    binaries.after_build(runner, ctx)
    return build, f"built on the device for sm_{arch} ({why})", arch


def run_check(follow_up, out_arg, env, budget):
    """The main run (or the follow-up): the binaries, then every step, the report after each."""
    out = os.path.abspath(out_arg or env.get("OUT") or os.path.join(ROOT, "gpu-check-out"))
    os.makedirs(out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="gpu-check.")
    ctx = Context(out, scratch, int(env.get("GPU_CHECK_REPLAYS", "100")), sys.executable)
    os.makedirs(ctx.art)
    log_name = "gpu-check-follow-up.log" if follow_up else "gpu-check.log"
    runner = Runner(ctx, budget, os.path.join(out, log_name))
    commit, how = detect_commit(ROOT, env)
    runner.log(f"commit {commit} ({how}); output {out}; budget {budget}s")
    machine.environment_log(runner, ctx)

    kind = "follow-up" if follow_up else "main"
    report_name = "report-follow-up.json" if follow_up else "report.json"
    state = {"binaries": "", "arch": None}

    def write(after=None):
        try:
            report.write_report(out=out, scratch=scratch, artifacts=ctx.art, git_commit=commit,
                                commit_source=how, gpu_arch=state["arch"], partial=after,
                                binaries=state["binaries"], kind=kind, name=report_name)
            pack_artifacts(ctx)
        except Exception as e:  # a report that cannot be written must not stop the evidence
            runner.log(f"report: {type(e).__name__}: {e}")

    made, state["binaries"], state["arch"] = get_binaries(runner, ctx, env, commit)
    steps = follow_up_plan(ctx) if follow_up else main_plan(ctx)
    write_plan(ctx, steps, made)
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
    print(f"gpu-check: {'PASSED' if r.get('passed') else 'see ' + report_name}: " + "; ".join(r.get("failures", [])))
    return 0 if r.get("passed") or follow_up else 1
