"""Scalar loops on Python floats (optimize/scalar_items.py): the items of float64
vectors read and written as Python floats through a memoryview (no copy), which
Python's arithmetic handles about three times faster than NumPy scalars, with the
same IEEE double results."""

import numpy

__all__ = ["float64_vectors", "items"]

_FLOAT64 = numpy.dtype(numpy.float64)


MIN_ITEMS = 16   # shorter vectors: making the views costs more than it saves


def float64_vectors(*arrays):
    """Whether every one of ``arrays`` is a plain 1-D float64 NumPy array (native byte
    order, not a subclass), the first of at least ``MIN_ITEMS``: only then does a loop
    read their items as Python floats."""
    if type(arrays[0]) is numpy.ndarray and arrays[0].size < MIN_ITEMS:
        return False
    for a in arrays:
        if type(a) is not numpy.ndarray or a.ndim != 1 or a.dtype != _FLOAT64:
            return False
    return True


def items(*arrays):
    """Each array's items as Python floats: a memoryview of it (reading ``v[i]`` gives a
    float, ``v[i] += g`` writes into the array). Generated code calls it where
    ``float64_vectors`` holds, else runs on the arrays themselves, as the user wrote."""
    views = tuple(map(memoryview, arrays))
    return views if len(views) > 1 else views[0]
