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

from srcgrad.analysis.ranks import rank_key

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


def hot_function(guard, fn, keys, position, dispatcher, seeded, finish):
    """``hot(args, grad_outputs)`` for arguments of rank keys ``keys`` whose gradient at
    ``position`` is the compiled code's one gradient (its source: ``__source__``).
    ``finish(args, grad_outputs, grads)``: dispatch's finish of grad's gradients
    that are not final."""
    names = [f"a{k}" for k in range(len(keys))]
    call = ", ".join(names)
    like = names[position]
    lines = ["def hot(args, grad_outputs):",
             "    try:",
             f"        {call}, = args",
             "    except ValueError:   # another number of arguments",
             "        return DECLINED"]
    checks = []
    for k, key in enumerate(keys):
        if type(key) is int and key > 0:
            checks.append(f"type({names[k]}) is ndarray and {names[k]}.ndim == {key}")
        else:
            checks.append(f"rank_key({names[k]}) == KEYS[{k}]")
    checks.append("(type(grad_outputs) is ndarray or type(grad_outputs) is float)" if seeded
                  else "grad_outputs is None")
    lines += ["    if not (" + "\n            and ".join(checks) + "):",
              "        return DECLINED",
              "    try:",
              "        holds = (" + guard.condition.replace("\n", "\n    ") + ")",
              "    except Exception:   # an emptied cell, an attribute that raises",
              "        holds = False",
              "    if not holds:",
              "        return DECLINED"]
    rank = keys[position]
    if type(rank) is int and rank > 0:   # an array (checked above): buffer() inline
        lines += [f"    if {like}.dtype is F64 and {like}.size <= SMALL:",
                  f"        buf = empty({like}.shape)",
                  "    else:",
                  f"        buf = empty({(0,) * rank})"]
    else:
        lines += [f"    buf = buffer({like})"]
    lines += ["    try:",
              f"        result = dispatcher({call}, grad_outputs, buf, False)" if seeded else
              f"        result = dispatcher({call}, buf)",
              "    except Exception:   # the general path runs it again (and raises, warns)",
              "        return DECLINED"]
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
    lines += ["    return DECLINED" if seeded else "    return finish(args, grad_outputs, result)"]
    source = "\n".join(lines) + "\n"
    namespace = dict(guard.namespace)
    namespace.update(fn=fn, DECLINED=DECLINED, ndarray=numpy.ndarray, F64=_F64, SMALL=SMALL,
                     empty=numpy.empty, buffer=buffer, rank_key=rank_key, KEYS=keys,
                     dispatcher=dispatcher, finish=finish)
    exec(compile(source, "<hot call of a jit gradient>", "exec"), namespace)
    hot = namespace["hot"]
    hot.__source__ = source
    return hot
