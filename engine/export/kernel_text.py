"""The race entry's CUDA text, made from the engine's own sources at build time.

  python3 engine/export/kernel_text.py SOURCE_ROOT OUT.cpp

writes OUT.cpp defining revgraph::exporter::kernel_text() and entry_template(): the text NVRTC
compiles in an exported entry, and engine/export/entry.py.in. The text is
engine/cuda/fused_any/kernels.cuh with every `#include "engine/..."` inlined once, in order — the
same code the engine compiles, not a copy — then made to fit a 20 KB file without changing what
NVRTC compiles:

- the standard library's `#include <...>` lines go: NVRTC has none; engine/export/nvrtc_prelude.cuh,
  first in the text, declares the few names the engine's headers use as their device builtins;
- conditionals on __CUDACC__ and __CUDA_ARCH__ alone are settled as device code sees them (both
  defined); others stay, __CUDACC_RTC__'s among them, since the tests compile the text with nvcc too;
- comments go (the entry's docstring says where they are), blank lines go, each 4-space
  indentation step becomes one space, and no space follows a comma or surrounds an assignment's `=`
  between a name (or `)`, `]`) and what is not `=`, nor a binary `*`, `/` or `%` after one, as
  gofmt lays out `r*width + c` (layout only: no two tokens can merge there, `a / *p` keeps its
  spaces; string and character literals are left as they are);
- functions, classes, macros and constants that nothing kept names are dropped (host-only helpers,
  the parameter Layout class, other widths' code), until nothing more goes.

test/export/ compiles the result with NVRTC and with nvcc for sm_80 and sm_90, and runs it on the
CPU against the float32 trainer. Why Python at build time: the build already runs python3
(tools/gpu_check/verified.py), and the entry's rules are about text.
"""
import os
import re
import sys

NVRTC_DEFINED = {"__CUDACC__", "__CUDA_ARCH__"}  # device code; __CUDACC_RTC__ stays (nvcc compiles it too)
PRELUDE = "engine/export/nvrtc_prelude.cuh"  # the standard library names the shared headers use
ROOT_FILE = "engine/cuda/fused_any/kernels.cuh"


def inline_includes(path, root, seen=None):
    """The file's lines with each engine include replaced by that file's lines, once per file."""
    seen = set() if seen is None else seen
    if path in seen:
        return []
    seen.add(path)
    with open(os.path.join(root, path)) as f:
        text = f.read().replace("\\\n", "")
    out = []
    for line in text.splitlines():
        m = re.match(r'\s*#\s*include\s+"(engine/[^"]+)"', line)
        if m:
            out += inline_includes(m.group(1), root, seen)
        elif not re.match(r"\s*#\s*(pragma\s+once|include\s*<)", line):  # NVRTC has no standard headers
            out.append(line)
    return out


def strip_comments(text):
    """The text without // and /* */ comments; string and character literals kept as they are."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ValueError("an unterminated /* comment")
            i = j + 2
        elif text[i] in "\"'" and not (text[i] == "'" and i > 0 and text[i - 1].isalnum()):
            j, quote = i + 1, text[i]
            while j < n and text[j] != quote:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _tighten_code(code):
    code = code.replace(", ", ",")
    code = re.sub(r"(?<=[\w)\]]) = (?!=)", "=", code)
    # Multiplicative operators bind tighter, so they go without spaces where additive ones keep
    # theirs (gofmt's layout: `r*width + c`). Not before a `*` or `/` (`a / *p` is no `/*`), nor
    # a `:` (`a % ::f()` is no `%:`, the digraph of `#`).
    return re.sub(r"(?<=[\w)\]]) ([*/%]) (?![*/:])", r"\1", code)


def tighten(line):
    """The line with _tighten_code's layout outside its string and character literals; a
    preprocessor line as it is (`#define X = 1` is not `#define X=1`)."""
    if line.lstrip().startswith("#"):
        return line
    out, i, n, code = [], 0, len(line), 0
    while i < n:
        if line[i] in "\"'" and not (line[i] == "'" and i > 0 and line[i - 1].isalnum()):
            out.append(_tighten_code(line[code:i]))
            j, quote = i + 1, line[i]
            while j < n and line[j] != quote:
                j += 2 if line[j] == "\\" else 1
            out.append(line[i:j + 1])
            i = code = j + 1
        else:
            i += 1
    out.append(_tighten_code(line[code:]))
    return "".join(out)


def _settle(condition):
    """True or False where `condition` names only NVRTC's own macros through defined(); else None."""
    names = re.findall(r"defined\s*\(\s*(\w+)\s*\)", condition)
    rest = re.sub(r"defined\s*\(\s*\w+\s*\)|[!&|()\s]", "", condition)
    if rest or not names or any(n not in NVRTC_DEFINED for n in names):
        return None
    py = re.sub(r"defined\s*\(\s*\w+\s*\)", " True ", condition).replace("&&", " and ").replace("||", " or ")
    return eval(py.replace("!", " not "), {"__builtins__": {}})


