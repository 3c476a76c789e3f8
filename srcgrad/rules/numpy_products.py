"""Adjoint rules of NumPy's products: ``matmul`` (and ``@``), ``dot``, ``vdot``,
``inner``, ``outer``, ``tensordot``, ``einsum``, ``kron``, ``cross`` and ``convolve``.

``np.einsum(subscripts, *operands)`` has a var-positional parameter: its entry
is a list with one gradient per operand; in the sublist form
``einsum(x, [0], y, [0], [])`` the first operand is ``subscripts``.
"""

import operator

import numpy as np

from srcgrad import runtime as rt
from srcgrad.rules import Method, adjoint, tangent
from srcgrad.runtime.arrays import is_array, namespace
from srcgrad.runtime.broadcast import unbroadcast

xp = None  # placeholder: the array namespace, bound in generated code
_ndarray = np.ndarray

# ----- Products -----


@adjoint(np.matmul, operator.matmul)
def matmul(dy, y, x1, x2):
    return rt.matmul_grad_a(dy, x1, x2), rt.matmul_grad_b(dy, x1, x2)


def _matmul_operands(dy, a, b):
    xp = namespace(dy, a, b)
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    dy2 = xp.asarray(dy)
    if b.ndim == 1:
        dy2 = xp.expand_dims(dy2, -1)
    if a.ndim == 1:
        dy2 = xp.expand_dims(dy2, -2)
    return xp, a2, b2, dy2


@rt.helper
def matmul_grad_a(dy, a, b):
    """Gradient of ``a @ b`` with respect to ``a`` (1-D and batched operands too)."""
    if type(dy) is _ndarray and type(a) is _ndarray and type(b) is _ndarray \
            and dy.ndim == a.ndim == b.ndim == 2:   # (the common case: what the rest computes)
        g = np.matmul(dy, b.T)
        return g if g.shape == a.shape else unbroadcast(g, a)
    if not (is_array(dy) or is_array(a) or is_array(b)):
        return dy * b
    xp, a2, b2, dy2 = _matmul_operands(dy, a, b)
    g = xp.matmul(dy2, xp.swapaxes(b2, -1, -2))
    if a.ndim == 1:
        g = g[..., 0, :]
    return unbroadcast(g, a)


@rt.helper
def matmul_grad_b(dy, a, b):
    """Gradient of ``a @ b`` with respect to ``b``."""
    if type(dy) is _ndarray and type(a) is _ndarray and type(b) is _ndarray \
            and dy.ndim == a.ndim == b.ndim == 2:   # (as in matmul_grad_a)
        g = np.matmul(a.T, dy)
        return g if g.shape == b.shape else unbroadcast(g, b)
    if not (is_array(dy) or is_array(a) or is_array(b)):
        return dy * a
    xp, a2, b2, dy2 = _matmul_operands(dy, a, b)
    g = xp.matmul(xp.swapaxes(a2, -1, -2), dy2)
    if b.ndim == 1:
        g = g[..., :, 0]
    return unbroadcast(g, b)


@adjoint(np.dot)
def dot(dy, y, a, b):
    return rt.dot_grad_a(dy, a, b), rt.dot_grad_b(dy, a, b)


@rt.helper
def dot_grad_a(dy, a, b):
    """Gradient of ``dot(a, b)`` with respect to ``a`` (every ``ndim`` case of np.dot)."""
    if not is_array(a) or not is_array(b) or a.ndim == 0 or b.ndim == 0:
        return unbroadcast(dy * b, a)
    xp = namespace(dy, a, b)
    dy = xp.asarray(dy)
    if b.ndim == 1:
        return dy[..., None] * b
    daxes = tuple(range(a.ndim - 1, dy.ndim))
    baxes = tuple(i for i in range(b.ndim) if i != b.ndim - 2)
    return xp.tensordot(dy, b, axes=(daxes, baxes))


