"""An estimate of a `revgraph export` entry's time a call, from its config alone (no GPU).

Why: the race ranks entries by the CUDA-event time of a call on an A100, and no GPU is lent to
every session. On a GPU a task of this engine is a chain of small dependent kernels, so what a
config costs is not its FLOPs (what the CPU frontier, bench/frontier/, paid for) but its latency:
two launches a step (engine/cuda/fused_any/step.hpp as the exported entry launches it,
engine/export/entry.py.in), a rows kernel of ~6·depth+4 dependent phases, each a chain of width/2
adds, and a grads kernel whose every parameter is a chain of `batch` dependent adds, in the float32
reference trainer's order. This module turns that into milliseconds, to choose among configs that
pass a band (bench/race.json, `tools/race choose`). IT IS AN ESTIMATE until a GPU times the entries.

Calibration: the H200 phase table of the kernel lab (cuda-fused at rev88: depth 2, width 82,
batch 128, 2 rows a block), bench/results/2026-12-04-1835-h200-b46778a-call2.log, in cycles; the
step entry to entry there (11,552 ns plain) fixes what a step costs beyond its phases. The cycle
counts are carried to another width, depth and batch by the kernel's shape, and to the A100 by its
SM count, shared memory and clock (a latency chain runs in cycles). Assumptions, none measured on
this kernel: a term of any chain costs what a 41-term couple phase's terms cost (the slope between
the 41- and 82-term phases); the grads kernel's chain costs what cuda-fused's staged sums cost a row
(the exported grads kernel stages nothing: it reads each row from global memory, so this, the
largest term at batch 1024 — about 60 % of the 12 % and 8 % entries' steps — is the least certain);
a rows block that cannot keep its parameters in shared memory is 1.45× slower (the lab's unstaged
rows kernel, 10.54 against 7.29 µs); no kernel of the step moves more than 32 terms a cycle an SM
(what the prediction reached: terms_per_cycle_per_sm) nor 5,120 bytes a cycle out of L2; a call
adds three graph nodes and 20 µs of host time (graph replay from Python). The rev88 check below
only reproduces the calibration point (its step time is the calibration's), it validates nothing.

`estimate(config)` -> ms a call on the A100 (the judge's GPU), with its parts; `estimate(config,
"h200")` the same on the H200 the project measures on. Every constant is in CONSTANTS, which
bench/race.json records whole so that a test recomputes each figure from it.
"""
import math

# Every number the model uses, with where it comes from. Cycles are the H200's (clock 1.953 GHz by
# the lab's stamps for the rows kernel, 1.918 for the grads kernel; both treated as cycles).
LAB = "bench/results/2026-12-04-1835-h200-b46778a-call2.log"
CONSTANTS = {
    "version": 1,
    "calibration": {
        "source": LAB + " (kernel lab phase table, cuda-fused at rev88: depth 2, width 82, batch 128, "
                        "2 rows a block; medians over 64 blocks x 16 launches)",
        "rows_load_cycles": 2419,           # phase 1: rows, labels and 30,216 bytes of parameters
        "rows_load_param_floats": 7554,     # rev88's parameter count, what phase 1 copied
        "couple_cycles_h41": 658,           # mean of the eleven 41-term phases 2-5 and 10-16 (7,238 / 11)
        "scores_cycles_w82": 1274,          # phase 6: scores and final state, an 82-term chain
        "softmax_dstate_cycles": 1548,      # phases 7-9: 533 + 662 + 353 (10-term chains)
        "grads_fixed_cycles": 3269,         # grads phases 1 and 3: stage 2672 + SGD 597
        "grads_cycles_per_row": 18.75,      # grads phase 2: 2400 cycles over the 128 rows of the batch
        "step_rest_cycles": 4310,           # 11,552 ns entry to entry - 6,390 - 2,955 ns of phases, at 1.953 GHz:
                                            # the two boundaries (704 + 736 ns) and each kernel's spread
        "predict_load_cycles": 1489,        # predict kernel, 16 rows a block, 256 threads: load
        "predict_couple_cycles_h41": 2821,  # mean of its four couple phases (3 rounds of 41-term chains)
        "predict_scores_cycles": 1286,
        "predict_argmax_cycles": 833,
        "unstaged_factor": 1.45,            # rows kernel unstaged / staged, 10.54 / 7.29 us (same log)
        "rev88_plain_ms_measured": 1.92,    # cuda-fused, plain launches, one rev88 task (bench/results/INDEX.md)
        # The throughput bound: the 10,000-query prediction took 8.9 us (bench/NOTES.md, "Where a cuda-fused
        # task's 2.59 ms goes"): 10,000 x (4 x 41^2 + 20 x 41) = 75.4 M terms in 17.6 k cycles at 1.98 GHz
        # on 132 SMs, 32.4 terms a cycle an SM; taken as what any kernel of the step can reach.
        "terms_per_cycle_per_sm": 32,
    },
    "assumed": {
        "l2_bytes_per_cycle": 5120,         # A100's L2 bandwidth (whitepaper), used for both GPUs
        "param_copy_bytes_per_cycle_per_sm": 32,  # a block's parameter copy beyond rev88's 30 KB
        "call_nodes": 3,                    # the graph's parameter copy, velocity zero, labels copy
        "call_host_us": 20.0,               # Python + graph replay before the GPU starts, in the timed window
    },
    # The exported entry's launch shape (engine/export/entry.py.in).
    "entry": {"rows_per_block": 2, "rows_threads": 128, "grads_items": 256, "grads_threads": 256,
              "predict_rows_per_block": 16, "predict_threads": 256, "train_rows": 10000, "query_rows": 10000,
              "block_reserved_smem": 1024, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32},
    "gpus": {
        "a100": {"name": "NVIDIA A100-SXM4 (the judge's)", "sms": 108, "clock_ghz": 1.41,
                 "smem_per_sm": 167936, "smem_per_block": 166912},
        "h200": {"name": "NVIDIA H200 (the project's lent GPU)", "sms": 132, "clock_ghz": 1.98,
                 "smem_per_sm": 233472, "smem_per_block": 232448},
    },
}


