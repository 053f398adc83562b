"""The compare scripts' argparse types, written once (each script's folder is on sys.path when run)."""
import argparse


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
