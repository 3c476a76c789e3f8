"""The layout of the package: no module over the size limit, no import cycles.

A newcomer should find a rule, a pass or a helper in one hop, so a module stays
small enough to read (issue 13), and the modules form layers: an import cycle,
even one hidden in a function-level import, means two modules that cannot be
understood (or loaded) one without the other. Imports are read with ``ast``, so
function-level imports count as much as module-level ones.
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "srcgrad"
MAX_LINES = 650

# Modules allowed over the limit (none: every module was split under it in issue 13).
OVERSIZED = set()

# Import edges allowed to close a cycle (none: issue 13 removed the last ones).
CYCLE_EDGES = set()


def modules(package):
    """``{dotted name: path}`` of every module under ``package`` (a directory)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph(package):
    """``{module: set of modules of the package it imports}``, at any depth of its code."""
    mods = modules(package)
    graph = {}
    for name, path in mods.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = alias.name
                    while target and target not in mods:
                        target = target.rpartition(".")[0]
                    if target:
                        targets.add(target)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module
                for alias in node.names:
                    if f"{source}.{alias.name}" in mods:   # from package import module
                        targets.add(f"{source}.{alias.name}")
                    elif source in mods:
                        targets.add(source)
        targets.discard(name)
        graph[name] = targets
    return graph


def cycles(graph):
    """The strongly connected components of ``graph`` with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def describe(graph, component):
    inside = set(component)
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & inside))}" for m in component)


def test_no_module_is_over_the_line_limit():
    root = PACKAGE.parent
    over = {str(path.relative_to(root)): len(path.read_text().splitlines())
            for path in modules(PACKAGE).values()}
    over = {path: n for path, n in over.items() if n > MAX_LINES and path not in OVERSIZED}
    assert not over, f"modules over {MAX_LINES} lines (split them): {over}"


def test_the_package_has_no_import_cycles():
    graph = import_graph(PACKAGE)
    for importer, imported in CYCLE_EDGES:
        graph.get(importer, set()).discard(imported)
    found = cycles(graph)
    assert not found, "import cycles: " + " | ".join(describe(graph, c) for c in found)


def test_the_runtime_does_not_import_custom_function():
    """custom_function registers rt.function_forward/backward into the runtime; the
    runtime never imports it back (issue 13: the runtime <-> custom_function cycle)."""
    graph = import_graph(PACKAGE)
    runtime = [m for m in graph if m == "srcgrad.runtime" or m.startswith("srcgrad.runtime.")]
    assert runtime, "srcgrad.runtime is missing"
    assert all("srcgrad.custom_function" not in graph[m] for m in runtime)
    assert "srcgrad.runtime" in graph["srcgrad.custom_function"]


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (package / "c.py").write_text("import pkg.a\n")
    (package / "d.py").write_text("from pkg import a\n")
    graph = import_graph(package)
    assert graph["pkg.sub.b"] == {"pkg.c"}
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


@pytest.mark.parametrize("name", ["unbroadcast", "add_at", "norm_vjp", "einsum_vjp", "tile_vjp",
                                  "solve_vjp", "function_forward", "function_backward"])
def test_generated_code_finds_each_helper_on_rt(name):
    """Helpers live in the runtime's modules or beside their rules (``@rt.helper``); all
    are plain attributes of ``srcgrad.runtime``, and report it as their module (what
    the compiler reads to tell srcgrad's helpers from the user's functions)."""
    import srcgrad  # noqa: F401  (registers the rules' helpers)
    from srcgrad import runtime as rt
    helper = vars(rt)[name]
    assert callable(helper) and helper.__module__ == "srcgrad.runtime"


def test_two_helpers_of_one_name_are_refused():
    from srcgrad import runtime as rt

    def unbroadcast(g, x):
        return g

    with pytest.raises(ValueError, match="rt.unbroadcast"):
        rt.helper(unbroadcast)
    assert rt.unbroadcast is not unbroadcast