@rt.helper
def dot_grad_b(dy, a, b):
    """Gradient of ``dot(a, b)`` with respect to ``b``."""
    if not is_array(a) or not is_array(b) or a.ndim == 0 or b.ndim == 0:
        return unbroadcast(dy * a, b)
    xp = namespace(dy, a, b)
    dy = xp.asarray(dy)
    lead = tuple(range(a.ndim - 1))
    g = xp.tensordot(a, dy, axes=(lead, lead))
    if b.ndim == 1:
        return g
    return xp.moveaxis(g, 0, -2)


@adjoint(Method("dot"))
def dot_method(dy, y, self, b):
    return rt.dot_grad_a(dy, self, b), rt.dot_grad_b(dy, self, b)


@adjoint(np.vdot)
def vdot(dy, y, a, b):
    """Real inputs: the flattened dot product."""
    return dy * xp.reshape(b, rt.shape_of(a)), dy * xp.reshape(a, rt.shape_of(b))


@adjoint(np.inner)
def inner(dy, y, a, b):
    """``tensordot`` over the last axes of both (a scalar operand: a product)."""
    axes = rt.inner_axes(a, b)
    return rt.tensordot_grad_a(dy, a, b, axes), rt.tensordot_grad_b(dy, a, b, axes)


@rt.helper
def inner_axes(a, b):
    """The ``tensordot`` axes of ``inner(a, b)``: the last of each, none for a scalar."""
    na, nb = np.ndim(a), np.ndim(b)
    return ((na - 1,), (nb - 1,)) if na and nb else 0


def _tensordot_axes(a, b, axes):
    if isinstance(axes, int):
        return list(range(a.ndim - axes, a.ndim)), list(range(axes))
    aa, bb = axes
    aa = [aa] if isinstance(aa, int) else list(aa)
    bb = [bb] if isinstance(bb, int) else list(bb)
    return [x % a.ndim for x in aa], [x % b.ndim for x in bb]


def _tensordot(xp, a, b, a_axes, b_axes):
    """``xp.tensordot`` over the paired axes; none is ``axes=0`` (CuPy refuses empty
    axis lists when an operand is 0-d, where NumPy takes them)."""
    return xp.tensordot(a, b, axes=(a_axes, b_axes) if a_axes else 0)


@rt.helper
def tensordot_grad_a(dy, a, b, axes=2):
    """Gradient of ``tensordot(a, b, axes)`` with respect to ``a``."""
    xp = namespace(dy, a, b)
    a, b = xp.asarray(a), xp.asarray(b)  # a Python number is a 0-d operand
    a_axes, b_axes = _tensordot_axes(a, b, axes)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    g = _tensordot(xp, xp.asarray(dy), b, list(range(len(a_free), len(a_free) + len(b_free))), b_free)
    dest = a_free + [a_axes[b_axes.index(j)] for j in sorted(b_axes)]
    return xp.transpose(g, tuple(int(i) for i in np.argsort(dest)))


@rt.helper
def tensordot_grad_b(dy, a, b, axes=2):
    """Gradient of ``tensordot(a, b, axes)`` with respect to ``b``."""
    xp = namespace(dy, a, b)
    a, b = xp.asarray(a), xp.asarray(b)  # a Python number is a 0-d operand
    a_axes, b_axes = _tensordot_axes(a, b, axes)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    g = _tensordot(xp, a, xp.asarray(dy), a_free, list(range(len(a_free))))
    dest = [b_axes[a_axes.index(i)] for i in sorted(a_axes)] + b_free
    return xp.transpose(g, tuple(int(i) for i in np.argsort(dest)))


@adjoint(np.outer)
def outer(dy, y, a, b):
    return (xp.reshape(xp.dot(dy, xp.ravel(b)), rt.shape_of(a)),
            xp.reshape(xp.dot(xp.ravel(a), dy), rt.shape_of(b)))


@adjoint(np.tensordot)
def tensordot(dy, y, a, b, axes=2):
    return rt.tensordot_grad_a(dy, a, b, axes), rt.tensordot_grad_b(dy, a, b, axes), None


