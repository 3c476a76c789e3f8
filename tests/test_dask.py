"""srcgrad on Dask arrays: the same generated gradients, as lazy Dask graphs (issue 16).

Generated code binds ``xp`` to the array module of its inputs; for a Dask input
that is srcgrad's Dask namespace (runtime/dask_forms.py), so the gradient is a
Dask graph built chunk by chunk and computed only when the caller computes it.
This module checks, on the local threaded scheduler:

* every row of the rule table (tests/test_rules.py) with ``xp`` bound to Dask
  matches the same rule on NumPy, or is refused naming the Dask function missing;
* the catalogue (tests/functions.py) on Dask inputs: each gradient is a Dask array
  chunked like its input, running the gradient computes nothing the function itself
  does not compute (data-dependent ``if``s do: Dask's ``bool()``), and it matches
  the NumPy gradient, or the case is refused with an ``UnsupportedError`` naming
  tests/functions.py and the line (the cases in ``REFUSED``);
* NumPy parameters mixed with Dask data: their gradients are lazy too (Dask's rule
  for any NumPy/Dask mix), and ``dask.compute`` gets them all in one pass;
* one gradient through a ``distributed.LocalCluster`` of two worker processes.

Skipped without Dask (``pip install -e ".[dask]"``).
"""

import re

import numpy as np
import pytest

import srcgrad as sg
import srcgrad.rules as R
import test_rules
from conftest import ALL_WRT_CASES
from test_rules import CASES, bind_rule, call_rule, grads_by_argument, random_like, wrt_keys

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from srcgrad.runtime import dask_forms  # noqa: E402

# What Dask raises for a function, argument or index form it does not have.
NOT_ON_DASK = (TypeError, ValueError, AttributeError, NotImplementedError, IndexError)


@pytest.fixture(autouse=True)
def threaded_scheduler():
    with dask.config.set(scheduler="threads", num_workers=2):
        yield


class ComputeCounter:
    """A scheduler that counts the graphs computed through it (then runs them threaded)."""

    def __init__(self):
        self.count = 0

    def __call__(self, dsk, keys, **kwargs):
        self.count += 1
        return dask.threaded.get(dsk, keys, **kwargs)


def to_dask(value, chunks=2):
    """``value`` with every NumPy array (and NumPy float) as a Dask array of ``chunks``."""
    if isinstance(value, (np.ndarray, np.floating)):
        return da.from_array(np.asarray(value), chunks=chunks)
    if isinstance(value, dict):
        return {k: to_dask(v, chunks) for k, v in value.items()}
    if isinstance(value, list):
        return [to_dask(v, chunks) for v in value]
    if isinstance(value, tuple):
        items = [to_dask(v, chunks) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


def has_array(value):
    if isinstance(value, (np.ndarray, np.floating)):
        return True
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, (list, tuple)) and any(has_array(v) for v in value)


def has_dask(value):
    if isinstance(value, da.Array):
        return True
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, (list, tuple)) and any(has_dask(v) for v in value)


def computed(value):
    """``value`` with its Dask arrays computed (one pass), through lists and tuples."""
    return dask.compute(value)[0]


def assert_same(got, want, where, rtol=1e-10, atol=1e-12):
    """``got`` (computed, from Dask inputs) matches ``want`` (from NumPy inputs)."""
    if want is None:
        assert got is None, f"{where}: {type(got).__name__}, expected None"
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), f"{where}: {got!r}"
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]", rtol, atol)
        return
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), f"{where}: {got!r}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{k}]", rtol, atol)
        return
    assert np.shape(got) == np.shape(want), f"{where}: shape {np.shape(got)}, expected {np.shape(want)}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=where)


# ----- a. The rule table with xp bound to Dask -----


@pytest.fixture
def rules_rng():
    state = test_rules.RNG.bit_generator.state
    yield
    test_rules.RNG.bit_generator.state = state


# Rows expected to fail on Dask (xfail with the reason): none today.
RULE_GAPS = {}


