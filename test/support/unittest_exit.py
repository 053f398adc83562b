"""How a unittest file ends under meson test, which reads only the exit status: 1 if a test failed
or none ran (a -k pattern or a test name that, after a rename, matches nothing would otherwise
pass having checked nothing), 77 (meson's SKIP) with the reasons if any test was skipped (a check
that did not run is never reported as passed), else 0.

Each test file puts this folder on sys.path and ends with `unittest_exit.main()`."""
import sys
import unittest


def main(argv=None, verbosity=2, extra_skips=()):
    """unittest.main over the calling module; extra_skips: reasons for checks the file skipped by
    itself, outside unittest's skipTest."""
    result = unittest.main(argv=argv, verbosity=verbosity, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun == 0 and not result.skipped:  # a class skipped whole (setUpClass) runs none
        print("FAIL: no test ran (a test name or -k pattern matches none)")
        sys.exit(1)
    reasons = sorted({why for _, why in result.skipped} | set(extra_skips))
    if reasons:
        print("SKIP:", "; ".join(reasons))
        sys.exit(77)
    sys.exit(0)
