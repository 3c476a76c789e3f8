"""srcgrad on CuPy arrays: the same gradients as on NumPy arrays, kept on the GPU.

Generated code binds ``xp`` to the array module of its inputs
(``xp = rt.namespace(...)``), so one gradient serves NumPy and CuPy. This module
checks that where it can break:

* every row of the rule table (tests/test_rules.py), the rule run with ``xp``
  bound to CuPy against the same rule on NumPy (float64, rtol 1e-10);
* the catalogue (tests/functions.py) in float32, CuPy against NumPy;
* the seed examples (examples/seed*.py) on CuPy arrays, with the numbers the
  examples assert;
* NumPy and CuPy arrays mixed in one call: a TypeError; Python scalars mix.

A gradient of a CuPy input must be a CuPy array of the input's dtype: nothing
is copied to the host. Every test is marked ``gpu`` and is skipped without
CuPy or a CUDA device.
"""

import importlib.util
import numbers
from pathlib import Path

import numpy as np
import pytest

import srcgrad as sg
import srcgrad.rules as R
from srcgrad import runtime as rt
import test_rules
from conftest import ALL_WRT_CASES, _cupy_or_skip
from test_catalogue import HOST_AND_DEVICE, skip_if_numpy_only
from test_rules import CASES, bind_rule, call_rule, grads_by_argument, random_like, wrt_keys

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# What CuPy raises for a function, argument or attribute it does not have.
NOT_ON_CUPY = (TypeError, ValueError, AttributeError, NotImplementedError)


@pytest.fixture(scope="module")
def cupy():
    return _cupy_or_skip()


# ----- Moving values and comparing them -----


def to_device(value, cupy):
    """``value`` with every NumPy array moved to the GPU, through lists, tuples and dicts.

    A NumPy float scalar becomes a 0-d CuPy array: that is what CuPy code has
    where NumPy code has one (a full reduction). Python numbers, None, shapes,
    slices and dtypes stay as they are.
    """
    if isinstance(value, (np.ndarray, np.floating)):
        return cupy.asarray(value)
    if isinstance(value, dict):
        return {k: to_device(v, cupy) for k, v in value.items()}
    if isinstance(value, list):
        return [to_device(v, cupy) for v in value]
    if isinstance(value, tuple):
        items = [to_device(v, cupy) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


def has_array(value):
    """Whether to_device would put anything on the GPU."""
    if isinstance(value, (np.ndarray, np.floating)):
        return True
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, (list, tuple)) and any(has_array(v) for v in value)


def to_float32(value):
    """Float arrays cast to float32, through lists, tuples and dicts; the rest as it is."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float32)
    if isinstance(value, dict):
        return {k: to_float32(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_float32(v) for v in value)
    return value


def on_device(g, cupy):
    """``g`` as NumPy, after checking that it is a CuPy array."""
    assert isinstance(g, cupy.ndarray), f"{type(g).__name__}, expected cupy.ndarray"
    return cupy.asnumpy(g)


def assert_same(got, want, cupy, where, rtol=1e-10, atol=1e-12):
    """``got`` (from CuPy inputs) matches ``want`` (from NumPy inputs), kind for kind."""
    if want is None:
        assert got is None, f"{where}: {type(got).__name__}, expected None"
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), (
            f"{where}: {got!r}, expected a dict with keys {list(want)}")
        for key, w in want.items():
            assert_same(got[key], w, cupy, f"{where}[{key!r}]", rtol, atol)
        return
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (
            f"{where}: {got!r}, expected {len(want)} gradients")
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, cupy, f"{where}[{k}]", rtol, atol)
        return
    if type(want) is float:
        # The runtime's scalar convention (0.0: no gradient yet) holds on CuPy too.
        assert type(got) is float, f"{where}: {type(got).__name__}, expected a Python float"
    elif isinstance(want, np.ndarray):
        assert isinstance(got, cupy.ndarray), f"{where}: {type(got).__name__}, expected cupy.ndarray"
        assert got.shape == want.shape, f"{where}: shape {got.shape}, expected {want.shape}"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, expected {want.dtype}"
        if want.dtype == np.float32:
            rtol, atol = max(rtol, 1e-5), max(atol, 1e-6)
    else:  # a NumPy scalar (a full reduction): a 0-d CuPy array or a number on the GPU
        assert isinstance(got, (cupy.ndarray, numbers.Number)), (
            f"{where}: {type(got).__name__}, expected a 0-d cupy.ndarray or a number")
    host = cupy.asnumpy(got) if isinstance(got, cupy.ndarray) else got
    np.testing.assert_allclose(host, want, rtol=rtol, atol=atol, err_msg=where)


# ----- a. The rule table with xp bound to CuPy -----


@pytest.fixture
def rules_rng():
    """Leave test_rules' generator as found, so that its own tests draw the same numbers."""
    state = test_rules.RNG.bit_generator.state
    yield
    test_rules.RNG.bit_generator.state = state


