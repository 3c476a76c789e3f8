"""Grad of grad through code whose gradient records a tape, and a gradient called inside
a differentiated function (issue 14, third increment; srcgrad/nested.py).

Second derivatives through for and while loops, branches and indexed writes are checked
against central finite differences of the first derivative in float64, and against the
hand-derived answer for polynomials; a force-matching loss that calls ``sg.grad(energy)``
against finite differences of the loss. What is refused (a ``once_differentiable``
backward) names the user's file and line.
"""

import inspect
import math
import os
import tempfile

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import UnsupportedError
from srcgrad.testing import numerical_grad

RTOL = 1e-5
X = np.array([0.3, -0.7, 1.1])


def fd_of(g, x, v=None, h=1e-6):
    """Central difference of ``g`` along the basis (scalar ``x``), or of ``<g(x), v>``."""
    return numerical_grad(g, (x,), eps=h, grad_outputs=v)


def powers_in_a_loop(x):
    s = 0.0
    for k in range(1, 5):
        s = s + x ** k
    return s


def recurrence(x):
    s = x
    for _ in range(3):
        s = np.sin(s) * x + s
    return np.sum(s)


def squaring_while(x):
    y = x
    while y < 10.0:
        y = y * y + x
    return y


def branch_in_loop(x):
    s = 0.0
    for k in range(4):
        if k % 2 == 0:
            s = s + np.exp(0.3 * k * x)
        else:
            s = s * np.cos(x)
    return np.sum(s)


def indexed_writes(x):
    y = np.zeros(3)
    for i in range(3):
        y[i] = x[i] ** 3 * x[(i + 1) % 3]
    return np.sum(y * y)


def test_second_derivative_of_a_polynomial_in_a_for_loop_is_the_hand_derived_one():
    # d2/dx2 (x + x^2 + x^3 + x^4) = 2 + 6x + 12x^2
    for x in (0.7, -1.3, 2.0):
        assert sg.grad(sg.grad(powers_in_a_loop))(x) == pytest.approx(2 + 6 * x + 12 * x * x,
                                                                     rel=1e-12)


def test_second_derivative_through_a_for_loop_matches_finite_differences_of_the_gradient():
    v = np.array([0.5, -1.0, 2.0])
    got = sg.grad(sg.grad(recurrence))(X, grad_outputs=v)
    np.testing.assert_allclose(got, fd_of(sg.grad(recurrence), X, v), rtol=RTOL, atol=1e-8)


def test_second_derivative_through_a_while_loop_matches_finite_differences_of_the_gradient():
    for x in (1.5, 2.2):   # the loop runs twice, then once
        got = sg.grad(sg.grad(squaring_while))(x)
        assert got == pytest.approx(fd_of(sg.grad(squaring_while), x), rel=RTOL)
    # y = (x^2 + x)^2 + x at x = 1.5: y'' = 2(2x + 1)^2 + 4(x^2 + x) = 47
    assert sg.grad(sg.grad(squaring_while))(1.5) == pytest.approx(47.0, rel=1e-12)


def test_second_derivative_through_branches_matches_finite_differences_of_the_gradient():
    for x in (0.4, -0.9):
        got = sg.grad(sg.grad(branch_in_loop))(x)
        assert got == pytest.approx(fd_of(sg.grad(branch_in_loop), x), rel=RTOL)


def test_second_derivative_through_indexed_writes_matches_finite_differences_of_the_gradient():
    v = np.array([1.0, -0.5, 0.25])
    got = sg.grad(sg.grad(indexed_writes))(X, grad_outputs=v)
    np.testing.assert_allclose(got, fd_of(sg.grad(indexed_writes), X, v), rtol=RTOL, atol=1e-8)


def test_second_derivative_of_a_tape_is_the_hessian_times_the_cotangent():
    v = np.array([0.5, -1.0, 2.0])
    got = sg.grad(sg.grad(recurrence))(X, grad_outputs=v)
    np.testing.assert_allclose(got, sg.hessian(recurrence)(X) @ v, rtol=1e-10)


def stops_early(x):
    s = 0.0
    for v in x:
        if v < 0:
            break
        s = s + v * v * v
    return s + x[2]


