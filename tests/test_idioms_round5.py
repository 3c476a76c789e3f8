"""Idioms of round five (Python as people write it): each gradient is checked against
central differences in float64 and, where there is one, the hand-derived answer."""

import numpy as np
import pytest

import srcgrad as sg
from srcgrad.testing import numerical_grad

X = np.array([0.5, -1.0, 2.0, 1.5])


def largest_by_magnitude(x):
    return max(np.sum(x), np.sum(x ** 2), np.sum(np.sin(x)), key=abs)


def smallest_by_a_lambda(x):
    return min(np.sum(x), np.sum(x ** 2), key=lambda v: -v)


def first_of_a_tie(x):
    return max(np.sum(x), -np.sum(x), key=abs)   # |a| == |b|: Python keeps the first


@pytest.mark.parametrize("f", [largest_by_magnitude, smallest_by_a_lambda, first_of_a_tie],
                         ids=lambda f: f.__name__)
def test_max_and_min_of_several_arguments_with_a_key(f):
    np.testing.assert_allclose(sg.grad(f)(X), numerical_grad(f, (X,)), rtol=1e-6, atol=1e-8)


def test_the_first_of_a_tie_is_the_one_differentiated():
    np.testing.assert_allclose(sg.grad(first_of_a_tie)(X), np.ones(4))
    np.testing.assert_allclose(sg.grad(first_of_a_tie)(-X), np.ones(4))
