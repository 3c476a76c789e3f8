"""What the optimization passes share: the sweep's names, its shape facts, a name-set memo."""

import gast

from srcgrad.ast_util import NameSets
from srcgrad import ast_util

# Runtime helpers that change one of their arguments or call user code.
EFFECTFUL = {"add_at", "zero_grad_at", "run_hook", "function_backward", "seq_pop", "tape_pop"}


class Facts:
    """The facts a pass reads (and the few it adds), passed explicitly to each pass.

    ``adjoints``: the adjoint names of the sweep. ``removable``: names a pass may stop
    computing (adjoints and the sweep's temporaries). ``classes``: shape classes of
    the primals and adjoints (analysis/ranks.py), or None when nothing is known;
    ``fixed``: names never inferred from their assignments (primals, adjoints);
    ``roots``: classes whose root parameter may give a shape; ``buffers``/``indices``:
    see ``in_place.own_index_buffers``; ``returned``: see ``reductions``;
    ``in_place``: whether ``accumulate_in_place`` runs. ``params``: the parameters of
    the function the statements are the body of (the forward sweep's passes).

    Set by passes: ``sweep_classes`` (every sweep name's class, once unbroadcasts are
    gone), ``inplace`` (adjoints runtime helpers update in place, this round) and
    ``used`` (the names whose ranks or classes the optimized sweep relies on).
    ``names`` memoizes name sets (``use_names`` sets it); ``invalidate()`` forgets them
    after a change.

    Set by the driver for the fixed point's passes (driver.py): ``only``, the names a
    run is to look at (None: all), and ``touched``, where a run adds every name of each
    statement it edits, removes or inserts (``touch``).
    """

    def __init__(self, adjoints=(), generated=(), classes=None, fixed=(), roots=(), buffers=None,
                 indices=(), returned=None, in_place=True, params=()):
        self.adjoints = set(adjoints)
        self.removable = set(adjoints) | set(generated)
        self.classes = classes
        self.fixed = set(fixed)
        self.primals = self.fixed - self.adjoints
        self.roots = roots
        self.buffers = buffers
        self.indices = indices
        self.returned = returned
        self.in_place = in_place
        self.params = set(params)
        self.sweep_classes = None
        self.inplace = set()
        self.used = set()
        self.use_names(NameSets())
        self.only = None
        self.touched = set()

    def touch(self, *nodes):
        """Note the names of ``nodes`` (statements about to be edited or removed, or
        inserted) as touched."""
        for node in nodes:
            self.touched |= self.names.refs(node)

    def looks_at(self, name):
        """Whether this run decides anything for ``name`` (``only``)."""
        return self.only is None or name in self.only

    def invalidate(self):
        """Forget memoized name sets (statements were rewritten in place)."""
        self.names.clear()

    def use_names(self, names):
        """Keep the name sets in ``names`` (a ``NameSets``) from now on. ``loads``,
        ``stores``, ``refs`` are its own methods, bound here: a pass asks them thousands
        of times per compile, and a call level each was a visible cost."""
        self.names = names
        self.loads, self.stores, self.refs = names.loads, names.stores, names.refs


def inplace_targets(body, names=None):
    """Adjoints updated in place by runtime helpers: they must own their memory.
    ``names``: a ``NameSets`` whose memo of each statement's calls to read (the fixed
    point asks every round, and most statements are as the last round left them)."""
    found = set()
    for s in body:
        for n in (ast_util.nodes_of(s, gast.Call) if names is None else names.calls(s)):
            if isinstance(n.func, gast.Attribute) \
                    and n.func.attr in EFFECTFUL and n.args and isinstance(n.args[0], gast.Name):
                found.add(n.args[0].id)
    return found
