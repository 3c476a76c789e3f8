"""Errors srcgrad raises about the user's code.

Every compile-time error names the user's file, line and column, shows the
offending source line, and says what to do next.
"""


class SrcgradError(Exception):
    """An error in (or about) the user's code, located in the user's source.

    Attributes:
        filename: the user's file, or None when unknown.
        lineno: 1-based line in that file, or None.
        col_offset: 0-based column, or None.
        source_line: the text of that line, or None.
        hint: what the user can do about it.
    """

    def __init__(self, message, filename=None, lineno=None, col_offset=None,
                 source_line=None, hint=None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col_offset = col_offset
        self.source_line = source_line
        self.hint = hint
        super().__init__(self._format())

    def _format(self):
        text = self.message
        if self.filename is not None or self.lineno is not None:
            where = f'File "{self.filename}", line {self.lineno}'
            if self.col_offset is not None:
                where += f", column {self.col_offset + 1}"
            text = f"{where}: {text}"
        if self.source_line:
            text += "\n    " + self.source_line.strip()
            if self.col_offset is not None:
                indent = len(self.source_line) - len(self.source_line.lstrip())
                caret = max(self.col_offset - indent, 0)
                text += "\n    " + " " * caret + "^"
        if self.hint:
            text += "\n" + self.hint
        return text


class UnsupportedError(SrcgradError):
    """A construct outside the language subset srcgrad differentiates."""


class NonDifferentiableError(SrcgradError):
    """A call with no adjoint rule and no source, on a value that needs a gradient."""


class SourceNotFoundError(SrcgradError):
    """The function's source cannot be located (built-in, exec'd string, REPL lambda)."""


def located_at(exc, fn):
    """``exc``, a SrcgradError, or where it names no line (an argument's refusal) the same
    error at ``fn``'s def: the user's function the refused call differentiates."""
    if exc.filename is not None:
        return exc
    import inspect
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return exc
    return type(exc)(exc.message, code.co_filename, code.co_firstlineno, hint=exc.hint)


def matrix_refusal(what, filename=None, lineno=None):
    """The UnsupportedError for a ``numpy.matrix`` reaching a differentiated function (``what``:
    the argument or global holding it): its ``*`` and ``**`` are matrix products and its
    reductions stay 2-D, so NumPy's rules, written for arrays, would give wrong gradients."""
    return UnsupportedError(
        f"{what} is a numpy.matrix, whose * and ** are matrix products (not elementwise, as "
        f"srcgrad's rules for arrays assume); srcgrad refuses it rather than differentiate it "
        f"wrongly. Pass np.asarray(...) of it and write @ for the matrix products.",
        filename, lineno)


class GradcheckError(AssertionError):
    """A gradient disagrees with central finite differences."""
