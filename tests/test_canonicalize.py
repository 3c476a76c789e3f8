"""Canonical control flow (transform/canonicalize.py): exact output of small functions.

Loops over sequences become loops over an index, returns inside blocks become a
flag and a value, break and continue become flags the rest of the body tests.
"""

import pytest

from srcgrad import anno
from srcgrad.errors import UnsupportedError
from srcgrad.transform import canonicalize
from stages import body, stages

Static = anno.Static


def over_items(x, n):
    for v in x:
        n = n + v
    return n


def test_a_loop_over_a_sequence_becomes_a_loop_over_its_index():
    node, _ = stages(over_items, canonicalize.transform)
    assert body(over_items, canonicalize.transform) == (
        "for i in range(len(x)):\n"
        "    v = x[i]\n"
        "    n = n + v\n"
        "return n\n")
    assert anno.getanno(node.body[0], Static.ITERATES) is True


def over_range(x, n):
    for k in range(n):
        x = x * 2.0
    return x


def test_a_loop_over_range_is_kept():
    node, _ = stages(over_range, canonicalize.transform)
    assert body(over_range, canonicalize.transform) == (
        "for k in range(n):\n"
        "    x = x * 2.0\n"
        "return x\n")
    assert not anno.hasanno(node.body[0], Static.ITERATES)


def zipped(x, y, s):
    for k, (u, v) in enumerate(zip(x, y), 1):
        s = s + k * u * v
    for w in reversed(x):
        s = s - w
    return s


def test_enumerate_zip_and_reversed_unpack_by_index():
    assert body(zipped, canonicalize.transform) == (
        "for i in range(min(len(x), len(y))):\n"
        "    k = i + 1\n"
        "    u = x[i]\n"
        "    v = y[i]\n"
        "    s = s + k * u * v\n"
        "n = len(x)\n"
        "for i_2 in range(n):\n"
        "    w = x[n - 1 - i_2]\n"
        "    s = s - w\n"
        "return s\n")


def computed(x):
    for v in x * 2.0:
        x = v
    return x


def test_a_sequence_the_loop_may_change_is_bound_once_before_it():
    assert body(computed, canonicalize.transform) == (
        "seq = x * 2.0\n"
        "for i in range(len(seq)):\n"
        "    v = seq[i]\n"
        "    x = v\n"
        "return x\n")


def early(x):
    if x > 0:
        return x
    while x < 10:
        x = x * 2
        if x > 5:
            return -x
    return x


def test_returns_inside_blocks_become_a_flag_and_one_return():
    assert body(early, canonicalize.transform) == (
        "retval = None\n"
        "returned = False\n"
        "if x > 0:\n"
        "    retval = x\n"
        "    returned = True\n"
        "if not returned:\n"
        "    stop = False\n"
        "    while x < 10:\n"
        "        x = x * 2\n"
        "        if x > 5:\n"
        "            retval = -x\n"
        "            returned = True\n"
        "            stop = True\n"
        "        if not stop:\n"
        "            if returned:\n"
        "                stop = True\n"
        "        if stop:\n"
        "            break\n"
        "    if not returned:\n"
        "        retval = x\n"
        "        returned = True\n"
        "return retval\n")


def no_return(x):
    x = x + 1


def test_a_function_without_return_returns_none():
    assert body(no_return, canonicalize.transform) == "x = x + 1\nreturn None\n"


def jumps(x, s):
    for v in x:
        if v < 0:
            continue
        if v > 5:
            break
        s = s + v
    return s


def test_break_and_continue_become_flags_and_the_loop_ends_in_its_exit():
    node, _ = stages(jumps, canonicalize.transform)
    assert body(jumps, canonicalize.transform) == (
        "stop = False\n"
        "for i in range(len(x)):\n"
        "    skip = False\n"
        "    v = x[i]\n"
        "    if v < 0:\n"
        "        skip = True\n"
        "    if not skip:\n"
        "        if v > 5:\n"
        "            stop = True\n"
        "        if not stop:\n"
        "            s = s + v\n"
        "    if stop:\n"
        "        break\n"
        "return s\n")
    exit_ = node.body[1].body[-1]
    assert anno.getanno(exit_, Static.BREAK_EXIT) is True
    assert anno.getanno(node.body[0], Static.ORIGIN).source_line.strip() == "for v in x:"


def loop_else(x):
    for v in x:
        if v > 1.0:
            break
        x = v
    else:
        x = 0.0
    return x


def test_a_loops_else_runs_when_no_break_ended_it():
    assert body(loop_else, canonicalize.transform) == (
        "completed = True\n"
        "seq = x\n"
        "stop = False\n"
        "for i in range(len(seq)):\n"
        "    v = seq[i]\n"
        "    if v > 1.0:\n"
        "        completed = False\n"
        "        stop = True\n"
        "    if not stop:\n"
        "        x = v\n"
        "    if stop:\n"
        "        break\n"
        "if completed:\n"
        "    x = 0.0\n"
        "return x\n")


def bad_zip(x, y):
    for pair in zip(x, y):
        x = pair
    return x


@pytest.mark.parametrize("fn, message, line", [
    (bad_zip, "unpack zip(...) into one name per sequence", "for pair in zip(x, y):"),
])
def test_refusals_name_the_users_line(fn, message, line):
    with pytest.raises(UnsupportedError) as caught:
        stages(fn, canonicalize.transform)
    assert caught.value.message == message
    assert caught.value.source_line.strip() == line
    assert caught.value.filename == __file__


def nested_loops(x, n, s):
    for k in range(n):
        for j in range(n):
            if j > k:
                break
            s = s + x
    return s


def test_a_break_in_an_inner_loop_stops_only_that_loop():
    assert body(nested_loops, canonicalize.transform) == (
        "for k in range(n):\n"
        "    stop = False\n"
        "    for j in range(n):\n"
        "        if j > k:\n"
        "            stop = True\n"
        "        if not stop:\n"
        "            s = s + x\n"
        "        if stop:\n"
        "            break\n"
        "return s\n")
