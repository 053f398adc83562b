#!/usr/bin/python3
"""meson test's entry to the Python package's tests: pytest over this folder, with the build's
package on PYTHONPATH. Exits 77 (meson's SKIP) with the reason when pytest, numpy or the built
extension cannot be imported, so a machine without them reports a skip, not a pass."""
import sys

for module, why in (("pytest", "pytest is not installed (Debian: python3-pytest)"),
                    ("numpy", "numpy is not installed (Debian: python3-numpy)"),
                    ("revgraph._core", "the extension revgraph._core does not import")):
    try:
        __import__(module)
    except ImportError as e:
        print(f"SKIP: {why}: {e}")
        sys.exit(77)

import pytest  # noqa: E402

folder = sys.argv[1] if len(sys.argv) > 1 else "."
# -p no:cacheprovider: the tests never write into the source tree.
sys.exit(pytest.main([folder, "-q", "-p", "no:cacheprovider", *sys.argv[2:]]))
