"""The judge's sandbox, emulated: while the entry is imported and called, no path containing one of
the forbidden words may be opened, listed, run or otherwise touched by this process.

Why an audit hook (sys.addaudithook, PEP 578): the judge refuses the entry's process such opens, so
an entry that reads the digits from disk (or a cache of labels) must fail here as it would there,
not pass locally. The hook sees Python's own file events (open, io.open_code for imports, os.*,
shutil.*, subprocess, ctypes.dlopen) and raises PermissionError for a forbidden path. It does not see
what native code opens without Python (a C extension's fopen), which the judge's sandbox would;
and an entry that means to can get around a hook in its own process. It is a check for honest
mistakes, not a security boundary. The words are matched case-insensitively (stricter than the judge).

The hook is installed once (a process cannot remove one) before the entry is read into a module,
and armed only while the entry runs: the harness loads its draws before, and writes its report after.
The entry's own file is exempt (`exempt`): on the judge it lies at a path of the judge's, so a
traceback, a warning or `@triton.jit` reading it back there touches no forbidden word, and a copy
kept here under `~/mnist-race/` must not fail for its folder's name.
"""
import os
import sys

WORDS = ("mnist", "fashion", "t10k", "idx3-ubyte", "idx1-ubyte")
# Events whose arguments name paths (or commands) that the process would touch.
EVENTS = frozenset((
    "open", "os.listdir", "os.scandir", "os.chdir", "os.mkdir", "os.remove", "os.rmdir", "os.rename", "os.link",
    "os.symlink", "os.truncate", "os.chmod", "os.chown", "os.utime", "os.listxattr", "os.getxattr", "os.exec",
    "os.posix_spawn", "os.spawn", "os.system", "os.startfile", "subprocess.Popen", "shutil.copyfile",
    "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move", "shutil.rmtree", "shutil.make_archive",
    "shutil.unpack_archive", "glob.glob", "glob.glob/2", "ctypes.dlopen", "pathlib.Path.glob", "pathlib.Path.rglob",
    "tempfile.mkstemp", "tempfile.mkdtemp", "sqlite3.connect",
))


class Sandbox:
    """armed: refuse forbidden paths now; refused: every (event, path) refused, for the report."""

    def __init__(self):
        self.armed = False
        self.refused = []
        self.installed = False
        self.exempt = set()  # absolute paths that may be opened whatever their words (the entry)

    def install(self):
        if not self.installed:
            sys.addaudithook(self._hook)
            self.installed = True

    def _strings(self, args, depth=0):
        for a in args:
            if isinstance(a, (str, bytes)):
                yield a if isinstance(a, str) else a.decode("utf-8", "replace")
            elif isinstance(a, os.PathLike):
                p = os.fspath(a)
                yield p if isinstance(p, str) else p.decode("utf-8", "replace")
            elif isinstance(a, (list, tuple)) and depth == 0:
                yield from self._strings(a, 1)

    def _hook(self, event, args):
        if not self.armed or event not in EVENTS:
            return
        for text in self._strings(args):
            if event == "open" and os.path.abspath(text) in self.exempt:
                continue
            lower = text.lower()
            for word in WORDS:
                if word in lower:
                    self.refused.append({"event": event, "path": text[:300], "word": word})
                    raise PermissionError(f"race sandbox: {event} of {text[:200]!r} refused (the path contains {word!r})")


SANDBOX = Sandbox()