@pytest.mark.filterwarnings("ignore::FutureWarning")   # Dask's "not implemented, computing" for np.<f>
@pytest.mark.parametrize("case", CASES, ids=[c.label() for c in CASES])
def test_rule_on_dask_matches_numpy_or_is_refused(case, rules_rng, request):
    if not has_array((case.args, case.kwargs)):
        pytest.skip("no array argument: generated code binds xp to NumPy here")
    rule = R.lookup(case.primitive)
    args, kwargs = list(case.args), dict(case.kwargs)
    y = case.call(args, kwargs)
    dy = case.dy(y) if case.dy is not None else random_like(y)
    want = grads_by_argument(rule, call_rule(rule, dy, y, *args, **kwargs), args, kwargs)

    dev_args, dev_kwargs = to_dask(args), to_dask(kwargs)
    try:
        dev_y = case.call(dev_args, dev_kwargs)
    except NOT_ON_DASK as exc:
        pytest.skip(f"the primitive itself does not run on Dask: {type(exc).__name__}: {exc}")
    except sg.UnsupportedError as exc:   # a run-time helper (a gradient's own step) refuses Dask
        assert "has no Dask form" in str(exc), str(exc)
        return
    if not has_dask(dev_y):
        # Dask has no such function and ran NumPy's on the computed input (it warns): the
        # primitive's output is NumPy, and so is its rule's namespace (it computes dy).
        pytest.skip("Dask computes the primitive itself (its NumPy fallback)")
    if request.node.callspec.id in RULE_GAPS:
        pytest.xfail(RULE_GAPS[request.node.callspec.id])
    counter = ComputeCounter()
    try:
        with dask.config.set(scheduler=counter):
            result = bind_rule(rule, dask_forms.namespace())(to_dask(dy), dev_y, *dev_args, **dev_kwargs)
    except sg.UnsupportedError as exc:
        # A refusal names the Dask function that is missing and says what to do.
        assert "has no Dask form" in str(exc) and "compute" in str(exc).lower(), str(exc)
        return
    # No rule pulls Dask data into memory behind the caller's back (np.asarray, float()).
    assert counter.count == 0, f"{case.label()}: the rule computed {counter.count} times"
    got = computed(grads_by_argument(rule, result, dev_args, dev_kwargs))
    for key in wrt_keys(case, rule, args):
        assert_same(got.get(key), want.get(key), f"{case.label()} d/d[{key}]")


# ----- b. The catalogue on Dask inputs -----

# Cases refused on Dask, each with a clear UnsupportedError at the user's line:
# a lazy boolean mask (x[x > 0]) has chunks of unknown size, and an index computed
# from the data (x[np.argmax(x)]) is lazy; the message says how to rewrite it.
REFUSED = {
    "index_boolean_mask-x": "lazy (Dask) or multi-dimensional boolean mask",
    "index_boolean_mask-y": "lazy (Dask) or multi-dimensional boolean mask",
    "write_mask_zero-x": "lazy (Dask) or multi-dimensional boolean mask",
    "mask_rows-x": "lazy (Dask) or multi-dimensional boolean mask",
    "fancy_index_copy_then_write-x": "lazy (Dask) or multi-dimensional boolean mask",
    "argmax_index-x": "lazy (Dask) integer array",
    # np.r_ / np.c_ are NumPy index tricks that compute their items:
    "r_and_c_joins-x": "np.r_ / np.c_",
    "r_and_c_joins-y": "np.r_ / np.c_",
}

def dask_runs_function(function, args, kwargs, expected):
    """Skip unless ``function`` itself runs on these Dask arguments (lazily or not) and
    gives ``expected``; return the number of computes it needs (its ``if``s on data)."""
    counter = ComputeCounter()
    try:
        with dask.config.set(scheduler=counter):
            out = function(*args, **kwargs)
        out = computed(out)
    except NOT_ON_DASK as exc:
        pytest.skip(f"{function.__name__} itself does not run on Dask: {type(exc).__name__}: {exc}")
    outs, wants = (out, expected) if isinstance(expected, tuple) else ((out,), (expected,))
    for got, want in zip(outs, wants):
        got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-10, atol=1e-12,
                                                      equal_nan=True):
            pytest.skip(f"{function.__name__} itself computes something else on Dask")
    return counter.count


