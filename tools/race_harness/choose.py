"""`tools/race choose`: an entry a band, chosen for the GPU by a rule written down before choosing.

Why: the race ranks a call's GPU time, where a config's latency (its steps, depth, width, batch:
tools/race_harness/timemodel.py), not its FLOPs, costs; and a pass on the draws it was chosen on
says little (the frontier's 8 % entry, chosen with a 0.3-point margin on 11 draws, cleared its fresh
draws by ~0.15). So the rule (RULE below, recorded in bench/race.json): for each band, among the
configs that pass the band with MARGIN on every one of the project's selection seeds (the race's own
draw scheme, tools/race draws; never the default seed 480003), the one with the smallest estimated
time a call. Screening runs the fast `cpu` backend (within a few predictions of the reference);
the finalists are judged with `cpu-reference`, whose predictions are the exported entry's.

  evaluate   configs x selection draws through revgraph.run_together, one JSON line each (resumable)
  shortlist  per band, the fastest configs (by the model) that meet the rule on given results
  pick       the choice by the rule on cpu-reference's results: bench/race.json and its summaries

Results are records (config, backend, seed, draw, correct) read from `revgraph sweep` lines
(WORK/NAME/SEED-NN.jsonl) and from `evaluate` lines alike.
"""
import glob
import json
import os
import re
import zipfile
import zlib

import numpy as np

from . import draws, rules, timemodel
from .errors import RaceError, UsageError

KEYS = ("depth", "width", "alpha", "seed", "epochs", "learning_rate", "batch_size", "momentum", "weight_decay")
BANDS = tuple(str(b) for b in rules.LEADERBOARDS)
DRAWS = 11
PER_DRAW = 10000
# The margin, in basis points of the draw (0.5 points = 50 of 10,000 a draw, 550 of 110,000 a total).
MARGIN_BP = 50
RULE = (f"For each band, among the configs that pass the band with margin on EVERY selection seed -- the {DRAWS} "
        f"draws of the race's own scheme (tools/race draws) for each seed, the seed's total at least the band's "
        f"required total + {DRAWS * MARGIN_BP} ({MARGIN_BP / 100:g} points of {DRAWS * PER_DRAW:,}) and every draw at "
        f"least the per-draw floor + {MARGIN_BP} ({MARGIN_BP / 100:g} points of {PER_DRAW:,}) -- with cpu-reference's "
        "predictions (the float32 trainer's, which the exported GPU entry is built to give bit for bit), the config "
        "with the smallest estimated time a call on the A100 (timemodel). Screening with the fast cpu backend only "
        "decides what is confirmed with cpu-reference; ties (configs of the same shape and steps: the model times "
        "them alike) go to the config listed first (engine key order, smaller values first).")
# The stages of bench/race/choose.sh, in order (recorded in bench/race.json).
STAGES = ("draws", "screen", "extend", "confirm", "pick", "verify")


def check_selection_seeds(seeds, default_seed):
    """Refuses, in one line, a selection seed whose draws are any of the default seed's: draw i of a
    seed s uses s + 13 i (i = 1..11), so s shares a draw with the default seed when s - default is
    13 m for |m| <= 10. The default seed judges the choice and must not take part in it."""
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    if twice:
        raise UsageError(f"--seeds names {', '.join(map(str, twice))} twice: each selection seed once")
    for s in seeds:
        if draws.shares_draw_seeds(s, default_seed):
            raise RaceError(f"seed {s} shares draws with {default_seed}, the default local seed, which judges the "
                            f"choice: not a selection seed")


def key(config):
    return tuple(config[k] for k in KEYS)


def config_of(k):
    return dict(zip(KEYS, k))


def label(config):
    c = config if isinstance(config, dict) else config_of(config)
    return (f"w{c['width']} d{c['depth']} a{c['alpha']:g} s{c['seed']} e{c['epochs']} lr{c['learning_rate']:g} "
            f"b{c['batch_size']} m{c['momentum']:g} wd{c['weight_decay']:g}")


