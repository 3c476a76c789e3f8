"""An adversarial audit of the forward-mode and higher-order APIs: programs a new user
writes, each derivative checked against central finite differences in float64
(srcgrad.testing.numerical_grad), each test one bug that gave a silently wrong result."""

import dataclasses

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

def fd_jacobian(fn, args, n, eps=1e-6):
    """Central differences of the array ``fn(*args)`` in ``args[n]``: ``out.shape + in.shape``."""
    x = np.asarray(args[n], dtype=np.float64)
    columns = []
    for k in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[k] = eps
        plus, minus = list(args), list(args)
        plus[n], minus[n] = x + step, x - step
        if not x.shape:
            plus[n], minus[n] = float(plus[n]), float(minus[n])
        columns.append((np.asarray(fn(*plus)) - np.asarray(fn(*minus))) / (2 * eps))
    out = np.stack(columns, axis=-1)
    return out.reshape(out.shape[:-1] + x.shape)


X = np.array([0.3, -1.2, 0.7, 0.5])


def prefix_square(x):
    y = x * 1.0
    y[1:] += y[:-1] ** 2   # y[:-1] is saved as a view of y, which the sweep restores
    return np.sum(y ** 2)


def test_jacrev_of_indexed_write_reading_a_view():
    """retain_graph copied the saved values one array at a time: the saved view y[:-1]
    kept y's value after the write, and jacrev (one retained backward per row) was wrong."""
    want = numerical_grad(prefix_square, (X.copy(),))
    np.testing.assert_allclose(sg.jacrev(prefix_square)(X), want, rtol=1e-6, atol=1e-6)
    out, backward = sg.vjp(prefix_square)(X)
    first = backward(1.0, retain_graph=True)
    np.testing.assert_allclose(first, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(backward(1.0), want, rtol=1e-6, atol=1e-6)


@dataclasses.dataclass
class Scaled:
    w: np.ndarray
    s: float
    k: float


def scaled_loss(q, x):
    return np.sum(np.tanh(q.w * x) * q.s ** 2) * q.k


def test_hessian_of_a_dataclass_whose_field_a_seed_does_not_reach():
    """The batched tangent program stacked one seed's Fields adjoint beside another seed's
    zero (d(dq.k)/dk = 0 left dq unchanged) as if both were arrays: a TypeError from a
    generated file instead of the Hessian."""
    x = np.array([0.3, -1.2, 0.7])
    q = Scaled(np.array([0.5, 1.5, -0.3]), 1.5, 2.0)
    H = sg.hessian(scaled_loss)(q, x)

    def grad_q(w, s, k):
        g = sg.grad(scaled_loss)(Scaled(w, s, k), x)
        return np.concatenate([g.w, [g.s, g.k]])

    for field, n in (("w", 0), ("s", 1), ("k", 2)):
        column = fd_jacobian(grad_q, [q.w.copy(), q.s, q.k], n)   # (5,) + shape of the field
        np.testing.assert_allclose(getattr(H.w, field), column[:3], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(getattr(H.s, field), column[3], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(getattr(H.k, field), column[4], rtol=1e-5, atol=1e-6)


def two_inputs(x, y):
    z = x * y
    for _ in range(2):
        z = np.sin(z) + y
    return np.sum(z ** 2)


def test_jvp_source_runs_what_it_shows_for_a_second_argument():
    """sg.source(f, mode="jvp") is a program: run as printed it gives the tangent of
    finite differences; its header names the tangent it takes (it said dx for wrt=1)."""
    from srcgrad import runtime
    x, y, v = np.array([0.3, -1.2, 0.7]), np.array([1.1, 0.4, -0.6]), np.array([0.5, 1.0, -2.0])
    text = sg.source(two_inputs, mode="jvp", wrt=1)
    assert "dy is the tangent of y" in text
    namespace = {"np": np, "rt": runtime}
    exec(text, namespace)
    out, tangent = namespace["two_inputs_jvp"](x, y, v)
    want = numerical_grad(lambda y: two_inputs(x, y), (y,)) @ v
    np.testing.assert_allclose(tangent, want, rtol=1e-6)
    np.testing.assert_allclose(out, two_inputs(x, y))


def cubic(x, a, b=1.0):
    return np.sum(a * x ** 3 + b * x ** 2)


def powered(x, k=2.0, *, p=3.0):
    return np.sum(x ** p) * k


def test_hessian_of_a_partial_and_of_keyword_only_defaults():
    """hessian_fn passed every bound argument positionally, a keyword-only one too: the
    Hessian of functools.partial(f, a=...) (whose a becomes keyword-only) or of a function
    with a keyword-only default raised "too many positional arguments"; and it took no
    keyword arguments at all."""
    import functools
    x = np.array([0.3, -1.2, 0.7])
    want = fd_jacobian(lambda x: sg.grad(cubic)(x, 2.0, 3.0), [x], 0)
    np.testing.assert_allclose(sg.hessian(functools.partial(cubic, a=2.0, b=3.0))(x), want,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sg.hessian(powered)(x), np.diag(12 * x), rtol=1e-12)
    np.testing.assert_allclose(sg.hessian(powered)(x, k=4.0), np.diag(24 * x), rtol=1e-12)
    with pytest.raises(TypeError, match="keyword-only argument 'p'"):
        sg.hessian(powered)(x, p=2.0)   # never silently the default's Hessian


def column_scaled(x):
    M = np.outer(x, x)
    M[:, 0] *= x
    M[1] = M[1] ** 2
    return np.sum(M.T @ x)


def test_jacrev_of_a_gradient_refuses_at_the_users_line():
    """sg.jacrev(sg.grad(f)) runs the gradient's code in reverse mode; what that code's
    run-time checks refuse was said at a line of the generated file in /tmp."""
    x = np.array([0.3, -1.2, 0.7, 0.5])
    H = fd_jacobian(sg.grad(column_scaled), [x], 0)
    np.testing.assert_allclose(sg.hessian(column_scaled)(x), H, rtol=1e-5, atol=1e-6)
    try:
        got = sg.jacrev(sg.grad(column_scaled))(x)
    except sg.SrcgradError as exc:
        assert exc.filename == __file__ and "M[:, 0] *= x" in str(exc)
    else:
        np.testing.assert_allclose(got, H, rtol=1e-5, atol=1e-6)


def running_sums(x):
    s = 0.0
    out = []
    for i in range(3):
        s = s + x[i] ** 2
        out.append(s)
    return np.sum(np.array(out) ** 2)


def running_sums_items(x):
    s = 0.0
    out = []
    for i in range(2):
        s = s + x[i]
        out.append(s)
    return out[0] ** 2 + out[1] ** 2


def test_grad_of_grad_of_a_list_built_in_a_loop_with_a_one_hot_seed():
    """The adjoint of seq_pop joined (zero for the rest, d_last) into [d_last]: a one-entry
    list for a list of two, so the last item's adjoint moved to the first position.
    sg.grad(sg.grad(f))(x, grad_outputs=e_1) gave a wrong Hessian row (or an IndexError
    from the generated file) wherever the seed reached only the later items."""
    x = np.array([0.3, -1.2, 0.7])
    for f, n in ((running_sums, 3), (running_sums_items, 2)):
        H = fd_jacobian(sg.grad(f), [x[:n]], 0)
        rows = [sg.grad(sg.grad(f))(x[:n], grad_outputs=e) for e in np.eye(n)]
        np.testing.assert_allclose(rows, H, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sg.jacrev(sg.grad(f))(x[:n]), H, rtol=1e-5, atol=1e-6)


def dict_of_powers(x):
    d = {"a": x, "b": x ** 2}
    d["a"] = d["a"] * d["b"]
    return np.sum(np.sin(d["a"])) * np.sum(d["b"])


def test_grad_of_grad_of_a_local_dict_with_a_one_hot_seed():
    """The adjoint of reading a key of a dict's adjoint (rt.seq_onehot) was the value
    itself, not a dict holding it, and adjoints of a dict's adjoint were added with +:
    sg.grad(sg.grad(f))(x, grad_outputs=...) of a function with a local dict failed in
    generated code (IndexError, TypeError)."""
    x = np.array([0.3, -1.2, 0.7, 0.5])
    H = fd_jacobian(sg.grad(dict_of_powers), [x], 0)
    rows = [sg.grad(sg.grad(dict_of_powers))(x, grad_outputs=e) for e in np.eye(4)]
    np.testing.assert_allclose(rows, H, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sg.jacrev(sg.grad(dict_of_powers))(x), H, rtol=1e-5, atol=1e-6)
    try:   # forward mode refuses the dict write in the gradient, at the user's line
        np.testing.assert_allclose(sg.hessian(dict_of_powers)(x), H, rtol=1e-5, atol=1e-6)
    except sg.SrcgradError as exc:
        assert exc.filename == __file__


def dict_new_key(x):
    d = {"a": x, "b": x ** 2}
    d["a"] = d["a"] * d["b"]
    d["c"] = np.sum(d["a"])   # a key the function adds: its restore deletes it
    return d["c"] * np.sum(d["b"])


def test_grad_of_grad_of_a_dict_key_the_function_adds():
    """The gradient's own sweep deleted the added key, and the sweep differentiating it
    deleted it again: KeyError from the generated file for sg.grad(sg.grad(f))."""
    x = np.array([0.3, -1.2, 0.7, 0.5])
    H = fd_jacobian(sg.grad(dict_new_key), [x], 0)
    rows = [sg.grad(sg.grad(dict_new_key))(x, grad_outputs=e) for e in np.eye(4)]
    np.testing.assert_allclose(rows, H, rtol=1e-5, atol=1e-6)


def _dict_rewritten(y):
    c = {}
    c["k"] = np.sqrt(1.0 + y * y)
    c["k"] = c["k"] * y[::-1]
    return np.sum(c["k"])


def _dict_accumulated(y):
    d = {"a": y * 2.0}
    for k in range(3):
        d["a"] = d["a"] * y[k]
        d["b"] = d.get("b", 0.0) + np.sum(d["a"])
    return d["b"] + np.sum(d["a"] ** 2) + sum(np.sum(v) for v in d.values())


@pytest.mark.parametrize("f", [_dict_rewritten, _dict_accumulated])
def test_second_derivatives_through_a_dict_written_again(f):
    """A gradient read again undoes a dict write (rt.restore_item) and saves the value it
    overwrites: forward mode does the same on the dict's tangent (it was refused)."""
    y = np.array([0.3, -0.7, 1.2])
    fd = np.stack([(sg.grad(f)(y + e) - sg.grad(f)(y - e)) / 2e-6 for e in np.eye(3) * 1e-6], axis=1)
    np.testing.assert_allclose(sg.hessian(f)(y), fd, rtol=1e-6, atol=1e-6)
    v = np.array([1.0, -0.5, 2.0])
    np.testing.assert_allclose(sg.grad(sg.grad(f))(y, grad_outputs=v), fd @ v, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sg.hvp(f, (y,), (v,))[0], fd @ v, rtol=1e-6, atol=1e-6)
