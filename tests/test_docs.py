"""Run every ```python block of docs/pytorch.md, so that the page cannot rot.

Each block is a complete program (the page says so): it is written to a file
of its own and run in a fresh namespace, in the order of the page. srcgrad
reads the source of the functions it differentiates, so the blocks must live
in real files, not in strings given to ``exec``.
"""

import re
import runpy
from pathlib import Path

import pytest

import srcgrad

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "docs" / "pytorch.md"]

_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def _blocks(path):
    """(line number, source) of every ```python block of ``path``."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start(1)) + 1
        found.append((line, match.group(1)))
    return found


BLOCKS = [(path, line, source) for path in DOCS for line, source in _blocks(path)]


def test_the_page_has_examples():
    assert len(_blocks(DOCS[0])) >= 20


@pytest.mark.parametrize("path, line, source", BLOCKS,
                         ids=[f"{p.name}:{line}" for p, line, _ in BLOCKS])
def test_block(path, line, source, tmp_path, isolated_rules, capsys):
    # The file name carries the line, so a traceback points into the page.
    script = tmp_path / f"{path.stem}_line{line}.py"
    script.write_text(source, encoding="utf-8")
    try:
        runpy.run_path(str(script), run_name="__main__")
    except Exception as error:
        raise AssertionError(
            f"the ```python block at {path.name} line {line} fails: "
            f"{type(error).__name__}: {error}") from error
    finally:
        mode_left_on = srcgrad.is_grad_enabled()
        srcgrad.set_grad_enabled(True)
    assert mode_left_on, f"the block at {path.name} line {line} leaves grad mode off"


_SHORT_EXAMPLE = re.compile(r"## A short example and its generated source\n\n```python\n(.*?)```\n\n"
                            r"prints\n\n```python\n(.*?)```", re.DOTALL)


def test_the_readme_prints_what_the_compiler_writes(tmp_path):
    # README.md's short example shows the generated source of its abs: it must be
    # exactly what sg.source(abs) prints today, so a compiler change that alters
    # it fails here until the page is regenerated.
    example, printed = _SHORT_EXAMPLE.search((ROOT / "README.md").read_text(encoding="utf-8")).groups()
    script = tmp_path / "readme_short_example.py"
    script.write_text("import numpy as np\nimport srcgrad as sg\n\n" + example.replace(
        "print(sg.source(abs))", "SOURCE = sg.source(abs)"), encoding="utf-8")
    namespace = runpy.run_path(str(script))
    assert namespace["SOURCE"].rstrip("\n") == printed.rstrip("\n")
