"""Refusals of code srcgrad generated, said of the user's code.

A gradient read again (grad of grad, ``sg.hvp``/``sg.hessian``, a gradient called
inside a differentiated function: api.py, forward_api.py, hessians.py, nested.py) is
compiled from generated source; what the compiler refuses there is located at a line
of that source. ``in_user_code`` says it of the user's line the generated line computes
(``loader.origin_at``), naming the construct as the user reads it.
"""

import linecache
import re

from srcgrad.codegen import loader

_HINT = ("srcgrad cannot differentiate this gradient again yet; use finite differences of "
         "sg.grad, or write the second derivative by hand.")


def in_user_code(exc, prefix, fn=None, info=None, restate=False):
    """``exc``, refusing code srcgrad generated (a gradient read again: grad of grad,
    hvp/hessian, a gradient inside a differentiated function), said of the user's line
    whose gradient holds what it refused (loader.origin_at), the construct named as the
    user reads it (``rt.<helper>``, not the generated names of its arguments); ``prefix``
    says what was being done. ``fn``/``info``: the user's function, where no generated
    line maps back (hvp); without them an error not in generated code is ``exc`` itself.
    The one mapping api.py, forward_api.py, hessians.py and nested.py share; an error
    it made already is ``exc`` itself, or with ``restate`` the same error said with
    ``prefix`` instead of its own."""
    said = getattr(exc, "refused_as", None)
    if said is not None and not restate:
        return exc
    if said is not None:
        new = type(exc)(prefix + exc.message[len(said):], exc.filename, exc.lineno,
                        exc.col_offset, exc.source_line, exc.hint)
        new.refused_as = prefix
        return new
    if exc.filename and exc.lineno and not loader.is_generated(exc.filename):
        # the user's line already (a run-time check of the user's own gradient, raised
        # while it ran again): said where it stands, not at the function's first line
        if info is None:
            return exc
        new = type(exc)(prefix + exc.message, exc.filename, exc.lineno, exc.col_offset,
                        exc.source_line, exc.hint)
        new.refused_as = prefix
        return new
    origin = _origin(exc.filename, exc.lineno)
    while origin is not None:   # a gradient of generated code (third derivative): its origin's
        deeper = _origin(origin.filename, origin.lineno)
        if deeper is None:
            break
        origin = deeper
    if origin is None and info is None:
        return exc
    name = fn.__qualname__ if fn is not None else origin.function or "f"
    where = (f"{origin.filename}:{origin.lineno}" if origin is not None
             else f"{info.filename}:{info.first_lineno}")
    message = _lines_said_of_user(exc.message.replace("srcgrad.runtime.", "rt."), exc.filename)
    for said, says in (("forward mode needs a jvp for ", "no tangent for "),
                       ("srcgrad has no gradient rule for ", "no gradient rule for ")):
        if message.startswith(said):
            what, _, detail = message[len(said):].partition(", and ")
            message = f"{says}{what}, used by the gradient of {name} at {where}"
            break
    else:
        message = f"{message}, in the gradient of {name} at {where}"
    new = type(exc)(f"{prefix}{message}",
                    origin.filename if origin else info.filename,
                    origin.lineno if origin else info.first_lineno,
                    origin.col_offset if origin else None,
                    origin.source_line if origin else None, _HINT)
    new.refused_as = prefix
    return new


def _origin(filename, lineno):
    """The origin of generated line ``lineno`` (of the guard a statement is nested in)."""
    for line in range(lineno or 0, 0, -1):
        origin = loader.origin_at(filename, line)
        if origin is not None:
            return origin
    return None


def _lines_said_of_user(message, filename):
    """``message`` with each other generated line it quotes (``(line 18: b_item =
    b[::2])``, analysis/aliasing.py) quoted as the user's line it computes."""
    for found in re.finditer(r"\(line (\d+): ", message):
        text = linecache.getline(filename, int(found.group(1))).strip()
        origin = loader.origin_at(filename, int(found.group(1)))
        quoted = f"(line {found.group(1)}: {text})"
        if origin is not None and text and quoted in message:
            message = message.replace(quoted, f"(line {origin.lineno}: {origin.source_line.strip()})")
    return message
