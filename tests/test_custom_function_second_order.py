"""Second derivatives through a custom ``sg.Function`` not marked ``once_differentiable``
(issue 14; srcgrad/function_derivatives.py).

As PyTorch's double backward, the second derivative differentiates the user's
``backward`` (what it computes from the saved values and the outputs' gradients), not
``forward``: a Function whose backward is deliberately not forward's derivative gets the
derivative of that backward. Each case is checked against central finite differences of
the first derivative (float64), and against the hand-derived Hessian where there is one,
through every entry point: ``sg.hessian``, ``sg.jacfwd(sg.grad(f))`` (forward over
reverse), ``sg.jacrev(sg.grad(f))`` and ``sg.grad(sg.grad(f))`` (reverse over reverse),
``sg.hvp`` and ``sg.gradgradcheck``.
"""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import UnsupportedError
from srcgrad.testing import numerical_grad

X = np.array([0.5, -1.0, 2.0])
V = np.array([0.3, -1.2, 0.7])


def fd_hessian(f, x, wrt=0, args=()):
    """Central differences of ``sg.grad(f)``, column by column: ``H[i, j] = d g_i / d x_j``."""
    g = sg.grad(f, wrt=wrt)
    n = x.size

    def column(j):
        def gj(xx):
            full = list(args)
            full.insert(wrt, xx)
            return g(*full)
        return numerical_grad(lambda xx: gj(xx)[j] if np.ndim(gj(xx)) else gj(xx), (x,))

    return np.stack([column(j) for j in range(n)])


