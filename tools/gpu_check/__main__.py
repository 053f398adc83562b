"""`python3 -m gpu_check ...`: tools/gpu-check's work (cli.main)."""
import os
import sys

from gpu_check.cli import main

try:
    try:
        status = main()
    finally:  # argparse's --help exits through here: its text is flushed while the error can be caught
        sys.stdout.flush()
except BrokenPipeError:  # the reader went away (`--plan | head`): no traceback; 141 as for SIGPIPE
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    status = 141
sys.exit(status)
