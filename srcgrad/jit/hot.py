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

from srcgrad.analysis.ranks import checked_rank_key

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
    from numba import types
    checks = []
    for name, t, key in zip(names, signature, keys):
        if isinstance(t, types.Array) and type(t) is types.Array and t.aligned and \
                t.dtype in (types.float64, types.int64, types.boolean):
            # (numba.typeof does not look at alignment: every array it types is "aligned")
            mask = _C | _WRITEABLE | (0 if t.layout == "C" else _F)
            want = {"C": _C, "F": _F, "A": 0}[t.layout] | (_WRITEABLE if t.mutable else 0)
            dtype = {types.float64: "F64", types.int64: "I64", types.boolean: "B1"}[t.dtype]
            known = type(key) is int and key == t.ndim   # type and ndim checked already
            checks.append(("" if known else f"type({name}) is ndarray and {name}.ndim == {t.ndim} and ")
                          + f"{name}.dtype is {dtype} and ({name}.flags.num & {mask}) == {want}")
        elif t == types.float64:
            checks.append(f"type({name}) is float")
        elif t == types.boolean:
            checks.append(f"type({name}) is bool")
        else:
            return None
    return checks


def hot_function(guard, fn, keys, position, dispatcher, seeded, finish, signature=None,
                 form="hot", general=None, numbers=((), {})):
    """``hot(args, grad_outputs)`` for arguments of rank keys ``keys`` whose gradient at
    ``position`` is the compiled code's one gradient (its source: ``__source__``).
    ``finish(args, grad_outputs, grads)``: dispatch's finish of grad's gradients
    that are not final. ``signature``: the Numba types of the call that compiled (its
    entry point is called where the arguments are of those types, ``exact_checks``).
    ``form="call"`` (not seeded): ``__call__(self, *args, grad_outputs=None, **kwargs)``
    itself, which runs ``general(self, args, grad_outputs, kwargs)`` for a call it does
    not take (a JitGradFunction's class call: no call layer between the user and this).
    ``numbers``: (conditions, namespace) that the numbers compiled in as constants are
    unchanged (translate.frozen_checks), checked with the guard."""
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
            checks.append(f"type({names[k]}) is ndarray and {names[k]}.ndim == {key}")
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
        lines += ["    g = result[0]"]
    lines += ["    if g is None:",
              "        return buf",
              "    if type(g) is ndarray:",
              f"        if type({like}) is ndarray and g.shape == {like}.shape and "
              f"g.dtype is {like}.dtype and g.flags.writeable:",
              "            return g",
              f"    elif type(g) is float and type({like}) is float:",
              "        return g"]
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
    return hot


def _decline(general):
    """The call form's way to the general path: the arguments given (not the NOARG of
    those not given) and the rest."""
    def decline(self, given, rest, grad_outputs, kwargs):
        args = tuple(a for a in given if a is not NOARG) + rest
        return general(self, args, grad_outputs, kwargs)
    return decline
