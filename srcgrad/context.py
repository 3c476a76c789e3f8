"""What one compile knows and decides, in one place: its options and its state.

``CompileOptions`` are the switches a compile obeys. They are frozen and hashable:
api.py puts them in the compile cache key, so a compile made under other options is
never returned for these.

``CompileContext`` is the state the passes share while they turn one function (the
one differentiated, or a helper inlined into it) into a tree the reverse pass can
read: its EntityInfo, its Namer, the names srcgrad binds into the generated code,
and how to compile a helper through the same stages (``normalize``, given by
pipeline.py, so transform/inline.py needs no import of the pipeline).
"""

import dataclasses
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CompileOptions:
    """The switches of one compile (part of the compile cache key).

    Attributes:
        optimize: run the optimization passes on the sweeps (srcgrad/optimize/) and
            build the gradient-only forward sweep; off only in tests that check the
            optimized and unoptimized code agree.
        fuse: turn runs of elementwise statements into fused kernels (transform/fuse.py).
        fuse_reductions: end a fused forward kernel in its ``np.sum`` (cupy.fuse reduces
            in the kernel).
    """

    optimize: bool = True
    fuse: bool = False
    fuse_reductions: bool = True

    def replace(self, **changes):
        """These options with some fields changed."""
        return dataclasses.replace(self, **changes)


@dataclass
class CompileContext:
    """The state of normalizing one function (see the module docstring).

    Attributes:
        info: the parse.EntityInfo of the function.
        namer: the naming.Namer handing out the function's new names.
        options: the CompileOptions of the compile.
        bindings: name -> object srcgrad binds into the generated code itself (a
            renamed global, ``rt.as_array``, an inlined helper's free name).
        user_locals: the parameters and locals the user wrote (before any pass).
        stack: the inline.Frame of each function being inlined, outermost first
            (inline.py refuses a call back into one of them: recursion).
        infos: the EntityInfo of the function and of every helper inlined into it
            (guard.py checks what each read still holds).
        aux: with has_aux, the name the aux value is bound to (transform/aux.py).
        normalize: ``normalize(fn, stack, static) -> (node, context)``: a helper
            through the same stages (inline.py calls it).
        classes: parameter -> the class of the structure it holds (a dataclass or
            registered class; the gradient is specialised on it), never rebound in the
            function: ``p.energy(x)`` is a call of that class's method (methods.bind_methods).
        trees: name -> the tree key of the structure it holds, for the names in ``classes``
            whose parts' classes are known (transform/structure_parts.py).
    """

    info: object
    namer: object
    options: CompileOptions = field(default_factory=CompileOptions)
    bindings: dict = field(default_factory=dict)
    user_locals: frozenset = frozenset()
    stack: tuple = ()
    infos: list = field(default_factory=list)
    aux: str = None
    normalize: object = field(default=None, repr=False)
    classes: dict = field(default_factory=dict)   # parameter -> its class, known when compiling
    trees: dict = field(default_factory=dict)   # name -> the tree of the structure it holds
    built_trees: set = field(default_factory=set)   # locals given a tree by a sg.tree_map
    # name canonicalize binds to list(<call>) for a for loop -> why that loop may not read
    # every item the call gives (None: it reads them all): a generator's (generators.py)
    loop_sequences: dict = field(default_factory=dict)
