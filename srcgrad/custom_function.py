"""PyTorch-style custom functions: ``Function``, its ``ctx``, ``once_differentiable``.

A custom function supplies its own gradient::

    class Exp(srcgrad.Function):
        @staticmethod
        def forward(ctx, x):
            y = np.exp(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_y):
            (y,) = ctx.saved_tensors
            return grad_y * y

    y = Exp.apply(x)     # inside or outside a differentiated function

Outside a differentiated function ``Func.apply(*args)`` just runs ``forward``
with a fresh context. Inside one, the compiler does not read ``forward`` or
``backward``: its generated code calls this module's runtime interface,
registered into the runtime as ``rt.function_forward``/``rt.function_backward``
(the runtime does not import this module),

* ``function_forward(cls, args, needs_input_grad) -> (outputs, ctx)`` in the
  forward sweep, and
* ``function_backward(cls, ctx, grad_outputs) -> tuple`` (one gradient per
  forward input, None allowed) in the reverse sweep,

and finds the calls with ``is_apply(obj)``. ``function_backward`` checks what
the user's ``backward`` returned and raises ``BackwardError`` naming the class.
"""

import copy
import inspect
import numbers

from srcgrad import pytree, runtime
from srcgrad.errors import SrcgradError

__all__ = ["Function", "FunctionCtx", "BackwardError", "once_differentiable",
           "is_once_differentiable", "function_forward", "function_backward", "function_jvp",
           "has_jvp", "is_apply"]


class BackwardError(SrcgradError):
    """A custom Function's ``backward`` returned gradients that do not fit its inputs."""


_ONCE = "__srcgrad_once_differentiable__"


# ----- The context -----

class FunctionCtx:
    """The ``ctx`` a custom Function's ``forward`` and ``backward`` share.

    Attributes:
        needs_input_grad: a tuple of bools, one per ``forward`` input: whether
            that input's gradient is wanted (``backward`` may return None for
            the others, or skip computing them).

    Any other attribute may be set freely (``ctx.z = z``) to pass non-array
    values from ``forward`` to ``backward``.
    """

    def __init__(self):
        self.needs_input_grad = ()
        self._saved = ()
        self._non_differentiable = ()
        self._materialize_grads = True
        self._outputs_meta = None
        self._outputs_differentiable = ()
        self._inputs_meta = None
        self._tuple_output = False
        self._saved_forward = None
        self._in_jvp = False

    def save_for_backward(self, *values):
        """Keep ``values`` for ``backward`` (read them back with ``saved_tensors``).

        Arrays and anything else (None included) may be saved; calling it again
        replaces what was saved.
        """
        self._saved = tuple(values)

    def save_for_forward(self, *values):
        """Keep ``values`` for ``jvp`` (forward mode), which reads them back with
        ``saved_tensors`` (PyTorch's ``ctx.save_for_forward``)."""
        self._saved_forward = tuple(values)

    @property
    def saved_tensors(self):
        """The values given to ``save_for_backward``, as a tuple (in ``jvp``: those given
        to ``save_for_forward``, where it was called)."""
        if self._in_jvp and self._saved_forward is not None:
            return self._saved_forward
        return self._saved

    # PyTorch's older spelling.
    saved_variables = saved_tensors

    def mark_non_differentiable(self, *outputs):
        """Mark forward outputs (by identity) as constants: they have no gradient.

        ``backward`` is still given a gradient argument for each of them: zeros
        shaped like the output (None after ``set_materialize_grads(False)``).
        Integer and boolean outputs are non-differentiable without marking.
        """
        # Keep the objects themselves so that their ids stay theirs.
        self._non_differentiable = self._non_differentiable + tuple(outputs)

    def set_materialize_grads(self, value):
        """Whether ``backward`` gets zeros (True, the default) or None for gradient-less outputs."""
        self._materialize_grads = bool(value)

    @property
    def materialize_grads(self):
        return self._materialize_grads

    def __repr__(self):
        return f"<FunctionCtx needs_input_grad={self.needs_input_grad!r}>"

    def __deepcopy__(self, memo):
        """A copy of what forward saved (``retain_graph``); the metas, which name the array
        modules, are shared."""
        new = memo[id(self)] = copy.copy(self)
        for key, value in vars(self).items():
            if not key.endswith("_meta"):
                setattr(new, key, copy.deepcopy(value, memo))
        return new


# ----- The base class -----

