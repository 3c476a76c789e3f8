"""Adjoint and tangent rules of ``scipy.special`` (real arguments), loaded the first time a
rule lookup misses while the program has imported SciPy (rules/__init__.py).

The elementwise functions' tangents are read off their adjoints by linearity; the
gradients call SciPy's own functions (``rt.special_digamma`` is ``scipy.special.digamma``),
which have rules here too, so second derivatives go through (``gammaln`` -> ``digamma``
-> ``polygamma``). (Rules are templates: constants are written as literals.) ``logsumexp``, ``softmax`` and ``log_softmax`` take ``axis`` (and
``logsumexp`` ``b``, ``keepdims``); ``logsumexp(..., return_sign=True)`` is refused.
"""

import numpy as np
import scipy.special as sp

from srcgrad import rules, runtime as rt
from srcgrad.rules import adjoint, linear, tangent
from srcgrad.runtime.arrays import float_dtype
from srcgrad.runtime.dask_forms import is_dask

xp = None  # placeholder: the array namespace, bound in generated code

# The SciPy functions the gradients below call, by their names in generated code.
for _name in ("expit", "digamma"):
    setattr(rt, f"special_{_name}", getattr(sp, _name))


@rt.helper
def special_polygamma(n, x):
    """``scipy.special.polygamma``, blockwise on a Dask array (SciPy's, a Python function
    rather than a ufunc, would compute it)."""
    if is_dask(x):
        return x.map_blocks(lambda block: sp.polygamma(n, block), dtype=float_dtype(x, np))
    return sp.polygamma(n, x)

# ----- Logistic, error and normal functions -----


@adjoint(sp.expit)
def expit(dz, z, x):
    return dz * z * (1 - z)


@adjoint(sp.log_expit)
def log_expit(dz, z, x):
    """``1 - expit(x)``, i.e. ``expit(-x)`` (no cancellation for large ``x``)."""
    return dz * rt.special_expit(-x)


@adjoint(sp.logit)
def logit(dz, z, x):
    return dz / (x * (1 - x))


@adjoint(sp.erf)
def erf(dz, z, x):
    return dz * 1.1283791670955126 * xp.exp(-x * x)


@adjoint(sp.erfc)
def erfc(dz, z, x):
    return -dz * 1.1283791670955126 * xp.exp(-x * x)


@adjoint(sp.erfcx)
def erfcx(dz, z, x):
    """``exp(x^2) erfc(x)``: ``2 x erfcx(x) - 2 / sqrt(pi)``."""
    return dz * (2 * x * z - 1.1283791670955126)


@adjoint(sp.erfinv)
def erfinv(dz, z, x):
    return dz * 0.886226925452758 * xp.exp(z * z)


@adjoint(sp.erfcinv)
def erfcinv(dz, z, x):
    return -dz * 0.886226925452758 * xp.exp(z * z)


@adjoint(sp.ndtr)
def ndtr(dz, z, x):
    """The standard normal distribution's CDF: its density."""
    return dz * 0.3989422804014327 * xp.exp(-0.5 * x * x)


@adjoint(sp.log_ndtr)
def log_ndtr(dz, z, x):
    """The density over the CDF, in logs (finite far in the lower tail)."""
    return dz * 0.3989422804014327 * xp.exp(-0.5 * x * x - z)


@adjoint(sp.ndtri)
def ndtri(dz, z, x):
    return dz * 2.5066282746310002 * xp.exp(0.5 * z * z)


# ----- Gamma and beta functions -----


@adjoint(sp.gammaln, sp.loggamma)
def gammaln(dz, z, x):
    """``log|gamma(x)|`` (``loggamma`` of a positive real): ``digamma(x)``."""
    return dz * rt.special_digamma(x)


@adjoint(sp.gamma)
def gamma(dz, z, x):
    return dz * z * rt.special_digamma(x)


@adjoint(sp.rgamma)
def rgamma(dz, z, x):
    """``1 / gamma(x)``."""
    return -dz * z * rt.special_digamma(x)


@adjoint(sp.digamma)
def digamma(dz, z, x):
    return dz * rt.special_polygamma(1, x)


@adjoint(sp.polygamma, rt.special_polygamma)
def polygamma(dz, z, n, x):
    """The order ``n`` (an integer) gets no gradient."""
    return None, dz * rt.special_polygamma(n + 1, x)


@tangent(sp.polygamma, rt.special_polygamma, no_tangent=("n",))
def polygamma_tangent(z, n, x, *, t_x):
    return t_x * rt.special_polygamma(n + 1, x)


@adjoint(sp.betaln)
def betaln(dz, z, x1, x2):
    """``log|B(a, b)|``: ``digamma(a) - digamma(a + b)`` and the same for ``b``."""
    return (rt.unbroadcast(dz * (rt.special_digamma(x1) - rt.special_digamma(x1 + x2)), x1),
            rt.unbroadcast(dz * (rt.special_digamma(x2) - rt.special_digamma(x1 + x2)), x2))


