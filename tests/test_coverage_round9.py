"""Coverage round nine: second derivatives through ``np.linalg.svd``, ``qr``, ``lstsq`` and
the SVD norms ('nuc', 2, -2), checked to second order (``sg.hessian``, grad of grad,
``sg.jvp`` of the gradient) against central differences of ``sg.grad`` in float64; a
gradient's composed code (``as_function``) called with structures; ``np.maximum.at`` /
``np.minimum.at``; ``np.piecewise`` with functions; ``np.pad`` with its mode in a
variable; ``np.polyfit`` with ``full=True`` / ``cov=True``."""

import warnings
from dataclasses import dataclass

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import runtime as rt
from srcgrad.rules import decomposition_second_order as dso
from srcgrad.testing import numerical_grad

RNG = np.random.default_rng(9)
TALL = RNG.normal(size=(4, 3))          # distinct singular values, full column rank
WIDE = RNG.normal(size=(2, 3))
SQUARE = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
BATCH = RNG.normal(size=(2, 3, 2))
RHS = RNG.normal(size=(4, 2))
RHS1 = RNG.normal(size=4)


def _second_order_matches(f, x, wrt=0, args=()):
    """sg.hessian, grad of grad and jvp of grad of ``f`` at ``x`` against central
    differences of sg.grad."""
    full = (x,) + tuple(args) if wrt == 0 else tuple(args) + (x,)
    n = x.size
    grad = sg.grad(f, wrt=wrt)

    def at(y):
        return (y,) + tuple(args) if wrt == 0 else tuple(args) + (y,)
    want = np.array([numerical_grad(lambda y: grad(*at(y)).ravel()[k], (x,)).ravel() for k in range(n)])
    np.testing.assert_allclose(np.reshape(sg.hessian(f, wrt=wrt)(*full), (n, n)), want, atol=1e-6)
    seed = np.linspace(0.5, 1.5, n).reshape(x.shape)
    np.testing.assert_allclose(np.ravel(sg.grad(grad, wrt=wrt)(*full, grad_outputs=seed)),
                               want.T @ seed.ravel(), atol=1e-6)
    tangents = tuple(seed if i == wrt else None for i in range(len(full)))
    _, tan = sg.jvp(grad, full, tangents)
    np.testing.assert_allclose(np.ravel(tan), want @ seed.ravel(), atol=1e-6)


# ----- 1. np.linalg.svd, qr, lstsq and the SVD norms to second order -----