class Function:
    """Base class of custom differentiable functions (``torch.autograd.Function``).

    Subclass it with two static methods:

    * ``forward(ctx, *args)``: computes the output (a value, or a tuple of
      values for several outputs); may save values with
      ``ctx.save_for_backward(...)`` or as attributes of ``ctx``.
    * ``backward(ctx, *grad_outputs)``: one gradient argument per output;
      returns one gradient per ``forward`` input (None for an input that needs
      none); a single input may get a bare value instead of a 1-tuple.

    PyTorch's other style also works: ``forward(*args)`` without ``ctx`` plus
    ``setup_context(ctx, inputs, output)``. ``vjp`` may be defined instead of
    ``backward``. Forward mode (``sg.jvp``, ``sg.jacfwd``) needs a third static
    method, ``jvp(ctx, *tangents)``: one tangent per ``forward`` input (None where it
    has none), returning one per output; ``forward`` keeps what it needs with
    ``ctx.save_for_forward(...)``.

    Call it as ``Func.apply(*args)``, inside or outside a function srcgrad
    differentiates.
    """

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError(
            "You must implement the forward function for a custom srcgrad.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "srcgrad.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *tangents):
        raise NotImplementedError(
            "You must implement the jvp function for custom srcgrad.Function to use it "
            "with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` with a fresh ``ctx`` and return its outputs.

        Outside a differentiated function ``ctx.needs_input_grad`` is True for
        floating-point arrays and Python floats, False for anything else.
        Inside one, the compiler replaces this call by ``function_forward``
        and ``function_backward``.
        """
        if kwargs:
            raise TypeError(
                f"{cls.__qualname__}.apply takes positional arguments only "
                f"(got keyword arguments {sorted(kwargs)}); pass them positionally.")
        if cls is Function:
            raise TypeError("srcgrad.Function.apply: subclass Function and call Subclass.apply")
        needs = tuple(_is_differentiable_value(a) for a in args)
        outputs, _ctx = function_forward(cls, args, needs)
        return outputs

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is not supported. "
            f"Define forward and backward as @staticmethod and call "
            f"{type(self).__qualname__}.apply(...) instead of an instance.")


def _overrides(cls, name):
    """Whether ``cls`` (not Function itself) defines ``name``."""
    for klass in cls.__mro__:
        if klass is Function:
            return False
        if name in klass.__dict__:
            return True
    return False


def has_jvp(cls):
    """Whether the custom Function ``cls`` defines ``jvp`` (forward mode can run it)."""
    return _overrides(cls, "jvp")


def _backward_of(cls):
    """The user's backward: ``backward``, or ``vjp`` when only that is defined."""
    if not _overrides(cls, "backward") and _overrides(cls, "vjp"):
        return cls.vjp
    return cls.backward


# ----- once_differentiable -----

def once_differentiable(backward):
    """Mark a ``backward`` as differentiable once only: differentiating it again is an error.

    Put it under ``@staticmethod``::

        @staticmethod
        @srcgrad.once_differentiable
        def backward(ctx, grad_out): ...

    The function is returned unchanged apart from the mark (it still runs, and
    its source is still readable).
    """
    if isinstance(backward, (staticmethod, classmethod)):
        setattr(backward.__func__, _ONCE, True)
        return backward
    try:
        setattr(backward, _ONCE, True)
    except (AttributeError, TypeError):
        raise TypeError(
            f"once_differentiable expects a function (the backward), got "
            f"{type(backward).__name__}") from None
    return backward


def is_once_differentiable(cls):
    """Whether the custom Function ``cls``'s backward is marked ``once_differentiable``."""
    backward = _backward_of(cls)
    backward = getattr(backward, "__func__", backward)
    return bool(getattr(backward, _ONCE, False))


# ----- Recognising Func.apply -----

def is_apply(obj):
    """The Function subclass whose ``apply`` ``obj`` is, else None.

    ``Func.apply`` makes a new bound method at each access, so this compares
    the underlying function and the class it is bound to. A subclass that
    overrides ``apply`` itself is not recognised.
    """
    if getattr(obj, "__func__", None) is not Function.apply.__func__:
        return None
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, type) and issubclass(owner, Function) and owner is not Function:
        return owner
    return None


# ----- Values -----

def _is_differentiable_value(value):
    """Floating-point (or complex) arrays and floats have gradients, and structures
    (pytree.py) holding them; nothing else does."""
    if isinstance(value, (bool, numbers.Integral)):
        return False
    if _Tree.holds(value):
        return any(_is_differentiable_value(leaf) for leaf in pytree.tree_leaves(value))
    if runtime.is_array(value):
        return value.dtype.kind in "fc"
    return isinstance(value, (float, complex))


