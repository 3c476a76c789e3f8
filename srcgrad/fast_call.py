"""The common call of a gradient, recorded by its first call and run without re-deciding it.

``GradFunction._call`` (api.py) decides everything a call needs: which compiled gradient
serves these arguments, how to seed it, how to finish what it returns. Its first call
with positional float arguments records a ``FastCall`` (the compiled gradient, the
composed function that runs both sweeps, the positions differentiated) and runs it
(``FastCall.run``: the sweeps are not loaded for it). Later calls run
``FastCall.hot``, one function generated for that gradient, which makes the same checks
as ``FastCall.run`` in a line each: the argument count, the kinds and ranks of the
arguments, the guard's condition (srcgrad/guard.py) written into it, then the gradient
and the check that what it returns is final. Anything else returns ``DECLINED`` and
takes the general path. W4's whole gradient takes about a microsecond, so the call
itself must cost a fraction of that.
"""

import numpy

from srcgrad import pytree, runtime, show
from srcgrad.analysis import fresh as analysis_fresh
from srcgrad.analysis.ranks import INT, checked_rank_key
from srcgrad.call_values import _LEAF_TYPES, _check_seed, _finish_values, distinct
from srcgrad.runtime.arrays import is_cupy_array_type

DECLINED = object()   # the call needs the general path (checks, conversions, recompiling)
_F64 = numpy.dtype(numpy.float64)
_F32 = numpy.dtype(numpy.float32)
_CODES = {}   # the hot call's text -> its code object (its names are bound per call)
# What api.py gives the hot call's ``method``: GENERAL(gfn, args, grad_outputs, kwargs), the
# general path; RAISED(exc), the exception __call__ raises for exc (None: exc itself);
# GRAD_OFF, whether some thread has gradients off.
CALLS = {}


class FastCall:
    """The common call of one gradient: positional float arguments, one output, no
    hooks, only the gradients returned. It does what ``GradFunction._call`` does
    without re-deciding any of it. ``rank_key``: the ``rank_keys`` of the arguments it
    was recorded for (None when its code serves any ranks)."""

    @staticmethod
    def applies(gfn, compiled, plan):
        return (plan.simple and not gfn.hook_names and not gfn.preserve_result
                and not compiled.tuple_output and None not in plan.wrt_positions)

    def __init__(self, gfn, compiled, plan, rank_keys=None):
        self.compiled = compiled
        self.fn, self.guard = gfn.fn, compiled.guard
        self.n_args = plan.n_positional
        self.positions = plan.wrt_positions
        self.only = plan.wrt_positions[0] if len(plan.wrt_positions) == 1 else None
        # The other arguments, when this call serves arguments of any rank (rank_keys
        # tells structures apart otherwise): a structure among them needs its own code.
        self.others = () if not compiled.rank_free else tuple(
            k for k in range(plan.n_positional) if k not in plan.wrt_positions)
        self.many = plan.many
        self.options = (gfn.allow_unused, gfn.materialize_grads)
        self.rank_keys = None if compiled.rank_free else rank_keys
        self.gradient = None   # args -> the backward sweep's tuple (made by the first call)
        self._hot = None

    def _gradient(self):
        """Both sweeps as one generated function, else the two calls."""
        composed = show.composed_function(self.compiled)
        if composed is not None:
            return composed
        forward, backward = self.compiled.forward, self.compiled.backward

        def both_sweeps(*args):
            out, saved = forward(*args)
            return backward(runtime.default_seed(out), saved)
        return both_sweeps

    @property
    def hot(self):
        """``hot(args, grad_outputs)``: ``run`` for float and float-array arguments (a
        structure, a NumPy scalar, ... is DECLINED: ``run`` takes it), as one function."""
        if self._hot is None:
            if self.gradient is None:
                self.gradient = self._gradient()
            self._hot = _hot_function(self)
        return self._hot

    def run(self, args, grad_outputs=None, checked=False):
        """The gradient at ``args``, or DECLINED. ``checked``: the caller has just checked
        the guard (the first call, with the compile), which is not asked again."""
        if len(args) != self.n_args or not (checked or self.guard.holds(self.fn)):
            return DECLINED
        for k in self.others:   # usually none; else usually floats and arrays
            other = args[k]
            if type(other) not in _LEAF_TYPES and other is not None and pytree.is_node(other):
                return DECLINED
        k = self.only
        if k is not None:
            like = args[k]
            if not _float_input(like) and not _float_tree(like):
                return DECLINED
        else:
            likes = [args[k] for k in self.positions]
            if not all(_float_input(v) or _float_tree(v) for v in likes):
                return DECLINED
        if grad_outputs is None:
            gradient = self.gradient
            if gradient is None:
                gradient = self.gradient = self._gradient()
            grads = gradient(*args)
        else:   # no gradient the caller's seed (call_values.distinct)
            grads = distinct(self.compiled.backward(*_seeded(self.compiled.forward(*args),
                                                             grad_outputs)), grad_outputs)
        if k is not None:
            g = grads[0]
            if type(g) is numpy.ndarray and g.dtype is getattr(like, "dtype", None) and g.shape == like.shape \
                    and g.flags.writeable or type(g) is type(like) is float:
                return grads if self.many else g
            likes = (like,)
        elif all(map(_final, grads, likes)):   # two or more: none another's memory
            return distinct(grads) if self.many else grads[0]
        grads = _finish_values(grads, self.compiled.wrt, likes, *self.options)
        return grads if self.many else grads[0]