def svd_factors(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(u[..., 0, :] ** 3) + np.sum(s ** 3) + np.sum(np.sin(vh) * np.arange(vh.shape[-1]))


def svd_values(a):
    return np.sum(np.sin(np.linalg.svd(a, compute_uv=False)))


def svd_square(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(s ** 2 * u[0]) + np.sum(vh[:, 0] ** 3)


@pytest.mark.parametrize("f", [svd_factors, svd_values])
@pytest.mark.parametrize("a", [TALL, WIDE, BATCH], ids=["tall", "wide", "batched"])
def test_svd_second_order(f, a):
    # (was: "hessian: no tangent for rt.svd_vjp" / "grad of grad: no gradient rule for rt.svd_vjp")
    _second_order_matches(f, a.copy())


def test_svd_of_a_square_matrix_second_order():
    _second_order_matches(svd_square, SQUARE.copy())


def qr_reduced(a):
    q, r = np.linalg.qr(a)
    return np.sum(q ** 3 * np.arange(q.shape[-1])) + np.sum(np.sin(r))


def qr_r_only(a):
    return np.sum(np.linalg.qr(a, mode="r") ** 2 * np.arange(3.0))


@pytest.mark.parametrize("f", [qr_reduced, qr_r_only])
@pytest.mark.parametrize("a", [TALL, SQUARE], ids=["tall", "square"])
def test_qr_second_order(f, a):
    _second_order_matches(f, a.copy())


def lstsq_all(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b, rcond=None)
    return np.sum(x ** 2) + np.sum(res * np.arange(1.0, 1.0 + np.size(res))) + np.sum(s ** 3)


def lstsq_solution(a, b):
    return np.sum(np.sin(np.linalg.lstsq(a, b, rcond=None)[0]))


@pytest.mark.parametrize("f", [lstsq_all, lstsq_solution])
@pytest.mark.parametrize("b", [RHS, RHS1], ids=["columns", "vector"])
@pytest.mark.parametrize("wrt", [0, 1])
def test_lstsq_second_order(f, b, wrt):
    args = (TALL.copy(), b.copy())
    _second_order_matches(f, args[wrt], wrt=wrt, args=args[1 - wrt:2 - wrt])


def nuclear(a):
    return np.linalg.norm(a, "nuc") ** 2


def spectral(a):
    return np.linalg.norm(a, 2) * np.linalg.norm(a, -2) + np.linalg.norm(a.T, ord=2) ** 3


def nuclear_over_axes(a):
    return np.sum(np.linalg.norm(a, "nuc", axis=(0, 2), keepdims=True) ** 2 * np.arange(1.0, 3.0)[:, None])


def spectral_over_axes(a):
    return np.sum(np.sin(np.linalg.norm(a, -2, axis=(2, 0))))


@pytest.mark.parametrize("f, a", [(nuclear, TALL), (nuclear, WIDE), (spectral, TALL),
                                  (nuclear_over_axes, BATCH.transpose(1, 0, 2)),
                                  (spectral_over_axes, BATCH.transpose(1, 0, 2))],
                         ids=["nuc_tall", "nuc_wide", "spectral", "nuc_axes", "spectral_axes"])
def test_svd_norms_second_order(f, a):
    # (was: "the second derivative of np.linalg.norm with ord='nuc' (from the SVD) is not supported")
    _second_order_matches(f, np.ascontiguousarray(a))


def test_the_restated_helpers_match_the_first_order_ones():
    # the rules differentiate these restatements: they must be the helpers' math
    y = np.linalg.svd(TALL, full_matrices=False)
    dy = [RNG.normal(size=v.shape) for v in y]
    np.testing.assert_allclose(dso._svd_vjp_math(*dy, *y), rt.svd_vjp(dy, y, TALL, False, True), rtol=1e-12)
    np.testing.assert_allclose(dso._svd_values_vjp_math(dy[1], TALL), rt.svd_vjp(dy[1], y[1], TALL, False, False),
                               rtol=1e-12)
    dq = [RNG.normal(size=TALL.shape), RNG.normal(size=(3, 3))]
    np.testing.assert_allclose(dso._qr_vjp_math(*dq, TALL), rt.qr_vjp(dq, None, TALL), rtol=1e-12)
    res = np.linalg.lstsq(TALL, RHS, rcond=None)
    dl = [RNG.normal(size=res[0].shape), RNG.normal(size=2), 0.0, RNG.normal(size=3)]
    got = dso._lstsq_vjp_math(dl[0], dl[1], dl[3], res[0], TALL, RHS)
    for g, w in zip(got, rt.lstsq_vjp(dl, res, TALL, RHS)):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def svd_full_of_a_tall_matrix(a):
    return np.sum(np.linalg.svd(a)[0] ** 3)


def test_full_matrices_of_a_tall_matrix_stays_refused_one_order_up():
    with pytest.raises(sg.errors.UnsupportedError, match="full_matrices=True"):
        sg.hessian(svd_full_of_a_tall_matrix)(TALL.copy())


# ----- 2. sg.grad(f).as_function() called directly with structures -----


def dict_params(p, x):
    return np.sum(np.sin(p["w"] * x)) + p["b"] ** 2 * np.sum(x)


def list_params(ps):
    return np.sum(ps[0] * ps[1] ** 2)


@dataclass
class Params:
    w: np.ndarray
    b: float


def dataclass_params(p):
    return np.sum(p.w ** 3) * p.b


W2, X2 = np.array([0.5, -1.0]), np.array([1.0, 2.0])


def _hand(f):
    """Hand-derived gradient and Hessian-vector product along ones."""
    if f is dict_params:
        p = {"w": W2, "b": 1.5}
        grad = {"w": np.cos(W2 * X2) * X2, "b": 2 * 1.5 * np.sum(X2)}
        hv = {"w": -np.sin(W2 * X2) * X2 ** 2, "b": 2 * np.sum(X2)}
        return (p, X2), grad, hv
    if f is list_params:
        a, b = np.array([1.0, -2.0]), np.array([0.5, 3.0])
        return ([a, b],), [b ** 2, 2 * a * b], [2 * b, 2 * b + 2 * a]
    w = np.array([1.0, 2.0])
    return (Params(w, 2.0),), Params(3 * w ** 2 * 2.0, np.sum(w ** 3)), \
        Params(6 * w * 2.0 + 3 * w ** 2, np.sum(3 * w ** 2))


def _leaves(v):
    if isinstance(v, Params):
        return [v.w, v.b]
    return sg.pytree.tree_leaves(v)


def _ones_like(v):
    if isinstance(v, Params):
        return Params(np.ones_like(v.w), 1.0)
    if isinstance(v, dict):
        return {k: np.ones_like(np.asarray(x)) * 1.0 for k, x in v.items()}
    return [np.ones_like(x) for x in v]


@pytest.mark.parametrize("f", [dict_params, list_params, dataclass_params])
def test_the_composed_gradient_called_with_structures(f):
    # (was: "higher-order derivatives (grad of grad, as_function) take arrays and floats;
    # 'p' is a dict"; of the dataclass: "no gradient rule for the attribute .w")
    args, grad, hv = _hand(f)
    composed = sg.grad(f).as_function()
    got = composed(*args)
    assert type(got) is type(grad)
    for g, w in zip(_leaves(got), _leaves(grad)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    # still what srcgrad differentiates again: its gradient is the Hessian-vector product
    got_hv = sg.grad(composed)(*args, grad_outputs=_ones_like(args[0]))
    for g, w in zip(_leaves(got_hv), _leaves(hv)):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_the_composed_gradient_still_refuses_arrays_where_it_reads_fields():
    with pytest.raises(sg.SrcgradError, match="attribute .w"):
        sg.grad(dataclass_params).as_function()(np.ones(2))


# ----- 3. np.maximum.at / np.minimum.at -----


IDX = np.array([0, 2, 2, 4, 0, 2])
K5 = np.arange(1.0, 6.0)


def maximum_at(a, v):
    y = a * 1.0
    np.maximum.at(y, IDX, v)
    return np.sum(y ** 2 * K5)


def maximum_at_as_a_loop(a, v):
    y = a * 1.0
    for i in range(6):
        y[IDX[i]] = np.maximum(y[IDX[i]], v[i])
    return np.sum(y ** 2 * K5)


def minimum_at_rows(a, v):
    y = a + 0.0
    np.minimum.at(y, (slice(None), [1, 1, 0]), v)
    return np.sum(np.sin(y) * a)


def minimum_at_scalar(a, v):
    y = a.copy()
    np.minimum.at(y, [1, 3, 1], v[0] * 2.0)
    return np.sum(y ** 3)


A5, V6 = RNG.normal(size=5), RNG.normal(size=6)
A33, V32 = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))


@pytest.mark.parametrize("f, args", [(maximum_at, (A5, V6)), (minimum_at_rows, (A33, V32)),
                                     (minimum_at_scalar, (A5, V6))],
                         ids=["maximum_repeated", "minimum_rows", "minimum_scalar"])
@pytest.mark.parametrize("wrt", [0, 1])
def test_extremum_at_differentiates(f, args, wrt):
    # (was: "np.maximum.at ... refused")
    args = tuple(a.copy() for a in args)
    want = numerical_grad(f, args, wrt)
    np.testing.assert_allclose(sg.grad(f, wrt=wrt)(*args), want, rtol=1e-7, atol=1e-9)
    with pytest.warns(Warning):   # the helper has no Numba form: the NumPy gradient runs
        np.testing.assert_allclose(sg.grad(f, wrt=wrt, jit=True)(*args), want, rtol=1e-7, atol=1e-9)
    t = np.linspace(-1.0, 1.0, args[wrt].size).reshape(args[wrt].shape)
    tangents = tuple(t if i == wrt else None for i in range(2))
    np.testing.assert_allclose(sg.jvp(f, args, tangents)[1], np.sum(want * t), rtol=1e-7, atol=1e-9)
    _second_order_matches(f, args[wrt], wrt=wrt, args=args[1 - wrt:2 - wrt])
    assert sg.value_and_grad(f)(*args)[0] == f(*args)


def test_extremum_at_ties_follow_the_loop_of_np_maximum():
    # np.maximum splits a tie evenly at each step of NumPy's loop: at position 0, a's 1.0
    # and two values of 1.0 get 1/4, 1/4 and 1/2 (the last)
    a = np.array([1.0, 0.0, 2.0, 0.0, 3.0])
    v = np.array([1.0, 2.0, 2.0, 0.0, 1.0, 2.0])
    # (four at 2: a's entry and the first value 1/8 each, then 1/4 and 1/2)
    dy = 2 * np.array([1.0, 0.0, 2.0, 0.0, 3.0]) * K5     # d sum(y^2 k)/dy, y = a here
    np.testing.assert_allclose(sg.grad(maximum_at)(a, v), dy * [0.25, 1, 1 / 8, 1, 1])
    np.testing.assert_allclose(sg.grad(maximum_at, wrt=1)(a, v),
                               [dy[0] / 4, dy[2] / 8, dy[2] / 4, 0.0, dy[0] / 2, dy[2] / 2])
    for wrt in (0, 1):
        np.testing.assert_allclose(sg.grad(maximum_at, wrt=wrt)(a, v),
                                   sg.grad(maximum_at_as_a_loop, wrt=wrt)(a, v), rtol=1e-15)


# ----- 4. np.piecewise with functions and constant pieces -----


def _square(v):
    return v ** 2


def piecewise_lambdas(x):
    return np.sum(np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 3]))


