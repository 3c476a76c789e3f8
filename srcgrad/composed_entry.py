"""The entry check of a gradient composed as one function (``sg.grad(f).as_function()``),
which srcgrad reads again: its arguments must be arrays and floats, as the code holds
for those (api.py routes structures to code specialised for them).

Called directly by the user with a structure (a dict of parameters, a dataclass), the
composed function hands the call to the gradient it was composed from, which takes
structures: ``if rt.check_leaves(..., fallback=...): return <that gradient>(args)``. Read
again by srcgrad (``__srcgrad_parse__``), that statement is the plain check, which
refuses a structure, so the code differentiated again is what it was without it."""

import gast

from srcgrad import ast_util, parse, templates
from srcgrad.errors import UnsupportedError

FALLBACK = "_srcgrad_structured"


class Fallback:
    """The composed function a check belongs to (set once it is loaded)."""

    function = None

    def gradient(self):
        """The GradFunction the composed function came from, or None."""
        return getattr(self.function, "_srcgrad_composed_from", None)

    def __call__(self, *args):
        return self.gradient()(*args)


def check_leaves(forward, info, bindings):
    """``forward`` checking on entry that its arguments are leaves; the bindings it reads."""
    # A parameter that is an operand of + or * must not be a structure at all (the code
    # would add or multiply where Python concatenates); others may be structures without
    # float leaves (a shape, axes).
    params = [a.id for a in forward.args.posonlyargs + forward.args.args + forward.args.kwonlyargs]
    operands = {o.id for n in ast_util.walk(forward) if isinstance(n, gast.BinOp)
                and isinstance(n.op, (gast.Add, gast.Mult)) for o in (n.left, n.right)
                if isinstance(o, gast.Name)}
    if params:
        strict = tuple(p in operands for p in params)
        bindings = dict(bindings)
        bindings["_srcgrad_structure_error"] = lambda message: UnsupportedError(
            message, info.filename, info.first_lineno,
            hint="Call the gradient inside the function you differentiate, which takes structures "
                 "(def d(p, x): return sg.grad(f, wrt=1)(p, x); then sg.grad(d)), use sg.hvp or "
                 "sg.hessian, or pass the structure's leaves as separate arguments.")
        bindings[FALLBACK] = Fallback()
        args = ", ".join(params)
        forward.body.insert(0, templates.replace(
            f"if rt.check_leaves(({args},), {tuple(params)!r}, {strict!r}, _srcgrad_structure_error, "
            f"fallback={FALLBACK}):\n    return {FALLBACK}({args})")[0])
    return bindings


def loaded(function, bindings):
    """Tie the loaded composed ``function`` to its check (if it has one)."""
    fallback = bindings.get(FALLBACK)
    if fallback is not None:
        fallback.function = function
        function.__srcgrad_parse__ = lambda: _without_fallback(*parse.parse_source(function))
    return function


def _without_fallback(node, info):
    """The composed function's tree with its entry check the plain refusing one."""
    for k, s in enumerate(node.body):
        if isinstance(s, gast.If) and isinstance(s.test, gast.Call) \
                and any(kw.arg == "fallback" for kw in s.test.keywords):
            s.test.keywords = [kw for kw in s.test.keywords if kw.arg != "fallback"]
            node.body[k] = gast.copy_location(gast.Expr(value=s.test), s)
            break
    return node, info
