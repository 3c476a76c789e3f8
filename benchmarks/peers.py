"""Peer implementations: PyTorch (eager, CPU or CUDA), JAX (no jit; jit for reference), HIPS autograd.

Each peer is optional.  ``available()`` says which ones import; ``build(name, workload,
inputs)`` returns ``(call, to_numpy)``: ``call()`` computes the gradient in that
library's idiomatic form, from inputs already converted to its array type (the
conversion is not timed), and ``to_numpy(result)`` gives a tuple of NumPy arrays for
the agreement check.

* PyTorch: the same computation written with ``torch`` ops on tensors with
  ``requires_grad=True``, gradient by ``torch.autograd.grad`` (no accumulation into
  ``.grad``, like srcgrad).  The MLP uses ``F.cross_entropy`` on integer labels.
  ``build("torch", ..., device="cuda")`` puts the tensors on the GPU (``run.py
  --device cuda``; the caller synchronizes the device in each timed call).
* JAX: the workload's own NumPy code run with ``np`` bound to ``jax.numpy``
  (``workloads.rebind``), gradient by ``jax.grad`` (``jax.vjp`` when there is a seed
  or a non-scalar output), float64 enabled.  Without jit every operation dispatches
  eagerly.  ``jax.jit`` is an extra column, only where the code can be traced (no
  Python control flow on array values).
* HIPS autograd: the same NumPy code with ``np`` bound to ``autograd.numpy``,
  gradient by ``autograd.grad`` (``autograd.make_vjp`` when there is a seed).
"""

import importlib

import numpy as np

from workloads import rebind

PEERS = ("torch", "jax", "jax.jit", "autograd")
_MODULES = {"torch": "torch", "jax": "jax", "jax.jit": "jax", "autograd": "autograd"}
_imported = {}


def _import(name):
    mod = _MODULES[name]
    if mod not in _imported:
        try:
            _imported[mod] = importlib.import_module(mod)
        except Exception as exc:  # ImportError, or a broken install
            _imported[mod] = exc
    return _imported[mod]


def _dist_version(dist):
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:
        return "?"


def available(names=PEERS):
    """{peer: version string, or None where it does not import}."""
    found = {}
    for name in names:
        mod = _import(name)
        if isinstance(mod, Exception):
            found[name] = None
        else:
            found[name] = getattr(mod, "__version__", None) or _dist_version(_MODULES[name])
    return found


def configure(threads):
    """Pin the peers' thread pools (XLA_FLAGS must be set before jax is imported)."""
    torch = _import("torch")
    if not isinstance(torch, Exception):
        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass
    jax = _import("jax")
    if not isinstance(jax, Exception):
        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")


# ------------------------------------------------------------------ PyTorch versions

def _torch_fns(torch):
    F = torch.nn.functional

    def w1_abs(x):
        if x[0] > 0:
            return x
        else:
            return -x

    def w2_prod_positive(x):
        result = 1
        for ii in x:
            if ii > 0:
                result = ii * result
        return result

    def w3_double_until(x):
        y = x * 2
        while torch.linalg.norm(y) < 1000:
            y = y * 2
        return y

    def w4_mean_square(x):
        return torch.mean(3 * (x + 2) ** 2)

    def w5_mlp(W1, b1, W2, b2, X, labels):
        h = torch.tanh(X @ W1 + b1)
        return F.cross_entropy(h @ W2 + b2, labels)

    def w6_elementwise(x):
        return torch.sum(torch.sin(x) * torch.exp(-x ** 2) + torch.log1p(x * x))

    def w7_rnn(W, U, h0, xs):
        h = h0
        for x_t in xs:
            h = torch.tanh(h @ W.T + x_t @ U.T)
        return torch.sum(h)

    def w8_thermal(u, T_out, price):
        dt, C, UA, eta, T_low, w_comfort = 0.25, 10.0, 0.5, 0.95, 20.0, 5.0
        T = 19.0
        cost = 0.0
        for t in range(len(u)):
            T = T + dt / C * (UA * (T_out[t] - T) + eta * u[t])
            cost = cost + price[t] * u[t] * dt
            if T < T_low:
                cost = cost + w_comfort * (T_low - T) ** 2
        return cost

    return {"W1": w1_abs, "W2": w2_prod_positive, "W3": w3_double_until, "W4": w4_mean_square,
            "W5": w5_mlp, "W6": w6_elementwise, "W7": w7_rnn, "W8": w8_thermal}


