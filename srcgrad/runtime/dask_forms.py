"""Dask arrays in generated gradients: the namespace ``xp`` for Dask inputs and the
Dask forms of the runtime helpers that write into arrays.

A gradient whose inputs include a Dask array binds ``xp`` to ``DASK`` (``namespace``
in arrays.py), a stand-in for ``dask.array``: its attributes are dask.array's, so
the gradient's templates build a lazy Dask graph chunk by chunk, exactly as they
build NumPy arrays on NumPy inputs. Three things differ from plain ``dask.array``:

* a function dask.array does not have (``xp.cross``, ``xp.linalg.det``...) is
  refused when the gradient reaches for it, with an ``UnsupportedError`` naming the
  function, the rules that use it, and the user's line (``refuse``), instead of an
  ``AttributeError`` from inside dask, and never by falling back to NumPy, which
  would pull the whole array into memory;
* NumPy's scalar types that dask.array does not re-export (``xp.intp``) are NumPy's;
* ``xp.add.at`` is not there: indexed accumulation is ``scatter_add`` below, Dask's
  item assignment applied once per round of distinct positions.

Dask has no ``flags``: a Dask array is immutable underneath, and ``x[i] = v`` on one
rebinds that Python object to a new graph. The runtime therefore treats a Dask array
like a CuPy array (writeable), and its ``copy()`` (a new object over the same graph,
free) is what keeps an adjoint the sweep updates from being seen by anyone else.
"""

import sys
import types

import numpy

_dask_array = None


def dask_array():
    """``dask.array``, imported on first use (None without Dask)."""
    global _dask_array
    if _dask_array is None:
        try:
            import dask.array as da
        except ImportError:
            return None
        _dask_array = da
    return _dask_array


def is_dask(value):
    """Whether ``value`` is a Dask array (read from its type's module: no import of Dask)."""
    return type(value).__module__.startswith("dask.array")


_MISSING = object()


class DaskNamespace(types.ModuleType):
    """``dask.array`` (or one of its submodules) as the namespace ``xp`` of a gradient.

    Attributes are looked up in the Dask module once and cached on this object;
    a missing function is a refusal (``refuse``), a missing NumPy scalar type is NumPy's.
    """

    def __init__(self, module, label):
        super().__init__(label)
        self._module = module
        self._label = label

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _FORMS.get(f"{self._label}.{name}", _MISSING)
        if value is _MISSING:
            value = getattr(self._module, name, _MISSING)
        if value is _MISSING:
            host = getattr(numpy, name, None)
            if isinstance(host, type) and issubclass(host, numpy.generic):
                value = host   # a dtype (numpy.intp): the same on either side
            else:
                raise refuse(f"{self._label}.{name}", users=_rules_using(self._label, name))
        elif isinstance(value, types.ModuleType) and value.__name__.startswith("dask.array."):
            value = DaskNamespace(value, f"{self._label}.{name}")
        elif callable(value) and not isinstance(value, type):
            value = _refusing(value, f"{self._label}.{name}")
        setattr(self, name, value)
        return value

    def __repr__(self):
        return f"<srcgrad's Dask namespace {self._label} ({self._module.__name__})>"


def _refusing(function, label):
    """``function`` (a dask.array function) raising a refusal where Dask cannot do what
    NumPy does with these arguments (Dask's TypeError, ValueError or NotImplementedError,
    e.g. a linear-algebra routine that needs other chunks): a gradient's own call never
    fails on shapes the forward sweep accepted, so such an error is Dask's limit."""
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (TypeError, ValueError, NotImplementedError) as exc:
            name = label.rsplit(".", 1)[-1]
            error = refuse(f"{label} on these Dask arrays ({type(exc).__name__}: {exc})",
                           users=_rules_using(label.rsplit(".", 1)[0], name))
            raise error from exc
    call.__name__ = getattr(function, "__name__", label)
    call.__qualname__ = call.__name__
    call.__wrapped__ = function
    return call


def _filled(name):
    """NumPy's ``zeros``/``ones``/``empty(shape, dtype, order)``: Dask's take ``dtype`` by
    keyword only (a positional one is silently dropped)."""
    def form(shape, dtype=float, order="C", **kwargs):
        return getattr(dask_array(), name)(shape, dtype=dtype, **kwargs)
    form.__name__ = form.__qualname__ = name
    return form


def _full(shape, fill_value, dtype=None, order="C", **kwargs):
    """NumPy's ``full(shape, fill_value, dtype)`` (Dask's takes ``dtype`` by keyword only)."""
    return dask_array().full(shape, fill_value, dtype=dtype, **kwargs)