def settle_conditionals(lines):
    """Lines with the conditionals _settle can decide resolved; other conditionals kept whole."""
    out, stack = [], []  # [kind, this branch taken, some branch taken]
    for line in lines:
        m = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", line)
        live = all(frame[1] for frame in stack)
        if not m:
            if live:
                out.append(line)
            continue
        word, cond = m.group(1), m.group(2).strip()
        if word in ("if", "ifdef", "ifndef"):
            cond = {"ifdef": f"defined({cond})", "ifndef": f"!defined({cond})"}.get(word, cond)
            value = _settle(cond)
            if value is None:
                stack.append(["kept", True, True])
                if live:
                    out.append(line)
            else:
                stack.append(["settled", value, value])
            continue
        frame = stack[-1]
        if frame[0] == "kept":
            if all(f[1] for f in stack[:-1]):
                out.append(line)
            if word == "endif":
                stack.pop()
        elif word == "elif":
            value = _settle(cond)
            if value is None:
                raise ValueError(f"an #elif that cannot be settled after one that was: {line.strip()}")
            frame[1], frame[2] = not frame[2] and value, frame[2] or value
        elif word == "else":
            frame[1], frame[2] = not frame[2], True
        else:
            stack.pop()
    if stack:
        raise ValueError("an #if without its #endif")
    return out


_NOT_A_FUNCTION = (" ", "}", "#", "namespace", "struct", "using", "extern", "typedef")


def _chunks(lines):
    """The text as top-level pieces: ("function", name, lines) from a definition's first line (its
    template line, if any) to the `}` that closes it at the start of a line (or one line, braces
    balanced); ("macro", name, [line]); ("constant", name, [line]) for a one-name `inline
    constexpr`; ("other", None, [line]) for the rest, always kept."""
    i = 0
    while i < len(lines):
        line = lines[i]
        macro = re.match(r"#define\s+(\w+)", line)
        constant = re.match(r"inline constexpr [\w:]+ (\w+) = [^,]*;$", line)
        if macro or constant:
            yield ("macro" if macro else "constant", (macro or constant).group(1), [line])
            i += 1
            continue
        kind = re.match(r"(?:class|struct) (\w+)[^;]*\{$", line)
        if kind:  # a type's definition, to its `};` at the start of a line
            end = lines.index("};", i + 1)
            yield ("type", kind.group(1), lines[i:end + 1])
            i = end + 1
            continue
        j = i + 1 if line.startswith("template") else i
        if line.startswith(_NOT_A_FUNCTION) or j >= len(lines) or lines[j].startswith(_NOT_A_FUNCTION):
            yield ("other", None, [line])
            i += 1
            continue
        while j < len(lines) and "{" not in lines[j] and not lines[j].endswith(";"):
            j += 1  # a signature over several lines
        name = re.search(r"(\w+)\s*\(", "\n".join(lines[i:j + 1]))
        if j >= len(lines) or "{" not in lines[j] or name is None:
            yield ("other", None, [line])
            i += 1
            continue
        end = j
        if lines[j].count("{") != lines[j].count("}"):
            end = lines.index("}", j + 1)
        yield ("function", name.group(1), lines[i:end + 1])
        i = end + 1


def drop_unreachable(lines):
    """Functions, macros and constants that nothing kept names are dropped, until none is."""
    chunks = list(_chunks(lines))
    while True:
        kept_text = "\n".join("\n".join(c[2]) for c in chunks)
        words = {}
        for w in re.findall(r"\w+", kept_text):
            words[w] = words.get(w, 0) + 1
        dead = [c for c in chunks if c[0] != "other" and words.get(c[1], 0) <= sum(
            len(re.findall(r"\b%s\b" % re.escape(c[1]), l)) for l in c[2])]
        if not dead:
            return [l for c in chunks for l in c[2]]
        chunks = [c for c in chunks if c not in dead]


def kernel_text(root, tight=True):
    """The entry's CUDA text; tight=False: without tighten's layout (the tests compare the tokens)."""
    seen = set()
    lines = inline_includes(PRELUDE, root, seen) + inline_includes(ROOT_FILE, root, seen)
    lines = strip_comments("\n".join(lines)).splitlines()
    lines = [l.rstrip() for l in settle_conditionals(lines) if l.strip()]
    lines = [re.sub(r"^(?: {4})+", lambda m: " " * (len(m.group(0)) // 4), l) for l in lines]
    lines = [tighten(l) if tight else l for l in drop_unreachable(lines)]
    return "\n".join(lines) + "\n"


def cpp_string(name, text):
    """A C++ function returning the text (raw string literals of at most 8 KB each: one compiler's limit)."""
    delim = "RGX"
    assert ")" + delim + '"' not in text
    parts = [text[i:i + 8000] for i in range(0, len(text), 8000)] or [""]
    body = "\n".join(f'R"{delim}({p}){delim}"' for p in parts)
    return f"const char* {name}() {{\n    return\n{body};\n}}\n"


def main(argv):
    root, out = argv[1], argv[2]
    with open(os.path.join(root, "engine", "export", "entry.py.in")) as f:
        template = f.read()
    text = ("// Written by engine/export/kernel_text.py at build time; do not edit.\n"
            '#include "engine/export/entry_sources.hpp"\n\nnamespace revgraph::exporter {\n\n'
            + cpp_string("kernel_text", kernel_text(root)) + "\n" + cpp_string("entry_template", template)
            + "\n}  // namespace revgraph::exporter\n")
    if os.path.exists(out):
        with open(out) as f:
            if f.read() == text:
                return  # unchanged: nothing downstream rebuilds
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)


if __name__ == "__main__":
    if len(sys.argv) == 2:  # by hand: the text itself
        sys.stdout.write(kernel_text(sys.argv[1]))
    else:
        main(sys.argv)
