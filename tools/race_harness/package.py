"""The built revgraph Python package (BUILD/python), found as tools/frontier finds it.

Why: the band's numbers (required total, per-draw floor) are the engine's one rule
(engine/qualify/band.cpp, revgraph.band_rule), not a second copy here; and `tools/race engine` gets
its predictions from revgraph.fit_predict. BUILD is --build, else $REVGRAPH_BUILD, else the
checkout's build/. BUILD/python goes first on sys.path: tools/ (this package's import root) holds
tools/revgraph/, the command's C++ sources, which would otherwise import as an empty namespace.
There is no fallback: where the package does not import, the caller says so in one line.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_build():
    return os.environ.get("REVGRAPH_BUILD") or os.path.join(ROOT, "build")


def load(build=None):
    """(module, "") or (None, why it is not there, one line)."""
    folder = os.path.join(os.path.abspath(build or default_build()), "python")
    if not os.path.isdir(os.path.join(folder, "revgraph")):
        return None, f"no built revgraph package under {folder} (build it: meson setup build && ninja -C build; or --build)"
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        import revgraph
    except ImportError as e:
        return None, (f"the revgraph package under {folder} does not import in Python "
                      f"{sys.version_info[0]}.{sys.version_info[1]} ({e})")
    if not hasattr(revgraph, "band_rule") or not hasattr(revgraph, "fit_predict"):
        where = getattr(revgraph, "__file__", None) or list(getattr(revgraph, "__path__", []))
        return None, f"the revgraph imported from {where} is not the built package (no band_rule; build it, or --build)"
    return revgraph, ""
