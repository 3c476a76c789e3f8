"""The benchmark workloads: each written once in plain NumPy, with a hand-written adjoint.

Every workload has

* ``fn``: the function as a NumPy user writes it (loops are Python loops, an
  ``if`` is an ``if``).  srcgrad differentiates exactly this function; HIPS
  autograd and JAX run this same code with ``np`` bound to ``autograd.numpy`` or
  ``jax.numpy`` (see ``rebind``), which is how those libraries are meant to be used.
* ``hand``: the reference gradient, written by hand the way a careful person
  writes an adjoint: same data-access style as ``fn``, no recomputation, no
  tricks that change the algorithm.  It returns a tuple, one gradient per
  entry of ``wrt``.
* ``make``: builds the inputs for a size (``"full"`` is the size of the issue,
  ``"quick"`` a small one for CI smoke runs and tests).

PyTorch versions (tensor code, idiomatic ``torch.autograd.grad``) are in
``peers.py``.  ``CUDA_WORKLOADS`` are the rows of ``run.py --device cuda``.
"""

import math
import types
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Inputs:
    args: tuple
    grad_outputs: object = None  # the cotangent, None for a scalar output


@dataclass
class Workload:
    key: str              # row name, e.g. "W5-f32"
    group: str            # "W5"
    title: str
    fn: object            # the NumPy function
    wrt: tuple            # argument positions differentiated
    hand: object          # hand-written gradient: hand(*args, grad_outputs=None) -> tuple
    make: object          # make(size) -> Inputs
    overhead_bound: bool  # per-call overhead dominates (target 2x instead of 1.25x)
    dtype: str = "float64"
    sizes: dict = field(default_factory=dict)  # size -> human description
    jit_ok: bool = False  # jax.jit can trace fn (no Python control flow on values)

    def describe(self, size):
        return f"{self.title} [{self.sizes.get(size, '')}]".replace(" []", "")


def rebind(fn, **names):
    """``fn`` with some global names (``np``) bound to other objects: the same code."""
    g = dict(fn.__globals__)
    g.update(names)
    new = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


# ---------------------------------------------------------------- W1: abs with an if

def w1_abs(x):
    if x[0] > 0:
        return x
    else:
        return -x


def w1_hand(x, grad_outputs=None):
    if x[0] > 0:
        return (np.ones_like(x),)
    return (-np.ones_like(x),)


def w1_make(size):
    return Inputs((np.array([-1.5]),))


# ---------------------------------------------------------------- W2: product of positives

def w2_prod_positive(x):
    result = 1
    for ii in x:
        if ii > 0:
            result = ii * result
    return result


def w2_hand(x, grad_outputs=None):
    g = np.zeros_like(x)
    pos = x > 0
    p = x[pos]
    g[pos] = np.prod(p) / p      # d/dx_i prod(p) = prod(p) / x_i, x_i > 0
    return (g,)


def w2_make(size):
    return Inputs((np.arange(-2, 4, dtype=np.float64),))


# ---------------------------------------------------------------- W3: double until norm >= 1000