def band_numbers(revgraph, band):
    n = revgraph.band_rule(str(band), DRAWS * PER_DRAW, PER_DRAW)
    return {"required_correct": n["required_correct"], "per_draw_floor": n["per_draw_floor"],
            "required_with_margin": n["required_correct"] + DRAWS * MARGIN_BP,
            "floor_with_margin": n["per_draw_floor"] + MARGIN_BP}


# ----------------------------------------------------------------------------------------- results
def _result_lines(path, keys):
    """The result records of a JSON-lines file, each with `keys`; RaceError naming the line where one
    is not (a hand-edited or truncated file: one line, not a traceback)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise RaceError(f"{path}: {getattr(e, 'strerror', None) or e}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            raise RaceError(f"{path}: line {n}: not a JSON result line ({e.msg})") from None
        if not isinstance(r, dict) or any(k not in r for k in keys):
            raise RaceError(f"{path}: line {n}: a result line names {', '.join(keys)}")
        yield r


def _files_of(work, name):
    """(sweep files WORK/NAME/SEED-NN.jsonl, evaluate file WORK/NAME.jsonl): the one place the layout is named."""
    return sorted(glob.glob(os.path.join(work, name, "*-*.jsonl"))), os.path.join(work, name + ".jsonl")


def result_files(work, names):
    """The files read_results reads for these names (for the outputs' check against inputs)."""
    out = []
    for name in names:
        files, single = _files_of(work, name)
        out += files + [single]
    return out


def read_results(work, names):
    """{backend: {config key: {seed: {draw: correct}}}} from WORK/NAME/SEED-NN.jsonl (sweep lines) and
    WORK/NAME.jsonl (evaluate lines), for each NAME."""
    out = {}

    def add(backend, config, seed, draw, correct):
        out.setdefault(backend, {}).setdefault(key(config), {}).setdefault(int(seed), {})[int(draw)] = int(correct)

    for name in names:
        files, single = _files_of(work, name)
        if not files and not os.path.exists(single):
            raise RaceError(f"no results named {name} under {work}")
        for path in files:
            m = re.match(r"(\d+)-(\d+)\.jsonl$", os.path.basename(path))
            if not m:
                continue
            for r in _result_lines(path, ("backend", "config", "correct")):
                add(r["backend"], r["config"], m.group(1), m.group(2), r["correct"])
        if os.path.exists(single):
            for r in _result_lines(single, EVALUATE_KEYS):
                add(r["backend"], r["config"], r["selection_seed"], r["draw"], r["correct"])
    return out


def seed_summary(by_seed, seeds):
    """{seed: {total, worst, per_draw}} for the seeds whose 11 draws are all there."""
    out = {}
    for s in seeds:
        d = by_seed.get(s, {})
        if len(d) == DRAWS:
            counts = [d[i] for i in range(1, DRAWS + 1)]
            out[s] = {"total": sum(counts), "worst": min(counts), "per_draw": counts}
    return out


def meets(summary, seeds, numbers):
    """True when every seed has its 11 draws and meets the band with margin; None when a seed is missing."""
    if any(s not in summary for s in seeds):
        return None
    return all(summary[s]["total"] >= numbers["required_with_margin"] and summary[s]["worst"] >= numbers["floor_with_margin"]
               for s in seeds)


def estimate_ms(k):
    return timemodel.estimate(config_of(k))["ms"]


def ranked(results, seeds, numbers):
    """Configs meeting the rule on these seeds, fastest (by the model) first; ties by key."""
    ok = [k for k, by_seed in results.items() if meets(seed_summary(by_seed, seeds), seeds, numbers)]
    return sorted(ok, key=lambda k: (round(estimate_ms(k), 9), k))


# ---------------------------------------------------------------------------------------- commands
def _draw_files(work, seed, n):
    base = os.path.join(work, f"sel-{seed}", f"draw-{n:02d}")
    return base + ".npz", base + "-labels.npy"


def _load_draw(work, seed, n):
    archive, labels_file = _draw_files(work, seed, n)
    path = archive
    try:
        with np.load(archive) as z:
            arrays = (np.ascontiguousarray(z["train_images"]), np.ascontiguousarray(z["train_labels"]),
                      np.ascontiguousarray(z["test_images"]))
        path = labels_file
        labels = np.load(labels_file)
    # A damaged archive: BadZipFile (not an OSError), EOFError, ValueError where numpy reads a cut array,
    # zlib.error in a compressed (np.savez_compressed) member.
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile, zlib.error) as e:
        raise RaceError(f"{path}: {e} (make the draws: tools/race draws --seed {seed} --task-dir ...)") from None
    return arrays, labels


