"""tools/gpu_check names the GPU backends twice, by hand: verified.py's GPU_BACKENDS (which `auto`
may pick once a report speaks for them) and index.py's BACKENDS (the columns of bench/results'
index). They cannot ask the engine: verified.py runs while the engine is built (engine/meson.build's
vcs_tag writes its line into the engine's own sources, before any `revgraph` exists), and index.py
runs from the source tree with no build (`tools/gpu-check index`, the source_only tests). So they
are held here, where the build's command is at hand, to the rows of `revgraph backends --json`
that run on a GPU: a new GPU backend in the engine's table fails this test until both name it."""
import ast
import json
import os

from conftest import run_cli

ROOT = os.environ.get("REVGRAPH_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def constant(relative_path, name):
    """A module-level tuple of str constants, read from the source without importing it (verified.py
    and index.py import their package's other modules; only the literal is wanted here)."""
    path = os.path.join(ROOT, relative_path)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{relative_path}: no module-level {name} = (...)")


def engine_gpu_backends():
    rows = json.loads(run_cli("backends", "--json").stdout)["backends"]
    # "auto" is an alias (its gpu says whether its pick is a GPU's), never a backend of its own.
    return [b["requested"] for b in rows if b["gpu"] and b["requested"] != "auto"]


def test_gpu_checks_backend_lists_are_the_engines_gpu_rows():
    engine = engine_gpu_backends()
    assert engine, "revgraph backends --json has no GPU row"
    for path, name in (("tools/gpu_check/verified.py", "GPU_BACKENDS"), ("tools/gpu_check/index.py", "BACKENDS")):
        listed = constant(path, name)
        assert len(set(listed)) == len(listed), (path, listed)
        # As sets: each list keeps its own order (index.py's is the table's column order).
        assert set(listed) == set(engine), (f"{path}'s {name} {listed} is not the engine's GPU backends {engine} "
                                            "(revgraph backends --json, the rows with gpu true)")
