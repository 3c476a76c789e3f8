"""Table test of the tangent (JVP) rules, without the compiler.

For every row of tests/test_rules.py whose primitive has a tangent rule (hand-written,
a ``linear(...)`` declaration, or read off the adjoint), the rule's template is
instantiated as forward mode does (transform/tangent_rules.py), executed with ``xp``
bound to NumPy, and compared with the central finite difference of the primitive along
random tangents of its float arguments, in float64. A rule that declines an argument's
tangent (``no_tangent``: a shape or an index) gets none for it.
"""

import dataclasses
import warnings
import zlib

import gast
import numpy as np
import pytest

import srcgrad.rules as R
from srcgrad import runtime as rt
from srcgrad.naming import Namer
from srcgrad.pytree import Fields
from srcgrad.rules import Method
from srcgrad.transform import tangent_rules

import test_rules as T

H = 1e-6


def _has_tangent(case):
    try:
        return tangent_rules.lookup(case.primitive) is not None
    except TypeError:
        return False


ROWS = [c for c in T.CASES if _has_tangent(c)]


def _name(n):
    return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)


def run_tangent(primitive, args, kwargs, tangents, y):
    """The tangent rule of ``primitive`` at ``args`` along ``tangents`` (None: none),
    instantiated and executed as forward mode inlines it."""
    template = tangent_rules.lookup(primitive)
    bound = template.signature.bind(*args, **kwargs)
    passed = set(bound.arguments)
    bound.apply_defaults()
    env = {"xp": np, "rt": rt, "__y": y}
    subs = {template.output: _name("__y")}
    for k, p in enumerate(template.params):
        value = bound.arguments[p.name]
        tangent = tangents.get(p.name)
        if p.kind == p.VAR_POSITIONAL:
            names = [f"__a{k}_{j}" for j in range(len(value))]
            env.update(zip(names, value))
            subs[p.name] = gast.Tuple(elts=[_name(n) for n in names], ctx=gast.Load())
            if tangent is not None:
                env[f"__t{k}"] = tangent
                subs["t_" + p.name] = _name(f"__t{k}")
            else:
                subs["t_" + p.name] = None
            continue
        if p.name not in passed and p.kind is not p.VAR_KEYWORD:
            subs[p.name] = tangent_rules.default_value(value)   # as forward mode writes a default
        else:
            env[f"__a{k}"] = value
            subs[p.name] = _name(f"__a{k}")
        if tangent is not None:
            env[f"__t{k}"] = tangent
            subs["t_" + p.name] = _name(f"__t{k}")
        else:
            subs["t_" + p.name] = None
    stmts, result = tangent_rules.instantiate(template, subs, Namer(env))
    if result is None:
        return None
    body = stmts + [gast.Assign(targets=[gast.Name(id="__out", ctx=gast.Store(), annotation=None,
                                                   type_comment=None)], value=result, type_comment=None)]
    module = gast.Module(body=body, type_ignores=[])
    code = compile(gast.gast_to_ast(gast.fix_missing_locations(module)), "<tangent>", "exec")
    exec(code, env)
    return env["__out"]


def _param_of(template, args, kwargs):
    """Map each positional index / keyword of a call onto the template's parameter."""
    out = {}
    pos = 0
    for p in template.params:
        if p.kind == p.VAR_POSITIONAL:
            out.update({j: p.name for j in range(pos, len(args))})
            pos = len(args)
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and pos < len(args):
            out[pos] = p.name
            pos += 1
    out.update({k: k for k in kwargs})
    return out