class _Tree:
    """The meta of a structure (a dict, list, dataclass...: pytree.py): the value itself,
    whose structure its gradients and cotangents take (``runtime.materialize``)."""

    def __init__(self, value):   # (a list or dict as it is now: the call may change it)
        self.like = type(value)(value) if type(value) in (list, dict) else value

    @staticmethod
    def holds(value):
        return value is not None and not runtime.is_array(value) and pytree.is_node(value)

    def finish(self, g):
        """The cotangent ``g`` (an adjoint's mirror) in the structure."""
        return runtime.materialize(g, self.like)

    def adjoint(self, g):
        """The gradient ``backward`` returned (a value of the structure, or a mirror) as
        the adjoint mirror the reverse sweep adds up."""
        like = self.like
        if type(g) is type(like) or isinstance(g, (list, tuple)):
            pytree.paired_leaves(like, g, "input", "gradient")   # the same structure
            return pytree.as_adjoint(g)
        return g


def _meta(value):
    """What ``backward`` needs to know about a value without keeping it: (xp, shape, dtype)
    (a structure's ``_Tree`` as its shape)."""
    if _Tree.holds(value):
        return None, _Tree(value), type(value)
    if runtime.is_array(value):
        return runtime.namespace(value), tuple(value.shape), value.dtype
    return None, None, type(value)


def _zeros(meta):
    xp, shape, dtype = meta
    if isinstance(shape, _Tree):
        return runtime.materialize(0.0, shape.like)
    if xp is not None:
        return xp.zeros(shape, dtype=dtype)
    if dtype is complex:
        return 0j
    if dtype is int or (isinstance(dtype, type) and issubclass(dtype, numbers.Integral)
                        and dtype is not bool):
        return 0
    return 0.0


def _is_zero_sentinel(g):
    """The compiler's 'no gradient yet': None, or the Python float 0.0."""
    return g is None or (type(g) is float and g == 0.0)


def _input_names(cls, count):
    """Names of forward's inputs (after ctx) for messages, or None past the signature."""
    try:
        params = list(inspect.signature(cls.forward).parameters.values())
    except (TypeError, ValueError):
        return [None] * count
    if not _overrides(cls, "setup_context"):
        params = params[1:]          # ctx
    names = []
    for i in range(count):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                  params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        else:
            names.append(None)
    return names


def _describe_input(names, i):
    name = names[i] if i < len(names) else None
    return f"input {i} ({name!r})" if name else f"input {i}"


# ----- The runtime interface -----

@runtime.helper
def function_forward(cls, args, needs_input_grad):
    """Run ``cls.forward`` with a fresh ctx: ``(outputs, ctx)``.

    Args:
        cls: the Function subclass.
        args: the positional arguments of ``apply`` (a tuple or list).
        needs_input_grad: one bool per argument (the compiler's activity).

    Returns:
        ``(outputs, ctx)``: what forward returned (a tuple for several
        outputs), and the context to hand to ``function_backward``.
    """
    args = tuple(args)
    needs = tuple(bool(n) for n in needs_input_grad)
    if len(needs) != len(args):
        raise ValueError(
            f"function_forward({cls.__qualname__}): {len(args)} arguments but "
            f"{len(needs)} needs_input_grad flags")
    ctx = FunctionCtx()
    ctx.needs_input_grad = needs
    inputs_meta = tuple((_meta(a), _is_differentiable_value(a)) for a in args)   # (as passed)
    if _overrides(cls, "setup_context"):
        outputs = cls.forward(*args)
        cls.setup_context(ctx, args, outputs)
    else:
        outputs = cls.forward(ctx, *args)
    ctx._tuple_output = isinstance(outputs, tuple)
    outs = outputs if ctx._tuple_output else (outputs,)
    marked = {id(v) for v in ctx._non_differentiable}
    ctx._outputs_meta = tuple(_meta(o) for o in outs)
    ctx._outputs_differentiable = tuple(
        id(o) not in marked and _is_differentiable_value(o) for o in outs)
    ctx._non_differentiable = ()
    ctx._inputs_meta = inputs_meta
    # which input or output each saved value and attribute is (function_derivatives.py)
    ctx._origins = (tuple(_origin(v, args, outs) for v in ctx._saved),
                    {k: _origin(v, args, outs) for k, v in vars(ctx).items() if k[0] != "_"})
    return outputs, ctx


