"""Every forward-mode and higher-order API on the functions of examples/ (issue 14,
"done when: every API works on the seed examples").

The example scripts are imported as modules (their ``main`` runs only under
``__name__ == "__main__"``). On each differentiable function: ``sg.jvp`` against a
central difference along a random tangent, ``sg.jacfwd`` and ``sg.jacrev`` against
the finite-difference Jacobian; on each scalar-valued one also ``sg.hvp`` and
``sg.hessian`` against finite differences of ``sg.grad``, and ``sg.grad(sg.grad(f))``
against finite differences of ``<sg.grad(f), v>``. All in float64. A function that
returns ``(output, aux)`` (MLP.loss) is differentiated with ``has_aux=True`` by every
API, whose aux must be the function's own. What an API refuses
is listed in REFUSED and must be an ``SrcgradError`` naming the example's file and line;
anything else refused, or a wrong number, fails.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import srcgrad as sg
from srcgrad import pytree

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
H = 1e-6
RTOL, ATOL = 1e-5, 1e-7


def load(name):
    """examples/<name>.py as a module, its main part not run."""
    module_name = f"_example_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


def vec(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def away_from_zero(*shape, seed=0):
    """Entries of size 0.5..1.5 with random signs: no branch or kink is near."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def mlp_case(method):
    """``MLP(...).loss(params, x, labels)`` or ``.forward(params, x)``: params a dict;
    ``loss_value``: the loss without its accuracy, through a method call on the model."""
    mlp = load("mlp_dict_params")
    rng = np.random.default_rng(1)
    x, labels = mlp.make_data(rng, 6)
    params = mlp.init_params(rng, [2, 3, 3])
    args = (params, x) if method == "forward" else (params, x, labels)
    model = mlp.MLP(weight_decay=1e-2)
    if method == "loss_value":
        global MLP_MODEL
        MLP_MODEL = model
        return mlp_loss_value, args, (0,)
    return getattr(model, method), args, (0,)


MLP_MODEL = None   # the model mlp_loss_value calls (set by mlp_case)


def mlp_loss_value(params, x, labels):
    """The MLP's loss without its accuracy: what sg.jvp and sg.jacfwd differentiate (they
    take no has_aux)."""
    return MLP_MODEL.loss(params, x, labels)[0]