def _fields_of(v):
    """A dataclass instance as the dict of its fields (its tangent is another instance)."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
    return v


def _flat_like(v, like):
    """``v`` flattened as ``like`` is, zeros where ``v`` has None (a tangent that is zero)."""
    v, like = _fields_of(v), _fields_of(like)
    if isinstance(like, (list, tuple)):
        items = list(v) if isinstance(v, (list, tuple)) else [None] * len(like)
        return [x for item, ref in zip(items, like) for x in _flat_like(item, ref)]
    if isinstance(like, dict):
        return [x for k, ref in like.items() for x in _flat_like(v[k] if isinstance(v, dict) else None, ref)]
    if like is None or isinstance(like, str):   # a dict's key has no tangent
        return []
    if v is None:
        v = np.zeros(np.shape(like))
    if np.iscomplexobj(like):   # a complex value: its real and imaginary parts compared
        v = np.asarray(v, dtype=np.complex128)
        return [v.real, v.imag]
    return [np.asarray(v, dtype=np.float64)]


def _flat(v):
    v = _fields_of(v)
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    if isinstance(v, dict):
        return [x for item in v.values() for x in _flat(item)]
    if v is None or isinstance(v, str):
        return []
    if np.iscomplexobj(v):
        v = np.asarray(v)
        return [v.real.astype(np.float64), v.imag.astype(np.float64)]
    return [np.asarray(v, dtype=np.float64)]


def _random_like(v, rng):
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return type(v)(**{k: _random_like(x, rng) for k, x in _fields_of(v).items()})
    if isinstance(v, (list, tuple)):
        return type(v)(_random_like(x, rng) for x in v) if not hasattr(v, "_fields") else tuple(
            _random_like(x, rng) for x in v)
    if isinstance(v, dict):
        return {k: _random_like(x, rng) for k, x in v.items()}
    if isinstance(v, (float, int)) and not isinstance(v, np.ndarray):
        return float(rng.standard_normal())
    return rng.standard_normal(np.shape(v))


def check_tangent(case):
    """Each float argument in turn (as tests/test_rules.py checks the adjoint): the rule's
    tangent along a random direction equals the central difference of the primitive."""
    template = tangent_rules.lookup(case.primitive)
    args, kwargs = list(case.args), dict(case.kwargs)
    params = _param_of(template, args, kwargs)
    positions = case.wrt if case.wrt is not None else [
        j for j, a in enumerate(args) if T.is_floaty(a)] + [k for k, v in kwargs.items() if T.is_floaty(v)]
    positions = [j for j in positions if params.get(j) is not None
                 and params[j] not in template.no_tangent and params[j] not in T.NONDIFF_PARAMS
                 and not template.ignores(params[j])]   # forward mode refuses those
    if not positions:
        pytest.skip("no argument with a tangent")
    rng = np.random.default_rng(zlib.crc32(case.label().encode()))
    for j in positions:
        value = args[j] if isinstance(j, int) else kwargs[j]
        d = _random_like(value, rng)
        if case.direction is not None:
            d = case.direction(d)
        d = T._zero_nan_directions(value, d)

        def at(t):
            a = [T.shifted(v, d, t) if k == j else T._copy(v) for k, v in enumerate(args)]
            kw = {k: T.shifted(v, d, t) if k == j else T._copy(v) for k, v in kwargs.items()}
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                return case.call(a, kw)

        name = params[j]
        p = next(q for q in template.params if q.name == name)
        if p.kind == p.VAR_POSITIONAL:
            start = min(k for k, v in params.items() if v == name)
            count = sum(1 for v in params.values() if v == name)
            tangent = [d if start + i == j else rt.tangent_zero(args[start + i]) for i in range(count)]
        else:
            tangent = d
        got = run_tangent(case.primitive, [T._copy(a) for a in args],
                          {k: T._copy(v) for k, v in kwargs.items()}, {name: tangent}, at(0.0))
        plus, minus = at(case.eps), at(-case.eps)
        want = [(a - b) / (2 * case.eps) for a, b in zip(_flat(plus), _flat(minus))]
        got = _flat_like(got, plus)
        where = f"{case.label()} along [{j}]"
        assert len(got) == len(want), f"{where}: {len(got)} tangents for {len(want)} outputs"
        for g, w in zip(got, want):
            if g.shape != w.shape:   # a tangent of 0.0 where nothing reached
                assert g.ndim == 0 and float(g) == 0.0, f"{where}: tangent shape {g.shape} != {w.shape}"
                g = np.zeros_like(w)
            scale = float(np.max(np.abs(w), initial=1.0))   # (as the adjoint's inner product)
            np.testing.assert_allclose(g, w, rtol=max(case.rtol, 1e-5),
                                       atol=max(case.atol, 1e-6) + case.rtol * scale, err_msg=where)


@pytest.mark.parametrize("case", ROWS, ids=[c.label() for c in ROWS])
def test_tangent_rule_matches_finite_differences(case):
    check_tangent(case)


r = T.r
C = T.C
# Helpers with a tangent but no adjoint (a third derivative through them is refused):
TANGENT_ONLY = [
    C(rt.append_vjp, r(7), r(4), r(3), _wrt=[0]), C(rt.append_vjp, r(2, 5), r(2, 3), r(2, 2), 1, _wrt=[0]),
    C(rt.pad_constant_vjp, r(5, 6), r(3, 4), 1, 0.5, _wrt=[0]),
    C(rt.expand_to, r(3), r(3, 4), 1, _wrt=[0]),
    C(rt.tangent_like, r(3, 1), r(3, 4), _wrt=[0]),
    C(rt.list_vjp, [r(3), r(3)], r(2, 3), _wrt=[0]),   # list(a)'s adjoint: the rows stacked
    # the adjoints of the helpers of list/dict methods and namedtuples (transform/methods.py)
    C(rt.seq_without_vjp, [r(3), r(2)], [r(3), r(4), r(2)], 1, _wrt=[0]),
    C(rt.seq_without_vjp, {"a": r(3), "b": r(2)}, {"a": r(3), "b": r(2), "c": 0.5}, "c", _wrt=[0]),
    C(rt.dict_merge_vjp, {"a": r(3), "b": r(2)}, {"a": r(3), "b": 0.5}, {"b": r(2)}, False, _wrt=[0]),
    C(rt.dict_merge_vjp, {"a": r(3), "b": r(2)}, {"a": r(3), "b": 0.5}, {"b": r(2)}, True, _wrt=[0]),
    C(rt.or_vjp, {"a": r(3), "b": r(2)}, {"a": r(3), "b": 0.5}, {"b": r(2)}, True, _wrt=[0]),
    C(rt.namedtuple_items_vjp, [r(3), r(2)], [r(3), r(2)], _wrt=[0]),
    C(rt.namedtuple_replace_vjp, [r(3), r(2)], T._PAIR(r(3), r(2)), ("y",), True, _wrt=[0]),
    C(rt.namedtuple_replace_vjp, [r(3), r(2)], T._PAIR(r(3), r(2)), ("y",), None, _wrt=[0]),
    C(rt.dataclass_items_vjp, Fields({"x": r(3), "y": r(2)}), ("x", "y"), _wrt=[0]),
    C(rt.dataclass_kept_vjp, Fields({"x": r(3), "y": r(2)}), ("y",), _wrt=[0]),
    C(rt.rfft_vjp, r(3), r(5), None, -1, _wrt=[0]), C(rt.rfft_vjp, r(2, 3), r(4, 3), None, 0, _wrt=[0]),
    C(rt.fft_vjp, r(4), r(4), None, -1, False, _wrt=[0]), C(rt.fft_vjp, r(2, 3), r(2, 3), None, 0, True, _wrt=[0]),
]


@pytest.mark.parametrize("case", TANGENT_ONLY, ids=[c.label() for c in TANGENT_ONLY])
def test_tangent_of_a_helper_without_an_adjoint_matches_finite_differences(case):
    check_tangent(case)


def test_most_rows_have_a_tangent_and_every_linear_declaration_is_exercised():
    linear = {key for key, v in R.TANGENTS.items() if isinstance(v, R.Linear)}
    tested = {R._key(c.primitive) for c in ROWS + TANGENT_ONLY}
    untested = [k for k in linear if k not in tested and k is not rt.tape_pop]
    assert not untested, f"linear declarations without a row in test_rules.py: {untested}"
    assert len(ROWS) > 300


def test_a_sum_with_a_wider_constant_has_a_tangent_of_the_sums_shape():
    """``c + x`` with ``c`` (3, 4) constant and ``x`` (3, 1): the tangent is broadcast
    (it was ``x``'s own, and ``np.sum`` of it a quarter of the answer)."""
    import srcgrad as sg
    x, c = np.array([[0.3], [-1.2], [0.7]]), np.arange(12.0).reshape(3, 4)
    t = np.array([[1.0], [2.0], [-0.5]])
    for f in (_wide_sum, _wide_difference):
        _, got = sg.jvp(f, (x, c), (t, None))
        want = (f(x + 1e-6 * t, c) - f(x - 1e-6 * t, c)) / 2e-6
        np.testing.assert_allclose(got, want, rtol=1e-6)


def _wide_sum(x, c):
    return np.sum(np.sin(c + x))


def _wide_difference(x, c):
    return np.sum(np.sin(c - x) + np.fmod(x, 3.0) * 0.0 + (x - 2.0))
