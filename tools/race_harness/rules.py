"""An entry file's static rules, checked by reading it (ast), never by running it.

Why: the judge refuses an entry that breaks one of these before running anything, and a refusal
there costs a submission. So `tools/race check` and `tools/race run` read the file the same way
first, and `run` imports nothing that breaks a rule. Each broken rule is one line.

The rules (docs/race.md, "The entry"):
  size       at most 20,480 bytes
  literals   no str or bytes literal longer than 4,096 characters (bytes: 4,096 bytes), counted both
             as its value and as written between its quotes (escapes, and an f-string's fields, as
             typed; implicitly joined pieces as one literal): whichever way the judge counts, the
             stricter count holds here
  header     line 1 `#!POPCORN leaderboard mnist-medium-<N>pct` (N a leaderboard: 12, 8, 5, 3, 2),
             line 2 `#!POPCORN gpu A100`
  inert      the module level only imports, defines (def, class), assigns constants and configures
             torch; nothing else runs at import (no other call, no if/for/while/try/with block)
  kernel     a module-level `def custom_kernel(data)` that takes one positional argument

What "inert" allows, exactly: imports; `def`/`class` whose every part evaluated at definition is
inert: default values constant expressions and annotations (argument and return, and a module's
or class's `X: T = v`) types that run nothing of an imported object's (_annotation: names,
strings, None, builtin or typing generics subscripted with these, `|` between builtin types and
generics); a class's bases constant
expressions and no keywords (`metaclass=` and the keywords given to `__init_subclass__` run
code when the class is made); no `__init_subclass__` or `__class_getitem__` of the entry's own (the
first runs when a subclass is made, the second when the class is subscripted, both at import); no
decorator but the wrappers in INERT_DECORATORS, a property's companions and the lazy compilers
in LAZY_COMPILERS (a decorator is a call at import: `@functools.lru_cache` or `@print` runs code;
`@torch.no_grad()`, `@staticmethod`, `@torch.compile` and their like only wrap);
class bodies held to the same rules; a docstring; `pass`; `NAME = <constant expression>` (below);
an assignment to a `torch.` attribute (`torch.backends.cuda.matmul.allow_tf32 = False`); and a
torch configuration call, `torch.set_*(...)`, `torch.use_deterministic_algorithms(...)` or
`torch.backends.<module>.<function>(...)`, with constant arguments. A torch setting is only that
shape (TORCH_SETTING_CALLS and TORCH_SETTING_ATTRIBUTES below: no deeper path, no private name):
`torch.backends.cudnn.os.system(...)` reaches a module torch imported. The names trusted by their
spelling (RELIED_MODULES, RELIED_BUILTINS) must be what they say: `import os as torch` or a class
named triton would make `torch.` or `@triton.jit` anything. An assignment's target is a name, or a
tuple or list of names (`(os.environ["A"],) = ("1",)` calls __setitem__ at import however it is
spelled); an augmented one's a name bound before to a constant expression worked out from
literals, its value one too (`environ |= {...}` calls an imported object's __ior__). No Enum
class (its members run its own methods as it is made), no module-level __getattr__/__dir__ (Python
calls them), no star import (names the rules cannot see).
Annotations are held to this even under `from __future__ import annotations` (which leaves them
unevaluated): one rule, whatever the file imports.

A constant expression (_not_constant): literals; tuples, lists, sets and dicts of constant
expressions; a name or dotted name of anything kept as itself, as the whole value or an element of
those (`F4 = np.float32`, `ACT = F.relu`: an alias, nothing done with it); lambdas (their defaults
held to this); and operators, subscripts, tests (`a if t else b`, `and`, `or`, comparisons),
unpacking (`*x`, `**x`, `A, B = x`) and public attribute reads only over literals and the names
bound before, in the same body or the module's, to such expressions worked out from literals: each
of those runs a method of what it works on, and over an imported object that is any code
(`os.environ["HOME"]` and `"%(HOME)s" % os.environ` read the environment at import). No call, no
comprehension, no f-string. A refusal names the line and the part that is not constant.
"""
import ast
import decimal
import io
import os
import re
import tokenize