FORMULA = (
    "ms = (epochs x sum over an epoch's batches (the last one short) of step(rows) + predict + call_nodes x "
    "step_rest / 2) / (clock_ghz x 1e6) + call_host_us / 1000. h = width/2, P = 2 depth h^2 + 10 width + 10, "
    "chain(n) = c0 + c1 n with c1 = (scores_cycles_w82 - couple_cycles_h41) / 41, c0 = couple_cycles_h41 - 41 c1. "
    "step(r) = rows(r) + grads(r) + step_rest_cycles. rows(r) = max(waves x block, r ((6 depth - 1) h^2 + 40 h) / "
    "(T x sms), staged x ceil(r/2) x 4P / l2_bytes_per_cycle), T = terms_per_cycle_per_sm; block = load + u x "
    "((6 depth - 1) R chain(h) + R chain(width) + softmax_dstate_cycles), R = ceil(2h / 128), u = 1 staged else "
    "unstaged_factor, load = rows_load_cycles + staged x max(0, P - 7554) x 4 / param_copy_bytes_per_cycle_per_sm; "
    "staged when 4P + max(2 (2 width + 33) 4, 16 (width + 1) 4) <= smem_per_block; waves = ceil(ceil(r/2) / (sms x "
    "min(2048/128, smem_per_sm // (2 (2 width + 33) 4 + staged 4P + 1024), 32))). grads(r) = max(waves_g x "
    "(grads_fixed_cycles + grads_cycles_per_row x r), P r / (T x sms)), waves_g = ceil(ceil(P/256) / (sms x 8)). "
    "predict = max(waves_p x (predict_load_cycles + u x (2 depth R_p predict_couple_cycles_h41 / 3 x chain(h) / "
    "chain(41) + predict_scores_cycles x chain(width) / chain(82) + predict_argmax_cycles)), 10000 (2 depth h^2 + "
    "20 h) / (T x sms)), R_p = ceil(16 h / 256), waves_p = ceil(625 / (sms x min(8, smem_per_sm // (16 (width + 1) 4 "
    "+ staged 4P + 1024), 32))).")


def param_count(depth, width):
    h = width // 2
    return 2 * depth * h * h + 10 * width + 10


def _derived(c):
    cal = c["calibration"]
    c1 = (cal["scores_cycles_w82"] - cal["couple_cycles_h41"]) / 41.0  # cycles a term of a chain
    c0 = cal["couple_cycles_h41"] - 41.0 * c1                             # cycles a phase besides its terms
    return c0, c1


def chain_cycles(terms, c=CONSTANTS):
    """One phase whose items are `terms`-long chains, in cycles (calibrated at 41 and 82 terms)."""
    c0, c1 = _derived(c)
    return c0 + c1 * terms


def _per_sm(threads, smem, gpu, e):
    by_threads = e["max_threads_per_sm"] // threads
    by_smem = gpu["smem_per_sm"] // (smem + e["block_reserved_smem"])
    return max(1, min(by_threads, by_smem, e["max_blocks_per_sm"]))


