#!/usr/bin/env python3
"""Which GPU code a built binary carries, read from its embedded fat binaries, against what the
build asked for (meson's gpu_arch): machine code (ELF) for every listed architecture and PTX for
the highest, so that one build runs on each listed GPU and newer ones compile the PTX at load time.
Needs no GPU and no cuobjdump (the CI machines' CUDA toolkit has none).

  check_fatbin.py BINARY --sm 80,90 --ptx 90

Fat binary layout (as nvcc writes it; little-endian): a 16-byte header (magic 0xBA55ED50, u16
version 1, u16 header size 16, u64 size of the entries), then entries, each a header (u16 kind:
1 PTX, 2 ELF; u16 version; u32 header size; u64 payload size; ...; u32 architecture at byte 28)
followed by its payload.
"""
import argparse
import struct
import sys

MAGIC = struct.pack("<I", 0xBA55ED50)
KINDS = {1: "ptx", 2: "elf"}


def entries(data):
    """(kind, arch) of every entry of every fat binary in data."""
    found = []
    pos = 0
    while (start := data.find(MAGIC, pos)) >= 0:
        version, header_size, size = struct.unpack_from("<HHQ", data, start + 4)
        pos = start + 4
        if version != 1 or header_size != 16 or start + 16 + size > len(data):
            continue  # the magic's bytes by chance, not a header
        p, end = start + 16, start + 16 + size
        while p + 32 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, p)
            arch = struct.unpack_from("<I", data, p + 28)[0]
            if entry_header < 32 or kind not in KINDS:
                break
            found.append((KINDS[kind], arch))
            p += entry_header + payload
        pos = end
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--sm", required=True, help="comma-separated architectures that need machine code")
    ap.add_argument("--ptx", required=True, type=int, help="the architecture whose PTX must be embedded")
    a = ap.parse_args()
    with open(a.binary, "rb") as f:
        found = set(entries(f.read()))
    if not found:
        print(f"FAIL: {a.binary}: no fat binary found")
        return 1
    print(f"{a.binary}: " + ", ".join(f"{k} sm_{v}" for k, v in sorted(found)))
    missing = [f"elf sm_{s}" for s in sorted({int(s) for s in a.sm.split(",")}) if ("elf", s) not in found]
    if ("ptx", a.ptx) not in found:
        missing.append(f"ptx compute_{a.ptx}")
    if missing:
        print("FAIL: missing " + ", ".join(missing))
        return 1
    print("ok: machine code for " + a.sm + ", PTX for " + str(a.ptx))
    return 0


if __name__ == "__main__":
    sys.exit(main())
