"""Gradient checking against central finite differences.

The tools the test suite (and users) compare srcgrad's gradients with:

* ``numerical_grad(f, args, wrt)``: central differences in float64, one pair
  of evaluations per input entry.
* ``check_grads(f, args, wrt)``: ``srcgrad.grad`` against ``numerical_grad``,
  entry by entry; raises ``GradcheckError`` naming the worst entry.
* ``gradcheck(f, args, wrt)`` (``torch.autograd.gradcheck``): ``check_grads``
  with PyTorch-like tolerances; ``gradgradcheck(f, args, wrt)`` checks the
  second derivative ``api.grad(api.grad(f))`` against finite
  differences of ``api.grad(f)``.
* ``compare_grads(analytic, numeric)``: the entry-by-entry comparison alone.
* ``check_vjp(f, args, wrt)``: the random dot-product test of autograd's
  ``test_util``: for a random direction ``v`` and a random cotangent ``u``,
  ``<u, J v>`` by two evaluations of ``f`` must equal ``<J^T u, v>`` from
  ``srcgrad.vjp``. Cheap for large inputs.

This module imports NumPy and srcgrad.api (not the ``srcgrad`` package, which
re-exports gradcheck from here), so the package and its checker form no import cycle.

Example:

    >>> import numpy as np
    >>> from srcgrad.testing import numerical_grad
    >>> def f(x):
    ...     return np.sum(x * x)
    >>> numerical_grad(f, (np.array([1.0, 2.0]),), wrt=0).round(6)
    array([2., 4.])
"""

import dataclasses
import inspect
import numbers

import numpy as np

from srcgrad import api, entry, errors, pytree

__all__ = ["numerical_grad", "check_grads", "check_vjp", "gradcheck", "gradgradcheck",
           "compare_grads", "random_cotangent", "to_numpy"]


# ----- Values -----

def to_numpy(value):
    """A NumPy view of ``value``: CuPy arrays are copied to the host."""
    if type(value).__module__.startswith("cupy"):
        return value.get()
    return value


def _is_float_scalar(value):
    return isinstance(value, numbers.Real) and not isinstance(
        value, (bool, numbers.Integral, np.ndarray))


def _as_float64(value):
    """``value`` as a float64 copy (Python floats stay Python floats); a structure
    (pytree) leaf by leaf."""
    if pytree.is_node(value):
        return pytree.tree_map(_as_float64, value)
    value = to_numpy(value)
    if isinstance(value, np.ndarray):
        return np.array(value, dtype=np.float64, copy=True)
    if isinstance(value, np.generic):
        return np.float64(value)
    if _is_float_scalar(value):
        return float(value)
    raise TypeError(
        f"cannot take finite differences with respect to a {type(value).__name__}; "
        "only floats and floating-point arrays are differentiable")


def _scalar_size(value):
    return np.size(to_numpy(value)) == 1


def _contract(out, seed):
    """``<out, seed>`` in float64; ``seed=None`` means 1 for a scalar output.

    A tuple (or list) output takes a tuple of seeds, ``None`` for an output that
    is not seeded; a dict output a dict of seeds.
    """
    if pytree.is_dataclass_instance(out) and type(seed) is type(out):   # field by field
        return sum((_contract(getattr(out, f.name), getattr(seed, f.name))
                    for f in dataclasses.fields(out) if getattr(seed, f.name) is not None), 0.0)
    if isinstance(out, dict):
        if not isinstance(seed, dict):
            raise ValueError("grad can be implicitly created only for scalar outputs; this "
                             "function returns a dict: pass grad_outputs={...}")
        return sum((_contract(v, seed[k]) for k, v in out.items() if seed.get(k) is not None), 0.0)
    if isinstance(out, (tuple, list)):
        if seed is None:
            if len(out) == 1:
                return _contract(out[0], None)
            raise ValueError(
                "grad can be implicitly created only for scalar outputs; this function "
                f"returns a tuple of {len(out)} values: pass grad_outputs=(...)")
        if not isinstance(seed, (tuple, list)) or len(seed) != len(out):
            raise ValueError(
                f"grad_outputs must be a tuple of {len(out)} seeds (None for an output "
                "that is not seeded)")
        total = 0.0
        for part, part_seed in zip(out, seed):
            if part_seed is not None:
                total += _contract(part, part_seed)
        return total
    out = np.asarray(to_numpy(out), dtype=np.float64)
    if seed is None:
        if out.size != 1:
            raise ValueError(
                "grad can be implicitly created only for scalar outputs; this function "
                f"returns shape {out.shape}: pass grad_outputs=")
        return float(out.reshape(()))
    seed = np.asarray(to_numpy(seed), dtype=np.float64)
    return float(np.sum(out * seed))