MAX_BYTES = 20480
MAX_LITERAL = 4096
# The race's leaderboards, in percent: the one list the harness holds (a header's band, `engine
# --band`, `choose --bands`); `revgraph export` refuses any other band the same way.
LEADERBOARDS = (12, 8, 5, 3, 2)
LEADERBOARD_WORDS = ", ".join(map(str, LEADERBOARDS[:-1])) + f" or {LEADERBOARDS[-1]}"
HEADER_RE = re.compile(r"#!POPCORN leaderboard mnist-medium-([0-9]+)pct")  # ASCII digits only
GPU_LINE = "#!POPCORN gpu A100"

# What an annotation may be (_annotation): Python evaluates a module's, a class's and a def's
# annotations at import, so an operator or a subscript there runs a method of what it works on as
# an assignment's would (`X: os.environ["HOME"] = 1` reads the environment). A type is a name, a
# string (never evaluated) or None; subscripted only where the subscripted is a builtin generic or
# the typing module's; joined by `|` only between such (an imported object's __or__ is any code).
_BUILTIN_TYPES = ("int", "float", "complex", "bool", "str", "bytes", "bytearray", "object")
_BUILTIN_GENERICS = ("tuple", "list", "dict", "set", "frozenset", "type")


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


def _generic(node):
    """A builtin generic (`tuple`) or the typing module's (`typing.Optional`): what may be subscripted."""
    name = _dotted(node)
    return name is not None and (name in _BUILTIN_GENERICS or name.startswith("typing."))


def _annotation(node, joined=False):
    """Whether an annotation runs nothing of an imported object's when evaluated (_BUILTIN_TYPES
    above). joined: an operand of `|`, where only builtin types, None and typing's or builtin
    generics (subscripted or not) may stand."""
    if isinstance(node, ast.Constant):  # a string joined by `|` fails at import ("int" | None): refused
        return node.value is None or (not joined and (isinstance(node.value, str) or node.value is Ellipsis))
    if isinstance(node, (ast.Name, ast.Attribute)) and _dotted(node) is not None:
        return not joined or _dotted(node) in _BUILTIN_TYPES + _BUILTIN_GENERICS or _generic(node)
    if isinstance(node, ast.Subscript) and _generic(node.value):
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        # A list stands for Callable's arguments: Callable[[A, B], R].
        return all(all(_annotation(e) for e in x.elts) if isinstance(x, ast.List) else _annotation(x) for x in index)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _annotation(node.left, True) and _annotation(node.right, True)
    return False


def _src(node):
    """An expression's text for a one-line refusal: its source, whitespace folded, cut at 60."""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.MatMult: "@", ast.Div: "/", ast.Mod: "%", ast.Pow: "**",
            ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&",
            ast.FloorDiv: "//", ast.USub: "-", ast.UAdd: "+", ast.Not: "not", ast.Invert: "~"}


def _operands(node):
    """(verb, operand) for each operand that node works on: an operator, subscript, attribute read,
    test or unpacking runs a method of it (__mod__, __getitem__, __getattr__, __bool__, __iter__)."""
    if isinstance(node, ast.BinOp):
        return [(f"applies {_SYMBOLS.get(type(node.op), 'an operator')} to", x) for x in (node.left, node.right)]
    if isinstance(node, ast.UnaryOp):
        return [(f"applies {_SYMBOLS.get(type(node.op), 'an operator')} to", node.operand)]
    if isinstance(node, ast.BoolOp):
        return [("tests", x) for x in node.values]
    if isinstance(node, ast.Compare):
        return [("compares", x) for x in [node.left] + node.comparators]
    if isinstance(node, ast.Subscript):
        return [("subscripts", node.value), ("indexes with", node.slice)]
    if isinstance(node, ast.Slice):
        return [("slices with", x) for x in (node.lower, node.upper, node.step) if x is not None]
    if isinstance(node, ast.Attribute):
        return [("reads an attribute of", node.value)]
    if isinstance(node, ast.Starred):
        return [("unpacks", node.value)]
    return []