EVALUATE_KEYS = ("config", "backend", "selection_seed", "draw", "correct")


def read_configs(path):
    """The 'configs' list of a JSON file (shortlist writes one), each config the nine KEYS exactly (a
    result line is keyed by all nine); RaceError, one line, where the file is not that."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise RaceError(f"--configs {path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RaceError(f"--configs {path}: not JSON ({e})") from None
    configs = doc.get("configs") if isinstance(doc, dict) else None
    if not isinstance(configs, list) or not configs:
        raise RaceError(f"--configs {path}: no 'configs' list of configs (tools/race choose shortlist writes one)")
    for n, c in enumerate(configs, 1):
        if not isinstance(c, dict):
            raise RaceError(f"--configs {path}: config {n} is not an object of the keys {', '.join(KEYS)}")
        missing, unknown = [k for k in KEYS if k not in c], [k for k in c if k not in KEYS]
        if missing or unknown:
            raise RaceError(f"--configs {path}: config {n} " + "; ".join(
                ([f"has no {', '.join(missing)}"] if missing else []) + ([f"has unknown {', '.join(unknown)}"] if unknown else []))
                + f" (a config is the nine keys {', '.join(KEYS)})")
    return [{k: c[k] for k in KEYS} for c in configs]


def check_evaluation(revgraph, work, configs, seeds, backend):
    """Before a run starts: every config and the backend as the engine reads them (a Task on one image
    each: milliseconds), and every selection draw there. RaceError, one line, naming what is wrong."""
    one = np.zeros((1, 1, 9, 9), np.float32)
    for n, c in enumerate(configs, 1):
        try:
            revgraph.Task(one, np.zeros(1, np.int64), one, backend=backend, **c)
        except (ValueError, TypeError, RuntimeError) as e:
            raise RaceError(f"config {n} ({label(c)}), backend {backend}: {e}") from None
    for seed in seeds:
        for n in range(1, DRAWS + 1):
            for path in _draw_files(work, seed, n):
                if not os.path.isfile(path):
                    raise RaceError(f"{path}: not there (make the draws: tools/race draws --seed {seed} "
                                    f"--task-dir {os.path.join(work, f'sel-{seed}')} ...)")


def evaluate(revgraph, work, configs, seeds, backend, jobs, output):
    """Run every config on every selection draw not yet in `output` (appended, one line a run)."""
    done = set()
    if os.path.exists(output):
        for r in _result_lines(output, EVALUATE_KEYS):
            done.add((key(r["config"]), r["selection_seed"], r["draw"], r["backend"]))
    todo = [(seed, n, c) for seed in seeds for n in range(1, DRAWS + 1) for c in configs
            if (key(c), seed, n, backend) not in done]
    # Tasks run `jobs` at a time across configs and draws alike (one config on 55 draws keeps every
    # worker busy too); a chunk's lines are written when it ends, so an interrupted run resumes. The
    # file is opened at the first chunk's end: a run that fails before has written nothing.
    chunk = max(1, jobs) * 4
    out = None
    try:
        for i in range(0, len(todo), chunk):
            part, cache, tasks = todo[i:i + chunk], {}, []
            try:
                for seed, n, c in part:
                    if (seed, n) not in cache:
                        cache[(seed, n)] = _load_draw(work, seed, n)
                    (tx, ty, qx), _ = cache[(seed, n)]
                    tasks.append(revgraph.Task(tx, ty, qx, backend=backend, **c))
                results = revgraph.run_together(tasks, threads=jobs, metadata=False)
            except (ValueError, TypeError, RuntimeError) as e:
                raise RaceError(f"evaluate: {e}") from None
            lines = "".join(json.dumps({"config": c, "backend": backend, "selection_seed": seed, "draw": n,
                                        "correct": int((r.predictions == cache[(seed, n)][1]).sum()),
                                        "run_seconds": r.run_seconds}) + "\n"
                            for (seed, n, c), r in zip(part, results))
            if out is None:
                out = open(output, "a")
            out.write(lines)  # one write a chunk: whole lines
            out.flush()
    finally:
        if out is not None:
            out.close()
    return len(todo)


def cmd_evaluate(a, revgraph):
    from . import report
    configs = read_configs(a.configs)
    check_evaluation(revgraph, a.work, configs, a.seeds, a.backend)
    # Appended to, never over an input: not the configs file, nor a draw.
    report.check_output(a.output, [a.configs] + [p for s in a.seeds for n in range(1, DRAWS + 1)
                                                 for p in _draw_files(a.work, s, n)])
    runs = evaluate(revgraph, a.work, configs, a.seeds, a.backend, a.jobs, a.output)
    print(f"race: choose evaluate: {runs} runs ({a.backend}) added to {a.output}")
    return 0


def cmd_confirm(a, revgraph):
    """Per band, the configs meeting the rule on cpu, fastest first, each run with cpu-reference on
    every selection draw, until `need` of them meet the rule there (or `most` were tried)."""
    screened = read_results(a.work, a.results).get("cpu", {})
    output = _files_of(a.work, a.output)[1]
    for band in a.bands:
        numbers = band_numbers(revgraph, band)
        passed = tried = 0
        for k in ranked(screened, a.seeds, numbers):
            if passed >= a.need or tried >= a.most:
                break
            evaluate(revgraph, a.work, [config_of(k)], a.seeds, "cpu-reference", a.jobs, output)
            tried += 1
            ref = read_results(a.work, [a.output]).get("cpu-reference", {}).get(k, {})
            ok = meets(seed_summary(ref, a.seeds), a.seeds, numbers)
            passed += bool(ok)
            worst = min(v["total"] for v in seed_summary(ref, a.seeds).values())
            print(f"race: choose confirm: band {band} %: {label(config_of(k))} ({estimate_ms(k):.3f} ms): "
                  f"{'meets' if ok else 'misses'} the rule on cpu-reference (lowest seed total {worst:,})", flush=True)
        if not tried:
            print(f"race: choose confirm: band {band} %: no config meets the rule on cpu")
    return 0


def require_outputs(revgraph, outputs, inputs):
    """Before any work, the engine's one check (revgraph._core.require_outputs, as the revgraph
    command's): no output (what, path) is an input (what, path) or another output, however spelled
    (links, "..", a hard link), and each one's folder is there and writable. One line where one is
    not: UsageError (exit 2) for an output that is an input or another output, as the command's and
    the race's own check of its other commands; RaceError (exit 1) for a folder it cannot write."""
    try:
        revgraph._core.require_outputs(outputs, inputs)
    except revgraph._core.SameFileError as e:
        raise UsageError(str(e)) from None
    except RuntimeError as e:
        raise RaceError(str(e)) from None


