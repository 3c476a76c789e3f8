"""A second random-program generator (seeded, no hypothesis): programs over containers,
views and casts, the families tests/test_random_programs.py draws few of.

Every value has six entries, held as shape (6,), (2, 3) or (3, 2), so any two can be
combined after a ``reshape``. A program draws statements of these kinds:

* arithmetic: smooth, bounded operations of earlier values (``np.sin(a) * b``);
* views: ``a.reshape(2, 3)``, ``a.T``, ``a.ravel()``, ``a[::-1]``, ``a.flatten()``,
  ``np.broadcast_to`` of a row, ``np.swapaxes``, ``np.transpose``; views of views;
* fresh copies: ``a.copy()``, ``np.array(a)``, ``a.astype(float)``, ``np.zeros_like(a) + a``;
* in-place writes into a fresh copy, directly or through a view of it (``w[0] = v``,
  ``w += v``, ``w[idx] *= c``, ``np.multiply(w, c, out=w)``);
* containers: dicts, lists and tuples of values, nested, read back by key or index,
  items rebound or appended, unpacked; a container argument ``p`` (a dict holding a
  list) the gradient must mirror;
* casts: ``np.asarray([s0, s1, ...])`` of scalars, ``float(s)``, a boolean mask times a
  value, integer arrays (``np.arange``, ``np.argsort``) as constants or indices,
  ``x.astype(np.float64)``.

With ``round11=True`` half the writes take the forms round eleven made work: two
subscripts deep (``w[1][::2] += v``), through ``w.flat[k]`` and as ``np.f(a, out=w[k])``.

The program returns a smooth sum over what it made. ``check`` compares sg.grad and sg.jvp
with central differences in float64; a program srcgrad refuses must be refused with an
error naming the program's file and a line. A test point where two finite-difference
steps disagree (a kink at a mask's threshold) is skipped.
"""

import copy
import importlib.util
import os
import random
import re

import numpy as np

import srcgrad as sg
from srcgrad import pytree
from srcgrad.testing import numerical_grad

SHAPES = {"(6,)": (6,), "(2, 3)": (2, 3), "(3, 2)": (3, 2)}
SMOOTH = ("np.sin", "np.cos", "np.tanh")