def test_second_derivative_through_a_loop_that_breaks_matches_finite_differences():
    # The first gradient pops values with no adjoint (the stop flag): each goes back on
    # its tape, and an adjoint slot back on the tape's adjoint, or the slots misalign.
    x = np.array([0.3, 0.5, -0.2, 0.4])
    v = np.array([1.0, 2.0, -1.0, 0.5])
    got = sg.grad(sg.grad(stops_early))(x, grad_outputs=v)
    np.testing.assert_allclose(got, fd_of(sg.grad(stops_early), x, v), rtol=RTOL, atol=1e-8)
    np.testing.assert_allclose(got, [1.8, 6.0, 0.0, 0.0], rtol=1e-12)   # 6 x_i v_i


def test_grad_of_grad_of_loop_code_is_reverse_mode_over_the_gradients_own_tape():
    first = sg.grad(recurrence).as_function()
    source = sg.grad(first).source
    assert "tape.append" in inspect.getsource(first)
    assert "rt.tape_unpop(" in source   # the reversed rt.tape_pop


def appends_rows(x, y):
    rows = []
    for k in range(3):
        rows.append(x * k + y)
    return np.sum(np.stack(rows) ** 2)


def test_a_gradient_that_pops_a_users_list_is_differentiated_again():
    # The first gradient pops the user's own list in place (rows.pop()), undoing its
    # appends: read again, that pop is a tape pop (pipeline._TapeMethods), which reverse
    # mode reverses. f = sum_k sum_i (k x_i + y_i)^2: d2f/dx2 = 2 (0 + 1 + 4) I = 10 I,
    # d2f/dy dx = 2 (0 + 1 + 2) I = 6 I.
    args = (np.array([0.3, -0.4]), np.array([1.2, 0.1]))
    v = np.array([0.7, -1.1])
    got = sg.grad(sg.grad(appends_rows))(*args, grad_outputs=v)
    np.testing.assert_allclose(got, 10 * v, rtol=1e-12)
    np.testing.assert_allclose(got, fd_of(lambda x: sg.grad(appends_rows)(x, args[1]), args[0], v),
                               rtol=RTOL, atol=1e-8)
    np.testing.assert_allclose(sg.grad(sg.grad(appends_rows), wrt=1)(*args, grad_outputs=v), 6 * v,
                               rtol=1e-12)
    hv = sg.hvp(appends_rows, args, (v, None), wrt=0)
    np.testing.assert_allclose(hv[0], got, rtol=1e-10)   # the Hessian is symmetric


@pytest.mark.parametrize("f", [recurrence, branch_in_loop, indexed_writes])
def test_gradgradcheck_passes_on_loop_code(f):
    assert sg.gradgradcheck(f, (X,), atol=1e-7, rtol=RTOL)


def mixed_loop(x, y):
    s = 0.0
    for _ in range(2):
        s = s + x * x * y + np.sin(x * y)
    return s


def test_gradgradcheck_passes_on_loop_code_with_several_inputs():
    assert sg.gradgradcheck(mixed_loop, (0.5, 1.5), wrt=(0, 1), atol=1e-7, rtol=RTOL)
    assert sg.gradgradcheck(mixed_loop, (0.5, 1.5), wrt=1, atol=1e-7, rtol=RTOL)


# ----- Nested use: a gradient inside a differentiated function -----

def energy(x):
    e = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i]
        e = e + (d * d - 1.0) ** 2
    return e


grad_energy = sg.grad(energy)
TARGET = np.array([0.1, -0.2, 0.3])


def force_matching(x):
    force = -grad_energy(x)
    return np.sum((force - TARGET) ** 2)


def force_matching_inline(x):
    force = -sg.grad(energy)(x)
    return np.sum((force - TARGET) ** 2)


@pytest.mark.parametrize("loss", [force_matching, force_matching_inline])
def test_a_force_matching_loss_calling_a_gradient_matches_finite_differences(loss):
    x = np.array([0.3, 1.1, 2.5])
    np.testing.assert_allclose(sg.grad(loss)(x), numerical_grad(loss, (x,)), rtol=RTOL)
    assert sg.gradcheck(loss, (x,), atol=1e-7, rtol=RTOL)


@pytest.mark.parametrize("loss", [force_matching, force_matching_inline])
def test_forward_mode_through_a_gradient_inside_the_function_is_its_hvp(loss):
    # the gradient's custom Function has a jvp: d/de grad E(x + e v) = H v
    x, v = np.array([0.3, 1.1, 2.5]), np.array([1.0, -0.5, 2.0])
    out, tangent = sg.jvp(loss, (x,), (v,))
    np.testing.assert_allclose(out, loss(x))
    np.testing.assert_allclose(tangent, np.dot(numerical_grad(loss, (x,)), v), rtol=RTOL)
    np.testing.assert_allclose(sg.jacfwd(loss)(x), sg.grad(loss)(x), rtol=1e-10)


