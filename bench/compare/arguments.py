"""The compare scripts' argparse types and checks, written once (each script's folder is on sys.path when run)."""
import argparse
import os
import sys


def at_least(low):
    """argparse type: an integer >= low, refused at once (not after rounds of work)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        return value
    return parse


class OneLineParser(argparse.ArgumentParser):
    """argparse whose mistakes are one line, `NAME: error: ... (see --help)`, and exit 2 (not the usage too)."""

    def __init__(self, *args, name, **kwargs):
        super().__init__(*args, **kwargs)
        self.name = name

    def error(self, message):
        print(f"{self.name}: error: {message} (see --help)", file=sys.stderr, flush=True)
        sys.exit(2)


def same_file(a, b):
    """One file: the same inode where both exist (so a hard or symbolic link to it counts), else the same
    path once links are resolved."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)