# name -> (module, function name, args, positions differentiated)
CASES = {
    "seed0.linear1": ("seed0_variable_grad_fn", "linear1", lambda: (vec(3), vec(3, seed=1), vec(3, seed=2)), (0, 1, 2)),
    "seed0.abs": ("seed0_variable_grad_fn", "abs", lambda: (away_from_zero(3),), (0,)),
    "seed0.f": ("seed0_variable_grad_fn", "f", lambda: (away_from_zero(5),), (0,)),
    "seed0.mul": ("seed0_variable_grad_fn", "mul", lambda: (vec(3), vec(3, seed=1)), (0, 1)),
    "seed0.mul_sum": ("seed0_variable_grad_fn", "mul_sum", lambda: (vec(3), vec(3, seed=1)), (0, 1)),
    "seed0.mul_volatile": ("seed0_variable_grad_fn", "mul_volatile", lambda: (vec(3), vec(3, seed=1)), (0, 1)),
    "seed0.mul_detached": ("seed0_variable_grad_fn", "mul_detached", lambda: (vec(3), vec(3, seed=1)), (0, 1)),
    "seed0.mul_sum_hooked": ("seed0_variable_grad_fn", "mul_sum_hooked", lambda: (vec(3), vec(3, seed=1)), (0, 1)),
    "seed0.poly": ("seed0_variable_grad_fn", "poly", lambda: (vec(3),), (0,)),
    "seed0.poly_sum": ("seed0_variable_grad_fn", "poly_sum", lambda: (vec(3),), (0,)),
    "seed1.add_sum": ("seed1_leaves_accumulation", "add_sum", lambda: (vec(2, 2), vec(2, 2, seed=1)), (0, 1)),
    "seed1.affine_sum": ("seed1_leaves_accumulation", "affine_sum", lambda: (vec(2, 2), vec(2, 2, seed=1), vec(2, 2, seed=2)), (0, 1, 2)),
    "seed1.add_sum_no_grad": ("seed1_leaves_accumulation", "add_sum_no_grad", lambda: (vec(2, 2), vec(2, 2, seed=1)), (0, 1)),
    "seed1.add_sum_mode": ("seed1_leaves_accumulation", "add_sum_mode", lambda: (vec(2, 2), vec(2, 2, seed=1), True), (0, 1)),
    "seed2.mean_square": ("seed2_requires_grad_while", "mean_square", lambda: (vec(2, 2),), (0,)),
    "seed2.sum_square": ("seed2_requires_grad_while", "sum_square", lambda: (vec(2, 2),), (0,)),
    "seed2.double_until": ("seed2_requires_grad_while", "double_until", lambda: (vec(3),), (0,)),
    "seed2.fill": ("seed2_requires_grad_while", "fill", lambda: (vec(1, 2),), (0,)),
    "seed2.square": ("seed2_requires_grad_while", "square", lambda: (vec(3),), (0,)),
    "seed2.square_no_grad": ("seed2_requires_grad_while", "square_no_grad", lambda: (vec(3),), (0,)),
    "seed3.f": ("seed3_hooks_retain_graph", "f", lambda: (vec(4), vec(4, seed=1)), (0, 1)),
    "seed3.f_hooked": ("seed3_hooks_retain_graph", "f_hooked", lambda: (vec(4), vec(4, seed=1)), (0, 1)),
    "seed4.pow_mul_sum": ("seed4_grad_outputs_function", "pow_mul_sum", lambda: (vec(4),), (0,)),
    "seed4.square": ("seed4_grad_outputs_function", "square", lambda: (vec(4),), (0,)),
    "seed4.linear": ("seed4_grad_outputs_function", "linear", lambda: (vec(2, 3), vec(4, 3, seed=1), vec(4, seed=2)), (0, 1, 2)),
    "seed4.func": ("seed4_grad_outputs_function", "func", lambda: (vec(3), vec(3, seed=1), vec(3, seed=2)), (0, 1, 2)),
    "seed4.sort_values": ("seed4_grad_outputs_function", "sort_values", lambda: (vec(4),), (0,)),
    "seed4.use_func": ("seed4_grad_outputs_function", "use_func", lambda: (vec(3), vec(3, seed=1), vec(3, seed=2)), (0, 1)),
    "seed4.use_sort": ("seed4_grad_outputs_function", "use_sort", lambda: (vec(4),), (0,)),
    "quickstart.abs": ("quickstart", "abs", lambda: (away_from_zero(3),), (0,)),
    "quickstart.product": ("quickstart", "product", lambda: (away_from_zero(5),), (0,)),
    "quickstart.mul_sum": ("quickstart", "mul_sum", lambda: (vec(3), vec(3, seed=1)), (0, 1)),
    "quickstart.double_until": ("quickstart", "double_until", lambda: (vec(3),), (0,)),
    "quickstart.fill": ("quickstart", "fill", lambda: (vec(1, 2),), (0,)),
    "quickstart.scaled": ("quickstart", "scaled", lambda: (vec(3),), (0,)),
    "ode.miss": ("ode_rk4_initial_velocity", "miss", lambda: (np.array([4.0, 8.0]), np.array([12.0, 2.0])), (0,)),
    "mlp.MLP.loss": None,
    "mlp.MLP.forward": None,
    "mlp.MLP.loss_value": None,
}

def held(fn, args0):
    """What ``fn`` computes when all of its output is under ``sg.no_grad``/``sg.detach``:
    its value at ``args0``, a constant (srcgrad, as PyTorch, passes no derivative)."""
    value = fn(*args0)
    return lambda *args: value


# The reference the finite differences are taken of, where it is not the function
# itself: a value computed under sg.no_grad is held at its value at the primal.
REFERENCE = {
    "seed0.mul_volatile": held,
    "seed0.mul_detached": held,
    "seed1.add_sum_no_grad": held,
    "seed2.square_no_grad": held,
    "quickstart.scaled": lambda fn, args0: (lambda x: np.sum(x * np.sum(args0[0]))),
}

CUSTOM = "defines no jvp"
DEFINE_JVP = "Define a jvp(ctx, *tangents) staticmethod"   # how to fix it

# (case, api) -> words the SrcgradError must contain besides the example's file and line.
# (jvp and jacfwd of the hooked examples are right since round thirteen: forward mode
# leaves hooks to reverse mode, as PyTorch's does; their hvp, Hessian and gradient of a
# gradient since round fourteen: a hook that only reads the gradient is kept.)
REFUSED = {
    ("seed4.use_func", "jvp"): [CUSTOM, DEFINE_JVP, "line 75"],
    ("seed4.use_func", "jacfwd"): [CUSTOM, DEFINE_JVP, "line 75"],
    ("seed4.use_sort", "jvp"): [CUSTOM, DEFINE_JVP, "line 101"],
    ("seed4.use_sort", "jacfwd"): [CUSTOM, DEFINE_JVP, "line 101"],
}

