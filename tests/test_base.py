"""The transformer base (transform/base.py): splicing, dropping, origins and errors."""

import gast
import pytest

from srcgrad import anno
from srcgrad.errors import UnsupportedError
from srcgrad.parse import parse_function
from srcgrad.transform.base import Base, local_names
from stages import source

Static = anno.Static


def sample(x, n):
    y = x
    for k in range(n):
        pass
        y = y * x
    if y:
        pass
    return y


class Example(Base):
    def visit_Pass(self, stmt):
        return None

    def visit_For(self, loop):
        self.visit_children(loop)
        count = gast.parse("count = 0").body[0]
        return [self.inherit(count), loop]

    def visit_If(self, stmt):
        self.visit_children(stmt)
        return [] if not stmt.body else stmt


def test_visitors_splice_drop_and_recurse_into_nested_blocks():
    node, info = parse_function(sample)
    node.body = Example(info).visit_block(node.body)
    assert source(node) == (
        "y = x\n"
        "count = 0\n"
        "for k in range(n):\n"
        "    y = y * x\n"
        "return y\n")   # the if lost its only statement, then itself


def test_new_statements_inherit_the_line_of_the_statement_visited():
    node, info = parse_function(sample)
    node.body = Example(info).visit_block(node.body)
    origin = anno.getanno(node.body[1], Static.ORIGIN)
    assert origin.source_line.strip() == "for k in range(n):"
    assert origin.filename == __file__


class Refuses(Base):
    def visit_Assign(self, stmt):
        if isinstance(stmt.value, gast.BinOp):
            raise self.error(stmt.value, UnsupportedError, "no products here", "Add instead.")
        return stmt


def test_error_names_the_users_file_line_and_hint():
    node, info = parse_function(sample)
    with pytest.raises(UnsupportedError) as caught:
        Refuses(info).visit_block(node.body)
    error = caught.value
    assert (error.message, error.hint) == ("no products here", "Add instead.")
    assert error.filename == __file__ and error.source_line.strip() == "y = y * x"
    assert error.lineno == sample.__code__.co_firstlineno + 4


def test_local_names_are_the_parameters_and_every_name_assigned():
    node, _ = parse_function(sample)
    assert local_names(node) == {"x", "n", "y", "k"}
