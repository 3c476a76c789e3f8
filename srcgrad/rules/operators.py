"""Adjoint rules of Python's operators (``+ - * / ** @``, unary minus).

The transform maps each operator node to the function of the ``operator``
module, so ``a * b`` uses the rule registered for ``operator.mul``.
"""

import operator

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, nondifferentiable

xp = None  # placeholder: the array namespace, bound in generated code

nondifferentiable(
    operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
    operator.not_, operator.floordiv, operator.and_, operator.or_,
    operator.xor, operator.invert, operator.truth,
)

# ----- Arithmetic -----


@adjoint(operator.add)
def add(dy, y, a, b):
    return rt.unbroadcast(dy, a), rt.unbroadcast(dy, b)


@adjoint(operator.sub)
def sub(dy, y, a, b):
    return rt.unbroadcast(dy, a), rt.unbroadcast(-dy, b)


@adjoint(operator.mul)
def mul(dy, y, a, b):
    return rt.unbroadcast(dy * b, a), rt.unbroadcast(dy * a, b)


@adjoint(operator.truediv)
def truediv(dy, y, a, b):
    return rt.unbroadcast(dy / b, a), rt.unbroadcast(-dy * y / b, b)


@adjoint(operator.pow)
def pow(dy, y, a, b):
    return (rt.unbroadcast(dy * b * a ** (b - 1), a),
            rt.unbroadcast(dy * y * rt.log_or_zero(a), b))


@adjoint(operator.mod)
def mod(dy, y, a, b):
    return rt.unbroadcast(dy, a), rt.unbroadcast(-dy * xp.floor_divide(a, b), b)


@adjoint(operator.matmul)
def matmul(dy, y, a, b):
    return rt.matmul_grad_a(dy, a, b), rt.matmul_grad_b(dy, a, b)


@adjoint(operator.neg)
def neg(dy, y, a):
    return -dy


@adjoint(operator.pos)
def pos(dy, y, a):
    return dy
