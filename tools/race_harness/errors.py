"""The two ways a race command refuses: bad input or a failed step (exit 1) and a usage mistake
(exit 2), each reported as one line `race: error: ...` by the command line, never a traceback."""


class RaceError(Exception):
    """Bad input or a step that cannot go on: one line, exit 1."""
    status = 1


class UsageError(RaceError):
    """A mistake in the command line: one line, exit 2."""
    status = 2
