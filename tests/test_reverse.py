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


def _generated(fn, **options):
    """``sg.source`` without its header comment: the generated code only."""
    lines = sg.source(fn, **options).splitlines(keepends=True)
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    return "".join(lines)


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
    dii = 0.0
    dx = 0.0
    # grad of: for ii in x:
    for i in reversed(range_i):
        ii = x[i]
        cond = ii > 0
        if cond:
            # grad of: result = ii * result
            result = pop()
            dii = rt.unbroadcast(dresult * result, ii)
            dresult = rt.unbroadcast(dresult * ii, result)
        dx = rt.add_at(dx, x, i, dii)
        dii = 0.0
    return dx,
'''


def _backward(source):
    return source[source.index("def ", source.index("_backward(") - 40):]


def test_the_product_loop_recomputes_its_item_and_condition_instead_of_taping_them():
    source = _generated(workloads.w2_prod_positive)
    assert _backward(source) == W2_BACKWARD
    assert "push(ii)" not in source and "push(cond)" not in source
    x = workloads.w2_make("quick").args[0]
    np.testing.assert_allclose(sg.grad(workloads.w2_prod_positive)(x), workloads.w2_hand(x)[0])


def test_the_thermal_loop_recomputes_the_price_it_reads():
    args = workloads.w8_make("quick").args
    source = _generated(workloads.w8_thermal, args=args)
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
    assert "push(v)" in _generated(_indexed_write)
    check_grads(_indexed_write, (np.array([0.3, -0.7, 1.1, 0.4]),))


def test_a_value_read_before_its_binding_in_the_loop_is_taped():
    assert "push(v)" in _generated(_read_before_binding)
    check_grads(_read_before_binding, (np.array([0.3, -0.7, 1.1]),))


def test_a_read_whose_index_is_rebound_later_in_the_loop_is_taped():
    assert "push(v)" in _generated(_index_rebound)
    check_grads(_index_rebound, (np.array([0.3, -0.7, 1.1]),))


def test_an_enclosing_loop_index_is_restored_for_a_recomputed_read():
    source = _generated(_outer_index)
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
    p = 1.0
    range_i = range(3)
    for i in range_i:
        # p = p * x[i] + 0.5
        p_times_x_item = p * x[i]
        push(p)
        p = p_times_x_item + 0.5
        push(rt.shape_of(p_times_x_item))
    return p, (tape, range_i, x)


def _running_product_backward(dp, saved):
    tape, range_i, x = saved
    pop = tape.pop
    dp = rt.own(dp)
    dx = 0.0
    # grad of: for i in range(3):
    for i in reversed(range_i):
        x_item = x[i]
        # grad of: p = p * x[i] + 0.5
        p_times_x_item = pop()
        dp_times_x_item = rt.unbroadcast(dp, p_times_x_item)
        p = pop()
        dp = rt.unbroadcast(dp_times_x_item * x_item, p)
        dx_item = rt.unbroadcast(dp_times_x_item * p, x_item)
        dx = rt.add_at(dx, x, i, dx_item)
    return dx,
'''


def test_a_loop_index_and_a_value_popped_before_its_reads_are_not_saved():
    # Before: ``i = None`` in the forward sweep, and ``i`` and ``p`` in the saved tuple,
    # although the reversed loop binds i and p is popped before the backward reads it.
    source = _generated(_running_product)
    assert source == RUNNING_PRODUCT
    assert RUNNING_PRODUCT_SAVED_BEFORE not in source
    check_grads(_running_product, (np.array([0.3, -0.7, 1.1]),))


# ----- a block's local value is pushed once bound: no ``x = None`` preamble -----

def _penalised(x):
    s = 0.0
    for i in range(3):
        s = s + np.sin(x[i])
        if s < 1.0:
            s = s + (1.0 - s) ** 2
    return s


# Before: the forward sweep began with ``cond = None``, ``sin_x_item = None``,
# ``t1_0_minus_s = None``, ``t1_0_minus_s_pow_2 = None`` (pushed before their first
# binding) and saved their last values; the backward popped them after their reads.
PENALISED_BEFORE_PREAMBLE = '''\
    push = tape.append
    cond = None
    sin_x_item = None
    t1_0_minus_s = None
    t1_0_minus_s_pow_2 = None
    s = 0.0
'''

