"""Rules one order up for the helpers that the statistics rules' gradients call
(numpy_statistics.py, numpy_ufunc_methods.py, numpy_differences.py' ends, ``.tolist()``),
so that ``sg.hessian``, ``sg.hvp`` and ``sg.jacfwd(sg.grad(f))`` (tangent rules) and
``sg.grad`` of a gradient (adjoint rules) go through them.

* **Linear in the cotangent, constant in the values between ties**: the order
  statistics (``quantile_vjp``, ``partition_vjp``, ``running_extremum_vjp``), ``diff``'s
  ends and ``tolist``. Their tangent is the helper applied to the cotangent's tangent
  (``linear``); their adjoint is the transposed map: the matching tangent helper (and the
  other way round).
* **Bilinear**: ``outer_vjp`` (``multiply.outer``), ``cov_vjp``, ``trapezoid_vjp``,
  ``gradient_vjp`` and ``gradient_step_vjp`` (``np.gradient``'s stencil and spacings) and
  ``multi_dot_vjp`` (multilinear): each part is linear in the cotangent and in the other
  operands, so a tangent is the helper again with one tangent in its operand's place.
* ``interp_vjp``: linear in the cotangent and in ``fp``, piecewise linear in ``x``.

A tangent whose rule is not written here (a quantile's ``q``, interp's sample points)
is refused when compiled, by ``linear`` or a tangent rule without its ``t_`` parameter;
the adjoints cover every argument.
"""

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, linear, returns_sequence, tangent
from srcgrad.rules.helper_second_order import _bilinear_tangent, _pair
from srcgrad.rules.numpy_statistics import (_gradient_steps, _per_axis, cov_vjp, gradient_step_vjp, gradient_vjp,
                                           interp_vjp, multi_dot_vjp, trapezoid_vjp)
from srcgrad.rules.numpy_ufunc_methods import outer_vjp
from srcgrad.rules.jvp_numpy import cov_jvp
from srcgrad.runtime.arrays import namespace

xp = None  # placeholder: the array namespace, bound in generated code


# ----- Linear in the cotangent, constant in the values between ties -----

linear(rt.quantile_vjp, "dy", no_tangent=("a",))
linear(rt.quantile_jvp, "t", no_tangent=("a",))
linear(rt.partition_vjp, "dy", no_tangent=("a",))
linear(rt.partition_jvp, "t", no_tangent=("a",))
linear(rt.running_extremum_vjp, "dy", no_tangent=("a", "y"))
linear(rt.running_extremum_jvp, "t", no_tangent=("a", "y"))


@adjoint(rt.quantile_vjp)
def quantile_vjp_adj(dw, w, dy, a, q, axis=None, keepdims=False, skip_nan=False, scale=1):
    return (rt.quantile_jvp(dw, a, q, axis, keepdims, skip_nan, scale), None,
            rt.quantile_q_pair(dy, dw, a, q, axis, skip_nan, scale), None, None, None, None)


@adjoint(rt.quantile_jvp)
def quantile_jvp_adj(dw, w, t, a, q, axis=None, keepdims=False, skip_nan=False, scale=1):
    return (rt.quantile_vjp(dw, a, q, axis, keepdims, skip_nan, scale), None,
            rt.quantile_q_pair(dw, t, a, q, axis, skip_nan, scale), None, None, None, None)


@adjoint(rt.partition_vjp)
def partition_vjp_adj(dw, w, dy, a, kth, axis=-1):
    return rt.partition_jvp(dw, a, kth, axis), None, None, None


@adjoint(rt.partition_jvp)
def partition_jvp_adj(dw, w, t, a, kth, axis=-1):
    return rt.partition_vjp(dw, a, kth, axis), None, None, None


@adjoint(rt.running_extremum_vjp)
def running_extremum_vjp_adj(dw, w, dy, a, y, axis=0):
    return rt.running_extremum_jvp(dw, a, y, axis), None, None, None


@adjoint(rt.running_extremum_jvp)
def running_extremum_jvp_adj(dw, w, t, a, y, axis=0):
    return rt.running_extremum_vjp(dw, a, y, axis), None, None, None


