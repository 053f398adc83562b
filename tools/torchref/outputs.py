"""Where the torch reference's tools write (tools/torch_reference.py, tools/make_synthetic.py), with
numpy alone: every output is checked before any work (a file's path, not an input, not another
output, its folder there and writable), and all of them are written only at the end, each one whole
at exactly the name given (numpy writes to an open file, so no .npy or .npz is appended): first to a
temporary file beside it, then renamed over it (os.replace) once every output is complete. A failure
while writing removes the temporaries and leaves every named file as it was; each rename is atomic,
but not the set (a rename failing after another succeeded leaves that one new: said in one line).

torchref is the independent reference and must not depend on the revgraph build or import the
revgraph package, so the same-file check is written here again rather than shared with it.
"""
import os
import stat
import tempfile

from .spec import Fail


def same_file(a, b):
    """One file under two names. Where both exist: the same (st_dev, st_ino), as os.path.samefile
    tells (hard links, symbolic links, ./ and ../ spellings); where one does not exist yet (an
    output not written), the same path once made absolute, normalised and its links resolved."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def check_outputs(outputs, inputs):
    """Before any work. outputs, inputs: (option, path) pairs, path None where the option is not given.
    Raises Fail when an output is not a file's path, is an input or another output (the later write
    would replace it), is something other than a regular file, or its folder is missing or not writable."""
    outputs = [(flag, path) for flag, path in outputs if path is not None]
    inputs = [(flag, path) for flag, path in inputs if path is not None]
    for k, (flag, path) in enumerate(outputs):
        if not path or path.endswith(("/", os.sep)) or os.path.isdir(path):
            raise Fail(f"{flag} {path!r}: is a folder; an output is a file's path")
        for in_flag, in_path in inputs:
            if same_file(path, in_path):
                raise Fail(f"{flag} {path}: is the {in_flag} file; no output may replace an input")
        for other_flag, other in outputs[:k]:
            if same_file(path, other):
                raise Fail(f"{flag} {path}: is also the {other_flag} file; one output would replace the other")
        if os.path.exists(path) and not os.path.isfile(path):
            raise Fail(f"{flag} {path}: exists and is not a regular file")
        folder = os.path.dirname(os.path.realpath(path))
        if not os.path.isdir(folder):
            raise Fail(f"{flag} {path}: folder {folder} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise Fail(f"{flag} {path}: folder {folder} is not writable")


def _mode(target):
    """The replaced file's permissions, or a new file's (0666 less the umask), not mkstemp's 0600."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


class Outputs:
    """Outputs written together at the end:

        with Outputs() as out:
            out.add("--predictions", path, lambda f: np.save(f, predictions))
            ...
        # every output in place here; on an exception inside the block, none touched

    add() writes one to a temporary file in its target's folder (the same file system, so the rename
    is atomic); leaving the block without an exception renames them all into place."""

    def __init__(self):
        self.staged = []  # (temporary, target)

    def add(self, flag, path, write):
        # Through a symbolic link to the file it names, as open() would, rather than over the link.
        target = os.path.realpath(path)
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=f".{os.path.basename(target)}.",
                                       suffix=".part")
            self.staged.append((tmp, target))
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, _mode(target))
        except OSError as e:
            raise Fail(f"{flag} {path}: cannot write: {e.strerror or e}") from None

    def discard(self):
        for tmp, _ in self.staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self.staged = []

    def commit(self):
        try:
            for tmp, target in self.staged:
                os.replace(tmp, target)
        except OSError as e:
            self.discard()
            raise Fail(f"{target}: cannot write: {e.strerror or e}") from None
        self.staged = []

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.commit()
        else:
            self.discard()
        return False
