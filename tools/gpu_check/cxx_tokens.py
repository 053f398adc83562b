"""C and C++ source as its tokens: comments dropped, whitespace between tokens ignored, so that the
GPU path's digest (gpu_path.py) moves with the code and not with how it is written or explained.

Why a lexer of our own: the digest needs *token* equality. The compiler's comment stripper
(`g++ -fpreprocessed -E`) removes comments but keeps the layout, and collapsing its whitespace
blindly would also rewrite string literals ("a  b" and "a b" are different programs) and could glue
tokens (`a - -b` is not `a --b`). No Debian library tokenises C++ for Python without a whole
compiler front end (libclang's bindings tie the digest to one LLVM version's behaviour). The rules
below are the language's own lexical rules (translation phases 1-3), on the parts our sources use:

- a backslash-newline is a line splice, removed first (phase 2);
- `//` and `/* */` comments are dropped (not inside string or character literals);
- string and character literals with their encoding prefixes (u8, u, U, L) and escapes, and raw
  strings R"delim(...)delim", are one token each, kept byte for byte;
- pp-numbers keep their digit separators (1'000) and exponent signs (1e-5f) inside one token;
- punctuators are matched longest first (`>>=` before `>>` before `>`), so re-spacing never
  merges or splits an operator;
- a preprocessor directive ends at its newline: the one place a line break means something, kept
  as a token of its own ("\\n").

What stays significant, on purpose: every token's spelling (a renamed variable, a changed literal,
`> >` against `>>` in a template) — a difference there is taken as a change to the code, the safe
side for evidence. test/tools/test_gpu_check_currency.py holds the lexer to the compiler: every
engine/ and graphs/ file tokenises to g++'s own comment-stripped text, and clang-format's
re-layout of every GPU-path file leaves its tokens as they were.
"""

import re

# Longest first: maximal munch.
_PUNCTUATORS = sorted([
    "%:%:", "...", "<<=", ">>=", "->*", "<=>",
    "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=",
    "&=", "|=", "^=", "##", ".*", "<:", ":>", "<%", "%>", "%:",
    "{", "}", "[", "]", "(", ")", ";", ":", "?", ".", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!",
    "=", "<", ">", ",", "#", "@", "$", "\\", "`",
], key=len, reverse=True)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_PREFIXES = ("u8", "u", "U", "L")  # encoding prefixes of string and character literals
_WS = " \t\f\v\r"

NEWLINE = "\n"  # the token that ends a preprocessor directive


class LexError(ValueError):
    """A source the lexer cannot read (an unterminated literal or comment): one line, with where."""


def _quoted_end(text, start, quote):
    """Index just past the literal whose opening quote is at text[start]."""
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i + 1
        if c == "\n":
            break
        i += 1
    raise LexError(f"unterminated {'string' if quote == chr(34) else 'character'} literal at offset {start}")


def _raw_end(text, quote_at):
    """Index just past the raw string whose '"' is at text[quote_at] (R"delim( ... )delim")."""
    paren = text.find("(", quote_at)
    if paren < 0 or paren - quote_at - 1 > 16:
        raise LexError(f"malformed raw string at offset {quote_at}")
    close = ")" + text[quote_at + 1:paren] + '"'
    end = text.find(close, paren + 1)
    if end < 0:
        raise LexError(f"unterminated raw string at offset {quote_at}")
    return end + len(close)


def _number_end(text, i):
    """Index just past the pp-number starting at text[i] (a digit, or '.' then a digit)."""
    i += 1
    while i < len(text):
        c = text[i]
        if c in "eEpP" and i + 1 < len(text) and text[i + 1] in "+-":
            i += 2
        elif c.isalnum() or c in "_.":
            i += 1
        elif c == "'" and i + 1 < len(text) and (text[i + 1].isalnum() or text[i + 1] == "_"):
            i += 2  # a digit separator: 1'000
        else:
            break
    return i


def tokens(text):
    """The token list of C/C++ source text (see the module's rules); NEWLINE ends each directive."""
    text = text.replace("\r\n", "\n").replace("\\\n", "")
    out = []
    i, n = 0, len(text)
    line_start = True  # only whitespace or comments since the last newline
    in_directive = False
    while i < n:
        c = text[i]
        if c == "\n":
            if in_directive:
                out.append(NEWLINE)
                in_directive = False
            line_start = True
            i += 1
            continue
        if c in _WS:
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise LexError(f"unterminated comment at offset {i}")
            i = end + 2
            continue
        if line_start and (c == "#" or text.startswith("%:", i)):
            in_directive = True
        line_start = False
        m = _IDENT.match(text, i)
        if m:
            word, j = m.group(0), m.end()
            if j < n and text[j] in "\"'":
                if text[j] == '"' and word in ("R", "u8R", "uR", "UR", "LR"):
                    end = _raw_end(text, j)
                    out.append(text[i:end])
                    i = end
                    continue
                if word in _PREFIXES:
                    end = _quoted_end(text, j, text[j])
                    out.append(text[i:end])
                    i = end
                    continue
            out.append(word)
            i = j
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            end = _number_end(text, i)
            out.append(text[i:end])
            i = end
            continue
        if c in "\"'":
            end = _quoted_end(text, i, c)
            out.append(text[i:end])
            i = end
            continue
        for p in _PUNCTUATORS:
            if text.startswith(p, i):
                out.append(p)
                i += len(p)
                break
        else:
            out.append(c)  # any other character stands for itself
            i += 1
    if in_directive:
        out.append(NEWLINE)
    return out


def token_bytes(text):
    """The tokens as one unambiguous byte string (each token length-prefixed), for hashing."""
    return "".join(f"{len(t)}:{t}" for t in tokens(text)).encode("utf-8")
