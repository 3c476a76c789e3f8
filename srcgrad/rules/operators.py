"""Python's operators (``+ - * / ** @ %``, unary minus) as the compiler sees them.

The transform maps each operator node to the function of the ``operator``
module, so ``a * b`` uses the rule registered for ``operator.mul``. Those rules
are the NumPy ufuncs' own (numpy_elementwise.py, numpy_products.py): one rule per
primitive, shared. This module lists the operators whose results carry no
gradient (``a | b`` is a dict merge on dicts: its rule is in builtins_math.py).
"""

import operator

from srcgrad.rules import nondifferentiable, zero_gradient

zero_gradient(operator.floordiv)   # piecewise constant
nondifferentiable(
    operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
    operator.not_, operator.and_,
    operator.xor, operator.invert, operator.truth,
)