@pytest.mark.parametrize("loss", [force_matching, force_matching_inline])
def test_the_hessian_of_a_loss_calling_a_gradient_matches_finite_differences(loss):
    # a third derivative of energy: the derivative of the hvp the gradient's backward is
    # (nested.py), read from the gradient's composed code (loop code: its tape)
    x = np.array([0.3, 1.1, 2.5])
    want = np.stack([fd_of(lambda z: sg.grad(loss)(z)[j], x) for j in range(3)])
    np.testing.assert_allclose(sg.hessian(loss)(x), want, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(sg.jacrev(sg.grad(loss))(x), want, rtol=RTOL, atol=1e-6)
    assert sg.gradgradcheck(loss, (x,), atol=1e-6, rtol=RTOL)


def scaled_energy(x, k):
    return np.sum(grad_energy(x * k) ** 2) * k


def test_a_gradient_inside_a_function_differentiates_with_respect_to_every_input():
    assert sg.gradcheck(scaled_energy, (np.array([0.3, 1.1, 2.5]), 1.3), wrt=(0, 1),
                        atol=1e-7, rtol=RTOL)


def cubic(x):
    return x ** 3 + np.sin(x)


def uses_a_straight_line_gradient(x):
    return sg.grad(cubic)(x) * x


def test_a_straight_line_gradient_inside_a_function_is_the_hand_derived_one():
    x = 0.7
    want = 3 * x * x + np.cos(x) + x * (6 * x - np.sin(x))
    assert sg.grad(uses_a_straight_line_gradient)(x) == pytest.approx(want, rel=1e-12)


# ----- Refusals -----

class Cube(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    @sg.once_differentiable
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * dy


def cubes_in_a_loop(x):
    s = 0.0
    for _ in range(2):
        s = s + Cube.apply(x)
    return s


grad_cubes = sg.grad(cubes_in_a_loop)


def calls_a_once_differentiable_gradient(x):
    return grad_cubes(x) * 2.0


def test_grad_of_grad_through_a_once_differentiable_function_is_refused_naming_it():
    with pytest.raises(UnsupportedError, match="Cube.backward is marked once_differentiable") as e:
        sg.grad(sg.grad(cubes_in_a_loop))(1.5)
    assert e.value.filename == __file__
    assert e.value.lineno == inspect.getsourcelines(cubes_in_a_loop)[1]


def test_a_once_differentiable_gradient_inside_a_function_is_refused_naming_it():
    with pytest.raises(UnsupportedError, match="gradient of grad_cubes_in_a_loop: Cube.backward is marked once_differentiable") as e:
        sg.grad(calls_a_once_differentiable_gradient)(1.5)
    assert e.value.filename == __file__
    assert e.value.lineno == inspect.getsourcelines(cubes_in_a_loop)[1]


def test_a_third_derivative_through_a_while_loop_matches_finite_differences():
    # the second derivative's own tape code differentiated again (tests/test_third_derivatives.py)
    second = sg.grad(sg.grad(squaring_while))
    got = sg.grad(sg.grad(sg.grad(squaring_while)))(1.5)
    np.testing.assert_allclose(got, (second(1.5 + 1e-5) - second(1.5 - 1e-5)) / 2e-5, rtol=1e-6)


def computed_wrt(x, k):
    return sg.grad(energy, wrt=k)(x)


def test_sg_grad_called_inline_with_a_variable_wrt_is_refused_naming_the_line():
    with pytest.raises(UnsupportedError, match="wrt a constant") as e:
        sg.grad(computed_wrt)(X, 0)
    assert e.value.filename == __file__
    assert e.value.lineno == inspect.getsourcelines(computed_wrt)[1] + 1


def energy_of_a_dict(p):
    s = 0.0
    for _ in range(2):
        s = s + np.sum(p["w"] ** 3)
    return s


grad_energy_of_a_dict = sg.grad(energy_of_a_dict)


def calls_a_gradient_with_a_dict(w):
    return np.sum(grad_energy_of_a_dict({"w": w})["w"])


def test_a_gradient_of_tape_code_taking_a_dict_inside_a_function_matches_the_hand_derived():
    # the inner gradient is 2 * 3 w**2 (the loop adds w**3 twice): the outer one is 12 w
    w = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(sg.grad(calls_a_gradient_with_a_dict)(w), 12 * w, rtol=1e-12)
    sg.gradcheck(calls_a_gradient_with_a_dict, (w,))


def meshes_with_itself(x):
    return np.sum(np.meshgrid(x, x)[0] * np.outer(x, x))


def hypot_of_three(x):
    return math.hypot(x[0], x[1] * 2.0, x[2])


def test_a_grad_of_grad_refusal_names_the_users_line_and_the_helper_not_generated_code():
    first = sg.grad(hypot_of_three).as_function()
    with pytest.raises(sg.SrcgradError, match=r"grad of grad: no gradient rule for "
                                              r"rt.hypot_vjp, used by the gradient of "
                                              r"hypot_of_three") as e:
        sg.grad(first)(np.array([1.0, 2.0, 3.0]), grad_outputs=np.ones(3))
    assert e.value.filename == __file__
    assert e.value.lineno == inspect.getsourcelines(hypot_of_three)[1] + 1
    assert e.value.source_line.strip() == "return math.hypot(x[0], x[1] * 2.0, x[2])"


def test_grad_of_grad_through_meshgrid_matches_differences():
    # rt.meshgrid_vjp has an adjoint (a cotangent that is one number for every entry too)
    x = np.array([1.0, 2.0, 3.0])
    first = sg.grad(meshes_with_itself).as_function()
    got = sg.grad(first)(x, grad_outputs=np.ones(3))
    want = numerical_grad(lambda y: np.sum(sg.grad(meshes_with_itself)(y)), (x,))
    np.testing.assert_allclose(got, want, rtol=1e-6)


# ----- The catalogue -----

def test_grad_of_grad_of_every_scalar_catalogue_function_matches_fd_or_is_refused(catalogue_case):
    """Never a wrong number: ``grad(grad(f))`` along a random cotangent equals the
    central difference of ``grad(f)``, or srcgrad refuses naming a file and line."""
    case = catalogue_case
    if case.kwargs or not case.targets:
        pytest.skip("keyword arguments")
    out = case.function(*case.args)
    if isinstance(out, (tuple, list)) or np.size(out) != 1:
        pytest.skip("not a scalar function")
    wrt = case.targets[0][0]
    args = case.args
    try:
        first = sg.grad(case.function, wrt=wrt).as_function()
        g1 = first(*args)
        v = np.random.default_rng(0).standard_normal(np.shape(g1)) if np.ndim(g1) else 1.0
        with np.errstate(all="ignore"):
            got = sg.grad(first, wrt=wrt, allow_unused=True, materialize_grads=True)(
                *args, grad_outputs=v)
    except sg.SrcgradError as exc:   # named at the user's line, never the generated code's
        assert exc.filename == case.function.__code__.co_filename and exc.lineno, str(exc)
        assert exc.source_line.strip() in inspect.getsource(case.function), str(exc)
        generated = os.path.join(tempfile.gettempdir(), "srcgrad-")   # loader.py's files
        assert generated not in str(exc) and "<srcgrad " not in str(exc), str(exc)
        return
    want = numerical_grad(first, args, wrt=wrt, grad_outputs=v, eps=1e-5)
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


def scaled_by_a_constant_sum(x):
    with sg.no_grad():
        scale = np.sum(x * x)
    return np.sum(x ** 3) * scale


def test_a_value_under_no_grad_stays_constant_in_second_derivatives():
    # f = c * sum(x^3) with c = sum(x^2) held constant: H = diag(6 c x), as PyTorch and JAX give;
    # differentiating through c (the bug) adds 2x(3x^2)^T + 3x^2(2x)^T.
    x = np.array([0.5, -1.0, 2.0])
    c = np.sum(x * x)
    want = np.diag(6 * c * x)
    np.testing.assert_allclose(sg.hessian(scaled_by_a_constant_sum)(x), want, rtol=1e-12)
    v = np.array([1.0, 0.5, -2.0])
    np.testing.assert_allclose(sg.hvp(scaled_by_a_constant_sum, (x,), (v,))[0], want @ v,
                               rtol=1e-12)
    first = sg.grad(scaled_by_a_constant_sum).as_function()
    np.testing.assert_allclose(sg.grad(first)(x, grad_outputs=v), want @ v, rtol=1e-12)
