"""The pipeline's structure: compile options in the cache key, compile state in the
CompileContext (not on the tree), and compiler modules that import one way."""

import ast
import pathlib

import gast
import numpy as np

import srcgrad as sg
from srcgrad import pipeline
from srcgrad.context import CompileContext, CompileOptions


def looped(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sin(x) * s + x
    return np.sum(s)


def test_options_are_part_of_the_cache_key(monkeypatch):
    optimized = sg.source(looped)
    monkeypatch.setattr(pipeline, "DEFAULT_OPTIONS", CompileOptions(optimize=False))
    unoptimized = sg.source(looped)
    assert unoptimized != optimized            # compiled anew, not the cached code
    monkeypatch.setattr(pipeline, "DEFAULT_OPTIONS", CompileOptions())
    assert sg.source(looped) is optimized     # and the first compile is still cached


def elementwise(x):
    y = np.sin(x) * x + 2.0
    return np.sum(y)


def test_fuse_reductions_is_an_option_of_the_fused_compile(monkeypatch):
    reducing = sg.source(elementwise, fuse=True)
    monkeypatch.setattr(pipeline, "DEFAULT_OPTIONS", CompileOptions(fuse_reductions=False))
    plain = sg.source(elementwise, fuse=True)
    assert plain != reducing


def test_default_options_are_hashable_and_fuse_is_one_of_them():
    assert pipeline.default_options() == CompileOptions()
    assert pipeline.default_options(fuse=True) == CompileOptions(fuse=True)
    assert len({CompileOptions(), CompileOptions(), CompileOptions(optimize=False)}) == 2


def helper(v):
    return v * 2.0


def calls_a_helper(x):
    return helper(x) + 1.0


def test_compile_state_lives_in_the_context_not_on_the_tree():
    node, ctx = pipeline.front_end(calls_a_helper, CompileOptions())
    assert isinstance(ctx, CompileContext)
    assert ctx.user_locals == {"x"}
    assert [info.name for info in ctx.infos] == ["calls_a_helper", "helper"]
    for n in gast.walk(node):
        assert [k for k in vars(n) if k.startswith("_srcgrad") and k != "_srcgrad_anno"] == []


# The modules of the compiler: none may be part of an import cycle (also not through a
# function-level import, which only hides one).
COMPILER = ("srcgrad.pipeline", "srcgrad.parse", "srcgrad.entry", "srcgrad.guard",
            "srcgrad.context", "srcgrad.transform.")


def _import_graph():
    root = pathlib.Path(sg.__file__).parent
    modules = {}
    for path in root.rglob("*.py"):
        name = ".".join(("srcgrad",) + path.relative_to(root).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                           else node.module for a in node.names]
            else:
                continue
            edges.update(t for t in targets if t in modules and t not in (name, "srcgrad"))
        graph[name] = edges
    return graph


def _reaches(graph, start, goal):
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def test_the_compiler_modules_import_one_way():
    graph = _import_graph()
    cycles = sorted(name for name in graph if name.startswith(COMPILER) and _reaches(graph, name, name))
    assert cycles == []