def _not_constant(node, constants, alias=True):
    """'' for a constant expression, else what in it is not (one short phrase naming it).

    Constant: literals; tuples, lists, sets and dicts of constants; and operators, subscripts, tests
    and public attribute reads over literals and the names in `constants` only (the names bound
    before, in this body or the module's, to such expressions), since each of those runs a method
    of what it works on: `os.environ["HOME"]` and `"%(HOME)s" % os.environ` read the environment.
    alias: whether a name or dotted name of anything (an import, a def: `F4 = np.float32`, `ACT =
    F.relu`) may stand as itself, as the whole value or an element of a literal, where nothing is
    done with it but keeping it. A lambda's defaults are held to this; its body runs later."""
    if isinstance(node, ast.Constant):
        return ""
    if isinstance(node, (ast.Name, ast.Attribute)) and _dotted(node) is not None:
        if alias or _dotted(node).split(".")[0] in constants and not any(
                part.startswith("_") for part in _dotted(node).split(".")[1:]):
            return ""  # kept as itself (an alias), or a public attribute of a constant
    if isinstance(node, ast.Lambda):
        a = node.args
        checks = [("", d, True) for d in a.defaults + [d for d in a.kw_defaults if d is not None]]
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        checks = [("", e, alias) for e in node.elts]  # a Starred element unpacks: its own operand
    elif isinstance(node, ast.Dict):
        checks = [("", k, alias) for k in node.keys if k is not None] + \
                 [("", v, alias) if k is not None else ("unpacks", v, False) for k, v in zip(node.keys, node.values)]
    elif isinstance(node, ast.IfExp):
        checks = [("tests", node.test, False), ("", node.body, alias), ("", node.orelse, alias)]
    elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
        return f"`{_src(node)}` reads a private attribute ({node.attr})"
    elif isinstance(node, ast.Name):
        return f"`{node.id}` is not a literal nor a name bound to constants before"
    else:
        checks = [(verb, x, False) for verb, x in _operands(node)]
        if not checks:
            what = ("is a call" if isinstance(node, ast.Call) else
                    "is a comprehension" if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp,
                                                              ast.GeneratorExp)) else
                    "is an f-string (its fields are formatted at import)" if isinstance(node, ast.JoinedStr) else
                    "binds a name (:=)" if isinstance(node, ast.NamedExpr) else "is computed at import")
            return f"`{_src(node)}` {what}"
    for verb, part, part_alias in checks:
        why = _not_constant(part, constants, part_alias)
        if why and verb and _dotted(part) is not None:
            # A name of anything (an import's, a def's) worked on: say what is done with it.
            return f"`{_src(node)}` {verb} `{_src(part)}`, not a literal nor a name bound to constants"
        if why:
            return why
    return ""


def _constant(node, constants, alias=True):
    return not _not_constant(node, constants, alias)


# The torch settings an entry may configure at import, as dotted paths (a "*" part: one public
# name; "set_*": a public name so begun): calls of the first list, assignments to the second. Exact
# lengths: torch.backends.cudnn imports os, so one name deeper reaches another module's functions.
TORCH_SETTING_CALLS = ("torch.set_*", "torch.autograd.set_*", "torch.use_deterministic_algorithms",
                       "torch.backends.*.*")
TORCH_SETTING_ATTRIBUTES = ("torch.backends.*", "torch.backends.*.*", "torch.backends.*.matmul.*",
                            "torch.backends.*.conv.*", "torch.backends.*.rnn.*", "torch._dynamo.config.*",
                            "torch._inductor.config.*", "torch._inductor.config.triton.*",
                            "torch._inductor.config.cpp.*")


def _part_matches(want, part):
    if want == part:
        return True
    if not want.endswith("*") or part.startswith("_"):
        return False
    return part.startswith(want[:-1]) and len(part) > len(want) - 1