@adjoint(rt.gradient_vjp, sequences=("dy", "spacings"))   # dy: a list per axis
def gradient_vjp_adj(dw, w, dy, f, spacings, axis=None, edge_order=1):
    """``gradient_vjp`` is the transposed stencil: its adjoint is ``np.gradient`` again."""
    return (rt.gradient_stencil(dw, dy, spacings, axis, edge_order), None,
            rt.gradient_vjp_by_steps(dw, dy, f, spacings, axis, edge_order), None, None)


def _parts_by_axis(dy, f, spacings, axis, edge_order):
    """Each axis's spacing ``h_k`` and part ``S_k^T dy_k / h_k`` of ``gradient_vjp``."""
    steps = _gradient_steps(np.ndim(f), spacings, axis)[1]
    cotangents = _per_axis(dy)
    for k, h in enumerate(steps):
        alone = [d if i == k else None for i, d in enumerate(cotangents)]
        yield h, gradient_vjp(alone if isinstance(dy, (list, tuple)) else alone[0], f, spacings, axis, edge_order)


@rt.helper
def gradient_vjp_by_steps(dw, dy, f, spacings, axis=None, edge_order=1):
    """``d/dh <dw, gradient_vjp(dy, f, spacings)>`` for each spacing (a list): axis ``k``'s
    part is ``S_k^T dy_k / h_k``, so its derivative is ``-<dw, part_k> / h_k``."""
    xp = namespace(f, dw)
    by_step = [-xp.sum(xp.asarray(dw) * part) / h for h, part in _parts_by_axis(dy, f, spacings, axis, edge_order)]
    if len(spacings) == 1 and len(by_step) > 1:
        by_step = [sum(by_step)]
    return by_step[:len(spacings)]


@rt.helper
def gradient_vjp_tangent(dy, f, spacings, axis, edge_order, t_dy, t_spacings):
    """The tangent of ``gradient_vjp(dy, f, spacings)``: linear in ``dy``; axis ``k``'s
    part ``S_k^T dy_k / h_k`` moves by ``-part_k * t_h / h_k`` with its spacing."""
    xp = namespace(f)
    out = xp.zeros(np.shape(f)) if t_dy is None else gradient_vjp(t_dy, f, spacings, axis, edge_order)
    moving = list(t_spacings) if isinstance(t_spacings, (list, tuple)) else []
    if any(t is not None and not rt.is_zero_grad(t) for t in moving):
        for k, (h, part) in enumerate(_parts_by_axis(dy, f, spacings, axis, edge_order)):
            t = moving[0 if len(spacings) == 1 else k]
            if t is not None and not rt.is_zero_grad(t):
                out = out - part * t / h
    return out


@tangent(rt.gradient_vjp, no_tangent=("f", "axis", "edge_order"))
def gradient_vjp_tan(w, dy, f, spacings, axis=None, edge_order=1, *, t_dy, t_spacings):
    return rt.gradient_vjp_tangent(dy, f, spacings, axis, edge_order, t_dy, t_spacings)


@rt.helper
def gradient_stencil(f, like, spacings, axis=None, edge_order=1):
    """``np.gradient(f, *spacings, axis=, edge_order=)`` shaped as the cotangent ``like``
    (one array, or a list of them per axis)."""
    xp = namespace(f)
    out = xp.gradient(xp.asarray(f), *spacings, axis=axis, edge_order=edge_order)
    if isinstance(like, (list, tuple)):
        return list(out) if isinstance(out, (list, tuple)) else [out]
    return out[0] if isinstance(out, (list, tuple)) else out


# ----- Bilinear: multiply.outer, cov, trapezoid, multi_dot -----

@rt.helper
def outer_vjp_tangent(dy, A, B, product, t_dy, t_A, t_B):
    """The tangent of ``outer_vjp(dy, A, B, product)``; ``add.outer``'s operands give
    only their shapes."""
    if not product:
        t_A = t_B = None
    return _bilinear_tangent(outer_vjp, dy, A, B, t_dy, t_A, t_B, product)