@adjoint(np.einsum)
def einsum(dy, y, subscripts, *operands, optimize=False):
    """``operands`` is var-positional: its entry is a list, one gradient per operand.
    In the sublist form ``einsum(x, [0], y, [0], [])`` ``subscripts`` is ``x``."""
    g = rt.einsum_vjp(dy, subscripts, operands)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), None


def _einsum_specs(subscripts, shapes):
    import string
    s = subscripts.replace(" ", "")
    if "->" in s:
        lhs, out = s.split("->")
    else:
        lhs, out = s, None
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise ValueError("srcgrad: einsum subscripts do not match the number of operands")
    used = set(c for c in s if c.isalpha())
    free = [c for c in string.ascii_letters if c not in used]
    counts = []
    for spec, shape in zip(ins, shapes):
        counts.append(len(shape) - (len(spec) - 3) if "..." in spec else 0)
    n_ell = max(counts) if counts else 0
    ell = "".join(free[:n_ell])
    free = free[n_ell:]
    specs = [spec.replace("...", ell[n_ell - k:] if k else "") for spec, k in zip(ins, counts)]
    if out is None:
        letters = [c for spec in ins for c in spec if c.isalpha()]
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    else:
        out = out.replace("...", ell)
    return specs, out, free


def _einsum_sublists(args):
    """The subscripts string and operands of einsum's sublist form
    ``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])``."""
    import string

    def letters(sublist):
        return "".join("..." if k is Ellipsis else string.ascii_letters[k] for k in sublist)

    ops, subs = list(args[0::2]), list(args[1::2])
    out = ops.pop() if len(args) % 2 else None
    subscripts = ",".join(letters(s) for s in subs)
    return (subscripts if out is None else subscripts + "->" + letters(out)), ops


