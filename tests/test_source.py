"""sg.source shows the code that runs, and says which code it is (srcgrad/show.py)."""

import inspect
import sys
import textwrap

import numpy as np
import pytest

import srcgrad as sg


def thermal(u, T_out):
    T = 19.0
    cost = 0.0
    for t in range(len(u)):
        T = T + 0.025 * (0.5 * (T_out[t] - T) + 0.95 * u[t])
        if T < 20.0:
            cost = cost + 5.0 * (20.0 - T) ** 2
    return cost


def elementwise(x):
    return np.sum(np.sin(x) * np.exp(-x ** 2))


def pair(x):
    return np.sum(x * x), np.sum(np.sin(x))


def with_aux(x):
    return np.sum(x * x), np.max(x)


def _args(n=8):
    rng = np.random.default_rng(0)
    return 6.0 + rng.random(n), 5.0 + rng.random(n)


def _generated_code_run(call):
    """The code objects of generated functions that ``call()`` runs (a profile hook)."""
    seen = []

    def profile(frame, event, arg):
        code = frame.f_code
        generated = "srcgrad-" in code.co_filename or code.co_filename.startswith("<srcgrad ")
        if event == "call" and generated and code.co_filename != "<srcgrad guard>" \
                and code.co_name != "__srcgrad_factory__" and code not in seen:
            seen.append(code)
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


def _text_of(code):
    return textwrap.dedent(inspect.getsource(code))


def _body(shown):
    """The code under the header comment."""
    lines = shown.splitlines(True)
    k = 0
    while lines[k].startswith("#") or not lines[k].strip():
        k += 1
    return "".join(lines[k:])


def test_the_sweeps_shown_for_example_arguments_are_the_code_that_runs():
    args = _args()
    shown = sg.source(thermal, args=args)
    # grad's first call runs the composed function too (the next test), not the sweeps.
    ran = _generated_code_run(lambda: sg.grad(thermal)(*args))
    assert [c.co_name for c in ran] == ["gradient_thermal"]
    # The forward sweep grad composes is shown, as compiled.
    compiled = sg.grad(thermal).compiled_for(args)
    assert compiled.forward_for_grad.__name__ == "thermal_forward_for_grad"
    assert _text_of(compiled.forward_for_grad.__code__) in shown
    # value_and_grad runs the full forward sweep, which is shown too.
    ran = _generated_code_run(lambda: sg.value_and_grad(thermal)(*args))
    assert [c.co_name for c in ran] == ["thermal_forward", "thermal_backward"]
    assert all(_text_of(code) in shown for code in ran)


def test_the_composed_function_shown_is_the_code_later_calls_run():
    args = _args()
    g = sg.grad(thermal)
    g(*args)
    shown = sg.source(thermal, args=args, composed=True)
    ran = _generated_code_run(lambda: g(*args))
    assert [c.co_name for c in ran] == ["gradient_thermal"]
    assert _body(shown) == _text_of(ran[0])
    # Not the sweeps: the one function, and a header that says so.
    assert "def thermal_backward" not in shown and "composed into one function" in shown
    np.testing.assert_allclose(g(*args), sg.grad(thermal).compiled_for(args).backward(
        1.0, sg.grad(thermal).compiled_for(args).forward(*args)[1])[0], rtol=1e-12)


def test_the_text_shown_is_the_text_compiled():
    args = _args()
    compiled = sg.grad(thermal).compiled_for(args)
    assert _body(sg.source(thermal, args=args)) == compiled.source
    functions = [compiled.forward, compiled.forward_for_grad, compiled.backward]
    assert "".join(_text_of(f.__code__) + "\n\n" for f in functions).rstrip() + "\n" == compiled.source


def test_the_header_names_the_arguments_and_what_runs():
    args = _args(5)
    shown = " ".join(line.lstrip("# ") for line in sg.source(thermal, args=args).splitlines()
                     if line.startswith("#"))
    assert shown.startswith("srcgrad: the code that runs for arguments of shapes (5,), (5,) float64")
    assert "grad runs thermal_forward_for_grad, then thermal_backward" in shown
    assert "value_and_grad, vjp and grad_outputs= run thermal_forward, then thermal_backward" in shown
    mixed = sg.source(lambda_free_scale, wrt=(0, 1), args=(2.0, np.ones((2, 3), np.float32)))
    assert mixed.startswith("# srcgrad: the code that runs for arguments of float, (2, 3) float32")


def lambda_free_scale(a, x):
    return np.sum(a * x)


def test_without_arguments_it_says_it_is_the_generic_code():
    shown = sg.source(thermal)
    assert shown.startswith("# srcgrad: the generic code, for arguments of any rank")
    assert "rt.unbroadcast" in shown   # the generic code: ranks unknown
    assert "rt.unbroadcast" not in sg.source(thermal, args=_args())
    # The generic code is what a call with keyword arguments runs.
    args = _args()
    ran = _generated_code_run(lambda: sg.grad(thermal)(u=args[0], T_out=args[1]))
    assert ran and all(_text_of(code) in shown for code in ran)
    assert sg.grad(thermal).source == shown


def test_fused_code_shows_its_kernels_and_runs_them():
    x = np.linspace(-1.0, 1.0, 7)
    shown = sg.source(elementwise, fuse=True, args=(x,))
    ran = _generated_code_run(lambda: sg.grad(elementwise, fuse=True)(x))
    assert [c.co_name for c in ran] == ["elementwise_forward", "elementwise_backward"]
    assert all(_text_of(code) in shown for code in ran) and "def fused_" in shown


@pytest.mark.parametrize("fn, options", [(pair, {}), (with_aux, {"has_aux": True})])
def test_a_gradient_grad_does_not_compose_shows_its_sweeps_and_says_why(fn, options):
    x = np.linspace(0.5, 1.5, 4)
    shown = sg.source(fn, args=(x,), composed=True, **options)
    assert f"def {fn.__name__}_backward" in shown and "def gradient_" not in shown
    assert "which it does not compose" in shown
    grad_outputs = (1.0, 1.0) if fn is pair else None
    gfn = sg.grad(fn, **options)
    for _ in range(2):
        ran = _generated_code_run(lambda: gfn(x, grad_outputs=grad_outputs))
        assert ran and all(_text_of(code) in shown for code in ran)
