"""Node annotations: what passes attach to gast nodes, and the catalogue of keys."""

import enum


class Static(enum.Enum):
    """Annotation keys; each value documents what the key holds."""

    ORIGIN = "Origin of a statement in the user's source (an Origin). See parse.py."
    PRIMITIVE = "The live object a Call's function resolves to. See transform/inline.py."
    NO_ADJOINT = "Statement whose results are constants (no_grad, detach). See transform/anf.py."
    BREAK_EXIT = "Marks the `if flag: break` that ends a canonicalized loop body."
    GRAD_FLAG = "Name of the runtime flag that enables this statement's adjoint (set_grad_enabled(flag))."
    GUARD = "An `if` the reverse sweep adds around contributions (zero adjoint, grad flag)."
    ALIAS_CHECK = "(name, index, error): this in-place write must not reach name's memory. See aliasing.py."
    ITEM_ALIAS = "b[i] op= v: True, or the error if another item of b holds b[i]. See aliasing.py."
    AUGMENTED = "Marks `v = v + y` (or `b[i] = b[i] + y`) written as `v += y` (in place for arrays). See anf.py."
    MUTATES = ("Marks `v = ...` standing for a change of v's object in place (`self.h = y`, "
               "`xs.append(y)`): a helper's parameter so changed is its caller's name changed too. "
               "See transform/attribute_state.py.")
    FIELD = ("(attribute, in place): the attribute `self = rt.dataclass_replace(self, ...)` stores, "
             "True where the attribute's own object changes (`self.items.append(y)`). See "
             "transform/attribute_state.py.")
    ITERATES = "Marks a for loop canonicalize made of `for v in X`: its body binds v = X[i]."
    TAPE = "What a tape push or pop statement saves/restores (a name, or ('item', name)). See reverse.py."
    RENAMED_PARAMS = "{parameter: new name} of a function whose parameter is named xp, rt... See base.rename_reserved."
    RECOMPUTE = "A reverse-sweep statement that recomputes a primal value instead of popping it. See recompute.py."

    # Hashed by identity (a member is equal only to itself): Enum's own ``__hash__``, a
    # Python call hashing the name, ran at every annotation read (some 3,000 per compile).
    __hash__ = object.__hash__


def setanno(node, key, value):
    annotations = node.__dict__.setdefault("_srcgrad_anno", {})
    annotations[key] = value


_NONE = {}   # the annotations of a node that has none (read, never written)


def getanno(node, key, default=None):
    return node.__dict__.get("_srcgrad_anno", _NONE).get(key, default)


def hasanno(node, key):
    return key in node.__dict__.get("_srcgrad_anno", _NONE)


def copyanno(source, target, *keys):
    for key in keys:
        if hasanno(source, key):
            setanno(target, key, getanno(source, key))
    return target
