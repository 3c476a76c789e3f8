#!/usr/bin/env python3
"""Forward mode and second derivatives against the function itself and against peers.

    python benchmarks/higher_order.py            # W5-f64, W6-1e6, W8 and a 100-parameter Hessian
    python benchmarks/higher_order.py --quick    # small sizes, short budget (smoke test)

For W5, W6 and W8 (benchmarks/workloads.py) it times, interleaved round-robin in one
process (run.py's ``interleaved``), the function, ``sg.jvp`` along a random tangent of
the workload's parameters and ``sg.hvp`` along the same tangent, and prints jvp / f and
hvp / f against issue 14's targets (3x and 5x).  Then it times ``sg.hessian`` of a loss
of 100 parameters (all columns in one batched run of the gradient's tangent program)
against one ``sg.hvp`` per column, a hand-written Hessian and, when installed,
``jax.hessian`` without jit and ``torch.func.hessian``; the same loss of a dict of three
arrays (JAX's blocks) against the loss of one array; and ``sg.jacfwd`` of a map of
100 inputs to 50 outputs against one ``sg.jvp`` per column, ``sg.jacrev`` and, when
installed, ``jax.jacfwd`` without jit and ``torch.func.jacfwd``; each after checking
that every one agrees with the hand-written answer.  Compare ratios measured in one
run, never absolute times.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import numpy as np  # noqa: E402

import srcgrad as sg  # noqa: E402
import workloads  # noqa: E402
from run import interleaved  # noqa: E402

TARGETS = {"jvp": 3.0, "hvp": 5.0}
ROWS = ("W5-f64", "W6-1e6", "W8")


def directional_rows(size, budget):
    """jvp / f and hvp / f for the workloads in ROWS."""
    rng = np.random.default_rng(0)
    for w in (w for w in workloads.WORKLOADS if w.key in ROWS):
        args = tuple(w.make(size).args)
        tangents = tuple(rng.standard_normal(np.shape(a)) if i in w.wrt else np.zeros(np.shape(a))
                         for i, a in enumerate(args))
        wrt = w.wrt[0] if len(w.wrt) == 1 else tuple(w.wrt)
        calls = {"f": lambda: w.fn(*args),
                 "jvp": lambda: sg.jvp(w.fn, args, tangents),
                 "hvp": lambda: sg.hvp(w.fn, args, tangents, wrt=wrt)}
        times = interleaved(calls, budget, 0.02, 5, 31, lambda: None)
        f = times["f"]["median"]
        cells = "  ".join(f"{m} / f {times[m]['median'] / f:5.2f} (target {TARGETS[m]:.0f})"
                          for m in ("jvp", "hvp"))
        print(f"{w.key:8} f {f * 1e6:9.1f} us  {cells}")


def loss(x, A):
    """A loss of len(x) parameters whose Hessian A^T diag(g'') A is known by hand."""
    return np.sum(np.tanh(A @ x) ** 2)


def hand_hessian(x, A):
    t = np.tanh(A @ x)
    return A.T @ ((2 * (1 - t * t) * (1 - 3 * t * t))[:, None] * A)


def peers(x, A):
    """{name: call} of the installed peers' Hessians (numpy results)."""
    found = {}
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        hessian = jax.hessian(lambda v: jnp.sum(jnp.tanh(jnp.asarray(A) @ v) ** 2))
        xj = jnp.asarray(x)
        found["jax.hessian"] = lambda: np.asarray(hessian(xj))
    except ImportError:
        pass
    try:
        import torch
        At, xt = torch.as_tensor(A), torch.as_tensor(x)
        found["torch.func.hessian"] = lambda: torch.func.hessian(
            lambda v: torch.sum(torch.tanh(At @ v) ** 2))(xt).numpy()
    except ImportError:
        pass
    return found


