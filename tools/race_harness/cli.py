"""tools/race's command line: run, engine, draws, check (docs/race.md, "Commands").

Why one module: each command is a short sequence over the other modules (rules before import,
draws before the sandbox is armed, the verdict from the counts), and its order is the protocol's
order; the work itself lives in the modules it calls. Errors are one line `race: error: ...`
(exit 1; usage 2). A verdict is the last line a run prints: exit 0 PASS, 3 FAIL, 1 NO VERDICT.
"""
import argparse
import hashlib
import json
import os
import signal
import sys

from . import DEFAULT_SEED, draws, package, report, rules, verdict
from .errors import RaceError, Terminated, UsageError

PER_DRAW = draws.PER_DRAW
# The backend whose predictions are the exported GPU entry's, bit for bit (engine/cuda/fused_any gives
# cpu::Trainer<float>'s very bits; docs/race.md, "engine"). Any other backend is a look, not the entry.
ENTRY_BACKEND = "cpu-reference"
# The backends `engine` runs (docs/race.md): the entry's, and the fast CPU look. A GPU backend would
# judge other bits than the entry's, on a machine whose place is `tools/race run`.
ENGINE_BACKENDS = (ENTRY_BACKEND, "cpu")


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own mistakes, in the one-line form, exit 2
        raise UsageError(message)