def _asarray(a, dtype=None, order=None, **kwargs):
    """NumPy's ``asarray(a, dtype)``: Dask's second parameter is ``allow_unknown_chunksizes``."""
    return dask_array().asarray(a, dtype=dtype, order=order, **kwargs)


def _eye(N, M=None, k=0, dtype=float, order="C"):
    """NumPy's ``eye(N, M, k, dtype)``: Dask's second parameter is ``chunks``."""
    da = dask_array()
    if M is None or M == N:
        return da.eye(N, k=k, dtype=dtype)
    # Dask's eye with M != N leaves out blocks of its graph (dask 2026.8): cut a square one.
    return da.eye(max(N, M), k=k, dtype=dtype)[:N, :M]


def _arange(*args, dtype=None, **kwargs):
    """NumPy's ``arange(start, stop, step, dtype)``: Dask's fourth parameter is ``chunks``."""
    if len(args) == 4:
        *args, dtype = args
    return dask_array().arange(*args, dtype=dtype, **kwargs)


def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """NumPy's ``linspace`` with array ends and ``axis`` (Dask's takes numbers only)."""
    da = dask_array()
    if retstep:
        raise refuse("xp.linspace(..., retstep=True)")
    if numpy.ndim(start) == 0 and numpy.ndim(stop) == 0 and not is_dask(start) and not is_dask(stop):
        return da.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    start, stop = da.asarray(start), da.asarray(stop)
    ndim = max(start.ndim, stop.ndim)
    steps = numpy.linspace(0.0, 1.0, num, endpoint=endpoint).reshape((num,) + (1,) * ndim)
    out = start + (stop - start) * steps
    if num and endpoint and num > 1:
        out[-1] = da.broadcast_to(stop, out.shape[1:])
    out = da.moveaxis(out, 0, axis % (ndim + 1))
    return out.astype(dtype) if dtype is not None else out


def _reshape(a, shape, order="C"):
    """``xp.reshape`` with NumPy's ``order`` (C only on Dask); where Dask cannot split or
    merge the chunks as they are, the later axes are made whole chunks first."""
    da = dask_array()
    if order not in ("C", None):
        raise refuse(f"xp.reshape(..., order={order!r})", hint="Dask reshapes in C order only.")
    if not is_dask(a):
        a = da.asarray(a)
    try:
        return da.reshape(a, shape)
    except NotImplementedError:
        return da.reshape(a.rechunk({i: -1 for i in range(1, a.ndim)}), shape)


# Dask forms of the functions whose dask.array version takes other arguments than NumPy's.
_FORMS = {"xp.reshape": _reshape, "xp.eye": _eye, "xp.arange": _arange,
          "xp.linspace": _linspace, "xp.zeros": _filled("zeros"), "xp.ones": _filled("ones"),
          "xp.empty": _filled("empty"), "xp.full": _full, "xp.asarray": _asarray}

_namespace = None


def namespace():
    """The ``xp`` of a gradient with Dask inputs."""
    global _namespace
    if _namespace is None:
        da = dask_array()
        if da is None:   # a Dask array without importable dask.array: cannot happen
            raise ImportError("srcgrad: dask.array cannot be imported")
        _namespace = DaskNamespace(da, "xp")
    return _namespace


def _rules_using(label, name):
    """The primitives whose built-in rules call ``<label>.<name>`` (for the refusal's text)."""
    needle = label + "." + name + "("
    found = []
    try:
        import inspect

        from srcgrad.rules import RULES
        for key, rule in RULES.items():
            fn = getattr(rule, "fn", None) or getattr(rule, "function", None) or rule
            try:
                text = inspect.getsource(fn)
            except (TypeError, OSError):
                continue
            if needle in text:
                found.append(_primitive_name(key))
    except Exception:   # the text of a refusal must never fail
        return []
    return sorted(set(found))


def _primitive_name(key):
    owner = getattr(key, "__module__", None) or ""
    name = getattr(key, "__name__", None) or str(key)
    if owner.startswith("numpy"):
        owner = "np" + owner[len("numpy"):] if owner not in ("numpy", "numpy.core.umath") else "np"
        owner = owner.replace(".core.multiarray", "").replace(".core.fromnumeric", "") \
            .replace("._core.multiarray", "").replace("._core.fromnumeric", "")
        owner = owner.split(".")[0] + ("." + owner.split(".")[-1] if "linalg" in owner else "")
    return f"{owner}.{name}" if owner and not owner.startswith("_") else name


def user_origin():
    """The origin (file, line, source) of the user's statement the generated code on the
    stack is computing, or None (outside generated code)."""
    from srcgrad.codegen import loader
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name.endswith(("_forward", "_forward_for_grad", "_backward")) \
                or code.co_name.startswith("gradient_"):
            # A rule's inlined lines may carry no origin of their own: the nearest line above
            # in the same function that does (the statement's guard or first line) names it.
            for line in range(frame.f_lineno, code.co_firstlineno - 1, -1):
                origin = loader.origin_at(code.co_filename, line)
                if origin is not None:
                    return origin
        frame = frame.f_back
    return None


