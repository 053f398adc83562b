#!/usr/bin/python3
"""Writes the .npy/.npz fixtures of test/io/fixtures with numpy (Debian numpy 1.24).

Usage: /usr/bin/python3 test/io/make_fixtures.py test/io/fixtures

The values are simple formulas that test_npy.cpp / test_npz.cpp recompute, so the C++ tests
check contents, not just that parsing succeeds. The files are committed so the tests need
no Python; rerun this only when adding fixtures.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from python_with import require  # noqa: E402

require("numpy")

import numpy as np


def ramp(shape, dtype):
    """arange over the whole array, cast: the value at flat index i is i (mod the type)."""
    n = int(np.prod(shape, dtype=np.int64))
    return np.arange(n, dtype=np.int64).astype(dtype).reshape(shape)


def main(out):
    os.makedirs(out, exist_ok=True)

    def save(name, arr, **kw):
        np.save(os.path.join(out, name), arr, **kw)

    # One file per supported dtype; values ramp(shape) except where noted.
    save("f4_2x3.npy", ramp((2, 3), np.float32) * np.float32(0.25) - np.float32(1))
    save("f8_scalar.npy", np.array(-2.5, dtype=np.float64))          # 0-d
    save("i8_5.npy", ramp((5,), np.int64) - 2)                      # negatives
    save("i4_2x2x2.npy", ramp((2, 2, 2), np.int32) * -1000)
    save("u1_3x4.npy", ramp((3, 4), np.uint8) * 20)
    save("i1_4.npy", ramp((4,), np.int8) - 2)
    save("i2_3.npy", ramp((3,), np.int16) * 300)
    save("u2_3.npy", ramp((3,), np.uint16) * 300)
    save("u4_2.npy", ramp((2,), np.uint32) + 4000000000)
    save("u8_2.npy", ramp((2,), np.uint64) + np.uint64(2**63))
    save("b1_3.npy", np.array([True, False, True]))
    save("f2_2.npy", np.array([1.5, -2.0], dtype=np.float16))
    save("c8_2.npy", np.array([1 + 2j, -3j], dtype=np.complex64))
    save("f4_empty_0.npy", np.zeros((0,), dtype=np.float32))
    save("f4_empty_2x0x3.npy", np.zeros((2, 0, 3), dtype=np.float32))
    save("i8_long_axis.npy", ramp((1234567, 0), np.int64))  # first axis with many digits

    # Other format versions (numpy only writes these when asked or when needed).
    for version in ((2, 0), (3, 0)):
        with open(os.path.join(out, "f4_2x3_v%d.npy" % version[0]), "wb") as f:
            np.lib.format.write_array(f, ramp((2, 3), np.float32), version=version)

    # Things the reader must refuse.
    save("fortran_2x3.npy", np.asfortranarray(ramp((2, 3), np.float32)))
    save("bigendian_f4.npy", ramp((3,), ">f4"))
    save("object.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    save("structured.npy", np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]))
    save("unicode.npy", np.array(["ab", "c"]))

    # Archives. "big" is 10,000 int64 values with a short period, so deflate compresses it
    # to a small fraction of its 80,000 bytes.
    big = ramp((10000,), np.int64) % 7
    x = ramp((3, 4), np.float32) * np.float32(0.5)
    labels = ramp((6,), np.int64) % 10
    np.savez(os.path.join(out, "stored.npz"), x=x, labels=labels, scalar=np.array(7, dtype=np.int32))
    np.savez_compressed(os.path.join(out, "compressed.npz"), big=big, x=x)
    np.savez(os.path.join(out, "positional.npz"), x, labels)  # arr_0, arr_1
    np.savez(os.path.join(out, "empty.npz"))
    # An archive whose member is not an array.
    import zipfile
    with zipfile.ZipFile(os.path.join(out, "not_npy_member.npz"), "w") as z:
        z.writestr("readme.txt", "hello")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixtures.py OUTPUT_DIR")
    main(sys.argv[1])