class Program:
    """Draws one program from ``random.Random(seed)``; ``source`` is its text."""

    def __init__(self, seed, statements=12, round11=False):
        self.r = random.Random(seed)
        # round eleven's writes (``w[i][j] op= v``, ``w.flat[k] op= v``, ``np.f(a,
        # out=w[k])``) drawn from a stream of their own, so that the programs of the seeds
        # without them stay as they were
        self.r11 = random.Random(seed + 7919) if round11 else None
        self.lines = []
        self.shapes = {"x": (6,), "y": (2, 3)}   # name -> shape of every array value
        self.scalars = ["s"]
        self.fresh = []          # arrays with memory of their own, safe to write into
        self.containers = {}     # name -> ("dict", keys) | ("list", n) | ("tuple", n)
        self.count = 0
        self.lines.append("    q = p['w'][0] * p['w'][1] + p['b']")
        self.shapes["q"] = (6,)
        for _ in range(statements):
            getattr(self, self.r.choice(
                ["arith", "arith", "view", "copy", "write", "write", "container",
                 "container_read", "container_write", "cast", "scalar"]))()

    # ----- helpers -----

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def pick(self, shape=None):
        names = list(self.shapes)
        if shape is not None:
            names = [n for n in names if self.shapes[n] == shape] or names
        n = self.r.choice(names)
        return self.as_shape(n, shape or self.shapes[n])

    def as_shape(self, expr_name, shape):
        have = self.shapes[expr_name]
        if have == shape:
            return expr_name
        return f"{expr_name}.reshape{shape}" if len(shape) > 1 else f"{expr_name}.reshape(6)"

    def shape(self):
        return self.r.choice(list(SHAPES.values()))

    def bind(self, prefix, expr, shape, fresh=False):
        n = self.name(prefix)
        self.lines.append(f"    {n} = {expr}")
        self.shapes[n] = shape
        if fresh:
            self.fresh.append(n)
        return n

    # ----- statements -----

    def arith(self):
        shape = self.shape()
        a, b = self.pick(shape), self.pick(shape)
        f = self.r.choice(SMOOTH)
        expr = self.r.choice([f"{f}({a}) * {b}", f"{a} + {f}({b})", f"{a} * {b} - {f}({a})",
                              f"{a} / (1.0 + {b} * {b})", f"np.exp({f}({a})) * {self.r.choice(self.scalars)}"])
        self.bind("a", expr, shape)

    def view(self):
        n = self.r.choice(list(self.shapes))
        shape = self.shapes[n]
        if len(shape) == 1:
            expr, new = self.r.choice([(f"{n}.reshape(2, 3)", (2, 3)), (f"{n}[::-1]", (6,)),
                                       (f"{n}.reshape(3, 2)", (3, 2)), (f"{n}.ravel()", (6,)),
                                       (f"np.broadcast_to({n}[:3], (2, 3))", (2, 3))])
        else:
            t = (shape[1], shape[0])
            expr, new = self.r.choice([(f"{n}.T", t), (f"{n}.ravel()", (6,)), (f"np.transpose({n})", t),
                                       (f"np.swapaxes({n}, 0, 1)", t), (f"{n}[::-1]", shape),
                                       (f"{n}.reshape(-1)", (6,)), (f"{n}.flatten()", (6,)),
                                       (f"{n}[:, ::-1]", shape)])
        v = self.bind("v", expr, new)
        if n in self.fresh and "broadcast_to" not in expr:
            self.fresh.append(v)   # a view of writable memory: writes through it are the test

    def copy(self):
        n = self.r.choice(list(self.shapes))
        expr = self.r.choice([f"{n}.copy()", f"np.array({n})", f"{n}.astype(float)",
                              f"np.zeros_like({n}) + {n}", f"np.copy({n})"])
        self.bind("c", expr, self.shapes[n], fresh=True)

    def write(self):
        if not self.fresh:
            return self.copy()
        w = self.r.choice(self.fresh)
        shape = self.shapes[w]
        f = self.r.choice(SMOOTH)
        if len(shape) == 1:
            key = self.r.choice(["0", "-1", "1:4", "::2", "[0, 2, 2]", "np.array([5, 1])", "2:"])
        else:
            key = self.r.choice(["0", "1", ":, 0", "-1, 1", "..., 1", "0, :"])
        size = np.empty(shape)[eval(f"np.s_[{key}]")].size
        src = self.pick((6,))
        value = self.r.choice([f"{f}({src}[:{size}])", f"{self.r.choice(self.scalars)}",
                               f"{src}[{6 - size}:] * 2.0"]) if size > 1 else \
            self.r.choice([f"{f}({src}[3])", f"{self.r.choice(self.scalars)} * 0.5"])
        op = self.r.choice(["=", "+=", "*=", "-="])
        if op == "*=" and self.r.random() < 0.5:
            value = self.r.choice(["1.5", "-0.5"])
        if self.r11 is not None and self.r11.random() < 0.5:
            self.lines.append(self.write_round11(w, shape, op, f))
        else:
            self.lines.append(f"    {w}[{key}] {op} {value}")
        if self.r.random() < 0.15:
            self.lines.append(f"    np.multiply({w}, 0.75, out={w})")

    def write_round11(self, w, shape, op, f):
        """A write into ``w`` two subscripts deep, through ``w.flat``, or as ``out=`` a view."""
        r = self.r11
        src = self.pick((6,))
        kind = r.choice(["nested", "flat", "out"] if len(shape) == 2 else ["flat", "out"])
        if kind == "nested":
            i, j = r.randrange(-shape[0], shape[0]), r.choice(["0", "-1", "1:", "::2"])
            size = np.empty(shape)[i][eval(f"np.s_[{j}]")].size
            return f"    {w}[{i}][{j}] {op} {f}({src}[:{size}])" if size > 1 else \
                f"    {w}[{i}][{j}] {op} {f}({src}[2])"
        if kind == "flat":
            key = r.choice(["0", "4", "1:4", "::2", "[0, 3, 3]", "[5, 1]"])
            size = np.empty(shape).flat[eval(f"np.s_[{key}]")].size
            return f"    {w}.flat[{key}] {op} {f}({src}[:{size}])" if size > 1 else \
                f"    {w}.flat[{key}] {op} {f}({src}[1])"
        key = r.choice(["1:4", "::2", "-2:", "2:3"] if len(shape) == 1 else
                       ["0", "-1", ":, 0", "..., 1", "0, 1:"])
        part = np.empty(shape)[eval(f"np.s_[{key}]")].shape
        return f"    {f}(np.reshape({src}[:{int(np.prod(part))}], {part}), out={w}[{key}])"

    def container(self):
        kind = self.r.choice(["dict", "list", "tuple", "nested"])
        items = [self.r.choice(list(self.shapes)) for _ in range(self.r.randint(1, 3))]
        n = self.name(kind[0])
        if kind == "dict":
            self.lines.append(f"    {n} = {{" + ", ".join(f"'k{i}': {v}" for i, v in enumerate(items)) + "}")
            self.containers[n] = ("dict", [f"'k{i}'" for i in range(len(items))], items)
        elif kind == "list":
            self.lines.append(f"    {n} = [" + ", ".join(items) + "]")
            self.containers[n] = ("list", [str(i) for i in range(len(items))], items)
        elif kind == "tuple":
            self.lines.append(f"    {n} = (" + ", ".join(items) + ",)")
            self.containers[n] = ("tuple", [str(i) for i in range(len(items))], items)
        else:
            self.lines.append(f"    {n} = {{'a': [" + ", ".join(items) + "], 'b': (" + items[0] + ",)}")
            self.containers[n] = ("nested", ["'a'][" + str(i) for i in range(len(items))], items)

    def _read(self, n):
        kind, keys, items = self.containers[n]
        i = self.r.randrange(len(keys))
        return f"{n}[{keys[i]}]", items[i]

    def container_read(self):
        if not self.containers:
            return self.container()
        n = self.r.choice(list(self.containers))
        expr, item = self._read(n)
        f = self.r.choice(SMOOTH)
        self.bind("r", f"{f}({expr}) * 1.5", self.shapes[item])
        kind, keys, items = self.containers[n]
        if kind in ("list", "tuple") and self.r.random() < 0.4:
            names = [self.name("u") for _ in items]
            self.lines.append(f"    {', '.join(names)}, = {n}" if len(names) == 1 else f"    {', '.join(names)} = {n}")
            for u, item in zip(names, items):
                self.shapes[u] = self.shapes[item]
            if kind == "list" and self.r.random() < 0.5:
                total = self.name("t")
                self.lines.append(f"    {total} = sum(np.sum(e ** 2) for e in {n})")
                self.scalars.append(total)

    def container_write(self):
        if not self.containers:
            return self.container()
        n = self.r.choice(list(self.containers))
        kind, keys, items = self.containers[n]
        i = self.r.randrange(len(keys))
        src = self.pick(self.shapes[items[i]])
        f = self.r.choice(SMOOTH)
        if kind == "dict":
            self.lines.append(f"    {n}[{keys[i]}] = {f}({src}) + {n}[{keys[i]}]")
        elif kind == "list" and self.r.random() < 0.5:
            self.lines.append(f"    {n}.append({f}({src}))")
            keys.append(str(len(keys)))
            items.append(src.split(".")[0])
        elif kind == "list":
            self.lines.append(f"    {n}[{keys[i]}] = {n}[{keys[i]}] * {f}({src})")
        elif kind == "nested":
            self.lines.append(f"    {n}['a'][{i}] = {f}({src})")
            items[i] = src.split(".")[0]
        else:
            self.lines.append(f"    {n} = {n}[:{i}] + ({f}({src}),) + {n}[{i + 1}:]")
            items[i] = src.split(".")[0]

    def cast(self):
        n = self.r.choice(list(self.shapes))
        shape = self.shapes[n]
        flat = self.as_shape(n, (6,))
        form = self.r.randrange(6)
        if form == 0:
            s = self.r.sample(range(6), 3)
            self.bind("k", f"np.asarray([{flat}[{s[0]}], {self.r.choice(self.scalars)}, "
                      f"{flat}[{s[1]}] * {flat}[{s[2]}], 1.0, 2.0, {flat}[0]])", (6,))
        elif form == 1:
            self.bind("k", f"({n} > 0.1).astype(float) * {n} + {n}", shape)
        elif form == 2:
            self.bind("k", f"np.arange(6).reshape{shape} * {n}" if len(shape) > 1
                      else f"np.arange(6) + {n}", shape)
        elif form == 3:
            self.bind("k", f"{flat}[np.argsort(np.arange(6) % 3)]", (6,))
        elif form == 4:
            self.bind("k", f"{n}.astype(np.float64) * {n}.astype(int)", shape)
        else:
            s = self.name("f")
            self.lines.append(f"    {s} = float({flat}[{self.r.randrange(6)}]) * 2.0")
            self.scalars.append(s)

    def scalar(self):
        n = self.r.choice(list(self.shapes))
        s = self.name("s")
        self.lines.append(f"    {s} = np.sum({self.r.choice(SMOOTH)}({n})) * {self.r.choice(self.scalars)}")
        self.scalars.append(s)

    @property
    def source(self):
        ret = " + ".join([f"np.sum(np.sin({n}) * {w})" for w, n in enumerate(self.shapes, 1)]
                         + [f"{s} * 0.5" for s in self.scalars])
        return "import numpy as np\n\n\ndef f(x, y, s, p):\n" + "\n".join(self.lines) \
            + f"\n    return {ret}\n"


