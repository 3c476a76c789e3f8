"""The language fence (transform/fence.py): what it refuses, where, and what it lets through."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.errors import UnsupportedError
from srcgrad.parse import parse_function
from srcgrad.transform import anf, fence


def check(fn, helper=False):
    node, info = parse_function(fn)
    fence.check(node, info, allowed_with=lambda item: anf.grad_mode_of(item, info) is not None,
                helper=helper)


def uses_try(x):
    try:
        y = np.sin(x)
    except ValueError:
        y = x
    return y


def uses_global(x):
    global COUNT
    return x


def uses_del(x):
    y = x
    del y
    return x


def sets_an_attribute(x, box):
    box.value = x
    return x


def starred_call(x, shape):
    # (*shape,) is a join now (methods.py), and g(*name) of a display is passed item by item
    return np.full(*np.shape(shape), x)


def other_with(x):
    with open("f") as handle:
        pass
    return x


def generator(x):
    yield x


@pytest.mark.parametrize("fn, construct, line", [
    (uses_try, "try/except", "try:"),
    (uses_global, "global", "global COUNT"),
    (uses_del, "del", "del y"),
    (sets_an_attribute, "assignment to an attribute", "box.value = x"),
    (other_with, "a with block", 'with open("f") as handle:'),
    (generator, "yield", "yield x"),
])
def test_each_refused_construct_is_named_at_its_line(fn, construct, line):
    with pytest.raises(UnsupportedError) as caught:
        check(fn)
    assert caught.value.message == f"{construct} is not supported in a function srcgrad differentiates"
    assert caught.value.source_line.strip() == line
    assert caught.value.filename == __file__
    assert caught.value.hint


def test_a_starred_call_argument_of_a_runtime_length_is_refused_at_its_line_after_the_fence():
    # the fence passes every g(*...) to methods.py, which spells out displays, binds a
    # helper's *vs, and refuses the rest (round 4)
    check(starred_call)
    with pytest.raises(UnsupportedError) as caught:
        sg.grad(starred_call)(1.0, np.zeros((2, 3)))
    assert "*-unpacking" in caught.value.message
    assert caught.value.source_line.strip() == "return np.full(*np.shape(shape), x)"
    assert caught.value.filename == __file__


def star_target_and_no_grad(x):
    first, *rest = x
    with sg.no_grad():
        y = first * 2.0
    return y


def test_starred_targets_and_grad_mode_blocks_pass():
    check(star_target_and_no_grad)


def varargs(*xs):
    return xs[0]


def test_star_parameters_are_refused_on_the_function_differentiated_but_not_on_a_helper():
    with pytest.raises(UnsupportedError, match=r"\*args/\*\*kwargs parameters"):
        check(varargs)
    check(varargs, helper=True)