def _hot_function(fast):
    """``fast.run`` for leaf arguments as one generated function (its source: ``__source__``),
    with ``method``: the same as a ``GradFunction.__call__`` (api.py gives each gradient that
    has a hot call a class of its own that calls it: one Python call fewer). Kept on the
    compiled gradient: another GradFunction of the same function reuses them."""
    n = fast.n_args
    names = [f"a{k}" for k in range(n)]
    arrays = set()   # positions where only a float array gets past the check
    checks = []
    for k in range(n):
        a = names[k]
        if k in fast.positions:   # a float array (of the recorded rank) or a float
            rank = None if fast.rank_keys is None else fast.rank_keys[k]
            array = f"type({a}) is ndarray and ((d{k} := {a}.dtype) is F64 or d{k}.kind == 'f')"
            if rank is None:
                checks.append(f"({array} or type({a}) is float)")
            elif type(rank) is int:
                checks.append(f"({array} and {a}.ndim == {rank}"
                              + (f" or type({a}) is float)" if rank == 0 else ")"))
                if rank:
                    arrays.add(k)
            else:   # recorded for a structure (or an int): run takes such calls
                checks.append("False")
        elif fast.rank_keys is not None:   # what rank_keys gave: the dict found this call
            quick = {INT: "int", 0: "float"}.get(fast.rank_keys[k]) \
                if type(fast.rank_keys[k]) in (int, str) else None
            checks.append(f"(type({a}) is {quick} or rank_key({a}) == KEY[{k}])" if quick
                          else f"rank_key({a}) == KEY[{k}]")
        else:
            checks.append(f"(type({a}) in LEAVES or {a} is None or not is_node({a}))")
    checked = []   # the checks after unpacking; "DECLINE" where the call is not this one's
    if checks:
        checked += ["    if not (" + "\n            and ".join(checks) + "):",
                    "        DECLINE"]
    checked += ["    try:",
                "        holds = (" + fast.guard.condition.replace("\n", "\n    ") + ")",
                "    except Exception:   # an emptied cell, an attribute that raises",
                "        holds = False",
                "    if not holds:",
                "        DECLINE"]
    run = _run_lines(fast, names, arrays)
    hot_lines = ["def hot(args, grad_outputs):"]
    if n:
        hot_lines += ["    try:",
                      f"        {', '.join(names)}, = args",
                      "    except ValueError:   # another number of arguments",
                      "        return DECLINED"]
    else:
        hot_lines += ["    if args:", "        return DECLINED"]
    hot_lines += [line.replace("DECLINE", "return DECLINED") for line in checked] + run
    general = "return GENERAL(self, args, grad_outputs, kwargs)"
    call_lines = ["def call(self, *args, grad_outputs=None, **kwargs):"]
    if n:   # (GENERAL is not called in the except clause: what it raises has no context)
        call_lines += ["    try:",
                       f"        {', '.join(names)}, = args",
                       "    except ValueError:   # another number of arguments",
                       "        a0 = DECLINED",
                       "    if a0 is DECLINED or kwargs or GRAD_OFF[0]:",
                       f"        {general}"]
    else:
        call_lines += ["    if args or kwargs or GRAD_OFF[0]:", f"        {general}"]
    call_lines += [line.replace("DECLINE", general) for line in checked] + ["    try:"]
    call_lines += ["    " + line for line in run] + [
        "    except Exception as exc:   # what GradFunction.__call__ does with it",
        "        mapped = RAISED(exc)",
        "        if mapped is None:",
        "            raise",
        "        raise mapped from None"]
    source = "\n".join(hot_lines) + "\n\n\n" + "\n".join(call_lines) + "\n"
    key = (source, fast.fn, fast.rank_keys, fast.options)
    known = fast.compiled.hot_calls
    if known is None:
        known = fast.compiled.hot_calls = {}
    found = known.get(key)
    if found is not None:
        return found
    namespace = dict(fast.guard.namespace)
    namespace.update(fn=fast.fn, DECLINED=DECLINED, ndarray=numpy.ndarray, F64=_F64, F32=_F32,
                     rank_key=checked_rank_key, KEY=fast.rank_keys, LEAVES=_LEAF_TYPES,
                     is_node=pytree.is_node, gradient=fast.gradient,
                     compiled=fast.compiled,   # its sweeps loaded when grad_outputs asks
                     check_seed=_check_seed, final=_final, finish=_finish_values,
                     distinct=distinct,
                     WRT=fast.compiled.wrt, OPTIONS=fast.options, **CALLS)
    # (not "<srcgrad ...>": that names generated gradient code, tests/test_source.py)
    code = _CODES.get(source)
    if code is None:   # a gradient of another function with the same text
        if len(_CODES) >= 256:
            _CODES.clear()
        code = _CODES[source] = compile(source, "<hot call of a gradient>", "exec")
    exec(code, namespace)
    hot = namespace["hot"]
    hot.__source__ = source
    hot.method = namespace["call"]
    hot.classes = {}   # a GradFunction class -> its subclass whose __call__ is hot.method
    known[key] = hot
    return hot


