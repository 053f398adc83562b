"""An entry file's static rules, checked by reading it (ast), never by running it.

Why: the judge refuses an entry that breaks one of these before running anything, and a refusal
there costs a submission. So `tools/race check` and `tools/race run` read the file the same way
first, and `run` imports nothing that breaks a rule. Each broken rule is one line.

The rules (docs/race.md, "The entry"):
  size       at most 20,480 bytes
  literals   no str or bytes literal longer than 4,096 characters (bytes: 4,096 bytes)
  header     line 1 `#!POPCORN leaderboard mnist-medium-<N>pct` (N a leaderboard: 12, 8, 5, 3, 2),
             line 2 `#!POPCORN gpu A100`
  inert      the module level only imports, defines (def, class), assigns constants and configures
             torch; nothing else runs at import (no other call, no if/for/while/try/with block)
  kernel     a module-level `def custom_kernel(data)` that takes one positional argument

What "inert" allows, exactly: imports; `def`/`class` whose every part evaluated at definition is
inert: default values and annotations (argument and return) constant expressions; a class's bases
constant expressions and no keywords (`metaclass=` and the keywords given to `__init_subclass__` run
code when the class is made); no `__init_subclass__` or `__class_getitem__` of the entry's own (the
first runs when a subclass is made, the second when the class is subscripted, both at import); no
decorator but the wrappers in INERT_DECORATORS, a property's companions and the lazy compilers
in LAZY_COMPILERS (a decorator is a call at import: `@functools.lru_cache` or `@print` runs code;
`@torch.no_grad()`, `@staticmethod`, `@torch.compile` and their like only wrap);
class bodies held to the same rules; a docstring; `pass`; `NAME = <constant expression>` (literals,
names, attributes, subscripts, operators, tuples/lists/dicts/sets of these, lambdas; no call, no
comprehension); an assignment to a `torch.` attribute (`torch.backends.cuda.matmul.allow_tf32 =
False`); and a torch configuration call, `torch.set_*(...)`, `torch.use_deterministic_algorithms(...)`
or `torch.backends.*(...)`, with constant arguments. Annotations are held to this even under `from
__future__ import annotations` (which leaves them unevaluated): one rule, whatever the file imports.
"""
import ast
import decimal
import os
import re

MAX_BYTES = 20480
MAX_LITERAL = 4096
# The race's leaderboards, in percent: the one list the harness holds (a header's band, `engine
# --band`, `choose --bands`); `revgraph export` refuses any other band the same way.
LEADERBOARDS = (12, 8, 5, 3, 2)
LEADERBOARD_WORDS = ", ".join(map(str, LEADERBOARDS[:-1])) + f" or {LEADERBOARDS[-1]}"
HEADER_RE = re.compile(r"#!POPCORN leaderboard mnist-medium-(\d+)pct")
GPU_LINE = "#!POPCORN gpu A100"

_CONSTANT_NODES = (ast.Constant, ast.Name, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.Set,
                   ast.Dict, ast.UnaryOp, ast.BinOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Starred, ast.Load,
                   ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context)


def leaderboard(band):
    """The canonical band ('12') of a leaderboard given as text ('12', '12.0'); ValueError, one
    line naming the leaderboards, for anything else (7, 12.5, foo): a band that no leaderboard has
    would be judged by the engine's rule all the same and pass for nothing."""
    try:
        value = decimal.Decimal(str(band).strip())
    except decimal.InvalidOperation:
        value = None
    for b in LEADERBOARDS:
        if value is not None and value.is_finite() and value == b:
            return str(b)
    raise ValueError(f"band {band!r} is not a leaderboard of the race ({LEADERBOARD_WORDS})")


