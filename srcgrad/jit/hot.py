"""The jit gradient's common calls as one generated function each (fast_call.py's form for jit).

After a call that compiled and ran, dispatch._Entry.call records grad's common call (one
gradient, no seed) or the seeded call (``grad_outputs=``, one gradient, no value) for
those argument ranks. The next calls of those ranks run ``hot(args, grad_outputs)``: the
argument count and ranks, the guard's condition written in (srcgrad/guard.py), Numba's
dispatch (which refuses types it has not compiled) and the check that the result is
final; anything else returns ``DECLINED`` and takes dispatch.py's general path.

The compiled code writes a small float64 gradient (at most ``SMALL`` elements) into an
array allocated here (``buffer``; translate.py's ``_sg_buf``) and returns None in its
place: Numba boxes an array it made through a Python call (about 0.4 us, a tenth of
W2's hand-written gradient) and an argument it only unboxes. The seeded call asks for
no output (``_sg_keep`` False: not boxed) and compares its shape with the seed's in Numba.
"""

import numpy

from srcgrad.analysis.ranks import checked_rank_key, rank_key

DECLINED = object()
SMALL = 512   # elements: at most this, a copy into the caller's array costs less than boxing
_F64 = numpy.dtype(numpy.float64)
_NO_BUFFER = {n: (0,) * n for n in range(33)}   # the shape of a buffer not written into


def buffer(like):
    """A new float64 array the first gradient (of input ``like``) is written into: of
    ``like``'s shape where it is a small float64 array, else empty (then not written;
    its number of dimensions keeps one Numba signature per input type)."""
    if type(like) is numpy.ndarray:
        if like.dtype is _F64 and like.size <= SMALL:
            return numpy.empty(like.shape)
        return numpy.empty(_NO_BUFFER[like.ndim])
    return numpy.empty(_NO_BUFFER[1])


_C, _F, _WRITEABLE = 0x1, 0x2, 0x400   # ndarray.flags.num bits
NOARG = object()   # a positional parameter of a call form not given


def exact_checks(names, signature, keys):
    """Conditions on the arguments ``names`` under which Numba's dispatcher would pick
    the overload of ``signature`` (Numba types, one per name): the same type, dtype
    (identical dtype object), number of dimensions, layout and writeability (what
    numba.typeof reads), so that its entry point may be called directly; None where an
    argument is of a type this does not check (then the dispatcher is called). ``keys``:
    the rank keys the call checked already (an int: an ndarray of that many dimensions)."""
    specs = exact_specs(signature)
    if specs is None:
        return None
    checks = []
    for name, spec, key in zip(names, specs, keys):
        if spec[0] == "array":
            _, ndim, dtype, mask, want = spec
            known = type(key) is int and key == ndim   # type and ndim checked already
            checks.append(("" if known else f"type({name}) is ndarray and {name}.ndim == {ndim} and ")
                          + f"{name}.dtype is {_DTYPE_NAMES[dtype]} and ({name}.flags.num & {mask}) == {want}")
        else:
            checks.append(f"type({name}) is {spec[0]}")
    return checks


_DTYPE_NAMES = {numpy.dtype(numpy.float64): "F64", numpy.dtype(numpy.int64): "I64",
                numpy.dtype(numpy.bool_): "B1"}


def exact_specs(signature):
    """``exact_checks``'s conditions as data: per Numba type, ``("array", ndim, dtype,
    mask, want)`` (``(flags.num & mask) == want``), ``("float",)`` or ``("bool",)``; None
    where one is of another type."""
    from numba import types
    specs = []
    for t in signature:
        if isinstance(t, types.Array) and type(t) is types.Array and t.aligned and \
                t.dtype in (types.float64, types.int64, types.boolean):
            # (numba.typeof does not look at alignment: every array it types is "aligned")
            mask = _C | _WRITEABLE | (0 if t.layout == "C" else _F)
            want = {"C": _C, "F": _F, "A": 0}[t.layout] | (_WRITEABLE if t.mutable else 0)
            dtype = {types.float64: _F64, types.int64: numpy.dtype(numpy.int64),
                     types.boolean: numpy.dtype(numpy.bool_)}[t.dtype]
            specs.append(("array", t.ndim, dtype, mask, want))
        elif t == types.float64:
            specs.append(("float",))
        elif t == types.boolean:
            specs.append(("bool",))
        else:
            return None
    return specs