def _run_lines(fast, names, arrays):
    """The hot call's lines once its checks hold: the gradient, then the check that it is final."""
    fresh = _fresh(fast, len(names), arrays)
    found = fresh.results
    if len(fast.positions) == len(found) and all(found.get(j) == k for j, k in enumerate(fast.positions)):
        # A new array like each input: the final check below is known to pass for a native
        # float64/float32 input (analysis/fresh.py), so it is not made.
        known = " and ".join(f"(d{k} is F64 or d{k} is F32)" for k in fast.positions)
    else:
        known = None
    call = ", ".join(names)
    likes = ", ".join(names[k] for k in fast.positions) + ("," if len(fast.positions) == 1 else "")
    lines = ["    if grad_outputs is None:"]
    if fresh.inlined is not None:   # the gradient's own statements: no call (analysis/fresh.py)
        returned = ", ".join(fresh.returned) + ("," if len(fresh.returned) == 1 else "")
        lines += ["        try:"] + [f"            {line}" for line in fresh.inlined] + [
                  "        except Exception:   # raised again where the gradient says the user's line",
                  f"            grads = gradient({call})",
                  "        else:"]
        if known is not None:
            first = f"distinct(({returned}))" if fast.many else fresh.returned[0]
            lines += [f"            if {known}:   # new arrays like the inputs",
                      f"                return {first}"]
        lines += [f"            grads = ({returned})"]
    else:
        lines += [f"        grads = gradient({call})"]
    if known is not None:
        lines += [f"        if {known}:   # new arrays like the inputs",
                  f"            return {'distinct(grads)' if fast.many else 'grads[0]'}"]
    lines += ["    else:",
              f"        out, saved = compiled.forward({call})",
              "        if type(out) is ndarray and type(grad_outputs) is ndarray and out.dtype.kind != 'c' \\",
              "                and out.shape == grad_outputs.shape:",
              "            seed = grad_outputs   # what _check_seed returns for it",
              "        else:",
              "            seed = check_seed(out, grad_outputs)",
              "        out = None   # not kept alive by the backward sweep",
              "        grads = compiled.backward(seed, saved)"]
    if fast.many:
        lines += ["        grads = distinct(grads, grad_outputs)"]
    else:   # distinct's first test inline: an array owning its memory, not the caller's seed's
        lines += ["        g = grads[0]",
                  "        if not (type(g) is ndarray and g.base is None and type(grad_outputs) is ndarray",
                  "                and g is not grad_outputs and g is not grad_outputs.base):",
                  "            grads = distinct(grads, grad_outputs)"]
    result = "grads" if fast.many else "grads[0]"
    if fast.only is not None:   # run's check of the one gradient, by the input's type
        like, done = names[fast.only], "grads" if fast.many else "g"
        array = "" if fast.only in arrays else f"type({like}) is ndarray and "
        lines += ["    g = grads[0]",
                  "    if type(g) is ndarray:",
                  f"        if {array}g.dtype is {like}.dtype "
                  f"and g.shape == {like}.shape and g.flags.writeable:",
                  f"            return {done}"]
        if fast.only not in arrays:
            lines += [f"    elif type(g) is float and type({like}) is float:",
                      f"        return {done}"]
    else:
        lines += [f"    if all(map(final, grads, ({likes}))):",
                  f"        return {'distinct(grads)' if fast.many else result}"]
    lines += [f"    grads = finish(grads, WRT, ({likes}), *OPTIONS)",
              f"    return {result}"]
    return lines


