"""``Compiled``, a compiled gradient (pipeline.py makes it); its sweeps, printed and loaded
on first use."""

import functools
import gc
import threading
from dataclasses import dataclass, field


@dataclass
class Compiled:
    """A compiled gradient: the generated functions, their source, and facts about them."""

    forward: object
    backward: object
    source: str
    wrt: tuple
    activity: object = field(repr=False)
    user_locals: frozenset = frozenset()
    guard: object = field(default=None, repr=False)   # guard.Guard: when it may be reused
    # What the sweeps are (reverse.Reversed):
    tuple_output: bool = False    # fn returns a tuple: the seed is a tuple of seeds
    uses_tape: bool = False       # saved holds a tape (a backward runs once unless kept)
    mutates_saved: bool = False   # the backward restores arrays the forward wrote into
    functions: tuple = ()         # the custom Function classes fn applies
    rank_free: bool = False       # nothing in the code depends on the arguments' ranks
    forward_for_grad: object = None   # the forward sweep a gradient-only call runs, or None
    # What compose_gradient rebuilds the code from:
    # The (forward, backward) FunctionDefs; where the forward sweep's last tidying is left
    # for later (``Unfinished``), reading ``trees`` finishes it, ``backward_tree`` does not.
    trees: tuple = field(default=(), repr=False)
    # The forward FunctionDef a gradient-only call composes with the backward, and
    # whether its seed is known to be 1; None where the sweeps run as two calls.
    gradient_forward: tuple = field(default=None, repr=False)
    load: tuple = field(default=None, repr=False)   # (EntityInfo, bindings) to load code with
    scalars: frozenset = field(default=frozenset(), repr=False)   # names holding one number
    floats: frozenset = field(default=frozenset(), repr=False)   # names certainly real floats
    # The backward sweep's statements' name sets as reverse.build left them (ast_util.NameSets):
    # grad's first composing asks them instead of walking its statements again, and drops them.
    sweep_names: object = field(default=None, repr=False)
    # Made on first use: api's call plan, show's generic text, the composed gradient.
    plan: object = field(default=None, repr=False)
    shown: str = field(default=None, repr=False)
    gradient: object = field(default=None, repr=False)
    hot_calls: dict = field(default=None, repr=False)   # fast_call.py's hot calls of it
    # The on-disk cache (disk_cache.py): the sweeps printed, not loaded (a ``Printing``:
    # what the store writes, and what ``sweeps()`` loads), the EntityInfos the compile
    # read, the entry's key, the composed gradient a loaded entry holds, and how a loaded
    # gradient compiles its trees again.
    printed: object = field(default=None, repr=False)
    infos: tuple = field(default=None, repr=False)
    disk_key: str = field(default=None, repr=False)
    composed_part: dict = field(default=None, repr=False)
    recompile: object = field(default=None, repr=False)
    disk_entry: dict = field(default=None, repr=False)
    # () -> Sweeps: the printed and loaded sweeps, where they are made on first use
    # (``forward``, ``backward``, ``source`` and ``forward_for_grad`` are ``LATER`` until
    # then); None when they were given.
    sweeps: object = field(default=None, repr=False)


@dataclass
class Sweeps:
    """What ``Compiled.sweeps()`` makes: the sweeps loaded and their source."""
    forward: object
    backward: object
    source: str
    forward_for_grad: object


@dataclass
class Printed:
    """The sweeps printed: their source, the functions' names in it (the fused kernels,
    the forward sweep, its gradient-only copy where ``for_grad``, the backward sweep), and
    its line origins (``emit.Origins``)."""
    source: str
    names: list
    origins: object
    for_grad: bool


LATER = ("made on first use: Compiled.sweeps",)
_SWEEPS_LOCK = threading.RLock()   # (re-entered: a damaged entry's sweeps compile afresh)
_TREES_LOCK = threading.Lock()
_PRINT_LOCK = threading.Lock()


class Printing:
    """The sweeps printed (``Printed``) by ``make()`` once, when first asked: by the on-disk
    cache's store (which writes the text, and compiles none of it) or by ``sweeps()``
    (which loads it), whichever comes first."""

    def __init__(self, make):
        self._make = make
        self._printed = None

    def __call__(self):
        if self._printed is None:
            with _PRINT_LOCK:
                if self._printed is None:
                    self._printed = self._make()
                    self._make = None   # what it held (the compile's context) may go
        return self._printed


class Unfinished:
    """``Compiled.trees`` whose forward sweep is finished (its last passes run, its
    comments placed) by ``finish()`` when something first reads it: ``grad``'s first
    call composes the gradient-only copy of the forward sweep with the backward sweep,
    and never reads the full forward sweep (the sweeps printed, ``value_and_grad``,
    a composed gradient read again, the jit do)."""

    def __init__(self, backward, finish):
        self.backward = backward
        self._finish = finish
        self._trees = None

    def trees(self):
        """(forward, backward), the forward finished once (the first reader runs it)."""
        if self._trees is None:
            with _TREES_LOCK:
                if self._trees is None:
                    self._trees = self._finish()
                    self._finish = None
        return self._trees


def _get_trees(compiled):
    value = compiled.__dict__["trees"]
    if value.__class__ is Unfinished:
        value = compiled.__dict__["trees"] = value.trees()
    return value


def _set_trees(compiled, value):
    compiled.__dict__["trees"] = value


def _backward_tree(compiled):
    """The backward FunctionDef, without finishing the forward sweep (``Unfinished``)."""
    value = compiled.__dict__["trees"]
    return value.backward if value.__class__ is Unfinished else value[1]


def _has_trees(compiled):
    """Whether ``compiled`` holds its trees (finished or not): not a gradient loaded from
    the on-disk cache without them."""
    return bool(compiled.__dict__["trees"])


Compiled.trees = property(_get_trees, _set_trees)
Compiled.backward_tree = property(_backward_tree)
Compiled.has_trees = property(_has_trees)


def _sweeps_field(name):
    """``Compiled.<name>``, the sweeps made (printed, loaded) the first time one is read."""
    def get(compiled):
        value = compiled.__dict__[name]
        if value is LATER:
            with _SWEEPS_LOCK:
                if compiled.__dict__[name] is LATER:
                    made = compiled.sweeps()
                    for field_name in _SWEEP_FIELDS:
                        compiled.__dict__[field_name] = getattr(made, field_name)
                    compiled.sweeps = None   # what it held (the compile's context) may go
            value = compiled.__dict__[name]
        return value

    def set_(compiled, value):
        compiled.__dict__[name] = value
    return property(get, set_)


_SWEEP_FIELDS = ("forward", "backward", "source", "forward_for_grad")
for _name in _SWEEP_FIELDS:
    setattr(Compiled, _name, _sweeps_field(_name))


def gc_paused(compile_step):
    """Run ``compile_step`` with the cyclic garbage collector off (on again after, when it
    was on). A compile allocates a tree of some hundred objects per user statement,
    nearly all alive until it ends, and every collection scans what it allocated so
    far: at 1,000 statements the collections were a third of the compile time, the
    part that grew with the square of the length. What the compile leaves as garbage
    is collected after it."""
    @functools.wraps(compile_step)
    def paused(*args, **kwargs):
        if not gc.isenabled():   # nested in a compile, or the user turned it off
            return compile_step(*args, **kwargs)
        gc.disable()
        try:
            return compile_step(*args, **kwargs)
        finally:
            gc.enable()
    return paused
