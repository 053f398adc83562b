"""The two ways a race command refuses: bad input or a failed step (exit 1) and a usage mistake
(exit 2), each reported as one line `race: error: ...` by the command line, never a traceback."""


class RaceError(Exception):
    """Bad input or a step that cannot go on: one line, exit 1."""
    status = 1


class UsageError(RaceError):
    """A mistake in the command line: one line, exit 2."""
    status = 2


class Terminated(BaseException):
    """SIGTERM, raised where the process is, as SIGINT raises KeyboardInterrupt: so that what is half
    written (a temporary beside an output) is removed on the way out. A BaseException, so that the
    `except Exception` around an entry's code does not take it for the entry's failure."""
