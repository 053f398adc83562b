#!/usr/bin/python3
"""End-to-end tests of the `revgraph` command.

usage: test_cli.py REVGRAPH [CLI_API_RUN] [unittest options]
(or REVGRAPH / CLI_API_RUN in the environment). Exit 77 (meson's "skipped") without numpy.

What is checked:
- bad input of every kind (archives numpy writes, truncated and corrupt files, config files,
  --set values, usage mistakes): exit 1 (bad data/config) or 2 (usage), exactly one stderr line
  `revgraph: error: ...` naming the problem, nothing on stdout, and no output file created or,
  where one existed from an earlier good run, left byte-identical;
- good runs: docs/spec.md §7 metadata whose hashes numpy recomputes from the files, the state archive,
  byte-identical repeats, progress lines, --config/--set order, the published seed-11 hashes,
  the embedded default, and agreement with the engine API (cli_api_run);
- `data mnist` on fake IDX files against a numpy transcription of docs/spec.md §9; `qualify` (which must
  say the fake files are not the official MNIST ones, with hashlib's md5/sha256); `validate`;
- the command line: --help for every command, the nearest real option for a mistyped one, the
  valid config keys for an unknown one, 2.0 for an integer key, --device/--pdl refused on CPU;
- honest outputs: --repeat's summary and run_seconds, provenance keys, sibling file names, and
  --scores against numpy's float64 forward of the saved state.
"""
import sys
import unittest

import cli_support  # the command's path from this command line; exit 77 without numpy
from cli_data import DataMnist, Validate  # noqa: F401  (unittest finds the cases by name)
from cli_misc import CommandLine, Misc  # noqa: F401
from cli_run_bad import RunBadInput  # noqa: F401
from cli_run_good import HonestOutputs, RunGood  # noqa: F401

if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + cli_support.unittest_args(), verbosity=1)
