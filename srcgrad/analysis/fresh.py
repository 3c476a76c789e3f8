"""Which results of a composed gradient are certainly new arrays like one of its arguments,
and the gradient as lines the hot call can run itself.

The hot call (fast_call.py) checks that the gradient it returns has its input's dtype
and shape and is writeable, else finishes it (call_values._finish_values); on W4 that
check is a fifth of the call. Where the composed gradient is straight-line arithmetic
of its arguments and Python numbers, the check is known to pass before it runs:

    def gradient_f(x):                       x: a float ndarray (the hot call checked it)
        x_plus_2 = x + 2                     x_plus_2: a new array like x
        dt = 1.0 / (x.size or 1)             dt: a Python number
        return dt * 6 * x_plus_2,            a new array like x: final

An array operand meets only Python ints and floats (never NumPy scalars, which may
promote) or arrays like the same argument, through ``+ - * /`` and unary ``-``; a new
ufunc result is writeable, has the argument's shape and, under NumPy 2's promotion
(Python numbers are weak; NumPy 1's value-based casting may widen float16), the
argument's dtype where that is a native float type. Any other statement, a call, an
attribute other than ``.size``, a loop or a branch: nothing is known.

Such a gradient reads nothing but its arguments, so the hot call runs its statements
itself (no call of its own, ``inlined``). There its arrays are known to be float
arrays, where a small integer literal is exactly the float literal of the same value
(converted to the array's dtype either way); NumPy takes a Python float operand faster
than an int one, so ``x + 2`` is written ``x + 2.0`` there: the same result.
"""

import ast
import re

import numpy

_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)
NUMBER = "number"   # a Python int or float
_WEAK_SCALARS = int(numpy.__version__.split(".")[0]) >= 2   # NEP 50
_MAX_SOURCE = 4000    # longer gradients: their call's checks are a small part of their time
_EXACT_INT = 2048     # every float dtype (float16 too) holds the integers up to this exactly
_CALL = re.compile(r"[\w)\]]\s*\(")   # a name, a call or an item called
_COMMENT = re.compile(r"#.*")   # (the AST is checked for calls too: this only saves a parse)


def _weak_scalars():
    """NumPy 2's promotion (NumPy 2.0 and 2.1 could still be switched to the legacy one)."""
    state = getattr(numpy, "_get_promotion_state", None)
    return _WEAK_SCALARS and (state is None or state() == "weak")


class Fresh:
    """``results``: {index in the returned tuple: position of the argument it is a new
    array like}; ``inlined``: the gradient's statements as lines reading the arguments as
    ``a0, a1, ...``, and ``returned``, the expressions it returns in those names (None
    where the gradient reads anything else)."""

    def __init__(self, results=None, inlined=None, returned=None):
        self.results = results or {}
        self.inlined = inlined
        self.returned = returned


def fresh_results(source, n_args, arrays):
    """``source``: one generated function of ``n_args`` positional parameters returning a
    tuple; ``arrays``: the positions whose argument is a float ndarray of rank >= 1."""
    if not _weak_scalars() or not arrays or source is None or len(source) > _MAX_SOURCE:
        return Fresh()
    code = _COMMENT.sub("", source)
    if _CALL.search(code, code.find(":\n")):
        return Fresh()   # most gradients call something: no parse
    try:
        function = ast.parse(source).body[0]
    except (SyntaxError, IndexError):
        return Fresh()
    if not isinstance(function, ast.FunctionDef) or function.args.vararg is not None \
            or function.args.kwonlyargs or function.args.kwarg is not None:
        return Fresh()
    params = function.args.posonlyargs + function.args.args
    if len(params) != n_args or any(isinstance(n, ast.Call) for n in ast.walk(function)):
        return Fresh()   # a call might change an array it is given (its flags, its shape)
    env = {p.arg: ("input", k) for k, p in enumerate(params) if k in arrays}
    bound = {p.arg for p in params}
    reads_only_locals = True
    kept = []
    for s in function.body:
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            continue   # a docstring
        reads_only_locals &= all(n.id in bound for n in ast.walk(s) if isinstance(n, ast.Name)
                                 and isinstance(n.ctx, ast.Load))
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            value = _value(s.value, env)
            name = s.targets[0].id
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
            bound.add(name)
            kept.append(s)
            continue
        if isinstance(s, ast.Return) and isinstance(s.value, ast.Tuple):
            results = {}
            for j, e in enumerate(s.value.elts):
                value = _value(e, env)
                if isinstance(value, tuple) and value[0] == "new":
                    results[j] = value[1]
            if not (reads_only_locals and results):
                return Fresh(results)
            return Fresh(results, *_inlined(kept, s.value.elts, params, arrays))
        return Fresh()
    return Fresh()