def _dotted(node):
    """'torch.backends.cuda' for that Attribute/Name chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _constant(node):
    """A constant expression: nothing in it calls, iterates or awaits (a lambda's body runs later)."""
    if isinstance(node, ast.Lambda):
        args = node.args
        return all(_constant(d) for d in args.defaults + [d for d in args.kw_defaults if d is not None])
    if not isinstance(node, _CONSTANT_NODES):
        return False
    return all(_constant(child) for child in ast.iter_child_nodes(node))


def _torch_config_call(node):
    if not isinstance(node, ast.Call):
        return False
    name = _dotted(node.func) or ""
    if not name.startswith("torch."):
        return False
    last = name.rsplit(".", 1)[1]
    if not (last.startswith("set_") or last == "use_deterministic_algorithms" or name.startswith("torch.backends.")):
        return False
    return all(_constant(a) for a in node.args) and all(_constant(k.value) for k in node.keywords)


# The decorators that only wrap the function (no call of the entry's code, no compilation, no
# I/O); any other decorator is a call at import, refused. Bare names or calls without arguments;
# also a property's own companions (`@p.setter`, `.getter`, `.deleter` of a property p defined
# before them in the same class).
INERT_DECORATORS = ("staticmethod", "classmethod", "property", "abc.abstractmethod", "typing.overload",
                    "torch.no_grad", "torch.inference_mode")
# The decorators that wrap a function to be compiled at its first call, not at import: bare, or
# called with constant options (`@torch.compile(mode="max-autotune")`, `@triton.jit`).
LAZY_COMPILERS = ("torch.compile", "triton.jit")
PROPERTY_COMPANIONS = ("setter", "getter", "deleter")
# Hooks of a class that Python calls at import without a call in the file: a subclass's `class`
# statement runs its base's __init_subclass__; `C[...]` in a constant expression runs __class_getitem__.
CLASS_HOOKS = ("__init_subclass__", "__class_getitem__")


def _decorator_ok(node, properties):
    """Whether a decorator only wraps; `properties`: the names the enclosing class made properties."""
    if isinstance(node, ast.Call) and _dotted(node.func) in LAZY_COMPILERS:
        return all(_constant(a) for a in node.args) and all(_constant(k.value) for k in node.keywords)
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        node = node.func
    name = _dotted(node) or ""
    head, _, tail = name.rpartition(".")
    return name in INERT_DECORATORS or name in LAZY_COMPILERS or (head in properties and tail in PROPERTY_COMPANIONS)


def _signature_problems(fn):
    """What a def evaluates when it runs (at import, for a module- or class-level def): its defaults
    and its annotations, each held to the constant expressions."""
    a = fn.args
    every = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]
    out = []
    if not all(_constant(d) for d in a.defaults + [d for d in a.kw_defaults if d is not None]):
        out.append(f"a default argument of {fn.name} calls code at import")
    if not all(_constant(x.annotation) for x in every if x.annotation is not None) or \
            (fn.returns is not None and not _constant(fn.returns)):
        out.append(f"an annotation of {fn.name} is computed at import (annotations are evaluated when the def "
                   f"runs): only constant expressions")
    return out


