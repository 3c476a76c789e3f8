"""The free names of a jit translation (translate.py): each checked and bound in the
namespace the compiled source runs in, or refused. Numbers, NumPy and math (and their
functions) and the builtins Numba knows are bound; a number read from the globals or a
closure is compiled in as a constant and checked at each call (``frozen_checks``); a
global or closure array is a parameter of the compiled function, its value passed at each
call (``global_arrays``); a call of a ``math`` function raises where Python's raises
(``checked_math``). Anything else (a user function, a class) is refused.
"""

import builtins
import math

import gast
import numpy

from srcgrad import anno, optimize
from srcgrad.jit.errors import Refused

Static = anno.Static

BUILTINS = {"range", "len", "abs", "min", "max", "float", "int", "bool", "round", "print",
            "sum", "divmod", "pow", "enumerate", "zip", "slice"}


def global_arrays(function, info, bindings):
    """``(where, name, value)`` of each global or closure NumPy array ``function`` reads
    (``where``: the globals dict, the closure cell, or None for a binding of the function):
    the jit function takes each as a parameter, passed at each call as the NumPy code reads
    it then (Numba would compile a global array in as a constant, its values frozen)."""
    assigned = {a.id for a in function.args.args + function.args.posonlyargs +
                function.args.kwonlyargs}
    assigned |= {node.id for node in gast.walk(function) if isinstance(node, gast.Name) and
                 not isinstance(node.ctx, gast.Load)}
    found = {}
    for node in gast.walk(function):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and \
                node.id not in assigned and node.id not in found:
            value = _resolve(node.id, info, bindings)
            if type(value) is numpy.ndarray:
                where = None if node.id in bindings else info.closure.get(node.id) or info.globals
                found[node.id] = (where, node.id, value)
    return sorted(found.values(), key=lambda t: t[1])


def global_values(arrays):
    """The values of ``Translation.arrays`` now (KeyError or ValueError where one is gone)."""
    out = []
    for where, name, value in arrays:
        out.append(value if where is None else where[name] if isinstance(where, dict)
                   else where.cell_contents)
    return tuple(out)


def checked_math(trees, namespace):
    """Each call of a ``math`` function (``math.log(c)``, or ``log(c)`` of a name bound to
    it) calls builtins_math.checked_math's form instead, which raises where Python's
    raises (Numba's gives NaN or inf): the NumPy gradient then runs that call."""
    from srcgrad.jit.builtins_math import checked_math as checked   # imports numba
    modules = {n for n, v in namespace.items() if v is math}
    for n, v in list(namespace.items()):
        if callable(v) and getattr(v, "__module__", None) == "math":
            namespace[n] = checked(v)
    for tree in trees:
        for node in gast.walk(tree):
            f = getattr(node, "func", None) if isinstance(node, gast.Call) else None
            if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and \
                    f.value.id in modules and callable(getattr(math, f.attr, None)):
                name = "_sg_math_" + f.attr
                namespace[name] = checked(getattr(math, f.attr))
                node.func = _name(name)


def is_builtin(n, body, info, bindings):
    """Whether the name ``n`` read in ``body`` is Python's builtin of that name: bound
    nowhere in it, and not a global, a closure cell or a binding of the function."""
    if any(isinstance(node, gast.Name) and node.id == n and not isinstance(node.ctx, gast.Load)
           for s in body for node in gast.walk(s)):
        return False
    value = _resolve(n, info, bindings)
    return value is _MISSING or value is getattr(builtins, n)


def namespace(function, info, bindings, kernels=(), frozen=None):
    """The globals the jit function reads: each free name checked (Refused otherwise).
    ``frozen``: a list given the numbers read from the function's globals and closure
    cells (``(dict or cell, name, value)``): Numba compiles a global as a constant,
    where the NumPy code reads it at each call (``Translation.frozen``)."""
    assigned = {a.id for a in function.args.args + function.args.posonlyargs + function.args.kwonlyargs}
    for node in gast.walk(function):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load):
            assigned.add(node.id)
    namespace = {"np": numpy}
    origin = None
    for stmt in optimize.walk_statements(function.body):
        origin = anno.getanno(stmt, Static.ORIGIN) or origin
        for node in gast.walk(stmt):
            if not (isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load)):
                continue
            n = node.id
            if n in assigned or n in namespace or n == "_jrt" or n in kernels:
                continue
            value = _resolve(n, info, bindings)
            if value is _MISSING:
                if n in BUILTINS:
                    continue
                raise Refused(f"the name {n}", origin)
            if n in BUILTINS and value is getattr(builtins, n, None):
                continue
            if not _numba_value(value):
                raise Refused(f"the global {n} (a {type(value).__name__})", origin)
            namespace[n] = value
            if frozen is not None and n not in bindings and _is_number(value):
                frozen.append((info.closure[n], n, value) if n in info.closure else
                              (info.globals, n, value))
    return namespace


_MISSING = object()


def _resolve(n, info, bindings):
    if n in bindings:
        return bindings[n]
    if n in info.closure:
        try:
            return info.closure[n].cell_contents
        except ValueError:
            return _MISSING
    if n in info.globals:
        return info.globals[n]
    return _MISSING


def _is_number(value):
    return type(value) in (int, float, bool, complex) or isinstance(value, numpy.number)


def frozen_checks(frozen):
    """(conditions, their namespace): each number of ``frozen`` (``Translation.frozen``)
    is still the value compiled in. A float or an int of the same type and value holds
    (a float 0 by identity only: its sign); anything else by identity. An emptied cell
    or a deleted global raises: the caller treats that as not holding."""
    lines, values = [], {}
    for k, (where, name, value) in enumerate(frozen):
        read = f"_fz_in{k}.cell_contents" if not isinstance(where, dict) else f"_fz_in{k}[{name!r}]"
        values[f"_fz_in{k}"], values[f"_fz_v{k}"] = where, value
        if _by_value(value):
            lines.append(f"type({read}) is {type(value).__name__} and {read} == _fz_v{k}")
        else:
            lines.append(f"{read} is _fz_v{k}")
    return lines, values


def frozen_forms(frozen):
    """``frozen_checks`` as hot.py's C entry checks them (the guard operations of
    srcgrad/jit/_centry.c by name; guard.py's ``forms``): the same reads, the same tests."""
    forms = []
    for where, name, value in frozen:
        if isinstance(where, dict):
            forms.append([("dict_num" if _by_value(value) else "dict_is", where, name, value)])
        else:
            forms.append([("cell_num" if _by_value(value) else "cell_is", where, value)])
    return forms


def _by_value(value):
    """A frozen number compared by type and value (a float 0 and a NaN by identity)."""
    return type(value) in (int, bool) or (type(value) is float and value == value and value != 0)


def _numba_value(value):
    if value is numpy or value is math:
        return True
    if type(value) in (int, float, bool, complex) or isinstance(value, numpy.number):
        return True
    if isinstance(value, numpy.ufunc):
        return True
    return callable(value) and getattr(value, "__module__", "") and (
        value.__module__.startswith("numpy") or value.__module__ == "math")


def _name(n):
    return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)
