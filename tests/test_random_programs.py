"""Random programs against central finite differences (hypothesis).

A small grammar of the NumPy code srcgrad must differentiate: straight-line
code, ``if`` on array values, ``for`` over ranges and over array elements
(``enumerate``, ``zip``), ``while`` with a bounded counter and a data-dependent
condition, ``break`` / ``continue`` / early ``return``, subscript reads and
writes on small arrays, lists passed to ``np.stack`` / ``np.concatenate``;
containers (dict, list and tuple displays, ``+`` and ``*`` on lists, keyed writes,
``append``, nesting) read back into arrays, and the same program given ``x`` and
``y`` in a dict argument, whose gradient must be a dict of the same numbers.
Every operation is smooth and bounded (``np.exp(np.sin(.))``, denominators
``1 + e*e``, ``np.log(1 + e*e)``), so finite differences are accurate.

Each program is rendered as Python source, written to a real ``.py`` file and
imported (so ``inspect.getsource`` finds it), then ``sg.grad`` with respect to
every input is compared with central differences. A test point where the
program is not smooth (a branch condition within ~1e-5 of its threshold,
a tie in ``np.max``) is detected by comparing two finite-difference steps and
rejected with ``assume``.

Generated programs follow rules that keep them well defined: new names are
bound only at the top level (so they exist on every path); arrays written in
place (``t[k] = ...``, ``t += ...``, ``np.negative(t, out=t)``, ``np.copyto``,
``t.fill``, ``t.sort()``, fancy writes with a repeated index) are fresh (``np.zeros`` or
``.copy()``) and are never rebound or iterated over; no input is mutated.

Aliasing: some programs also make other names for those arrays (``u = t``,
``u = t[1:]`` and a slice of that, ``u = w = np.zeros(3)``, a view returned by a
helper, ``np.ascontiguousarray``, ``np.ravel``, a list holding the array, or a
copy that shares nothing) and write through them. Such a program must give the
right gradient or be refused with an error that names the program's file and
a line of it: never a silently wrong gradient.

Reproducible: ``derandomize=True``; a failure prints the program.
"""

import atexit
import importlib.util
import itertools
import os
import shutil
import sys
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, note, settings
from hypothesis import strategies as st
from hypothesis import given

import srcgrad as sg
from srcgrad.testing import numerical_grad

N = 3  # length of every array in the programs
INPUT_NAMES = ("x", "y", "a")
MAX_TOP_STATEMENTS = 8
MAX_NESTING = 2
MAX_EXPR_DEPTH = 2

_TMP = tempfile.mkdtemp(prefix="srcgrad_random_programs_")
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
_COUNTER = itertools.count()


class Scope:
    """What an expression may read at one point of the program."""

    def __init__(self, arrays, scalars, ints=(), loop_scalars=()):
        self.arrays = list(arrays)          # array names bound at the top level
        self.scalars = list(scalars)        # scalar names bound at the top level
        self.ints = list(ints)              # (name, bound): loop counters, 0 <= name < bound
        self.loop_scalars = list(loop_scalars)  # loop element names

    def inner(self, ints=(), loop_scalars=()):
        return Scope(self.arrays, self.scalars, self.ints + list(ints),
                     self.loop_scalars + list(loop_scalars))