# Known bugs: a wrong number, or a refusal that does not name the example's line.
XFAIL = {
}


def case(name):
    """(function, args, positions differentiated, reference for finite differences)."""
    if name.startswith("mlp.MLP."):
        fn, args, wrt = mlp_case(name.rsplit(".", 1)[1])
    else:
        module, fname, make_args, wrt = CASES[name]
        fn, args = getattr(load(module), fname), make_args()
    reference = REFERENCE[name](fn, args) if name in REFERENCE else fn
    return fn, args, wrt, reference


# ---- flat views of the differentiated arguments --------------------------------------

def flat_of(args, wrt):
    return np.concatenate([np.ravel(np.asarray(leaf, float))
                           for k in wrt for leaf in pytree.tree_leaves(args[k])])


def unflat(args, wrt, x):
    """``args`` with the differentiated leaves taken from the flat vector ``x``."""
    args, start = list(args), 0
    for k in wrt:
        leaves = []
        for leaf in pytree.tree_leaves(args[k]):
            leaf = np.asarray(leaf, float)
            leaves.append(x[start:start + leaf.size].reshape(leaf.shape))
            start += leaf.size
        args[k] = pytree.rebuild(args[k], iter(leaves))
    return tuple(args)


def primary(out):
    """The differentiated output: the first of an (output, aux) pair (MLP.loss)."""
    return out[0] if isinstance(out, tuple) else out


def flat_out(fn, args, wrt):
    return lambda x: np.ravel(np.asarray(primary(fn(*unflat(args, wrt, x))), float))


def fd_jacobian(g, x, h=H):
    cols = [(g(x + h * e) - g(x - h * e)) / (2 * h) for e in np.eye(x.size)]
    return np.stack(cols, axis=-1)


def blocks_to_matrix(blocks, rows, cols):
    """Leaves of a Jacobian/Hessian structure (row-major blocks) as one matrix."""
    leaves = [np.asarray(b, float) for b in pytree.tree_leaves(blocks)]
    out, k = [], 0
    for r in rows:
        row = []
        for c in cols:
            row.append(leaves[k].reshape(r, c))
            k += 1
        out.append(np.concatenate(row, axis=1))
    assert k == len(leaves)
    return np.concatenate(out, axis=0)


def sizes(args, wrt):
    return [np.size(leaf) for k in wrt for leaf in pytree.tree_leaves(args[k])]


def has_aux(fn):
    """Whether ``fn`` returns ``(output, aux)`` (MLP.loss: the accuracy rides along)."""
    return fn.__name__ == "loss"


def without_aux(fn, args, result):
    """``result`` less its aux, which must be ``fn``'s own aux at ``args``."""
    if not has_aux(fn):
        return result
    *rest, aux = result
    np.testing.assert_array_equal(aux, fn(*args)[1])
    return rest[0] if len(rest) == 1 else tuple(rest)


def grad_all(fn, wrt):
    return sg.grad(fn, wrt=wrt if len(wrt) > 1 else wrt[0], has_aux=has_aux(fn))


def wrt_arg(wrt):
    return wrt if len(wrt) > 1 else wrt[0]


def tangent_like(args, wrt, seed=7):
    x = flat_of(args, wrt)
    t = np.random.default_rng(seed).normal(size=x.size)
    return t, unflat(args, wrt, t)


# ---- the checks -----------------------------------------------------------------------

def check_jvp(fn, args, wrt, reference):
    t, tree = tangent_like(args, wrt)
    tangents = tuple(tree[k] if k in wrt else None for k in range(len(args)))
    _, out_t = without_aux(fn, args, sg.jvp(fn, args, tangents, has_aux=has_aux(fn)))
    x = flat_of(args, wrt)
    g = flat_out(reference, args, wrt)
    want = (g(x + H * t) - g(x - H * t)) / (2 * H)
    np.testing.assert_allclose(np.ravel(np.asarray(primary(out_t), float)), want, rtol=RTOL, atol=ATOL)


def check_jacobian(api):
    def check(fn, args, wrt, reference):
        got = without_aux(fn, args, getattr(sg, api)(fn, wrt=wrt_arg(wrt), has_aux=has_aux(fn))(*args))
        x = flat_of(args, wrt)
        want = fd_jacobian(flat_out(reference, args, wrt), x).reshape(-1, x.size)
        got = blocks_to_matrix(got, [want.shape[0]], sizes(args, wrt))
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    return check


