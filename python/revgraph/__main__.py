"""python3 -m revgraph learn|score: the MNIST-medium harness's commands (see _harness.py)."""
import sys

from ._harness import main

sys.exit(main(sys.argv[1:]))
