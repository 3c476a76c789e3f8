"""Random programs whose gradient reads Python numbers Numba computes its own way: ints
that may grow past int64 (products, shifts, hashes in loops), bools from comparisons of
array items added and multiplied (np.bool_ arithmetic), float32 numbers with Python
numbers, ``%`` and ``//`` of negatives, negative indices. The differentiable part is
smooth (``np.sum(x ** 2)``, ``np.sin``); the numbers scale it. Used by
test_adversarial_round12.py: ``sg.grad(f, jit=True)`` must equal ``sg.grad(f)``."""

import random

_INT_STEPS = (
    "k = k * {c} + i",
    "k = k * k % {m} + {c}",
    "k = k - {c} * i",
    "k = (k << {s}) + 1",
    "k = k % {m} - {c}",
    "k = k // {c} - i",
    "k += i * {c}",
    "k *= {c}",
)
_BOOL_STEPS = (
    "b = x[{j}] > {t}",
    "b = b + (x[{j}] > {t})",
    "b = b * (x[{j}] < {t})",
    "n = n + (x[{j}] > {t})",
    "b += x[{j}] < {t}",
)
_FLOAT32_STEPS = (
    "c = np.float32(x[{j}]) * {f}",
    "c = np.float32({big}) + 1.0",
    "c = c * {f} + np.float32(0.5)",
)


def program(seed):
    """``(source, name)`` of one random program ``f(x)`` of a 4-vector ``x``."""
    rng = random.Random(seed)
    name = f"jit_numbers_{seed}"
    lines = [f"def {name}(x):", "    k = 1", "    b = x[0] > 0", "    n = 0",
             "    c = np.float32(1.0)"]
    for _ in range(rng.randint(1, 3)):
        loop = rng.random() < 0.7
        indent = "    "
        if loop:
            lines.append(f"    for i in range({rng.randint(2, 40)}):")
            indent = "        "
        else:
            lines.append(f"    i = {rng.randint(-3, 3)}")
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            steps = _INT_STEPS if kind < 0.5 else _BOOL_STEPS if kind < 0.85 else \
                _FLOAT32_STEPS
            step = rng.choice(steps).format(
                c=rng.choice([2, 3, 7, 31, 1000003, -5]), s=rng.choice([1, 3, 17]),
                m=rng.choice([7, 1000, 2 ** 61 - 1]), j=rng.randint(-4, 3),
                t=rng.choice([0.0, -0.25, 0.5]), f=rng.choice([3.0, 1e20, 0.1]),
                big=rng.choice([16777216.0, 2.0]))
            lines.append(indent + step)
    lines.append("    s = np.sum(x ** 2) + np.sin(x[1])")
    terms = f"s * (1.0 + (k % {rng.choice([5, 7, 997])})) + x[2] * b + x[3] * n"
    if any("np.float32(x" in line or "c = c" in line or "+ 1.0" in line for line in lines):
        terms += " + x[-1] * (2.0 if np.isinf(c) else 1.0) + x[0] * (2.0 if c == 16777216.0 else 1.0)"
    lines.append("    return " + terms)
    return "import numpy as np\n\n\n" + "\n".join(lines) + "\n", name