class Generator:
    """Draws one random program; ``render()`` gives its source."""

    def __init__(self, draw, allow_control=True, rebind_iterated=True, aliasing=False,
                 containers=False):
        self.draw = draw
        # True: every program builds lists, tuples and dicts of its arrays and reads them back.
        self.containers = containers
        # True: every program makes other names for written memory, and writes often.
        self.aliasing = aliasing
        self.allow_control = allow_control
        # False: loops iterate over inputs only (never rebound); True: also over
        # arrays that the loop body may rebind (Python iterates the old array).
        self.rebind_iterated = rebind_iterated
        self.arrays = ["x", "y"]
        self.scalars = ["a"]
        self.writable = []
        self.aliases = []       # (name, length): other names of writable memory (views, copies)
        self.lines = []
        self.names = itertools.count()

    # ----- drawing helpers -----

    def choice(self, options):
        return self.draw(st.sampled_from(options))

    def integer(self, low, high):
        return self.draw(st.integers(low, high))

    def constant(self):
        return self.choice(["0.5", "1.5", "-0.75", "2.0", "0.25", "-1.25"])

    def threshold(self):
        return self.choice(["0.0", "0.3", "-0.4", "1.0", "-1.1", "0.7"])

    def fresh_name(self, prefix):
        return f"{prefix}{next(self.names)}"

    # ----- expressions -----

    def array_leaf(self, scope):
        return self.choice(scope.arrays + self.writable)

    def array(self, scope, depth, fresh=False):
        """An array expression of shape (N,); ``fresh``: never a view of a name."""
        if depth <= 0:
            leaf = self.array_leaf(scope)
            if not fresh:
                return leaf
            return f"{self.choice(['np.sin', 'np.cos', 'np.tanh'])}({leaf})"
        form = self.choice([
            "add", "sub", "mul", "div", "add_scalar", "mul_scalar", "unary", "exp",
            "log", "sqrt", "neg", "reverse", "permute", "where", "stack", "concatenate",
            "from_scalars", "method",
            "dtype",
        ])
        a = lambda: self.array(scope, depth - 1)  # noqa: E731
        s = lambda: self.scalar(scope, depth - 1)  # noqa: E731
        bounded = lambda: self.choice(["np.sin", "np.cos", "np.tanh"])  # noqa: E731
        if form == "add":
            return f"({a()} + {a()})"
        if form == "sub":
            return f"({a()} - {a()})"
        if form == "mul":
            return f"({a()} * {bounded()}({a()}))"
        if form == "div":
            d = a()
            return f"({a()} / (1.0 + {d} * {d}))"
        if form == "add_scalar":
            return f"({a()} + {s()})"
        if form == "mul_scalar":
            return f"({a()} * {bounded()}({s()}))"
        if form == "unary":
            return f"{bounded()}({a()})"
        if form == "exp":
            return f"np.exp(np.sin({a()}))"
        if form == "log":
            d = a()
            return f"np.log(1.0 + {d} * {d})"
        if form == "sqrt":
            d = a()
            return f"np.sqrt(1.0 + {d} * {d})"
        if form == "neg":
            return f"(-{a()})"
        if form == "reverse":
            inner = f"{a()}[::-1]"
            return f"({inner} * 1.0)" if fresh else inner
        if form == "permute":
            return f"{a()}[np.array([2, 0, 1])]"
        if form == "where":
            return f"np.where({a()} > {self.threshold()}, {a()}, {a()})"
        if form == "stack":
            return f"np.stack([{a()}, {a()}]).sum(axis=0)"
        if form == "concatenate":
            return f"np.concatenate([{a()}[:1], {a()}[1:]])"
        if form == "from_scalars":
            return f"np.array([{s()}, {s()}, {s()}])"
        if form == "dtype":   # an integer cast stops the gradient; complex intermediates
            cast = self.choice(["int", "float", "complex"])
            if cast == "int":
                return f"({a()} * {a()}.astype(int))"
            if cast == "float":
                return f"{a()}.astype(np.float64)"
            return f"np.abs(np.exp(1j * {a()}) * (1.0 + 0.5j + {a()}))"
        # method
        method = self.choice(["copy", "cumsum", "reshape"])
        if method == "reshape":
            return f"({a()}.reshape(1, {N})[0] * 1.0)"
        return f"{a()}.{method}()"

    def scalar_leaf(self, scope):
        options = ["name", "constant", "index", "index_negative"]
        if scope.loop_scalars:
            options.append("loop_scalar")
        if scope.ints:
            options += ["loop_index", "loop_int"]
        form = self.choice(options)
        if form == "name":
            return self.choice(scope.scalars)
        if form == "constant":
            return self.constant()
        if form == "index":
            return f"{self.array_leaf(scope)}[{self.integer(0, N - 1)}]"
        if form == "index_negative":
            return f"{self.array_leaf(scope)}[-{self.integer(1, N)}]"
        if form == "loop_scalar":
            return self.choice(scope.loop_scalars)
        name, bound = self.choice(scope.ints)
        if form == "loop_index" and bound <= N:
            return f"{self.array_leaf(scope)}[{name}]"
        return f"({name} * 0.5)"

    def scalar(self, scope, depth):
        if depth <= 0:
            return self.scalar_leaf(scope)
        form = self.choice([
            "sum", "mean", "method_sum", "strided_sum", "dot", "max", "min", "add", "sub",
            "mul", "div", "unary", "math", "leaf",
        ])
        a = lambda: self.array(scope, depth - 1)  # noqa: E731
        s = lambda: self.scalar(scope, depth - 1)  # noqa: E731
        if form == "sum":
            return f"np.sum({a()})"
        if form == "mean":
            return f"np.mean({a()})"
        if form == "method_sum":
            return f"{a()}.sum()"
        if form == "strided_sum":
            return f"np.sum({a()}[::2])"
        if form == "dot":
            return f"(np.dot({a()}, {a()}) * 0.2)"
        if form == "max":
            return f"np.max({a()})"
        if form == "min":
            return f"{a()}.min()"
        if form == "add":
            return f"({s()} + {s()})"
        if form == "sub":
            return f"({s()} - {s()})"
        if form == "mul":
            return f"({s()} * np.tanh({s()}))"
        if form == "div":
            d = s()
            return f"({s()} / (1.0 + {d} * {d}))"
        if form == "unary":
            return f"{self.choice(['np.sin', 'np.cos', 'np.tanh'])}({s()})"
        if form == "math":
            return f"{self.choice(['math.sin', 'math.cos', 'math.tanh'])}({s()})"
        return self.scalar_leaf(scope)

    def condition(self, scope):
        form = self.choice(["greater", "less", "and", "or", "not", "array"])
        s = lambda: self.scalar(scope, 1)  # noqa: E731
        if form == "greater":
            return f"{s()} > {self.threshold()}"
        if form == "less":
            return f"{s()} < {self.threshold()}"
        if form == "and":
            return f"{s()} > {self.threshold()} and {s()} < {self.threshold()}"
        if form == "or":
            return f"{s()} > {self.threshold()} or {s()} < {self.threshold()}"
        if form == "not":
            return f"not {s()} > {self.threshold()}"
        return f"np.sum({self.array(scope, 1)}) > {self.threshold()}"

    # ----- statements -----

    def emit(self, indent, text):
        self.lines.append("    " * indent + text)

    def statement(self, scope, indent, nesting, in_loop=False):
        top = indent == 1
        options = ["assign_array", "assign_scalar", "augment"]
        if top:
            options += ["new_array", "new_scalar", "new_scalar", "new_writable"]
            if self.allow_control:
                options.append("new_list")
            if self.containers:
                options += ["container"] * 3
        if self.writable:
            options += ["write", "write", "mutating_call"]
            if top:
                options += ["alias"] * (3 if self.aliasing else 1)
            if self.aliasing:
                options += ["write", "mutating_call"]
        if self.aliases:
            options += ["write_alias"] * (3 if self.aliasing else 1)
        if self.allow_control and nesting < MAX_NESTING:
            options += ["if", "for_range", "for_elements"]
            if top:
                options += ["while", "early_return"]
        if in_loop:
            options += ["break_or_continue"]
        kind = self.choice(options)
        getattr(self, "stmt_" + kind)(scope, indent, nesting)

    def block(self, scope, indent, nesting, in_loop=False, low=1, high=2):
        for _ in range(self.integer(low, high)):
            self.statement(scope, indent, nesting, in_loop)

    def stmt_new_array(self, scope, indent, nesting):
        name = self.fresh_name("v")
        self.emit(indent, f"{name} = {self.array(scope, self.integer(1, MAX_EXPR_DEPTH), fresh=True)}")
        self.arrays.append(name)
        scope.arrays.append(name)

    def stmt_new_scalar(self, scope, indent, nesting):
        name = self.fresh_name("s")
        self.emit(indent, f"{name} = {self.scalar(scope, self.integer(1, MAX_EXPR_DEPTH))}")
        self.scalars.append(name)
        scope.scalars.append(name)

    def stmt_new_writable(self, scope, indent, nesting):
        name = self.fresh_name("t")
        if self.choice([True, False]):
            self.emit(indent, f"{name} = np.zeros({N})")
        else:
            self.emit(indent, f"{name} = {self.array_leaf(scope)}.copy()")
        self.writable.append(name)

    def stmt_new_list(self, scope, indent, nesting):
        # A list built with append in a loop, then stacked.
        name = self.fresh_name("v")
        parts = self.fresh_name("parts")
        k = self.fresh_name("k")
        count = self.integer(1, 3)
        self.emit(indent, f"{parts} = []")
        self.emit(indent, f"for {k} in range({count}):")
        inner = scope.inner(ints=[(k, count)])
        self.emit(indent + 1, f"{parts}.append({self.array(inner, 1, fresh=True)})")
        combine = self.choice(["stack", "concatenate", "array"])
        if combine == "stack":
            self.emit(indent, f"{name} = np.stack({parts}).sum(axis=0)")
        elif combine == "array":
            self.emit(indent, f"{name} = np.array({parts}).mean(axis=0)")
        else:
            self.emit(indent, f"{name} = np.concatenate({parts})[:{N}] * 1.0")
        self.arrays.append(name)
        scope.arrays.append(name)

    def stmt_container(self, scope, indent, nesting):
        """A list, tuple or dict of arrays built (displays, ``+``, ``*``, keyed writes,
        append, nesting) and read back into a new array: containers are values."""
        name, box = self.fresh_name("v"), self.fresh_name("c")
        a, b = self.array(scope, 1), self.array(scope, 1)
        form = self.choice(["dict", "concat", "repeat", "tuple", "nested", "append", "keyed", "values"])
        if form == "dict":
            self.emit(indent, f'{box} = {{"u": {a}, "v": {b}}}')
            read = f'{box}["u"] * {box}["v"]'
        elif form == "concat":
            self.emit(indent, f"{box} = [{a}] + [{b}, {self.array(scope, 1)}]")
            read = f"{box}[0] - {box}[2] * {box}[1]"
        elif form == "repeat":
            self.emit(indent, f"{box} = [{a}, {b}] * 2")
            read = f"np.stack({box}).sum(axis=0) + {box}[3]"
        elif form == "tuple":
            first, second = self.fresh_name("u"), self.fresh_name("w")
            self.emit(indent, f"{box} = ({a}, {self.scalar(scope, 1)})")
            self.emit(indent, f"{first}, {second} = {box}")
            read = f"{first} * {second}"
        elif form == "nested":
            self.emit(indent, f'{box} = {{"layers": [({a}, {b})]}}')
            read = f'{box}["layers"][0][0] * np.cos({box}["layers"][-1][1])'
        elif form == "append":
            self.emit(indent, f"{box} = [{a}]")
            self.emit(indent, f"{box}.append({b})")
            read = f"sum({box}) * {box}[-1]"
        elif form == "keyed":
            self.emit(indent, f"{box} = {{}}")
            self.emit(indent, f'{box}["k"] = {a}')
            self.emit(indent, f'{box}["k"] = {box}["k"] * {b}')
            read = f'{box}.get("k") + {box}["k"]'
        else:
            self.emit(indent, f'{box} = {{"p": {a}, "q": {b}}}')
            read = f"np.mean(np.stack(list({box}.values())), axis=0)"
        self.emit(indent, f"{name} = {read}")
        self.arrays.append(name)
        scope.arrays.append(name)

    def stmt_assign_array(self, scope, indent, nesting):
        target = self.choice(self.rebindable(scope.arrays))
        self.emit(indent, f"{target} = {self.array(scope, self.integer(1, MAX_EXPR_DEPTH), fresh=True)}")

    def stmt_assign_scalar(self, scope, indent, nesting):
        target = self.choice(self.rebindable(scope.scalars))
        self.emit(indent, f"{target} = {self.scalar(scope, self.integer(1, MAX_EXPR_DEPTH))}")

    def stmt_augment(self, scope, indent, nesting):
        kind = self.choice(["array", "scalar", "writable"] if self.writable else ["array", "scalar"])
        if kind == "scalar":
            target = self.choice(self.rebindable(scope.scalars))
            op = self.choice(["+=", "-=", "*="])
            value = self.scalar(scope, 1)
            if op == "*=":
                value = f"np.tanh({value})"
            self.emit(indent, f"{target} {op} {value}")
        elif kind == "writable":
            # In place, on a fresh array.
            target = self.choice(self.writable)
            op = self.choice(["+=", "-=", "*="])
            value = self.array(scope, 1)
            if op == "*=":
                value = f"np.cos({value})"
            self.emit(indent, f"{target} {op} {value}")
        else:
            # Rebinding (x = x + ...): never in place on an input or a view.
            target = self.choice(self.rebindable(scope.arrays))
            self.emit(indent, f"{target} = {target} + {self.array(scope, 1)}")

    def stmt_write(self, scope, indent, nesting):
        target = self.choice(self.writable)
        form = self.choice(["item", "item_add", "slice", "strided", "loop_item", "fancy"])
        if form == "loop_item":
            bounded = [(name, b) for name, b in scope.ints if b <= N]
            if bounded:
                name, _ = self.choice(bounded)
                self.emit(indent, f"{target}[{name}] = {self.scalar(scope, 1)}")
                return
            form = "item"
        if form == "item":
            self.emit(indent, f"{target}[{self.integer(-N, N - 1)}] = {self.scalar(scope, 1)}")
        elif form == "item_add":
            self.emit(indent, f"{target}[{self.integer(0, N - 1)}] += {self.scalar(scope, 1)}")
        elif form == "slice":
            self.emit(indent, f"{target}[1:] = {self.array(scope, 1)}[:{N - 1}]")
        elif form == "strided":
            self.emit(indent, f"{target}[::2] = {self.array(scope, 1)}[::2]")
        else:
            self.emit(indent, f"{target}[np.array([0, 2])] += {self.array(scope, 1)}[1:]")

    def stmt_mutating_call(self, scope, indent, nesting):
        # Calls that write into an array: srcgrad rewrites them as indexed writes.
        target = self.choice(self.writable)
        form = self.choice(["out_unary", "out_binary", "copyto", "fill", "repeated_index", "clip_out",
                            "sort"])
        if form == "out_unary":
            self.emit(indent, f"np.{self.choice(['negative', 'sin', 'tanh'])}({target}, out={target})")
        elif form == "out_binary":
            self.emit(indent, f"np.multiply({self.array(scope, 1)}, {self.array(scope, 0)}, out={target})")
        elif form == "copyto":
            self.emit(indent, f"np.copyto({target}, {self.array(scope, 1)})")
        elif form == "fill":
            self.emit(indent, f"{target}.fill({self.scalar(scope, 1)})")
        elif form == "sort":
            self.emit(indent, f"{target}.sort()")
        elif form == "clip_out":
            self.emit(indent, f"np.clip({self.array(scope, 1)}, -0.5, 0.5, out={target})")
        else:   # NumPy keeps the last write to a repeated position
            self.emit(indent, f"{target}[np.array([0, 0, 2])] = {self.array(scope, 1)}")

    def stmt_alias(self, scope, indent, nesting):
        # Another name for a writable array's memory (or a copy that shares none).
        source = self.choice(self.writable)
        name = self.fresh_name("u")
        form = self.choice(["name", "slice", "slice_of_slice", "chained", "helper",
                            "ascontiguousarray", "ravel", "reshape", "list", "copy", "array_copy"])
        length = N
        if form == "name":
            self.emit(indent, f"{name} = {source}")
        elif form == "slice":
            self.emit(indent, f"{name} = {source}[1:]")
            length = N - 1
        elif form == "slice_of_slice":
            middle = self.fresh_name("u")
            self.emit(indent, f"{middle} = {source}[1:]")
            self.emit(indent, f"{name} = {middle}[1:]")
            length = N - 2
        elif form == "chained":
            other = self.fresh_name("t")
            self.emit(indent, f"{name} = {other} = np.zeros({N})")
            self.writable.append(other)
        elif form == "helper":
            self.emit(indent, f"{name} = _first_two({source})")
            length = 2
        elif form in ("ascontiguousarray", "ravel"):
            self.emit(indent, f"{name} = np.{form}({source})")
        elif form == "reshape":
            self.emit(indent, f"{name} = {source}.reshape({N})")
        elif form == "list":
            holder = self.fresh_name("held")
            self.emit(indent, f"{holder} = [{source}]")
            self.emit(indent, f"{name} = {holder}[0]")
        elif form == "copy":
            self.emit(indent, f"{name} = {source}.copy()")
        else:
            self.emit(indent, f"{name} = np.array({source})")
        self.aliases.append((name, length))

    def stmt_write_alias(self, scope, indent, nesting):
        name, length = self.choice(self.aliases)
        k = self.integer(0, length - 1)
        if self.choice([True, False]):
            self.emit(indent, f"{name}[{k}] = {self.scalar(scope, 1)}")
        else:
            self.emit(indent, f"{name}[{k}] += {self.scalar(scope, 1)}")

    def stmt_if(self, scope, indent, nesting):
        self.emit(indent, f"if {self.condition(scope)}:")
        self.block(scope, indent + 1, nesting + 1)
        form = self.choice(["none", "else", "elif"])
        if form == "elif":
            self.emit(indent, f"elif {self.condition(scope)}:")
            self.block(scope, indent + 1, nesting + 1)
        if form in ("else", "elif"):
            self.emit(indent, "else:")
            self.block(scope, indent + 1, nesting + 1)

    def stmt_for_range(self, scope, indent, nesting):
        k = self.fresh_name("k")
        count = self.integer(1, 3)
        self.emit(indent, f"for {k} in range({count}):")
        self.block(scope.inner(ints=[(k, count)]), indent + 1, nesting + 1, in_loop=True)

    def stmt_for_elements(self, scope, indent, nesting):
        # Iterates over a non-writable array: the body cannot change it in place.
        e = self.fresh_name("e")
        iterables = scope.arrays if self.rebind_iterated else list(INPUT_NAMES[:2])
        source = self.choice(iterables)
        form = self.choice(["plain", "enumerate", "zip"])
        if form == "plain":
            self.emit(indent, f"for {e} in {source}:")
            inner = scope.inner(loop_scalars=[e])
        elif form == "enumerate":
            k = self.fresh_name("k")
            self.emit(indent, f"for {k}, {e} in enumerate({source}):")
            inner = scope.inner(ints=[(k, N)], loop_scalars=[e])
        else:
            f = self.fresh_name("e")
            other = self.choice(iterables)
            self.emit(indent, f"for {e}, {f} in zip({source}, {other}):")
            inner = scope.inner(loop_scalars=[e, f])
        self.block(inner, indent + 1, nesting + 1, in_loop=True)

    def stmt_while(self, scope, indent, nesting):
        counter = self.fresh_name("w")
        self.emit(indent, f"{counter} = 0")
        self.emit(indent, f"while {counter} < {self.integer(1, 4)} and ({self.condition(scope)}):")
        self.block(scope, indent + 1, nesting + 1)
        self.emit(indent + 1, f"{counter} += 1")

    def stmt_break_or_continue(self, scope, indent, nesting):
        self.emit(indent, f"if {self.condition(scope)}:")
        self.emit(indent + 1, self.choice(["break", "continue"]))

    def stmt_early_return(self, scope, indent, nesting):
        self.emit(indent, f"if {self.condition(scope)}:")
        self.emit(indent + 1, f"return {self.result()}")

    def result(self):
        terms = [f"np.sum(np.tanh({name}))" for name in self.arrays + self.writable]
        terms += [f"np.sum(np.tanh({name}))" for name, _ in self.aliases]
        terms += [f"np.tanh({name})" for name in self.scalars]
        return " + ".join(terms)

    @staticmethod
    def rebindable(names):
        # Inputs are never rebound: each stays in the result, so each is used.
        return [name for name in names if name not in INPUT_NAMES]

    def program(self, name, structured=False):
        """The source of one program. ``structured``: the same statements, with ``x`` and
        ``y`` passed in one dict ``p`` (``def f(p, a)``) instead of two arguments."""
        scope = Scope(self.arrays, self.scalars)
        # Every program starts with one new array and one new scalar, so that
        # rebinding always has a target.
        self.stmt_new_array(scope, 1, 0)
        self.stmt_new_scalar(scope, 1, 0)
        if self.aliasing:
            self.stmt_new_writable(scope, 1, 0)
            self.stmt_alias(scope, 1, 0)
        if self.containers:
            self.stmt_container(scope, 1, 0)
        for _ in range(self.integer(2, MAX_TOP_STATEMENTS - 2)):
            self.statement(scope, 1, 0)
        self.emit(1, f"return {self.result()}")
        body = "\n".join(self.lines)
        prelude = (f"import math\n\nimport numpy as np\n\n\ndef _first_two(v):\n    return v[:2]\n\n\n"
                   f"def {name}(x, y, a):\n{body}\n")
        if not structured:
            return prelude
        return prelude + f'\n\ndef {name}_of_dict(p, a):\n    x = p["x"]\n    y = p["y"]\n{body}\n'