def _value(e, env):
    """("input", k): argument k itself; ("new", k): a new array like argument k;
    NUMBER; None: not known."""
    if isinstance(e, ast.Constant):
        return NUMBER if type(e.value) in (int, float) else None
    if isinstance(e, ast.Name):
        return env.get(e.id)
    if isinstance(e, ast.Attribute):
        return NUMBER if e.attr == "size" and isinstance(_value(e.value, env), tuple) else None
    if isinstance(e, ast.BoolOp):
        return NUMBER if all(_value(v, env) == NUMBER for v in e.values) else None
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        a = _value(e.operand, env)
        return ("new", a[1]) if isinstance(a, tuple) else a
    if isinstance(e, ast.BinOp) and isinstance(e.op, _OPS):
        a, b = _value(e.left, env), _value(e.right, env)
        if a == NUMBER and b == NUMBER:
            return NUMBER
        arrays = [v for v in (a, b) if isinstance(v, tuple)]
        if arrays and all(v == NUMBER or isinstance(v, tuple) for v in (a, b)) \
                and len({k for _, k in arrays}) == 1:
            return ("new", arrays[0][1])
    return None


def _inlined(statements, returned, params, arrays):
    """The lines of ``statements`` and the ``returned`` expressions, with a parameter
    written ``a0, a1, ...`` (bound from them where the gradient rebinds it), every other
    name ``n`` written ``i_n`` (apart from the hot call's own names), and small integer
    literals that meet an array written as floats."""
    env = {p.arg: ("input", k) for k, p in enumerate(params) if k in arrays}
    stored = {s.targets[0].id for s in statements}
    names = {p.arg: f"a{k}" for k, p in enumerate(params) if p.arg not in stored}
    lines = [f"i_{p.arg} = a{k}" for k, p in enumerate(params) if p.arg in stored]
    for s in statements:   # (the tree is this call's own)
        s.value = _FloatLiterals(env).visit(s.value)
        name = s.targets[0].id
        value = _value(s.value, env)
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
        _rename(s, names)
        lines.append(ast.unparse(s))
    exprs = []
    for e in returned:
        e = _FloatLiterals(env).visit(e)
        _rename(e, names)
        exprs.append(ast.unparse(e))
    return lines, exprs


def _rename(node, names):
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            n.id = names.get(n.id) or "i_" + n.id


class _FloatLiterals(ast.NodeTransformer):
    """``x + 2`` -> ``x + 2.0`` where ``x`` is a float array (``env``) and the integer is
    exactly a float of every float dtype."""

    def __init__(self, env):
        self.env = env

    def visit_BinOp(self, e):
        self.generic_visit(e)
        if isinstance(e.op, _OPS):
            for side, other in (("left", e.right), ("right", e.left)):
                c = getattr(e, side)
                if isinstance(c, ast.Constant) and type(c.value) is int and abs(c.value) <= _EXACT_INT \
                        and isinstance(_value(other, self.env), tuple):
                    setattr(e, side, ast.Constant(value=float(c.value), kind=None))
        return e