def _target(case, wrt):
    return case.args[wrt] if isinstance(wrt, int) else case.kwargs[wrt]


@pytest.mark.filterwarnings("ignore::FutureWarning")   # Dask's "not implemented, computing" for np.<f>
@pytest.mark.parametrize("wrt_case", ALL_WRT_CASES, ids=[f"{c.id}-{p}" for c, _, p in ALL_WRT_CASES])
def test_catalogue_on_dask_is_lazy_and_matches_numpy(wrt_case):
    case, wrt, name = wrt_case
    label = f"{case.id}-{name}"
    if not has_array((case.args, case.kwargs)):
        pytest.skip("no array argument: nothing on Dask")
    (args, kwargs), seed = case.fresh(), case.seed()
    want = sg.grad(case.function, wrt=wrt)(*args, grad_outputs=seed, **kwargs)
    dargs, dkwargs = to_dask(case.fresh())
    own_computes = dask_runs_function(case.function, *to_dask(case.fresh()),
                                      case.function(*case.fresh()[0], **case.fresh()[1]))
    counter = ComputeCounter()
    grad = sg.grad(case.function, wrt=wrt)
    if label in REFUSED:
        with pytest.raises(sg.UnsupportedError, match=re.escape(REFUSED[label])) as info:
            grad(*dargs, grad_outputs=to_dask(seed), **dkwargs)
        assert info.value.filename.endswith("functions.py") and info.value.lineno, str(info.value)
        return
    with dask.config.set(scheduler=counter):
        got = grad(*dargs, grad_outputs=to_dask(seed), **dkwargs)
    # The gradient computes nothing of its own: only the conditions of the function's ifs,
    # once in each sweep (the reverse sweep reads the saved lazy condition again).
    assert counter.count <= 2 * own_computes, f"{label}: {counter.count} computes, f itself {own_computes}"
    target = _target(case, wrt)
    if isinstance(target, np.ndarray):
        assert isinstance(got, da.Array), f"d/d{name} is {type(got).__name__}, expected a Dask array"
        assert got.chunks == to_dask(target).chunks, f"chunks {got.chunks}"
    else:   # a Python float: lazy where its gradient met Dask data (float() of it did not)
        assert isinstance(got, (float, da.Array)) and np.shape(got) == (), type(got).__name__
    assert_same(computed(got), want, label, rtol=max(case.rtol * 1e-4, 1e-10))


# ----- c. Laziness, mixing, control flow, refusals -----


def mse(w, x, t):
    """A data-parallel loss: small NumPy weights, Dask data."""
    return np.mean((x @ w - t) ** 2)


def loss_with_indexing(x):
    y = x * 1.0
    y[0] = 5.0
    s = 0.0
    for i in range(3):
        s = s + y[i] * x[i]
    return s + np.sum(np.sin(x))


def branch_on_data(x):
    if x[0] > 0:
        return np.sum(x ** 2)
    return np.sum(np.sin(x))


def uses_cross(x, y):
    return np.sum(np.cross(x, y))


def test_gradient_of_a_dask_input_is_lazy_until_computed():
    x = np.linspace(-1.0, 1.0, 12)
    counter = ComputeCounter()
    with dask.config.set(scheduler=counter):
        g = sg.grad(loss_with_indexing)(da.from_array(x, chunks=5))
        assert counter.count == 0
        assert isinstance(g, da.Array) and g.chunks == ((5, 5, 2),)
        assert g.dtype == np.float64
        value = g.compute()
        assert counter.count == 1
    np.testing.assert_allclose(value, sg.grad(loss_with_indexing)(x), rtol=1e-12)
    sg.gradcheck(loss_with_indexing, (x,))


