"""Forward mode's statements on complex values (JAX's convention; rules/complex_rules.py).

A statement whose value is certainly complex (analysis/kinds.py) takes each primitive's
rule on complex values: its ``@complex_tangent`` rule, its ordinary one where it is
complex-safe or declared ``linear``; any other is refused at the user's line. A value
of unknown kind in code that computes complex values (a gradient's value popped off
its tape) may be complex: a primitive with a rule on complex values, which holds for
real ones too (``abs``), takes it there.
"""

import gast

from srcgrad import ast_util, rules
from srcgrad.analysis import kinds
from srcgrad.errors import UnsupportedError
from srcgrad.transform import tangent_rules
from srcgrad.transform.adjoint_rules import _describe


class ComplexStatements:
    """The part of forward.ForwardAD that marks complex statements and looks up rules."""

    complex_value = maybe_complex = _computes_complex = None

    def check_real(self, value):
        """Mark a statement whose value is certainly complex (``complex_value``: its
        primitive's tangent is then its rule on complex values, refused where it has
        none) or may be (``maybe_complex``: a primitive with a rule on complex values,
        which holds for real ones too, takes it: ``abs`` of a value popped off a tape)."""
        self.complex_value = self.maybe_complex = None
        if self.kinds is None:
            return
        operands = [value] + [n for n in ast_util.walk(value) if isinstance(n, (gast.Name, gast.Constant))]
        if any(self.kinds.of(o) == kinds.COMPLEX for o in operands):
            self.complex_value = value
        elif self.computes_complex() and any(
                self.kinds.of(o) == kinds.UNKNOWN for o in operands
                if isinstance(o, gast.Name) and o.id in self.active):
            # a tangent through a value of unknown kind in code that computes complex
            # values (a gradient's value popped off its tape): it may be one of them
            self.maybe_complex = value

    def computes_complex(self):
        """Whether some value of the function is certainly complex (once per function:
        check_real runs for every statement)."""
        if self._computes_complex is None:
            self._computes_complex = kinds.COMPLEX in getattr(self.kinds, "env", {}).values()
        return self._computes_complex

    def complex_rule(self, primitive):
        """Whether ``primitive`` takes its rule on complex values in this statement."""
        if self.complex_value is not None:
            return True
        if self.maybe_complex is None:
            return False
        try:
            return rules._key(primitive) in rules.COMPLEX_TANGENTS
        except TypeError:
            return False

    def lookup(self, primitive):
        """The TangentTemplate of ``primitive`` (transform/batching.py gives its batched
        form); in a statement on complex values its complex rule, or a refusal."""
        if not self.complex_rule(primitive):
            return tangent_rules.lookup(primitive)
        value = self.complex_value or self.maybe_complex
        found = tangent_rules.lookup_complex(primitive)
        if found is None:
            raise self.error(value, UnsupportedError,
                             f"forward mode has no tangent for {_describe(primitive, value)} on "
                             f"complex values", "Use reverse mode (sg.grad, sg.jacrev) for it.")
        return found

