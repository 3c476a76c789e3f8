"""The text ``sg.source`` returns: the generated code, under a header that says which code it is.

Without example arguments it is the generic code (what a call with keyword arguments
runs); with them, the code the cache holds for arguments like those, which is the code
a call with them runs. Either way the text below the header is the text that was
compiled (the sweeps as they were loaded; a composed function read back from
``linecache``, where the loader registered the lines it compiled).
"""

import inspect
import re
import textwrap

import numpy

from srcgrad import pipeline, pytree


def shown(compiled, args=None, composed=False):
    """``compiled``'s source under its header. ``args``: the example arguments it was
    compiled for (None: the generic code). ``composed``: the one function ``grad``'s
    positional calls run (``composed_function``), where there is one."""
    if args is None:
        text = compiled.shown
        if text is None:   # kept, so that every ask returns the same str
            text = compiled.shown = _generic_header(compiled) + compiled.source
        return text
    function = composed_function(compiled) if composed else None
    if function is not None:
        return _composed_header(compiled, args) + function_source(function)
    return _sweeps_header(compiled, args, composed) + compiled.source


def tangent_program(fn, wrt):
    """``sg.source(fn, wrt, mode="jvp")``: the tangent program (forward_api.py) under its header."""
    from srcgrad import forward_api
    compiled = forward_api.compiled_for_source(fn, wrt)
    header = _comment(f"The tangent program of {getattr(fn, '__qualname__', None) or getattr(fn, '__name__', fn)} (forward mode, "
                      f"sg.jvp) for tangents of {', '.join(compiled.active)}: each statement is "
                      f"followed by its tangent; d{compiled.active[0]} is the tangent of "
                      f"{compiled.active[0]}.")
    return header + compiled.source


def composed_function(compiled):
    """``grad``'s common call of ``compiled`` as one generated function (both sweeps, the
    seed 1 or the default seed: pipeline.compose_gradient), made once and kept in
    ``compiled.gradient`` (fast_call.FastCall runs it); None where the sweeps run as two calls
    (a tuple output, has_aux, fuse=True)."""
    if compiled.gradient_forward is None:
        return None
    if compiled.gradient is None:
        compiled.gradient = pipeline.compose_gradient(compiled, True, only_gradients=True)
    return compiled.gradient


def function_source(function):
    """The lines ``function`` was compiled from, as ``linecache`` holds them (the loader
    indents generated code into a factory: the indentation is taken off)."""
    return textwrap.dedent(inspect.getsource(function))


def describe(args):
    """``args`` in words: ``shapes (3,), (3,) float64``, or each argument's shape and dtype."""
    arrays = [a for a in args if hasattr(a, "shape") and hasattr(a, "dtype")]
    dtypes = {str(a.dtype) for a in arrays}
    if args and len(arrays) == len(args) and len(dtypes) == 1:
        return f"shapes {', '.join(str(tuple(a.shape)) for a in args)} {dtypes.pop()}"
    return ", ".join(_describe_one(a) for a in args)


def _describe_one(value):
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"{tuple(value.shape)} {value.dtype}"
    if isinstance(value, (bool, int, float, complex, numpy.generic)):
        return type(value).__name__
    if value is not None and pytree.is_node(value):
        return f"a {type(value).__name__} of {len(pytree.tree_leaves(value))} leaves"
    return getattr(value, "__qualname__", None) or type(value).__name__


def _comment(text):
    # A shape, "(2, 6)", is not broken across lines.
    text = re.sub(r"\([\d, ]*\)", lambda m: m.group(0).replace(" ", "\0"), text)
    return "".join(f"# {line}".rstrip().replace("\0", " ") + "\n"
                   for line in textwrap.wrap(text, 86)) + "\n"


def _names(compiled):
    first = compiled.forward_for_grad or compiled.forward
    return first.__name__, compiled.forward.__name__, compiled.backward.__name__


def _ranks(compiled):
    if compiled.rank_free:
        return "(nothing in it depends on their ranks: it serves arguments of any rank)"
    return "(and any others of the same ranks and structure)"


def _generic_header(compiled):
    return _comment(
        "srcgrad: the generic code, for arguments of any rank (a call with keyword arguments "
        "runs it). A positional call runs code specialised for its arguments: "
        "sg.source(f, args=...) shows it.")


def _sweeps_header(compiled, args, composed):
    first, forward, backward = _names(compiled)
    text = f"srcgrad: the code that runs for arguments of {describe(args)} {_ranks(compiled)}. "
    text += f"grad runs {first}, then {backward}"
    if compiled.gradient_forward is not None:
        text += " (as one function: sg.source(f, args=..., composed=True))"
    elif composed:
        text += " (as two calls, which it does not compose: a tuple output, has_aux or fuse)"
    if first != forward:
        text += f"; value_and_grad, vjp and grad_outputs= run {forward}, then {backward}"
    return _comment(text + ".")


def _composed_header(compiled, args):
    first, _, backward = _names(compiled)
    return _comment(
        f"srcgrad: the code grad runs for arguments of {describe(args)} {_ranks(compiled)}: "
        f"{first} and {backward} composed into one function (sg.source(f, args=...) shows "
        f"the two sweeps).")
