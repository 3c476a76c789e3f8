"""Reverse mode's parts: the control-flow templates, the tape tags, the typed result of build."""

import astor
import gast

from srcgrad import anno, templates
from srcgrad.transform import control_flow, tape

Static = anno.Static


def _source(stmts):
    return astor.to_source(gast.gast_to_ast(gast.Module(body=stmts, type_ignores=[]))).strip()


def test_a_statement_block_is_spliced_into_a_template_as_it_is():
    body = templates.replace("y = x * 2")
    filled = templates.replace("for i in range(n):\n    BODY\n    z = 1", BODY=body)
    assert filled[0].body[0] is body[0]
    assert _source(filled) == "for i in range(n):\n    y = x * 2\n    z = 1"


def test_an_empty_block_in_a_template_becomes_pass():
    assert _source(templates.replace("while t:\n    BODY", BODY=[])) == "while t:\n    pass"


def test_a_loop_template_tags_its_pushes_and_pops_but_not_its_body():
    body = [tape.push(templates.name("y"), None, ("item", "y"))]
    fwd, rev = control_flow.for_loop("v", templates.name("xs"), "n_v", body, tape.pop_into("y", ("item", "y")),
                                     [], None)
    assert _source(fwd) == ("push(v)\nn_v = 0\nfor v in xs:\n    n_v = n_v + 1\n    push(y)\n"
                            "    push(v)\npush(n_v)")
    assert [anno.getanno(s, Static.TAPE) for s in fwd[:1] + fwd[2].body[1:] + fwd[3:]] == \
        ["v", ("item", "y"), "v", "n_v"]
    assert _source(rev) == "n_v = pop()\nfor _ in range(n_v):\n    v = pop()\n    y = pop()\nv = pop()"
    assert [anno.getanno(s, Static.TAPE) for s in rev[:1] + rev[1].body + rev[2:]] == \
        ["n_v", "v", ("item", "y"), "v"]


def test_a_range_loop_ended_by_a_break_saves_the_prefix_it_ran():
    stop = templates.replace("if stop:\n    break")
    fwd, rev = control_flow.range_loop("i", templates.replace_as_expression("range(n)"), "range_i", "n_i",
                                       [], [], stop, True, None)
    assert _source(fwd) == ("push(i)\nrange_i = range(n)\nn_i = 0\nfor i in range_i:\n    n_i = n_i + 1\n"
                            "    if stop:\n        break\npush(range_i[:n_i])")
    assert anno.getanno(fwd[-1], Static.TAPE) == "range_i"
    assert _source(rev) == "range_i = pop()\nfor i in reversed(range_i):\n    pass\ni = pop()"


# ----- values recomputed instead of taped -----

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import srcgrad as sg  # noqa: E402
from srcgrad.testing import check_grads  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import workloads  # noqa: E402


# What the backward sweep was before values were recomputed (for the reader).
W2_BACKWARD_BEFORE = '''\
def w2_prod_positive_backward(dresult, saved):
    tape, cond, i, ii, range_i, result, x = saved
    pop = tape.pop
    dresult = rt.own(dresult)
    dii = 0.0
    dx = 0.0
    # grad of: for ii in x:
    for i in reversed(range_i):
        if cond:
            # grad of: result = ii * result
            result = pop()
            dii = dii + rt.unbroadcast(dresult * result, ii)
            dresult = rt.unbroadcast(dresult * ii, result)
        # grad of: if ii > 0:
        cond = pop()
        dx = rt.add_at(dx, x, i, dii)
        dii = 0.0
        ii = pop()
    return dx,
'''

W2_BACKWARD = '''\
def w2_prod_positive_backward(dresult, saved):
    tape, range_i, x = saved
    pop = tape.pop
    dresult = rt.own(dresult)
    dii = 0.0
    dx = 0.0
    # grad of: for ii in x:
    for i in reversed(range_i):
        ii = x[i]
        cond = ii > 0
        if cond:
            # grad of: result = ii * result
            result = pop()
            dii = dii + rt.unbroadcast(dresult * result, ii)
            dresult = rt.unbroadcast(dresult * ii, result)
        dx = rt.add_at(dx, x, i, dii)
        dii = 0.0
    return dx,
'''


def _backward(source):
    return source[source.index("def ", source.index("_backward(") - 40):]


def test_the_product_loop_recomputes_its_item_and_condition_instead_of_taping_them():
    source = sg.source(workloads.w2_prod_positive)
    assert _backward(source) == W2_BACKWARD
    assert "push(ii)" not in source and "push(cond)" not in source
    x = workloads.w2_make("quick").args[0]
    np.testing.assert_allclose(sg.grad(workloads.w2_prod_positive)(x), workloads.w2_hand(x)[0])


