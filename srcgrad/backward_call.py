"""The backward function ``sg.vjp`` returns: the reverse sweep of one forward run, callable
once (or again with ``retain_graph``), refusing where what it reads changed since."""

from srcgrad import saved_watch
from srcgrad.call_values import _finish, _seed
from srcgrad.codegen import tracebacks
from srcgrad.runtime.saved_copy import copy_saved
from srcgrad.saved_watch import unchanged


class Backward:
    """The reverse sweep of one forward run, callable once (or more with retain_graph)."""

    def __init__(self, gfn, compiled, saved, out, inputs, options, watched=(), free=()):
        self.gfn = gfn
        self.compiled = compiled
        self.saved = saved
        self.out = out
        self.inputs = inputs
        self.options = options
        self.consumed = False
        self.watched = watched   # _watch: saved arrays the caller could change in place
        self.free = free   # saved_watch.free_objects of the backward sweep: not rebound

    def check_unchanged(self):
        """Raise where what the forward sweep saved, or what the backward sweep reads by a
        global or closure name, changed after vjp ran (PyTorch's version counters)."""
        name = saved_watch.rebound(self.free) if self.free else None
        if name is not None:
            raise RuntimeError(
                f"srcgrad: {name!r}, which the backward sweep reads by its global (or closure) "
                "name, was bound to another object after vjp ran; the backward sweep would "
                "read the new one. Call vjp again after the change.")
        for value, shape, snapshot in self.watched:
            if not unchanged(value, shape, snapshot):
                raise RuntimeError(
                    "srcgrad: one of the arrays needed for gradient computation has been "
                    f"modified by an inplace operation: an array of shape {tuple(value.shape)} "
                    "that the forward sweep saved (an argument passed to the function, an "
                    "output it returned, an array it reads through a global or closure "
                    "name, or a view of one) was changed after vjp ran. Call "
                    "vjp again after the change, or change a copy (out = out.copy()).")

    def __call__(self, grad_outputs=None, retain_graph=False):
        if self.consumed:
            raise RuntimeError(
                "Trying to backward through the graph a second time: the values saved by the "
                "forward sweep were consumed by the first backward call. Pass retain_graph=True "
                "to the first backward call if you need to call it again.")
        self.check_unchanged()
        compiled = self.compiled
        seed = _seed(self.out, grad_outputs, compiled.tuple_output)
        saved = self.saved
        if retain_graph:
            # The reverse sweep pops the tape and restores what indexed writes overwrote.
            if compiled.mutates_saved:
                saved = copy_saved(saved)   # views stay views of what the sweep restores
            elif compiled.uses_tape:
                saved = (list(saved[0]),) + tuple(saved[1:])
        else:
            self.consumed = True
            self.saved = None
        try:
            grads = self.gfn._backward(compiled, seed, saved)
        except Exception as exc:
            tracebacks.locate(exc)
            raise
        allow_unused, materialize, many = self.options
        grads = _finish(compiled, grads, self.inputs, self.out, allow_unused, materialize, seed)
        return grads if many else grads[0]