def gathers(m):
    rows = m[np.array([0, 2, 0, -1, 0])]          # repeats and a negative index
    cols = m[1:, np.array([2, 2, 0])]
    picked = m[None, 1, ::2]                      # a new axis in a basic index
    return np.sum(rows ** 2) + np.sum(np.sin(cols)) + np.sum(picked * 3.0)


def test_repeated_negative_and_new_axis_indices_accumulate_as_numpy_add_at():
    m = np.arange(1.0, 13.0).reshape(4, 3) / 7.0
    g = sg.grad(gathers)(da.from_array(m, chunks=(3, 2)))
    assert isinstance(g, da.Array) and g.chunks == ((3, 1), (2, 1))
    np.testing.assert_allclose(g.compute(), sg.grad(gathers)(m), rtol=1e-12)
    sg.gradcheck(gathers, (m,))


def test_a_reduction_adjoint_is_broadcast_with_the_chunks_of_what_was_reduced():
    # Never one chunk of the whole shape: a broadcast view that a worker would send whole.
    from srcgrad import runtime as rt
    x = da.ones((6, 4), chunks=(4, 3))
    for saved in (x, rt.shape_of(x)):
        g = rt.unreduce(da.asarray(2.0), saved)
        assert g.chunks == x.chunks and not any(n.startswith("rechunk") for n in g.dask.layers)
        np.testing.assert_array_equal(g.compute(), np.full((6, 4), 2.0))
    g = rt.unreduce(da.ones(4, chunks=3), x, axis=0)
    assert g.chunks == x.chunks
    np.testing.assert_array_equal(g.compute(), np.ones((6, 4)))


def test_numpy_weights_with_dask_data_get_a_lazy_gradient_computed_in_one_pass():
    rng = np.random.default_rng(0)
    x, t, w = rng.standard_normal((40, 3)), rng.standard_normal(40), rng.standard_normal(3)
    want_w, want_x = sg.grad(mse, wrt=(0, 1))(w, x, t)
    counter = ComputeCounter()
    with dask.config.set(scheduler=counter):
        gw, gx = sg.grad(mse, wrt=(0, 1))(w, da.from_array(x, chunks=(10, 3)), da.from_array(t, chunks=10))
        assert counter.count == 0
        # The weights' gradient is a reduction over the chunks: lazy, like any NumPy/Dask mix.
        assert isinstance(gw, da.Array) and gw.shape == (3,) and gw.dtype == np.float64
        assert gx.chunks == ((10, 10, 10, 10), (3,))
        gw_value, gx_value = dask.compute(gw, gx)
        assert counter.count == 1
    np.testing.assert_allclose(gw_value, want_w, rtol=1e-12)
    np.testing.assert_allclose(gx_value, want_x, rtol=1e-12)


def mlp_loss(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


def test_mlp_weights_get_lazy_gradients_summed_over_batch_chunks():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, 8))
    Y = np.eye(3)[rng.integers(0, 3, 60)]
    params = (rng.standard_normal((8, 5)) / 3, 0.1 * rng.standard_normal(5),
              rng.standard_normal((5, 3)) / 2, 0.1 * rng.standard_normal(3))
    wrt = (0, 1, 2, 3)
    want = sg.grad(mlp_loss, wrt=wrt)(*params, X, Y)
    counter = ComputeCounter()
    with dask.config.set(scheduler=counter):
        got = sg.grad(mlp_loss, wrt=wrt)(*params, da.from_array(X, chunks=(16, 8)),
                                         da.from_array(Y, chunks=(16, 3)))
        assert counter.count == 0 and all(isinstance(g, da.Array) for g in got)
        got = dask.compute(*got)
        assert counter.count == 1
    for g, w, p in zip(got, want, params):
        assert g.shape == p.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_a_python_float_parameter_gets_a_lazy_0d_gradient():
    g = sg.grad(lambda a, x: np.sum(np.sin(a * x)))(0.7, da.from_array(np.arange(5.0), chunks=2))
    assert isinstance(g, da.Array) and g.shape == ()
    np.testing.assert_allclose(g.compute(), np.sum(np.arange(5.0) * np.cos(0.7 * np.arange(5.0))))


