"""srcgrad's own autograd functions, as the compiler sees them inside a differentiated function."""

from srcgrad import grad_mode
from srcgrad.rules import nondifferentiable

nondifferentiable(
    grad_mode.detach, grad_mode.register_hook, grad_mode.is_grad_enabled,
)
