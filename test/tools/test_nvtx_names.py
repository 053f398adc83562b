#!/usr/bin/env python3
"""The NVTX ranges docs/gpu.md lists for Nsight users are the ones the code opens: every literal
range name in engine/, graphs/ and bench/harness/ is listed there, and every name the list gives
for the engine is opened somewhere. An Nsight filter written from the docs then matches.

  python3 test/tools/test_nvtx_names.py [SOURCE_ROOT]   (any python3)
"""
import os
import re
import sys
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = ("engine", "graphs", os.path.join("bench", "harness"))
# A range's name is a string literal in NVTX_RANGE(...) (either side of a `?:`) or in a range
# object opened by hand (NvtxRange r("…")), or the name a graph capture opens
# (graphs/basic_capture.hpp's capture_with(stream, "capture …", body)). The harness's ranges are
# made at run time (`task <backend> …`): the docs give their patterns.
RANGE_CALL = re.compile(r'(?:NVTX_RANGE|NvtxRange \w+)\(([^;]*)\);')
CAPTURE_CALL = re.compile(r'capture_with<\w+>\(\w+, "([^"]+)"')
LITERAL = re.compile(r'"([^"]*)"')


def code_names():
    names = set()
    for top in SOURCES:
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith((".cpp", ".hpp", ".cu", ".cuh")):
                    continue
                with open(os.path.join(folder, f), encoding="utf-8") as src:
                    text = src.read()
                for call in RANGE_CALL.findall(text):
                    names.update(n for n in LITERAL.findall(call) if n)
                names.update(CAPTURE_CALL.findall(text))
    return names


def doc_lists():
    """(harness names, engine names): the backticked names of docs/gpu.md's profiling paragraph."""
    with open(os.path.join(ROOT, "docs", "gpu.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("CUDA builds put NVTX ranges around")
    engine_at = text.index("The engine's, on the host", start)
    end = text.index("The streams are named", engine_at)
    ticked = lambda part: {" ".join(t.split()) for t in re.findall(r"`([^`]+)`", part)}
    return ticked(text[start:engine_at]), ticked(text[engine_at:end])


class NvtxNames(unittest.TestCase):
    def test_every_range_in_the_code_is_listed(self):
        harness, engine = doc_lists()
        missing = sorted(code_names() - harness - engine)
        self.assertEqual(missing, [], "ranges the code opens that docs/gpu.md does not list")

    def test_every_listed_engine_range_is_opened(self):
        _, engine = doc_lists()
        self.assertEqual(sorted(engine - code_names()), [], "ranges docs/gpu.md lists that no code opens")

    def test_the_lists_are_read(self):
        # The parse itself: a reworded paragraph must fail here, not pass with empty sets.
        harness, engine = doc_lists()
        self.assertIn("bench warm-up", harness)
        self.assertIn("prepare", engine)
        self.assertIn("gemm (cuBLASLt)", engine)
        self.assertGreater(len(code_names()), 20)


if __name__ == "__main__":
    unittest.main()