def branch_on_computed_data(x):
    if float(x[0]) > 0:
        return np.sum(x ** 2)
    return np.sum(np.sin(x))


def test_an_if_on_data_values_computes_the_condition_as_dask_does():
    # bool() of a Dask array computes it (Dask's own rule): the forward sweep takes the
    # branch, and the reverse sweep reads the saved condition, a lazy Dask bool, again.
    for f, computes in ((branch_on_data, 2), (branch_on_computed_data, 1)):
        for x in (np.array([0.5, -1.0, 2.0]), np.array([-0.5, -1.0, 2.0])):
            counter = ComputeCounter()
            with dask.config.set(scheduler=counter):
                g = sg.grad(f)(da.from_array(x, chunks=2))
                assert counter.count == computes, f.__name__
                assert isinstance(g, da.Array)
            np.testing.assert_allclose(g.compute(), sg.grad(f)(x), rtol=1e-12)


def test_a_rule_without_a_dask_form_is_refused_naming_it_and_the_line():
    x, y = da.from_array(np.array([0.5, -1.0, 2.0]), chunks=2), da.from_array(np.ones(3), chunks=2)
    with pytest.warns(FutureWarning):   # Dask itself computes np.cross (the forward pulls x in)
        with pytest.raises(sg.UnsupportedError, match=r"xp\.cross .*np\.cross.* no Dask form") as info:
            sg.grad(uses_cross, wrt=(0, 1))(x, y)
    assert info.value.filename == __file__ and "np.cross(x, y)" in info.value.source_line


def diagonal_loss(m):
    return np.sum(np.diagonal(m) ** 2) + np.trace(m)


def test_a_helper_that_writes_through_a_view_is_refused_naming_the_line():
    # rt.diagonal_vjp writes into a moved view of its result: on Dask that write would not
    # reach the result, so it refuses (rt.refuse_dask) instead of returning zeros.
    m = da.from_array(np.arange(9.0).reshape(3, 3), chunks=2)
    with pytest.raises(sg.UnsupportedError, match=r"rt\.diagonal_vjp .* no Dask form") as info:
        sg.grad(diagonal_loss)(m)
    assert info.value.filename == __file__ and "np.diagonal(m)" in info.value.source_line


def np_gradient_loss(x):
    gy, gx = np.gradient(x * x, 0.5, edge_order=2)
    return np.sum(gy ** 2) + np.sum(gx * x)


def test_the_gradient_of_np_gradient_on_dask_is_not_lost_in_a_view():
    """np.gradient's gradient was written into a moved view of a zero array, which on Dask
    never reached the result: an all-zero gradient."""
    x = np.linspace(0.1, 1.3, 20).reshape(4, 5)
    want = sg.grad(np_gradient_loss)(x)
    got = sg.grad(np_gradient_loss)(da.from_array(x, chunks=(4, 5)))
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    assert np.abs(want).min() > 0


def test_dask_and_cupy_arrays_mixed_is_a_type_error():
    from srcgrad.runtime.arrays import DeviceShape, namespace
    with pytest.raises(TypeError, match="CuPy and Dask"):
        namespace(da.ones(3), DeviceShape((3,)))


# ----- d. A distributed cluster -----


def logistic_loss(w, x, t):
    z = x @ w
    return np.mean(np.logaddexp(0.0, z) - t * z)


def test_gradient_through_a_local_cluster_of_two_worker_processes():
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2000, 4))
    t = (rng.random(2000) < 0.5).astype(np.float64)
    w = rng.standard_normal(4) * 0.1
    want = sg.grad(logistic_loss)(w, x, t)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        g = sg.grad(logistic_loss)(w, da.from_array(x, chunks=(500, 4)), da.from_array(t, chunks=500))
        assert isinstance(g, da.Array)
        future = client.compute(g)
        value = future.result(timeout=60)
        assert len(client.scheduler_info()["workers"]) == 2
    np.testing.assert_allclose(value, want, rtol=1e-12)
