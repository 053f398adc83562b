"""The built revgraph Python package (BUILD/python), found as tools/frontier finds it.

Why: the band's numbers and verdict are the engine's one rule (engine/qualify/,
revgraph.band_rule and revgraph.band_verdict), not a second copy here; and `tools/race engine` gets
its predictions from revgraph.fit_predict. BUILD is --build, else $REVGRAPH_BUILD, else the
checkout's build/. BUILD/python goes first on sys.path: tools/ (this package's import root) holds
tools/revgraph/, the command's C++ sources, which would otherwise import as an empty namespace.
For the band rule alone, band_rule() falls back to the build's `revgraph band` command (the same
rule and verdict, asked of the binary); `tools/race engine` needs the package. Where neither is there, the
caller says so in one line.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_build():
    return os.environ.get("REVGRAPH_BUILD") or os.path.join(ROOT, "build")


def load(build=None):
    """(module, "") or (None, why it is not there, one line)."""
    folder = os.path.join(os.path.abspath(build or default_build()), "python")
    if not os.path.isdir(os.path.join(folder, "revgraph")):
        return None, f"no built revgraph package under {folder} (build it: tools/setup-build; or --build)"
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        import revgraph
    except ImportError as e:
        return None, (f"the revgraph package under {folder} does not import in Python "
                      f"{sys.version_info[0]}.{sys.version_info[1]} ({e})")
    missing = [name for name in ("band_rule", "band_verdict", "fit_predict") if not hasattr(revgraph, name)]
    if missing:
        where = getattr(revgraph, "__file__", None) or list(getattr(revgraph, "__path__", []))
        return None, (f"the revgraph imported from {where} is not this checkout's built package (no "
                      f"{', '.join(missing)}; build it, or --build)")
    return revgraph, ""


class BinaryBandRule:
    """The engine's band rule through the build's `revgraph band` command: where the built package
    does not import into the python3 at hand (a GPU machine's CUDA PyTorch is often another Python
    version than the build's), the verdict still comes from the engine's one rule."""

    def __init__(self, exe):
        self.exe = exe
        # $REVGRAPH_LD_PATH: where the build's binary finds its libraries where the loader does not
        # (tools/gpu-check sets it: a packed build's lib/ with the CUDA runtime and libzip, or the
        # toolkit's runtime for one built there). Given to this command alone, never to the process
        # that runs torch, whose own CUDA libraries stay the ones it loads.
        self.env = None
        if os.environ.get("REVGRAPH_LD_PATH"):
            self.env = dict(os.environ)
            self.env["LD_LIBRARY_PATH"] = os.environ["REVGRAPH_LD_PATH"] + (
                ":" + self.env["LD_LIBRARY_PATH"] if self.env.get("LD_LIBRARY_PATH") else "")
        self.VERDICT_SOURCE = f"{exe} band --correct (engine/qualify/protocol.cpp)"  # the report's band.rule

    def band_rule(self, band, total, per_draw):
        numbers = self._ask(band, per_draw, "--total", str(total))
        return {"required_correct": numbers["required_correct"], "per_draw_floor": numbers["per_draw_floor"]}

    def band_verdict(self, band, correct, per_draw):
        """revgraph.band_verdict for draws of per_draw query images each (an int here)."""
        numbers = self._ask(band, per_draw, "--correct", ",".join(str(int(c)) for c in correct))
        return {k: numbers[k] for k in ("passed", "total_correct", "total", "required_correct", "per_draw_floor",
                                        "meets_total", "meets_floor", "draws_below_floor")}

    def _ask(self, band, per_draw, *args):
        p = subprocess.run([self.exe, "band", "--band", str(band), "--per-draw", str(per_draw), *args],
                           capture_output=True, text=True, env=self.env)
        if p.returncode != 0:
            lines = p.stderr.strip().splitlines()
            said = lines[-1].removeprefix("revgraph: error: ").removeprefix("band: ") if lines else ""
            raise ValueError(said or f"revgraph band: exit {p.returncode}")
        return json.loads(p.stdout)


def band_rule(build=None):
    """(an object with band_rule(band, total, per_draw) and band_verdict(band, correct, per_draw), "")
    from the built package, else from the
    build's revgraph binary; (None, why) where neither is there."""
    revgraph, why = load(build)
    if revgraph is not None:
        return revgraph, ""
    exe = os.path.join(os.path.abspath(build or default_build()), "tools", "revgraph")
    if os.access(exe, os.X_OK):
        return BinaryBandRule(exe), ""
    return None, f"{why}; nor is there a {exe} to ask"