def _setting(name, shapes):
    """Whether the dotted name has one of the shapes (TORCH_SETTING_CALLS, TORCH_SETTING_ATTRIBUTES)."""
    parts = (name or "").split(".")
    return any(len(shape.split(".")) == len(parts) and all(map(_part_matches, shape.split("."), parts))
               for shape in shapes)


def _torch_config_call(node, trusted):
    """Whether node calls a torch setting (TORCH_SETTING_CALLS, of the torch module); its arguments
    are held apart (_arguments_problem)."""
    return "torch" in trusted and isinstance(node, ast.Call) and _setting(_dotted(node.func), TORCH_SETTING_CALLS)


def _arguments_problem(call, constants):
    """What in a call's arguments (a torch setting's, a lazy compiler's options) is not constant, or ''."""
    return next(filter(None, (_not_constant(a, constants) for a in call.args + [k.value for k in call.keywords])), "")


def _plain_target(node):
    """A name, or a tuple/list (starred or not) of plain targets: binding it calls nothing."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Starred):
        return _plain_target(node.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_plain_target(e) for e in node.elts)
    return False


def _target_names(node):
    """The names an assignment target binds (`torch.x = 1` binds none: it sets an attribute)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Starred):
        return _target_names(node.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for e in node.elts for n in _target_names(e)]
    return []


def _bound_names(stmt):
    """(name, module) for each name a statement binds in its body; module: the module an import binds
    to that very name (`import torch`, `import torch.nn`, `import torch as torch`: 'torch'), else None."""
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            top = a.name.split(".")[0]
            if a.asname is None:
                yield top, top
            else:
                yield a.asname, a.name if a.name == a.asname else None
    elif isinstance(stmt, ast.ImportFrom):
        for a in stmt.names:
            yield a.asname or a.name, None
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield stmt.name, None
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
            yield from ((n, None) for n in _target_names(t))


# The names the rules trust by spelling (a torch setting, a wrapper decorator): each must be what
# it says, or `torch.set_x(...)` and `@triton.jit` could be anything's calls. A module's name is
# bound at the module level by its own import and nothing else; a builtin's never; and a class body
# binds none of them (its own names come first there).
RELIED_MODULES = ("torch", "triton", "abc", "typing")
RELIED_BUILTINS = ("property", "staticmethod", "classmethod")


def _relied_bindings(body, where, problems, module_level):
    """(imported, spoiled): the RELIED_MODULES this body binds by their own import (at the module
    level), and the RELIED_* names it binds otherwise, each of those a problem."""
    imported, spoiled = set(), set()
    for stmt in body:
        for name, module in _bound_names(stmt):
            if name not in RELIED_MODULES + RELIED_BUILTINS or name in spoiled:
                continue
            if module_level and name in RELIED_MODULES and module == name:
                imported.add(name)
                continue
            spoiled.add(name)
            what = f"the {name} module" if name in RELIED_MODULES else f"Python's {name}"
            problems.append(f"inert: line {stmt.lineno}: {where} binds the name {name} (to something other than "
                            f"{what}: the rules trust it by its name, so only `import {name}` at the module level "
                            f"may bind it)" if name in RELIED_MODULES else
                            f"inert: line {stmt.lineno}: {where} binds the name {name} (to something other than "
                            f"{what}: the rules trust it by its name, so nothing may bind it)")
    return imported, spoiled


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


def _decorator_ok(node, properties, trusted, constants):
    """Whether a decorator only wraps; `properties`: the names the enclosing class made properties
    (and has not bound otherwise since); `trusted`: the RELIED_* names that are what they say;
    `constants`: the names a lazy compiler's options may work on (_not_constant)."""
    if isinstance(node, ast.Call) and _dotted(node.func) in LAZY_COMPILERS:
        return _dotted(node.func).split(".")[0] in trusted and not _arguments_problem(node, constants)
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        node = node.func
    name = _dotted(node) or ""
    head, _, tail = name.rpartition(".")
    if name in INERT_DECORATORS or name in LAZY_COMPILERS:
        return name.split(".")[0] in trusted
    return head in properties and tail in PROPERTY_COMPANIONS