def _outer(xp, a, b, product):
    """``multiply.outer(a, b)`` (``product``) or ``add.outer(a, b)`` by broadcasting (Dask
    has no ufunc methods)."""
    a, b = xp.asarray(a), xp.asarray(b)
    a = xp.reshape(a, a.shape + (1,) * b.ndim)
    return a * b if product else a + b


@rt.helper
def outer_vjp_adjoint(dw, dy, A, B, product):
    """The adjoint of ``outer_vjp(dy, A, B, product) -> (dA, dB)`` for its pair's
    cotangent ``dw``: ``[d dy, d A, d B]``."""
    ga, gb = _pair(dw)
    xp = namespace(dy, A, B)
    d_dy, d_a, d_b = 0.0, 0.0, 0.0
    if not product:
        zero_a = xp.zeros(np.shape(A))
        zero_b = xp.zeros(np.shape(B))
        d_dy = _outer(xp, zero_a if ga is None else ga, zero_b if gb is None else gb, False)
        return [d_dy, d_a, d_b]
    if ga is not None:
        d_dy = _outer(xp, ga, B, True)
        d_b = outer_vjp(dy, ga, B, True)[1]
    if gb is not None:
        d_dy = d_dy + _outer(xp, A, gb, True)
        d_a = outer_vjp(dy, A, gb, True)[0]
    return [d_dy, d_a, d_b]


returns_sequence(rt.outer_vjp_tangent, rt.outer_vjp_adjoint, rt.gradient_vjp_by_steps)


@tangent(rt.outer_vjp, no_tangent=("product",))
def outer_vjp_tan(w, dy, A, B, product, *, t_dy, t_A, t_B):
    return rt.outer_vjp_tangent(dy, A, B, product, t_dy, t_A, t_B)


@adjoint(rt.outer_vjp)
def outer_vjp_adj(dw, w, dy, A, B, product):
    g = rt.outer_vjp_adjoint(dw, dy, A, B, product)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2), None


@rt.helper
def cov_vjp_tangent(dy, m, y, rowvar, bias, ddof, of_y, t_dy, t_m, t_y):
    """The tangent of ``cov_vjp(dy, m, y)``: linear in ``dy``, and in ``m`` and ``y``
    jointly (the stacked observations, centred)."""
    xp = namespace(dy, m)
    v = y if of_y else m
    out = xp.zeros(np.shape(v), dtype=np.result_type(xp.asarray(v).dtype, np.float64))
    if t_dy is not None:
        out = out + cov_vjp(t_dy, m, y, rowvar, bias, ddof, of_y)
    if t_m is not None or t_y is not None:
        out = out + cov_vjp(dy, _or_zeros(xp, t_m, m), None if y is None else _or_zeros(xp, t_y, y),
                            rowvar, bias, ddof, of_y)
    return out


def _or_zeros(xp, t, v):
    return xp.zeros(np.shape(v)) if t is None else xp.broadcast_to(xp.asarray(t), np.shape(v))


@tangent(rt.cov_vjp, no_tangent=("rowvar", "bias", "ddof", "of_y"))
def cov_vjp_tan(w, dy, m, y=None, rowvar=True, bias=False, ddof=None, of_y=False, *, t_dy, t_m, t_y):
    return rt.cov_vjp_tangent(dy, m, y, rowvar, bias, ddof, of_y, t_dy, t_m, t_y)


@adjoint(rt.cov_vjp)
def cov_vjp_adj(dw, w, dy, m, y=None, rowvar=True, bias=False, ddof=None, of_y=False):
    """``cov_vjp(dy, m, y) = J^T dy``: in ``dy`` its adjoint is ``J``, ``cov``'s tangent
    (``dw`` in the rows of ``m``, or of ``y`` where ``of_y``); in ``m`` and ``y`` it is linear
    and its own transpose (centring commutes with the symmetric ``dy + dy^T`` on the left)."""
    g = rt.cov_vjp_adjoint(dw, dy, m, y, rowvar, bias, ddof, of_y)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2), None, None, None, None