def w3_double_until(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


def w3_hand(x, grad_outputs=None):
    y = x * 2
    scale = 2.0
    while np.linalg.norm(y) < 1000:
        y = y * 2
        scale *= 2.0
    return (grad_outputs * scale,)


def w3_make(size):
    x = np.array([1178.3732, 192.4036, 922.6443]) / 512   # the seed notebook's draw
    return Inputs((x,), grad_outputs=np.array([0.01, 0.1, 1.0]))


# ---------------------------------------------------------------- W4: mean(3 (x + 2)^2)

def w4_mean_square(x):
    return np.mean(3 * (x + 2) ** 2)


def w4_hand(x, grad_outputs=None):
    return (6.0 / x.size * (x + 2),)


def w4_make(size):
    return Inputs((np.ones((2, 2)),))


# ---------------------------------------------------------------- W5: two-layer MLP

def w5_mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    logp = z - lse
    return -np.sum(Y * logp) / X.shape[0]


def w5_hand(W1, b1, W2, b2, X, Y, grad_outputs=None):
    n = X.shape[0]
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    dlogits = (p - Y) / n
    dW2 = h.T @ dlogits
    db2 = np.sum(dlogits, axis=0)
    dpre = (dlogits @ W2.T) * (1 - h * h)
    dW1 = X.T @ dpre
    db1 = np.sum(dpre, axis=0)
    return dW1, db1, dW2, db2


def _w5_make(dtype):
    def make(size):
        n, d, hdim, k = (256, 784, 512, 10) if size == "full" else (16, 32, 24, 10)
        rng = np.random.default_rng(5)
        X = rng.standard_normal((n, d)).astype(dtype)
        labels = rng.integers(0, k, n)
        Y = np.zeros((n, k), dtype=dtype)
        Y[np.arange(n), labels] = 1
        W1 = (rng.standard_normal((d, hdim)) / math.sqrt(d)).astype(dtype)
        b1 = (0.1 * rng.standard_normal(hdim)).astype(dtype)
        W2 = (rng.standard_normal((hdim, k)) / math.sqrt(hdim)).astype(dtype)
        b2 = (0.1 * rng.standard_normal(k)).astype(dtype)
        return Inputs((W1, b1, W2, b2, X, Y))
    return make


# ---------------------------------------------------------------- W9: W5 with a dict of parameters

def w9_mlp(params, X, Y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = np.max(logits, axis=1, keepdims=True)
    z = logits - m
    lse = np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    logp = z - lse
    return -np.sum(Y * logp) / X.shape[0]


def w9_hand(params, X, Y, grad_outputs=None):
    dW1, db1, dW2, db2 = w5_hand(params["W1"], params["b1"], params["W2"], params["b2"], X, Y)
    return ({"W1": dW1, "b1": db1, "W2": dW2, "b2": db2},)


def _w9_make(dtype):
    make5 = _w5_make(dtype)

    def make(size):
        W1, b1, W2, b2, X, Y = make5(size).args
        return Inputs(({"W1": W1, "b1": b1, "W2": W2, "b2": b2}, X, Y))
    return make


# ---------------------------------------------------------------- W6: elementwise sum

def w6_elementwise(x):
    return np.sum(np.sin(x) * np.exp(-x ** 2) + np.log1p(x * x))


def w6_hand(x, grad_outputs=None):
    e = np.exp(-x * x)
    return ((np.cos(x) - 2 * x * np.sin(x)) * e + 2 * x / (1 + x * x),)


def _w6_make(n_full, dtype=np.float64, n_quick=10_000):
    def make(size):
        n = n_full if size == "full" else n_quick
        return Inputs((np.random.default_rng(6).uniform(-3, 3, n).astype(dtype, copy=False),))
    return make


# ---------------------------------------------------------------- W7: vanilla RNN

def w7_rnn(W, U, h0, xs):
    h = h0
    for x_t in xs:
        h = np.tanh(h @ W.T + x_t @ U.T)
    return np.sum(h)


def w7_hand(W, U, h0, xs, grad_outputs=None):
    hs = [h0]
    h = h0
    for x_t in xs:
        h = np.tanh(h @ W.T + x_t @ U.T)
        hs.append(h)
    dW = np.zeros_like(W)
    dU = np.zeros_like(U)
    dh = np.ones_like(h)
    for t in range(len(xs) - 1, -1, -1):
        h = hs[t + 1]
        da = dh * (1 - h * h)
        dW += da.T @ hs[t]
        dU += da.T @ xs[t]
        dh = da @ W
    return dW, dU


def w7_make(size):
    steps, batch, inp, hid = (50, 32, 64, 128) if size == "full" else (5, 4, 8, 16)
    rng = np.random.default_rng(7)
    W = rng.standard_normal((hid, hid)) / math.sqrt(hid)
    U = rng.standard_normal((hid, inp)) / math.sqrt(inp)
    h0 = np.zeros((batch, hid))
    xs = rng.standard_normal((steps, batch, inp))
    return Inputs((W, U, h0, xs))


def _astype(make, dtype):
    """``make`` with its arrays (and seed) converted to ``dtype``."""
    def made(size):
        inputs = make(size)
        args = tuple(a.astype(dtype) if isinstance(a, np.ndarray) else a for a in inputs.args)
        go = inputs.grad_outputs
        return Inputs(args, None if go is None else np.asarray(go).astype(dtype))
    return made


# ---------------------------------------------------------------- W8: building thermal simulation

def w8_thermal(u, T_out, price):
    # One zone, explicit Euler, 15-minute steps: heat input u[t] (kW), outdoor
    # temperature T_out[t], energy price price[t]; cost = energy + comfort penalty.
    dt = 0.25          # h
    C = 10.0           # kWh/K, thermal capacity
    UA = 0.5           # kW/K, envelope conductance
    eta = 0.95         # heater efficiency
    T_low = 20.0       # comfort band, degC
    w_comfort = 5.0
    T = 19.0
    cost = 0.0
    for t in range(len(u)):
        T = T + dt / C * (UA * (T_out[t] - T) + eta * u[t])
        cost = cost + price[t] * u[t] * dt
        if T < T_low:
            cost = cost + w_comfort * (T_low - T) ** 2
    return cost


def w8_hand(u, T_out, price, grad_outputs=None):
    dt, C, UA, eta, T_low, w_comfort = 0.25, 10.0, 0.5, 0.95, 20.0, 5.0
    n = len(u)
    Ts = [0.0] * n
    T = 19.0
    for t in range(n):
        T = T + dt / C * (UA * (T_out[t] - T) + eta * u[t])
        Ts[t] = T
    g = np.empty_like(u)
    k = dt / C
    decay = 1 - k * UA
    dT = 0.0
    for t in range(n - 1, -1, -1):
        T = Ts[t]
        if T < T_low:
            dT = dT - 2 * w_comfort * (T_low - T)
        g[t] = price[t] * dt + dT * k * eta
        dT = dT * decay
    return (g,)


def w8_make(size):
    n = 1000 if size == "full" else 50
    t = np.arange(n) * 0.25
    rng = np.random.default_rng(8)
    T_out = 5 + 6 * np.sin(2 * np.pi * (t - 9) / 24) + rng.normal(0, 0.5, n)
    price = 0.2 + 0.1 * (np.sin(2 * np.pi * (t - 6) / 24) > 0)
    u = 6.0 + 6.0 * rng.random(n)
    return Inputs((u, T_out, price))


# ---------------------------------------------------------------- a 30-line function (compile time)

def thirty_lines(x, w, b, n):
    h = x * w + b
    acc = 0.0
    for i in range(n):
        a = np.tanh(h)
        c = a * a
        d = np.exp(-c)
        e = d * w + b
        if np.sum(e) > 0:
            h = h + 0.1 * e
        else:
            h = h - 0.1 * e
        s = np.sin(h)
        t = s * c
        acc = acc + np.sum(t)
    p = np.log1p(h * h)
    q = p / (1.0 + acc * acc)
    r = np.sqrt(q + 1.0)
    m = np.mean(r)
    v = np.var(r)
    z = np.maximum(h, 0.0)
    k = np.cos(z) * r
    y = np.sum(k * k)
    u = y + m * v
    s2 = np.sum(np.abs(x - w))
    o = u - 0.5 * s2
    o = o * 2.0
    o = o + acc
    return o


def thirty_lines_make():
    rng = np.random.default_rng(30)
    return (rng.standard_normal(16), rng.standard_normal(16), rng.standard_normal(16), 3)


# ---------------------------------------------------------------- the table

WORKLOADS = [
    Workload("W1", "W1", "abs with an if (1 element)", w1_abs, (0,), w1_hand, w1_make, True,
             sizes={"full": "1 elem", "quick": "1 elem"}),
    Workload("W2", "W2", "product of positives, loop over arange(-2, 4)", w2_prod_positive,
             (0,), w2_hand, w2_make, True, sizes={"full": "6 elem", "quick": "6 elem"}),
    Workload("W3", "W3", "while norm(y) < 1000: y = y * 2, seed [0.01, 0.1, 1]",
             w3_double_until, (0,), w3_hand, w3_make, True,
             sizes={"full": "3 elem", "quick": "3 elem"}),
    Workload("W4", "W4", "mean(3 * (x + 2) ** 2)", w4_mean_square, (0,), w4_hand, w4_make, True,
             sizes={"full": "2x2", "quick": "2x2"}, jit_ok=True),
    Workload("W5-f32", "W5", "MLP tanh + softmax CE, float32", w5_mlp, (0, 1, 2, 3), w5_hand,
             _w5_make(np.float32), False, dtype="float32", jit_ok=True,
             sizes={"full": "256x784->512->10", "quick": "16x32->24->10"}),
    Workload("W5-f64", "W5", "MLP tanh + softmax CE, float64", w5_mlp, (0, 1, 2, 3), w5_hand,
             _w5_make(np.float64), False, jit_ok=True,
             sizes={"full": "256x784->512->10", "quick": "16x32->24->10"}),
    Workload("W6-1e6", "W6", "sum(sin(x) exp(-x^2) + log1p(x^2))", w6_elementwise, (0,), w6_hand,
             _w6_make(1_000_000), False, jit_ok=True, sizes={"full": "1e6", "quick": "1e4"}),
    Workload("W6-1e7", "W6", "sum(sin(x) exp(-x^2) + log1p(x^2))", w6_elementwise, (0,), w6_hand,
             _w6_make(10_000_000), False, jit_ok=True, sizes={"full": "1e7", "quick": "1e4"}),
    Workload("W7", "W7", "vanilla RNN, Python loop", w7_rnn, (0, 1), w7_hand, w7_make, False,
             jit_ok=True,
             sizes={"full": "50 steps, h128 b32 in64", "quick": "5 steps, h16 b4 in8"}),
    Workload("W8", "W8", "building thermal simulation, scalar loop", w8_thermal, (0,), w8_hand,
             w8_make, True, sizes={"full": "1000 steps", "quick": "50 steps"}),
    # W5 with its parameters in one dict argument (pytrees): the gradient is a dict.
    Workload("W9-f32", "W9", "W5's MLP, parameters in a dict, float32", w9_mlp, (0,), w9_hand,
             _w9_make(np.float32), False, dtype="float32",
             sizes={"full": "256x784->512->10", "quick": "16x32->24->10"}),
    Workload("W9-f64", "W9", "W5's MLP, parameters in a dict, float64", w9_mlp, (0,), w9_hand,
             _w9_make(np.float64), False,
             sizes={"full": "256x784->512->10", "quick": "16x32->24->10"}),
]


# ``run.py --device cuda``: the same functions on CuPy arrays (srcgrad differentiates
# ``fn`` unchanged; ``np.*`` on CuPy arrays dispatches to CuPy), the hand-written gradient
# run with ``np`` bound to ``cupy`` (rebind), the sizes where a GPU matters.
_W6_TITLE = "sum(sin(x) exp(-x^2) + log1p(x^2))"
CUDA_WORKLOADS = [
    Workload("W5-f32", "W5", "MLP tanh + softmax CE, float32", w5_mlp, (0, 1, 2, 3), w5_hand,
             _w5_make(np.float32), False, dtype="float32",
             sizes={"full": "256x784->512->10", "quick": "16x32->24->10"}),
    Workload("W5-f64", "W5", "MLP tanh + softmax CE, float64", w5_mlp, (0, 1, 2, 3), w5_hand,
             _w5_make(np.float64), False,
             sizes={"full": "256x784->512->10", "quick": "16x32->24->10"}),
    Workload("W6-1e7-f32", "W6", _W6_TITLE + ", float32", w6_elementwise, (0,), w6_hand,
             _w6_make(10_000_000, np.float32), False, dtype="float32",
             sizes={"full": "1e7", "quick": "1e4"}),
    Workload("W6-1e8-f32", "W6", _W6_TITLE + ", float32", w6_elementwise, (0,), w6_hand,
             _w6_make(100_000_000, np.float32, n_quick=100_000), False, dtype="float32",
             sizes={"full": "1e8", "quick": "1e5"}),
    Workload("W7-f32", "W7", "vanilla RNN, Python loop, float32", w7_rnn, (0, 1), w7_hand,
             _astype(w7_make, np.float32), False, dtype="float32",
             sizes={"full": "50 steps, h128 b32 in64", "quick": "5 steps, h16 b4 in8"}),
]


def select(only=None, device="cpu"):
    """The workloads (of ``device``) whose key or group is in ``only`` (a comma list), or all."""
    table = CUDA_WORKLOADS if device == "cuda" else WORKLOADS
    if not only:
        return list(table)
    wanted = [w.strip().upper() for w in only.split(",") if w.strip()]
    chosen = [w for w in table if w.key.upper() in wanted or w.group.upper() in wanted]
    if not chosen:
        raise SystemExit(f"--only {only}: no such workload on {device} (have "
                         f"{', '.join(w.key for w in table)})")
    return chosen