@st.composite
def programs(draw, allow_control=True, aliasing=False, containers=False):
    """(source, function name) of one random program of ``f(x, y, a)``; with
    ``containers`` the source also defines ``f_of_dict(p, a)``, the same program
    taking ``x`` and ``y`` as ``p["x"]`` and ``p["y"]``."""
    name = "f"
    generator = Generator(draw, allow_control, aliasing=aliasing, containers=containers)
    return generator.program(name, structured=containers), name


inputs = st.integers(0, 2 ** 31 - 1).map(lambda seed: _inputs(seed))


def _inputs(seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, N)
    y = rng.uniform(-1.5, 1.5, N)
    a = float(rng.uniform(-1.5, 1.5))
    return x, y, a


def load(source, name):
    """Write ``source`` to a real module file, import it, return ``name`` from it."""
    module_name = f"srcgrad_random_program_{next(_COUNTER)}"
    path = os.path.join(_TMP, module_name + ".py")
    with open(path, "w") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return getattr(module, name), path


def check_program(source, name, args, fuse=False):
    note(source)
    f, path = load(source, name)
    note(f"file: {path}\nargs: x={args[0]!r}, y={args[1]!r}, a={args[2]!r}")
    wrt = (0, 1, 2)
    with np.errstate(all="raise"):
        try:
            value = f(*args)
        except FloatingPointError:
            assume(False)
    assume(np.isfinite(value) and abs(value) < 1e6)
    numeric = numerical_grad(f, args, wrt=wrt, eps=1e-6)
    coarse = numerical_grad(f, args, wrt=wrt, eps=1e-5)
    for fine, rough in zip(numeric, coarse):
        # Not smooth at this point (a branch flips, a max ties): skip it.
        assume(np.allclose(fine, rough, atol=1e-5, rtol=1e-4))
    gradient = sg.grad(f, wrt=wrt, fuse=fuse)
    try:
        grads = gradient(*args)
    except sg.SrcgradError as error:
        # Only for memory shared by two names, and located in the program's own file.
        assert "shares its memory" in str(error), str(error)
        assert error.filename == path and 1 <= error.lineno <= source.count("\n"), str(error)
        assert error.source_line and error.source_line.strip() in source, str(error)
        return
    again = gradient(*args)    # what the first call prepared: one composed function
    assert isinstance(grads, tuple) and len(grads) == 3
    for a, b in zip(grads, again):
        np.testing.assert_array_equal(a, b)
    # The two sweeps (value_and_grad runs them; grad runs them composed): the same gradient.
    swept = sg.value_and_grad(f, wrt=wrt, fuse=fuse)(*args)[1]
    for a, b in zip(grads, swept):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    for label, g, expected, arg in zip("xya", grads, numeric, args):
        if isinstance(arg, np.ndarray):
            assert isinstance(g, np.ndarray) and g.shape == arg.shape, (label, g)
        else:
            assert type(g) is float, (label, type(g))
        # Explicit tolerances: central differences in float64 with eps=1e-6 are
        # good to ~1e-9 relative to the function's scale.
        atol = 1e-6 * (1.0 + float(np.max(np.abs(expected))))
        np.testing.assert_allclose(g, expected, rtol=1e-5, atol=atol,
                                   err_msg=f"d{name}/d{label} of\n{source}")