@rt.helper
def cov_vjp_adjoint(dw, dy, m, y, rowvar, bias, ddof, of_y):
    """``[d dy, d m, d y]`` of ``cov_vjp_adj``."""
    xp = namespace(dw, m)
    t_m, t_y = (None, dw) if of_y else (dw, None)
    d_dy = cov_jvp(t_m, m, rowvar, bias, ddof, y, t_y)
    e_m, e_y = _or_zeros(xp, t_m, m), None if y is None else _or_zeros(xp, t_y, y)
    d_m = cov_vjp(dy, e_m, e_y, rowvar, bias, ddof)
    d_y = None if y is None else cov_vjp(dy, e_m, e_y, rowvar, bias, ddof, True)
    return [d_dy, d_m, d_y]


@rt.helper
def trapezoid_vjp_tangent(dy, y, x, dx, axis, t_dy, t_y, t_x, t_dx):
    """The tangent of ``trapezoid_vjp(dy, y, x, dx, axis) -> [d y, d x, d dx]``: ``d y`` is
    linear in ``dy`` and the spacing (``x``, else ``dx``), ``d x`` and ``d dx`` in ``dy``
    and ``y``."""
    out = [None, None, None]
    if t_dy is not None:
        out = [rt.add_grad(o, p) for o, p in zip(out, trapezoid_vjp(t_dy, y, x, dx, axis))]
    if t_y is not None:
        parts = trapezoid_vjp(dy, t_y, x, dx, axis)
        out[1], out[2] = rt.add_grad(out[1], parts[1]), rt.add_grad(out[2], parts[2])
    if x is not None and t_x is not None:
        out[0] = rt.add_grad(out[0], trapezoid_vjp(dy, y, t_x, dx, axis)[0])
    if x is None and t_dx is not None:
        out[0] = rt.add_grad(out[0], trapezoid_vjp(dy, y, None, t_dx, axis)[0])
    xp = namespace(y, dy)
    if out[0] is None:
        out[0] = xp.zeros(np.shape(y))
    return out


@tangent(rt.trapezoid_vjp, no_tangent=("axis",))
def trapezoid_vjp_tan(w, dy, y, x=None, dx=1.0, axis=-1, *, t_dy, t_y, t_x, t_dx):
    return rt.trapezoid_vjp_tangent(dy, y, x, dx, axis, t_dy, t_y, t_x, t_dx)


@rt.helper
def trapezoid_vjp_adjoint(dw, dy, y, x, dx, axis):
    """The adjoint of ``trapezoid_vjp(dy, y, x, dx, axis) -> [d y, d x, d dx]`` for its
    cotangent ``dw = [w_y, w_x, w_dx]``: ``[d dy, d y, d x, d dx]``. Each part is
    ``trapezoid``'s tangent along one argument, so ``d dy`` is ``trapezoid`` applied along
    ``w``, and the bilinear pairs give each other's vjps."""
    w_y, w_x, w_dx = _pair(dw, 3)
    xp = namespace(y, dy)
    d_dy, d_y, d_x, d_dx = None, None, None, None
    if w_y is not None:
        d_dy = rt.add_grad(d_dy, xp.trapezoid(w_y, x, dx, axis=axis))
        if x is not None:
            d_x = trapezoid_vjp(dy, w_y, x, dx, axis)[1]
        else:
            d_dx = trapezoid_vjp(dy, w_y, None, dx, axis)[2]
    if w_x is not None and x is not None:
        d_dy = rt.add_grad(d_dy, xp.trapezoid(y, w_x, axis=axis))
        d_y = rt.add_grad(d_y, trapezoid_vjp(dy, y, w_x, dx, axis)[0])
    if w_dx is not None and x is None:
        d_dy = rt.add_grad(d_dy, xp.trapezoid(y, None, w_dx, axis=axis))
        d_y = rt.add_grad(d_y, trapezoid_vjp(dy, y, None, w_dx, axis)[0])
    return [0.0 if d is None else d for d in (d_dy, d_y, d_x, d_dx)]