def hot_function(guard, fn, keys, position, dispatcher, seeded, finish, signature=None,
                 form="hot", general=None, numbers=((), {}), number_forms=None):
    """``hot(args, grad_outputs)`` for arguments of rank keys ``keys`` whose gradient at
    ``position`` is the compiled code's one gradient (its source: ``__source__``).
    ``finish(args, grad_outputs, grads)``: dispatch's finish of grad's gradients
    that are not final. ``signature``: the Numba types of the call that compiled (its
    entry point is called where the arguments are of those types, ``exact_checks``).
    ``form="call"`` (not seeded): ``__call__(self, *args, grad_outputs=None, **kwargs)``
    itself, which runs ``general(self, args, grad_outputs, kwargs)`` for a call it does
    not take (a JitGradFunction's class call: no call layer between the user and this).
    ``numbers``: (conditions, namespace) that the numbers compiled in as constants are
    unchanged (translate.frozen_checks), checked with the guard; ``number_forms``: the
    same as data (names.frozen_forms). The call form is a C ``Entry`` (``c_entry``) where
    the module is built and takes these arguments; it runs this Python function for the
    calls it does not take (its ``python``)."""
    names = [f"a{k}" for k in range(len(keys))]
    call = ", ".join(names)
    like = names[position]
    if form == "call":
        assert not seeded
        lines = [f"def __call__(self, {', '.join(n + '=NOARG' for n in names)}, /, *rest, "
                 "grad_outputs=None, **kwargs):",
                 "    if rest or kwargs or grad_outputs is not None:",
                 f"        return decline(self, ({call},), rest, grad_outputs, kwargs)"]
        declined = f"return decline(self, ({call},), rest, grad_outputs, kwargs)"
        args = f"({call},)"
    else:
        lines = ["def hot(args, grad_outputs):",
                 "    try:",
                 f"        {call}, = args",
                 "    except ValueError:   # another number of arguments",
                 "        return DECLINED"]
        declined = "return DECLINED"
        args = "args"
    checks = [f"{names[-1]} is not NOARG"] if form == "call" else []   # all given
    for k, key in enumerate(keys):
        if type(key) is int and key > 0:
            checks.append(f"type({names[k]}) is ndarray and {names[k]}.ndim == {key}" + (
                f" and {names[k]}.dtype.kind == 'f'" if k == position else ""))   # (an int
            # array's gradient is refused by the general path, as by the NumPy gradient)
        else:
            checks.append(f"rank_key({names[k]}) == KEYS[{k}]")
    if form != "call":
        checks.append("(type(grad_outputs) is ndarray or type(grad_outputs) is float)" if seeded
                      else "grad_outputs is None")
    lines += ["    if not (" + "\n            and ".join(checks) + "):",
              f"        {declined}",
              "    try:",
              "        holds = (" + "\n                and ".join(
                  [guard.condition] + list(numbers[0])).replace("\n", "\n    ") + ")",
              "    except Exception:   # an emptied cell, an attribute that raises",
              "        holds = False",
              "    if not holds:",
              f"        {declined}"]
    rank = keys[position]
    if type(rank) is int and rank > 0:   # an array (checked above): buffer() inline
        lines += [f"    if {like}.dtype is F64 and {like}.size <= SMALL:",
                  f"        buf = empty({f'len({like})' if rank == 1 else f'{like}.shape'})",
                  "    else:",
                  f"        buf = empty({(0,) * rank})"]
    else:
        lines += [f"    buf = buffer({like})"]
    exact = None
    entry_point = None
    if signature is not None and not seeded and signature in dispatcher.overloads:
        exact = exact_checks(names, signature[:len(names)], keys)
        buf_type = signature[len(names)]
        from numba import types
        if exact is not None and not (type(buf_type) is types.Array and buf_type.dtype ==
                                      types.float64 and buf_type.layout == "C" and buf_type.mutable
                                      and buf_type.aligned and buf_type.ndim ==
                                      (rank if type(rank) is int and rank > 0 else 1)):
            exact = None
        if exact is not None:
            entry_point = dispatcher.overloads[signature].entry_point
    lines += ["    try:"]
    if exact:   # Numba's dispatcher would choose this overload: its entry point directly
        lines += ["        if (" + "\n                and ".join(exact) + "):",
                  f"            result = entry_point({call}, buf)",
                  "        else:",
                  f"            result = dispatcher({call}, buf)"]
    else:
        lines += [f"        result = dispatcher({call}, grad_outputs, buf, False)" if seeded else
                  f"        result = dispatcher({call}, buf)"]
    lines += ["    except Exception:   # the general path runs it again (and raises, warns)",
              f"        {declined}"]
    if seeded:
        lines += ["    if not result[1]:   # the output's shape is not the seed's: its error",
                  "        return DECLINED",
                  "    g = result[2][0]"]
    else:
        start = len(lines)   # the end of the call from here (the C entry's ``after``)
        lines += ["    g = result[0]"]
    lines += ["    if g is None:",
              "        return buf",
              "    if type(g) is ndarray:",
              f"        if type({like}) is ndarray and g.shape == {like}.shape and "
              f"g.dtype is {like}.dtype and g.flags.writeable:",
              "            return g",
              f"    elif type(g) is float and type({like}) is float:",
              "        return g"]
    tail = len(lines)
    lines += [f"    {declined}" if seeded else f"    return finish({args}, grad_outputs, result)"]
    source = "\n".join(lines) + "\n"
    namespace = dict(guard.namespace)
    namespace.update(numbers[1])
    namespace.update(fn=fn, DECLINED=DECLINED, ndarray=numpy.ndarray, F64=_F64, SMALL=SMALL,
                     I64=numpy.dtype(numpy.int64), B1=numpy.dtype(numpy.bool_), NOARG=NOARG,
                     empty=numpy.empty, buffer=buffer, rank_key=checked_rank_key, KEYS=keys,
                     dispatcher=dispatcher, finish=finish, entry_point=entry_point,
                     decline=_decline(general))
    exec(compile(source, "<hot call of a jit gradient>", "exec"), namespace)
    hot = namespace["__call__" if form == "call" else "hot"]
    hot.__source__ = source
    if form == "call" and exact and entry_point is not None and number_forms is not None:
        # the end of the Python form from ``g = result[0]``, for the C entry's results
        after = ["def after(args, result, buf):", f"    {call}, = args"] + \
            lines[start:tail] + ["    return finish(args, None, result)"]
        exec(compile("\n".join(after) + "\n", "<hot call of a jit gradient>", "exec"), namespace)
        entry = c_entry(hot, namespace, guard, numbers, number_forms, keys, position,
                        signature[:len(names)], entry_point, general)
        if entry is not None:
            return entry
    return hot


