"""Forward mode and second order, round twelve: constructs reverse mode accepts, each checked
under sg.jvp, sg.hessian, sg.jacfwd of the gradient, sg.hvp, jvp of the gradient and a
gradient of a gradient against central differences (in float64) of ``sg.grad``, which
is itself checked against central differences of the function; what stays out of reach
is refused at the user's line."""

import dataclasses
import warnings

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.jit import JitFallbackWarning
from srcgrad.testing import gradgradcheck, numerical_grad
from tests.adversarial_checks import assert_refused_in

RNG = np.random.default_rng(12)
X = np.array([0.3, -1.2, 0.7])
V = RNG.standard_normal(3)
W = RNG.standard_normal(3)
HERE = __file__.rsplit("/", 1)[-1]


def fd_of_grad(f, x, eps=1e-6):
    """Central differences of ``sg.grad(f)``: the Hessian, column by column."""
    g = sg.grad(f)
    columns = []
    for i in range(x.size):
        step = np.zeros_like(x)
        step[i] = eps
        columns.append((g(x + step) - g(x - step)) / (2 * eps))
    return np.stack(columns, axis=-1)


def check_second_order(f, x=X, jit=True):
    """Every forward and second-order spelling of ``f``'s derivatives against differences."""
    g = sg.grad(f)(x)
    np.testing.assert_allclose(g, numerical_grad(f, (x,)), rtol=1e-6, atol=1e-8)
    H = fd_of_grad(f, x)
    atol = 1e-6 * max(1.0, np.abs(H).max())
    np.testing.assert_allclose(sg.jvp(f, (x,), (V,))[1], g @ V, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(sg.hessian(f)(x), H, rtol=1e-5, atol=atol)
    np.testing.assert_allclose(sg.jacfwd(sg.grad(f))(x), H, rtol=1e-5, atol=atol)
    np.testing.assert_allclose(sg.hvp(f, (x,), (V,))[0], H @ V, rtol=1e-5, atol=atol)
    np.testing.assert_allclose(sg.jvp(sg.grad(f), (x,), (V,))[1], H @ V, rtol=1e-5, atol=atol)
    inner = sg.grad(f)
    np.testing.assert_allclose(sg.grad(lambda z: np.sum(inner(z) * W))(x), H.T @ W,
                               rtol=1e-5, atol=atol)
    if jit:   # compiled, or run as NumPy with the fallback warning: the same numbers
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            np.testing.assert_allclose(sg.jvp(f, (x,), (V,), jit=True)[1], g @ V, rtol=1e-10)
            np.testing.assert_allclose(sg.jvp(sg.grad(f), (x,), (V,), jit=True)[1], H @ V,
                                       rtol=1e-5, atol=atol)


# ----- a pure call whose value is dropped: np.sort(y) alone -----

def discarded_calls(x):
    y = np.sin(x)
    np.sort(y)
    sorted(y)
    np.linalg.norm(y)
    y.sum()
    y.reshape(3, 1)
    [y, x].copy()
    return np.sum(y ** 2) * x[0]


def test_a_discarded_pure_call_in_forward_mode():
    """Forward mode refused a statement calling a primitive for nothing ("called for its
    effect on values that carry a tangent"); reverse mode keeps it as it is."""
    check_second_order(discarded_calls)


# ----- casts to complex: .astype(complex), complex(x), np.complex128(x) -----

def cast_to_complex(x):
    z = x.astype(complex) * (1 + 2j)
    return np.sum(np.abs(z) ** 2 * x)


def cast_back_to_real(x):
    z = (x * (1 + 2j)).astype(np.float64)   # the real part
    return np.sum(z ** 3)


def complex_of_a_scalar(x):
    z = np.complex128(x[0]) * 1j + x[1]
    w = complex(x[2] * x[0]) * (2 + 1j)
    return np.abs(z) ** 2 + np.abs(w) ** 3


@pytest.mark.parametrize("f", [cast_to_complex, cast_back_to_real, complex_of_a_scalar])
def test_casts_to_and_from_complex(f):
    """.astype(complex) had no tangent (forward mode refused it on complex values), and
    complex(x), np.complex128(x) had no rule in either mode."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        check_second_order(f)


def complex_of_two(x):
    return np.abs(complex(x[0], x[1])) ** 2


def test_complex_of_two_numbers_is_refused_at_its_line():
    assert_refused_in(HERE, lambda: sg.grad(complex_of_two)(X), "complex")


# ----- sg.grad(f, has_aux=True) called inside: the aux is a value of the arguments -----

def energy_and_total(x):
    return np.sum(np.cos(x) * x ** 2), np.sum(x) * x[1]


def weighted_by_aux(x):
    g, aux = sg.grad(energy_and_total, has_aux=True)(x)
    return np.sum(g ** 2) * aux


def energy_and_vector(x):
    return np.sum(np.sin(x) * x), np.tanh(x)


def aux_vector(x):
    g, aux = sg.grad(energy_and_vector, has_aux=True)(x)
    return np.sum(g * aux) + np.sum(aux ** 2)


def energy_and_count(x):
    return np.sum(np.cos(x) * x ** 3), int(np.sum(x > 0))


def aux_count(x):
    g, n = sg.grad(energy_and_count, has_aux=True)(x)
    return np.sum(g ** 2) * n


@pytest.mark.parametrize("f", [weighted_by_aux, aux_vector, aux_count])
def test_a_gradient_with_aux_called_inside(f):
    """The gradient's custom Function marked its aux non-differentiable, so an aux that
    depends on the input (np.sum(x) * x[1]) dropped its derivative: sg.grad was silently
    wrong; it had no jvp, and its second derivatives were refused. Now the aux's own
    vector-Jacobian product and tangent are added, and the third-derivative form (the
    hvp of phi) carries <aux, d_aux>."""
    check_second_order(f)


def energy_two(x, y):
    return np.sum(np.cos(x) * y ** 2), np.sum(x * y)


def aux_of_two(x):
    (gx, gy), aux = sg.grad(energy_two, wrt=(0, 1), has_aux=True)(x, x ** 2)
    return np.sum(gx * gy) * aux


def energy_and_metrics(x):
    return np.sum(np.cos(x) * x ** 2), {"m": np.sum(x) * x[0], "k": 3}


def aux_dict(x):
    g, aux = sg.grad(energy_and_metrics, has_aux=True)(x)
    return np.sum(g ** 2) * aux["m"]


def test_a_gradient_of_two_arguments_with_aux_called_inside():
    check_second_order(aux_of_two, jit=False)


def test_a_structured_aux_differentiated_once_and_refused_twice():
    """A dict aux: its derivative flows in first order (sg.grad, sg.jvp); a second
    derivative through it is refused at the user's function, not computed without it."""
    np.testing.assert_allclose(sg.grad(aux_dict)(X), numerical_grad(aux_dict, (X,)), rtol=1e-6)
    np.testing.assert_allclose(sg.jvp(aux_dict, (X,), (V,))[1],
                               numerical_grad(aux_dict, (X,)) @ V, rtol=1e-6)
    assert_refused_in(HERE, lambda: sg.hessian(aux_dict)(X), "structured aux")


# ----- sg.jvp(f, ...) called inside, differentiated again -----

def mixed(x, t):
    return np.sin(x) * t[::-1] + np.sum(x ** 2 * t)


def scalar_energy(p, q):
    return np.sum(np.exp(p) * q ** 2)


def jvp_of_two_primals(x):
    out, dout = sg.jvp(mixed, (x, x), (x ** 2, x))
    return np.sum(out * dout)


def jvp_of_a_scalar(x):
    v, dv = sg.jvp(scalar_energy, (x, np.cos(x)), (np.ones(3), x))
    return v * dv + dv ** 2


def jvp_with_a_none_tangent(x):
    _, dv = sg.jvp(scalar_energy, (x, x[::-1]), (x, None))
    return dv ** 2


@pytest.mark.parametrize("f", [jvp_of_two_primals, jvp_of_a_scalar, jvp_with_a_none_tangent])
def test_sg_jvp_inside_differentiated_twice(f):
    """Its custom Function had no jvp and no derivative of its backward: sg.jvp refused it,
    and the Hessian was refused at a line of srcgrad/nested_jvp.py; a None tangent broke
    even sg.grad (its backward returned a gradient for the None)."""
    check_second_order(f)
    gradgradcheck(f, (X,))   # sg.grad(sg.grad(f)): the backward's own vjp


# ----- for layer in self, of a model built in the function -----

@dataclasses.dataclass
class Chain:
    """Iterated as its layers (``__iter__``), as torch.nn.Sequential."""
    layers: list

    def __iter__(self):
        return iter(self.layers)

    def __call__(self, x):
        for layer in self:
            x = np.tanh(x * layer)
        return x

    def spread(self, x):
        return sum(np.sum(np.sin(layer * x)) * k for k, layer in enumerate(self))


def chain_built_inside(x):
    m = Chain([x, x ** 2 + 1.0])
    return np.sum(m(x)) + m.spread(x[::-1])


def chain_comprehension(x):
    m = Chain([np.cos(x), x * 3.0])
    return sum(np.sum(layer * x) ** 2 for layer in m)


@pytest.mark.parametrize("f", [chain_built_inside, chain_comprehension])
def test_for_layer_in_self_of_a_model_built_inside(f):
    """``for layer in self`` was read as ``self.layers`` only for a model passed as an
    argument; of one built in the function the loop called len(self): a TypeError from
    the generated gradient. Now a name of a known class iterates its __iter__'s field."""
    check_second_order(f)


# ----- jit=True of a gradient read again: its fallback warning names the user's line -----

def test_a_jit_fallback_of_jvp_of_a_gradient_names_the_users_file():
    """sg.jvp(sg.grad(f), jit=True) ran the tangent program of srcgrad's composed gradient;
    where Numba could not compile it the warning named that generated file
    (/tmp/srcgrad-.../grad_f_3.py), or no file at all."""
    pytest.importorskip("numba")
    for f in (cast_to_complex, discarded_calls):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = sg.jvp(sg.grad(f), (X,), (V,), jit=True)[1]
        fallbacks = [str(w.message) for w in caught if issubclass(w.category, JitFallbackWarning)]
        assert fallbacks, "the tangent program of a composed gradient is expected to fall back"
        for message in fallbacks:
            assert HERE in message and "srcgrad-" not in message, message
        np.testing.assert_allclose(got, sg.jvp(sg.grad(f), (X,), (V,))[1], rtol=1e-12)


def looped_product(x, n=3):
    p = 1.0
    for i in range(n):
        p = p * np.sin(x[i]) + x[i] ** 2
    return p


def matrix_layer(W):
    return np.tanh(W @ np.ones(3)) @ W


def jvp_of_a_loop_with_a_default(x):
    return sg.jvp(looped_product, (x,), (np.cos(x),))[1] ** 2


def jvp_of_matrices(x):
    W = np.outer(x, x) + np.eye(3)
    out, t = sg.jvp(matrix_layer, (W,), (np.diag(x),))
    return np.sum(out * t)


@pytest.mark.parametrize("f", [jvp_of_a_loop_with_a_default, jvp_of_matrices])
def test_sg_jvp_inside_of_loops_defaults_and_matrices(f):
    check_second_order(f, jit=False)


def written_in_place(x):
    y = np.zeros(3)
    y[1:] = np.tanh(x[:2])
    return y * x


def jvp_of_an_indexed_write(x):
    out, t = sg.jvp(written_in_place, (x,), (x ** 2,))
    return np.sum(out * t)


def updated_in_place(x):
    y = x * 1.0
    y[0] = y[1] * y[2]
    y[1:] += np.sin(y[:-1])
    return y ** 2


def jvp_of_updates(x):
    out, t = sg.jvp(updated_in_place, (x,), (np.sin(x),))
    return np.sum(out * t) + np.sum(t ** 2)


@pytest.mark.parametrize("f", [jvp_of_an_indexed_write, jvp_of_updates])
def test_sg_jvp_inside_of_indexed_writes_differentiated_twice(f):
    """The tangent program's rt.tangent_memory (a write's tangent sharing memory as its
    value does) had no tangent and no adjoint: differentiating the program again was
    refused. Its tangent copies where the value was copied; its adjoint passes through."""
    check_second_order(f, jit=False)


def energy_of_params(p, x):
    return np.sum(np.tanh(p["w"] * x) ** 2), {"scale": np.sum(p["w"] * x), "name": "e"}


def aux_of_a_dict_argument(x):
    g, aux = sg.grad(energy_of_params, has_aux=True)({"w": x}, x[::-1])
    return np.sum(g["w"] ** 2) * aux["scale"]


def test_an_aux_used_beside_the_gradient_of_a_dict():
    """The aux's gradient into a dict argument is a dict, added leaf by leaf to the hvp's."""
    want = numerical_grad(aux_of_a_dict_argument, (X,))
    np.testing.assert_allclose(sg.grad(aux_of_a_dict_argument)(X), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sg.jvp(aux_of_a_dict_argument, (X,), (V,))[1], want @ V, rtol=1e-6)