@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(), inputs)
def test_random_programs(program, args):
    source, name = program
    check_program(source, name, args)


@pytest.mark.slow
@settings(max_examples=50, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(allow_control=False), inputs)
def test_random_straight_line_programs(program, args):
    source, name = program
    check_program(source, name, args)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(aliasing=True), inputs)
def test_random_programs_with_aliases_and_in_place_calls(program, args):
    # Views, chained names, helpers returning views, lists holding arrays, out=,
    # copyto, fill, repeated fancy indices: the right gradient, or a located refusal.
    source, name = program
    check_program(source, name, args)


# Three compiles per program (0.65 s each): 60 keep the CPU suite within 10 minutes on
# two cores; SRCGRAD_RANDOM_PROGRAMS=full runs the 100 it ran before.
_CONTAINER_PROGRAMS = 100 if os.environ.get("SRCGRAD_RANDOM_PROGRAMS") == "full" else 60


@pytest.mark.slow
@settings(max_examples=_CONTAINER_PROGRAMS, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(containers=True), inputs)
def test_random_programs_with_containers(program, args):
    # Lists, tuples and dicts of arrays built inside f and read back; and the same
    # program given its arrays in a dict argument: the gradient is a dict.
    source, name = program
    check_program(source, name, args)
    f, _ = load(source, name)
    of_dict, _ = load(source, name + "_of_dict")
    x, y, a = args
    grads = sg.grad(f, wrt=(0, 1, 2))(x, y, a)
    dp, da = sg.grad(of_dict, wrt=(0, 1))({"x": x, "y": y}, a)
    assert isinstance(dp, dict) and set(dp) == {"x", "y"}
    np.testing.assert_allclose(dp["x"], grads[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dp["y"], grads[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(da, grads[2], rtol=1e-12, atol=1e-12)


def test_generator_renders_valid_python():
    # The generator alone (no srcgrad): every program compiles and runs.
    seen = []

    @settings(max_examples=100, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(), inputs)
    def run(program, args):
        source, name = program
        namespace = {}
        exec(compile(source, "<random program>", "exec"), namespace)
        value = namespace[name](*args)
        assert np.ndim(value) == 0
        seen.append(source)

    run()
    assert len(seen) == 100


@pytest.mark.slow
@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(), inputs)
def test_random_programs_unoptimized(program, args):
    # The optimizer must not change any gradient: the same programs without it.
    from srcgrad import pipeline
    previous = pipeline.DEFAULT_OPTIONS
    pipeline.DEFAULT_OPTIONS = pipeline.CompileOptions(optimize=False)
    try:
        source, name = program
        check_program(source, name, args)
    finally:
        pipeline.DEFAULT_OPTIONS = previous


@pytest.mark.slow
@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(), inputs)
def test_random_programs_fused(program, args):
    # Fused kernels (grad(f, fuse=True)) run on NumPy as plain Python here: the
    # fusion pass must not change any gradient.
    from srcgrad import runtime
    previous = runtime.FUSE_ON_NUMPY
    runtime.FUSE_ON_NUMPY = True
    try:
        source, name = program
        check_program(source, name, args, fuse=True)
    finally:
        runtime.FUSE_ON_NUMPY = previous