def check_seeds_have_results(results, seeds, backend, work, names):
    """RaceError naming the selection seeds no result of `backend` was run on: a seed without results
    would leave every config short of the rule, an empty choice that says nothing of why."""
    ran = {s for by_seed in results.values() for s in by_seed}
    missing = [s for s in seeds if s not in ran]
    if missing:
        raise RaceError(f"no {backend} results for seed{'s' * (len(missing) > 1)} {', '.join(map(str, missing))} in "
                        f"{', '.join(names)} under {work} (run them, or leave the seed out of --seeds)")


def cmd_shortlist(a, revgraph):
    # Never over what it reads (the results), nor over the selection draws those results are of.
    inputs = [("--results", p) for p in result_files(a.work, a.results)]
    inputs += [("a selection draw", p) for s in a.seeds for n in range(1, DRAWS + 1) for p in _draw_files(a.work, s, n)]
    require_outputs(revgraph, [("--output", a.output)], inputs)
    results = read_results(a.work, a.results).get(a.backend, {})
    check_seeds_have_results(results, a.seeds, a.backend, a.work, a.results)
    chosen, per_band = [], {}
    for band in a.bands:
        numbers = band_numbers(revgraph, band)
        top = ranked(results, a.seeds, numbers)[:a.top]
        per_band[band] = [label(config_of(k)) for k in top]
        chosen += [k for k in top if k not in chosen]
        print(f"race: choose shortlist: band {band} %: {len(top)} of the configs meeting the rule on seeds "
              f"{', '.join(map(str, a.seeds))} ({a.backend}), fastest first: "
              + "; ".join(f"{label(config_of(k))} {estimate_ms(k):.3f} ms" for k in top[:5]) + (" ..." if len(top) > 5 else ""))
    from . import report
    report.write_json(a.output, {"seeds": a.seeds, "backend": a.backend, "bands": per_band,
                                 "configs": [config_of(k) for k in chosen]})
    return 0


