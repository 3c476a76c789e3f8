"""Inlining (transform/inline.py): a call to a user function becomes its statements.

The helper goes through the same front end as the caller (pipeline.front_end, given
to inline.py as ``ctx.normalize``), its locals renamed apart, its parameters bound
to the arguments, and its return value assigned to the call's target.
"""

import numpy as np
import pytest

import helpers_module as hm
from srcgrad import pipeline
from srcgrad.context import CompileOptions
from srcgrad.errors import UnsupportedError
from srcgrad.transform import anf, canonicalize, inline
from stages import source, stages

SCALE = 3.0


def front_end(fn):
    return pipeline.front_end(fn, CompileOptions())


def scale(v, k=2.0):
    w = v * k
    return w * SCALE


def caller(x, w):
    y = scale(x) + scale(w, k=x)
    return y


def test_a_helper_becomes_its_statements_with_its_locals_renamed_apart():
    node, ctx = front_end(caller)
    assert source(node) == (
        "v = x\n"
        "k = 2.0\n"                  # the default, a literal
        "w_2 = v * k\n"              # the helper's w, apart from the caller's
        "w_times_SCALE = w_2 * SCALE\n"
        "scale_x = w_times_SCALE\n"
        "v_2 = w\n"
        "k_2 = x\n"                  # the keyword argument
        "w_3 = v_2 * k_2\n"
        "w_times_SCALE_2 = w_3 * SCALE\n"
        "scale_w = w_times_SCALE_2\n"
        "y = scale_x + scale_w\n"
        "return y\n")
    assert [info.name for info in ctx.infos] == ["caller", "scale", "scale"]
    assert ctx.bindings == {}


def uses_inner(x):
    return hm._inner(x) * SCALE


def test_a_free_name_that_means_another_object_here_is_bound_under_a_new_name():
    node, ctx = front_end(uses_inner)
    assert source(node) == (
        "v = x\n"
        "tanh_v = np.tanh(v)\n"
        "tanh_v_times_SCALE = tanh_v * inner_SCALE\n"
        "inner_x = tanh_v_times_SCALE\n"
        "inner_x_times_SCALE = inner_x * SCALE\n"
        "return inner_x_times_SCALE\n")
    assert ctx.bindings == {"inner_SCALE": hm.SCALE}


def apply(f, v):
    return f(v)


def passes_a_function(x):
    return apply(np.tanh, x)


def test_a_callable_argument_is_known_inside_the_helper():
    node, ctx = front_end(passes_a_function)
    assert source(node) == (
        "np_tanh = np.tanh\n"
        "v = x\n"
        "f_2_v = apply_f_2(v)\n"
        "apply_np_tanh = f_2_v\n"
        "return apply_np_tanh\n")
    assert ctx.bindings == {"apply_f_2": np.tanh}


def test_inline_compiles_helpers_through_the_callback_it_is_given():
    node, ctx = stages(caller, canonicalize.transform, anf.transform)
    asked = []

    def normalize(fn, stack, static):
        asked.append((fn, stack, static))
        return pipeline.front_end(fn, CompileOptions(), stack, static=static)

    ctx.normalize = normalize
    inline.transform(node, ctx)
    assert asked == [(scale, (inline.Frame(caller), inline.Frame(scale)), {})] * 2
    assert source(node) == source(front_end(caller)[0])


def countdown(x, n):
    if n == 0:
        return x
    return countdown(np.sin(x), n - 1)


def ping(x):
    return pong(x) * 2.0


def pong(x):
    return ping(x) + 1.0


def wrong_call(x):
    return scale(x, 1.0, 2.0)


@pytest.mark.parametrize("fn, message, line", [
    (countdown, "countdown calls itself (recursion)", "return countdown(np.sin(x), n - 1)"),
    (ping, "ping calls itself (recursion through ping -> pong -> ping)", "return ping(x) + 1.0"),
    (wrong_call, "cannot call scale this way: too many positional arguments",
     "return scale(x, 1.0, 2.0)"),
])
def test_refusals_name_the_users_line(fn, message, line):
    with pytest.raises(UnsupportedError) as caught:
        front_end(fn)
    assert caught.value.message.startswith(message)
    assert caught.value.source_line.strip() == line
    assert caught.value.filename == __file__
