"""Python versions of SciPy's dense linear solves and factorizations and of the normal
distribution's functions, written with primitives that have rules. ``inlined.py`` takes
them into ``NUMPY_INLINED`` the first time a program that has imported SciPy is compiled
(importing SciPy with srcgrad would double srcgrad's import time), so a call's derivatives
in every mode, to every order, are those of the primitives it calls.

Each version reads what SciPy's LAPACK call reads: a solve that assumes a symmetric matrix,
or a triangular one, sees one triangle of ``a``, so the other triangle's gradient is zero,
as central differences of SciPy's function say (not a symmetrised gradient).
"""

import numpy as np
import scipy.special as sp

from srcgrad.inlined import inline


@inline
def from_triangle(a, lower, conjugate):
    """The symmetric (``conjugate``: Hermitian) matrix that LAPACK reads from ``a``'s lower
    (``lower``) or upper triangle."""
    if lower:
        part = np.swapaxes(np.tril(a, -1), -1, -2)
        return np.tril(a) + (np.conj(part) if conjugate else part)
    part = np.swapaxes(np.triu(a, 1), -1, -2)
    return np.triu(a) + (np.conj(part) if conjugate else part)


@inline
def finite(a, check_finite):
    """``a``, checked for infs and NaNs as SciPy's ``check_finite=True`` does (its
    ValueError)."""
    return np.asarray_chkfinite(a) if check_finite else a


@inline
def triangle(a, lower, unit_diagonal):
    """The triangular matrix ``solve_triangular`` reads from ``a`` (ones on the diagonal
    when ``unit_diagonal``)."""
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        eye = np.eye(np.shape(a)[-1], dtype=t.dtype)
        t = t * (1 - eye) + eye
    return t


@inline
def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a=None, transposed=False):
    """``scipy.linalg.solve`` of a general matrix (``assume_a`` None, 'gen' or 'general')."""
    a, b = finite(a, check_finite), finite(b, check_finite)
    if transposed:
        a = np.swapaxes(a, -1, -2)
    return np.linalg.solve(a, b)


@inline
def solve_symmetric(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
                    assume_a=None, transposed=False):
    """``scipy.linalg.solve`` with ``assume_a='sym'``: one triangle of ``a`` read."""
    a, b = finite(a, check_finite), finite(b, check_finite)
    return np.linalg.solve(from_triangle(a, lower, False), b)


@inline
def solve_hermitian(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
                    assume_a=None, transposed=False):
    """``scipy.linalg.solve`` with ``assume_a`` 'her' or 'pos': one triangle of ``a`` read."""
    a, b = finite(a, check_finite), finite(b, check_finite)
    return np.linalg.solve(from_triangle(a, lower, True), b)


SOLVE_FORMS = {None: solve, "gen": solve, "general": solve, "sym": solve_symmetric,
               "symmetric": solve_symmetric, "her": solve_hermitian, "hermitian": solve_hermitian,
               "pos": solve_hermitian, "positive definite": solve_hermitian}


def solve_form(given):
    """The version of ``scipy.linalg.solve`` for a call's ``assume_a`` (a constant; None:
    another value, left to SciPy's function, refused where it needs a gradient)."""
    import gast
    node = given.get("assume_a")
    if node is None:
        return solve
    if not isinstance(node, gast.Constant) or not isinstance(node.value, (str, type(None))):
        return None
    return SOLVE_FORMS.get(node.value)


@inline
def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """``scipy.linalg.solve_triangular``: a solve with the triangle of ``a`` it reads."""
    t = triangle(finite(a, check_finite), lower, unit_diagonal)
    b = finite(b, check_finite)
    if trans == 1 or trans == "T":
        t = np.swapaxes(t, -1, -2)
    elif trans == 2 or trans == "C":
        t = np.conj(np.swapaxes(t, -1, -2))
    return np.linalg.solve(t, b)