PENALISED = '''\
def _penalised_forward(x):
    tape = []
    push = tape.append
    s = 0.0
    range_i = range(3)
    for i in range_i:
        # s = s + np.sin(x[i])
        sin_x_item = np.sin(x[i])
        push(rt.shape_of(s))
        s = s + sin_x_item
        cond = s < 1.0
        if cond:
            # s = s + (1.0 - s) ** 2
            t1_0_minus_s = 1.0 - s
            t1_0_minus_s_pow_2 = t1_0_minus_s ** 2
            push(rt.shape_of(s))
            s = s + t1_0_minus_s_pow_2
            push(t1_0_minus_s)
            push(rt.shape_of(t1_0_minus_s_pow_2))
        push(rt.shape_of(sin_x_item))
        push(cond)
    return s, (tape, range_i, x)


def _penalised_backward(ds, saved):
    tape, range_i, x = saved
    pop = tape.pop
    xp = rt.namespace(ds, x)
    ds = rt.own(ds)
    dx = 0.0
    # grad of: for i in range(3):
    for i in reversed(range_i):
        x_item = x[i]
        # grad of: if s < 1.0:
        cond = pop()
        # grad of: s = s + np.sin(x[i])
        sin_x_item = pop()
        if cond:
            # grad of: s = s + (1.0 - s) ** 2
            t1_0_minus_s_pow_2 = pop()
            t1_0_minus_s = pop()
            ds_new_2 = ds
            s = pop()
            ds = rt.unbroadcast(ds, s)
            ds = ds + rt.unbroadcast(-rt.unbroadcast(rt.unbroadcast(
                ds_new_2, t1_0_minus_s_pow_2) * 2 * t1_0_minus_s,
                t1_0_minus_s), s)
        # grad of: s = s + np.sin(x[i])
        ds_new = ds
        s = pop()
        ds = rt.unbroadcast(ds, s)
        dx_item = rt.unbroadcast(ds_new, sin_x_item) * xp.cos(x_item)
        dx = rt.add_at(dx, x, i, dx_item)
    return dx,
'''


def test_values_local_to_a_loop_or_branch_body_are_pushed_once_bound():
    source = _generated(_penalised)
    assert source == PENALISED
    assert PENALISED_BEFORE_PREAMBLE not in source
    check_grads(_penalised, (np.array([0.3, -0.7, 1.1]),))
    check_grads(_penalised, (np.array([-0.3, -0.7, -1.1]),))


def test_the_thermal_loop_needs_no_none_preamble_for_its_branch():
    source = _generated(workloads.w8_thermal, args=workloads.w8_make("quick").args)
    forward = source[:source.index("for t in range_t:")]
    assert "cond = None" not in forward and "T_low_minus_T = None" not in forward
    assert "        push(cond)\n    return cost," in source


def _doubling_until(x):
    y = x * 1.0
    i = 0
    while True:
        z = y * 1.1
        y = z + 0.1 * z * z
        i += 1
        if i >= 3:
            break
    return np.sum(y * y)


def test_a_value_local_to_a_loop_ended_by_a_break_is_pushed_before_the_break():
    source = _generated(_doubling_until)
    assert "        push(cond)\n        if stop:\n            break" in source and "push(z)" in source
    check_grads(_doubling_until, (np.array([0.3, -0.5, 0.2]),))


# ----- the seed is copied only where the sweep could write into it -----

def _zeroed_first(x):
    y = x * 2.0
    y[0] = 0.0
    return y


def test_a_seed_read_only_by_arithmetic_is_not_copied():
    # Before: ``dcost = rt.own(dcost)`` opened W8's backward sweep (and followed
    # ``dcost = 1.0`` in its composed gradient), as it opens W2's in the test above.
    source = _generated(workloads.w8_thermal, args=workloads.w8_make("quick").args)
    assert "rt.own(" not in source
    assert "def w8_thermal_backward(dcost, saved):\n    tape, " in source
    check_grads(workloads.w8_thermal, workloads.w8_make("quick").args, atol=1e-6, rtol=1e-6)


def test_a_seed_the_sweep_writes_into_is_copied_and_the_callers_array_kept():
    source = _generated(_zeroed_first)
    assert "dy = rt.own(dy)" in source
    seed = np.array([1.0, 2.0, 3.0])
    grad = sg.grad(_zeroed_first)(np.array([0.5, -1.0, 2.0]), grad_outputs=seed)
    np.testing.assert_array_equal(seed, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(grad, [0.0, 4.0, 6.0])


# ----- a None to start with only where a push or the saved tuple may read an unbound name -----

def _sum_until_negative(x):
    s = 0.0
    for v in x:
        if v < 0:
            break
        s = s + v * v
    return s + x[2]


# Before: ``range_i = None`` after ``push = tape.append``, for the push of ``range_i[:n_i]``
# that runs after ``range_i = range(n)`` on every path.
SUM_UNTIL_NEGATIVE_FORWARD = '''\
def _sum_until_negative_forward(x):
    tape = []
    push = tape.append
    s = 0.0
    # for v in x:
    stop = False
    range_i = range(len(x))
    n_i = 0
    for i in range_i:
        n_i = n_i + 1
        v = x[i]
        cond = v < 0
        if cond:
            # break
            push(stop)
            stop = True
        if not stop:
            # s = s + v * v
            v_times_v = v * v
            push(rt.shape_of(s))
            s = s + v_times_v
            push(rt.shape_of(v_times_v))
        if stop:
            break
    push(range_i[:n_i])
    # return s + x[2]
    x_item = x[2]
    s_plus_x_item = s + x_item
    return s_plus_x_item, (tape, rt.shape_of(s), stop, x, rt.shape_of(x_item))
'''


def test_a_name_bound_before_every_push_of_it_gets_no_none():
    source = _generated(_sum_until_negative)
    assert source[:source.index("\n\n\ndef _sum_until_negative_backward")] + "\n" == SUM_UNTIL_NEGATIVE_FORWARD
    check_grads(_sum_until_negative, (np.array([0.3, 0.7, 1.1, -0.2, 0.5]),))
    check_grads(_sum_until_negative, (np.array([0.3, -0.7, 1.1]),))