def _band(text):
    """An option's band: a leaderboard (rules.leaderboard, the one list), else a usage mistake."""
    try:
        return rules.leaderboard(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


SEED_MAX = 2**64 - 1  # a seed, case seed or secret: numpy takes any size, the harness an unsigned 64-bit one


def _whole(least, most=None):
    """An option's integer in [least, most], else a usage mistake that does not echo a huge text back."""
    span = f"{least}..{most}" if most is not None else f"{least} or more"

    def parse(text):
        try:
            v = int(text, 10) if len(text) <= 40 else None
        except ValueError:
            v = None
        if v is None or v < least or (most is not None and v > most):
            raise argparse.ArgumentTypeError(f"{text[:40]}{'...' if len(text) > 40 else ''}: an integer {span}")
        return v
    return parse


_SEED = _whole(0, SEED_MAX)


def _path(hint=""):
    """An option's path, never empty: `--idx-dir "$(tools/fetch-mnist)"` is `--idx-dir ""` when the
    fetch fails, and an empty path taken as given says something else (`race: error: : not a folder`)
    or drops the option (`--fashion-dir ""` would skip the hold-out, `--report ""` write no report).
    A usage mistake, one line, with the hint of what likely emptied it."""
    def parse(text):
        if not text:
            raise argparse.ArgumentTypeError(f"an empty path{hint}")
        return text
    return parse


PATH = _path()
IDX_DIR = _path(" (did tools/fetch-mnist fail?)")


def _seed_options(p):
    g = p.add_argument_group("seed (default: the default local seed, on which no entry may be chosen)")
    g.add_argument("--seed", type=_SEED, help=f"the run's seed (default {DEFAULT_SEED})")
    g.add_argument("--case-seed", type=_SEED, help="a public case seed A, paired with --secret B: A + (A+B)(A+B+1)/2")
    g.add_argument("--secret", type=_SEED, help="the secret B paired with --case-seed")


def _parser():
    ap = Parser(prog="race", description="The local race harness of the MNIST-medium time challenge (docs/race.md).")
    sub = ap.add_subparsers(dest="command", metavar="{run,engine,draws,check,choose}")
    sub.required = True

    r = sub.add_parser("run", help="an entry through the protocol's calls")
    r.add_argument("entry", type=PATH, metavar="ENTRY.py")
    r.add_argument("--idx-dir", type=IDX_DIR, required=True, help="the MNIST IDX files (train-*, and t10k-* for the warm-up)")
    _seed_options(r)
    r.add_argument("--fashion-dir", type=PATH, help="Fashion-MNIST's training IDX files: warm-up and hold-out calls on them")
    r.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="where the inputs live (default cuda)")
    r.add_argument("--report", type=PATH, help="write the JSON report here")
    r.add_argument("--build", type=PATH, help="the Meson build folder whose python/ holds revgraph (default build)")

    e = sub.add_parser("engine", help="the revgraph engine's predictions on the same 11 draws")
    e.add_argument("--band", required=True, type=_band, help=f"the band in percent: a leaderboard, {rules.LEADERBOARD_WORDS}")
    e.add_argument("--from", type=PATH, dest="from_file", metavar="BANDS.json",
                   help="the band's config from this file of bands (bench/race.json, bench/frontier/frontier.json), "
                        "as `revgraph export --from` reads it (a band the file records as failed, which export "
                        "refuses, is judged all the same, and the verdict line says so); not with --config or --set")
    e.add_argument("--config", type=PATH, help="a config JSON file (the engine's keys)")
    e.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config key, after --config")
    e.add_argument("--idx-dir", type=IDX_DIR, required=True)
    _seed_options(e)
    e.add_argument("--backend", default=ENTRY_BACKEND, choices=ENGINE_BACKENDS,
                   help=f"the engine's backend (default {ENTRY_BACKEND}: the float32 reference trainer, whose predictions "
                        f"are exactly the GPU entry's of `revgraph export`; cpu, the fast backend, sums in another "
                        f"order: a quick look whose report says its predictions are not the entry's)")
    e.add_argument("--report", type=PATH)
    e.add_argument("--build", type=PATH)

    d = sub.add_parser("draws", help="write the 11 ranked draws")
    d.add_argument("--idx-dir", type=IDX_DIR, required=True)
    _seed_options(d)
    d.add_argument("--output", type=PATH, required=True, metavar="DRAWS.npz")
    d.add_argument("--task-dir", type=PATH, help="also draw-NN.npz + draw-NN-labels.npy, revgraph run --input archives")

    c = sub.add_parser("check", help="the entry's static rules only")
    c.add_argument("entry", type=PATH, metavar="ENTRY.py")

    ch = sub.add_parser("choose", help="an entry a band, chosen for the GPU by a stated rule (bench/race.json)",
                        description="Steps of bench/race/choose.sh (docs/race.md, 'The entries'): evaluate configs on "
                                    "the selection draws, shortlist the fastest that meet the rule, pick by the rule "
                                    "on cpu-reference's results, record the verify reports.")
    chs = ch.add_subparsers(dest="step", metavar="{evaluate,shortlist,confirm,pick,verified}")
    chs.required = True
    seeds_help = "the selection seeds (their draws under WORK/sel-SEED/, from tools/race draws --task-dir)"
    work_help = "the work folder: the selection draws (sel-SEED/) and every result line"
    ev = chs.add_parser("evaluate", help="configs x selection draws, one JSON line each (resumable)")
    ev.add_argument("--work", type=PATH, required=True, help=work_help)
    ev.add_argument("--configs", type=PATH, required=True, help="a JSON file with a 'configs' list (shortlist writes one)")
    ev.add_argument("--seeds", type=_SEED, nargs="+", required=True, help=seeds_help)
    ev.add_argument("--backend", default=ENTRY_BACKEND, help=f"the engine backend (default {ENTRY_BACKEND})")
    ev.add_argument("--jobs", type=_whole(0), default=2, help="worker threads (default 2; 0: one a CPU this process may use)")
    ev.add_argument("--output", type=PATH, required=True, help="WORK/NAME.jsonl, appended to")
    ev.add_argument("--build", type=PATH)
    sl = chs.add_parser("shortlist", help="per band, the fastest configs by the time model that meet the rule")
    sl.add_argument("--work", type=PATH, required=True, help=work_help)
    sl.add_argument("--results", type=PATH, nargs="+", required=True,
                    help="result names under WORK (sweep folders, evaluate files)")
    sl.add_argument("--seeds", type=_SEED, nargs="+", required=True, help=seeds_help)
    sl.add_argument("--backend", default="cpu", help="whose results to rank (default cpu)")
    sl.add_argument("--bands", nargs="+", type=_band, default=[str(b) for b in rules.LEADERBOARDS],
                    help=f"the bands, in percent (default all: {rules.LEADERBOARD_WORDS})")
    sl.add_argument("--top", type=_whole(1), default=20, help="configs a band kept, fastest first (default 20)")
    sl.add_argument("--output", type=PATH, required=True, help="the shortlist, JSON (evaluate --configs reads it)")
    sl.add_argument("--build", type=PATH)
    cf = chs.add_parser("confirm", help="per band, the rule's configs on cpu, fastest first, run with cpu-reference "
                                        "until NEED meet the rule there")
    cf.add_argument("--work", type=PATH, required=True, help=work_help)
    cf.add_argument("--results", type=PATH, nargs="+", required=True, help="cpu result names under WORK")
    cf.add_argument("--seeds", type=_SEED, nargs="+", required=True, help=seeds_help)
    cf.add_argument("--bands", nargs="+", type=_band, default=[str(b) for b in rules.LEADERBOARDS],
                    help=f"the bands, in percent (default all: {rules.LEADERBOARD_WORDS})")
    cf.add_argument("--need", type=_whole(1), default=2, help="configs a band that must meet the rule (default 2: the "
                                                         "choice and its runner-up)")
    cf.add_argument("--most", type=_whole(1), default=6, help="configs a band tried at most (default 6)")
    cf.add_argument("--jobs", type=_whole(0), default=2, help="worker threads (default 2; 0: one a CPU this process may use)")
    cf.add_argument("--output", type=PATH, default="confirm", help="the result name: WORK/NAME.jsonl (default confirm)")
    cf.add_argument("--build", type=PATH)
    pk = chs.add_parser("pick", help="the choice by the rule: bench/race.json and the summaries beside it")
    pk.add_argument("--work", type=PATH, required=True, help=work_help)
    pk.add_argument("--screen", type=PATH, nargs="+", required=True, help="cpu result names under WORK")
    pk.add_argument("--confirm", type=PATH, nargs="+", required=True, help="cpu-reference result names under WORK")
    pk.add_argument("--seeds", type=_SEED, nargs="+", required=True, help=seeds_help)
    pk.add_argument("--output", type=PATH, default="bench/race.json", help="the record (default bench/race.json)")
    pk.add_argument("--summary-dir", type=PATH, default="bench/race",
                    help="where the CSV summaries and config-B.json go (default bench/race)")
    pk.add_argument("--root", type=PATH, default=".",
                    help="the folder the record's paths are relative to, as verified's --root (default .)")
    pk.add_argument("--build", type=PATH)
    vf = chs.add_parser("verified", help="record each band's verify report in bench/race.json")
    vf.add_argument("--race", type=PATH, default="bench/race.json", help="the record to update (default bench/race.json)")
    vf.add_argument("--root", type=PATH, default=".", help="the folder its verify_report paths are relative to (default .)")
    vf.add_argument("--build", type=PATH)
    return ap


