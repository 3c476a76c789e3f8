"""Aim a projectile with drag: differentiate through an RK4 integrator.

The integrator is an ordinary helper, ``rk4(deriv, state, dt, steps)``, that
calls the derivative function it is given: srcgrad inlines it for the function
passed in (``projectile``) and differentiates the whole loop. Gradient descent
on the initial velocity brings the landing point onto the target. With
matplotlib installed (``pip install -e ".[plot]"``), the trajectories before and
after are written to ``ode_rk4_trajectory.png`` (or the path given as the first
argument).

Run: python examples/ode_rk4_initial_velocity.py [trajectory.png]
"""

import sys

import numpy as np

import srcgrad as sg

GRAVITY = 9.81
DRAG = 0.05          # quadratic drag per unit mass
DT = 0.02
STEPS = 100          # two seconds of flight
TARGET = np.array([12.0, 2.0])


def projectile(state):
    """d/dt of (x, y, vx, vy) under gravity and quadratic drag."""
    vx, vy = state[2], state[3]
    speed = np.sqrt(vx * vx + vy * vy)
    return np.array([vx, vy, -DRAG * speed * vx, -GRAVITY - DRAG * speed * vy])


def rk4(deriv, state, dt, steps):
    """Classic fourth-order Runge-Kutta: ``steps`` steps of size ``dt``."""
    for _ in range(steps):
        k1 = deriv(state)
        k2 = deriv(state + 0.5 * dt * k1)
        k3 = deriv(state + 0.5 * dt * k2)
        k4 = deriv(state + dt * k3)
        state = state + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return state


def miss(velocity, target):
    """Squared distance between where the projectile is after STEPS steps and the target."""
    start = np.concatenate([np.zeros(2), velocity])
    end = rk4(projectile, start, DT, STEPS)
    return np.sum((end[:2] - target) ** 2)


def trajectory(velocity):
    """The positions along the flight (for the plot; not differentiated)."""
    state = np.concatenate([np.zeros(2), velocity])
    points = [state[:2]]
    for _ in range(STEPS):
        state = rk4(projectile, state, DT, 1)
        points.append(state[:2])
    return np.array(points)


def main():
    velocity = np.array([4.0, 8.0])
    before = velocity.copy()
    grad_miss = sg.grad(miss)
    assert sg.gradcheck(miss, (velocity, TARGET))
    print(f"initial velocity {velocity}, miss {miss(velocity, TARGET):.4f}")
    for step in range(150):
        velocity = velocity - 0.05 * grad_miss(velocity, TARGET)
        if step % 50 == 49:
            print(f"step {step + 1:3d}: velocity {np.round(velocity, 4)}, miss {miss(velocity, TARGET):.6f}")
    final = miss(velocity, TARGET)
    assert final < 1e-3, final
    print(f"final miss {final:.2e}")
    print(f"landing point {np.round(trajectory(velocity)[-1], 3)} (target {TARGET})")
    lines = grad_miss.source.splitlines()
    backward = next(k for k, line in enumerate(lines) if line.startswith("def miss_backward"))
    loop = next(k for k in range(backward, len(lines)) if "reversed(" in lines[k])
    print("\nThe generated reverse sweep replays rk4's loop backwards (rk4 and projectile inlined):")
    print("\n".join(lines[loop:loop + 24]))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\nmatplotlib is not installed: no plot (pip install -e \".[plot]\")")
        return 0
    fig, ax = plt.subplots(figsize=(6, 4))
    for v, label in ((before, "before"), (velocity, "after")):
        path = trajectory(v)
        ax.plot(path[:, 0], path[:, 1], label=f"{label}: v0 = {np.round(v, 2)}")
    ax.plot(*TARGET, "k*", markersize=12, label="target")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.legend()
    fig.tight_layout()
    out = sys.argv[1] if len(sys.argv) > 1 else "ode_rk4_trajectory.png"
    fig.savefig(out, dpi=100)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
