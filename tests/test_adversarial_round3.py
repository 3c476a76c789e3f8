"""Third adversarial round: programs that srcgrad got silently wrong (or failed on with
an error that was not a located refusal) before their fix. Each gradient or tangent is
checked against central differences in float64; each refusal must name this file and
the user's line."""

import numpy as np
import pytest

import srcgrad as sg
from adversarial_checks import V, X, _fd, _flat, assert_refused_in


def assert_refused_here(run, *words):
    assert_refused_in(__file__, run, *words)


# ----- Casts that return their argument: a write into the result reaches it -----
# Forward mode gave np.array(y, copy=False), np.array(y, copy=None) and np.float64(y)
# (which return y itself) a tangent of their own, so a write into the result changed y
# but not y's tangent. Reverse mode refuses these writes (y is read afterwards).

def array_no_copy_written(x):
    y = x * 1.0
    z = np.array(y, copy=False)
    z[0] = 0.0
    return np.sum(y * x)


def array_copy_if_needed_written(x):
    y = x * 1.0
    z = np.array(y, copy=None)
    z[1] = 0.0
    return np.sum(y * x)


def float64_of_an_array_written(x):
    y = x * 1.0
    z = np.float64(y)
    z[2] = x[0]
    return np.sum(y * x)


def astype_without_copy_written(x):
    y = x * 1.0
    z = y.astype(np.float64, copy=False)
    z[3] = 2.0
    return np.sum(y * x)


def array_copy_written(x):
    y = x * 1.0
    z = np.array(y)
    z[0] = 5.0
    return np.sum(y * x) + np.sum(z * x)


@pytest.mark.parametrize("f", [array_no_copy_written, array_copy_if_needed_written,
                               float64_of_an_array_written, astype_without_copy_written,
                               array_copy_written])
def test_forward_mode_follows_a_cast_that_returns_its_argument(f):
    want = _fd(f, (X,))
    _, out = sg.jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(out, want @ V, rtol=1e-6)
    if f is not array_copy_written:
        assert_refused_here(lambda: sg.grad(f)(X.copy()), "shares its memory")
    else:
        np.testing.assert_allclose(sg.grad(f)(X.copy()), want, rtol=1e-6)


# ----- Forward mode: a value written into later shares its operand's tangent exactly
# when it shares the operand's memory. y.flatten() (a copy) had the tangent ravel(dy), a
# view, so z[0] = ... changed dy; y.conj() of a real y (y itself) and a value built as
# a + y (dz = dy) had tangents that did not follow the write. -----

def flatten_written(x):
    y = x * 1.0
    z = y.flatten()
    z[0] = x[1] * 3.0
    return np.sum(y * x) + np.sum(z * x)


def sum_with_a_constant_written(x):
    y = x * 1.0
    z = np.fix(y) * 0.0 + y
    z[0] = x[1] * 3.0
    return np.sum(y * x) + np.sum(z * x)


def conj_of_real_written(x):
    y = x * 1.0
    z = y.conj()
    z[0] = x[1] * 3.0
    return np.sum(y * x) + np.sum(z * x)


def conj_of_complex_written(x):
    y = x + 1j * x[::-1]
    z = y.conj()
    z[0] = x[1] * 3.0
    return np.sum(np.abs(y) ** 2 * x) + np.sum(np.real(z) * x)


def reshape_of_a_transpose_written(x):
    y = (x.reshape(2, 2) * 1.0).T
    z = y.reshape(4)        # a copy (y is not contiguous); its tangent too
    z[1] = x[0] ** 2
    return np.sum(y.ravel() * x) + np.sum(z * x)


@pytest.mark.parametrize("f", [flatten_written, sum_with_a_constant_written,
                               conj_of_real_written, conj_of_complex_written,
                               reshape_of_a_transpose_written])
def test_forward_mode_tangent_memory_follows_the_values(f):
    want = _fd(f, (X,))
    _, out = sg.jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(out, want @ V, rtol=1e-6)
    np.testing.assert_allclose(sg.jacfwd(f)(X.copy()), want, rtol=1e-6, atol=1e-9)


def einsum_view_written(x):
    y = x * 1.0
    z = np.einsum("i->i", y)   # a view of y; einsum's tangent is a new array
    z[0] = x[1] * 3.0
    return np.sum(y * x) + np.sum(z * x)


def test_forward_mode_refuses_a_view_whose_tangent_is_not_one():
    assert_refused_here(lambda: sg.jvp(einsum_view_written, (X.copy(),), (V,)),
                        "np.einsum", "shares memory")
    assert_refused_here(lambda: sg.jacfwd(einsum_view_written)(X.copy()), "np.einsum")


# ----- A method of an object reached through a global or closure name, called for its
# effect with a value that carries a gradient, on an object read again: the name was
# resolved when compiled, no rule saw the change, and reverse mode dropped its gradient
# (HISTORY.append(x * 2); HISTORY[-1] * x gave half the gradient; G.fill(x[0]) none). -----