def random_cotangent(out, rng=None):
    """A random seed shaped like ``out`` (a tuple of seeds for a tuple output).

    Python floats get Python floats, arrays get float64 arrays of their shape.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    if isinstance(out, dict):
        return {k: random_cotangent(v, rng) for k, v in out.items()}
    if isinstance(out, (tuple, list)):
        return tuple(random_cotangent(part, rng) for part in out)
    if pytree.is_node(out):   # a dataclass or registered structure: of its structure
        return pytree.tree_map(lambda leaf: random_cotangent(leaf, rng), out)
    value = to_numpy(out)
    if isinstance(value, np.ndarray):
        return rng.uniform(0.5, 1.5, size=value.shape) * rng.choice([-1.0, 1.0], size=value.shape)
    return float(rng.uniform(0.5, 1.5))


# ----- Resolving wrt -----

def _wrt_list(wrt):
    if isinstance(wrt, (tuple, list)):
        return list(wrt), True
    return [wrt], False


def _locate(f, args, kwargs, target):
    """Where ``target`` (a position or a parameter name) lives: ('arg', i) or ('kw', name)."""
    if isinstance(target, bool) or not isinstance(target, (int, str)):
        raise TypeError(f"wrt entries must be ints or str, got {target!r}")
    if isinstance(target, int):
        index = target if target >= 0 else len(args) + target
        if not 0 <= index < len(args):
            raise ValueError(f"wrt={target} is out of range for {len(args)} positional arguments")
        return "arg", index
    if target in kwargs:
        return "kw", target
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    for index, param in enumerate(params):
        if param.name != target:
            continue
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD) and index < len(args):
            return "arg", index
        if param.kind is not param.POSITIONAL_ONLY and param.default is not param.empty:
            return "default", (target, param.default)
    raise ValueError(
        f"numerical_grad cannot differentiate with respect to {target!r}: it is not an "
        "argument of this call (finite differences need an input; a local variable "
        "has none)")


def _describe(f, target):
    name = getattr(f, "__name__", repr(f))
    if isinstance(target, int):
        try:
            params = list(inspect.signature(f).parameters)
            if 0 <= target < len(params):
                return f"{name} w.r.t. argument {target} ({params[target]!r})"
        except (TypeError, ValueError):
            pass
        return f"{name} w.r.t. argument {target}"
    return f"{name} w.r.t. {target!r}"


# ----- Finite differences -----

def numerical_grad(f, args, wrt=0, eps=1e-6, grad_outputs=None, kwargs=None, has_aux=False):
    """The gradient of ``<f(*args), grad_outputs>`` by central differences in float64.

    Args:
        f: the function. Its output may be a scalar, an array (contracted with
            ``grad_outputs``) or a tuple of those (a tuple of seeds, ``None``
            for an output that is not seeded).
        args: the positional arguments, a tuple.
        wrt: an argument position, a parameter name, or a tuple/list of those.
        eps: the step; each entry is moved by ``+eps`` and ``-eps``.
        grad_outputs: the cotangent; default 1 for a scalar output.
        kwargs: keyword arguments for ``f`` (a dict), optional.
        has_aux: ``f`` returns ``(output, aux)``; only ``output`` is differentiated.

    Returns:
        One gradient per ``wrt`` entry (a tuple when ``wrt`` is a tuple/list):
        a Python float for a scalar argument, else a float64 NumPy array of the
        argument's shape.

    Raises:
        ValueError: a non-scalar output without ``grad_outputs``, or a ``wrt``
            that is not an input.
        TypeError: an integer or boolean input in ``wrt``.
    """
    kwargs = dict(kwargs or {})
    args = list(args)
    targets, as_tuple = _wrt_list(wrt)
    places = [_locate(f, args, kwargs, target) for target in targets]
    # Every differentiated input becomes float64 (for the whole evaluation, so
    # that all inputs are at the same precision).
    for kind, where in places:
        if kind == "arg":
            args[where] = _as_float64(args[where])
        elif kind == "kw":
            kwargs[where] = _as_float64(kwargs[where])
        else:
            name, default = where
            kwargs[name] = _as_float64(default)
    # Other array inputs go to the host too, unchanged in dtype.
    args = [a if not hasattr(a, "shape") else to_numpy(a) for a in args]
    seed = grad_outputs
    if seed is not None:
        seed = pytree.tree_map(to_numpy, seed)

    def get(kind, where):
        if kind == "arg":
            return args[where]
        return kwargs[where if kind == "kw" else where[0]]

    def put(kind, where, value):
        if kind == "arg":
            args[where] = value
        else:
            kwargs[where if kind == "kw" else where[0]] = value

    def loss():
        out = f(*args, **kwargs)
        return _contract(out[0] if has_aux else out, seed)

    grads = []
    for kind, where in places:
        base = get(kind, where)
        if pytree.is_node(base):   # a structure: each leaf in turn, the rest held fixed
            leaves = pytree.tree_leaves(base)
            parts = []
            for k, leaf in enumerate(leaves):
                def at(moved, k=k):
                    return pytree.rebuild(base, iter(leaves[:k] + [moved] + leaves[k + 1:]))
                parts.append(_leaf_grad(leaf, at, lambda value, kind=kind, where=where:
                                        put(kind, where, value), loss, eps))
            put(kind, where, base)
            grads.append(pytree.rebuild(base, iter(parts)))
            continue
        if isinstance(base, np.ndarray):
            grad = np.zeros(base.shape, dtype=np.float64)
            for k in range(base.size):
                plus = base.copy()
                plus.flat[k] += eps
                put(kind, where, plus)
                f_plus = loss()
                minus = base.copy()
                minus.flat[k] -= eps
                put(kind, where, minus)
                f_minus = loss()
                grad.flat[k] = (f_plus - f_minus) / (2.0 * eps)
            put(kind, where, base)
        else:
            put(kind, where, type(base)(base + eps))
            f_plus = loss()
            put(kind, where, type(base)(base - eps))
            f_minus = loss()
            put(kind, where, base)
            grad = float((f_plus - f_minus) / (2.0 * eps))
        grads.append(grad)
    return tuple(grads) if as_tuple else grads[0]


def _leaf_grad(base, at, put, loss, eps):
    """Central differences of ``loss`` in one leaf ``base`` of a structure; ``put(at(v))``
    installs the structure with that leaf replaced by ``v``."""
    if isinstance(base, np.ndarray):
        grad = np.zeros(base.shape, dtype=np.float64)
        for k in range(base.size):
            plus = base.copy()
            plus.flat[k] += eps
            put(at(plus))
            f_plus = loss()
            minus = base.copy()
            minus.flat[k] -= eps
            put(at(minus))
            f_minus = loss()
            grad.flat[k] = (f_plus - f_minus) / (2.0 * eps)
        return grad
    put(at(type(base)(base + eps)))
    f_plus = loss()
    put(at(type(base)(base - eps)))
    f_minus = loss()
    return float((f_plus - f_minus) / (2.0 * eps))


# ----- Comparisons -----

def _compare(analytic, numeric, what, atol, rtol):
    """Raise GradcheckError unless ``analytic`` matches ``numeric`` entry-wise; a
    structure (pytree) must match in structure, then leaf by leaf."""
    GradcheckError = errors.GradcheckError

    if pytree.is_node(numeric) and numeric is not None:
        if not pytree.is_node(analytic) or analytic is None or \
                pytree.tree_key(analytic, lambda v: 0) != pytree.tree_key(numeric, lambda v: 0):
            raise GradcheckError(f"gradient of {what} is {analytic!r}, not a structure like "
                                 f"the input's: {numeric!r}")
        for (path, a), (_, n) in zip(pytree.leaves_with_paths(analytic, ""),
                                     pytree.leaves_with_paths(numeric, "")):
            _compare(a, n, what + path, atol, rtol)
        return

    if analytic is None:
        raise GradcheckError(f"gradient of {what} is None; finite differences give {numeric!r}")
    a = np.asarray(to_numpy(analytic))
    n = np.asarray(numeric, dtype=np.float64)
    if a.shape != n.shape:
        raise GradcheckError(
            f"gradient of {what} has shape {a.shape}; the input has shape {n.shape}")
    if a.dtype.kind not in "fc":
        raise GradcheckError(f"gradient of {what} has dtype {a.dtype}, not a floating type")
    a64 = a.astype(np.float64)
    if not np.all(np.isfinite(a64)):
        bad = np.argwhere(~np.isfinite(a64))[0] if a64.ndim else ()
        raise GradcheckError(
            f"gradient of {what} is not finite at entry {tuple(int(i) for i in bad)}: "
            f"srcgrad {a64[tuple(bad)]!r}, finite differences {n[tuple(bad)]!r}")
    excess = np.abs(a64 - n) / (atol + rtol * np.abs(n))
    if a64.ndim == 0:
        worst = ()
    else:
        worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), excess.shape))
    if excess[worst] > 1.0:
        where = f"entry {worst}" if worst else "the value"
        raise GradcheckError(
            f"gradient of {what} disagrees with central finite differences at {where}: "
            f"srcgrad {float(a64[worst])!r}, finite differences {float(n[worst])!r} "
            f"(|difference| {float(abs(a64[worst] - n[worst])):.3g} > atol {atol:g} + "
            f"rtol {rtol:g} * |finite differences|)\n"
            f"srcgrad:\n{a64!r}\nfinite differences:\n{n!r}")


def check_grads(f, args, wrt=0, atol=1e-6, rtol=1e-5, grad_outputs=None, kwargs=None,
                eps=1e-6, **options):
    """Compare ``api.grad(f, wrt)`` with central finite differences in float64.

    Args:
        f: the function to differentiate (its source must be available).
        args: positional arguments, a tuple.
        wrt: as in ``srcgrad.grad``: a position, a parameter name, or a tuple/list.
        atol, rtol: an entry passes when
            ``|srcgrad - fd| <= atol + rtol * |fd|``.
        grad_outputs: the cotangent, passed to the gradient and to the finite
            differences alike (None: the scalar default). The string
            ``"random"`` makes a fixed random seed shaped like the output.
        kwargs: keyword arguments for ``f`` (a dict).
        eps: the finite-difference step.
        **options: more options for ``srcgrad.grad`` (``allow_unused``...).

    Returns:
        True.

    Raises:
        errors.GradcheckError: naming the worst entry and both values.
    """

    kwargs = dict(kwargs or {})
    has_aux = bool(options.get("has_aux"))
    if isinstance(grad_outputs, str) and grad_outputs == "random":
        out = f(*args, **kwargs)
        grad_outputs = random_cotangent(out[0] if has_aux else out, np.random.default_rng(0))
    gradient = api.grad(f, wrt=wrt, **options)
    grads = gradient(*args, grad_outputs=grad_outputs, **kwargs)
    # A repeated call runs what the first one prepared (one composed function): check it too.
    again = gradient(*args, grad_outputs=grad_outputs, **kwargs)
    if has_aux:   # (grads, aux): the aux carries no gradient
        grads, again = grads[0], again[0]
    numeric = numerical_grad(f, args, wrt=wrt, eps=eps, grad_outputs=grad_outputs,
                             kwargs=kwargs, has_aux=has_aux)
    _compare_all(f, wrt, grads, numeric, atol, rtol)
    _compare_all(f, wrt, again, numeric, atol, rtol, prefix="a repeated call: ")
    return True


def _compare_all(f, wrt, grads, numeric, atol, rtol, prefix=""):
    """Compare one gradient per ``wrt`` entry (a tuple when ``wrt`` is a tuple/list)."""
    targets, as_tuple = _wrt_list(wrt)
    if as_tuple:
        if not isinstance(grads, tuple) or len(grads) != len(targets):
            GradcheckError = errors.GradcheckError
            raise GradcheckError(
                f"srcgrad.grad with wrt={wrt!r} returned {type(grads).__name__} "
                f"{grads!r}, expected a tuple of {len(targets)} gradients")
    else:
        grads, numeric = (grads,), (numeric,)
    for target, analytic, expected in zip(targets, grads, numeric):
        _compare(analytic, expected, prefix + _describe(f, target), atol, rtol)


def compare_grads(analytic, numeric, what="the input", atol=1e-5, rtol=1e-3):
    """Compare a gradient with a reference (finite differences) entry by entry.

    An entry passes when ``|analytic - numeric| <= atol + rtol * |numeric|``.

    Returns:
        True.

    Raises:
        errors.GradcheckError: a shape or dtype mismatch, a non-finite
            entry, or the worst entry out of tolerance: the message names its
            index and gives both values.
    """
    _compare(analytic, numeric, what, atol, rtol)
    return True


def gradcheck(f, args, wrt=0, eps=1e-6, atol=1e-5, rtol=1e-3, *, grad_outputs=None,
              kwargs=None, raise_exception=True, **options):
    """``api.grad(f, wrt)`` against central finite differences in float64.

    Like ``torch.autograd.gradcheck``: the finite differences are taken in
    float64 (the differentiated inputs are cast); the analytic gradient is
    computed at the inputs as given.

    Args:
        f: the function (its source must be available).
        args: positional arguments, a tuple.
        wrt: a position, a parameter name, or a tuple/list of those.
        eps: the finite-difference step.
        atol, rtol: an entry passes when ``|srcgrad - fd| <= atol + rtol * |fd|``.
        grad_outputs: the cotangent for a non-scalar output (``"random"``: a
            fixed random one).
        kwargs: keyword arguments for ``f`` (a dict).
        raise_exception: False returns False instead of raising.
        **options: more options for ``srcgrad.grad`` (``allow_unused``,
            ``has_aux``: ``f`` returns ``(output, aux)`` and only ``output`` is checked...).

    Returns:
        True (or False when ``raise_exception=False`` and the check fails).

    Raises:
        errors.GradcheckError: naming the worst entry (its index) and
            both values.
    """
    GradcheckError = errors.GradcheckError

    try:
        return check_grads(f, args, wrt=wrt, atol=atol, rtol=rtol, grad_outputs=grad_outputs,
                           kwargs=kwargs, eps=eps, **options)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def gradgradcheck(f, args, wrt=0, eps=1e-6, atol=1e-5, rtol=1e-3, *, gradgrad_outputs=None,
                  kwargs=None, raise_exception=True):
    """The second derivative ``api.grad(api.grad(f))`` against finite differences.

    ``g = api.grad(f, wrt)`` is made a plain function; its own gradient
    with respect to ``wrt`` (contracted with ``gradgrad_outputs`` when ``g``'s
    output is not a scalar) is compared with central differences of ``g`` in
    float64. ``f`` must have a scalar output, and srcgrad must be able to
    differentiate its gradient again (loop code through an hvp: nested.py).

    Args:
        f, args, wrt, eps, atol, rtol, kwargs, raise_exception: as in ``gradcheck``.
        gradgrad_outputs: the cotangent of the first gradient; default 1 when
            it is a scalar, else a fixed random one shaped like it.

    Returns:
        True (or False when ``raise_exception=False`` and the check fails).

    Raises:
        errors.GradcheckError: naming the worst entry and both values.
    """
    GradcheckError = errors.GradcheckError

    kwargs = dict(kwargs or {})
    target = entry.variadic(f)
    if target is not None:   # f(w, *xs): the function of these arguments' count
        f = entry.fixed_arity(target, len(args), tuple(sorted(kwargs)))
    if api._any_node(list(args) + list(kwargs.values())):   # structures: the GradFunction
        first = api.grad(f, wrt=wrt, materialize_grads=True)
        second = api.grad(api.grad(f, wrt=wrt), wrt=wrt)
    else:   # the composed gradient, for arrays and floats
        first = api.grad(f, wrt=wrt).as_function()
        second = api.grad(first, wrt=wrt)
    if gradgrad_outputs is None:
        out = first(*args, **kwargs)
        if pytree.is_node(out) or not _scalar_size(out):
            gradgrad_outputs = random_cotangent(out, np.random.default_rng(0))
    elif isinstance(gradgrad_outputs, str) and gradgrad_outputs == "random":
        gradgrad_outputs = random_cotangent(first(*args, **kwargs), np.random.default_rng(0))
    try:
        grads = second(*args, grad_outputs=gradgrad_outputs, **kwargs)
        numeric = numerical_grad(first, args, wrt=wrt, eps=eps, grad_outputs=gradgrad_outputs,
                                 kwargs=kwargs)
        # ``first`` is named grad_<f>: "gradient of grad_f w.r.t. argument 0 ('x') ...".
        _compare_all(first, wrt, grads, numeric, atol, rtol)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def check_vjp(f, args, wrt=0, atol=1e-6, rtol=1e-5, grad_outputs=None, kwargs=None,
              eps=1e-6, seed=0):
    """The random dot-product test: ``<J^T u, v>`` from ``srcgrad.vjp`` vs ``<u, J v>``.

    ``v`` is a random direction in the space of the ``wrt`` inputs, ``u`` a random
    cotangent (or ``grad_outputs``); ``<u, J v>`` comes from two evaluations of
    ``f`` at ``x +- eps * v`` in float64 (autograd's ``check_vjp``).

    Returns:
        True.

    Raises:
        errors.GradcheckError: the two numbers disagree.
    """
    GradcheckError = errors.GradcheckError

    rng = np.random.default_rng(seed)
    kwargs = dict(kwargs or {})
    targets, as_tuple = _wrt_list(wrt)
    out = f(*args, **kwargs)
    u = random_cotangent(out, rng) if grad_outputs is None else grad_outputs

    _, backward = api.vjp(f, wrt=wrt)(*args, **kwargs)
    grads = backward(grad_outputs=u)
    if not as_tuple:
        grads = (grads,)

    places = [_locate(f, list(args), kwargs, target) for target in targets]
    base_args = list(args)
    base_kwargs = dict(kwargs)
    directions = []
    for kind, where in places:
        value = base_args[where] if kind == "arg" else base_kwargs.get(
            where if kind == "kw" else where[0], None if kind == "kw" else where[1])
        value = _as_float64(value)
        if kind == "arg":
            base_args[where] = value
        else:
            base_kwargs[where if kind == "kw" else where[0]] = value
        if isinstance(value, np.ndarray):
            directions.append(rng.standard_normal(value.shape))
        else:
            directions.append(float(rng.standard_normal()))

    analytic = 0.0
    for g, v in zip(grads, directions):
        analytic += float(np.sum(np.asarray(to_numpy(g), dtype=np.float64) * v))

    def at(step):
        moved_args, moved_kwargs = list(base_args), dict(base_kwargs)
        for (kind, where), v in zip(places, directions):
            if kind == "arg":
                moved_args[where] = moved_args[where] + step * v
            else:
                key = where if kind == "kw" else where[0]
                moved_kwargs[key] = moved_kwargs[key] + step * v
        return _contract(f(*moved_args, **moved_kwargs), u)

    numeric = (at(eps) - at(-eps)) / (2.0 * eps)
    if abs(analytic - numeric) > atol + rtol * abs(numeric):
        raise GradcheckError(
            f"random dot-product test of {getattr(f, '__name__', f)} w.r.t. {wrt!r} "
            f"failed: <vjp(u), v> = {analytic!r} from srcgrad, <u, J v> = {numeric!r} "
            "from central finite differences")
    return True