@pytest.mark.parametrize("case", CASES, ids=[c.label() for c in CASES])
def test_rule_on_cupy_matches_numpy(case, cupy, rules_rng):
    if not has_array((case.args, case.kwargs)):
        pytest.skip("no array argument: generated code binds xp to NumPy here")
    rule = R.lookup(case.primitive)
    args, kwargs = list(case.args), dict(case.kwargs)
    y = case.call(args, kwargs)  # as run_case does
    # A scalar output gets a Python float dy, on CuPy too: generated code has
    # one wherever an adjoint is still a Python number (after float(), say).
    dy = case.dy(y) if case.dy is not None else random_like(y)
    want = grads_by_argument(rule, call_rule(rule, dy, y, *args, **kwargs), args, kwargs)

    if case.primitive in (rt.written_grad, rt.keep_written) and _repeats_a_position(args[2]):
        pytest.skip("CuPy does not define which write to a repeated index an assignment keeps "
                    "(NumPy keeps the last)")
    dev_args, dev_kwargs = to_device(args, cupy), to_device(kwargs, cupy)
    try:
        dev_y = case.call(dev_args, dev_kwargs)
    except NOT_ON_CUPY as exc:
        pytest.skip(f"the primitive itself does not run on CuPy: {type(exc).__name__}: {exc}")
    dev_dy = to_device(dy, cupy)
    if case.primitive is np.linalg.eigh:
        dev_dy = _eigenvector_signs_matched(dev_dy, y, dev_y, cupy)
    result = bind_rule(rule, cupy)(dev_dy, dev_y, *dev_args, **dev_kwargs)
    got = grads_by_argument(rule, result, dev_args, dev_kwargs)
    for key in wrt_keys(case, rule, args):
        assert_same(got.get(key), want.get(key), cupy, f"{case.label()} d/d[{key}]")


def _repeats_a_position(index):
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, np.ndarray) and i.dtype.kind in "iu" and np.unique(i).size < i.size
               for i in items)


def _eigenvector_signs_matched(dy, y, dev_y, cupy):
    """``eigh``'s cotangent for the device's eigenvectors, which may be the host's times -1
    column by column (each is defined up to sign): the cotangent's columns are flipped
    alike, so that both sides differentiate the same function of the matrix."""
    dw, dv = dy
    if dv is None or isinstance(dv, float):
        return dy
    signs = np.sign(np.sum(cupy.asnumpy(dev_y[1]) * y[1], axis=-2, keepdims=True))
    return dw, dv * cupy.asarray(signs)


# ----- b. The catalogue in float32 -----


def _float64_array_target(case, wrt):
    args, kwargs = case.args, case.kwargs
    value = args[wrt] if isinstance(wrt, int) else kwargs[wrt]
    return isinstance(value, np.ndarray) and value.dtype == np.float64


F32_CASES = [c for c in ALL_WRT_CASES if _float64_array_target(c[0], c[1])]