HISTORY = []
TABLE = {}
BUFFER = np.ones(4)


class Recorder:
    def __init__(self):
        self.items = []

    def add(self, v):
        self.items.append(v)


RECORDER = Recorder()


def appends_to_a_global_list_read_again(x):
    HISTORY.append(x * 2.0)
    return np.sum(HISTORY[-1] * x)


def updates_a_global_dict_read_again(x):
    TABLE.update(a=x * 2.0)
    return np.sum(TABLE["a"] * x)


def fills_a_global_array_read_again(x):
    BUFFER.fill(x[0])
    return np.sum(BUFFER * x)


def sorts_a_global_array_written_before(x):
    BUFFER[:] = x * 2.0
    BUFFER.sort()
    return np.sum(BUFFER * x)


def a_method_appends_to_its_object(x):
    RECORDER.add(x ** 2)
    return np.sum(RECORDER.items[-1])


def _closure_appender():
    seen = []

    def f(x):
        seen.append(x * 2.0)
        return np.sum(seen[-1] * x)
    return f


def setdefault_assigned_from_a_global_dict(x):
    TABLE.clear()
    y = TABLE.setdefault("b", x * 2.0)
    return np.sum(TABLE["b"] * x) + np.sum(y)


@pytest.mark.parametrize("f", [appends_to_a_global_list_read_again, updates_a_global_dict_read_again,
                               fills_a_global_array_read_again, sorts_a_global_array_written_before,
                               a_method_appends_to_its_object, _closure_appender(),
                               setdefault_assigned_from_a_global_dict],
                         ids=lambda f: f.__name__)
def test_an_outside_object_changed_in_place_is_refused_at_its_line(f):
    assert_refused_here(lambda: sg.grad(f)(X.copy()), "changes in place")
    assert_refused_here(lambda: sg.grad(f, materialize_grads=True)(X.copy()), "changes in place")


LOSSES = []


def logs_its_loss(x):
    loss = np.sum(x ** 3)
    LOSSES.append(loss)   # never read by the function: its gradient is untouched
    return loss


GLOBAL_W = np.arange(8.0).reshape(2, 4)


def a_method_of_a_global_array(x):
    y = GLOBAL_W.dot(x)
    return np.sum(y ** 2) + np.sum(GLOBAL_W)


def test_a_pure_method_of_a_global_array_keeps_its_own_refusal():
    assert_refused_here(lambda: sg.grad(a_method_of_a_global_array)(X), "dot")
    with pytest.raises(sg.SrcgradError) as info:
        sg.grad(a_method_of_a_global_array)(X)
    assert "changes in place" not in str(info.value)


def test_logging_into_a_global_list_never_read_again_still_differentiates():
    np.testing.assert_allclose(sg.grad(logs_its_loss)(X), 3 * X ** 2, rtol=1e-12)
    assert len(LOSSES) >= 1


class LoggingModel:
    def __init__(self):
        self.W = np.linspace(-1.0, 1.0, len(X) ** 2).reshape(len(X), len(X))
        self.losses = []
        self.shared = self.losses   # the same list under a second attribute

    def loss(self, x):
        value = np.sum(np.tanh(self.W @ x) ** 2)
        self.losses.append(value)   # logged; the function reads self.W, never self.losses
        return value

    def loss_reading_the_log_by_another_name(self, x):
        self.losses.append(np.sum(x ** 2))
        return np.sum(self.W @ x) + self.shared[-1]


def test_a_method_logging_into_an_attribute_it_never_reads_differentiates():
    """``self.losses.append(value)`` beside reads of ``self.W``: the read of another
    attribute (an array) cannot reach the list, so it is not refused (it was: the check
    compared only the root name ``self``)."""
    model = LoggingModel()
    got = sg.grad(model.loss)(X)
    y = np.tanh(model.W @ X)
    np.testing.assert_allclose(got, model.W.T @ (2 * y * (1 - y * y)), rtol=1e-12)
    assert len(model.losses) >= 1
    with pytest.raises(sg.SrcgradError, match="reads again"):   # the same list, another name
        sg.grad(model.loss_reading_the_log_by_another_name)(X)


def test_forward_mode_appending_to_a_global_list_follows_it():
    _, out = sg.jvp(appends_to_a_global_list_read_again, (X,), (V,))
    np.testing.assert_allclose(out, 4 * X @ V, rtol=1e-12)


# ----- Forward mode: a helper appending to a list of its caller's (inlined: ``lst_2 =
# lst; lst_2.append(v)``) gave the appended values a tangent on a list nothing read, so
# the jvp was 0. The append was then refused in both modes; since round ten a nested def
# that changes a list of f in place takes it and returns it (nonlocal_functions.py), and
# both modes give the derivative of the program. -----

