#!/usr/bin/python3
"""What Python adds to Task.run() beyond the engine's own time.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/compare/python_overhead.py [--backend cpu] [--runs 300]
(or with revgraph installed by pip; needs numpy).

For each call of task.run() it takes the wall time around the call (time.perf_counter_ns) and
subtracts the engine's own time for the run (Result.run_seconds: the C++ wall time of
PreparedTask::run, or the device time on a GPU) and for collecting the results
(PreparedTask::outputs(): the copy back and docs/spec.md §7's hashes, which `revgraph run` pays too).
What is left is the binding: the call, GIL release and reacquire, the task's lock, the Result
object and its numpy views. Freeing the previous Result (the engine's buffers it owns) is timed
apart. run(metadata=False) skips the hashes (outputs() is then only the copy back of the state).
Medians over the runs, in microseconds, for a tiny task and for rev88's shape (5,000 train /
5,000 query).
"""
import argparse
import statistics
import sys
import time

import numpy as np

from arguments import OneLineParser, at_least


def task_inputs(train, test, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((train, 1, 9, 9), dtype=np.float32), rng.integers(0, 10, train, dtype=np.int64),
            rng.random((test, 1, 9, 9), dtype=np.float32))


def measure(task, runs, metadata):
    wall, engine, outputs, freeing = [], [], [], []
    previous = task.run(metadata=metadata)  # warm: first-touch page faults, caches
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        result = task.run(metadata=metadata)  # `previous` still holds the last one: not freed here
        t1 = time.perf_counter_ns()
        previous = result  # frees the last Result and its buffers, timed on its own
        t2 = time.perf_counter_ns()
        wall.append((t1 - t0) / 1e3)
        freeing.append((t2 - t1) / 1e3)
        engine.append(result.run_seconds * 1e6)
        outputs.append(result._out.outputs_seconds * 1e6)
    binding = [w - e - o for w, e, o in zip(wall, engine, outputs)]
    beyond_run = [w - e + f for w, e, f in zip(wall, engine, freeing)]
    return {"engine run": statistics.median(engine), "engine outputs()": statistics.median(outputs),
            "python binding": statistics.median(binding), "binding p90": sorted(binding)[int(0.9 * len(binding))],
            "freeing a Result": statistics.median(freeing), "all beyond run": statistics.median(beyond_run)}


def main():
    p = OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                      name="python_overhead")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--runs", type=at_least(1), default=300)
    args = p.parse_args()
    try:  # after the arguments, so that --help works without the module
        import revgraph
    except ImportError as e:
        p.error(f"cannot import revgraph ({e}): set PYTHONPATH=build/python (the build's module), "
                "or pip install it")
    try:  # the engine's own check of the name, one line (not a traceback from the first Task)
        revgraph.Task(*task_inputs(1, 1), backend=args.backend, epochs=1)
    except (ValueError, RuntimeError) as e:
        p.error(f"--backend {args.backend}: {e}")
    print(f"revgraph {revgraph.__version__} ({revgraph.backends()['git_commit']}), python {sys.version.split()[0]}, "
          f"backend {args.backend}, {args.runs} runs; medians in microseconds")
    shapes = {"tiny (128 train / 16 query, 1 epoch)": (128, 16, 1, args.runs),
              "rev88 shape (5,000 / 5,000, 2 epochs)": (5000, 5000, 2, max(20, args.runs // 10))}
    for name, (train, test, epochs, runs) in shapes.items():
        task = revgraph.Task(*task_inputs(train, test), backend=args.backend, epochs=epochs)
        for metadata in (True, False):
            m = measure(task, runs, metadata)
            print(f"{name} on {task.backend}, run(metadata={metadata}): " +
                  ", ".join(f"{k} {v:.1f}" for k, v in m.items()))


if __name__ == "__main__":
    main()