def _fmt_summary(summary, seeds):
    return {str(s): {"total": summary[s]["total"], "worst_draw": summary[s]["worst"]} for s in seeds if s in summary}


def table(results, seeds, backend):
    """(text, rows) of a compact CSV: one row a config (its nine keys, estimated ms, each seed's total
    and worst draw)."""
    rows = []
    for k, by_seed in results.items():
        summary = seed_summary(by_seed, seeds)
        cells = [str(v) for v in k] + [f"{estimate_ms(k):.4f}"]
        for s in seeds:
            cells += [str(summary[s]["total"]), str(summary[s]["worst"])] if s in summary else ["", ""]
        rows.append((estimate_ms(k), k, ",".join(cells)))
    rows.sort()
    head = ",".join(list(KEYS) + ["estimated_ms_a100"] + [f"{x}_{s}" for s in seeds for x in ("total", "worst")])
    text = (f"# {backend}: every config run on the selection draws (tools/race choose pick); totals of 110,000, "
            f"worst of 10,000 a draw; empty where a seed was not run\n" + head + "\n"
            + "".join(line + "\n" for _, _, line in rows))
    return text, len(rows)


def diverged_neighbours(k, screened, seeds, below=5000):
    """Screened configs one key away from k with a selection draw under `below` correct (training that
    diverged): what the rule does not weigh, listed beside the choice."""
    out = []
    for other, by_seed in screened.items():
        if sum(a != b for a, b in zip(k, other)) != 1:
            continue
        bad = [(s, d, c) for s in seeds for d, c in sorted(by_seed.get(s, {}).items()) if c < below]
        if bad:
            run = sum(len(by_seed.get(s, {})) for s in seeds)
            out.append(f"{label(config_of(other))}: {len(bad)} of its {run} selection draws under "
                       f"{below // 100} % (" + ", ".join(f"seed {s} draw {d}: {c}" for s, d, c in bad[:3])
                       + (", ..." if len(bad) > 3 else "") + ")")
    return sorted(out)


def _revgraph_record(revgraph):
    commit = revgraph.backends().get("git_commit") or ""
    return {"version": revgraph.__version__, "commit": commit.replace("-dirty", ""),
            "clean": bool(commit) and not commit.endswith("-dirty"),
            "how": ("the engine that ran extend, confirm and verify (the choice's cpu-reference figures): its build's "
                    "commit, clean when built from a checkout with no change (a clone of that commit built alone, "
                    "$REVGRAPH_BUILD); the screening sweeps ran on the shared build of the same engine code "
                    "(sample points' predictions hashes equal)")}


def check_folder(folder, what):
    """Before any work: FOLDER is a folder, or one that can be made (the nearest of its parents that is
    there is a folder). RaceError, one line, where a file (or a link to none) stands in its way."""
    path = os.path.abspath(folder)
    while not os.path.lexists(path):
        path = os.path.dirname(path)
    if not os.path.isdir(path):
        raise RaceError(f"{what} {folder}: " + ("is not a folder" if path == os.path.abspath(folder) else
                                                f"{path} is not a folder") + " (the summaries go in a folder)")


