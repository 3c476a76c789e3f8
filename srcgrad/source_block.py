"""A def's lines, as ``inspect.getblock`` finds them, without its tokenizer (pure Python
in 3.11: reading a 30-line function's block took about as long as parsing it four
times, some 1.5% of a first compile).

A def whose header is one line that is certainly all of its logical line (it ends with
``:`` and holds no string, comment, backslash or unbalanced bracket) ends at the first
later line of code indented no deeper than it (a blank or comment line never ends it),
less the blank lines and the comments indented less than its body at its end: where
that text parses, every line ending it early would have left a string, a bracket or a
continuation open, so the tokenizer ends the block there too. Anything else (a
decorator, a lambda, tabs, a header over several lines, text that does not parse) is
left to ``inspect.getblock``. The tree parsed to check is kept for ``parsed``, which the
parse of the same text asks next.
"""

import ast
import inspect
import textwrap
import threading

# (the dedented text of the last block found, its ast.Module), per thread
_last = threading.local()


def block(lines):
    """``inspect.getblock(lines)`` (``lines`` from a ``def`` on)."""
    found = _quick(lines)
    return inspect.getblock(lines) if found is None else found


def parsed(text):
    """``ast.parse(text)``: the tree ``block`` made where ``text`` is its last block's."""
    found = getattr(_last, "block", None)
    if found is not None and found[0] == text:
        _last.block = None   # (a tree is handed out once: its reader may change it)
        return found[1]
    return ast.parse(text)


def _quick(lines):
    if not lines:
        return None
    header = lines[0]
    content = header.lstrip(" ")
    if not (content.startswith("def ") or content.startswith("async def ")):
        return None
    indent = len(header) - len(content)
    text = content.rstrip()
    if not text.endswith(":") or any(c in text for c in "#'\"\\\t\f") \
            or text.count("(") != text.count(")") or text.count("[") != text.count("]") \
            or text.count("{") != text.count("}"):
        return None
    body_col, end = None, len(lines)
    for k in range(1, len(lines)):
        line = lines[k]
        content = line.lstrip(" ")
        if not content.strip():
            continue   # blank
        if content[0].isspace():
            return None   # a tab or form feed in the indentation: columns the tokenizer's way
        if content[0] == "#":
            continue
        col = len(line) - len(content)
        if col <= indent:
            end = k
            break
        if body_col is None:
            body_col = col
    if body_col is None:
        return None
    while end > 1:   # the blank lines and the comments less indented than the body, at its end
        line = lines[end - 1]
        content = line.lstrip(" ")
        if content.strip() and not (content[0] == "#" and len(line) - len(content) < body_col):
            break
        end -= 1
    found = lines[:end]
    text = textwrap.dedent("".join(found))
    try:
        module = ast.parse(text)
    except Exception:   # (ended early inside a string, a bracket or a continuation)
        return None
    _last.block = (text, module)
    return found