@pytest.mark.parametrize("f32_case", F32_CASES, ids=[f"{c.id}-{p}" for c, _, p in F32_CASES])
def test_catalogue_float32_on_cupy_matches_numpy(f32_case, cupy):
    case, wrt, name = f32_case
    inputs = lambda: to_float32(case.fresh())  # noqa: E731  (fresh float32 copies)
    (args, kwargs), seed = inputs(), to_float32(case.seed())
    dev_args, dev_kwargs = to_device(inputs(), cupy)
    skip_if_numpy_only(case.function, dev_args, dev_kwargs,
                       case.function(*inputs()[0], **inputs()[1]))
    want = sg.grad(case.function, wrt=wrt)(*args, grad_outputs=seed, **kwargs)
    got = sg.grad(case.function, wrt=wrt)(*dev_args, grad_outputs=to_device(seed, cupy),
                                          **dev_kwargs)
    assert isinstance(got, cupy.ndarray), f"d/d{name} is {type(got).__name__}"
    assert got.dtype == np.float32, f"d/d{name} has dtype {got.dtype} for float32 inputs"
    assert got.shape == want.shape
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-4, atol=1e-5 * (scale or 1.0))


# ----- c. The seed examples on CuPy -----


def example(name):
    """examples/<name>.py as a fresh module (NumPy's print options left as they were)."""
    options = np.get_printoptions()
    try:
        spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        np.set_printoptions(**options)
    return module


def assert_values(g, want, cupy):
    """``g`` is a CuPy array holding ``want`` (to rounding: CUDA's pow is not correctly rounded)."""
    np.testing.assert_allclose(on_device(g, cupy), want, rtol=1e-12, atol=1e-12)


def test_seed0_variable_grad_fn(cupy):
    ex = example("seed0_variable_grad_fn")
    dw, db = sg.grad(ex.linear1, wrt=("w", "b"))(
        cupy.ones(1), cupy.asarray([0.7]), cupy.asarray([0.3]))
    assert_values(dw, [1.0], cupy)
    assert_values(db, [1.0], cupy)
    # An `if` on x[0]: the branch taken decides the gradient.
    assert_values(sg.grad(ex.abs)(cupy.ones(1)), [1.0], cupy)
    assert_values(sg.grad(ex.abs)(-cupy.ones(1)), [-1.0], cupy)
    # A for loop over the array's elements, with an `if` on each.
    assert_values(sg.grad(ex.f)(cupy.arange(-2, 4, dtype=cupy.float64)), [0, 0, 0, 6, 3, 2], cupy)
    w_host = np.random.default_rng(0).random(3)
    x, w = cupy.ones(3), cupy.asarray(w_host)
    gx, gw = sg.grad(ex.mul_sum, wrt=(0, 1))(x, w)
    assert_values(gx, w_host, cupy)
    assert_values(gw, np.ones(3), cupy)
    assert_values(sg.grad(ex.mul_sum, wrt="y")(x, w), np.ones(3), cupy)
    # The hook registered in the function sees y's gradient, on the device.
    ex.hook_grads.clear()
    gx, gw = sg.grad(ex.mul_sum_hooked, wrt=("x", "w"))(x, w)
    assert len(ex.hook_grads) == 1
    assert_values(ex.hook_grads[0], np.ones(3), cupy)
    assert_values(gx, w_host, cupy)
    x = cupy.arange(0, 3, dtype=cupy.float64)
    assert_values(sg.grad(ex.poly_sum)(x), [2, 4, 6], cupy)
    assert_values(sg.grad(ex.poly)(x, grad_outputs=cupy.ones(3)), [2, 4, 6], cupy)