def helper_appends_to_the_callers_list(x):
    lst = []

    def add(v):
        lst.append(v)
    add(x ** 2)
    add(x)
    return np.sum(lst[0] * lst[1])


def test_a_helper_appending_to_the_callers_list_is_differentiated_in_both_modes():
    # sum(x ** 2 * x): the gradient 3 x ** 2
    _, out = sg.jvp(helper_appends_to_the_callers_list, (X,), (V,))
    np.testing.assert_allclose(out, 3 * X ** 2 @ V, rtol=1e-12)
    np.testing.assert_allclose(sg.grad(helper_appends_to_the_callers_list)(X), 3 * X ** 2,
                               rtol=1e-12)


# ----- sg.vjp: an argument or output changed in place between the forward sweep and
# backward. The sweep saved references to them, and backward silently gave the gradient
# of the changed values; it now raises PyTorch's "modified by an inplace operation". -----

def _exp(x):
    return np.exp(x)


def _sin_of_a_view(x):
    return np.sin(x[1:]) * 1.0


def _pair(x):
    y = x * 2.0
    return y, np.sum(y ** 2)


def _dict_cube(p):
    return np.sum(p["w"] ** 3)


def _change_output():
    out, backward = sg.vjp(_exp)(X.copy())
    out[0] = 100.0
    return backward(np.ones(4))


def _change_argument():
    x = X.copy()
    _, backward = sg.vjp(_sin_of_a_view)(x)
    x[2] = 7.0
    return backward(np.ones(3))


def _change_one_output_of_two():
    (y, _), backward = sg.vjp(_pair)(X.copy())
    y[:] = 0.0
    return backward((None, 1.0))


def _change_a_leaf_of_a_structure():
    p = {"w": X.copy()}
    _, backward = sg.vjp(_dict_cube)(p)
    p["w"][0] = 9.0
    return backward()


@pytest.mark.parametrize("run", [_change_output, _change_argument, _change_one_output_of_two,
                                 _change_a_leaf_of_a_structure], ids=lambda r: r.__name__)
def test_vjp_backward_refuses_a_saved_array_changed_in_place(run):
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run()


def test_vjp_backward_after_no_change_or_the_same_values_written_back():
    x = X.copy()
    out, backward = sg.vjp(_exp)(x)
    x[0] = x[0]
    np.testing.assert_allclose(backward(np.ones(4), retain_graph=True), np.exp(X), rtol=1e-12)
    np.testing.assert_allclose(backward(V), np.exp(X) * V, rtol=1e-12)
    out2, backward2 = sg.vjp(_exp)(np.array([np.nan, 0.0]))
    np.testing.assert_array_equal(np.isnan(backward2(np.ones(2))), [True, False])


# ----- What the reverse sweep restores must not reach the caller's output or aux. The
# sweep undoes indexed writes (y[0] = ... is restored to the old y[0]) on arrays it
# saved; an aux holding y, or an output dict holding y, came back with the old values
# (only a returned name written into was copied). -----

def aux_written_into(x):
    y = x * 1.0
    y[0] = x[1] * 5.0
    return np.sum(y ** 2), y


def aux_written_in_a_loop(x):
    y = x * 1.0
    for i in range(3):
        y[i + 1] = y[i] * 2.0
    return np.sum(y), {"y": y, "tail": y[1:]}


def output_dict_holding_an_array_written_into(x):
    y = x * 1.0
    y[0] = 7.0
    return {"loss": np.sum(y * x), "y": y}


@pytest.mark.parametrize("f", [aux_written_into, aux_written_in_a_loop], ids=lambda f: f.__name__)
def test_the_aux_keeps_the_values_the_function_returned(f):
    _, want = f(X.copy())
    for run in (lambda: sg.grad(f, has_aux=True)(X.copy())[1],
                lambda: sg.value_and_grad(f, has_aux=True)(X.copy())[0][1],
                lambda: sg.vjp(f, has_aux=True)(X.copy())[2]):
        np.testing.assert_allclose(_flat(run()), _flat(want), rtol=1e-12)
    np.testing.assert_allclose(sg.grad(f, has_aux=True)(X.copy())[0],
                               _fd(lambda x: f(x)[0], (X,)), rtol=1e-6)


def test_an_output_dict_keeps_its_values_after_backward():
    want = output_dict_holding_an_array_written_into(X.copy())
    out, backward = sg.vjp(output_dict_holding_an_array_written_into)(X.copy())
    grads = backward({"loss": 1.0, "y": V})
    np.testing.assert_allclose(out["y"], want["y"], rtol=1e-12)
    seeded = lambda x: np.sum(output_dict_holding_an_array_written_into(x)["y"] * V) + \
        output_dict_holding_an_array_written_into(x)["loss"]
    np.testing.assert_allclose(grads, _fd(seeded, (X,)), rtol=1e-6)