def _origin(value, args, outs):
    """``("in", j)`` where ``value`` is forward's input j, ``("out", k)`` where it is
    output k (the objects themselves), else None."""
    for where, values in (("in", args), ("out", outs)):
        for j, v in enumerate(values):
            if v is value:
                return where, j
    return None


@runtime.helper
def function_backward(cls, ctx, grad_outputs):
    """Run ``cls.backward`` on the output cotangents: one gradient per forward input.

    Args:
        cls: the Function subclass.
        ctx: the context ``function_forward`` returned.
        grad_outputs: the output's cotangent, or a tuple/list of them when
            forward returned a tuple. An entry that is None or the Python
            float 0.0 means no gradient; a bare None/0.0 for a tuple output
            means none for every output.

    Each output without gradient, and each output that is non-differentiable
    (marked, or integer/boolean), is given to ``backward`` as zeros shaped and
    typed like the output, or as None after ``ctx.set_materialize_grads(False)``.
    A scalar cotangent for an array output is broadcast to the output's shape.

    Returns:
        A tuple with one entry per forward input (None where there is no
        gradient). Gradients are cast to the input's floating dtype; a
        gradient of a broadcast shape is summed down to the input's shape.

    Raises:
        BackwardError: backward returned the wrong number of gradients, a
            gradient of the wrong shape, a non-floating gradient, or a
            gradient for an input that is not an array or a float.
    """
    result = _backward_of(cls)(ctx, *prepare_grads(cls, ctx, grad_outputs))
    return _check_result(cls, ctx, result)


def prepare_grads(cls, ctx, grad_outputs):
    """The arguments ``function_backward`` gives the user's ``backward`` after ctx."""
    name = cls.__qualname__
    if ctx._outputs_meta is None:
        raise BackwardError(f"{name}: function_backward was given a ctx that forward never used")
    metas = ctx._outputs_meta
    n_out = len(metas)
    if ctx._tuple_output:
        if isinstance(grad_outputs, (tuple, list)):
            grads = list(grad_outputs)
        elif _is_zero_sentinel(grad_outputs):
            grads = [None] * n_out
        else:
            raise BackwardError(
                f"{name}.forward returned {n_out} outputs, but the reverse sweep gave one "
                f"cotangent ({type(grad_outputs).__name__}); expected a tuple of {n_out}")
        if len(grads) != n_out:
            raise BackwardError(
                f"{name}.forward returned {n_out} outputs, but the reverse sweep gave "
                f"{len(grads)} cotangents")
    else:
        grads = [grad_outputs]

    materialize = ctx._materialize_grads
    prepared = []
    for g, meta, differentiable in zip(grads, metas, ctx._outputs_differentiable):
        if not differentiable or _is_zero_sentinel(g):
            prepared.append(_zeros(meta) if materialize else None)
            continue
        xp, shape, dtype = meta
        if isinstance(shape, _Tree):   # the adjoint's mirror, in the output's structure
            prepared.append(shape.finish(g))
            continue
        if xp is not None and (not runtime.is_array(g) or tuple(g.shape) != shape):
            gshape = tuple(getattr(g, "shape", ()))
            if gshape and gshape != shape:
                raise BackwardError(
                    f"{name}: the cotangent of an output of shape {shape} has shape {gshape}")
            g = xp.broadcast_to(xp.asarray(g, dtype=dtype), shape).copy()
        prepared.append(g)
    return prepared


@runtime.helper
def function_jvp(cls, ctx, tangents):
    """Run ``cls.jvp`` on the inputs' tangents (None: none): the outputs' tangents, as
    ``forward`` returned its outputs (one, or a tuple). An input without a tangent that
    holds floats gets zeros, as ``backward`` gets them (None after
    ``ctx.set_materialize_grads(False)``). An output's tangent that is None, or any
    tangent of a non-differentiable output, is zeros of its shape; one of the wrong
    shape raises BackwardError naming the class."""
    name = cls.__qualname__
    if ctx._outputs_meta is None:
        raise BackwardError(f"{name}: function_jvp was given a ctx that forward never used")
    prepared = []
    for t, (meta, differentiable) in zip(tangents, ctx._inputs_meta):
        if t is None and differentiable and ctx._materialize_grads:
            t = _zeros(meta)
        prepared.append(t)
    ctx._in_jvp = True
    try:
        result = cls.jvp(ctx, *prepared)
    finally:
        ctx._in_jvp = False
    metas = ctx._outputs_meta
    outs = result if ctx._tuple_output else (result,)
    if ctx._tuple_output and not isinstance(result, (tuple, list)) or len(outs) != len(metas):
        raise BackwardError(f"{name}.jvp returned {len(outs) if isinstance(outs, (tuple, list)) else 1} "
                            f"tangents, but forward returned {len(metas)} outputs")
    checked = []
    for t, meta, differentiable in zip(outs, metas, ctx._outputs_differentiable):
        xp, shape, dtype = meta
        if t is None or not differentiable:   # a float zero, as rt.tangent_zero's
            t = xp.zeros(shape) if xp is not None and dtype.kind not in "fc" else _zeros(meta)
        elif xp is not None and not isinstance(shape, _Tree):
            tshape = tuple(getattr(t, "shape", ()))
            if tshape != shape:
                raise BackwardError(f"{name}.jvp: the tangent of an output of shape {shape} "
                                    f"has shape {tshape}")
            t = xp.asarray(t, dtype=dtype if dtype.kind in "fc" else xp.float64)
        checked.append(t)
    return tuple(checked) if ctx._tuple_output else checked[0]


