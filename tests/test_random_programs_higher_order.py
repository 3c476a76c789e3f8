"""Random programs (the grammar of test_random_programs.py: branches on data, loops,
breaks, indexed writes, containers) through forward mode and second derivatives:

* ``sg.jvp`` against central differences of the function along a random tangent;
* ``sg.hvp`` (forward over reverse) and ``sg.grad(sg.grad(f))`` (reverse over reverse,
  ``grad_outputs`` the tangent) against central differences of ``sg.grad(f)``.

A point where the gradient is not smooth (two steps disagree) is rejected with
``assume``. A refusal must name the program's own file and a line of it: never a
silently wrong number, never an error in generated code.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings

import srcgrad as sg
from test_random_programs import inputs, load, programs


def _direction(seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, 3), rng.uniform(-1.0, 1.0, 3), float(rng.uniform(-1.0, 1.0))


def _shifted(args, tangents, step):
    return tuple(a + step * t for a, t in zip(args, tangents))


def _refused_in_the_program(error, path, source):
    assert error.filename == path and 1 <= error.lineno <= source.count("\n"), str(error)
    assert error.source_line and error.source_line.strip() in source, str(error)


def _smooth_difference(fn, args, tangents):
    """The central difference of ``fn`` along ``tangents``, rejected (assume) where two
    steps disagree: a branch or a kink within reach."""
    fine = [(np.asarray(p) - np.asarray(m)) / 2e-6 for p, m in
            zip(_as_tuple(fn(*_shifted(args, tangents, 1e-6))), _as_tuple(fn(*_shifted(args, tangents, -1e-6))))]
    rough = [(np.asarray(p) - np.asarray(m)) / 2e-5 for p, m in
             zip(_as_tuple(fn(*_shifted(args, tangents, 1e-5))), _as_tuple(fn(*_shifted(args, tangents, -1e-5))))]
    for a, b in zip(fine, rough):
        assume(np.allclose(a, b, atol=1e-5, rtol=1e-4))
    return fine


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def _close(got, want, what, source):
    scale = 1.0 + float(np.max(np.abs(want)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale, err_msg=f"{what} of\n{source}")


def check_higher_order(source, name, args, seed):
    note(source)
    f, path = load(source, name)
    with np.errstate(all="raise"):
        try:
            value = f(*args)
            grads = sg.grad(f, wrt=(0, 1, 2))(*args)
        except FloatingPointError:
            assume(False)
        except sg.SrcgradError as error:   # first order refuses: test_random_programs' business
            _refused_in_the_program(error, path, source)
            return
    assume(np.isfinite(value) and abs(value) < 1e6 and all(np.all(np.isfinite(g)) for g in grads))
    tangents = _direction(seed)
    note(f"args: {args!r}\ntangents: {tangents!r}")
    with np.errstate(all="ignore"):
        (want_t,) = _smooth_difference(f, args, tangents)
        want_h = _smooth_difference(sg.grad(f, wrt=(0, 1, 2)), args, tangents)
        want_xx = _smooth_difference(lambda x, y, a: sg.grad(f)(x, y, a), args,
                                     (tangents[0], np.zeros(3), 0.0))[0]
    try:
        _, t = sg.jvp(f, args, tangents)
        _close(t, want_t, "jvp", source)
        products = sg.hvp(f, args, tangents)
        for got, want, label in zip(products, want_h, "xya"):
            _close(got, want, f"hvp d/d{label}", source)
        gg = sg.grad(sg.grad(f))(*args, grad_outputs=tangents[0])
        _close(gg, want_xx, "grad of grad", source)
    except sg.SrcgradError as error:
        _refused_in_the_program(error, path, source)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(), inputs, inputs)
def test_random_programs_second_order(program, args, direction):
    source, name = program
    check_higher_order(source, name, args, int(abs(direction[2]) * 1e6))


@pytest.mark.slow
@settings(max_examples=8, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(containers=True), inputs, inputs)
def test_random_programs_with_containers_second_order(program, args, direction):
    source, name = program
    check_higher_order(source, name, args, int(abs(direction[2]) * 1e6))


@pytest.mark.slow
@settings(max_examples=8, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(aliasing=True), inputs, inputs)
def test_random_programs_with_aliases_second_order(program, args, direction):
    source, name = program
    check_higher_order(source, name, args, int(abs(direction[2]) * 1e6))
