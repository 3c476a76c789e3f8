"""When a compiled gradient may be reused: everything it was compiled from is unchanged.

A compile reads more than the function's code. The code object, the defaults
(``__defaults__``, ``__kwdefaults__``: the forward sweep takes them over, and an
inlined helper's literal defaults are written into the generated code), and
every name the compile *resolved*: the callees whose rule was chosen or whose
body was inlined, a grad-mode block's manager, names bound into the generated
code. Those names are read from the globals, closure cells and builtins of the
function and of each helper inlined into it (``EntityInfo.reads``); a notebook
that runs ``act = np.exp`` after ``act = np.sin`` must get a new gradient.

What the generated code only *reads* at run time (a global or closure number
``K``, an array) is not part of this: the generated functions share the
function's globals dict and closure cells, so they see a rebinding as the
function itself would.

``Guard.holds(fn)`` is the one check every reuse of a compiled gradient makes
(srcgrad/api.py): identity comparisons only, generated as one expression per
compile (``Guard.source`` shows it) so that it costs some 100-200 nanoseconds.
"""

import builtins
import types

from srcgrad import rules
from srcgrad.parse import MISSING, Item, Keys, Length, value_kind_key


class Guard:
    """What one compile depended on, and ``holds(fn)``: whether it all still holds."""

    __slots__ = ("holds", "source", "condition", "namespace", "lines", "forms")

    def __init__(self, fn, infos):
        """``fn``: the function compiled; ``infos``: the EntityInfo of it and of every
        helper inlined into it (their ``reads`` are complete)."""
        checks, namespace = _Checks(), {"MISSING": MISSING, "BUILTINS": vars(builtins),
                                        "VERSION": rules.VERSION, "_same_items": _same_items,
                                        "_contents": _contents, "_item": _item,
                                        "_kind": value_kind_key}
        code, defaults, kwdefaults, kwitems = _own(fn)
        checks.add("fn.__code__ is {} and fn.__defaults__ is {} and fn.__kwdefaults__ is {}",
                   code, defaults, kwdefaults, form=[("func", None, code, defaults, kwdefaults)])
        checks.add("VERSION[0] == {}", rules.VERSION[0],
                   form=[("list_eq", rules.VERSION, 0, rules.VERSION[0])])
        if kwitems is not None:
            checks.add("_same_items(fn.__kwdefaults__, {})", kwitems)
        for info in infos:
            if info.fn is not fn:   # a helper, or the function a decorator wraps
                helper, (code, defaults, kwdefaults, kwitems) = info.fn, _own(info.fn)
                checks.add("{0}.__code__ is {1} and {0}.__defaults__ is {2} and "
                           "{0}.__kwdefaults__ is {3}", helper, code, defaults, kwdefaults,
                           form=[("func", helper, code, defaults, kwdefaults)])
                if kwitems is not None:
                    checks.add("_same_items({}.__kwdefaults__, {})", helper, kwitems)
            for path, obj in info.reads.items():
                root = path[0]
                if len(path) > 1:   # every prefix of the path is a read of its own
                    attr = path[-1]
                    base = info.extra[root] if len(path) == 2 and root in info.extra \
                        else info.reads[path[:-1]]
                    if isinstance(attr, (Item, Length, Keys)):
                        _container_check(checks, base, attr, obj)
                    elif isinstance(base, types.ModuleType) and base.__dict__.get(attr, MISSING) is obj:
                        # what getattr finds in a module, found at a fraction of the cost
                        # (a name deleted since: KeyError, so it does not hold)
                        checks.add(f"{{}}[{attr!r}] is {{}}", base.__dict__, obj,
                                   form=[("dict_is", base.__dict__, attr, obj)])
                    elif isinstance(obj, types.MethodType):
                        # a method of an object (self.forward): made anew by each getattr,
                        # equal while its function and object are the same
                        checks.add(f"getattr({{}}, {attr!r}, MISSING) == {{}}", base, obj)
                    else:
                        checks.add(f"getattr({{}}, {attr!r}, MISSING) is {{}}", base, obj)
                elif root in info.closure:
                    if obj is MISSING:
                        checks.add("_contents({}) is MISSING", info.closure[root],
                                   form=[("cell_missing", info.closure[root], MISSING)])
                    else:   # an emptied cell raises ValueError: it does not hold
                        checks.add("{}.cell_contents is {}", info.closure[root], obj,
                                   form=[("cell_is", info.closure[root], obj)])
                elif obj is not MISSING and info.globals.get(root, MISSING) is obj:
                    checks.add(f"{{}}[{root!r}] is {{}}", info.globals, obj,
                               form=[("dict_is", info.globals, root, obj)])
                elif obj is MISSING:   # a name defined nowhere
                    checks.add(f"{root!r} not in {{}} and BUILTINS.get({root!r}, MISSING) is {{}}",
                               info.globals, obj,
                               form=[("not_in", info.globals, root),
                                     ("dict_get_is", vars(builtins), root, obj, MISSING)])
                else:   # a builtin (deleted since: KeyError, so it does not hold)
                    checks.add(f"{root!r} not in {{}} and BUILTINS[{root!r}] is {{}}",
                               info.globals, obj,
                               form=[("not_in", info.globals, root),
                                     ("dict_is", vars(builtins), root, obj)])
            for root, key in info.kind_reads.items():   # a number or array: its kind only
                if root in info.closure:
                    checks.add("_kind({}.cell_contents) == {}", info.closure[root], key)
                else:
                    checks.add(f"_kind({{}}.get({root!r}, MISSING)) == {{}}", info.globals, key)
        # ``condition`` over ``fn`` and the names of ``namespace``: api_fast.py writes it
        # into a gradient's hot call, which checks it with no call of its own
        self.condition = "\n                and ".join(checks.lines)
        self.source = ("def holds(fn):\n    try:\n        return (" + self.condition +
                       ")\n    except Exception:   # an emptied cell, an attribute that raises\n"
                       "        return False\n")
        namespace.update(checks.values)
        self.namespace = dict(namespace)
        self.lines, self.forms = tuple(checks.lines), tuple(checks.forms)
        guard = self

        def holds(fn):
            """The check compiled when first asked (a first call's gradient is not
            checked again: its hot call has the condition in its own code)."""
            return guard._compiled_holds()(fn)
        self.holds = holds

    def _compiled_holds(self):
        """``holds`` compiled from ``source`` (and put in its place)."""
        namespace = dict(self.namespace)
        exec(compile(self.source, "<srcgrad guard>", "exec"), namespace)
        self.holds = namespace["holds"]
        return self.holds