@adjoint(sp.beta)
def beta(dz, z, x1, x2):
    return (rt.unbroadcast(dz * z * (rt.special_digamma(x1) - rt.special_digamma(x1 + x2)), x1),
            rt.unbroadcast(dz * z * (rt.special_digamma(x2) - rt.special_digamma(x1 + x2)), x2))


# ----- Logarithms and entropies -----


@adjoint(sp.xlogy)
def xlogy(dz, z, x1, x2):
    """``x log y``: ``log y`` and ``x / y``."""
    return rt.unbroadcast(dz * xp.log(x2), x1), rt.unbroadcast(dz * x1 / x2, x2)


@adjoint(sp.xlog1py)
def xlog1py(dz, z, x1, x2):
    """``x log1p(y)``: ``log1p(y)`` and ``x / (1 + y)``."""
    return rt.unbroadcast(dz * xp.log1p(x2), x1), rt.unbroadcast(dz * x1 / (1 + x2), x2)


@adjoint(sp.entr)
def entr(dz, z, x):
    """``-x log x``: ``-(log x + 1)``."""
    return -dz * (xp.log(x) + 1)


@adjoint(sp.rel_entr)
def rel_entr(dz, z, x1, x2):
    """``x log(x / y)``: ``log(x / y) + 1`` and ``-x / y``."""
    return rt.unbroadcast(dz * (xp.log(x1 / x2) + 1), x1), rt.unbroadcast(-dz * x1 / x2, x2)


@adjoint(sp.kl_div)
def kl_div(dz, z, x1, x2):
    """``x log(x / y) - x + y``: ``log(x / y)`` and ``1 - x / y``."""
    return rt.unbroadcast(dz * xp.log(x1 / x2), x1), rt.unbroadcast(dz * (1 - x1 / x2), x2)


@adjoint(sp.expm1)
def expm1(dz, z, x):
    return dz * (z + 1)


@adjoint(sp.log1p)
def log1p(dz, z, x):
    return dz / (1 + x)


@adjoint(sp.exp2)
def exp2(dz, z, x):
    return dz * z * 0.6931471805599453


@adjoint(sp.exp10)
def exp10(dz, z, x):
    return dz * z * 2.302585092994046


@adjoint(sp.cbrt)
def cbrt(dz, z, x):
    return dz / (3 * z * z)


# ----- Reductions: logsumexp, softmax, log_softmax -----


@adjoint(sp.logsumexp, literals={"return_sign": (False,)})
def logsumexp(dz, z, a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log sum b exp(a)``: the weights ``b exp(a - z)`` (softmax's, for ``b`` None)."""
    w = xp.exp(a - rt.unreduce_like(z, a, axis, keepdims))
    return (rt.unreduce(dz, a, axis, keepdims) * w * rt.weight_or_one(b), None,
            rt.unbroadcast(rt.unreduce(dz, a, axis, keepdims) * w, b), None, None)


@rt.helper
def weight_or_one(b):
    """``logsumexp``'s ``b``, or 1 where it is not given."""
    return 1.0 if b is None else b


@adjoint(rt.weight_or_one)
def weight_or_one_rule(dw, w, b):
    return rt.unbroadcast(dw, b)


linear(rt.weight_or_one, "b")


@tangent(sp.logsumexp, no_tangent=("axis", "keepdims", "return_sign"))
def logsumexp_tangent(z, a, axis=None, b=None, keepdims=False, return_sign=False, *, t_a, t_b):
    return (xp.sum(t_a * xp.exp(a - rt.unreduce_like(z, a, axis, keepdims)) * rt.weight_or_one(b),
                   axis=axis, keepdims=keepdims)
            + xp.sum(t_b * xp.exp(a - rt.unreduce_like(z, a, axis, keepdims)), axis=axis,
                     keepdims=keepdims))


@adjoint(sp.softmax)
def softmax(dz, z, x, axis=None):
    """``z (dz - sum(dz z))`` along ``axis``: the Jacobian is symmetric."""
    return z * (dz - xp.sum(dz * z, axis=axis, keepdims=True)), None


@tangent(sp.softmax, no_tangent=("axis",))
def softmax_tangent(z, x, axis=None, *, t_x):
    return z * (t_x - xp.sum(t_x * z, axis=axis, keepdims=True))


@adjoint(sp.log_softmax)
def log_softmax(dz, z, x, axis=None):
    """``dz - exp(z) sum(dz)`` along ``axis``."""
    return dz - xp.exp(z) * xp.sum(dz, axis=axis, keepdims=True), None


@tangent(sp.log_softmax, no_tangent=("axis",))
def log_softmax_tangent(z, x, axis=None, *, t_x):
    return t_x - xp.sum(xp.exp(z) * t_x, axis=axis, keepdims=True)


rules._LIBRARIES_LOADED.add("scipy.special")   # imported directly too: loaded, not again