def test_the_thermal_loop_recomputes_the_price_it_reads():
    args = workloads.w8_make("quick").args
    source = sg.source(workloads.w8_thermal, args=args)
    # before: push(price_item) in the loop, price_item = pop() at the end of the reversed iteration
    assert "push(price_item)" not in source and "price_item = pop()" not in source
    assert "    for t in reversed(range_t):\n        price_item = price[t]\n" in source
    # T is rebound later in the iteration: the condition on it stays on the tape.
    assert "push(cond)" in source and "cond = pop()" in source
    np.testing.assert_allclose(sg.grad(workloads.w8_thermal)(*args), workloads.w8_hand(*args)[0])


def _indexed_write(x):
    y = x * 1.0
    s = 0.0
    for i in range(3):
        v = y[i]
        s = s + v * v
        y[i] = 2.0 * v
    return s


def _read_before_binding(x):
    s = 0.0
    for i in range(3):
        if i > 0:
            s = s + v * v
        v = x[i]
    return s + v


def _index_rebound(x):
    s = 0.0
    for i in range(3):
        v = x[i]
        i = 2 - i
        s = s + v * np.sin(x[i])
    return s


def _outer_index(x):
    s = 0.0
    for i in range(3):
        for j in range(2):
            v = x[i, j]
            s = s + v * v * np.cos(s)
    return s


def test_a_read_is_taped_where_the_array_is_written_in_place():
    assert "push(v)" in sg.source(_indexed_write)
    check_grads(_indexed_write, (np.array([0.3, -0.7, 1.1, 0.4]),))


def test_a_value_read_before_its_binding_in_the_loop_is_taped():
    assert "push(v)" in sg.source(_read_before_binding)
    check_grads(_read_before_binding, (np.array([0.3, -0.7, 1.1]),))


def test_a_read_whose_index_is_rebound_later_in_the_loop_is_taped():
    assert "push(v)" in sg.source(_index_rebound)
    check_grads(_index_rebound, (np.array([0.3, -0.7, 1.1]),))


def test_an_enclosing_loop_index_is_restored_for_a_recomputed_read():
    source = sg.source(_outer_index)
    assert "push(v)" not in source and "v = x[i, j]" in _backward(source)
    check_grads(_outer_index, (np.array([[0.3, -0.7], [1.1, 0.2], [-0.4, 0.9]]),))


# ----- what the backward sweep binds itself is not saved -----

def _running_product(x):
    p = 1.0
    for i in range(3):
        p = p * x[i] + 0.5
    return p


RUNNING_PRODUCT_SAVED_BEFORE = '''\
    return p, (tape, i, p, rt.shape_of(p_times_x_item), range_i, x)
'''

RUNNING_PRODUCT = '''\
def _running_product_forward(x):
    tape = []
    push = tape.append
    p_times_x_item = None
    p = 1.0
    range_i = range(3)
    for i in range_i:
        # p = p * x[i] + 0.5
        x_item = x[i]
        push(rt.shape_of(p_times_x_item))
        p_times_x_item = p * x_item
        push(p)
        p = p_times_x_item + 0.5
    return p, (tape, rt.shape_of(p_times_x_item), range_i, x)


def _running_product_backward(dp, saved):
    tape, p_times_x_item, range_i, x = saved
    pop = tape.pop
    dp = rt.own(dp)
    dx = 0.0
    # grad of: for i in range(3):
    for i in reversed(range_i):
        x_item = x[i]
        # grad of: p = p * x[i] + 0.5
        dp_times_x_item = rt.unbroadcast(dp, p_times_x_item)
        p = pop()
        dp = rt.unbroadcast(dp_times_x_item * x_item, p)
        dx_item = rt.unbroadcast(dp_times_x_item * p, x_item)
        p_times_x_item = pop()
        dx = rt.add_at(dx, x, i, dx_item)
    return dx,
'''


def test_a_loop_index_and_a_value_popped_before_its_reads_are_not_saved():
    # Before: ``i = None`` in the forward sweep, and ``i`` and ``p`` in the saved tuple,
    # although the reversed loop binds i and p is popped before the backward reads it.
    source = sg.source(_running_product)
    assert source == RUNNING_PRODUCT
    assert RUNNING_PRODUCT_SAVED_BEFORE not in source
    check_grads(_running_product, (np.array([0.3, -0.7, 1.1]),))