def _decline(general):
    """The call form's way to the general path: the arguments given (not the NOARG of
    those not given) and the rest."""
    def decline(self, given, rest, grad_outputs, kwargs):
        args = tuple(a for a in given if a is not NOARG) + rest
        return general(self, args, grad_outputs, kwargs)
    return decline


def _load_c():
    """srcgrad/jit/_centry.c where it was built (setup.py: optional) and its view of NumPy's
    array struct reads what ndarray's attributes say; else None (the Python entry).
    SRCGRAD_JIT_C=0 turns it off."""
    import importlib
    import os
    if os.environ.get("SRCGRAD_JIT_C", "1") == "0":
        return None
    try:
        _centry = importlib.import_module("srcgrad.jit._centry")   # compiled: no .py to import
    except ImportError:
        return None
    base = numpy.arange(24.0).reshape(4, 6)
    readonly = numpy.arange(3, dtype=numpy.int64)
    readonly.flags.writeable = False
    for a in (base, base.T, base[::2, 1::3], readonly, numpy.zeros(()), numpy.ones(7, bool),
              numpy.zeros((2, 3, 4), numpy.float32)):
        nd, shape, dtype, flags = _centry.probe(a)
        if not (nd == a.ndim and shape == a.shape and dtype is a.dtype and flags == a.flags.num):
            return None
    return _centry


