#!/usr/bin/python3
"""Runs write_samples (argv[1]) into a scratch directory and reads every file with numpy.

Exit 77 (meson's "skipped") when numpy is not installed.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy is not available: skipped")
    sys.exit(77)


def ramp(shape, dtype):
    n = int(np.prod(shape, dtype=np.int64))
    return np.arange(n).astype(dtype).reshape(shape)


def same(a, b, what):
    if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
        sys.exit("%s: got %r %r %r, expected %r %r %r" % (what, a.dtype, a.shape, a, b.dtype, b.shape, b))
    if not a.flags.c_contiguous:
        sys.exit("%s: not C-contiguous" % what)


def main(writer):
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([writer, d], check=True)
        npy = {
            "f4_2x3.npy": ramp((2, 3), np.float32),
            "f8_scalar.npy": np.array(-2.5),
            "i8_5.npy": ramp((5,), np.int64),
            "i4_2x2x2.npy": ramp((2, 2, 2), np.int32),
            "u1_3x4.npy": ramp((3, 4), np.uint8),
            "f4_empty.npy": np.zeros((2, 0, 3), np.float32),
        }
        for name, expected in npy.items():
            path = os.path.join(d, name)
            same(np.load(path), expected, name)
            # Our bytes are exactly what np.save writes for the same array.
            with open(path, "rb") as f:
                ours = f.read()
            theirs = os.path.join(d, "numpy_" + name)
            np.save(theirs, expected)
            with open(theirs, "rb") as f:
                if f.read() != ours:
                    sys.exit("%s: bytes differ from np.save" % name)

        expected = {
            "train_images": ramp((4, 1, 9, 9), np.float32),
            "train_labels": ramp((4,), np.int64),
            "big": np.arange(10000, dtype=np.int64) % 7,
            "scalar": np.array(3.5),
            "empty": np.zeros((0,), np.uint8),
        }
        for name in ("stored.npz", "deflate.npz", "stored_zip64.npz", "deflate_zip64.npz"):
            with np.load(os.path.join(d, name)) as z:
                if list(z.files) != list(expected):
                    sys.exit("%s: members %r" % (name, z.files))
                for key, value in expected.items():
                    same(z[key], value, name + ":" + key)
            # zipfile's own integrity check (CRCs) as well.
            import zipfile
            with zipfile.ZipFile(os.path.join(d, name)) as zf:
                bad = zf.testzip()
                if bad is not None:
                    sys.exit("%s: zipfile.testzip reports %s" % (name, bad))
                method = zf.infolist()[0].compress_type
                if method != (zipfile.ZIP_DEFLATED if name.startswith("deflate") else zipfile.ZIP_STORED):
                    sys.exit("%s: compression method %d" % (name, method))
        check_threaded(os.path.join(d, "threaded.npz"))
    print("numpy read every file revgraph wrote")


def check_threaded(path):
    """Members deflated on threads: each one's stored bytes are what Python's zlib makes of its .npy
    with zipfile's settings (level 6, raw 15-bit window, memLevel 8), and numpy reads the values."""
    import io
    import struct
    import zipfile
    import zlib
    i = np.arange(300000)
    expected = {"wave": ((i * 7919) % 1000 / 1000.0).astype(np.float32),
                "labels": np.arange(10000, dtype=np.int64) % 7,
                "steps": (i // 1000).astype(np.float32)}
    with np.load(path) as z:
        if list(z.files) != list(expected):
            sys.exit("threaded.npz: members %r" % z.files)
        for key, value in expected.items():
            same(z[key], value, "threaded.npz:" + key)
    with open(path, "rb") as f:
        raw = f.read()
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
            start = info.header_offset + 30 + name_len + extra_len
            ours = raw[start:start + info.compress_size]
            npy = io.BytesIO()
            np.save(npy, expected[info.filename[:-len(".npy")]])
            c = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
            if ours != c.compress(npy.getvalue()) + c.flush():
                sys.exit("threaded.npz: %s: deflated bytes differ from Python's zlib" % info.filename)
            if info.CRC != zlib.crc32(npy.getvalue()):
                sys.exit("threaded.npz: %s: CRC-32 differs" % info.filename)


if __name__ == "__main__":
    main(sys.argv[1])