def piecewise_mixed(x):
    # 0.5 where x < 0, _square where x > 1, np.sin otherwise (one condition fewer)
    return np.sum(np.piecewise(x, [x < 0, x > 1], [0.5, _square, lambda v: np.sin(v) * v]) * x)


def piecewise_overlapping(x, a):
    # the later piece wins where both hold, as NumPy's
    return np.sum(np.piecewise(x, [x < 1, x > -0.5], [np.cos, lambda v: v * a[0] + a[1]]) ** 2)


def piecewise_of_a_matrix(m):
    return np.sum(np.piecewise(m, [m > 0.3], [lambda v: np.exp(v), -1.0]) * m)


PX4 = np.array([-1.0, 0.5, 2.0, -0.3])
PA = np.array([1.5, -0.25])


@pytest.mark.parametrize("f, args", [(piecewise_lambdas, (PX4,)), (piecewise_mixed, (PX4,)),
                                     (piecewise_overlapping, (PX4, PA)),
                                     (piecewise_of_a_matrix, (A33,))],
                         ids=["lambdas", "mixed", "overlapping", "matrix"])
def test_piecewise_with_functions(f, args):
    # (was: "a lambda that escapes ... is not supported" / "no gradient rule for numpy.piecewise")
    args = tuple(a.copy() for a in args)
    assert sg.value_and_grad(f)(*args)[0] == f(*args)
    for wrt in range(len(args)):
        want = numerical_grad(f, args, wrt)
        np.testing.assert_allclose(sg.grad(f, wrt=wrt)(*args), want, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(sg.grad(f, wrt=wrt, jit=True)(*args), want, rtol=1e-7, atol=1e-9)
        t = np.linspace(-1.0, 1.0, args[wrt].size).reshape(args[wrt].shape)
        tangents = tuple(t if i == wrt else None for i in range(len(args)))
        np.testing.assert_allclose(sg.jvp(f, args, tangents)[1], np.sum(want * t), rtol=1e-7, atol=1e-9)
        _second_order_matches(f, args[wrt], wrt=wrt, args=args[:wrt] + args[wrt + 1:])


def piecewise_with_a_local_function(x):
    g = np.sin
    return np.sum(np.piecewise(x, [x < 0], [g, 1.0]))


def piecewise_with_extra_arguments(x):
    return np.sum(np.piecewise(x, [x < 0], [lambda v, k: v * k, 0.0], 3.0))


@pytest.mark.parametrize("f", [piecewise_with_a_local_function, piecewise_with_extra_arguments])
def test_piecewise_left_to_numpy_is_refused_at_its_line(f):
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(f)(PX4.copy())
    assert info.value.filename == __file__ and "np.piecewise" in info.value.source_line


# ----- 5. np.pad with its mode in a variable; np.polyfit with full=True / cov=True -----


PAD_MODE = "mean"
K7 = np.arange(1.0, 8.0)


def pad_global_mode(x):
    return np.sum(np.pad(x, 2, mode=PAD_MODE) ** 2 * K7)


def pad_mode_at_call(x, mode):
    return np.sum(np.pad(x, 2, mode) ** 2 * K7)


def pad_mode_chosen(x):
    m = "maximum" if x.shape[0] > 2 else "edge"
    return np.sum(np.sin(np.pad(x, (1, 3), mode=m)) * K7)


X3 = np.array([1.0, -2.0, 0.5])


@pytest.mark.parametrize("mode", ["maximum", "minimum", "mean", "median", "linear_ramp", "edge", "reflect"])
def test_pad_with_the_mode_known_when_it_runs(mode):
    # (was: "the gradient of np.pad with mode='median' is not supported ... when the mode is
    # written as a constant string in the call"; forward mode gave np.pad(t, mode) of the
    # tangent, its own maximum: a wrong tangent)
    x = X3.copy()
    want = numerical_grad(lambda v: pad_mode_at_call(v, mode), (x,))
    np.testing.assert_allclose(sg.grad(pad_mode_at_call)(x, mode), want, rtol=1e-7, atol=1e-9)
    t = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(sg.jvp(pad_mode_at_call, (x, mode), (t, None))[1], want @ t, rtol=1e-7)
    _second_order_matches(pad_mode_at_call, x, args=(mode,))


@pytest.mark.parametrize("f", [pad_global_mode, pad_mode_chosen])
def test_pad_with_the_mode_in_a_variable(f):
    global PAD_MODE
    for mode in ("mean", "median"):
        PAD_MODE = mode   # a global read as the call's constant: the gradient follows it
        x = X3.copy()
        want = numerical_grad(f, (x,))
        np.testing.assert_allclose(sg.grad(f)(x), want, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(sg.jvp(f, (x,), (np.ones(3),))[1], np.sum(want), rtol=1e-7)
    PAD_MODE = "mean"
    _second_order_matches(f, X3.copy())


PX = np.linspace(-1.0, 1.0, 7)
PY = np.sin(3 * PX) + PX ** 2
PY2 = np.stack([PY, np.cos(PX)], axis=1)
W9 = np.arange(9.0).reshape(3, 3)


def polyfit_full(x, y):
    p, residuals, rank, s, rcond = np.polyfit(x, y, 2, full=True)
    return np.sum(p ** 2) + np.sum(residuals) * 3.0 + np.sum(s ** 2) + rcond * 0.0


def polyfit_cov(x, y):
    p, v = np.polyfit(x, y, 2, cov=True)
    return np.sum(v * (W9 if np.ndim(y) == 1 else W9[..., None])) + np.sum(p)


def polyfit_unscaled(x, y):
    p, v = np.polyfit(x, y, 2, cov="unscaled")
    return np.sum(v ** 2) + np.sum(np.sin(p))


@pytest.mark.parametrize("f", [polyfit_full, polyfit_cov, polyfit_unscaled])
@pytest.mark.parametrize("y", [PY, PY2], ids=["vector", "columns"])
@pytest.mark.parametrize("wrt", [0, 1])
def test_polyfit_full_and_cov(f, y, wrt):
    # (was: full=True and cov=True "refused where they need a gradient")
    args = (PX.copy(), y.copy())
    want = numerical_grad(f, args, wrt)
    np.testing.assert_allclose(sg.grad(f, wrt=wrt)(*args), want, rtol=1e-6, atol=1e-8)
    assert sg.value_and_grad(f)(*args)[0] == pytest.approx(f(*args), rel=1e-13)
    t = np.linspace(-1.0, 1.0, args[wrt].size).reshape(args[wrt].shape)
    tangents = tuple(t if i == wrt else None for i in range(2))
    np.testing.assert_allclose(sg.jvp(f, args, tangents)[1], np.sum(want * t), rtol=1e-6, atol=1e-8)


def test_polyfit_full_and_cov_are_numpys():
    from srcgrad import inlined
    for deg in (1, 3):
        for y in (PY, PY2):
            for got, want in ((inlined.polyfit_full(PX, y, deg), np.polyfit(PX, y, deg, full=True)),
                              (inlined.polyfit_cov(PX, y, deg), np.polyfit(PX, y, deg, cov=True)),
                              (inlined.polyfit_cov(PX, y, deg, cov="unscaled"),
                               np.polyfit(PX, y, deg, cov="unscaled"))):
                assert len(got) == len(want)
                for g, w in zip(got, want):
                    assert np.shape(g) == np.shape(w)
                    np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-13)


@pytest.mark.slow
def test_polyfit_full_second_order():
    _second_order_matches(polyfit_full, PX.copy(), wrt=0, args=(PY.copy(),))


# ----- 6. a numpy.matrix in a container held by an argument's attribute -----


class _Model:
    pass


def times_params_entry(x, obj):
    return np.sum(obj.params["M"] * x)


def times_layer(x, obj):
    return np.sum(obj.inner.layers[1] * x)


def _model(m, nested=False):
    obj = _Model()
    if nested:
        obj.inner = _Model()
        obj.inner.layers = [np.ones((2, 2)), (m,)[0]]
    else:
        obj.params = {"M": m, "b": 1.0}
    return obj


with warnings.catch_warnings():   # (NumPy's PendingDeprecationWarning of np.matrix)
    warnings.simplefilter("ignore")
    MAT = np.matrix([[1.0, 2.0], [3.0, 4.0]])
XM2 = np.array([[0.5, -1.0], [2.0, 0.25]])


@pytest.mark.parametrize("run", [
    lambda: sg.grad(times_params_entry)(XM2.copy(), _model(MAT)),
    lambda: sg.grad(times_layer)(XM2.copy(), _model(MAT, nested=True)),
    lambda: sg.grad(times_params_entry, jit=True)(XM2.copy(), _model(MAT)),
    lambda: sg.jvp(times_params_entry, (XM2.copy(), _model(MAT)), (np.ones((2, 2)), None)),
    lambda: sg.hessian(times_layer)(XM2.copy(), _model(MAT, nested=True))])
def test_a_matrix_in_a_container_of_an_attribute_is_refused(run):
    # (was differentiated as an array: sum(M * x) read elementwise where NumPy multiplies
    # the matrices)
    with pytest.raises(sg.SrcgradError, match="attribute of (an argument|the primal .obj.) is a numpy.matrix") as info:
        run()
    assert info.value.filename == __file__


@pytest.mark.parametrize("f, nested", [(times_params_entry, False), (times_layer, True)])
def test_a_matrix_put_in_a_container_after_arrays_is_refused(f, nested):
    g = sg.grad(f)
    np.testing.assert_allclose(g(XM2.copy(), _model(np.asarray(MAT), nested)), np.asarray(MAT))
    with pytest.raises(sg.SrcgradError, match="numpy.matrix"):
        g(XM2.copy(), _model(MAT, nested))   # the hot call's check sees it too


# ----- 7. refusals name the user's expressions, not srcgrad's names for them -----


def swap_halves(x):
    y = x * 1.0
    y[1::2], y[::2] = y[::2], y[1::2]
    return np.sum(y ** 2 * np.arange(4.0))


def copy_into_a_view(x):
    y = x * 1.0
    np.copyto(y[:3], x[1:] * 2.0)
    return np.sum(y ** 2)


@pytest.mark.parametrize("f, shown", [(swap_halves, "'y[1::2]'"), (copy_into_a_view, "'y[:3]'")])
def test_an_alias_refusal_quotes_the_users_expression(f, shown):
    # (was: "would also change 'y_item_2'" / "this in-place update of 'y_item'")
    with pytest.raises(sg.UnsupportedError) as info:
        sg.grad(f)(np.arange(4.0))
    message = str(info.value)
    assert shown in message and "_item" not in message, message
    assert info.value.filename == __file__
    assert info.value.lineno == f.__code__.co_firstlineno + 2
