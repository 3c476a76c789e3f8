"""srcgrad: source-transformation automatic differentiation for NumPy and CuPy code.

The gradient of your function is a Python program you can read:

    >>> import numpy as np, srcgrad as sg
    >>> def f(x):
    ...     return np.sum(np.sin(x) * x)
    >>> print(sg.source(f))          # doctest: +SKIP
"""

from srcgrad import rules as _rules
from srcgrad.api import active_variables, function, grad, source, value_and_grad, vjp
from srcgrad.forward_api import jvp
from srcgrad.jacobians import jacfwd, jacobian, jacrev
from srcgrad.hessians import hessian, hvp
from srcgrad import nested as _nested  # noqa: F401  (gives GradFunction its hvp adjoint)
from srcgrad import nested_jacobians as _nested_jacobians  # noqa: F401  (jacfwd(jacrev(f)))
from srcgrad import function_derivatives as _function_derivatives  # noqa: F401  (rules)
from srcgrad.custom_function import BackwardError, Function, FunctionCtx, once_differentiable
from srcgrad.errors import (GradcheckError, NonDifferentiableError, SourceNotFoundError,
                            SrcgradError, UnsupportedError)
from srcgrad.pytree import register_pytree_node, tree_leaves, tree_map
from srcgrad.caches import cache_size, set_cache_size
from srcgrad.grad_mode import (detach, enable_grad, is_grad_enabled, no_grad, register_hook,
                               set_grad_enabled, stop_gradient)
from srcgrad.rules import user_adjoint as adjoint
from srcgrad.testing import gradcheck, gradgradcheck

_rules._load_builtin_rules()

__version__ = "0.1.0"

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacobian", "jacrev", "hessian", "hvp", "source", "active_variables", "function",
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "detach", "stop_gradient",
    "register_hook", "set_cache_size", "cache_size", "adjoint", "Function", "FunctionCtx", "once_differentiable", "BackwardError",
    "gradcheck", "gradgradcheck", "register_pytree_node", "tree_map", "tree_leaves",
    "SrcgradError", "UnsupportedError", "NonDifferentiableError", "SourceNotFoundError",
    "GradcheckError",
]