def _signature_problems(fn, constants):
    """What a def evaluates when it runs (at import, for a module- or class-level def): its defaults,
    held to the constant expressions (a default is a value kept, as an assignment's), and its
    annotations, to types that run nothing of an imported object's (_annotation)."""
    a = fn.args
    every = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]
    out = []
    why = next(filter(None, (_not_constant(d, constants) for d in
                             a.defaults + [d for d in a.kw_defaults if d is not None])), "")
    if why:
        out.append(f"a default argument of {fn.name} is not constant: {why}")
    if not all(_annotation(x.annotation) for x in every if x.annotation is not None) or \
            (fn.returns is not None and not _annotation(fn.returns)):
        out.append(f"an annotation of {fn.name} is computed at import (annotations are evaluated when the def "
                   f"runs): only names, strings, None, and builtin or typing generics of these")
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


def _unpacking_problem(targets, value, constants):
    """Where a target unpacks (`A, B = value`), what makes its iteration run code, or '': a tuple or
    list written out is unpacked by Python itself; any other value must be constant as an operand
    is (`A, B = os.environ` runs os.environ's __iter__)."""
    if all(isinstance(t, ast.Name) for t in targets) or isinstance(value, (ast.Tuple, ast.List)):
        return ""
    why = _not_constant(value, constants, alias=False)
    if why and _dotted(value) is not None:
        return f"it unpacks `{_src(value)}`, not a literal nor a name bound to constants"
    return why


def _enum_names(body):
    """The module-level names bound to the enum module or what it holds: an Enum class statement
    runs the entry's own __init__/__new__ for each member while the class is made."""
    names = set()
    for stmt in body:
        if isinstance(stmt, ast.Import):
            names |= {a.asname or "enum" for a in stmt.names if a.name == "enum"}
        elif isinstance(stmt, ast.ImportFrom) and stmt.module == "enum":
            names |= {a.asname or a.name for a in stmt.names}
    return names


# Module-level functions Python itself calls: `__getattr__` on any missing attribute of the module
# (sys.modules[__name__].x at import), `__dir__` on dir(module).
MODULE_HOOKS = ("__getattr__", "__dir__")


