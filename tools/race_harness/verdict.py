"""The verdict's rules, apart from how the counts and times were obtained.

Why apart: the same rules judge an entry's calls (`run`) and the engine's predictions (`engine`),
and the tests hold the arithmetic to made-up counts. The band's verdict is the engine's one rule,
revgraph.band_verdict (engine/qualify/protocol.cpp's verdict_of_counts, what qualify judges by):
required = ceil(total × (100 − band) / 100) and the per-draw floor 1.5 points below the band, in
exact integers; there is no second copy here.

  band         sum(correct) >= required and every ranked draw >= floor
  hold-out     the hold-out calls (Fashion-MNIST) average >= 15 % correct: 100·sum >= 15·n·10,000
  consistency  slowest timed call <= 2 × median + 2 ms; no call over 60 s
  figure       the mean time of the timed calls (ranked and hold-out; not the warm-up)
"""
import statistics

from . import rules
from .errors import RaceError

HOLDOUT_PERCENT = 15
CALL_LIMIT_MS = 60000.0
SLACK_MS = 2.0


def band_basis_points(band):
    """'12' -> 1200 (a leaderboard: 12, 8, 5, 3 or 2, as rules.leaderboard takes it: '12.0', 12);
    RaceError, one line naming the leaderboards, for any other band."""
    # The harness judges the race's leaderboards only (docs/race.md: a header's N and `--band` take
    # no other), so the verdict takes exactly those, by rules.leaderboard, the harness's one list.
    # It once took any band to hundredths (7.5 judged; 12.001, which the engine's rule takes to
    # nine decimals, refused with a message of its own): a rule of its own that no caller needed,
    # and a verdict at a band that no leaderboard has would pass for nothing.
    try:
        return int(rules.leaderboard(band)) * 100
    except ValueError as e:
        raise RaceError(str(e)) from None


def judge_band(counts, band, revgraph, why_missing="", per_draw=10000):
    """The band's verdict on the ranked draws' correct counts (dict for the report). Without the
    package: available False and why, and no pass or fail."""
    total, n = sum(counts), len(counts)
    basis_points = band_basis_points(band)  # first: a band that is no leaderboard is refused here
    out = {"band": str(band), "basis_points": basis_points, "draws": n, "per_draw": per_draw,
           "total_correct": total, "total": n * per_draw, "worst_draw": min(counts) if counts else None,
           "rule": getattr(revgraph, "VERDICT_SOURCE", "revgraph.band_verdict (engine/qualify/protocol.cpp)")}
    if revgraph is None:
        out.update(available=False, why=why_missing, passed=None)
        return out
    try:
        v = revgraph.band_verdict(str(band), list(counts), per_draw)
    except ValueError as e:
        raise RaceError(f"band {band!r}: {e}") from None
    out.update(available=True, **{k: v[k] for k in ("required_correct", "per_draw_floor", "meets_total", "meets_floor",
                                                    "draws_below_floor", "passed")})
    return out


def judge_holdout(counts, per_draw=10000, skipped_why=""):
    """The hold-out rule on the hold-out calls' correct counts; skipped (passed None) where none ran."""
    if not counts:
        return {"status": "skipped", "why": skipped_why, "passed": None, "percent_needed": HOLDOUT_PERCENT}
    passed = 100 * sum(counts) >= HOLDOUT_PERCENT * len(counts) * per_draw
    return {"status": "passed" if passed else "failed", "passed": passed, "calls": len(counts), "correct": list(counts),
            "mean_percent": 100.0 * sum(counts) / (len(counts) * per_draw), "percent_needed": HOLDOUT_PERCENT}


def judge_times(ms):
    """Consistency and the ranked figure over the timed calls' milliseconds."""
    if not ms:
        return {"passed": None, "why": "no timed calls"}
    median = statistics.median(ms)
    limit = 2.0 * median + SLACK_MS
    slow = [k for k, t in enumerate(ms) if t > CALL_LIMIT_MS]
    consistent = max(ms) <= limit
    return {"calls": len(ms), "mean_ms": statistics.fmean(ms), "median_ms": median, "max_ms": max(ms), "min_ms": min(ms),
            "consistency_limit_ms": limit, "consistent": consistent, "calls_over_60s": slow,
            "passed": consistent and not slow}
