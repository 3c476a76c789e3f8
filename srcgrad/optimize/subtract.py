"""Subtraction: ``a + -b`` is written ``a - b``, also when the negation is a factor of a
product or quotient (the same value: negation is exact and ``(-a) * b == -(a * b)``).

    dT = dT + -dT_out_item_minus_T        ->    dT = dT - dT_out_item_minus_T
    dx = dx + -(g * s) * 2 * x            ->    dx = dx - g * s * 2 * x
"""

import gast

from srcgrad import ast_util


def run(body, facts):
    rewriter = _Rewriter()
    for s in ast_util.walk_statements(body):
        if any(n.op.__class__ is gast.USub
               for part in ast_util.own_parts(s) for n in ast_util.nodes_of(part, gast.UnaryOp)):
            # (no negation in ``s``: nothing to rewrite)
            rewriter.rewrite_own_parts(s, gast.BinOp, rewriter.rewritten)
    facts.names.forget_edited(*rewriter.edited)
    return bool(rewriter.edited)


def positive(e):
    """``p`` with ``e == -p`` exactly, when ``e`` is a negation or a product or quotient
    with one as its left-most factor; else None."""
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        return e.operand
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Mult, gast.Div)):
        left = positive(e.left)
        if left is not None:
            return gast.BinOp(left=left, op=e.op, right=e.right)
    return None


class _Rewriter(ast_util.StatementTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        return self.rewritten(node)

    def rewritten(self, node):
        """``a + -b`` -> ``a - b`` (``node``'s operands rewritten first)."""
        right = positive(node.right) if isinstance(node.op, gast.Add) else None
        if right is None:
            return node
        self.edit()
        return gast.BinOp(left=node.left, op=gast.Sub(), right=right)