def load(source, directory, name):
    path = os.path.join(directory, f"{name}.py")
    with open(path, "w") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f, path


def inputs(seed):
    r = np.random.RandomState(seed)
    return (r.uniform(-1, 1, 6), r.uniform(-1, 1, (2, 3)), float(r.uniform(0.5, 1.5)),
            {"w": [r.uniform(-1, 1, 6), r.uniform(-1, 1, 6)], "b": r.uniform(-1, 1, 6)})


def _flat(tree):
    leaves = pytree.tree_leaves(tree) if pytree.is_node(tree) else [tree]
    return np.concatenate([np.ravel(np.asarray(leaf, dtype=float)) for leaf in leaves])


STATS = {"checked": 0, "refused": 0, "kink": 0}   # counts over the wrt of every program


def check(seed, directory, round11=False):
    """None when srcgrad agrees with central differences on program ``seed`` (or refuses it
    at a located line, or the point is not smooth), else a text saying what went wrong."""
    program = Program(seed, round11=round11)
    f, path = load(program.source, directory, f"rcv_{seed}")
    args = inputs(seed)
    for wrt in range(4):
        if wrt == 2:
            continue
        run = lambda *a: f(*copy.deepcopy(a))  # noqa: E731
        want = _flat(numerical_grad(run, args, wrt=wrt, eps=1e-6))
        coarse = _flat(numerical_grad(run, args, wrt=wrt, eps=1e-4))
        if not np.allclose(want, coarse, rtol=1e-4, atol=1e-5):
            STATS["kink"] += 1
            return None   # a kink within a step of the point
        try:
            got = _flat(sg.grad(f, wrt=wrt)(*copy.deepcopy(args)))
            t = np.linspace(0.3, 1.7, want.size)
            leaves, k = [], 0
            for leaf in (pytree.tree_leaves(args[wrt]) if pytree.is_node(args[wrt]) else [args[wrt]]):
                leaves.append(np.reshape(t[k:k + np.size(leaf)], np.shape(leaf)))
                k += np.size(leaf)
            tangent = pytree.rebuild(args[wrt], iter(leaves)) if pytree.is_node(args[wrt]) else leaves[0]
            tangents = tuple(tangent if i == wrt else pytree.tree_map(np.zeros_like, a)
                             if pytree.is_node(a) else np.zeros_like(a) for i, a in enumerate(args))
            _, out = sg.jvp(f, copy.deepcopy(args), tangents)
        except sg.SrcgradError as exc:
            if path in str(exc) and re.search(r"line \d+", str(exc)):
                STATS["refused"] += 1
                continue
            return f"seed {seed}: refusal not located: {exc}\n{program.source}"
        except Exception as exc:   # noqa: BLE001 - a crash is what this looks for
            return f"seed {seed}: {type(exc).__name__}: {exc}\n{program.source}"
        if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            return f"seed {seed} wrt {wrt}: grad {got} != {want}\n{program.source}"
        if not np.allclose(out, want @ t, rtol=1e-5, atol=1e-6):
            return f"seed {seed} wrt {wrt}: jvp {out} != {want @ t}\n{program.source}"
        STATS["checked"] += 1
    return None