@adjoint(rt.trapezoid_vjp)
def trapezoid_vjp_adj(dw, w, dy, y, x=None, dx=1.0, axis=-1):
    g = rt.trapezoid_vjp_adjoint(dw, dy, y, x, dx, axis)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2), rt.seq_item(g, 3), None


@rt.helper
def multi_dot_vjp_tangent(dy, arrays, t_dy, t_arrays):
    """The tangent of ``multi_dot_vjp(dy, arrays)``: factor ``i``'s gradient is linear in
    ``dy`` and in every other factor (not its own)."""
    out = [None] * len(arrays)
    if t_dy is not None:
        out = [rt.add_grad(o, p) for o, p in zip(out, multi_dot_vjp(t_dy, arrays))]
    for j, t in enumerate(t_arrays if isinstance(t_arrays, (list, tuple)) else ()):
        if t is None or rt.is_zero_grad(t):
            continue
        swapped = list(arrays)
        swapped[j] = t
        parts = multi_dot_vjp(dy, swapped)
        out = [o if i == j else rt.add_grad(o, p) for i, (o, p) in enumerate(zip(out, parts))]
    xp = namespace(dy, *arrays)
    return [xp.zeros(np.shape(a)) if o is None else o for o, a in zip(out, arrays)]


@tangent(rt.multi_dot_vjp)
def multi_dot_vjp_tan(w, dy, arrays, *, t_dy, t_arrays):
    return rt.multi_dot_vjp_tangent(dy, arrays, t_dy, t_arrays)


@rt.helper
def multi_dot_vjp_adjoint(dw, dy, arrays):
    """The adjoint of ``multi_dot_vjp(dy, arrays)`` for its list cotangent ``dw``:
    ``[d dy, [d factor, ...]]``. ``<dw_i, vjp_i>`` is ``<dy, multi_dot>`` differentiated
    along ``dw_i`` in factor ``i``, so ``d dy`` is ``multi_dot``'s tangent along ``dw`` and
    the factors' part is ``multi_dot_vjp``'s own tangent along ``dw`` (a Hessian)."""
    cotangents = [None if g is None or rt.is_zero_grad(g) else g for g in _pair(dw, len(arrays))]
    xp = namespace(dy, *arrays)
    d_dy = 0.0
    for i, g in enumerate(cotangents):
        if g is not None:
            d_dy = d_dy + xp.linalg.multi_dot(list(arrays[:i]) + [g] + list(arrays[i + 1:]))
    return [d_dy, multi_dot_vjp_tangent(dy, arrays, None, cotangents)]


@adjoint(rt.multi_dot_vjp, sequences=("arrays",))
def multi_dot_vjp_adj(dw, w, dy, arrays):
    g = rt.multi_dot_vjp_adjoint(dw, dy, arrays)
    return rt.seq_item(g, 0), rt.seq_item(g, 1)


# ----- interp: linear in the cotangent and fp, piecewise linear in x -----

@rt.helper
def interp_vjp_tangent(dy, x, xp_points, fp, left, right, t_dy, t_x, t_fp):
    """The tangent of ``interp_vjp(...) -> [d x, d xp, d fp, d left, d right]`` along
    ``t_dy`` and ``t_fp`` (linear) and ``t_x`` (each ``x`` moves its two interpolation
    weights by ``t_x / width``; its slope, the outside parts stay); ``xp``'s tangent is
    refused by the rule."""
    parts = list(interp_vjp(dy, x, xp_points, fp, left, right))
    out = [None] * 5
    if t_dy is not None:   # (a list of points or values has a list as its part: as an array here)
        out = [rt.add_grad(o, _as_array(p))
               for o, p in zip(out, interp_vjp(t_dy, x, xp_points, fp, left, right))]
    if t_fp is not None:
        by_fp = [_as_array(p) for p in interp_vjp(dy, x, xp_points, t_fp, left, right)]
        out[0], out[1] = rt.add_grad(out[0], by_fp[0]), rt.add_grad(out[1], by_fp[1])
    if t_x is not None:
        by_x = _interp_moves(dy, x, xp_points, fp, t_x)
        out[1] = rt.add_grad(out[1], None if parts[1] is None else by_x[0])
        out[2] = rt.add_grad(out[2], by_x[1])
    return [_shaped_like(o, p) for o, p in zip(out, parts)]