@inline
def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cholesky``: the factor of the Hermitian matrix ``a``'s triangle holds,
    lower or (SciPy's default) upper."""
    factor = np.linalg.cholesky(from_triangle(finite(a, check_finite), lower, True))
    return factor if lower else np.conj(np.swapaxes(factor, -1, -2))


@inline
def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cho_factor``: the factor in one triangle, ``a``'s entries in the other
    (what SciPy leaves there), and ``lower``."""
    factor = cholesky(a, lower, False, check_finite)
    return (factor + np.triu(a, 1) if lower else factor + np.tril(a, -1)), lower


@inline
def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``scipy.linalg.cho_solve``: two triangular solves with the factor ``cho_factor`` made."""
    c, lower = c_and_lower
    c, b = finite(c, check_finite), finite(b, check_finite)
    if lower:
        factor = np.tril(c)
        return np.linalg.solve(np.conj(np.swapaxes(factor, -1, -2)), np.linalg.solve(factor, b))
    factor = np.triu(c)
    return np.linalg.solve(factor, np.linalg.solve(np.conj(np.swapaxes(factor, -1, -2)), b))


@inline
def inv(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.inv``."""
    return np.linalg.inv(finite(a, check_finite))


@inline
def det(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.det``."""
    return np.linalg.det(finite(a, check_finite))


@inline
def norm_logpdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.logpdf``."""
    z = (x - loc) / scale
    return -0.5 * z ** 2 - np.log(scale) - 0.5 * np.log(2 * np.pi)


@inline
def norm_pdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.pdf``."""
    z = (x - loc) / scale
    return np.exp(-0.5 * z ** 2) / (np.sqrt(2 * np.pi) * scale)


@inline
def norm_cdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.cdf``."""
    return sp.ndtr((x - loc) / scale)


@inline
def norm_logcdf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.logcdf``."""
    return sp.log_ndtr((x - loc) / scale)


@inline
def norm_sf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.sf``."""
    return sp.ndtr((loc - x) / scale)


@inline
def norm_logsf(x, loc=0.0, scale=1.0):
    """``scipy.stats.norm.logsf``."""
    return sp.log_ndtr((loc - x) / scale)


@inline
def norm_ppf(q, loc=0.0, scale=1.0):
    """``scipy.stats.norm.ppf``."""
    return loc + scale * sp.ndtri(q)


@inline
def t_logpdf(x, df, loc=0.0, scale=1.0):
    """``scipy.stats.t.logpdf`` (ica.py's sources)."""
    z = (x - loc) / scale
    return sp.gammaln((df + 1) / 2) - sp.gammaln(df / 2) - 0.5 * np.log(df * np.pi) \
        - (df + 1) / 2 * np.log1p(z ** 2 / df) - np.log(scale)


@inline
def mvn_logpdf(x, mean=None, cov=1, allow_singular=False):
    """``scipy.stats.multivariate_normal.logpdf``: the dimension is the mean's (else the
    covariance's), a 1-D ``x`` one point or points of dimension 1, size-1 axes squeezed,
    as SciPy's; ``cov`` a matrix, its diagonal or one variance."""
    dim = np.size(mean) if mean is not None else np.shape(cov)[0] if np.ndim(cov) else 1
    pts = np.reshape(x, (-1, dim))
    diff = pts if mean is None else pts - np.ravel(mean)
    if np.ndim(cov) < 2:
        cov = np.diag(np.broadcast_to(cov, (dim,)))
    maha = np.sum(diff.T * np.linalg.solve(cov, diff.T), axis=0)
    out = -0.5 * (dim * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1] + maha)
    return np.squeeze(np.reshape(out, np.shape(x)[:-1] if np.ndim(x) > 1 else (-1,)))


@inline
def mvn_pdf(x, mean=None, cov=1, allow_singular=False):
    """``scipy.stats.multivariate_normal.pdf``."""
    return np.exp(mvn_logpdf(x, mean, cov))


def linalg_versions():
    """``scipy.linalg`` function -> (version, {parameter: the only value a call may pass},
    trigger), as ``inlined.NUMPY_INLINED``'s entries."""
    import scipy.linalg as sla
    return {sla.solve: (solve, {"overwrite_a": False, "overwrite_b": False},
                        solve_form),
            sla.solve_triangular: (solve_triangular, {"overwrite_b": False}, None),
            sla.cholesky: (cholesky, {"overwrite_a": False}, None),
            sla.cho_factor: (cho_factor, {"overwrite_a": False}, None),
            sla.cho_solve: (cho_solve, {"overwrite_b": False}, None),
            sla.inv: (inv, {"overwrite_a": False}, None),
            sla.det: (det, {"overwrite_a": False}, None)}


def stats_versions():
    """The normal distribution's methods (``scipy.stats.norm.logpdf``), ``t.logpdf`` and
    ``multivariate_normal.logpdf``/``pdf`` -> their entries."""
    import scipy.stats as st
    norm = st.norm
    return {norm.logpdf: (norm_logpdf, {}, None), norm.pdf: (norm_pdf, {}, None),
            norm.cdf: (norm_cdf, {}, None), norm.logcdf: (norm_logcdf, {}, None),
            norm.sf: (norm_sf, {}, None), norm.logsf: (norm_logsf, {}, None),
            norm.ppf: (norm_ppf, {}, None), st.t.logpdf: (t_logpdf, {}, None),
            st.multivariate_normal.logpdf: (mvn_logpdf, {"allow_singular": False}, None),
            st.multivariate_normal.pdf: (mvn_pdf, {"allow_singular": False}, None)}
