"""For revgraph's Python tools: make sure the interpreter running a script has the modules it
needs (numpy, torch). The python3 first on PATH may be a shim without numpy while Debian's
/usr/bin/python3 has it, or the other way round on a machine whose torch lives in a venv; so a
script missing a module re-runs itself once under the first of $REVGRAPH_PYTHON, python3 on PATH
and /usr/bin/python3 that has them all, and otherwise stops with one line saying what to install.

    from python_with import require   # a script in tools/: its folder is on sys.path already
    require("numpy", "torch")

tools/ is the one import root of the tools' Python (python_with, torchref, gpu_check): scripts in
tools/ have it as Python's first sys.path entry, scripts elsewhere (bench/) insert it once at their
top, and meson's tests get it as PYTHONPATH (test/meson.build).
"""
import importlib.util
import os
import shutil
import subprocess
import sys

_DEBIAN = {"numpy": "python3-numpy", "torch": "python3-torch"}
_TRIED = "REVGRAPH_PYTHON_REEXEC"


def _has(python, modules):
    code = "import importlib.util, sys; sys.exit(any(importlib.util.find_spec(m) is None for m in sys.argv[1:]))"
    try:
        return subprocess.run([python, "-c", code, *modules], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def require(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    script = os.path.basename(sys.argv[0]) or "python"
    if os.environ.get(_TRIED) != "1":
        # By path, not by what it links to: a venv's python3 links to the system one but has
        # other modules.
        seen = {os.path.abspath(sys.executable or "")}
        for candidate in (os.environ.get("REVGRAPH_PYTHON"), shutil.which("python3"), "/usr/bin/python3"):
            if not candidate or not os.path.exists(candidate) or os.path.abspath(candidate) in seen:
                continue
            seen.add(os.path.abspath(candidate))
            if _has(candidate, modules):
                os.environ[_TRIED] = "1"  # once: never a loop between interpreters
                os.execv(candidate, [candidate, os.path.abspath(sys.argv[0])] + sys.argv[1:])
    packages = " ".join(_DEBIAN.get(m, m) for m in missing)
    flag = " --with-torch" if "torch" in missing else ""
    sys.exit(f"{script}: needs {', '.join(missing)} and no python3 here has them all: apt-get install {packages} "
             f"(tools/install-deps{flag}), or set REVGRAPH_PYTHON to a python3 that has it")