def step_cycles(depth, width, rows, gpu_name="a100", c=CONSTANTS):
    """(cycles, parts) of one SGD step over `rows` batch rows."""
    cal, a, e, gpu = c["calibration"], c["assumed"], c["entry"], c["gpus"][gpu_name]
    h, p = width // 2, param_count(depth, width)
    theta = cal["terms_per_cycle_per_sm"] * gpu["sms"]
    smem_scratch = max(2 * (2 * width + 33) * 4, 16 * (width + 1) * 4)
    staged = 4 * p + smem_scratch <= gpu["smem_per_block"]
    # Rows kernel: a block of 2 rows, 128 threads; a phase of 2h items takes ceil(2h/128) rounds.
    rounds = math.ceil(e["rows_per_block"] * h / e["rows_threads"])
    load = cal["rows_load_cycles"] + (max(0, p - cal["rows_load_param_floats"]) * 4
                                      / a["param_copy_bytes_per_cycle_per_sm"] if staged else 0.0)
    phases = ((6 * depth - 1) * rounds * chain_cycles(h, c) + rounds * chain_cycles(width, c)
              + cal["softmax_dstate_cycles"])
    block = load + phases * (1.0 if staged else cal["unstaged_factor"])
    blocks = math.ceil(rows / e["rows_per_block"])
    smem = 2 * (2 * width + 33) * 4 + (4 * p if staged else 0)
    waves = math.ceil(blocks / (gpu["sms"] * _per_sm(e["rows_threads"], smem, gpu, e)))
    rows_work = rows * ((6 * depth - 1) * h * h + 40 * h) / theta
    rows_l2 = blocks * 4 * p / a["l2_bytes_per_cycle"] if staged else 0.0
    t_rows = max(waves * block, rows_work, rows_l2)
    # Grads kernel: a thread a parameter, its gradient a chain over the batch's rows in order.
    g_blocks = math.ceil(p / e["grads_items"])
    g_waves = math.ceil(g_blocks / (gpu["sms"] * _per_sm(e["grads_threads"], 0, gpu, e)))
    g_chain = cal["grads_fixed_cycles"] + cal["grads_cycles_per_row"] * rows
    t_grads = max(g_waves * g_chain, p * rows / theta)
    total = t_rows + t_grads + cal["step_rest_cycles"]
    return total, {"rows": t_rows, "grads": t_grads, "rest": cal["step_rest_cycles"], "rows_waves": waves,
                   "staged": staged, "rows_bound": "latency" if t_rows == waves * block else "throughput",
                   "grads_bound": "latency" if t_grads == g_waves * g_chain else "throughput"}


def predict_cycles(depth, width, gpu_name="a100", c=CONSTANTS):
    cal, a, e, gpu = c["calibration"], c["assumed"], c["entry"], c["gpus"][gpu_name]
    h, p = width // 2, param_count(depth, width)
    per, threads, q = e["predict_rows_per_block"], e["predict_threads"], e["query_rows"]
    smem_scratch = max(2 * (2 * width + 33) * 4, per * (width + 1) * 4)
    staged = 4 * p + smem_scratch <= gpu["smem_per_block"]
    rounds = math.ceil(per * h / threads)
    scale = chain_cycles(h, c) / chain_cycles(41, c)
    couple_round = cal["predict_couple_cycles_h41"] / 3.0 * scale
    body = (2 * depth * rounds * couple_round
            + cal["predict_scores_cycles"] * chain_cycles(width, c) / chain_cycles(82, c) + cal["predict_argmax_cycles"])
    block = cal["predict_load_cycles"] + body * (1.0 if staged else cal["unstaged_factor"])
    blocks = math.ceil(q / per)
    smem = per * (width + 1) * 4 + (4 * p if staged else 0)
    waves = math.ceil(blocks / (gpu["sms"] * _per_sm(threads, smem, gpu, e)))
    work = q * (2 * depth * h * h + 20 * h) / (cal["terms_per_cycle_per_sm"] * gpu["sms"])
    return max(waves * block, work)


def batches(batch_size, n):
    """The rows of each step of an epoch (docs/spec.md §5: the last one short)."""
    b = min(batch_size, n)
    return [min(b, n - first) for first in range(0, n, b)]


def estimate(config, gpu_name="a100", c=CONSTANTS):
    """{'ms': estimated ms a call, 'steps', parts in ms} for a config dict of the engine's keys."""
    e, a, gpu = c["entry"], c["assumed"], c["gpus"][gpu_name]
    depth, width, epochs = int(config["depth"]), int(config["width"]), int(config["epochs"])
    epoch_rows = batches(int(config["batch_size"]), e["train_rows"])
    per_epoch = sum(step_cycles(depth, width, r, gpu_name, c)[0] for r in epoch_rows)
    train = epochs * per_epoch
    predict = predict_cycles(depth, width, gpu_name, c)
    call = a["call_nodes"] * c["calibration"]["step_rest_cycles"] / 2
    per_ms = gpu["clock_ghz"] * 1e6  # cycles a millisecond
    ms = (train + predict + call) / per_ms + a["call_host_us"] / 1e3
    return {"ms": ms, "steps": epochs * len(epoch_rows), "train_ms": train / per_ms, "predict_ms": predict / per_ms,
            "fixed_ms": call / per_ms + a["call_host_us"] / 1e3, "gpu": gpu_name}


def rev88_check(c=CONSTANTS):
    """The model at rev88 on the H200 beside cuda-fused's measured plain task (bench/results/INDEX.md)."""
    rev88 = {"depth": 2, "width": 82, "epochs": 2, "batch_size": 128}
    return estimate(rev88, "h200", c)["ms"], c["calibration"]["rev88_plain_ms_measured"]
