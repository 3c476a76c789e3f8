"""Optimization of the generated sweeps: small passes, run in order by ``driver``.

See driver.py for the list of passes and what each does.
"""

from srcgrad.ast_util import is_rt_call, walk_statements
from srcgrad.optimize.driver import FORWARD, FORWARD_LAST, transform, transform_forward
from srcgrad.optimize.forward import forward_for_gradient, scalar_output
from srcgrad.optimize.release import release_dead

__all__ = ["transform", "transform_forward", "FORWARD", "FORWARD_LAST", "forward_for_gradient",
           "scalar_output", "release_dead", "is_rt_call", "walk_statements"]
