#!/usr/bin/python3
"""tools/python_with.py: a script whose interpreter has what it needs runs as is; one that needs a
module no python3 here has stops with exactly one line naming it and what to install; one run
under an interpreter without numpy (a bare venv) re-runs itself under one that has it.

usage: test_python_with.py SOURCE_ROOT"""
import os
import subprocess
import sys
import tempfile
import unittest
import venv

TOOLS = os.path.join(sys.argv[1], "tools")


def script(body):
    f = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    f.write("import sys\nsys.path.insert(0, %r)\nfrom python_with import require\n%s\n" % (TOOLS, body))
    f.close()
    return f.name


class PythonWith(unittest.TestCase):
    def test_present_modules_run_here(self):
        p = subprocess.run([sys.executable, script('require("json")\nprint(sys.executable)')],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), sys.executable)

    def test_missing_everywhere_is_one_line(self):
        p = subprocess.run([sys.executable, script('require("revgraph_no_such_module")')],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, "")
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("revgraph_no_such_module", p.stderr)
        self.assertIn("apt-get install", p.stderr)

    def test_reruns_under_a_python_that_has_numpy(self):
        try:
            import numpy  # noqa: F401
        except ImportError:
            self.skipTest("this python3 has no numpy to be found")
        with tempfile.TemporaryDirectory() as d:
            venv.create(d, with_pip=False)  # a python3 without numpy
            bare = os.path.join(d, "bin", "python3")
            self.assertNotEqual(subprocess.run([bare, "-c", "import numpy"], capture_output=True).returncode, 0,
                                "the bare venv should lack numpy")
            env = dict(os.environ, REVGRAPH_PYTHON=sys.executable)
            env.pop("REVGRAPH_PYTHON_REEXEC", None)
            p = subprocess.run([bare, script('require("numpy")\nimport numpy\nprint(sys.executable)')],
                               capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(os.path.realpath(p.stdout.strip()), os.path.realpath(sys.executable))


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    import unittest_exit  # noqa: E402
    unittest_exit.main(argv=[sys.argv[0]], verbosity=1)