def refuse(what, users=(), hint=None):
    """The ``UnsupportedError`` of a gradient step that has no Dask form: ``what`` names it,
    ``users`` the rules it belongs to; the error names the user's line being differentiated."""
    from srcgrad.errors import UnsupportedError
    origin = user_origin()
    rules = f" (used by the gradient of {', '.join(users)})" if users else ""
    message = (f"srcgrad: {what}{rules} has no Dask form, so this gradient cannot run on "
               f"Dask arrays without pulling them into memory.")
    hint = hint or ("Compute the array first (x.compute()) where it fits in memory, or write "
                    "this step with functions dask.array has.")
    if origin is None:
        return UnsupportedError(message, hint=hint)
    return UnsupportedError(message, origin.filename, origin.lineno, None, origin.source_line,
                            hint=hint)


def numpy_only(what, values, hint):
    """Raise where ``values`` hold another library's arrays (CuPy, Dask): ``what`` is a
    gradient step written with NumPy's functions. On Dask it is refused as every step
    without a Dask form is (``refuse``); elsewhere at the user's line being differentiated."""
    from srcgrad.errors import UnsupportedError
    arrays = [v for v in values if not isinstance(v, (numpy.ndarray, numpy.generic, int, float,
                                                       complex, bool, list, tuple, type(None)))]
    if not arrays:
        return
    if any(is_dask(v) for v in arrays):
        raise refuse(what, hint=hint)
    origin = user_origin()
    message = f"srcgrad: {what} is supported for NumPy arrays only"
    if origin is None:
        raise UnsupportedError(message, hint=hint)
    raise UnsupportedError(message, origin.filename, origin.lineno, None, origin.source_line,
                           hint=hint)


# ----- Writing into Dask arrays -----


def broadcast_to(g, shape, like):
    """``g`` (a number or array) broadcast to ``shape`` as a Dask array with ``like``'s
    chunks (a Dask array or a DaskShape), so no operand of the graph is one huge chunk."""
    da = dask_array()
    chunks = getattr(like, "chunks", None)
    if not is_dask(g):
        g = da.asarray(g)
    if chunks is not None and tuple(shape) == tuple(getattr(like, "shape", shape)):
        try:
            return da.broadcast_to(g, tuple(shape), chunks=chunks)
        except ValueError:   # g's own chunks differ along a dimension it does not broadcast
            return da.broadcast_to(g, tuple(shape)).rechunk(chunks)
    return da.broadcast_to(g, tuple(shape))


def add_basic(dx, index, g):
    """``dx[index] += g`` for a basic index (ints, slices, None, Ellipsis) on a Dask ``dx``:
    Dask's item assignment takes no ``None``, so those axes (of length 1 in ``g``) are
    dropped from the index and from ``g``. Returns ``dx`` (rebound in place)."""
    items = index if isinstance(index, tuple) else (index,)
    if any(item is None for item in items):
        part = dx[index]
        if not is_array(g) or g.shape != part.shape:
            g = broadcast_to(g, part.shape, None)
        if Ellipsis in items:
            k = items.index(Ellipsis)
            fill = dx.ndim - sum(1 for it in items if it is not None and it is not Ellipsis)
            items = items[:k] + (slice(None),) * fill + items[k + 1:]
        squeeze, axis = [], 0
        for item in items:
            if item is None:
                squeeze.append(axis)
            if not isinstance(item, (int, numpy.integer)):
                axis += 1
        g = dask_array().squeeze(g, axis=tuple(squeeze))
        index = tuple(item for item in items if item is not None)
    dx[index] = dx[index] + g
    return dx


def _advanced_items(index):
    items = index if isinstance(index, tuple) else (index,)
    return [k for k, item in enumerate(items)
            if not (item is None or item is Ellipsis or isinstance(item, (int, slice, numpy.integer)))]


def _fresh(dx):
    """A new Dask array object over ``dx``'s graph (free): item assignment rebinds the object
    it is applied to, so writing into this one leaves every other name for ``dx`` as it was
    (a broadcast seed, an adjoint another adjoint was set to). A NumPy ``dx`` that receives
    a Dask gradient becomes a Dask array, so it stays lazy."""
    da = dask_array()
    if not is_dask(dx):
        return da.asarray(dx)
    return da.Array(dx.dask, dx.name, dx.chunks, meta=dx._meta)