def _hooks(stmt):
    """The names of CLASS_HOOKS that a class body statement defines (def or assignment)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names = [stmt.name]
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    else:
        names = []
    return [n for n in names if n in CLASS_HOOKS]


def _inert(body, where, problems):
    """Problems with the statements that run when this body (the module's, a class's) runs."""
    properties = set()  # names this body has made properties, whose companions may decorate
    for stmt in body:
        line = f"line {stmt.lineno}"
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring, or any other bare literal: nothing runs
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in stmt.decorator_list:
                if not _decorator_ok(d, properties):
                    problems.append(f"inert: line {d.lineno}: the decorator of {stmt.name} is a call at import "
                                    f"(only wrappers may decorate: {', '.join(INERT_DECORATORS + LAZY_COMPILERS)}, "
                                    f"a property's setter)")
            if any(_dotted(d) == "property" or (_dotted(d) or "").rpartition(".")[2] in PROPERTY_COMPANIONS
                   for d in stmt.decorator_list):
                properties.add(stmt.name)
            if isinstance(stmt, ast.ClassDef):
                if not all(_constant(b) for b in stmt.bases):
                    problems.append(f"inert: {line}: the bases of class {stmt.name} call code at import")
                if stmt.keywords:
                    problems.append(f"inert: {line}: class {stmt.name} has keywords "
                                    f"({', '.join(k.arg or '**' for k in stmt.keywords)}): a metaclass or "
                                    f"__init_subclass__ runs them at import")
                for hook in (h for s in stmt.body for h in _hooks(s)):
                    problems.append(f"inert: {line}: class {stmt.name} defines {hook}, which Python calls at import "
                                    f"(on a subclass's class statement, or on C[...])")
                _inert(stmt.body, f"class {stmt.name}", problems)
            else:
                problems += [f"inert: {line}: {p}" for p in _signature_problems(stmt)]
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            if isinstance(stmt, ast.AnnAssign) and not _constant(stmt.annotation):
                problems.append(f"inert: {line}: {where}: an annotation computed at import")
                continue
            torch_attribute = all(isinstance(t, ast.Attribute) and (_dotted(t) or "").startswith("torch.")
                                  for t in targets)
            plain = all(isinstance(t, (ast.Name, ast.Tuple, ast.List)) and _constant(t) for t in targets)
            if value is not None and not _constant(value):
                problems.append(f"inert: {line}: {where} assigns a value computed at import (a call, a "
                                f"comprehension...): only constant expressions")
            elif not (plain or torch_attribute):
                problems.append(f"inert: {line}: {where} assigns to something other than a name or a torch. setting")
            continue
        if isinstance(stmt, ast.Expr) and _torch_config_call(stmt.value):
            continue
        kind = type(stmt).__name__
        if isinstance(stmt, ast.If):
            what = "an if block (an `if __name__ == ...` block included) runs at import"
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            what = f"a call ({_dotted(stmt.value.func) or 'an expression'}) runs at import; only torch configuration " \
                   f"calls may"
        elif isinstance(stmt, ast.Expr):
            what = "an expression statement runs at import"
        else:
            what = f"a {kind} statement runs at import"
        problems.append(f"inert: {line}: {where}: {what}")


def _takes_one_positional(fn):
    a = fn.args
    positional = a.posonlyargs + a.args
    required = len(positional) - len(a.defaults)
    required_kwonly = sum(1 for d in a.kw_defaults if d is None)
    return required <= 1 and (len(positional) >= 1 or a.vararg is not None) and required_kwonly == 0


def check_source(raw, name="entry"):
    """(problems, info) for an entry file's bytes: one line a broken rule; info holds what the
    header says (band, gpu) and the size. A file that does not parse stops at that line."""
    problems, info = [], {"bytes": len(raw), "band": None, "gpu": None}
    if len(raw) > MAX_BYTES:
        problems.append(f"size: {len(raw):,} bytes, more than {MAX_BYTES:,}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append(f"source: not UTF-8 text ({e})")
        return problems, info
    lines = text.splitlines()
    first = lines[0].rstrip() if lines else ""
    second = lines[1].rstrip() if len(lines) > 1 else ""
    m = HEADER_RE.fullmatch(first)
    if not m:
        problems.append(f"header: line 1 is {first[:80]!r}, not '#!POPCORN leaderboard mnist-medium-<N>pct'")
    elif int(m.group(1)) not in LEADERBOARDS:
        problems.append(f"header: line 1 names mnist-medium-{m.group(1)}pct, not one of the leaderboards "
                        f"{', '.join(f'{b}pct' for b in LEADERBOARDS)}")
    else:
        info["band"] = int(m.group(1))
    if second != GPU_LINE:
        problems.append(f"header: line 2 is {second[:80]!r}, not {GPU_LINE!r}")
    else:
        info["gpu"] = "A100"
    try:
        tree = ast.parse(text, filename=name)
    except SyntaxError as e:
        problems.append(f"source: does not parse: {e.msg} (line {e.lineno})")
        return problems, info
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and len(node.value) > MAX_LITERAL:
            unit = "bytes" if isinstance(node.value, bytes) else "characters"
            problems.append(f"literals: line {node.lineno}: a {type(node.value).__name__} literal of "
                            f"{len(node.value):,} {unit}, more than {MAX_LITERAL:,}")
    _inert(tree.body, "the module level", problems)
    kernels = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "custom_kernel"]
    if not kernels:
        problems.append("kernel: no module-level `def custom_kernel(data)`")
    elif isinstance(kernels[-1], ast.AsyncFunctionDef):
        problems.append(f"kernel: line {kernels[-1].lineno}: custom_kernel is async; the judge calls it plainly")
    elif not _takes_one_positional(kernels[-1]):
        problems.append(f"kernel: line {kernels[-1].lineno}: custom_kernel cannot be called with the one argument data")
    return problems, info


def check_file(path):
    """check_source of the file at path; RaceError-free: an unreadable file is one problem."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        return [f"source: {e}"], {"bytes": None, "band": None, "gpu": None}
    return check_source(raw, os.path.basename(path))


RULE_NAMES = ("size", "source", "header", "literals", "inert", "kernel")


def rule_table(problems):
    """[{rule, passed, problems}] for the report: every rule, passed or with its lines."""
    return [{"rule": r, "passed": not [p for p in problems if p.startswith(r + ":")],
             "problems": [p for p in problems if p.startswith(r + ":")]} for r in RULE_NAMES]
