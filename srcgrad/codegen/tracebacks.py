"""An exception raised while a gradient runs names the user's line, not only the generated one.

The generated code has a file of its own (loader.py: in ``linecache``, and
written to disk here, when an exception first passes through it), so a
traceback shows its lines. Each generated line that computes a user statement knows that
statement's origin (file, line, function: ``loader.origin_at``). ``locate(exc)``
inserts into the exception's traceback, after each generated frame, a frame at
the user's line, so the traceback reads

    File "/tmp/srcgrad-.../loss_0.py", line 6, in loss_forward
      inv_m = np.linalg.inv(m_2)
    File "/home/me/helpers.py", line 12, in invert
      return np.linalg.inv(m)

and ``traceback``, IDEs and the default excepthook show the user's source text
(the frame is the Jinja2 technique: a one-statement code object compiled with
the user's file name and line, raising the exception). It runs only when an
exception escapes a gradient call (api.py): the call itself costs nothing more.
"""

import sys

from srcgrad.codegen import loader
from srcgrad.errors import SrcgradError

_MARK = "__srcgrad_user_line__"   # in the globals of an inserted frame


def locate(exc):
    """Insert the user's frame after each generated frame of ``exc``'s traceback."""
    try:
        tb = exc.__traceback__
        found, generated = [], []
        while tb is not None:
            nxt = tb.tb_next
            filename = tb.tb_frame.f_code.co_filename
            loader.on_disk(filename)
            origin = loader.origin_at(filename, tb.tb_lineno)
            if loader.has_origins(filename):
                _place(exc, filename, tb.tb_lineno)
                generated.append((filename, tb.tb_lineno))
            if origin is not None and not (nxt is not None and _MARK in nxt.tb_frame.f_globals):
                user = _user_frame(exc, origin)
                if user is not None:
                    user.tb_next = nxt
                    tb.tb_next = user
                    found.append((tb.tb_frame.f_code.co_name, origin))
            tb = nxt
        if generated and isinstance(exc, SrcgradError) and exc.filename is None:
            _at_user_line(exc, *generated[-1])
        if found and hasattr(exc, "add_note"):
            name, origin = found[-1]
            exc.add_note(f"srcgrad: raised by the generated code {name} at your line "
                         f"{origin.filename}:{origin.lineno} (the frame after it)")
    except Exception:   # never hide the user's exception behind one of ours
        pass


def _place(exc, filename, lineno):
    """A refusal a run-time helper raised without a location (``rt.norm_vjp_tangent`` at a
    zero vector) in a gradient's derivative (code generated from generated code) is
    placed at the generated line that called it, innermost last: the callers'
    ``in_user_code`` then says it of the user's line."""
    if not isinstance(exc, SrcgradError) or exc.filename is not None and not getattr(exc, "_placed", False):
        return
    origin = _nearest_origin(filename, lineno)
    if origin is not None and loader.has_origins(origin.filename):
        exc.filename, exc.lineno, exc._placed = filename, lineno, True
        exc.args = (exc._format(),)


def _at_user_line(exc, filename, lineno):
    """A refusal a run-time helper raised without a location (``np.cov(m, y)``'s gradient)
    names the user's line of the generated statement that called it (innermost; a
    statement of a backward sweep has the origin of the forward one it follows)."""
    origin = _nearest_origin(filename, lineno)
    if origin is not None and not loader.has_origins(origin.filename):
        exc.filename, exc.lineno, exc.source_line = origin.filename, origin.lineno, origin.source_line
        exc.args = (exc._format(),)


def _nearest_origin(filename, lineno):
    return next((o for o in (loader.origin_at(filename, k) for k in range(lineno, 0, -1))
                 if o is not None), None)


def _user_frame(exc, origin):
    """A traceback entry at ``origin`` (its function's name), the exception raised there."""
    # Indented as the user's line and as long, so no caret marks a part of it.
    line = origin.source_line.rstrip()
    text = line.lstrip()
    indent = len(line) - len(text)
    statement = "raise" + " " * max(len(text) - 6, 1) + "_"
    source = "\n" * (origin.lineno - 1) + statement
    if indent and origin.lineno > 1:
        source = "\n" * (origin.lineno - 2) + "if 1:\n" + " " * indent + statement
    code = compile(source, origin.filename, "exec")
    code = code.replace(co_name=origin.function or "<module>")
    saved = exc.__traceback__, exc.__context__, exc.__suppress_context__
    namespace = {"__name__": "srcgrad.user_line", _MARK: True, "_": exc}
    try:
        exec(code, namespace)
    except BaseException:
        tb = sys.exc_info()[2]
    else:
        return None
    finally:
        exc.__traceback__, exc.__context__, exc.__suppress_context__ = saved
        namespace["_"] = None
    while tb is not None and tb.tb_frame.f_code is not code:
        tb = tb.tb_next
    return tb
