"""Random programs over containers, views and casts (tests/random_containers_views.py)
against central differences in float64: sg.grad and sg.jvp agree, or srcgrad refuses the
program at a located line of it."""

import atexit
import shutil
import tempfile

import pytest

import random_containers_views as generator

_TMP = tempfile.mkdtemp(prefix="srcgrad_random_containers_views_")
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)

# Programs that were silently wrong before round ten's fixes: forward mode's tangent of a
# copy seeing a later write into its operand (105, 159, 165), reverse mode's undo of a
# write into an array without a gradient whose view an adjoint reads (218, 281, 348, 461).
FOUND = (105, 159, 165, 218, 281, 348, 461)


@pytest.mark.parametrize("seed", FOUND)
def test_programs_round_ten_fixed(seed):
    assert generator.check(seed, _TMP) is None


def test_generator_draws_every_kind_of_statement():
    text = "\n".join(generator.Program(seed).source for seed in range(60))
    for piece in (".reshape(", ".T", "np.broadcast_to(", ".copy()", "] *= ", "] += ", "out=",
                  "{'k0'", ".append(", "np.asarray([", "float(", ".astype(int)", "np.argsort("):
        assert piece in text, piece


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))
def test_random_container_view_cast_programs(block):
    failures = [m for seed in range(1000 + 50 * block, 1050 + 50 * block)
                if (m := generator.check(seed, _TMP)) is not None]
    assert not failures, failures[0]


def test_generator_draws_round_elevens_writes():
    text = "\n".join(generator.Program(seed, round11=True).source for seed in range(60))
    for piece in (".flat[", ", out=c", "][0] ", "][-1] "):
        assert piece in text, piece


@pytest.mark.parametrize("seed", range(5))
def test_programs_with_round_elevens_writes(seed):
    """Writes two subscripts deep, through ``.flat`` and ``out=`` a view (refused before
    round eleven, or not drawn)."""
    assert generator.check(seed, _TMP, round11=True) is None


@pytest.mark.slow
@pytest.mark.parametrize("block", range(2))
def test_random_programs_with_round_elevens_writes(block):
    failures = [m for seed in range(2000 + 50 * block, 2050 + 50 * block)
                if (m := generator.check(seed, _TMP, round11=True)) is not None]
    assert not failures, failures[0]