def _fresh(fast, n, arrays):
    """analysis/fresh.py's findings on the composed gradient, once per gradient and ranks
    (kept on the function: every GradFunction of it makes its own hot call)."""
    gradient = fast.gradient
    known = getattr(gradient, "_srcgrad_fresh", None)
    if known is None:
        known = {}
        try:
            gradient._srcgrad_fresh = known
        except AttributeError:
            pass
    key = (n, tuple(sorted(arrays)))
    found = known.get(key)
    if found is None:
        found = known[key] = analysis_fresh.fresh_results(_gradient_source(fast), n, arrays)
    return found


def _gradient_source(fast):
    """The source of the composed gradient ``fast`` runs, or None (two sweeps)."""
    text = getattr(fast.gradient, "_srcgrad_text", None)
    if text is not None:
        return text[0]
    if fast.gradient is not None and fast.gradient is fast.compiled.gradient:   # loaded from disk
        try:
            return show.function_source(fast.gradient)
        except (OSError, TypeError):
            return None
    return None


class FastAuxCall(FastCall):
    """``FastCall`` of a has_aux gradient: returns ``(gradients, aux)``. Its own ``run``
    keeps the common call's free of the check."""

    def run(self, args, grad_outputs=None):
        if len(args) != self.n_args or not self.guard.holds(self.fn):
            return DECLINED
        for k in self.others:
            other = args[k]
            if type(other) not in _LEAF_TYPES and other is not None and pytree.is_node(other):
                return DECLINED
        likes = [args[k] for k in self.positions]
        if not all(_float_input(v) or _float_tree(v) for v in likes):
            return DECLINED
        (out, aux), saved = self.compiled.forward(*args)
        seed = runtime.default_seed(out) if grad_outputs is None else _check_seed(out, grad_outputs)
        grads = self.compiled.backward(seed, saved)
        if not all(map(_final, grads, likes)):
            grads = _finish_values(grads, self.compiled.wrt, likes, *self.options, grad_outputs)
        elif grad_outputs is not None or self.many:
            grads = distinct(grads, grad_outputs)
        return (grads if self.many else grads[0]), aux


def _seeded(forward_result, grad_outputs):
    """(seed, saved) for the backward sweep; the output itself is not kept alive."""
    out, saved = forward_result
    return _check_seed(out, grad_outputs), saved


def _float_input(value):
    kind = type(value)
    if kind is float or kind is numpy.ndarray:
        return kind is float or value.dtype.kind == "f"
    # CuPy's arrays run the composed function too (the hot call takes NumPy's only;
    # ``_finish_values`` makes their gradients final)
    return is_cupy_array_type(kind) and value.dtype.kind == "f"


def _float_tree(value):
    """A structure (pytree.py) whose leaves are all floats or float arrays (the code for it
    was compiled for its structure: rank_keys tells structures apart)."""
    return type(value) not in _LEAF_TYPES and value is not None and pytree.is_node(value) \
        and all(map(_float_input, pytree.tree_leaves(value)))


def _final(g, like):
    """``g`` is already what ``_finish_values`` makes of it for input ``like``."""
    if type(g) is numpy.ndarray:   # (an array's gradient for a float: not final)
        return type(like) is numpy.ndarray and g.dtype is like.dtype and g.shape == like.shape \
            and g.flags.writeable
    return type(g) is type(like) is float
