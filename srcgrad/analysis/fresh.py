"""Which results of a composed gradient are certainly new arrays like one of its arguments.

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
"""

import gast
import numpy

_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div)
NUMBER = "number"   # a Python int or float
_WEAK_SCALARS = int(numpy.__version__.split(".")[0]) >= 2   # NEP 50


def fresh_results(source, n_args, arrays):
    """``source``: one generated function of ``n_args`` positional parameters returning a
    tuple; ``arrays``: the positions whose argument is a native float ndarray. Returns
    {index in the returned tuple: the position of the argument its value is a new array
    like}, empty where nothing is known."""
    if not _WEAK_SCALARS or not arrays or source is None:
        return {}
    try:
        function = gast.parse(source).body[0]
    except (SyntaxError, IndexError):
        return {}
    if not isinstance(function, gast.FunctionDef) or function.args.vararg is not None:
        return {}
    params = function.args.posonlyargs + function.args.args
    if len(params) != n_args or any(isinstance(n, gast.Call) for n in gast.walk(function)):
        return {}   # a call might change an array it is given (its flags, its shape)
    env = {p.id: ("input", k) for k, p in enumerate(params) if k in arrays}
    for s in function.body:
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant):
            continue   # a docstring
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            value = _value(s.value, env)
            if value is None:
                env.pop(s.targets[0].id, None)
            else:
                env[s.targets[0].id] = value
            continue
        if isinstance(s, gast.Return) and isinstance(s.value, gast.Tuple):
            found = {}
            for j, e in enumerate(s.value.elts):
                value = _value(e, env)
                if isinstance(value, tuple) and value[0] == "new":
                    found[j] = value[1]
            return found
        return {}
    return {}


def _value(e, env):
    """("input", k): argument k itself; ("new", k): a new array like argument k;
    NUMBER; None: not known."""
    if isinstance(e, gast.Constant):
        return NUMBER if type(e.value) in (int, float) else None
    if isinstance(e, gast.Name):
        return env.get(e.id)
    if isinstance(e, gast.Attribute):
        return NUMBER if e.attr == "size" and isinstance(_value(e.value, env), tuple) else None
    if isinstance(e, gast.BoolOp):
        return NUMBER if all(_value(v, env) == NUMBER for v in e.values) else None
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        a = _value(e.operand, env)
        return ("new", a[1]) if isinstance(a, tuple) else a
    if isinstance(e, gast.BinOp) and isinstance(e.op, _OPS):
        a, b = _value(e.left, env), _value(e.right, env)
        if a == NUMBER and b == NUMBER:
            return NUMBER
        arrays = [v for v in (a, b) if isinstance(v, tuple)]
        if arrays and all(v == NUMBER or isinstance(v, tuple) for v in (a, b)) \
                and len({k for _, k in arrays}) == 1:
            return ("new", arrays[0][1])
    return None