def _as_array(part):
    return np.asarray(part, dtype=np.float64) if isinstance(part, (list, tuple)) else part


def _shaped_like(value, like):
    """``value`` (None: zero) in the form of ``interp_vjp``'s part ``like``: None, a
    float, a list or an array."""
    if like is None:
        return None
    if isinstance(like, list):
        return [0.0] * len(like) if value is None else np.asarray(value).reshape(-1).tolist()
    if isinstance(like, float):
        return 0.0 if value is None else float(value)
    return np.zeros(np.shape(like)) if value is None else np.asarray(value).reshape(np.shape(like))


def _interp_moves(dy, x, xp_points, fp, t_x):
    """The changes of ``interp_vjp``'s ``d xp`` and ``d fp`` as ``x`` moves by ``t_x``."""
    x_array = np.asarray(x, dtype=np.float64)
    points = np.asarray(xp_points, dtype=np.float64)
    values = np.asarray(fp, dtype=np.float64).reshape(-1)
    g = np.broadcast_to(np.asarray(dy, dtype=np.float64), x_array.shape)
    t_x = np.broadcast_to(np.asarray(t_x, dtype=np.float64), x_array.shape)
    n = points.size
    inside = (x_array >= points[0]) & (x_array < points[-1])
    k = np.clip(np.searchsorted(points, x_array, side="right") - 1, 0, max(n - 2, 0))
    k1 = np.minimum(k + 1, n - 1)
    width = points[k1] - points[k]
    moving = inside & (width > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        dt = np.where(moving, t_x / np.where(width > 0, width, 1), 0.0)
        slope = np.where(width > 0, (values[k1] - values[k]) / np.where(width > 0, width, 1), 0.0)
    d_fp = np.zeros(n)
    np.add.at(d_fp, k, -g * dt)
    np.add.at(d_fp, k1, g * dt)
    d_xp = np.zeros(n)
    np.add.at(d_xp, k, g * slope * dt)
    np.add.at(d_xp, k1, -g * slope * dt)
    return d_xp, d_fp




@rt.helper
def interp_vjp_adjoint(dw, dy, x, xp_points, fp, left, right):
    """The adjoint of ``interp_vjp(dy, x, xp, fp, left, right) -> [d x, d xp, d fp, d left,
    d right]`` for its cotangent ``dw``: ``[d dy, d x, d xp, d fp]`` (``left`` and
    ``right`` give only where ``x`` is outside). Per sample inside segment ``k`` (ends
    ``p0``, ``p1``, width ``W``, position ``t``, slope ``s``) the pairing is
    ``g (w_x s + s ((t - 1) w_xp[k] - t w_xp[k1]) + (1 - t) w_fp[k] + t w_fp[k1])``."""
    w_x, w_xp, w_fp, w_left, w_right = [None if g is None else np.asarray(g, dtype=np.float64)
                                         for g in _pair(dw, 5)]
    x_array = np.asarray(x, dtype=np.float64)
    points = np.asarray(xp_points, dtype=np.float64)
    values = np.asarray(fp, dtype=np.float64).reshape(-1)
    g = np.broadcast_to(np.asarray(dy, dtype=np.float64), x_array.shape)
    n = points.size
    below, above = x_array < points[0], x_array > points[-1]
    inside = ~(below | above)
    k = np.clip(np.searchsorted(points, x_array, side="right") - 1, 0, max(n - 2, 0))
    k1 = np.minimum(k + 1, n - 1)
    width = points[k1] - points[k]
    moving = inside & (width > 0)
    safe = np.where(width > 0, width, 1.0)
    t = np.where(moving, (x_array - points[k]) / safe, 0.0)
    slope = np.where(width > 0, (values[k1] - values[k]) / safe, 0.0)
    at_right_end = inside & (x_array == points[-1])
    t = np.where(at_right_end & (width == 0), 1.0, t)
    zero = np.zeros(x_array.shape)
    a0, a1 = (zero, zero) if w_xp is None else (w_xp[k], w_xp[k1])
    f0, f1 = (zero, zero) if w_fp is None else (w_fp.reshape(-1)[k], w_fp.reshape(-1)[k1])
    wx = zero if w_x is None else np.broadcast_to(w_x, x_array.shape)
    wx = np.where(inside & ~at_right_end, wx, 0.0)
    q = np.where(moving, (t - 1) * a0 - t * a1, 0.0)
    d_g = wx * slope + slope * q + np.where(inside, (1 - t) * f0 + t * f1, 0.0)
    if w_fp is not None:
        d_g = d_g + np.where(below & (left is None), w_fp.reshape(-1)[0], 0.0)
        d_g = d_g + np.where(above & (right is None), w_fp.reshape(-1)[-1], 0.0)
    if w_left is not None and left is not None:
        d_g = d_g + np.where(below, w_left, 0.0)
    if w_right is not None and right is not None:
        d_g = d_g + np.where(above, w_right, 0.0)
    d_x = np.where(moving, g * ((f1 - f0) + slope * (a0 - a1)) / safe, 0.0)
    by_value = np.where(moving, g * (wx + q) / safe, 0.0)    # d/d fp[k1]; minus for fp[k]
    d_fp = np.zeros(n)
    np.add.at(d_fp, k1, by_value)
    np.add.at(d_fp, k, -by_value)
    d_p0 = g * (slope * (wx + q) / safe + (slope * (a0 - a1) + f1 - f0) * (t - 1) / safe)
    d_p1 = g * (-slope * (wx + q) / safe - (slope * (a0 - a1) + f1 - f0) * t / safe)
    d_xp = np.zeros(n)
    np.add.at(d_xp, k, np.where(moving, d_p0, 0.0))
    np.add.at(d_xp, k1, np.where(moving, d_p1, 0.0))
    d_dy = rt.unbroadcast(d_g, dy) if np.ndim(dy) else float(np.sum(d_g))
    d_x = d_x if np.ndim(x) else float(d_x)
    return [d_dy, d_x, _shaped_like(d_xp, xp_points if isinstance(xp_points, list) else points),
            _shaped_like(d_fp, fp if isinstance(fp, list) else np.asarray(fp))]


@adjoint(rt.interp_vjp)
def interp_vjp_adj(dw, w, dy, x, xp_points, fp, left=None, right=None, period=None):
    g = rt.interp_vjp_adjoint(dw, dy, x, xp_points, fp, left, right)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2), rt.seq_item(g, 3), None, None, None


