"""Refuse, at compile time, every construct outside the supported language subset.

Requires: a parsed FunctionDef and its EntityInfo. Attaches nothing. Stops at the
first unsupported construct with an UnsupportedError naming the file, line and
construct, and saying what to do instead.
"""

import gast

from srcgrad.errors import UnsupportedError
from srcgrad.transform.base import Base
from srcgrad import ast_util, ast_walks

_REFUSED = {
    gast.Try: ("try/except",
               "Which statements of the try block ran before an exception is known only when "
               "it runs, and a gradient must follow exactly those. Test the condition instead "
               "of catching the error (`v = d.get(k, default)`, `if k in d:`, "
               "`if np.all(np.isfinite(y)):`), check the inputs before calling the gradient, or "
               "put the try around the gradient call (`try: g = sg.grad(f)(x)`, `except ...:`); "
               "a custom srcgrad.Function may hold any Python. Supported: try/finally without "
               "except, `try: v = d[k]` with one `except KeyError:` (or IndexError, "
               "LookupError), and a try holding one call of a NumPy or SciPy function with one "
               "`except` (`try: L = np.linalg.cholesky(K)` / `except np.linalg.LinAlgError:`), "
               "its arguments without calls; move what follows the call to the try's `else:`."),
    gast.Yield: ("yield", "Differentiate a function that returns its result instead of a generator."),
    gast.YieldFrom: ("yield from", "Differentiate a function that returns its result."),
    gast.Await: ("await", "Differentiate synchronous code."),
    gast.AsyncFunctionDef: ("async def", "Differentiate a synchronous function."),
    gast.AsyncFor: ("async for", "Differentiate synchronous code."),
    gast.AsyncWith: ("async with", "Differentiate synchronous code."),
    gast.Global: ("global", "Pass the value in as an argument and return the new value."),
    gast.Nonlocal: ("nonlocal", "Pass the value in as an argument and return the new value."),
    gast.Delete: ("del", "Remove the del statement; rebind the name instead."),
    gast.ClassDef: ("a class definition (other than a @dataclass at the top of the body whose methods "
                    "read no variable of the function)", "Define the class outside the differentiated function."),
    gast.With: ("a with block", "Only `with srcgrad.no_grad()`-style blocks are supported; move "
                                "other context managers outside the differentiated function."),
    gast.Import: ("import inside the function", "Import at module level."),
    gast.ImportFrom: ("import inside the function", "Import at module level."),
    gast.SetComp: ("a set comprehension (sets are not values srcgrad models)",
                   "Build a list (a list comprehension), or compute the set outside the "
                   "differentiated function."),
    gast.Starred: ("*-unpacking", "Pass the arguments one by one."),
}

_EARLY_FINALLY = ("try/finally with a return, break or continue in it",
                  "Leave the block at its end: assign the result to a name in the try block, "
                  "and return it after the finally block.")

if hasattr(gast, "TryStar"):
    _REFUSED[gast.TryStar] = _REFUSED[gast.Try]
if hasattr(gast, "Match"):
    _REFUSED[gast.Match] = ("match", "Use if/elif/else.")


# The classes ``check`` looks at (with an attribute assigned to, ``p.x = v``).
_LOOKED_AT = frozenset(_REFUSED) | {gast.With, gast.AnnAssign}


def check(node, info, allowed_with=lambda item: False, helper=False, census=None):
    """Raise UnsupportedError at the first refused construct inside ``node``'s body.

    Args:
        node: the FunctionDef.
        info: its EntityInfo, for locations.
        allowed_with: predicate on a `with` item telling which context managers
            the compiler understands (grad-mode blocks).
        census: an ``ast_walks.Census`` of ``node``, for the first look.
    """
    if isinstance(node, gast.AsyncFunctionDef):
        _refuse(node, info, *_REFUSED[gast.AsyncFunctionDef])
    args = node.args
    if not helper and (args.vararg is not None or args.kwarg is not None):
        # A helper's are bound to displays of the arguments of its call (inline.py).
        _refuse(node, info, "*args/**kwargs parameters of the function differentiated",
                "srcgrad differentiates it for the arguments of each call: call its derivative "
                "(sg.grad(f)(w, x, y)), or give sg.source the arguments (args=(w, x, y)).")
    # (most functions hold nothing the walks below look at: two quick checks first)
    if census is None:
        census = ast_walks.Census(node)
    if not census.holds(_LOOKED_AT) and not any(
            a.ctx.__class__ is gast.Store for a in census.of(gast.Attribute)):
        return
    # `[*a, *b]`: transform/methods.py joins a display's starred items (list(a) + list(b))
    # (the two walks only where a ``*`` is: most functions have none)
    starred = bool(ast_util.nodes_of(node, gast.Starred))
    displayed = {id(e) for n in ast_util.walk(node) if isinstance(n, (gast.List, gast.Tuple))
                 and isinstance(n.ctx, gast.Load) for e in n.elts if isinstance(e, gast.Starred)} \
        if starred else set()
    # `g(*args)`, `zip(*[a, b])`: methods.py passes the items of a display one by one, binds
    # g's *vs to the rest, and refuses any other at its line
    if starred:
        displayed |= {id(a) for n in ast_util.walk(node) if isinstance(n, gast.Call)
                      for a in n.args if isinstance(a, gast.Starred)}
    for stmt in node.body:
        for child in ast_util.walk(stmt):
            if isinstance(child, gast.With) and all(allowed_with(i) for i in child.items):
                continue
            entry = _REFUSED.get(type(child))
            if isinstance(child, gast.Try) and not child.handlers:   # (plain_statements.py
                entry = _EARLY_FINALLY                               # took the others)
            if isinstance(child, gast.Starred) and isinstance(child.ctx, gast.Store):
                entry = None   # `first, *rest = seq`: anf.py unpacks it by indexing
            if id(child) in displayed:
                entry = None
            if entry is not None:
                _refuse(child, info, *entry)
            if isinstance(child, gast.Assign) or isinstance(child, gast.AugAssign):
                targets = child.targets if isinstance(child, gast.Assign) else [child.target]
                for target in targets:
                    for t in ast_util.walk(target):
                        if isinstance(t, gast.Attribute) and isinstance(t.ctx, gast.Store):
                            _refuse(t, info, "assignment to an attribute",
                                    "Keep the value in a local variable.")
            if isinstance(child, gast.AnnAssign):
                _refuse(child, info, "an annotated assignment", "Drop the annotation.")


def _refuse(node, info, construct, hint):
    raise Base(info).error(node, UnsupportedError,
                           f"{construct} is not supported in a function srcgrad differentiates", hint)
