"""Run the compiler's front-end passes one by one on a test's function (unit tests of passes).

``stages(fn, anf.transform, ...)`` parses ``fn`` and applies the passes given, in order,
with the CompileContext pipeline.front_end would give them; ``source(node)`` prints the
tree as the generated code is printed (astor), without the function's ``def`` line.
"""

import textwrap

import gast

from srcgrad.codegen import emit
from srcgrad.context import CompileContext
from srcgrad.naming import Namer
from srcgrad.parse import parse_function
from srcgrad.pipeline import RESERVED
from srcgrad.transform import inline


def stages(fn, *passes):
    """(node, ctx): ``fn`` parsed, then each pass ``p(node, ctx) -> node`` applied."""
    node, info = parse_function(fn)
    names = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    ctx = CompileContext(info, Namer(names | set(RESERVED)), stack=(inline.Frame(fn),))
    for p in passes:
        node = p(node, ctx)
    return node, ctx


def source(node):
    """The body of FunctionDef ``node`` as source, dedented (no ``def`` line)."""
    text = emit.to_source([node])
    return textwrap.dedent(text.split("\n", 1)[1]).strip() + "\n"


def body(fn, *passes):
    """``source`` of ``fn`` after ``passes``."""
    return source(stages(fn, *passes)[0])