def cmd_pick(a, revgraph):
    from . import DEFAULT_SEED, PROTOCOL, HARNESS, report
    inputs = result_files(a.work, a.screen + a.confirm)

    def summary(name):  # a file under --summary-dir, and its path in the record (relative to --root)
        path = os.path.join(a.summary_dir, name)
        return path, os.path.relpath(os.path.abspath(path), os.path.abspath(a.root))

    tables = {"screen-cpu.csv": "cpu", "confirm-cpu-reference.csv": "cpu-reference"}
    check_folder(a.summary_dir, "--summary-dir")
    # Never over what it reads; the summary folder is made at the end, where it is new.
    report.check_outputs([a.output] + [summary(n)[0] for n in tables], inputs, new_folder=a.summary_dir)
    screened = read_results(a.work, a.screen).get("cpu", {})
    confirmed = read_results(a.work, a.confirm).get("cpu-reference", {})
    seeds = a.seeds
    # Everything is worked out before anything is written: a failure on the way leaves the last
    # pick's record, tables and configs as they were, never half of each.
    texts = {}
    texts["screen-cpu.csv"], n_screen = table(screened, seeds, "cpu")
    texts["confirm-cpu-reference.csv"], n_conf = table(confirmed, seeds, "cpu-reference")
    bands, unreached = [], []
    for band in BANDS:
        numbers = band_numbers(revgraph, band)
        on_cpu = ranked(screened, seeds, numbers)
        finalists = [k for k in on_cpu if k in confirmed]
        passing = ranked({k: confirmed[k] for k in finalists}, seeds, numbers)
        best_cpu = max(((sum(v["total"] for v in seed_summary(by_seed, seeds).values()), k)
                        for k, by_seed in screened.items() if len(seed_summary(by_seed, seeds)) == len(seeds)),
                       default=(None, None))
        one_seed = max((seed_summary(by_seed, seeds[:1]).get(seeds[0], {"total": -1})["total"], k)
                       for k, by_seed in screened.items())
        tried = {"screened_cpu": n_screen, "met_rule_cpu_all_seeds": len(on_cpu),
                 "confirmed_cpu_reference": len(finalists), "met_rule_cpu_reference": len(passing)}
        if not passing:
            unreached.append({"band": band, **numbers, "candidates_tried": tried,
                              "best_on_first_seed_cpu": {"config": config_of(one_seed[1]), "total": one_seed[0],
                                                         "seed": seeds[0]},
                              "best_on_all_seeds_cpu": (None if best_cpu[1] is None else
                                                        {"config": config_of(best_cpu[1]),
                                                         "mean_total": best_cpu[0] / len(seeds)})})
            continue

        def describe(k):
            est = timemodel.estimate(config_of(k))
            return {"config": config_of(k), "estimated_ms_per_call": round(est["ms"], 4),
                    "estimated_ms_per_call_h200": round(timemodel.estimate(config_of(k), "h200")["ms"], 4),
                    "steps": est["steps"],
                    "selection": {"backend": "cpu-reference", **_fmt_summary(seed_summary(confirmed[k], seeds), seeds)},
                    "selection_cpu": _fmt_summary(seed_summary(screened.get(k, {}), seeds), seeds),
                    "neighbours_that_diverged": diverged_neighbours(k, screened, seeds)}

        chosen = describe(passing[0])
        entry = {"band": band, **chosen, **numbers, "candidates_tried": tried,
                 "finalists": [{"config": config_of(k), "estimated_ms_per_call": round(estimate_ms(k), 4),
                                "selection": {"backend": "cpu-reference",
                                              **_fmt_summary(seed_summary(confirmed[k], seeds), seeds)},
                                "met_rule_cpu_reference": k in passing} for k in finalists],
                 "runner_up": describe(passing[1]) if len(passing) > 1 else None,
                 "config_file": summary(f"config-{band}.json")[1],
                 "verify_report": summary(f"verify-{band}.json")[1]}
        texts[f"config-{band}.json"] = json.dumps(chosen["config"], indent=1) + "\n"
        bands.append(entry)
    doc = {
        "what": ("An entry a band of the MNIST-medium time challenge (issue 48 item 4): the rev88 family's config "
                 "chosen for the GPU by the rule below, before any draw of the default seed 480003 was looked at; "
                 "`revgraph export --from bench/race.json --band B` writes it as an entry. The times are the "
                 "model's ESTIMATES until a GPU measures the entries."),
        "rule": {"words": RULE, "margin": {"total": DRAWS * MARGIN_BP, "per_draw": MARGIN_BP,
                                           "points": MARGIN_BP / 100},
                 "time_model": {"module": "tools/race_harness/timemodel.py", "words": timemodel.__doc__.strip(),
                                "formula": timemodel.FORMULA, "constants": timemodel.CONSTANTS,
                                "rev88_check": dict(zip(("estimated_ms_h200", "measured_ms_h200_cuda_fused_plain"),
                                                        timemodel.rev88_check()))}},
        "selection_seeds": seeds,
        "harness": {"protocol": PROTOCOL, "harness": HARNESS, "tree": report.git_state(),
                    "draws": ("the race's scheme (docs/race.md, tools/race draws): official MNIST training files, "
                              "float32 box resize, halves by default_rng([seed, 0x5711]), draw i of 11 from seed + "
                              "13 i, labels permuted"),
                    "verify_seed": DEFAULT_SEED},
        "revgraph": _revgraph_record(revgraph),
        "commands": f"bench/race/choose.sh IDX_DIR WORK (stages {' '.join(STAGES)})",
        "bands": bands,
        "unreached": unreached,
    }
    try:
        os.makedirs(a.summary_dir, exist_ok=True)
    except OSError as e:  # checked before the work; here only where it changed since
        raise RaceError(f"--summary-dir {a.summary_dir}: cannot make the folder ({e.strerror or e})") from None
    files = [(summary(name)[0], text) for name, text in texts.items()] + [(a.output, json.dumps(doc, indent=1) + "\n")]
    report.write_all([(path, lambda f, t=text: f.write(t.encode())) for path, text in files])  # as one
    for old in glob.glob(os.path.join(a.summary_dir, "config-*.json")):  # an earlier pick's: verify reads them all
        if os.path.basename(old) not in texts:
            os.remove(old)
    for b in bands:
        print(f"race: choose: band {b['band']} %: {label(b['config'])}, estimated {b['estimated_ms_per_call']:.3f} ms a "
              f"call (A100), worst seed total {min(v['total'] for k, v in b['selection'].items() if k != 'backend'):,}")
    for u in unreached:
        print(f"race: choose: band {u['band']} %: nothing met the rule")
    return 0