def add_at(dx, index, g):
    """``dx[index] += g`` where ``dx`` or ``g`` is a Dask array (rt.add_at's Dask form),
    into a fresh object (``_fresh``): returns the new adjoint."""
    dx = _fresh(dx)
    if _has_lazy_mask(index):
        raise _lazy_mask_error("reading")
    if not _advanced_items(index):
        return add_basic(dx, index, g)
    return scatter_add(dx, index, g)


def zero_at(dx, x, index):
    """``dx[index] = 0`` on Dask (rt.zero_grad_at's Dask form: the adjoint of a write)."""
    dx = _fresh(dx)
    if _has_lazy_mask(index):
        raise _lazy_mask_error("writing")
    items = index if isinstance(index, tuple) else (index,)
    if any(item is None for item in items):
        return add_basic(dx, index, -dx[index])
    dx[index] = 0
    return dx


def _has_lazy_mask(index):
    items = index if isinstance(index, tuple) else (index,)
    return any(is_dask(item) and item.dtype == bool for item in items)


def _lazy_mask_error(what):
    """A boolean mask that is lazy (mask = x > 0), or of more than one dimension: Dask gives
    ``x[mask]`` chunks of unknown size."""
    return refuse(f"{what} through a lazy (Dask) or multi-dimensional boolean mask "
                  f"(x[mask] with mask = x > 0)",
                  hint="Its result has chunks of unknown size, so its gradient cannot be put "
                       "back without computing the mask; write it elementwise instead, "
                       "np.where(mask, x, 0) (a read) or v = np.where(mask, value, v) (a write), "
                       "or compute the mask first (mask = mask.compute()).")


def scatter_add(dx, index, g):
    """``dx[index] += g`` on a Dask ``dx`` where repeated positions accumulate (``add.at``).

    Dask's item assignment takes one index array (integers or booleans) among slices and
    integers, and keeps one write per repeated position; so the positions are split into
    rounds in which none repeats (the k-th occurrence of each position in round k) and each
    round is one item assignment. The index must be concrete (NumPy): a lazy Dask index
    would need computing to find its repeats, and is refused. Returns the new ``dx``.
    """
    items = index if isinstance(index, tuple) else (index,)
    advanced = _advanced_items(index)
    if len(advanced) != 1:
        raise refuse("an indexed write or read with more than one index array (x[i, j])",
                     hint="Dask's item assignment takes one index array; index one axis at a "
                          "time, or compute the array first.")
    k = advanced[0]
    if any(item is Ellipsis for item in items[:k]):
        raise refuse("an index with an Ellipsis before an index array (x[..., i])",
                     hint="Write the axes out with slices (x[:, i]).")
    positions = items[k]
    if is_dask(positions):
        raise refuse("indexing with a lazy (Dask) integer array",
                     hint="Compute the index first (i = i.compute()): its repeated positions "
                          "decide the gradient.")
    positions = numpy.asarray(positions)
    if positions.dtype == bool and positions.ndim > 1:
        raise _lazy_mask_error("reading")   # Dask makes x[mask] of unknown chunks, as for a lazy one
    if positions.dtype == bool or positions.ndim == 0:
        dx[index] = dx[index] + g
        return dx
    if positions.ndim != 1:
        raise refuse("indexing with a multi-dimensional index array",
                     hint="Dask's item assignment takes a 1-d index array; ravel the index first.")
    size = dx.shape[_axis_of(items, k, dx.ndim)]
    positions = numpy.where(positions < 0, positions + size, positions)
    order = numpy.argsort(positions, kind="stable")
    ranked = positions[order]
    starts = numpy.r_[True, ranked[1:] != ranked[:-1]]
    group_start = numpy.maximum.accumulate(numpy.where(starts, numpy.arange(len(ranked)), 0))
    occurrence = numpy.empty(len(ranked), dtype=numpy.intp)
    occurrence[order] = numpy.arange(len(ranked)) - group_start
    g_axis = _result_axis(items, k)
    part_shape = dx[index].shape
    if not is_array(g) or tuple(g.shape) != tuple(part_shape):
        g = broadcast_to(g, part_shape, None)
    for r in range(int(occurrence.max(initial=-1)) + 1):
        chosen = numpy.flatnonzero(occurrence == r)
        here = list(items)
        here[k] = positions[chosen]
        here = tuple(here)
        take = [slice(None)] * g.ndim
        take[g_axis] = chosen
        dx[here] = dx[here] + g[tuple(take)]
    return dx


def is_array(value):
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _axis_of(items, k, ndim):
    """The axis of the array that index item ``k`` indexes (no Ellipsis before it)."""
    return sum(1 for item in items[:k] if item is not None)


def _result_axis(items, k):
    """The axis of ``x[items]`` that index array ``k`` (one 1-d array among basic items) makes."""
    return sum(1 for item in items[:k] if not isinstance(item, (int, numpy.integer)))
