"""Generated blocks of the documentation: made by the compiler, checked by tests/test_docs.py.

Every printed source in README.md, CONTRIBUTING.md and docs/*.md (a generated gradient,
a sweep, what ``sg.source`` prints) is a fenced block right after a marker that says
how to make it::

    <!-- generated: output of the example above -->
    <!-- generated: sg.source(workloads.w8_thermal, args=workloads.w8_make("full").args) -->

``output of the example above``: what the nearest ```python block above that is not
itself generated prints, run from a file of its own (srcgrad reads the source of what
it differentiates) with ``np`` and ``sg`` imported. Anything else is a Python
expression whose value (a str) is the block, evaluated with ``np``, ``sg``,
``workloads`` (benchmarks/workloads.py), ``function_source`` (the source of a
function: a hand-written adjoint) and ``rule_source`` (the source of a primitive's
adjoint rule) at hand.

    python -m srcgrad._docgen --write    # regenerate every block in place
    python -m srcgrad._docgen            # list the blocks that differ (exit 1 if any)
"""

import argparse
import contextlib
import importlib.util
import inspect
import io
import re
import runpy
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python -m srcgrad._docgen --write"
EXAMPLE_ABOVE = "output of the example above"

_MARKER = re.compile(r"^([ \t]*)<!-- generated: (.*?) -->[ \t]*\n", re.MULTILINE)
_PYTHON = re.compile(r"^([ \t]*)```python[ \t]*\n(.*?)^\1```[ \t]*$", re.DOTALL | re.MULTILINE)


@dataclass
class Block:
    """One generated block: where it is, how it is made, what the page holds now."""

    path: Path
    line: int     # of the marker, 1-based
    how: str      # the marker's text after "generated: "
    start: int    # offsets of the block's text (between the fences) in the page
    end: int
    text: str     # without the indentation of the fences (a block in a list item)
    indent: str = ""

    @property
    def where(self):
        return f"{self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path}:{self.line}"


def pages(root=ROOT):
    """The pages whose generated blocks are kept: README.md, CONTRIBUTING.md, docs/*.md."""
    found = [root / "README.md", root / "CONTRIBUTING.md"] + sorted((root / "docs").glob("*.md"))
    return [p for p in found if p.exists()]


def blocks(path):
    """The generated blocks of ``path``, in page order."""
    text = path.read_text(encoding="utf-8")
    found = []
    for marker in _MARKER.finditer(text):
        indent = marker.group(1)
        fence = re.compile(rf"{indent}```[\w-]*[ \t]*\n(.*?)^{indent}```[ \t]*$",
                           re.DOTALL | re.MULTILINE).match(text, marker.end())
        line = text.count("\n", 0, marker.start()) + 1
        if fence is None:
            raise ValueError(f"{path}:{line}: a `<!-- generated: ... -->` marker must be followed "
                             f"at once by a fenced block (```python ... ```), indented as it is")
        found.append(Block(path, line, marker.group(2).strip(), fence.start(1), fence.end(1),
                           _dedent(fence.group(1), indent), indent))
    return found


def make(block):
    """The text ``block`` should hold now (ending in a newline)."""
    if block.how == EXAMPLE_ABOVE:
        out = _run_example(_example_above(block), block)
    else:
        out = eval(block.how, _namespace())   # the pages are this repository's own
        if not isinstance(out, str):
            raise TypeError(f"{block.where}: `{block.how}` gives a {type(out).__name__}, not a str")
    return out.rstrip("\n") + "\n"


def stale(paths=None):
    """(block, the text it should hold) for each block that differs from what it should hold."""
    return [(b, want) for path in (paths or pages()) for b in blocks(path)
            for want in [make(b)] if b.text != want]


def write(paths=None):
    """Regenerate every block of ``paths`` in place; the blocks rewritten."""
    changed = []
    for path in paths or pages():
        text = original = path.read_text(encoding="utf-8")
        for b in reversed(blocks(path)):   # from the end: offsets before it stay valid
            want = make(b)
            if b.text != want:
                text = text[:b.start] + _indent(want, b.indent) + text[b.end:]
                changed.append(b)
        if text != original:
            path.write_text(text, encoding="utf-8")
    return changed


def function_source(fn):
    """The source of ``fn`` as written (a hand-written adjoint, a workload)."""
    return textwrap.dedent(inspect.getsource(fn))


def rule_source(primitive):
    """The source of the adjoint rule registered for ``primitive`` (srcgrad/rules/)."""
    from srcgrad import rules
    return function_source(rules.lookup(primitive).function)


def _example_above(block):
    text = block.path.read_text(encoding="utf-8")
    generated = {b.start for b in blocks(block.path)}
    above = [m for m in _PYTHON.finditer(text, 0, block.start) if m.start(2) not in generated]
    if not above:
        raise ValueError(f"{block.where}: no ```python example above this block")
    return _dedent(above[-1].group(2), above[-1].group(1))


def _dedent(text, indent):
    return "".join(line[len(indent):] if line.startswith(indent) else line.lstrip(" \t")
                   for line in text.splitlines(True))


def _indent(text, indent):
    return "".join(indent + line if line.strip() else line for line in text.splitlines(True))


def _run_example(source, block):
    import numpy as np
    import srcgrad as sg
    name = re.sub(r"\W", "_", block.where)
    with tempfile.TemporaryDirectory(prefix="srcgrad-docgen-") as directory:
        script = Path(directory) / f"{name}.py"
        script.write_text(source, encoding="utf-8")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            runpy.run_path(str(script), init_globals={"np": np, "sg": sg}, run_name="__main__")
    return printed.getvalue()


def _namespace():
    import numpy as np
    import srcgrad as sg
    return {"np": np, "sg": sg, "workloads": _workloads(), "function_source": function_source,
            "rule_source": rule_source}


def _workloads():
    module = sys.modules.get("srcgrad_docgen_workloads")
    if module is None:
        spec = importlib.util.spec_from_file_location("srcgrad_docgen_workloads",
                                                      ROOT / "benchmarks" / "workloads.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m srcgrad._docgen", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate the blocks in place")
    parser.add_argument("pages", nargs="*", type=Path, help="pages (default: all)")
    options = parser.parse_args(argv)
    paths = [p.resolve() for p in options.pages] or None
    if options.write:
        for b in write(paths):
            print(f"regenerated {b.where} ({b.how})")
        return 0
    found = stale(paths)
    for b, _ in found:
        print(f"stale: {b.where} ({b.how})")
    if found:
        print(f"run `{COMMAND}` and review the diff")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
