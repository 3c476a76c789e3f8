"""Forward mode honours what reverse mode refuses: an option the adjoint does not support
(a literal outside the rule's ``literals``, ``np.interp``'s ``period``) is refused at the
user's line instead of giving a tangent computed as if the option were absent, which was a
silently wrong number; and ``svd(hermitian=True)``'s tangent uses the primal's vectors."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

X = np.array([0.3, -0.5, 1.2, 0.4, 0.9, -1.1])
T = np.cos(np.arange(6.0))


def quantile_lower(x):
    return np.quantile(x, 0.3, method="lower") * 2.0


def percentile_nearest(x):
    return np.percentile(x ** 2, 40, method="nearest")


def interp_periodic(x):
    return np.sum(np.interp(x, [0.0, 1.0, 2.0], [0.0, 2.0, 1.0], period=2.0))




@pytest.mark.parametrize("f", [quantile_lower, percentile_nearest, interp_periodic],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["jvp", "jacfwd", "grad"])
def test_an_option_reverse_mode_refuses_is_refused_in_forward_mode(f, mode):
    with pytest.raises(sg.SrcgradError) as info:
        if mode == "jvp":
            sg.jvp(f, (X.copy(),), (T,))
        else:
            getattr(sg, mode)(f)(X.copy())
    assert info.value.filename == __file__, str(info.value)


def test_logsumexp_with_return_sign_is_refused_in_forward_mode():
    sp = pytest.importorskip("scipy.special")

    def signed(x):
        value, sign = sp.logsumexp(x, return_sign=True)
        return value * sign
    with pytest.raises(sg.SrcgradError):
        sg.jvp(signed, (X.copy(),), (T,))


def hermitian_svd(x):
    m = np.outer(x[:3], x[:3]) + np.diag(x[3:])
    u, s, vh = np.linalg.svd(m, hermitian=True)
    return np.sum(u * np.arange(9.0).reshape(3, 3)) + np.sum(s * vh[0])


def test_the_tangent_of_a_hermitian_svd_uses_the_primal_vectors():
    want = numerical_grad(hermitian_svd, (X.copy(),))
    np.testing.assert_allclose(sg.grad(hermitian_svd)(X.copy()), want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(sg.jvp(hermitian_svd, (X.copy(),), (T,))[1], want @ T, rtol=1e-5, atol=1e-7)
