"""The tape of a gradient read again, as ordinary list code with its own rules, so that
srcgrad differentiates its generated code any number of times.

A gradient that records a tape is read again (grad of grad, hvp: pipeline.compose_gradient
with ``for_transform``) as list code: ``tape.append(v)`` pushes and ``v = rt.tape_pop(tape)``
pops (a discarded ``tape.pop()``, the reversal of an append, is spelled as one too). Reverse
mode reverses a pop by appending the value back and giving the list's adjoint its item's
(reverse.py: ``dtape = rt.tape_unpop(dtape, dv, tape)``); forward mode pops the tangent tape
beside it (``linear(rt.tape_pop)``). The derivative of order n calls ``rt.tape_unpop``, so
order n + 1 needs its adjoint and tangent; these close the set:

* ``tape_unpop(dtape, dv, tape)``: the list adjoint ``dtape`` (items right-aligned: a shorter
  one, or a zero, has zeros first) grown by ``dv``, as long as ``tape``;
* ``tape_rest(dr, dtape)`` and ``tape_last(dr)``: its adjoints, the part of ``dr`` that is
  ``dtape``'s and ``dr``'s last item; their adjoints are ``tape_unpop`` again.

Each is linear in the adjoints it moves, so its tangent is itself on the tangents.
"""

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, linear, returns_sequence


@rt.helper
def tape_pop(tape):
    """The tape's last value, taken off it (``pop()`` of a gradient read again)."""
    return tape.pop()


def _items(seq):
    """The items of a list adjoint (a zero has none)."""
    return list(seq) if isinstance(seq, (list, tuple)) else []


@rt.helper
def tape_unpop(dtape, dv, tape):
    """Adjoint of ``v = tape_pop(tape)`` (``tape`` restored): the list's adjoint with
    ``dv`` for its last item, zeros for items that had none. A zero for ``tape`` (an
    adjoint read as the list, in ``tape_rest``'s rule) gives a zero."""
    if not isinstance(tape, (list, tuple)):
        return 0.0
    rest = _items(dtape)[-(len(tape) - 1):] if len(tape) > 1 else []
    return [0.0] * (len(tape) - 1 - len(rest)) + rest + [0.0 if dv is None else dv]


@rt.helper
def tape_rest(dr, dtape):
    """The adjoint of ``dtape`` in ``tape_unpop(dtape, dv, tape)`` from the result's ``dr``:
    its items before the last, as many as ``dtape`` has (a zero where it is one)."""
    if not isinstance(dtape, (list, tuple)):
        return 0.0
    n = len(dtape)
    part = _items(dr)[:-1][-n:] if n else []
    return [0.0] * (n - len(part)) + part


@rt.helper
def tape_last(dr):
    """The adjoint of ``dv`` in ``tape_unpop(dtape, dv, tape)``: the last item of ``dr``."""
    items = _items(dr)
    return items[-1] if items else 0.0


returns_sequence(rt.tape_unpop, rt.tape_rest)


@adjoint(rt.tape_unpop, sequences=("dtape",))
def tape_unpop_adjoint(dw, w, dtape, dv, tape):
    return rt.tape_rest(dw, dtape), rt.tape_last(dw), None


@adjoint(rt.tape_rest, sequences=("dr",))
def tape_rest_adjoint(dw, w, dr, dtape):
    return rt.tape_unpop(dw, 0.0, dr), None


@adjoint(rt.tape_last, sequences=("dr",))
def tape_last_adjoint(dw, w, dr):
    return rt.tape_unpop(0.0, dw, dr)


linear(rt.tape_pop, "tape")
linear(rt.tape_unpop, "dtape", "dv", no_tangent=("tape",))
linear(rt.tape_rest, "dr", no_tangent=("dtape",))
linear(rt.tape_last, "dr")
