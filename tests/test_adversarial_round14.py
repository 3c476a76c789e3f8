"""Adversarial round fourteen: what whole programs (HIPS autograd's examples/, re-expressed
in tests/test_examples_corpus.py) met that the unit-test corpora did not."""

import numpy as np
import pytest
import scipy.signal
import scipy.stats as st
from scipy.stats import multivariate_normal as mvn

import srcgrad as sg
from adversarial_checks import assert_refused_in, check_all_modes
from srcgrad.testing import numerical_grad

A = np.array([[0.4, -1.0, 0.3], [0.2, 0.5, -0.7], [1.1, 0.0, 0.6]])
X = np.array([0.3, -0.5, 1.2])
V = np.array([0.7, -1.1, 0.4])
W = np.array([1.5, 0.2, -0.8])


# ----- A helper's parameter named as the generated code's own names (xp, rt, _) -----

def rbf(x, xp):   # (a Gaussian process's kernel(x, xp): the name generated code gives NumPy)
    return np.exp(-0.5 * np.subtract.outer(x, xp) ** 2)


def pad(a, _, rt=2.0, *saved):
    return a * rt + _ + sum(saved)


def kernel_sum(x):
    return np.sum(rbf(x, 0.5 * x) @ x) + np.sum(pad(x, 1.0, 3.0, x * x, 2 * x)) + np.sum(pad(x, x))


def test_a_helpers_parameter_named_xp_or_rt_is_bound():
    """inline bound the helper's parameters by their own names, which base.rename_reserved
    had renamed: KeyError 'xp'. (Every mode: the helper is inlined in each.)"""
    check_all_modes(kernel_sum, X, V, W, fallback=True)


def uses_xp(xp):
    return np.sum(xp ** 2)


def test_the_differentiated_functions_parameter_named_xp_is_refused():
    """(was a ValueError naming a renamed wrt='xp_2')"""
    assert_refused_in(__file__, lambda: sg.grad(uses_xp)(X), "'xp'", "Rename the parameter")


# ----- An unused item of a helper's returned tuple, in code differentiated again -----

def moments(x):
    return np.sum(np.sin(x) * x), np.dot(np.outer(x, x), A)


def first_moment(x):
    m, _ = moments(x)   # (the second item's adjoint: nothing reaches it)
    return m * np.sum(x)


def test_an_unused_tuple_items_adjoint_is_skipped_when_differentiated_again():
    """The tuple's adjoint mirror held 0.0 (not rt.ZERO) for the item nothing reached, so
    the gradient's own gradient ran np.dot's rule on a scalar: ValueError in tensordot."""
    check_all_modes(first_moment, X, V, W, fallback=True)   # (jit: dot_grad_a of a float 0.0)
    inner = sg.grad(first_moment).as_function()
    got = sg.grad(lambda x: np.sum(inner(x) * W))(X)
    np.testing.assert_allclose(got, numerical_grad(lambda x: np.sum(inner(x) * W), (X,)),
                               rtol=1e-6)


# ----- A method of a user's object whose name is an array's or a dict's method -----

class Slicer:
    """Names for slices of one flat vector (convnet.py's WeightsParser)."""

    def __init__(self):
        self.slots = {"W": (slice(0, 2), (2,)), "b": (slice(2, 3), (1,))}

    def get(self, vect, name):
        where, shape = self.slots[name]
        return np.reshape(vect[where], shape)

    def mean(self, vect):   # (an array's method name: its rule took vect for ``axis``)
        return np.sin(vect) * 2.0


SLICER = Slicer()
SLICERS = [SLICER]


def sliced_loss(vect, parser):
    return np.sum(np.sin(parser.get(vect, "W"))) + np.sum(parser.get(vect, "b") ** 2) \
        + np.sum(parser.mean(vect) ** 2)


def through_a_helper(vect):
    return sliced_loss(vect, SLICER)   # (a global object passed to a helper)


def test_a_global_objects_methods_are_its_own_in_a_helper():
    """The helper's parser.get(vect, "W") was differentiated as dict.get(key=vect): no
    gradient reached vect (silently zero); parser.mean(vect) as x.mean(axis=vect)."""
    check_all_modes(through_a_helper, X, V, W, fallback=True)


def alias_of_a_global(vect):
    parser = SLICERS[0]   # (its class is known only when the function runs)
    return np.sum(parser.get(vect, "W") ** 2)


def test_a_method_of_an_object_of_unknown_class_is_refused_not_dropped():
    """The same call on an object srcgrad cannot know when compiling: refused in both
    modes (it was a silent zero in reverse and forward mode)."""
    assert_refused_in(__file__, lambda: sg.grad(alias_of_a_global)(X), ".get()", "'key'")
    assert_refused_in(__file__, lambda: sg.jvp(alias_of_a_global, (X,), (V,)), ".get()", "'key'")


# ----- scipy.stats.multivariate_normal.logpdf / pdf and t.logpdf (gaussian_process.py,
# gmm.py, ica.py): each written with NumPy primitives (scipy_versions.py) -----

POINTS = np.array([[0.2, -0.4, 1.0], [1.3, 0.1, -0.6], [-0.5, 0.8, 0.3], [0.0, 0.4, -1.1]])