def _inert(body, where, problems, trusted=None, enums=None, constants=None):
    """Problems with the statements that run when this body (the module's, a class's) runs;
    trusted: the RELIED_* names the module level left as they say (None: this is the module level);
    constants: the names bound to constant expressions where a class body starts (the module's then)."""
    if trusted is None:
        imported, spoiled = _relied_bindings(body, where, problems, module_level=True)
        trusted = (imported | set(RELIED_BUILTINS)) - spoiled
        enums = _enum_names(body)
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in MODULE_HOOKS:
                problems.append(f"inert: line {stmt.lineno}: the module defines {stmt.name}, which Python calls "
                                f"itself (an attribute the module lacks, read at import, runs it)")
    else:
        trusted = trusted - _relied_bindings(body, where, problems, module_level=False)[1]
    properties = set()  # names this body has made properties (and not bound otherwise since)
    # The names bound so far to constant expressions (_not_constant with alias False: literals and
    # what is computed from them, not a name of anything), and not otherwise since: what an operator,
    # subscript or augmented assignment may work on. A class body reads the module's names too.
    constants = set(constants or ())
    for stmt in body:
        line = f"line {stmt.lineno}"
        bound = {name for name, _ in _bound_names(stmt)}
        before = set(constants)  # what this statement's own expressions see
        made_property = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            _dotted(d) == "property" or (_dotted(d) or "").rpartition(".")[2] in PROPERTY_COMPANIONS
            for d in (x.func if isinstance(x, ast.Call) else x for x in stmt.decorator_list))
        if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
            problems.append(f"inert: {line}: {where}: `from {stmt.module} import *` binds names the rules cannot "
                            f"see (torch, property, or an object then changed in place): import names one by one")
            continue
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id not in constants:
            # `environ |= {...}` or `path += [...]` changes an object imported or defined here.
            problems.append(f"inert: {line}: {where} changes {stmt.target.id} in place (an augmented assignment "
                            f"to a name not bound to constants calls its __iadd__/__ior__...)")
            continue
        companions_of = set(properties)  # what this statement's decorators may be companions of
        properties -= bound
        constants -= bound
        if made_property:
            properties.add(stmt.name)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and all(_plain_target(t) for t in (
                stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])) and \
                stmt.value is not None and _constant(stmt.value, before, alias=False):
            constants |= bound
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring, or any other bare literal: nothing runs
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in stmt.decorator_list:
                if not _decorator_ok(d, companions_of, trusted, before):
                    problems.append(f"inert: line {d.lineno}: the decorator of {stmt.name} is a call at import "
                                    f"(only wrappers may decorate: {', '.join(INERT_DECORATORS + LAZY_COMPILERS)}, "
                                    f"a property's setter)")
            if isinstance(stmt, ast.ClassDef):
                why = next(filter(None, (_not_constant(b, before) for b in stmt.bases)), "")
                if why:
                    problems.append(f"inert: {line}: a base of class {stmt.name} is not constant: {why}")
                elif any((_dotted(b) or "").split(".")[0] in enums for b in stmt.bases):
                    problems.append(f"inert: {line}: class {stmt.name} is an Enum: making it calls its own methods "
                                    f"for each member at import")
                if stmt.keywords:
                    problems.append(f"inert: {line}: class {stmt.name} has keywords "
                                    f"({', '.join(k.arg or '**' for k in stmt.keywords)}): a metaclass or "
                                    f"__init_subclass__ runs them at import")
                for hook in (h for s in stmt.body for h in _hooks(s)):
                    problems.append(f"inert: {line}: class {stmt.name} defines {hook}, which Python calls at import "
                                    f"(on a subclass's class statement, or on C[...])")
                _inert(stmt.body, f"class {stmt.name}", problems, trusted, enums, before)
            else:
                problems += [f"inert: {line}: {p}" for p in _signature_problems(stmt, before)]
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            if isinstance(stmt, ast.AnnAssign) and not _annotation(stmt.annotation):
                problems.append(f"inert: {line}: {where}: an annotation computed at import (only names, strings, "
                                f"None, and builtin or typing generics of these)")
                continue
            torch_attribute = "torch" in trusted and all(
                isinstance(t, ast.Attribute) and _setting(_dotted(t), TORCH_SETTING_ATTRIBUTES) for t in targets)
            plain = all(_plain_target(t) for t in targets)
            # An augmented assignment's value is an operand of its operator: constant, not a name of anything.
            augmented = isinstance(stmt, ast.AugAssign)
            why = "" if value is None else _not_constant(value, before, alias=not augmented)
            if why and augmented and _dotted(value) is not None:
                why = (f"`{_src(stmt)}` applies {_SYMBOLS.get(type(stmt.op), 'an operator')}= to `{_src(value)}`, "
                       f"not a literal nor a name bound to constants")
            if not why and value is not None and plain:
                why = _unpacking_problem(targets, value, before)
            if why:
                problems.append(f"inert: {line}: {where} assigns a value that is not constant: {why}")
            elif not (plain or torch_attribute):
                problems.append(f"inert: {line}: {where} assigns to something other than names or a torch setting "
                                f"({', '.join(TORCH_SETTING_ATTRIBUTES)})")
            continue
        if isinstance(stmt, ast.Expr) and _torch_config_call(stmt.value, trusted) and \
                not _arguments_problem(stmt.value, before):
            continue
        kind = type(stmt).__name__
        if isinstance(stmt, ast.Expr) and _torch_config_call(stmt.value, trusted):
            what = f"a torch setting's argument is not constant: {_arguments_problem(stmt.value, before)}"
        elif isinstance(stmt, ast.If):
            what = "an if block (an `if __name__ == ...` block included) runs at import"
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            what = f"a call ({_dotted(stmt.value.func) or 'an expression'}) runs at import; only torch settings " \
                   f"may ({', '.join(TORCH_SETTING_CALLS)}, constant arguments)"
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


