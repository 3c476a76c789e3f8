"""codegen/emit.py: printing leaves the trees as they were (the sweeps are printed
without copying them, and read again after: composed, translated by the jit), and the
line origins match the lines printed."""

import gast

from srcgrad import anno
from srcgrad.anno import Static
from srcgrad.codegen import emit
from srcgrad.parse import Origin

NAMES = [f"a_rather_long_name_{k}" for k in range(12)]


def _function():
    """``def f(x): y = x; if x: <a release of twelve names>; <the same>; return y``, each
    statement with an origin of its own (the releases' lines 3 and 4)."""
    tree = gast.parse("def f(x):\n    y = x\n    if x:\n        "
                      + " = ".join(NAMES) + " = None\n    "
                      + " = ".join(NAMES) + " = None\n    return y\n").body[0]
    statements = [tree.body[0], tree.body[1], tree.body[1].body[0], tree.body[2], tree.body[3]]
    for line, s in zip((2, 3, 3, 4, 5), statements):
        anno.setanno(s, Static.ORIGIN, Origin("<user>", line, 4, f"line {line}", "f"))
    return tree, statements


def test_a_long_release_is_printed_split_and_the_tree_is_not_changed():
    tree, statements = _function()
    text = emit.to_source([tree])
    assert emit.to_source([tree]) == text   # printed again: the same
    assert [tree.body[0], tree.body[1], tree.body[1].body[0], tree.body[2], tree.body[3]] \
        == statements and len(tree.body[2].targets) == len(NAMES)
    lines = text.splitlines()
    released = [n for line in lines if line.endswith(" = None") for n in line.split(" = ")[:-1]]
    assert sorted(n.strip() for n in released) == sorted(NAMES * 2)
    assert all(len(line) <= 79 for line in lines)
    assert sum(line.endswith(" = None") for line in lines) >= 4   # each split in two or more
    origins = emit.line_origins([tree], text)
    for number, line in enumerate(lines, 1):
        if line.endswith(" = None"):
            expected = 3 if line.startswith("        ") else 4
            assert origins[number].lineno == expected, (number, line)
    assert origins == emit.origins_later([tree], text)()