def hessian_row(n, budget):
    rng = np.random.default_rng(1)
    x, A = rng.standard_normal(n), rng.standard_normal((n // 2, n)) / np.sqrt(n)
    hessian = sg.hessian(loss, wrt=0)
    calls = {"hand": lambda: hand_hessian(x, A), "srcgrad": lambda: hessian(x, A),
             "srcgrad, hvp per column": lambda: per_column_hessian(x, A)}
    calls.update(peers(x, A))
    reference = hand_hessian(x, A)
    for name, call in calls.items():
        np.testing.assert_allclose(call(), reference, rtol=1e-7, atol=1e-10, err_msg=name)
    report(calls, budget, "srcgrad", f"hessian of a {n}-parameter loss")


def report(calls, budget, base_name, title):
    """Time ``calls`` interleaved and print each median against ``calls[base_name]``'s."""
    times = interleaved(calls, budget, 0.02, 5, 31, lambda: None)
    base = times[base_name]["median"]
    print(f"{title}: {base_name} {base * 1e3:.2f} ms")
    for name in calls:
        print(f"  {name:24} {times[name]['median'] * 1e3:9.2f} ms   / {base_name} "
              f"{times[name]['median'] / base:6.2f}")


def dict_loss(p, A):
    """``loss`` with its parameters held in a dict of three arrays (a vector, a matrix,
    a vector): the Hessian is the same matrix, cut into JAX's blocks H[k1][k2]."""
    n = A.shape[1]
    a, b = p["a"].size, p["b"].size
    z = A[:, :a] @ p["a"] + A[:, a:a + b] @ np.ravel(p["b"]) + A[:, a + b:n] @ p["c"]
    return np.sum(np.tanh(z) ** 2)


def as_dict(x):
    n = x.size
    a, b = 2 * n // 5, 3 * n // 10   # 100 -> 40, 30 (a 3 x 10 matrix), 30
    return {"a": x[:a], "b": x[a:a + b].reshape(3, -1), "c": x[a + b:]}


def dict_hessian_row(n, budget):
    """sg.hessian of the loss of a dict of arrays (seeds over all its leaves batched)
    against the same loss of one array, and against one hvp per entry (what a structure
    ran before it was batched)."""
    from srcgrad import hessians
    rng = np.random.default_rng(1)
    x, A = rng.standard_normal(n), rng.standard_normal((n // 2, n)) / np.sqrt(n)
    p = as_dict(x)
    array_hessian, dict_hessian = sg.hessian(loss, wrt=0), sg.hessian(dict_loss, wrt=0)

    def flat(blocks):   # the dict of dicts of blocks as one n x n matrix
        keys = list(p)
        return np.block([[np.asarray(blocks[k1][k2]).reshape(p[k1].size, p[k2].size)
                          for k2 in keys] for k1 in keys])

    def per_entry():
        columns, _ = hessians._hessian_columns(dict_loss, (p, A), (0,), 0)
        return np.concatenate([c.reshape(n, -1) for c in columns], axis=1).T
    calls = {"array": lambda: array_hessian(x, A), "dict, batched": lambda: flat(dict_hessian(p, A)),
             "dict, hvp per entry": per_entry}
    reference = hand_hessian(x, A)
    for name, call in calls.items():
        np.testing.assert_allclose(call(), reference, rtol=1e-7, atol=1e-10, err_msg=name)
    report(calls, budget, "array", f"hessian of a {n}-parameter loss held in a dict of 3 arrays")


def per_column_hessian(x, A):
    """One sg.hvp per basis vector: what sg.hessian runs where it cannot batch."""
    columns = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = 1.0
        columns.append(sg.hvp(loss, (x, A), (e, None), wrt=0)[0])
    return np.stack(columns, axis=-1)


def layer(x, A):
    """A map of len(x) inputs to A.shape[0] outputs; its Jacobian is diag(g') A."""
    return np.tanh(A @ x)


def jacobian_peers(x, A):
    found = {}
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        jac = jax.jacfwd(lambda v: jnp.tanh(jnp.asarray(A) @ v))
        xj = jnp.asarray(x)
        found["jax.jacfwd"] = lambda: np.asarray(jac(xj))
    except ImportError:
        pass
    try:
        import torch
        At, xt = torch.as_tensor(A), torch.as_tensor(x)
        found["torch.func.jacfwd"] = lambda: torch.func.jacfwd(
            lambda v: torch.tanh(At @ v))(xt).numpy()
    except ImportError:
        pass
    return found


def jacobian_row(n, budget):
    rng = np.random.default_rng(2)
    x, A = rng.standard_normal(n), rng.standard_normal((n // 2, n)) / np.sqrt(n)

    def per_column():
        columns = []
        for j in range(x.size):
            e = np.zeros_like(x)
            e[j] = 1.0
            columns.append(sg.jvp(layer, (x, A), (e, None))[1])
        return np.stack(columns, axis=-1)
    jacfwd, jacrev = sg.jacfwd(layer, wrt=0), sg.jacrev(layer, wrt=0)
    calls = {"hand": lambda: (1 - np.tanh(A @ x) ** 2)[:, None] * A,
             "srcgrad": lambda: jacfwd(x, A), "srcgrad, jvp per column": per_column,
             "sg.jacrev": lambda: jacrev(x, A)}
    calls.update(jacobian_peers(x, A))
    reference = calls["hand"]()
    for name, call in calls.items():
        np.testing.assert_allclose(call(), reference, rtol=1e-7, atol=1e-10, err_msg=name)
    report(calls, budget, "srcgrad", f"jacfwd of a {n}-input, {n // 2}-output map")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, short budget")
    args = parser.parse_args(argv)
    size, budget = ("quick", 0.5) if args.quick else ("full", 6.0)
    directional_rows(size, budget)
    hessian_row(20 if args.quick else 100, budget)
    dict_hessian_row(20 if args.quick else 100, budget)
    jacobian_row(20 if args.quick else 100, budget)


if __name__ == "__main__":
    main()