def _seed(a):
    """(seed, record for the report)."""
    if a.seed is not None and (a.case_seed is not None or a.secret is not None):
        raise UsageError("--seed or --case-seed/--secret, not both")
    if (a.case_seed is None) != (a.secret is None):
        raise UsageError("--case-seed and --secret go together")
    if a.seed is not None:
        return a.seed, {"seed": a.seed, "source": "--seed", "default": a.seed == DEFAULT_SEED}
    if a.case_seed is not None:
        s = draws.cantor(a.case_seed, a.secret)
        return s, {"seed": s, "source": "cantor(--case-seed, --secret)", "case_seed": a.case_seed, "default": False}
    return DEFAULT_SEED, {"seed": DEFAULT_SEED, "source": "default", "default": True}


def _default_seed_notice(seed_record):
    """For the default seed, the notice; said once every file is read, after every refusal, so that
    a refusal before any work stays one line."""
    if seed_record["source"] == "default":
        print(f"race: seed {DEFAULT_SEED}, the default local seed: no entry may be chosen on it", file=sys.stderr)


def _chosen_on(path, seed):
    """The selection seeds a file of bands records (bench/race.json's "selection_seeds") that share
    a draw with this seed (draws.shares_draw_seeds): a verdict there is on draws the config was
    chosen on. The engine has read the file already; one it reads but JSON does not is its own
    matter, so anything unreadable here is simply no seeds."""
    try:
        with open(path) as f:
            seeds = json.load(f).get("selection_seeds")
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(seeds, list):
        return []
    return [s for s in seeds if isinstance(s, int) and not isinstance(s, bool) and draws.shares_draw_seeds(seed, s)]


def _idx_inputs(folder, names):
    out = []
    for n in names:
        for candidate in (os.path.join(folder, n), os.path.join(folder, n + ".gz")):
            if os.path.exists(candidate):
                out.append(candidate)
    return out


def _draw_summary(d):
    return {"index": d.index, "seed": d.seed, "data": d.data, "label_permutation": d.perm.tolist()}