def gp_evidence(p):   # a kernel's parameters: mvn.logpdf of the data under its covariance
    cov = np.exp(p[0]) * np.exp(-0.5 * np.subtract.outer(POINTS[:, 0], POINTS[:, 0]) ** 2) \
        + np.exp(p[1]) * np.eye(4)
    return mvn.logpdf(POINTS[:, 1], p[2] * np.ones(4), cov)


def mixture(p):   # points of dimension 3, a diagonal and a scalar covariance, pdf
    return np.sum(mvn.logpdf(POINTS, p, np.exp(p))) + np.sum(mvn.pdf(POINTS, mean=p, cov=2.0)) \
        + np.sum(mvn.logpdf(POINTS[:, 0], p[0], 1.5) * np.arange(4))   # (4 points of dimension 1)


def student(p):
    return np.sum(st.t.logpdf(POINTS @ p, 3.0)) + np.sum(st.t.logpdf(POINTS[0], p[0] ** 2 + 2, p[1], 1.7))


def test_multivariate_normal_and_t_logpdf_in_every_mode():
    p = np.array([0.3, -1.2, 0.1])
    for f in (gp_evidence, mixture, student):
        check_all_modes(f, p, V, W, fallback=True)
        np.testing.assert_allclose(sg.value_and_grad(f)(p)[0], f(p), rtol=1e-12)


# ----- g(*h(x), y): a helper's returned tuple unpacked into a call (negative_binomial_maxlike.py,
# gmm.py) -----

def neg_binomial(r, p, counts):
    return r * np.log(1 - p) + counts * np.log(p) \
        + np.log(r + counts)


def split_three(p):
    if p[0] > 0:
        return p[:1], p[1:2], p[2:]
    return p[1:2], p[:1], p[2:]


COUNTS = np.array([1.0, 4.0, 2.0])


def unpacked_results(p):
    def unpack(q):
        return np.exp(q[0]), 1 / (1 + np.exp(-q[1]))
    total = -np.sum(neg_binomial(*unpack(p), COUNTS))
    for a, b, c in zip(*split_three(p)):   # (a module helper, two returns)
        total = total + a * b * c
    return total


def conditional_unpacking(p):
    return (p[0] > 0 and np.sum(neg_binomial(*split_three(p)))) or 0.0


@pytest.mark.slow
def test_a_helpers_tuple_unpacked_into_a_call():
    """Was refused: the length of h(x) is known only when it runs; now h(x) is bound first
    and its items passed one by one (star_results.py)."""
    check_all_modes(unpacked_results, X, V, W, fallback=True)
    np.testing.assert_allclose(sg.grad(unpacked_results)(-X),   # (split_three's other return)
                               numerical_grad(unpacked_results, (-X,)), rtol=1e-6, atol=1e-8)
    assert_refused_in(__file__, lambda: sg.grad(conditional_unpacking)(X), "*-unpacking")


# ----- scipy.signal.convolve / convolve2d (convnet.py's layers) -----

IMAGE = np.array([[0.2, -0.4, 1.0, 0.3], [1.3, 0.1, -0.6, 0.8], [-0.5, 0.8, 0.3, -1.2]])


def conv_layers(p):
    kernel = np.outer(p, p[::-1])[:2, :2]
    maps = [scipy.signal.convolve2d(IMAGE, kernel, mode=mode) for mode in ("valid", "same", "full")]
    smooth = scipy.signal.convolve(IMAGE[0] * p[1], p, mode="same")
    return sum(np.sum(np.tanh(m) * m) for m in maps) + np.sum(scipy.signal.convolve(smooth, IMAGE[1]) ** 2)


def test_scipy_signal_convolutions_in_every_mode():
    """(was refused: no gradient rule)"""
    check_all_modes(conv_layers, X, V, W, fallback=True)


def wrapped(p):
    return np.sum(scipy.signal.convolve2d(IMAGE, np.outer(p, p), boundary="wrap"))


def test_a_convolution_other_than_zero_filled_is_refused():
    assert_refused_in(__file__, lambda: sg.grad(wrapped)(X), "boundary='wrap'")


# ----- rs.randn(*mean.shape): a shape unpacked into a call (variational_autoencoder.py) -----

def reparameterised(p):
    mean, log_std = p[:2], p[2:]
    rs = np.random.RandomState(0)
    return np.sum((rs.randn(*mean.shape) * np.exp(log_std) + mean) ** 2 * np.arange(1, 3))


def shape_into_a_helper(p):
    return np.sum(outer_of(*p.shape) * p)


def outer_of(a, b):
    return a * b


def test_a_shape_unpacked_into_a_call():
    """(was refused: the length of p.shape is known only when it runs). A helper srcgrad
    inlines with no *args for it stays refused, naming it."""
    check_all_modes(reparameterised, np.array([0.3, -0.5, 1.2, 0.4]), np.array([0.7, -1.1, 0.4, 2.0]),
                    np.array([1.5, 0.2, -0.8, 0.3]), fallback=True)
    assert_refused_in(__file__, lambda: sg.grad(shape_into_a_helper)(X), "outer_of")
