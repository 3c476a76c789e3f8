"""A-normal form (transform/anf.py): exact output of small functions, and its refusals.

Each test runs canonicalize then ANF (tests/stages.py) and compares the printed body
with what the pass must make of it: one operation per statement over names and
constants, temporaries named after what they hold.
"""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import anno, runtime
from srcgrad.errors import UnsupportedError
from srcgrad.transform import anf, canonicalize
from srcgrad.transform.anf_expressions import NameError_
from stages import body, stages

Static = anno.Static


def anf_of(fn):
    return body(fn, canonicalize.transform, anf.transform)


def nested(x, w, b):
    y = np.sin(x) * w + b
    return y


def test_each_operation_gets_a_statement_named_after_what_it_holds():
    assert anf_of(nested) == (
        "sin_x = np.sin(x)\n"
        "sin_x_times_w = sin_x * w\n"
        "y = sin_x_times_w + b\n"
        "return y\n")


def test_calls_are_resolved_to_the_objects_they_denote():
    node, _ = stages(nested, canonicalize.transform, anf.transform)
    assert anno.getanno(node.body[0].value, Static.PRIMITIVE) is np.sin


def augmented(x, y):
    x += y * 2.0
    x[0] -= y
    return x


def test_augmented_assignment_is_an_assignment_marked_augmented():
    node, _ = stages(augmented, canonicalize.transform, anf.transform)
    assert anf_of(augmented) == (
        "y_times_2_0 = y * 2.0\n"
        "x = x + y_times_2_0\n"
        "x_item = x[0]\n"
        "x_item_minus_y = x_item - y\n"
        "x[0] = x_item_minus_y\n"
        "return x\n")
    assert anno.getanno(node.body[1], Static.AUGMENTED) is True
    assert not anno.hasanno(node.body[0], Static.AUGMENTED)


def branch(x, a):
    if np.sum(x) > a:
        a = a * 2.0
    if a:
        x = -x
    return x * a


def test_a_computed_branch_condition_becomes_a_name_without_adjoint():
    node, _ = stages(branch, canonicalize.transform, anf.transform)
    assert anf_of(branch) == (
        "cond = np.sum(x) > a\n"
        "if cond:\n"
        "    a = a * 2.0\n"
        "if a:\n"
        "    x = -x\n"
        "x_times_a = x * a\n"
        "return x_times_a\n")
    assert anno.getanno(node.body[0], Static.NO_ADJOINT) is True


def swap(a, b):
    a, b = b, a
    first, *rest = (a, b, a)
    return a * b


def test_tuple_assignment_copies_the_old_values_and_starred_targets_slice():
    assert anf_of(swap) == (
        "b_old = b\n"
        "a_old = a\n"
        "a = b_old\n"
        "b = a_old\n"
        "t = a, b, a\n"
        "first = t[0]\n"
        "t_item = t[1:]\n"
        "rest = list(t_item)\n"
        "a_times_b = a * b\n"
        "return a_times_b\n")


def choice(x, a):
    y = x if a > 0 else -x
    z = a or 1.0
    return y * z


def test_conditional_expressions_and_value_or_become_branches():
    assert anf_of(choice) == (
        "cond = a > 0\n"
        "if cond:\n"
        "    y = x\n"
        "else:\n"
        "    y = -x\n"
        "if a:\n"
        "    z_2 = a\n"
        "else:\n"
        "    z_2 = 1.0\n"
        "z = z_2\n"
        "y_times_z = y * z\n"
        "return y_times_z\n")


def chained(x):
    a = b = np.cos(x)
    t = (a, b)
    return t[0] + x.T @ x[1:3, None]


def test_chained_targets_subscripts_and_attributes():
    node, _ = stages(chained, canonicalize.transform, anf.transform)
    assert anf_of(chained) == (
        "cos_x = np.cos(x)\n"
        "a = cos_x\n"
        "b = cos_x\n"
        "t = a, b\n"
        "t_item = t[0]\n"
        "x_T = x.T\n"
        "x_item = x[1:3, None]\n"
        "x_T_matmul_x_item = x_T @ x_item\n"
        "t_item_plus_x_T_matmul_x = t_item + x_T_matmul_x_item\n"
        "return t_item_plus_x_T_matmul_x\n")
    assert anno.getanno(node.body[5].value, Static.PRIMITIVE) == sg.rules.Attribute("T")


def displays(x, a):
    return np.mean([x, a * x]) + sum([a, a])


def test_a_display_passed_where_a_rule_expects_an_array_becomes_one():
    node, ctx = stages(displays, canonicalize.transform, anf.transform)
    assert anf_of(displays) == (
        "a_times_x = a * x\n"
        "as_array_t = as_array([x, a_times_x])\n"
        "mean_t = np.mean(as_array_t)\n"
        "sum_t = sum([a, a])\n"     # sum takes an iterable: kept
        "mean_t_plus_sum_t = mean_t + sum_t\n"
        "return mean_t_plus_sum_t\n")
    assert ctx.bindings == {"as_array": runtime.as_array}


def no_grad_block(x):
    with sg.no_grad():
        s = np.sum(x * x)
    return s * x


def test_statements_of_a_no_grad_block_are_spliced_in_and_marked_without_adjoint():
    node, _ = stages(no_grad_block, canonicalize.transform, anf.transform)
    assert anf_of(no_grad_block) == (
        "x_times_x = x * x\n"
        "s = np.sum(x_times_x)\n"
        "s_times_x = s * x\n"
        "return s_times_x\n")
    assert [anno.getanno(s, Static.NO_ADJOINT, False) for s in node.body] == [True, True, False, False]


def test_new_statements_keep_the_users_line():
    node, ctx = stages(nested, canonicalize.transform, anf.transform)
    lines = {anno.getanno(s, Static.ORIGIN).source_line.strip() for s in node.body[:3]}
    assert lines == {"y = np.sin(x) * w + b"}


def nested_subscript(x, v):
    x[0][1] = v
    return x


def _helper(v):
    return v > 0


def while_calls_a_helper(x):
    while _helper(x):
        x = x - 1.0
    return x


def calls_a_local(x):
    f = np.sin
    return f(x)


@pytest.mark.parametrize("fn, message, line", [
    (nested_subscript, "assignment into a nested subscript is not supported", "x[0][1] = v"),
    (while_calls_a_helper, "this while condition calls a function srcgrad must transform",
     "while _helper(x):"),
    (calls_a_local, "calling the local variable `f` (a value known only when the function "
                    "runs) is not supported", "return f(x)"),
])
def test_refusals_name_the_users_line(fn, message, line):
    with pytest.raises(UnsupportedError) as caught:
        stages(fn, canonicalize.transform, anf.transform)
    assert caught.value.message == message
    assert caught.value.source_line.strip() == line
    assert caught.value.filename == __file__


def test_an_undefined_name_is_refused_at_its_line():
    def undefined(x):
        return no_such_function(x)  # noqa: F821
    with pytest.raises(NameError_, match="name 'no_such_function' is not defined") as caught:
        stages(undefined, canonicalize.transform, anf.transform)
    assert caught.value.source_line.strip().startswith("return no_such_function(x)")
