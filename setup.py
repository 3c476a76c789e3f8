"""The optional C entry of jit gradients (srcgrad/jit/_centry.c, docs/performance.md "jit,
round 10"). ``optional=True``: where no C compiler or no Python headers are found the build
warns and goes on, and srcgrad runs the pure-Python entry (srcgrad/jit/hot.py). NumPy's
headers (pyproject.toml's build requirements) make its one-dimensional buffers in C; where
NumPy is not found at build time it calls numpy.empty instead."""

from setuptools import Extension, setup

try:
    import numpy
except ImportError:
    numpy_headers = {}
else:
    numpy_headers = {"include_dirs": [numpy.get_include()],
                     "define_macros": [("SG_NUMPY_API", "1")]}

setup(ext_modules=[Extension("srcgrad.jit._centry", ["srcgrad/jit/_centry.c"], optional=True,
                             **numpy_headers)])
