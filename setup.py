"""The optional C entry of jit gradients (srcgrad/jit/_centry.c, docs/performance.md "jit,
round 8"). ``optional=True``: where no C compiler or no Python headers are found the build
warns and goes on, and srcgrad runs the pure-Python entry (srcgrad/jit/hot.py)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("srcgrad.jit._centry", ["srcgrad/jit/_centry.c"], optional=True)])