def _written_length(segment):
    """The characters written between the quotes of each string token of a literal's source text
    (prefixes and quotes left out; escapes, and an f-string's fields, counted as typed). Python
    3.12 and later tokenize an f-string as FSTRING_START ... FSTRING_END: what lies between counts."""
    starts = [0]  # tokenize's rows are what io.StringIO.readline gives: lines ended by "\n" only
    for line in segment.split("\n"):
        starts.append(starts[-1] + len(line) + 1)

    def at(pos):  # a token position (row from 1, column) as an offset into the segment
        return starts[pos[0] - 1] + pos[1]

    total, fstring_start, depth = 0, None, 0
    fstring_start_type = getattr(tokenize, "FSTRING_START", None)
    fstring_end_type = getattr(tokenize, "FSTRING_END", None)
    for tok in tokenize.generate_tokens(io.StringIO(segment).readline):
        if tok.type == tokenize.STRING and depth == 0:
            body = tok.string.lstrip("rRbBuUfF")
            quote = 3 if body[:3] in ('"""', "\'\'\'") else 1
            total += len(body) - 2 * quote
        elif fstring_start_type is not None and tok.type == fstring_start_type:
            if depth == 0:
                fstring_start = at(tok.end)
            depth += 1
        elif fstring_end_type is not None and tok.type == fstring_end_type:
            depth -= 1
            if depth == 0:
                total += at(tok.start) - fstring_start
    return total


def _literal_problems(tree, text):
    """One line per str/bytes literal over MAX_LITERAL, by its value or as written in the file. An
    f-string is one literal (its fixed parts and fields as written); its parts are not counted again."""
    out, inside = [], set()
    # Where each line starts in the UTF-8 bytes (ast's columns count bytes; its lines end at \n, \r\n
    # or \r): a literal's text is a slice, found once, not ast.get_source_segment's split a literal.
    raw = text.encode("utf-8")
    starts = [0] + [m.end() for m in re.finditer(rb"\r\n|\n|\r", raw)]
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside.update(id(n) for n in ast.walk(node) if n is not node)
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            kind, value = type(node.value).__name__, len(node.value)
        elif isinstance(node, ast.JoinedStr):
            kind, value = "f-string", 0
        else:
            continue
        begin = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        if value <= MAX_LITERAL and end - begin <= MAX_LITERAL:
            continue  # what is written between its quotes is fewer characters than its bytes
        segment = raw[begin:end].decode("utf-8")
        try:
            written = _written_length(segment)
        except (tokenize.TokenError, SyntaxError):
            written = len(segment)
        unit = "bytes" if kind == "bytes" else "characters"
        if value > MAX_LITERAL:
            out.append(f"literals: line {node.lineno}: a {kind} literal of {value:,} {unit}, more than {MAX_LITERAL:,}")
        elif written > MAX_LITERAL:
            out.append(f"literals: line {node.lineno}: {'an' if kind[0] == 'f' else 'a'} {kind} literal written in {written:,} characters (escapes "
                       f"as typed), more than {MAX_LITERAL:,}")
    return out


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
    elif m.group(1) not in map(str, LEADERBOARDS):  # "012" names no leaderboard
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
    except ValueError as e:  # a NUL byte, before Python 3.12 (a SyntaxError since)
        problems.append(f"source: does not parse: {e}")
        return problems, info
    except (MemoryError, RecursionError):  # `-` 15,000 times, or `not` 4,000: Python's parser gives up
        problems.append("source: does not parse: an expression nested too deep for Python's parser")
        return problems, info
    try:  # the rules walk the tree recursively: an expression ~1,000 levels deep parses, yet is too deep
        problems += _literal_problems(tree, text)
        _inert(tree.body, "the module level", problems)
    except RecursionError:
        problems.append("source: an expression nested too deep for the rules to read (some 1,000 levels)")
        return problems, info
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
