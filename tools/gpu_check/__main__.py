"""`python3 -m gpu_check ...`: tools/gpu-check's work (cli.main)."""
import sys

from gpu_check.cli import main

sys.exit(main())