C = _load_c()   # the C entry's module, or None
_C_OPS = None if C is None else {
    "func": C.OP_FUNC, "list_eq": C.OP_LIST_EQ, "dict_is": C.OP_DICT_IS,
    "dict_get_is": C.OP_DICT_GET_IS, "not_in": C.OP_NOT_IN, "cell_is": C.OP_CELL_IS,
    "cell_missing": C.OP_CELL_MISSING, "dict_num": C.OP_DICT_NUM, "cell_num": C.OP_CELL_NUM}


def c_entry(python, namespace, guard, numbers, number_forms, keys, position, signature,
            entry_point, general):
    """The C ``Entry`` of hot.py's call form ``python`` (see _centry.c), or None where the
    module is not built or an argument is of a kind it does not check. Each line of the
    guard (and of the frozen numbers) is a C operation where its objects are of the exact
    types the operation reads (function, list, dict with str keys, cell), else the line
    itself as a small Python function."""
    if C is None:
        return None
    specs = exact_specs(signature)
    if specs is None or len(specs) != len(keys):
        return None
    args = []
    for spec, key in zip(specs, keys):
        if spec[0] == "array":
            if not (type(key) is int and key == spec[1]):
                return None
            args.append((C.ARG_ARRAY, spec[1], spec[2], spec[3], spec[4]))
        elif spec[0] == "float":
            if not (type(key) is int and key == 0):
                return None
            args.append((C.ARG_FLOAT, 0, None, 0, 0))
        else:
            if key is not rank_key(True):
                return None
            args.append((C.ARG_BOOL, 0, None, 0, 0))
    ops = []
    lines = list(guard.lines) + list(numbers[0])
    forms = list(guard.forms) + list(number_forms)
    if len(lines) != len(forms):
        return None
    for line, form in zip(lines, forms):
        line_ops = _c_ops(form, namespace["fn"])
        if line_ops is None:   # this line as Python: True where it holds, False where not
            source = (f"def line():\n    try:\n        return bool({line})\n"
                      "    except Exception:\n        return False\n")
            exec(compile(source, "<hot call of a jit gradient>", "exec"), namespace)
            line_ops = [(C.OP_PY, 0, namespace.pop("line"))]
        ops += line_ops
    like = specs[position]
    no_buffer = (0,) * (like[1] if like[0] == "array" else 1)

    def rerun(self, args):   # the compiled code raised: the general path runs it again
        return general(self, args, None, {})
    entry = C.Entry((python, rerun, namespace["after"], entry_point, numpy.empty, numpy.ndarray,
                     _F64, len(keys), position, SMALL, tuple(args), tuple(ops), no_buffer))
    entry.__source__ = python.__source__
    return entry


def _c_ops(form, fn):
    """A guard line's operations (guard.py's ``forms``) in _centry.c's terms, or None."""
    if form is None:
        return None
    ops = []
    for name, *objects in form:
        if name == "func":
            f = fn if objects[0] is None else objects[0]
            if type(f) is not type(_c_ops):
                return None
            ops.append((C.OP_FUNC, 0, f, *objects[1:]))
            continue
        if name == "list_eq":
            lst, index, value = objects
            if type(lst) is not list or type(value) is not int or type(index) is not int:
                return None
            ops.append((C.OP_LIST_EQ, index, lst, value))
            continue
        where = objects[0]
        if name.startswith("cell"):
            if type(where).__name__ != "cell":
                return None
        elif type(where) is not dict or type(objects[1]) is not str:
            return None
        ops.append((_C_OPS[name], 0, *objects))
    return ops