def _build_torch(torch, workload, inputs, device="cpu"):
    """``inputs`` are NumPy arrays (host); the tensors are made on ``device``."""
    fn = _torch_fns(torch)[workload.group]
    args = list(inputs.args)
    if workload.group == "W5":
        args[5] = np.argmax(args[5], axis=1)          # F.cross_entropy takes class indices
    targs = [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in args]
    wrt = [targs[i].requires_grad_() for i in workload.wrt]
    seed = (None if inputs.grad_outputs is None
            else torch.from_numpy(np.ascontiguousarray(inputs.grad_outputs)).to(device))

    def call():
        out = fn(*targs)
        return torch.autograd.grad(out, wrt, grad_outputs=seed)

    def to_numpy(res):
        return tuple(r.detach().cpu().numpy() for r in res)

    return call, to_numpy


# ------------------------------------------------------------------ JAX and autograd

def _build_jax(jax, workload, inputs, jit):
    jnp = jax.numpy
    fn = rebind(workload.fn, np=jnp)
    jargs = [jnp.asarray(a) for a in inputs.args]
    argnums = tuple(workload.wrt)
    out_shape = np.shape(workload.fn(*inputs.args))
    if inputs.grad_outputs is not None or out_shape != ():
        seed = (jnp.asarray(inputs.grad_outputs) if inputs.grad_outputs is not None
                else jnp.ones(out_shape, dtype=jargs[argnums[0]].dtype))

        def grad_fn(*a):
            def part(*w):
                full = list(a)
                for i, v in zip(argnums, w):
                    full[i] = v
                return fn(*full)
            _, back = jax.vjp(part, *[a[i] for i in argnums])
            return back(seed)
    else:
        grad_fn = jax.grad(fn, argnums=argnums)
    if jit:
        grad_fn = jax.jit(grad_fn)

    def call():
        return jax.block_until_ready(grad_fn(*jargs))

    def to_numpy(res):
        return tuple(np.asarray(r) for r in res)

    return call, to_numpy


def _build_autograd(autograd, workload, inputs):
    anp = importlib.import_module("autograd.numpy")
    fn = rebind(workload.fn, np=anp)
    args = inputs.args
    argnum = tuple(workload.wrt) if len(workload.wrt) > 1 else workload.wrt[0]
    if inputs.grad_outputs is not None:
        seed = inputs.grad_outputs
        make = autograd.make_vjp(fn, argnum)

        def call():
            back, _ = make(*args)
            return back(seed)
    else:
        g = autograd.grad(fn, argnum)

        def call():
            return g(*args)

    def to_numpy(res):
        res = res if isinstance(res, tuple) else (res,)
        return tuple(np.asarray(r) for r in res)

    return call, to_numpy


def applicable(name, workload):
    """Whether peer ``name`` has a column for this workload (jax.jit needs traceable code)."""
    if workload.group == "W9":   # a dict argument: the builders here take positional arrays
        return False
    return name != "jax.jit" or workload.jit_ok


def build(name, workload, inputs, device="cpu"):
    """(call, to_numpy) for peer ``name``; ``device`` ("cpu" or "cuda") is PyTorch's only."""
    mod = _import(name)
    if isinstance(mod, Exception):
        raise RuntimeError(f"{name} is not installed")
    if name == "torch":
        return _build_torch(mod, workload, inputs, device)
    if device != "cpu":
        raise ValueError(f"{name} runs on the CPU only here")
    if name in ("jax", "jax.jit"):
        return _build_jax(mod, workload, inputs, jit=name == "jax.jit")
    if name == "autograd":
        return _build_autograd(mod, workload, inputs)
    raise KeyError(name)
