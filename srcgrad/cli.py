"""``python -m srcgrad``: the command line.

    python -m srcgrad show module:function [--wrt x [y ...]] [--args-shapes 3,4 5 ...]
                           [--dtype float64] [--composed] [--fuse] [--mode vjp]

``show`` prints the gradient source of a function (``sg.source``): the generic code, or,
with ``--args-shapes``, the code that runs for arguments of those shapes (random arrays
of ``--dtype`` are made for them). The function is ``module:function`` (an importable
module; ``function`` may be dotted, ``Class.method``) or ``path/to/file.py:function``.
"""

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path

import numpy

import srcgrad
from srcgrad.errors import SrcgradError



class CommandError(Exception):
    """A command line that names something that is not there: printed, exit status 2."""


def main(argv=None):
    parser = _parser()
    options = parser.parse_args(argv)
    if options.command is None:
        parser.print_help()
        return 2
    try:
        print(show(options), end="")
    except CommandError as error:
        print(f"python -m srcgrad show: {error}", file=sys.stderr)
        return 2
    except (SrcgradError, TypeError, ValueError) as error:
        print(f"python -m srcgrad show: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


def _parser():
    parser = argparse.ArgumentParser(prog="python -m srcgrad",
                                     description="srcgrad from the command line.")
    commands = parser.add_subparsers(dest="command")
    show_parser = commands.add_parser(
        "show", help="print the gradient source of a function",
        description="Print the gradient source of a function (sg.source).")
    show_parser.add_argument("target", metavar="module:function",
                             help="an importable module and a function in it, or "
                                  "path/to/file.py:function")
    show_parser.add_argument("--wrt", nargs="+", default=["0"], metavar="X",
                             help="what to differentiate with respect to: parameter positions "
                                  "or names of parameters or local variables (default 0)")
    show_parser.add_argument("--args-shapes", nargs="+", metavar="SHAPE",
                             help="one shape per positional argument, e.g. 3,4 5 (a random "
                                  "array of that shape); 'scalar' for a float, '()' for a "
                                  "0-d array. Without it: the generic code")
    show_parser.add_argument("--dtype", default="float64",
                             help="dtype of the arrays made for --args-shapes (default float64)")
    show_parser.add_argument("--composed", action="store_true",
                             help="with --args-shapes: the one function grad runs, "
                                  "instead of the two sweeps")
    show_parser.add_argument("--fuse", action="store_true", help="the fused code (fuse=True)")
    show_parser.add_argument("--mode", choices=("vjp", "jvp"), default="vjp",
                             help="vjp: reverse mode (the default); jvp: the tangent program of "
                                  "forward mode (sg.jvp)")
    return parser


def show(options):
    """The text ``show`` prints for parsed ``options``."""
    fn = load(options.target)
    wrt = [int(w) if w.lstrip("-").isdigit() else w for w in options.wrt]
    wrt = wrt[0] if len(wrt) == 1 else tuple(wrt)
    args = None
    if options.args_shapes:
        args = example_args(options.args_shapes, options.dtype)
    elif options.composed:
        raise CommandError("--composed needs --args-shapes (the composed function is "
                           "compiled for arguments)")
    if options.mode == "jvp":
        return srcgrad.source(fn, wrt=wrt, mode="jvp")
    return srcgrad.source(fn, wrt=wrt, fuse=options.fuse, args=args, composed=options.composed)


def example_args(shapes, dtype="float64"):
    """A random array of ``dtype`` per shape (``3,4``; ``()``: 0-d), a float for ``scalar``."""
    try:
        dtype = numpy.dtype(dtype)
    except TypeError:
        raise CommandError(f"--dtype {dtype}: not a NumPy dtype") from None
    rng = numpy.random.default_rng(0)
    args = []
    for text in shapes:
        if text == "scalar":
            args.append(float(rng.standard_normal()))
            continue
        try:
            shape = tuple(int(n) for n in text.strip("()").split(",") if n.strip())
        except ValueError:
            raise CommandError(f"--args-shapes {text}: a shape is sizes separated by commas "
                               f"(3,4), '()' or 'scalar'") from None
        args.append(rng.standard_normal(shape).astype(dtype))
    return tuple(args)


def load(target):
    """The function ``target`` names: ``module:function`` or ``path/to/file.py:function``."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise CommandError(f"{target}: name a function as module:function or "
                           f"path/to/file.py:function")
    if where.endswith(".py") or os.sep in where or "/" in where:
        path = Path(where)
        if not path.is_file():
            raise CommandError(f"{where}: no such file")
        directory = str(path.resolve().parent)
        if directory not in sys.path:
            sys.path.insert(0, directory)   # its own imports, as `python file.py` sees them
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault(path.stem, module)
        spec.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(where)
        except ImportError as error:
            raise CommandError(f"{where}: cannot import it ({error})") from None
    found = module
    for part in name.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise CommandError(f"{target}: {where} has no {name}")
    if not callable(found):
        raise CommandError(f"{target}: {name} is a {type(found).__name__}, not a function")
    return found
