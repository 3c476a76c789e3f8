"""The two sweeps of ``if``, ``for`` and ``while``, written as source templates.

Each template is the code a person would write; upper-case names are filled in
(``templates.replace``), ``BODY`` and ``EXIT`` by the sweeps of the loop's body
(built statement by statement by reverse.py) and the ``if stop: break`` the
canonical loop ends with. A branch replays its condition; a loop records its trip
count (and over a range, the range; over anything else, each index) so the reverse
sweep runs the same iterations backwards. Pushes and pops are tagged with what they
save (transform/tape.py), so unread ones are pruned after optimization.
"""

from srcgrad import anno
from srcgrad.ast_util import name
from srcgrad.templates import replace
from srcgrad import optimize
from srcgrad.transform import tape

Static = anno.Static


BRANCH = """
if TEST:
    BODY
else:
    ORELSE
"""

# ``for v in xs``: the index each iteration saw is pushed, and the one before the loop.
FOR_FORWARD = """
push(INDEX)
COUNT = 0
for INDEX in ITER:
    COUNT = COUNT + 1
    BODY
    push(INDEX)
    EXIT
push(COUNT)
"""

FOR_REVERSE = """
COUNT = pop()
for _ in range(COUNT):
    INDEX = pop()
    BODY
INDEX = pop()
"""

# ``for i in range(...)`` whose body never rebinds ``i``: one range on the tape per loop.
RANGE_FORWARD = """
STEPS = ITER
for INDEX in STEPS:
    BODY
push(STEPS)
"""

# ... ended by a break: the iterations run are a prefix of the range.
RANGE_BREAK_FORWARD = """
STEPS = ITER
COUNT = 0
for INDEX in STEPS:
    COUNT = COUNT + 1
    BODY
    EXIT
push(STEPS[:COUNT])
"""

RANGE_REVERSE = """
STEPS = pop()
for INDEX in reversed(STEPS):
    BODY
"""

WHILE_FORWARD = """
COUNT = 0
while TEST:
    COUNT = COUNT + 1
    BODY
push(COUNT)
"""

WHILE_REVERSE = """
COUNT = pop()
for _ in range(COUNT):
    BODY
"""


def fill(template, origin, blocks, **subs):
    """``template`` with ``subs`` substituted and ``blocks`` (name -> statements) spliced in;
    its own pushes and pops tagged (pushes with ``origin``), its top-level statements too."""
    skip = {id(s) for block in blocks.values() for s in optimize.walk_statements(block)}
    stmts = replace(template, **subs, **blocks)
    tape.tag_pushes_and_pops(stmts, origin, skip)
    return tag(stmts, origin)


def tag(stmts, origin):
    """Give each statement of ``stmts`` without an Origin the user statement ``origin``."""
    for s in stmts:
        if origin is not None and not anno.hasanno(s, Static.ORIGIN):
            anno.setanno(s, Static.ORIGIN, origin)
    return stmts


def branch(test, fwd_body, fwd_orelse, rev_body, rev_orelse, origin):
    """(forward, reverse) of ``if test``; no reverse ``if`` when neither branch has an adjoint."""
    fwd = fill(BRANCH, origin, {"BODY": fwd_body, "ORELSE": fwd_orelse}, TEST=test)
    if not rev_body and not rev_orelse:
        return fwd, []
    return fwd, fill(BRANCH, origin, {"BODY": rev_body, "ORELSE": rev_orelse}, TEST=test)


def for_loop(index, iter_, count, fwd_body, rev_body, exit_, origin):
    """``for index in iter_`` over anything: each index on the tape."""
    subs = dict(INDEX=index, ITER=iter_, COUNT=count)
    return (fill(FOR_FORWARD, origin, {"BODY": fwd_body, "EXIT": exit_}, **subs),
            fill(FOR_REVERSE, origin, {"BODY": rev_body}, **subs))


def range_loop(index, iter_, steps, count, fwd_body, rev_body, exit_, save_index, origin):
    """``for index in range(...)``: the range on the tape (its prefix run, with a break:
    ``count`` names the trip count then, else None); ``save_index``: the index's value
    before the loop is read after it."""
    subs = dict(INDEX=index, ITER=iter_, STEPS=steps, COUNT=count or "_")
    template = RANGE_FORWARD if count is None else RANGE_BREAK_FORWARD
    fwd = fill(template, origin, {"BODY": fwd_body, "EXIT": exit_}, **subs)
    rev = fill(RANGE_REVERSE, origin, {"BODY": rev_body}, **subs)
    if save_index:
        fwd = tag([tape.push(name(index), origin, index)], origin) + fwd
        rev = rev + tag(tape.pop_into(index), origin)
    return fwd, rev


def while_loop(test, count, fwd_body, rev_body, origin):
    subs = dict(TEST=test, COUNT=count)
    return (fill(WHILE_FORWARD, origin, {"BODY": fwd_body}, **subs),
            fill(WHILE_REVERSE, origin, {"BODY": rev_body}, **subs))

