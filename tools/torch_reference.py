#!/usr/bin/python3
"""The same-spec PyTorch learner's command: CPU reference, GPU baseline and maker of the torch
vectors. The learner is the package tools/torchref/; the options are in torchref/cli.py's header
(or --help)."""
import sys

from python_with import require

require("numpy", "torch")

from torchref.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
