#!/usr/bin/python3
"""gpu_validation's --config/--set (tools/gpu-check's call 5 replays each frontier entry's shape) on
any machine: a bad config or backend name is one "gpu_validation: error: ..." line and exit 2 before anything
touches the GPU; a good one (a file, then --set over it: the engine's reader, config_from) gets past
the config to the next thing it reads, a task archive that is not there (exit 1, the archive named).

  check_gpu_validation_args.py BUILD/test/cuda/gpu_validation
"""
import json
import os
import subprocess
import sys
import tempfile


def main(binary):
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "entry.json")
        with open(config, "w") as f:
            json.dump({"depth": 4, "width": 128, "alpha": 1.0, "epochs": 32, "learning_rate": 0.05}, f)
        wrong = os.path.join(tmp, "wrong.json")
        with open(wrong, "w") as f:
            json.dump({"width": 127}, f)
        absent = os.path.join(tmp, "absent.npz")
        cases = [(["--set", "depth=0"], 2, "--set depth=0: config: depth"),
                 (["--set", "depth"], 2, "--set needs key=value"),
                 (["--set", "widht=128"], 2, "widht"),
                 (["--config", wrong], 2, "wrong.json: config: width"),
                 (["--config", os.path.join(tmp, "none.json")], 2, "none.json"),
                 (["--config", wrong, "--set", "width=129"], 2, "--set width=129"),  # the last one wins, and is named
                 (["--config"], 2, "--config needs a value"),
                 (["--cluster-blocks", "17"], 2, "--cluster-blocks must be in 0..16, got 17"),
                 (["--cluster-blocks"], 2, "--cluster-blocks needs a value"),
                 (["--backend", "bogus"], 2, "--backend must be a GPU backend, cuda or cuda-fused, got 'bogus'"),
                 (["--backend", "cpu"], 2, "got 'cpu'"),
                 (["--cluster-blocks", "16", "--input", absent], 1, "absent.npz"),
                 # accepted: a later --set repairs the file's value; then the missing archive is the error
                 (["--config", wrong, "--set", "width=128", "--input", absent], 1, "absent.npz"),
                 (["--config", config, "--input", absent], 1, "absent.npz")]
        for args, code, word in cases:
            p = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
            lines = p.stderr.strip().splitlines()
            if p.returncode != code or len(lines) != 1 or not lines[0].startswith("gpu_validation: error: ") \
                    or word not in lines[0] or p.stdout:
                bad.append(f"{args}: expected exit {code} and one 'gpu_validation: error: ...{word}...' line, got "
                           f"{p.returncode}: {p.stderr!r} {p.stdout[:200]!r}")
    # --help: the usage on stdout, exit 0, on any machine.
    p = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    if p.returncode != 0 or not p.stdout.startswith("usage: gpu_validation ") or p.stderr:
        bad.append(f"--help: expected the usage on stdout and exit 0, got {p.returncode}: {p.stderr!r}")
    for b in bad:
        print(f"check_gpu_validation_args: FAIL: {b}", file=sys.stderr)
    if not bad:
        print(f"check_gpu_validation_args: ok: {len(cases)} command lines")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