def cmd_verified(a, revgraph):
    """Record each band's verify report (tools/race engine on the default seed) in bench/race.json."""
    from . import report

    def load(path, what):
        try:
            with open(path) as f:
                return json.load(f)
        except OSError as e:
            raise RaceError(f"{path}: cannot read {what} ({e.strerror or e})") from None
        except ValueError:
            raise RaceError(f"{path}: {what} is not JSON") from None

    doc = load(a.race, "the race record")
    if not isinstance(doc, dict) or not isinstance(doc.get("bands"), list):
        raise RaceError(f"{a.race}: no \"bands\" list (not a race record like bench/race.json)")
    for b in doc["bands"]:
        path = os.path.join(a.root, b["verify_report"])
        if not os.path.exists(path):
            raise RaceError(f"{path}: band {b['band']}'s verify report is missing (tools/race engine --band "
                            f"{b['band']} --from {a.race} --report {b['verify_report']}; or --root)")
        rep = load(path, "a verify report")
        if rep["config"] != b["config"]:
            raise RaceError(f"{path}: its config is not band {b['band']}'s")
        b["verify"] = {"report": b["verify_report"], "seed": rep["seed"]["seed"], "backend": rep["backend"]["ran"],
                       "total": rep["totals"]["ranked_correct"], "worst_draw": rep["totals"]["worst_draw"],
                       "per_draw": rep["totals"]["per_draw"], "passed": rep["band"]["passed"],
                       "result": rep["verdict"]["result"]}
    report.write_json(a.race, doc)
    return 0