# ------------------------------------------------------------------------------------------ check
def _read_entry(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise RaceError(f"{path}: {e.strerror or e}") from None


def cmd_check(a):
    problems, info = rules.check_source(_read_entry(a.entry), os.path.basename(a.entry))
    for p in problems:
        print(f"{a.entry}: {p}")
    if problems:
        print(f"race: FAIL {a.entry}: {len(problems)} broken rule{'s' if len(problems) > 1 else ''}")
        return 1
    print(f"race: PASS {a.entry}: the static rules hold (band {info['band']} %, {info['bytes']:,} bytes)")
    return 0


# -------------------------------------------------------------------------------------------- run
def cmd_run(a):
    seed, seed_record = _seed(a)
    source = _read_entry(a.entry)
    path = os.path.abspath(a.entry)
    inputs = [path] + _idx_inputs(a.idx_dir, [draws.TRAIN_IMAGES, draws.TRAIN_LABELS, draws.TEST_IMAGES,
                                              draws.TEST_LABELS])
    if a.fashion_dir:
        inputs += _idx_inputs(a.fashion_dir, [draws.TRAIN_IMAGES, draws.TRAIN_LABELS])
    report.check_output(a.report, inputs)
    out = report.header("run")
    out.update(entry={"path": path, "bytes": len(source), "sha256": hashlib.sha256(source).hexdigest()}, seed=seed_record)

    problems, info = rules.check_source(source, os.path.basename(path))
    out["rules"] = rules.rule_table(problems)
    if problems:
        for p in problems:
            print(f"{a.entry}: {p}")
        # The judge refuses such a file before running it: the run's verdict is FAIL (exit 3), as
        # for a band missed, not an error of the harness's.
        line = (f"race: FAIL {a.entry} breaks {len(problems)} static rule{'s' if len(problems) > 1 else ''}; "
                f"it was not imported")
        out.update(verdict={"result": "FAIL", "line": line})
        if a.report:
            report.write_json(a.report, out)
        print(line)
        return report.EXIT["FAIL"]
    band = str(info["band"])
    out["entry"]["band"] = info["band"]

    revgraph, why = package.band_rule(a.build)  # the package, or the build's `revgraph band`
    if revgraph is None:
        print(f"race: {why}: the band's verdict will not be given", file=sys.stderr)
    try:
        import torch
    except ImportError as e:
        raise RaceError(f"run needs torch ({e}); Debian: apt-get install python3-torch") from None
    if a.device == "cuda" and not torch.cuda.is_available():
        raise RaceError(f"--device cuda: torch {torch.__version__} here sees no CUDA device (use a CUDA build of "
                        f"torch, e.g. `python3 tools/race ...`, or --device cpu for a CPU entry)")

    pool = draws.load_pool(a.idx_dir, count=draws.POOL_SIZE)
    ranked = draws.ranked_draws(pool, seed)
    if a.fashion_dir:
        foreign = draws.load_pool(a.fashion_dir)
        draws.check_foreign(foreign, pool, "--fashion-dir", "--idx-dir")
        warmup = draws.warmup_draw(foreign, seed, "fashion-train")
        holdouts = [draws.holdout_draw(foreign, seed, k) for k in range(1, draws.HOLDOUT_CALLS + 1)]
        positions = draws.holdout_positions(seed)
        warm_note = "a Fashion-MNIST draw (--fashion-dir)"
    else:
        foreign = draws.load_pool(a.idx_dir, draws.TEST_IMAGES, draws.TEST_LABELS)
        warmup = draws.warmup_draw(foreign, seed, "mnist-t10k")
        holdouts, positions = [], []
        warm_note = "not Fashion data: a draw of MNIST's t10k files, labels permuted (no --fashion-dir)"
    _default_seed_notice(seed_record)
    timed, rest, hold = [], list(ranked), list(holdouts)
    for k in range(len(ranked) + len(holdouts)):
        timed.append(hold.pop(0) if k in positions else rest.pop(0))
    out["sources"] = {"pool": pool.sources, "pool_official": pool.official, "foreign": foreign.sources}
    out["warmup"] = dict(warmup.describe(), what=warm_note)
    out["draws"] = [_draw_summary(d) for d in ranked]
    out["holdout_positions"] = [p + 1 for p in positions]

    from . import runner
    from .sandbox import SANDBOX, WORDS
    progress = runner.Progress()

    def what_ran():
        dev = progress.device
        out["calls"] = progress.calls
        out["sandbox"] = {"words": list(WORDS), "refused": SANDBOX.refused,
                          "how": "sys.addaudithook: Python-level file, process and library events, armed while the "
                                 "entry runs"}
        out["device"] = {"kind": a.device, "name": dev.name if dev else None, "timer": dev.timer if dev else None,
                         "flush_bytes": runner.FLUSH_BYTES, "judge_gpu": report.JUDGE_GPU}
        out["environment"] = report.environment(torch)
        return dev

    def overrun(why):
        """From the watchdog's thread, the entry's call still running: FAIL, the report, exit 3
        (the call cannot be stopped from here; the process can, whatever writing the report meets)."""
        line = f"race: FAIL {why}{report.sandbox_part(SANDBOX.refused)}"
        try:
            what_ran()
            out.update(verdict={"result": "FAIL", "line": line, "checks": {"rules": True, "no_call_over_60s": False}})
            if a.report:
                report.write_json(a.report, out)
        except BaseException as e:  # noqa: BLE001 — said, and the process still ends
            print(f"race: error: the report was not written ({e})", file=sys.stderr)
        finally:
            try:
                print(line, flush=True)
                sys.stderr.flush()
            except BaseException:  # noqa: BLE001 — a closed stdout (`| head`) must not keep the process
                pass
            finally:
                os._exit(report.EXIT["FAIL"])

    error = invalid = None
    try:
        runner.run_entry(torch, path, source, warmup, timed, a.device, progress, on_overrun=overrun)
    except runner.InvalidOutput as e:
        invalid = str(e)
    except RaceError as e:
        error = str(e)
    dev = what_ran()
    if invalid:
        # The judge takes no such output: the entry fails (exit 3), as for a broken static rule; the
        # line names the call and what was wrong. Not an error: the harness did its part.
        line = f"race: FAIL {invalid}{report.sandbox_part(SANDBOX.refused)}"
        out.update(verdict={"result": "FAIL", "line": line, "checks": {"rules": True, "valid_outputs": False}})
        if a.report:
            report.write_json(a.report, out)
        print(line)
        return report.EXIT["FAIL"]
    if error:
        error += report.sandbox_part(SANDBOX.refused, said=error)
        out.update(error=error, verdict={"result": "ERROR", "line": f"race: error: {error}"})
        if a.report:
            report.write_json(a.report, out)
        raise RaceError(error)

    ranked_counts = [c["correct"] for c in progress.calls if c["kind"] == "ranked"]
    holdout_counts = [c["correct"] for c in progress.calls if c["kind"] == "holdout"]
    times = [c["ms"] for c in progress.calls if c["timed"]]
    band_v = verdict.judge_band(ranked_counts, band, revgraph, why)
    hold_v = verdict.judge_holdout(holdout_counts, skipped_why="no --fashion-dir")
    time_v = verdict.judge_times(times)
    time_v["ranked_only_mean_ms"] = (sum(c["ms"] for c in progress.calls if c["kind"] == "ranked")
                                     / max(1, len(ranked_counts)))
    time_v["timer"] = dev.timer
    word = report.overall([band_v["passed"], time_v["passed"], hold_v["passed"] if holdouts else True])
    line = report.run_verdict_line(word, band_v, time_v, hold_v, a.device, dev.name, dev.timer, SANDBOX.refused)
    if not pool.official:  # the judge draws from the official files: a verdict on others says so
        line += "; the pool is NOT the official MNIST files (the report's sources)"
    out["totals"] = {"ranked_correct": sum(ranked_counts), "ranked_total": PER_DRAW * len(ranked_counts),
                     "per_draw": ranked_counts, "worst_draw": min(ranked_counts), "holdout_correct": holdout_counts}
    out.update(band=band_v, holdout=hold_v, timing=time_v,
               verdict={"result": word, "line": line,
                        "checks": {"rules": True, "valid_outputs": True, "band_total": band_v.get("meets_total"),
                                   "band_floor": band_v.get("meets_floor"), "holdout": hold_v["passed"],
                                   "consistency": time_v["consistent"], "no_call_over_60s": not time_v["calls_over_60s"]}})
    if a.report:
        report.write_json(a.report, out)
    print(line)
    return report.EXIT[word]


# ----------------------------------------------------------------------------------------- engine
def cmd_engine(a):
    seed, seed_record = _seed(a)
    if a.from_file and (a.config or a.set):
        raise UsageError("engine: --from takes the band's config from the file; give no --config or --set")
    given = a.from_file or a.config
    inputs = _idx_inputs(a.idx_dir, [draws.TRAIN_IMAGES, draws.TRAIN_LABELS]) + ([given] if given else [])
    report.check_output(a.report, inputs)
    revgraph, why = package.load(a.build)
    if revgraph is None:
        raise RaceError(f"engine needs the built revgraph package: {why}")
    recorded_failure = ""
    try:
        if a.from_file:
            # The very config `revgraph export --from` puts in the entry (the engine reads the file); a
            # band the file records as failed, which export refuses, is judged all the same, and said.
            text, recorded_failure = revgraph._core.band_config(a.band, a.from_file)
            config = json.loads(text)
        else:
            config = revgraph._core.config_from(a.config, list(a.set))
    except (ValueError, RuntimeError) as e:
        raise RaceError(str(e)) from None
    chosen_on = _chosen_on(a.from_file, seed) if a.from_file else []
    if chosen_on:
        seed_record["selection_seeds_of_file"] = chosen_on
        print(f"race: seed {seed} shares draws with {a.from_file}'s selection seeds "
              f"({', '.join(map(str, chosen_on))}): the config was chosen on them, so this verdict is no unseen check",
              file=sys.stderr)
    pool = draws.load_pool(a.idx_dir, count=draws.POOL_SIZE)
    _default_seed_notice(seed_record)
    ranked = draws.ranked_draws(pool, seed)
    rows, seconds, counts = [], [], []
    backend = device = None
    for d in ranked:
        try:
            result = revgraph.fit_predict(d.train_x, d.train_y, d.test_x, backend=a.backend, **config)
        except (ValueError, RuntimeError, TypeError) as e:
            raise RaceError(f"draw {d.index}: {e}") from None
        predictions = result.predictions
        correct = int((predictions == d.test_y).sum())
        meta = result.metadata
        backend, device = meta["backend"], meta["device"]
        counts.append(correct)
        seconds.append(result.run_seconds)
        rows.append(dict(_draw_summary(d), correct=correct, run_seconds=result.run_seconds,
                         predictions_sha256=meta["predictions_sha256"], input_hashes=meta["input_hashes"]))
    band_v = verdict.judge_band(counts, a.band, revgraph)
    word = report.overall([band_v["passed"]])
    entry_predictions = backend == ENTRY_BACKEND
    line = report.engine_verdict_line(word, band_v, backend, seconds, entry_predictions, ENTRY_BACKEND)
    if recorded_failure:  # export refuses this band: the line says why, whatever this judge found
        line += f"; the file records: {recorded_failure}"
    if chosen_on:
        line += f"; seed {seed} shares draws with the file's selection seeds: not an unseen check"
    out = report.header("engine")
    out.update(seed=seed_record, config=config,
               backend={"requested": a.backend, "ran": backend, "device": device,
                        "entry_predictions": entry_predictions,
                        "note": (f"{backend}'s predictions are the exported GPU entry's, bit for bit" if entry_predictions
                                 else f"{backend}'s predictions are NOT the exported GPU entry's (it sums in another "
                                      f"order; {ENTRY_BACKEND}'s are): a quick look, not the entry's verdict")},
               sources={"pool": pool.sources, "pool_official": pool.official,
                        "recorded_failure": recorded_failure or None},
               calls=[dict(r, kind="ranked", draw=r["index"]) for r in rows],
               totals={"ranked_correct": sum(counts), "ranked_total": PER_DRAW * len(counts), "per_draw": counts,
                       "worst_draw": min(counts)},
               band=band_v,
               timing={"time": "not a GPU call", "run_seconds": seconds,
                       "note": "the engine's CPU run time of each draw, for information only; the race's figure is "
                               "a GPU call's CUDA-event time"},
               holdout={"status": "not run", "why": "engine predictions", "passed": None},
               environment=dict(report.environment(), revgraph=revgraph.__version__,
                                # the engine that made the predictions: its build's commit (-dirty if changed)
                                revgraph_commit=revgraph.backends().get("git_commit")),
               verdict={"result": word, "line": line})
    if a.report:
        report.write_json(a.report, out)
    print(line)
    return report.EXIT[word]


# ------------------------------------------------------------------------------------------ draws
def cmd_draws(a):
    import numpy as np
    seed, seed_record = _seed(a)
    inputs = _idx_inputs(a.idx_dir, [draws.TRAIN_IMAGES, draws.TRAIN_LABELS])
    task_files = [os.path.join(a.task_dir, f"draw-{i:02d}{tail}") for i in range(1, draws.RANKED_DRAWS + 1)
                  for tail in (".npz", "-labels.npy")] if a.task_dir else []
    # All of them before anything is written: DRAWS.npz named as a task archive would be replaced by it.
    report.check_outputs([a.output] + task_files, inputs, new_folder=a.task_dir)
    if a.task_dir:
        parent = os.path.dirname(os.path.abspath(a.task_dir))
        if not os.path.isdir(parent):
            raise RaceError(f"{a.task_dir}: the folder {parent} does not exist")
        if os.path.exists(a.task_dir) and not os.path.isdir(a.task_dir):
            raise RaceError(f"{a.task_dir}: not a folder")
        for p in inputs:
            if os.path.dirname(os.path.abspath(p)) == os.path.abspath(a.task_dir):
                raise UsageError(f"{a.task_dir}: is the IDX folder; the race never writes among its inputs")
    # Nor --output among them: the t10k files `run` reads (and any other) live there.
    if os.path.realpath(os.path.dirname(os.path.abspath(a.output))) == os.path.realpath(a.idx_dir):
        raise UsageError(f"{a.output}: is in the IDX folder; the race never writes among its inputs")
    pool = draws.load_pool(a.idx_dir, count=draws.POOL_SIZE)
    _default_seed_notice(seed_record)
    ranked = draws.ranked_draws(pool, seed)
    arrays = {"seed": np.array(str(seed))}
    for d in ranked:
        n = f"{d.index:02d}"
        arrays.update({f"train_x_{n}": d.train_x, f"train_y_{n}": d.train_y, f"test_x_{n}": d.test_x,
                       f"test_y_{n}": d.test_y, f"train_rows_{n}": d.train_rows, f"test_rows_{n}": d.test_rows,
                       f"label_perm_{n}": d.perm})
    if a.task_dir:  # made first: --output may lie in it (check_outputs allowed that folder to be new)
        os.makedirs(a.task_dir, exist_ok=True)
    # One seed's files or the last run's, never some of each (report.write_all).
    items = [(a.output, lambda f: np.savez(f, **arrays))]
    for d, archive, labels in zip(ranked, task_files[0::2], task_files[1::2]):
        items += [(archive, lambda f, d=d: np.savez(f, train_images=d.train_x, train_labels=d.train_y,
                                                    test_images=d.test_x)),
                  (labels, lambda f, d=d: np.save(f, d.test_y))]
    report.write_all(items)
    where = f" and {len(ranked)} task archives in {a.task_dir}" if a.task_dir else ""
    print(f"race: wrote {a.output} ({len(ranked)} draws of seed {seed}){where}")
    return 0


def cmd_choose(a):
    from . import choose
    choose.check_selection_seeds(getattr(a, "seeds", None) or [], DEFAULT_SEED)
    revgraph, why = package.load(a.build)
    if revgraph is None:
        raise RaceError(f"choose needs the built revgraph package: {why}")
    return {"evaluate": choose.cmd_evaluate, "shortlist": choose.cmd_shortlist, "confirm": choose.cmd_confirm,
            "pick": choose.cmd_pick,
            "verified": choose.cmd_verified}[a.step](a, revgraph)


def _terminate(signum, frame):
    raise Terminated()


COMMANDS = {"run": cmd_run, "engine": cmd_engine, "draws": cmd_draws, "check": cmd_check, "choose": cmd_choose}


def main(argv=None):
    try:
        sys.stdout.reconfigure(errors="backslashreplace")
        sys.stderr.reconfigure(errors="backslashreplace")
    except AttributeError:
        pass
    signal.signal(signal.SIGTERM, _terminate)
    try:
        a = _parser().parse_args(argv)
        return COMMANDS[a.command](a)
    except RaceError as e:
        sys.stdout.flush()
        print(f"race: error: {e}", file=sys.stderr)
        return e.status
    except KeyboardInterrupt:
        return _die_of(signal.SIGINT, "interrupted (Ctrl-C)")
    except Terminated:
        return _die_of(signal.SIGTERM, "terminated (SIGTERM)")


def _die_of(sig, what):
    """One line, then end as the signal ends a process, so that the caller sees the signal, not an
    exit code. The temporaries are gone already (report.write_with removes its own on the way out)."""
    sys.stdout.flush()
    print(f"race: error: {what}; no output was left half written", file=sys.stderr)
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    return 128 + sig