@rt.helper
def einsum_vjp(dy, subscripts, operands):
    """Gradients of ``einsum(subscripts, *operands)``: the pair (gradient of
    ``subscripts``, list with one gradient per entry of ``operands``).

    The subscripts-string form has no gradient for ``subscripts``; in the sublist
    form ``einsum(op0, sublist0, op1, sublist1, ..., [out])`` the first is op0's
    and the sublists get None. Each gradient is itself an einsum; repeated
    indices in one operand (a diagonal) are handled with identity matrices,
    indices summed away inside one operand with vectors of ones, and broadcast
    ellipsis dimensions are summed back.
    """
    if isinstance(subscripts, str):
        return None, _einsum_grads(dy, subscripts, operands)
    spec, ops = _einsum_sublists((subscripts,) + tuple(operands))
    grads = _einsum_grads(dy, spec, ops)
    # operands[k] is argument k + 1: an operand where that is even (not the output sublist)
    return grads[0], [grads[(k + 1) // 2] if k % 2 and (k + 1) // 2 < len(grads) else None
                      for k in range(len(operands))]


def _einsum_args(subscripts, operands, first, rest):
    """``first`` (for ``subscripts``) and ``rest`` (one per operand) as one list aligned
    with ``(subscripts,) + operands``; a missing or zero entry is None."""
    def zero(v):
        return v is None or isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0
    rest = list(rest) if isinstance(rest, (list, tuple)) else [None] * len(operands)
    rest += [None] * (len(operands) - len(rest))
    n = len(operands) + 1
    if isinstance(subscripts, str):
        positions = set(range(1, n))
    else:   # op0, sublist0, op1, sublist1, ..., [output sublist]: the sublists have none
        positions = set(range(0, n - (n % 2 == 1 and n > 1), 2))
    return [None if k not in positions or zero(v) else v for k, v in enumerate([first] + rest)]


def _einsum_swapped(dy, subscripts, operands, replacements):
    """``sum_m einsum_vjp(dy, args with arg m replaced by replacements[m])``, entry ``m``
    of each dropped: the derivative of ``einsum_vjp(dy, ...)`` in the operands along
    ``replacements`` (einsum is linear in each operand), and also that derivative's
    adjoint (``<dw_k, E_k(dy, ...)>`` is ``<dy, einsum(args, k <- dw_k)>``). As a list
    aligned with ``(subscripts,) + operands``, None where nothing reached."""
    args = [subscripts] + list(operands)
    total = [None] * len(args)
    for m, r in enumerate(replacements):
        if r is None:
            continue
        swapped = list(args)
        swapped[m] = r
        first, rest = einsum_vjp(dy, swapped[0], tuple(swapped[1:]))
        for k, g in enumerate([first] + list(rest)):
            if k != m and g is not None:
                total[k] = g if total[k] is None else total[k] + g
    return total


@rt.helper
def einsum_vjp_tangent(dy, subscripts, operands, t_dy, t_first, t_operands):
    """The tangent of ``einsum_vjp(dy, subscripts, operands)``: linear in ``dy``, and in
    each operand (``t_first``: ``[tangent of subscripts]``, an operand in the sublist
    form). The pair ``einsum_vjp`` returns, None for entries without a tangent."""
    total = _einsum_swapped(dy, subscripts, operands,
                            _einsum_args(subscripts, operands, (t_first or [None])[0], t_operands))
    if t_dy is not None:
        first, rest = einsum_vjp(t_dy, subscripts, operands)
        for k, g in enumerate([first] + list(rest)):
            if g is not None:
                total[k] = g if total[k] is None else total[k] + g
    args = [subscripts] + list(operands)
    operand = set(k for k, _ in enumerate(args) if is_array(args[k]) or isinstance(args[k], (int, float)))
    operand -= {0} if isinstance(subscripts, str) else set()
    total = [rt.tangent_zero(args[k]) if g is None and k in operand else g for k, g in enumerate(total)]
    return total[0], total[1:]


@rt.helper
def einsum_vjp_adjoint(dw, dy, subscripts, operands):
    """The adjoint of ``einsum_vjp(dy, subscripts, operands)`` for its pair's cotangent
    ``dw``: ``(d dy, d subscripts, [d operand...])``. For ``dy`` it is the einsum with
    each operand replaced by its cotangent (einsum_jvp); for the operands, _einsum_swapped."""
    items = list(dw) if isinstance(dw, (list, tuple)) else [None, None]
    replacements = _einsum_args(subscripts, operands, items[0], items[1] if len(items) > 1 else None)
    d_dy = rt.einsum_jvp(subscripts, operands, [replacements[0]], replacements[1:])
    total = [0.0 if g is None else g for g in _einsum_swapped(dy, subscripts, operands, replacements)]
    return d_dy, total[0], total[1:]


@tangent(rt.einsum_vjp)
def einsum_vjp_tan(y, dy, subscripts, operands, *, t_dy, t_subscripts, t_operands):
    return rt.einsum_vjp_tangent(dy, subscripts, operands, t_dy, [t_subscripts], t_operands)


@adjoint(rt.einsum_vjp, sequences=("operands",))
def einsum_vjp_adj(dw, w, dy, subscripts, operands):
    g = rt.einsum_vjp_adjoint(dw, dy, subscripts, operands)
    return rt.seq_item(g, 0), rt.seq_item(g, 1), rt.seq_item(g, 2)


def _einsum_grads(dy, subscripts, operands):
    xp = namespace(dy, *operands)
    ops = [xp.asarray(o) for o in operands]
    specs, out, free = _einsum_specs(subscripts, [o.shape for o in ops])
    sizes = {}
    for spec, o in zip(specs, ops):
        for c, n in zip(spec, o.shape):
            sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]   # 1 broadcasts (0 too is a size)
    full = [xp.broadcast_to(o, tuple(sizes[c] for c in spec)) for spec, o in zip(specs, ops)]
    dy = xp.asarray(dy)
    grads = []
    for i, spec in enumerate(specs):
        others = [(specs[j], full[j]) for j in range(len(specs)) if j != i]
        new_spec = []
        extra = []
        seen = set()
        spare = iter(free)
        for c in spec:
            if c in seen:
                n = next(spare)
                new_spec.append(n)
                extra.append((c + n, xp.eye(sizes[c], dtype=dy.dtype)))
            else:
                seen.add(c)
                new_spec.append(c)
        available = set(out) | set("".join(s for s, _ in others)) | set("".join(s for s, _ in extra))
        for c in sorted(set(new_spec) - available):
            extra.append((c, xp.ones(sizes[c], dtype=dy.dtype)))
        expr = ",".join([out] + [s for s, _ in others] + [s for s, _ in extra]) + "->" + "".join(new_spec)
        g = xp.einsum(expr, dy, *[o for _, o in others], *[o for _, o in extra])
        grads.append(unbroadcast(g, ops[i]) if g.shape != ops[i].shape else g)
    return grads