def check_all(f, x, want=None, rtol=1e-6, fd=True):
    """The Hessian of ``f`` at ``x`` through every entry point, against finite differences
    of the gradient (and ``want`` where given). ``fd=False``: a backward that is not
    forward's derivative, whose outputs' derivative is backward's (PyTorch), not what
    finite differences of the gradient see."""
    numeric = fd_hessian(f, x) if fd else want
    if want is not None:
        np.testing.assert_allclose(numeric, want, rtol=1e-5, atol=1e-6)
        numeric = want
    np.testing.assert_allclose(sg.hessian(f)(x), numeric, rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(sg.jacfwd(sg.grad(f))(x), numeric, rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(sg.jacrev(sg.grad(f))(x), numeric, rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(x, grad_outputs=V), numeric.T @ V,
                               rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(sg.hvp(f, (x,), (V,))[0], numeric @ V, rtol=rtol, atol=1e-6)
    if fd:
        assert sg.gradgradcheck(f, (x,))


# ----- Saving an input: the example of the issue -----

class Cube(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x ** 2


def twice_cube(x):
    return np.sum(Cube.apply(x) * 2)


def test_the_hessian_through_cube_is_12x():
    check_all(twice_cube, X, want=np.diag(12 * X))


def test_grad_of_grad_through_cube_with_an_explicit_seed():
    got = sg.grad(sg.grad(twice_cube))(X, grad_outputs=np.ones(3))
    np.testing.assert_allclose(got, 12 * X, rtol=1e-12)


# ----- A backward that is not forward's derivative: its own derivative, as PyTorch -----

class Deliberate(Cube):
    """forward is x**3, backward says the derivative is 5 (constant)."""

    @staticmethod
    def backward(ctx, g):
        return g * 5


class Linearised(Cube):
    """forward is x**3, backward says the derivative is 3x (so the second is 3, not 6x)."""

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x


def deliberate(x):
    return np.sum(Deliberate.apply(x) * 2)


def linearised(x):
    return np.sum(Linearised.apply(x) * 2)


def test_a_deliberately_wrong_backward_has_the_second_derivative_of_that_backward():
    np.testing.assert_allclose(sg.grad(deliberate)(X), 10.0)
    check_all(deliberate, X, want=np.zeros((3, 3)))


def test_reading_backward_not_forward():
    check_all(linearised, X, want=np.diag(np.full(3, 6.0)))   # 2 * 3, never 2 * 6x


def test_a_nonlinear_outer_function_goes_through_the_outputs_derivative_of_backward():
    # f = sum(sin(D(x))): f'' = -sin(y) (dy/dx)^2 + cos(y) d2y/dx2 with D's own derivatives
    # (dy/dx = 3x, as its backward says: PyTorch's double backward; finite differences of
    # the gradient cos(x^3) 3x would see x^3's own derivative)
    def f(x):
        return np.sum(np.sin(Linearised.apply(x)))
    y = X ** 3
    want = np.diag(-np.sin(y) * (3 * X) ** 2 + np.cos(y) * 3)
    check_all(f, X, want=want, fd=False)


# ----- Saving an output -----

class Exp(sg.Function):
    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y


def weighted_exp(x):
    return np.sum(Exp.apply(x) * V)


def test_saving_the_output():
    check_all(weighted_exp, X, want=np.diag(V * np.exp(X)))


def test_saving_the_output_through_a_nonlinear_loss():
    def f(x):
        return np.sum(Exp.apply(x) ** 2)   # sum exp(2x): H = diag(4 exp(2x))
    check_all(f, X, want=np.diag(4 * np.exp(2 * X)))


def test_a_function_of_an_input_the_first_gradient_does_not_follow():
    # the gradient in x reads Exp(w) as a value (needs_input_grad (False,)); its derivative
    # in w is Exp's own
    def f(x, w):
        return np.sum(x * Exp.apply(w))
    w = np.array([0.2, -0.1, 0.4])
    np.testing.assert_allclose(sg.jacfwd(sg.grad(f, wrt=0), wrt=1)(X, w), np.diag(np.exp(w)),
                               rtol=1e-12)
    np.testing.assert_allclose(sg.grad(sg.grad(f, wrt=0), wrt=1)(X, w, grad_outputs=V),
                               V * np.exp(w), rtol=1e-12)
    np.testing.assert_allclose(sg.hessian(f, wrt=(0, 1))(X, w)[0][1], np.diag(np.exp(w)),
                               rtol=1e-12)


def test_float32():
    x = X.astype(np.float32)
    np.testing.assert_allclose(sg.hessian(twice_cube)(x), np.diag(12 * X), rtol=1e-5)
    assert sg.hvp(twice_cube, (x,), (x,))[0].dtype == np.float32
    got = sg.grad(sg.grad(twice_cube))(x, grad_outputs=np.ones(3, np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, 12 * X, rtol=1e-5)


# ----- Several inputs and outputs, non-tensor arguments, attributes -----

class MulAdd(sg.Function):
    """(x * y * k, x + y ** 2) with k an int attribute."""

    @staticmethod
    def forward(ctx, x, y, k):
        ctx.save_for_backward(x, y)
        ctx.k = k
        return x * y * k, x + y ** 2

    @staticmethod
    def backward(ctx, g1, g2):
        x, y = ctx.saved_tensors
        return [g1 * y * ctx.k + g2, g1 * x * ctx.k + 2 * y * g2, None, None]   # a trailing None


def two_outputs(x, y):
    a, b = MulAdd.apply(x, y, 3)
    return np.sum(a ** 2) + np.sum(np.sin(b))


def test_two_inputs_two_outputs_and_an_int_argument():
    y = np.array([1.5, 0.2, -0.4])
    check_all(lambda x: two_outputs(x, y), X)
    # d2/dx2 of sum((3xy)^2) + sum(sin(x + y^2)) = 18 y^2 - sin(x + y^2)
    np.testing.assert_allclose(sg.hessian(two_outputs)(X, y),
                               np.diag(18 * y ** 2 - np.sin(X + y ** 2)), rtol=1e-10)
    # the mixed block: d/dy of the gradient in x, d/dx of the gradient in y
    mixed = sg.jacfwd(sg.grad(two_outputs, wrt=0), wrt=1)(X, y)
    np.testing.assert_allclose(mixed, np.diag(36 * X * y - 2 * y * np.sin(X + y ** 2)), rtol=1e-10)
    both = sg.hessian(two_outputs, wrt=(0, 1))(X, y)
    np.testing.assert_allclose(both[0][1], mixed, rtol=1e-10)
    np.testing.assert_allclose(both[1][1], np.diag(18 * X ** 2 + 2 * np.cos(X + y ** 2)
                                                   - 4 * y ** 2 * np.sin(X + y ** 2)), rtol=1e-10)
    assert sg.gradgradcheck(two_outputs, (X, y), wrt=(0, 1))


def test_grad_of_grad_in_one_argument_with_respect_to_the_other():
    # the first gradient asks only for x (needs_input_grad (True, False)); its derivative
    # in y needs MulAdd's gradient in y all the same
    y = np.array([1.5, 0.2, -0.4])
    got = sg.grad(sg.grad(two_outputs, wrt=0), wrt=1)(X, y, grad_outputs=V)
    want = np.diag(36 * X * y - 2 * y * np.sin(X + y ** 2)) @ V
    np.testing.assert_allclose(got, want, rtol=1e-10)


class Scale(sg.Function):
    """x * alpha ** 2 * n with a float and an int argument kept as attributes."""

    @staticmethod
    def forward(ctx, x, alpha, n):
        ctx.save_for_backward(x)
        ctx.alpha, ctx.n, ctx.eps = alpha, n, 1e-3
        return x ** 2 * alpha ** 2 * n + ctx.eps

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 2 * x * ctx.alpha ** 2 * ctx.n, np.sum(g * x ** 2 * 2 * ctx.alpha * ctx.n), None


def scaled(x, alpha):
    return np.sum(np.cos(Scale.apply(x, alpha, 2)))


def test_a_float_argument_kept_as_an_attribute_is_differentiated_again():
    alpha = 0.7
    check_all(lambda x: scaled(x, alpha), X)
    h = sg.hessian(scaled, wrt=(0, 1))(X, alpha)
    u = 2 * X ** 2 * alpha ** 2 + 1e-3
    du_dx, du_da = 4 * X * alpha ** 2, 4 * X ** 2 * alpha
    np.testing.assert_allclose(h[0][1], -np.cos(u) * du_dx * du_da - np.sin(u) * 8 * X * alpha,
                               rtol=1e-10)
    np.testing.assert_allclose(h[1][1], np.sum(-np.cos(u) * du_da ** 2 - np.sin(u) * 4 * X ** 2),
                               rtol=1e-10)


class Gated(sg.Function):
    """needs_input_grad read by backward."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w ** 2

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = gw = None
        if ctx.needs_input_grad[0]:
            gx = g * w ** 2
        if ctx.needs_input_grad[1]:
            gw = g * 2 * x * w
        return gx, gw


def gated(x, w):
    return np.sum(np.tanh(Gated.apply(x, w)))


def test_needs_input_grad():
    w = np.array([1.1, -0.4, 0.9])
    check_all(lambda x: gated(x, w), X)
    check_all(lambda w: gated(X, w), w)
    mixed = numerical_grad(lambda w: sg.grad(gated, wrt=0)(X, w), (w,), grad_outputs=V)
    np.testing.assert_allclose(V @ sg.jacfwd(sg.grad(gated, wrt=0), wrt=1)(X, w), mixed, rtol=1e-6)
    np.testing.assert_allclose(sg.grad(sg.grad(gated, wrt=0), wrt=1)(X, w, grad_outputs=V), mixed,
                               rtol=1e-6)


# ----- mark_non_differentiable -----

class SortWithIndex(sg.Function):
    @staticmethod
    def forward(ctx, x):
        idx = np.argsort(x)
        s = x[idx]
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, idx)
        return s, idx

    @staticmethod
    def backward(ctx, g, g_idx):
        x, idx = ctx.saved_tensors
        out = np.zeros_like(x)
        out[idx] = g
        return out


def sorted_weighted(x):
    s, idx = SortWithIndex.apply(x)
    return np.sum(s ** 3 * np.arange(1.0, 4.0)) + np.sum(idx)


def test_a_non_differentiable_output():
    order = np.argsort(X)
    want = np.zeros((3, 3))
    for rank, i in enumerate(order):
        want[i, i] = 6 * X[i] * (rank + 1)
    check_all(sorted_weighted, X, want=want)


# ----- In a loop (the gradient records a tape) -----

class Softplus(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.log1p(np.exp(x))

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g / (1 + np.exp(-x))


def softplus_chain(x):
    h = x
    for k in range(3):
        h = Softplus.apply(h * 0.8 + 0.1 * k)
    return np.sum(h ** 2)


def test_a_function_called_in_a_loop():
    check_all(softplus_chain, X)


def cubes_in_a_loop(x):
    s = 0.0
    for _ in range(2):
        s = s + Cube.apply(x)
    return s


def test_a_loop_over_cube_on_a_float():
    assert sg.grad(sg.grad(cubes_in_a_loop))(1.5) == pytest.approx(2 * 6 * 1.5, rel=1e-12)
    assert sg.hessian(cubes_in_a_loop)(1.5) == pytest.approx(18.0, rel=1e-12)


# ----- Other spellings: vjp, setup_context, *grads, a user jvp -----

class SquareSetup(sg.Function):
    @staticmethod
    def forward(x):
        return x ** 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x, output)

    @staticmethod
    def vjp(ctx, *grads):
        x, y = ctx.saved_tensors
        return grads[0] * 2 * x + 0 * y


def test_setup_context_vjp_and_varargs():
    def f(x):
        return np.sum(np.exp(SquareSetup.apply(x)))
    check_all(f, X, want=np.diag(np.exp(X ** 2) * (2 + 4 * X ** 2)))


class CubeWithJvp(Cube):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x ** 3

    @staticmethod
    def jvp(ctx, t):
        x, = ctx.saved_tensors
        return 3 * x ** 2 * t


def test_a_function_with_a_jvp():
    def f(x):
        return np.sum(np.sin(CubeWithJvp.apply(x)))
    y = X ** 3
    check_all(f, X, want=np.diag(-np.sin(y) * 9 * X ** 4 + np.cos(y) * 6 * X))


class HalfLiteral(sg.Function):
    """A literal of forward's code kept on ctx is a constant; None gradients are not
    materialized."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        ctx.scale = 0.5
        return x ** 2 * 0.5, x * 2.0

    @staticmethod
    def backward(ctx, g1, g2):
        x, = ctx.saved_tensors
        out = 0.0 * x
        if g1 is not None:
            out = out + g1 * x * 2 * ctx.scale
        if g2 is not None:
            out = out + g2 * 2.0
        return out


def test_a_literal_attribute_and_gradients_not_materialized():
    def f(x):
        a, b = HalfLiteral.apply(x)
        return np.sum(np.sin(a))   # b unused: backward gets None for it
    check_all(f, X, want=np.diag(np.cos(X ** 2 / 2) - np.sin(X ** 2 / 2) * X ** 2))


# ----- What is refused -----

class SavesAnIntermediate(sg.Function):
    @staticmethod
    def forward(ctx, x):
        s = np.sin(x)
        ctx.save_for_backward(x, s)
        return s * x

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return g * (s + x * np.cos(x))


def intermediate(x):
    return np.sum(SavesAnIntermediate.apply(x))


def test_a_saved_intermediate_is_refused_naming_it():
    assert sg.gradcheck(intermediate, (X,))   # the first derivative is fine
    for second in (lambda: sg.hessian(intermediate)(X), lambda: sg.grad(sg.grad(intermediate))(X, grad_outputs=V)):
        with pytest.raises(UnsupportedError, match="SavesAnIntermediate.backward again: saved value 1 "
                                                   "is a float value forward computed") as e:
            second()
        assert e.value.filename == __file__


class KeepsAMean(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.m = float(np.mean(x))
        return x * ctx.m

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * ctx.m + np.sum(g * x) / x.size


def test_an_attribute_forward_computed_is_refused_naming_it():
    def f(x):
        return np.sum(KeepsAMean.apply(x) ** 2)
    assert sg.gradcheck(f, (X,))
    with pytest.raises(UnsupportedError, match="KeepsAMean.backward again: ctx.m is a float value"):
        sg.hessian(f)(X)


class Once(Cube):
    @staticmethod
    @sg.once_differentiable
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x ** 2


def test_once_differentiable_is_still_refused():
    def f(x):
        return np.sum(Once.apply(x))
    for second in (lambda: sg.hessian(f)(X), lambda: sg.grad(sg.grad(f))(X, grad_outputs=V)):
        with pytest.raises(UnsupportedError, match="Once.backward is marked once_differentiable"):
            second()


def test_forward_over_reverse_through_a_once_differentiable_function_the_gradient_only_reads():
    # the gradient in x reads Once(w) as a value; the Hessian's block in w would need the
    # transpose of Once.backward
    def f(x, w):
        return np.sum(x * Once.apply(w))
    w = np.array([0.2, -0.1, 0.4])
    np.testing.assert_allclose(sg.grad(sg.grad(f, wrt=0), wrt=1)(X, w, grad_outputs=V),
                               3 * w ** 2 * V, rtol=1e-12)   # reverse mode calls its backward
    with pytest.raises(UnsupportedError, match="Once.backward again: it is marked once_differentiable"):
        sg.jacfwd(sg.grad(f, wrt=0), wrt=1)(X, w)


class PassesCtx(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, g):
        return g * 2 * first_saved(ctx)


def first_saved(ctx):
    return ctx.saved_tensors[0]


def test_a_backward_that_passes_ctx_on_is_refused_at_its_line():
    def f(x):
        return np.sum(PassesCtx.apply(x))
    np.testing.assert_allclose(sg.grad(f)(X), 2 * X)
    with pytest.raises(UnsupportedError, match="uses ctx itself") as e:
        sg.hessian(f)(X)
    assert e.value.filename == __file__
    assert e.value.lineno == PassesCtx.backward.__code__.co_firstlineno + 2   # (decorated)


# ----- A gradient called inside the function (nested.py's custom Function) -----

def quartic_energy(x):
    return np.sum(x ** 4) / 4


TARGET = np.array([0.1, -0.2, 0.3])


def force_loss(x):
    force = -sg.grad(quartic_energy)(x)
    return np.sum((force - TARGET) ** 2)


def test_the_hessian_of_a_loss_calling_a_gradient():
    # force = -x^3: loss = sum (x^3 + t)^2, H = diag(30 x^4 + 12 x t)
    check_all(force_loss, X, want=np.diag(30 * X ** 4 + 12 * X * TARGET))


class SavesInBackward(Cube):
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        ctx.save_for_backward(x)
        return g * 3 * x ** 2


def test_a_backward_calling_a_method_of_ctx_is_refused_at_its_line():
    def f(x):
        return np.sum(SavesInBackward.apply(x))
    with pytest.raises(UnsupportedError, match="calls ctx.save_for_backward") as e:
        sg.grad(sg.grad(f))(X, grad_outputs=V)
    assert e.value.filename == __file__
    assert e.value.lineno == SavesInBackward.backward.__code__.co_firstlineno + 3
