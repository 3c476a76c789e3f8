"""Python's ``statistics.mean(data)`` and ``statistics.fmean(data)`` of a list of numbers
(floats, NumPy scalars, 0-d arrays): ``sum(data) / len(data)``, whose gradient gives each
item ``dy / len(data)``, as ``math.fsum``'s gives each ``dy`` (builtins_math.py). The
value is the library's own. ``fmean``'s ``weights`` has no rule: a call with it is
refused."""

import statistics

from srcgrad import runtime as rt
from srcgrad.rules import adjoint, tangent


@adjoint(statistics.mean, sequences=("data",))
def statistics_mean(dy, y, data):
    return rt.builtin_sum_vjp(dy / len(data), data)


@adjoint(statistics.fmean, sequences=("data",))
def statistics_fmean(dy, y, data):
    return rt.builtin_sum_vjp(dy / len(data), data)


@tangent(statistics.mean)
def statistics_mean_jvp(y, data, *, t_data):
    return rt.tangent_sum(t_data) / len(data)


@tangent(statistics.fmean)
def statistics_fmean_jvp(y, data, *, t_data):
    return rt.tangent_sum(t_data) / len(data)