@tangent(rt.interp_vjp, no_tangent=("left", "right", "period"))
def interp_vjp_tan(w, dy, x, xp_points, fp, left=None, right=None, period=None, *, t_dy, t_x, t_fp):
    return rt.interp_vjp_tangent(dy, x, xp_points, fp, left, right, t_dy, t_x, t_fp)


# ----- diff's ends and .tolist(): linear in the cotangent -----

# (their tangents: linear, rules/jvp_runtime.py)


@rt.helper
def diff_end_vjp_adjoint(dw, a, n, axis, prepend, append, end):
    """The transpose of ``diff_end_vjp``: ``diff`` of ``a``'s zeros joined with ``dw`` in
    the ``end``'s place (broadcast as ``diff`` broadcasts it) and zeros at the other end
    (joined here: Dask's ``diff`` computes its ``prepend``)."""
    xp = namespace(a, dw)
    shape = np.shape(a)
    ax = axis % len(shape)
    parts = []
    for index, value in enumerate((prepend, None, append)):
        if index == 1:
            parts.append(xp.zeros(shape))
        elif value is not None:
            part = dw if index == 2 * end else xp.zeros(np.shape(value))
            if not np.ndim(value):
                part = xp.broadcast_to(part, shape[:ax] + (1,) + shape[ax + 1:])
            parts.append(part)
    return xp.diff(xp.concatenate(parts, axis=ax), n=n, axis=ax)