def _check_result(cls, ctx, result):
    name = cls.__qualname__
    n_in = len(ctx._inputs_meta)
    if isinstance(result, list):
        result = tuple(result)
    if not isinstance(result, tuple):
        if n_in != 1:
            raise BackwardError(
                f"{name}.backward returned 1 gradient ({type(result).__name__}), but "
                f"{name}.forward takes {n_in} inputs: return a tuple with one gradient per "
                "forward input (None for an input that needs none)")
        result = (result,)
    if len(result) != n_in:
        # As PyTorch: trailing Nones past the inputs are allowed.
        if len(result) > n_in and all(g is None for g in result[n_in:]):
            result = result[:n_in]
        else:
            plural = "" if len(result) == 1 else "s"
            raise BackwardError(
                f"{name}.backward returned {len(result)} gradient{plural}, but {name}.forward "
                f"takes {n_in} inputs: return one gradient per forward input (None for an input "
                "that needs none)")
    names = None
    checked = []
    for i, (g, ((xp, shape, dtype), differentiable)) in enumerate(zip(result, ctx._inputs_meta)):
        if g is None:
            checked.append(None)
            continue
        if names is None:
            names = _input_names(cls, n_in)
        where = _describe_input(names, i)
        if isinstance(shape, _Tree) and differentiable:   # a structure's, in its structure
            checked.append(shape.adjoint(g))
            continue
        if not differentiable and xp is None:
            raise BackwardError(
                f"{name}.backward returned a gradient (not None) for {where}, but that input "
                f"is a {dtype.__name__}, not an array or a float: return None for it")
        gdtype = getattr(g, "dtype", None)
        if gdtype is None:
            if isinstance(g, bool) or not isinstance(g, numbers.Number):
                raise BackwardError(
                    f"{name}.backward returned a {type(g).__name__} as the gradient of "
                    f"{where}; expected an array or a float")
            # A Python int or float: a float gradient.
            gkind = "c" if isinstance(g, complex) else "f"
        else:
            gkind = gdtype.kind
        if gkind not in "fc":
            raise BackwardError(
                f"{name}.backward returned a gradient of dtype {gdtype} for {where}; "
                "gradients must be floating point (use .astype(float))")
        gshape = tuple(getattr(g, "shape", ()))
        if xp is None:
            # A Python float (or complex) input: a scalar gradient.
            if gshape != ():
                raise BackwardError(
                    f"{name}.backward returned a gradient of shape {gshape} for {where}, "
                    "which is a scalar: expected a scalar gradient")
            checked.append(float(g) if isinstance(g, numbers.Integral) else g)
            continue
        if gshape != shape:
            if _broadcasts_to(shape, gshape):
                g = runtime.unbroadcast(g, _Shaped(shape))
                g = g.reshape(shape) if tuple(g.shape) != shape else g
            else:
                raise BackwardError(
                    f"{name}.backward returned a gradient of shape {gshape} for {where}, "
                    f"which has shape {shape}: the gradient of an input must have the "
                    "input's shape")
        if dtype.kind in "fc" and getattr(g, "dtype", None) != dtype and not (
                dtype.kind == "f" and gkind == "c"):
            g = xp.asarray(g, dtype=dtype)
        checked.append(g)
    return tuple(checked)


class _Shaped:
    def __init__(self, shape):
        self.shape = shape


def _broadcasts_to(shape, target):
    """Whether ``shape`` broadcasts to ``target`` (a gradient of ``target`` then sums down)."""
    if len(shape) > len(target):
        return False
    for n, m in zip(reversed(shape), reversed(target)):
        if n != m and n != 1:
            return False
    return True