def test_seed1_leaves_accumulation(cupy):
    ex = example("seed1_leaves_accumulation")
    a = cupy.full((2, 2), 1, dtype=cupy.float32)
    b = cupy.full((2, 2), 2, dtype=cupy.float32)
    w = cupy.full((2, 2), 2, dtype=cupy.float32)
    ga, gb = sg.grad(ex.add_sum, wrt=("a", "b"))(a, b)
    assert ga.dtype == np.float32 and gb.dtype == np.float32
    assert_values(ga, np.ones((2, 2)), cupy)
    assert_values(gb, np.ones((2, 2)), cupy)
    grad = sg.grad(ex.affine_sum, wrt=("a", "b", "w"))
    acc = (0, 0, 0)
    for run in range(5):  # the notebook's cell run five times, accumulating
        acc = tuple(total + g for total, g in zip(acc, grad(a, b, w)))
    for g, value in zip(acc, (10, 5, 5)):
        assert g.dtype == np.float32
        assert_values(g, np.full((2, 2), value), cupy)
    # set_grad_enabled(flag) inside the function; off: zeros (materialize_grads).
    grad_mode = sg.grad(ex.add_sum_mode, wrt="a", materialize_grads=True)
    assert_values(grad_mode(a, b, True), np.ones((2, 2)), cupy)
    off = grad_mode(a, b, False)
    assert off.dtype == np.float32
    assert_values(off, np.zeros((2, 2)), cupy)


def test_seed2_requires_grad_while(cupy):
    ex = example("seed2_requires_grad_while")
    out, gx = sg.value_and_grad(ex.mean_square)(cupy.ones((2, 2)))
    np.testing.assert_allclose(float(out), 27.0, rtol=1e-12)
    assert_values(gx, np.full((2, 2), 4.5), cupy)
    assert_values(sg.grad(ex.mean_square, wrt="z")(cupy.ones((2, 2))), np.full((2, 2), 0.25), cupy)
    # The while loop's condition reads np.linalg.norm(y) of a CuPy array.
    x_host = np.array([1178.3732, 192.4036, 922.6443]) / 512
    y, gx = sg.value_and_grad(ex.double_until)(
        cupy.asarray(x_host), grad_outputs=cupy.asarray([0.01, 0.1, 1.0]))
    assert_values(y, 512.0 * x_host, cupy)
    assert_values(gx, [5.12, 51.2, 512.0], cupy)
    # ex.fill is NumPy-only: it writes into np.zeros((1, 2)) made inside.


def test_seed3_hooks_retain_graph(cupy):
    ex = example("seed3_hooks_retain_graph")
    x, w = cupy.ones(3), cupy.asarray(np.random.default_rng(0).random(3))
    ex.hook_grads.clear()
    z, backward = sg.vjp(ex.f_hooked, wrt="w")(x, w)
    assert_values(backward(retain_graph=True), np.ones(3), cupy)
    assert len(ex.hook_grads) == 1
    assert_values(ex.hook_grads[0], np.ones(3), cupy)
    sg.grad(ex.f, wrt="w", hooks={"y": ex.variable_hook})(x, w)
    assert len(ex.hook_grads) == 2
    assert_values(ex.hook_grads[1], np.ones(3), cupy)
    assert_values(sg.grad(ex.f, wrt="y")(x, w), np.ones(3), cupy)
    # retain_graph=True, then a second backward; a third is an error.
    z, backward = sg.vjp(ex.f, wrt="w")(x, w)
    w_grad = backward(retain_graph=True)
    w_grad = w_grad + backward()
    assert_values(w_grad, np.full(3, 2.0), cupy)
    with pytest.raises(RuntimeError):
        backward()