@adjoint(np.kron)
def kron(dy, y, a, b):
    g = rt.kron_vjp(dy, a, b)
    return g[0], g[1]


@rt.helper
def kron_vjp(dy, a, b):
    """Gradients of ``kron(a, b)``: the pair ``(da, db)``."""
    xp = namespace(dy, a, b)
    a = xp.asarray(a)
    b = xp.asarray(b)
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + a.shape
    sb = (1,) * (n - b.ndim) + b.shape
    inter = []
    for x, y in zip(sa, sb):
        inter += [x, y]
    g = xp.asarray(dy).reshape(inter)
    b_inter = []
    a_inter = []
    for x, y in zip(sa, sb):
        a_inter += [x, 1]
        b_inter += [1, y]
    da = (g * b.reshape(b_inter)).sum(axis=tuple(range(1, 2 * n, 2))).reshape(a.shape)
    db = (g * a.reshape(a_inter)).sum(axis=tuple(range(0, 2 * n, 2))).reshape(b.shape)
    return da, db


@tangent(np.cross)
def cross_tangent(y, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, *, t_a, t_b):
    return xp.cross(t_a, b, axisa, axisb, axisc, axis) + xp.cross(a, t_b, axisa, axisb, axisc, axis)


@adjoint(np.cross)
def cross(dy, y, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """3-vectors along any axes (``axisa``/``axisb``/``axisc`` or ``axis``): the
    vector axes are moved last, crossed, and moved back."""
    ax = rt.cross_axes(axisa, axisb, axisc, axis)
    g = xp.moveaxis(dy, ax[2], -1)
    a3 = xp.moveaxis(a, ax[0], -1)
    b3 = xp.moveaxis(b, ax[1], -1)
    return (xp.moveaxis(rt.unbroadcast(xp.cross(b3, g), a3), -1, ax[0]),
            xp.moveaxis(rt.unbroadcast(xp.cross(g, a3), b3), -1, ax[1]), None, None, None, None)


@rt.helper
def cross_axes(axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The vector axes ``(of a, of b, of the result)`` of ``np.cross``: ``axis``, when
    given, overrides the three."""
    if axis is not None:
        return axis, axis, axis
    return axisa, axisb, axisc


@adjoint(np.convolve)
def convolve(dy, y, a, v, mode="full"):
    g = rt.convolve_vjp(dy, a, v, mode)
    return g[0], g[1], None


@rt.helper
def convolve_vjp(dy, a, v, mode="full"):
    """Gradients of ``convolve(a, v, mode)``: the pair ``(da, dv)``."""
    xp = namespace(dy, a, v)
    a = xp.asarray(a)
    v = xp.asarray(v)
    dy = xp.asarray(dy)
    n, m = a.shape[0], v.shape[0]
    full = n + m - 1
    if mode == "full":
        start = 0
    elif mode == "same":
        start = (min(n, m) - 1) // 2
    elif mode == "valid":
        start = min(n, m) - 1
    else:
        raise ValueError(f"srcgrad: unknown convolve mode {mode!r}")
    g = xp.zeros(full, dtype=np.result_type(dy.dtype, a.dtype, v.dtype))
    g[start:start + dy.shape[0]] = dy
    return xp.correlate(g, v, "valid"), xp.correlate(g, a, "valid")