@adjoint(rt.diff_end_vjp)
def diff_end_vjp_adj(dw, w, dy, a, n, axis, prepend, append, end):
    return rt.diff_end_vjp_adjoint(dw, a, n, axis, prepend, append, end), None, None, None, None, None, None


@rt.helper
def tolist_adjoint(dw, a):
    """The transpose of ``tolist_vjp``: the array's cotangent as the nested list, as
    ``.tolist()``'s tangent makes it (refused on Dask, where it would compute)."""
    rt.refuse_dask(dw, "rt.tolist_adjoint (.tolist() of a gradient computes it)")
    return rt.tolist_jvp(dw, a)


@adjoint(rt.tolist_vjp)
def tolist_vjp_adj(dw, w, dy, a):
    return rt.tolist_adjoint(dw, a), None


# ----- np.gradient's spacings: -<dy, y> / h per axis -----

@rt.helper
def gradient_step_vjp_tangent(dy, y, spacings, axis, t_dy, t_y, t_spacings):
    """The tangent of ``gradient_step_vjp(dy, y, spacings, axis)``: bilinear in ``dy`` and
    ``y``, and each entry ``-c / h`` moves by ``-entry * t_h / h`` with its spacing."""
    steps = gradient_step_vjp(dy, y, spacings, axis)
    out = [0.0] * len(steps)
    if t_dy is not None:
        out = [o + v for o, v in zip(out, gradient_step_vjp(t_dy, y, spacings, axis))]
    if t_y is not None:
        out = [o + v for o, v in zip(out, gradient_step_vjp(dy, t_y, spacings, axis))]
    for k, t_h in enumerate(t_spacings if isinstance(t_spacings, (list, tuple)) else ()):
        if t_h is not None and not rt.is_zero_grad(t_h):
            out[k] = out[k] - steps[k] * t_h / spacings[k]
    return out


@tangent(rt.gradient_step_vjp, no_tangent=("axis",))
def gradient_step_vjp_tan(w, dy, y, spacings, axis=None, *, t_dy, t_y, t_spacings):
    return rt.gradient_step_vjp_tangent(dy, y, spacings, axis, t_dy, t_y, t_spacings)


@rt.helper
def gradient_step_vjp_adjoint(dw, dy, y, spacings, axis=None):
    """The adjoint of ``gradient_step_vjp`` for its list cotangent ``dw`` (one number per
    spacing): ``[d dy, d y, d spacings]``; axis ``k``'s entry is ``-<dy_k, y_k> / h``."""
    xp = namespace(*_per_axis(y))
    results, cotangents = _per_axis(y), _per_axis(dy)
    axes, steps = _gradient_steps(xp.ndim(results[0]), spacings, axis)
    weights = [0.0 if g is None or rt.is_zero_grad(g) else g for g in _pair(dw, len(spacings))]
    per_axis = [weights[0 if len(spacings) == 1 else k] for k in range(len(axes))]
    d_dy = [-wk * yk / h for wk, yk, h in zip(per_axis, results, steps)]
    d_y = [-wk * (0.0 if dk is None else xp.asarray(dk)) / h for wk, dk, h in zip(per_axis, cotangents, steps)]
    entries = gradient_step_vjp(dy, y, spacings, axis)
    d_steps = [-wk * entry / h for wk, entry, h in zip(weights, entries, spacings)]
    if not isinstance(dy, (list, tuple)):
        d_dy, d_y = d_dy[0], d_y[0]
    return [d_dy, d_y, d_steps]


@adjoint(rt.gradient_step_vjp, sequences=("dy", "y", "spacings"))   # dy, y: a list per axis
def gradient_step_vjp_adj(dw, w, dy, y, spacings, axis=None):
    g = rt.gradient_step_vjp_adjoint(dw, dy, y, spacings, axis)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2), None


returns_sequence(rt.trapezoid_vjp_tangent, rt.multi_dot_vjp_tangent, rt.interp_vjp_tangent,
                 rt.trapezoid_vjp_adjoint, rt.multi_dot_vjp_adjoint, rt.interp_vjp_adjoint,
                 rt.gradient_step_vjp_tangent, rt.gradient_step_vjp_adjoint)
