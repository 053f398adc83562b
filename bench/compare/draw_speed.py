"""Whole-process draw speed, two revgraph binaries side by side (bench/NOTES.md, "CPU measurements").

Times, as a user runs them, `revgraph data mnist` (one draw) and the 11-draw `revgraph qualify`,
sequential and --together, each RUNS times with the two binaries alternating (so that load on a
shared machine falls on both alike), and prints the medians of wall time and of CPU time
(user + system, of the process and its threads), and the ratio B / A.
The IDX folder holds train-images-idx3-ubyte and train-labels-idx1-ubyte (or .gz): the real
MNIST files (tools/fetch-mnist DIR), else $REVGRAPH_MNIST_DIR.
usage: /usr/bin/python3 bench/compare/draw_speed.py A B [--idx-dir DIR] [--runs 5]"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from arguments import at_least


def timed(argv):
    """(wall seconds, cpu seconds) of one run; exits with its stderr when it fails."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    err = p.stderr.read().decode()
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 3):  # qualify's 3 (below the band) is a result, not a failure
        sys.exit(" ".join(argv) + ": exit " + str(p.returncode) + "\n" + err)
    return wall, usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", help="the baseline revgraph binary")
    ap.add_argument("b", help="the revgraph binary measured against it")
    ap.add_argument("--idx-dir", default=os.environ.get("REVGRAPH_MNIST_DIR"))
    ap.add_argument("--runs", type=at_least(1), default=5)
    args = ap.parse_args()
    if not args.idx_dir:
        ap.error("--idx-dir (or REVGRAPH_MNIST_DIR) is needed")
    for exe in (args.a, args.b):  # before any run: a wrong path is found at once, in one line
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            ap.error(f"{exe}: not an executable file")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("data mnist, one draw", lambda exe: [exe, "data", "mnist", "--idx-dir", args.idx_dir, "--seed",
                                                  "2026091400", "--output", os.path.join(tmp, "X.npz"),
                                                  "--test-labels-output", os.path.join(tmp, "L.npy"), "--quiet"]),
            ("qualify, 11 draws", lambda exe: [exe, "qualify", "--idx-dir", args.idx_dir, "--quiet", "--output",
                                               os.path.join(tmp, "Q.json")]),
            ("qualify --together", lambda exe: [exe, "qualify", "--idx-dir", args.idx_dir, "--quiet", "--together",
                                                "--output", os.path.join(tmp, "Q.json")]),
        ]
        print("%-22s %10s %10s %7s   %10s %10s %7s" % ("median of %d" % args.runs, "A wall s", "B wall s", "B/A",
                                                       "A cpu s", "B cpu s", "B/A"))
        for name, argv in cases:
            runs = {"a": [], "b": []}
            timed(argv(args.a))  # one untimed run each: the files in the page cache
            timed(argv(args.b))
            for _ in range(args.runs):
                for key in ("a", "b"):
                    runs[key].append(timed(argv(getattr(args, key))))
            wa, wb = (statistics.median(w for w, _ in runs[k]) for k in ("a", "b"))
            ca, cb = (statistics.median(c for _, c in runs[k]) for k in ("a", "b"))
            print("%-22s %10.3f %10.3f %7.2f   %10.3f %10.3f %7.2f" % (name, wa, wb, wb / wa, ca, cb, cb / ca))
    print("A = " + args.a + "\nB = " + args.b + "\nidx-dir = " + args.idx_dir)
    # What the numbers were measured on: on a shared machine wall times mean little without the load.
    print("cpu: %s, %d logical cpus; load average (1 min) %.2f before, %.2f after"
          % (cpu_model(), os.cpu_count() or 0, load_before[0], os.getloadavg()[0]))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
