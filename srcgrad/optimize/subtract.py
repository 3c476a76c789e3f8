"""Subtraction: ``a + -b`` is written ``a - b`` (the same value: negation is exact).

    dT = dT + -dT_out_item_minus_T    ->    dT = dT - dT_out_item_minus_T
"""

import gast


def run(body, facts):
    rewriter = _Rewriter()
    for s in body:
        rewriter.visit(s)
    if rewriter.changed:
        facts.invalidate()
    return rewriter.changed


class _Rewriter(gast.NodeTransformer):
    changed = False

    def visit_BinOp(self, node):
        self.generic_visit(node)
        right = node.right
        if isinstance(node.op, gast.Add) and isinstance(right, gast.UnaryOp) \
                and isinstance(right.op, gast.USub):
            self.changed = True
            return gast.BinOp(left=node.left, op=gast.Sub(), right=right.operand)
        return node