def flat_grad(fn, args, wrt, reference):
    """The gradient as a function of the flat vector: ``sg.grad`` (checked against finite
    differences elsewhere), or, for a value held under no_grad, finite differences of
    the reference (at most linear there, so a wide step is exact)."""
    if reference is not fn:
        f = flat_out(reference, args, wrt)
        return lambda x: fd_jacobian(f, x, h=1e-3)[0]
    gfn = grad_all(fn, wrt)

    def g(x):
        out = gfn(*unflat(args, wrt, x))
        out = out[0] if has_aux(fn) else out
        return np.concatenate([np.ravel(np.asarray(leaf, float)) for leaf in pytree.tree_leaves(out)])
    return g


def check_hvp(fn, args, wrt, reference):
    t, tree = tangent_like(args, wrt)
    tangents = tuple(tree[k] if k in wrt else None for k in range(len(args)))
    got = without_aux(fn, args, sg.hvp(fn, args, tangents, wrt=list(wrt), has_aux=has_aux(fn)))
    got = np.concatenate([np.ravel(np.asarray(leaf, float))
                          for k in wrt for leaf in pytree.tree_leaves(got[k])])
    x, g = flat_of(args, wrt), flat_grad(fn, args, wrt, reference)
    np.testing.assert_allclose(got, (g(x + H * t) - g(x - H * t)) / (2 * H), rtol=RTOL, atol=ATOL)


def check_hessian(fn, args, wrt, reference):
    got = without_aux(fn, args, sg.hessian(fn, wrt=wrt_arg(wrt), has_aux=has_aux(fn))(*args))
    n = sizes(args, wrt)
    got = blocks_to_matrix(got, n, n)
    want = fd_jacobian(flat_grad(fn, args, wrt, reference), flat_of(args, wrt))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def check_grad_of_grad(fn, args, wrt, reference):
    """``sg.grad(sg.grad(f))`` along a random cotangent, for the first argument."""
    k = wrt[0]
    first = sg.grad(fn, wrt=k, has_aux=has_aux(fn))   # with has_aux: (gradient, aux), and so
    v = tangent_like(args, (k,), seed=11)[1][k]    # its gradient too (JAX's jacfwd(grad(...)))
    got = without_aux(fn, args, sg.grad(first, wrt=k, has_aux=has_aux(fn))(*args, grad_outputs=v))
    vflat = flat_of((v,), (0,))
    g = flat_grad(fn, args, (k,), reference)
    x = flat_of(args, (k,))
    want = fd_jacobian(lambda y: np.array([g(y) @ vflat]), x)[0]
    np.testing.assert_allclose(flat_of((got,), (0,)), want, rtol=RTOL, atol=ATOL)


FIRST_ORDER = {"jvp": check_jvp, "jacfwd": check_jacobian("jacfwd"), "jacrev": check_jacobian("jacrev")}
SECOND_ORDER = {"hvp": check_hvp, "hessian": check_hessian, "grad_of_grad": check_grad_of_grad}


def is_scalar(name):
    fn, args, _, _ = case(name)
    return np.ndim(primary(fn(*args))) == 0


PAIRS = [(name, api) for name in CASES for api in FIRST_ORDER]
PAIRS += [(name, api) for name in CASES if is_scalar(name) for api in SECOND_ORDER]


PARAMS = [pytest.param(n, a, id=f"{n}-{a}", marks=[pytest.mark.xfail(strict=True, reason=XFAIL[n, a])]
                       if (n, a) in XFAIL else []) for n, a in PAIRS]


def test_every_refusal_and_known_bug_listed_is_a_case_checked():
    assert set(REFUSED) | set(XFAIL) <= set(PAIRS)
    assert not set(REFUSED) & set(XFAIL)


@pytest.mark.parametrize("name, api", PARAMS)
def test_every_api_is_right_on_every_example_function_or_refuses_naming_its_line(name, api):
    fn, args, wrt, reference = case(name)
    check = {**FIRST_ORDER, **SECOND_ORDER}[api]
    if (name, api) not in REFUSED:
        check(fn, args, wrt, reference)
        return
    with pytest.raises(sg.SrcgradError) as info:
        check(fn, args, wrt, reference)
    message = str(info.value)
    module = CASES[name][0] if CASES[name] else "mlp_dict_params"
    assert f"examples/{module}.py" in message and "line " in message, message
    for word in REFUSED[(name, api)]:
        assert word in message, message