def test_seed4_grad_outputs_function(cupy):
    ex = example("seed4_grad_outputs_function")
    x = cupy.asarray([1.0, 2.0, 3.0])
    assert_values(sg.grad(ex.pow_mul_sum)(x), [6, 12, 18], cupy)
    (z,) = sg.grad(ex.square, wrt=(0,))(x, grad_outputs=cupy.ones(3))
    assert_values(z, [2, 4, 6], cupy)
    W = cupy.asarray([[0.5, -0.1, -0.3], [0.1039, 0.3139, -0.6551]])
    b = cupy.asarray([-0.4743, 0.5059])
    y, gx = sg.value_and_grad(ex.linear, wrt="x")(x, W, b, grad_outputs=cupy.ones(2))
    assert_values(y, [-1.0743, -0.7277], cupy)
    assert_values(gx, [0.6039, 0.2139, -0.9551], cupy)
    # The custom Function (hand-written backward) on arrays; c stays a Python int.
    a, b = cupy.asarray([1.0]), cupy.asarray([2.0])
    for fn in (ex.func, ex.use_func):
        value, (ga, gb) = sg.value_and_grad(fn, wrt=(0, 1))(a, b, 4)
        assert_values(value, [18.0], cupy)
        assert_values(ga, [10.0], cupy)
        assert_values(gb, [9.0], cupy)
    # argsort gives constant indices; the gradient of the gather scatters back.
    s, g = sg.value_and_grad(ex.sort_values)(cupy.asarray([3.0, 1.0, 2.0]),
                                             grad_outputs=cupy.asarray([1.0, 2.0, 3.0]))
    assert_values(s, [1, 2, 3], cupy)
    assert_values(g, [3, 1, 2], cupy)
    # The same with the Sort Function: its backward's np.add.at runs as CuPy's.
    s, g = sg.value_and_grad(ex.use_sort)(cupy.asarray([3.0, 1.0, 2.0]),
                                          grad_outputs=cupy.asarray([1.0, 2.0, 3.0]))
    assert_values(s, [1, 2, 3], cupy)
    assert_values(g, [3, 1, 2], cupy)


# ----- d. Mixing arrays of the two libraries -----


def sum_of_sines(x, y):
    return np.sum(np.sin(x)) + np.sum(np.sin(y))


def scaled_sines(x, a):
    return np.sum(np.sin(x) * a)


def test_numpy_and_cupy_arrays_mixed_is_a_type_error(cupy):
    x = np.linspace(0.1, 1.0, 4)
    with pytest.raises(TypeError, match="mixed"):
        sg.grad(sum_of_sines, wrt=(0, 1))(x, cupy.asarray(x))


def test_python_scalars_mix_with_cupy(cupy):
    x = np.linspace(0.1, 1.0, 4)
    want_x, want_a = sg.grad(scaled_sines, wrt=(0, 1))(x, 0.5)
    gx, ga = sg.grad(scaled_sines, wrt=(0, 1))(cupy.asarray(x), 0.5)
    np.testing.assert_allclose(on_device(gx, cupy), want_x, rtol=1e-12)
    assert type(ga) is float, type(ga)
    np.testing.assert_allclose(ga, want_a, rtol=1e-12)


def element_updated_in_place(x):
    s = x[0]        # NumPy: a scalar copy; CuPy: a 0-d view of x
    s += x[1] * 2.0
    return (x * x).sum() + s * 3.0


def test_element_view_updated_in_place_is_refused_on_cupy(cupy):
    # On CuPy, s += ... writes into x: the gradient of the NumPy reading would be
    # silently wrong, so the forward sweep's run-time check refuses it.
    x = np.array([1.0, 2.0, 3.0])
    sg.grad(element_updated_in_place)(x)          # NumPy: fine
    with pytest.raises(sg.SrcgradError, match="shares its memory"):
        sg.grad(element_updated_in_place)(cupy.asarray(x))


# ----- Forward mode and higher order on the GPU -----

def _loop_energy(x, w):
    e = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i]
        e = e + w * (d * d - 1.0) ** 2
    return e + np.sum(np.tanh(x) * w)


def _higher_order_results(xp_args):
    x, w = xp_args
    v = x * 0.5 + 1.0
    return {
        "jvp": sg.jvp(_loop_energy, (x, w), (v, None))[1],
        "hvp": sg.hvp(_loop_energy, (x, w), (v, None), wrt=0)[0],
        "jacfwd": sg.jacfwd(sg.grad(_loop_energy))(x, w),
        "jacrev": sg.jacrev(sg.grad(_loop_energy))(x, w),
        "hessian": sg.hessian(_loop_energy)(x, w),
        "grad_of_grad": sg.grad(sg.grad(_loop_energy))(x, w, grad_outputs=v),
    }


