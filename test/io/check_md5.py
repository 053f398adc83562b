#!/usr/bin/python3
"""md5_sum (engine/io/md5 and sha256, streamed) against Python's hashlib on random inputs whose
lengths straddle every padding boundary, and on one of several megabytes.

usage: check_md5.py MD5_SUM"""
import hashlib
import os
import random
import subprocess
import sys
import tempfile

tool = sys.argv[1]
rng = random.Random(20261203)
lengths = list(range(0, 130)) + [999, 1000, 1001, 4095, 4096, 65537, 3 * 1024 * 1024 + 17]
with tempfile.TemporaryDirectory() as d:
    paths, expect = [], []
    for n in lengths:
        data = bytes(rng.getrandbits(8) for _ in range(n)) if n < 70000 else os.urandom(n)
        p = os.path.join(d, "in%d" % n)
        with open(p, "wb") as f:
            f.write(data)
        paths.append(p)
        expect.append("%s %s" % (hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()))
    got = subprocess.run([tool] + paths, capture_output=True, text=True, check=True).stdout.splitlines()
bad = [(n, g, e) for n, g, e in zip(lengths, got, expect) if g != e]
if len(got) != len(expect) or bad:
    for n, g, e in bad[:5]:
        print("length %d: got %s, hashlib %s" % (n, g, e))
    sys.exit("check_md5: %d of %d inputs differ from hashlib" % (len(bad), len(lengths)))
print("check_md5: %d inputs, md5 and sha256 equal hashlib's" % len(lengths))