class _Checks:
    """Lines of the generated check, each a condition; the objects it names are bound
    once each (``v0``, ``v1``...), a line that repeats another is dropped. ``forms``: per
    line, its operations for hot.py's C entry (``form=``: a list of tuples, srcgrad/jit/
    _centry.c's guard operations by name), or None: a form it checks as Python."""

    def __init__(self):
        self.lines, self.values, self._names, self.forms = [], {}, {}, []

    def add(self, template, *objects, form=None):
        names = []
        for obj in objects:
            name = self._names.get(id(obj))
            if name is None:
                name = self._names[id(obj)] = f"v{len(self._names)}"
                self.values[name] = obj
            names.append(name)
        line = template.format(*names)
        if line not in self.lines:
            self.lines.append(line)
            self.forms.append(form)


def _container_check(checks, base, step, obj):
    """The check of one step into a constant list, tuple or dict (parse.Item, Length,
    Keys): the same item (by identity), the same length, the same keys in order, so that
    replacing ``self.layers[1]`` or ``OPS["sin"]``, or appending a layer, compiles anew."""
    if isinstance(step, Length):
        checks.add("len({}) == {}", base, obj)
    elif isinstance(step, Keys):
        checks.add("tuple({}) == {}", base, obj)
    elif obj is MISSING:
        checks.add("_item({}, {}) is MISSING", base, step.key)
    else:
        checks.add("{}[{}] is {}", base, step.key, obj)


def _item(container, key):
    try:
        return container[key]
    except LookupError:
        return MISSING


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return MISSING


def _own(fn):
    """(code, defaults, kwdefaults, kwdefaults' items) of ``fn``. The defaults tuple is
    immutable, so its identity fixes its values (a default list mutated in place is the
    same list: the forward sweep sees the mutation, as ``fn`` does); the kwdefaults dict
    can be changed in place, so its items are kept too."""
    kwdefaults = fn.__kwdefaults__
    return (fn.__code__, fn.__defaults__, kwdefaults,
            None if kwdefaults is None else tuple(kwdefaults.items()))


def _same_items(mapping, items):
    if len(mapping) != len(items):
        return False
    for key, value in items:
        if mapping.get(key, MISSING) is not value:
            return False
    return True