def test_forward_mode_and_higher_order_on_cupy_match_numpy_and_stay_on_the_device(cupy):
    x, w = np.array([0.3, 1.1, 2.5, 3.2]), 0.7
    want = _higher_order_results((x, w))
    got = _higher_order_results((cupy.asarray(x), w))
    for name, value in got.items():
        assert isinstance(value, cupy.ndarray), (name, type(value))
        np.testing.assert_allclose(cupy.asnumpy(value), want[name], rtol=1e-10, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize("name", sorted(HOST_AND_DEVICE))
def test_host_and_device_values_mixed_are_refused_or_right(name, cupy):
    # A known limitation: the forward carries NumPy arrays of the function's own beside
    # CuPy values; the adjoint's rules take one array module. Each gradient is NumPy's,
    # or refused with a TypeError that says so: never another number.
    for case, wrt, pname in (c for c in ALL_WRT_CASES if c[0].function.__name__ == name):
        args, kwargs = case.fresh()
        seed = case.seed()
        dev = lambda v: cupy.asarray(v) if isinstance(v, (np.ndarray, np.floating)) else v  # noqa: E731
        for grad_outputs in (None, seed):
            want = sg.grad(case.function, wrt=wrt)(*args, grad_outputs=grad_outputs, **kwargs)
            try:
                got = sg.grad(case.function, wrt=wrt)(
                    *(dev(v) for v in args), grad_outputs=dev(grad_outputs),
                    **{k: dev(v) for k, v in kwargs.items()})
            except TypeError as exc:   # srcgrad's, or CuPy's own inside a fused kernel
                assert "NumPy and CuPy arrays are mixed" in str(exc) or \
                    "Unsupported type <class 'numpy.ndarray'>" in str(exc), exc
                continue
            host = cupy.asnumpy(got) if isinstance(got, cupy.ndarray) else got
            np.testing.assert_allclose(host, want, rtol=1e-10, atol=1e-12, err_msg=pname)


def _softmax_loss(W, X, Y):
    logits = X @ W
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    return -np.sum(Y * (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True)))) / X.shape[0]


def test_repeated_cupy_calls_run_the_composed_gradient(cupy, monkeypatch):
    # The second call of a gradient on CuPy arrays runs the one composed function: it
    # neither records its fast path again nor runs the two sweeps (each call did, once).
    from srcgrad import api
    rng = np.random.default_rng(3)
    W, X = rng.standard_normal((5, 3)), rng.standard_normal((8, 5))
    Y = np.eye(3)[rng.integers(0, 3, 8)]
    g = sg.grad(_softmax_loss)
    want = g(W, X, Y)
    dev = [cupy.asarray(v) for v in (W, X, Y)]
    first = g(*dev)
    general = []
    original = api.GradFunction._call
    monkeypatch.setattr(api.GradFunction, "_call",
                        lambda self, *a: general.append(1) or original(self, *a))
    got = g(*dev)
    assert general == [] and isinstance(got, cupy.ndarray) and got.dtype == np.float64
    np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(cupy.asnumpy(first), want, rtol=1e-12, atol=1e-14)


def _elementwise(x):
    return np.sum(np.sin(x) * np.exp(-x ** 2) + np.log1p(x * x))


def test_cupy_arguments_are_fused_by_default(cupy):
    # grad's fuse=None fuses calls with CuPy arrays (its fused twin compiles them) and
    # leaves NumPy calls unfused; fuse=False never fuses.
    x = np.linspace(-2.0, 2.0, 1001)
    g = sg.grad(_elementwise)
    want = g(x)
    assert "_fused_twin" not in g.__dict__
    for _ in range(2):
        got = g(cupy.asarray(x))
        assert isinstance(got, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-12, atol=1e-14)
    twin = g.__dict__["_fused_twin"]
    assert twin.fuse is True and "fused_kernel" in sg.source(_elementwise, fuse=True)
    assert sg.grad(_elementwise, fuse=False)(cupy.asarray(x)) is not None
    assert "_fused_twin" not in sg.grad(_elementwise, fuse=False).__dict__
