"""The adjoint rule table: one rule per primitive, in one registry.

The rule contract
-----------------
A rule is an ordinary Python function registered for one primitive:

    @adjoint(np.sin)
    def sin(dy, y, x):
        return dy * xp.cos(x)

* The first parameter is the cotangent of the primitive's output (``dy``), the
  second is the output value itself (``y``); the rest mirror the primitive's own
  parameters (same order, names and defaults), so that a call
  ``np.sum(x, axis=1)`` binds ``x`` and ``axis`` exactly as NumPy would.
  Only the parameters srcgrad supports need to be listed: a call passing any
  other keyword is refused at compile time, naming the keyword.
* It returns the gradient of the first positional parameter, or a tuple with one
  entry per parameter after ``(dy, y)`` (``None`` where there is none). A
  parameter that receives a sequence of arrays (``np.stack(arrays)``) gets a
  sequence of gradients.
* Gradients have the shape of the argument they belong to: binary rules wrap
  their results in ``rt.unbroadcast(g, x)``, which is free when shapes match.
* Built-in rules are templates: their body (simple assignments and one
  ``return``) is inlined into the generated gradient, with parameters replaced
  by the call's arguments. ``xp`` is the array namespace of the gradient's
  inputs (NumPy or CuPy) and ``rt`` is ``srcgrad.runtime``: a template uses
  nothing else, never ``numpy.`` directly, so one adjoint serves both
  libraries. Only the entries for arguments that need a gradient are emitted.
* Mathematics too long for a template (``np.linalg.norm``'s kinks, ``einsum``'s
  index juggling) is a run-time helper written in the rule's own module, below
  its rules, and registered with ``@rt.helper``: the template calls it as
  ``rt.norm_vjp(...)``, like the runtime's own helpers. Give it an adjoint rule
  in runtime_rules.py when it is linear in the gradient, so the gradient can be
  differentiated again.
* A rule whose body is not a template (a user's ``@srcgrad.adjoint`` rule with
  loops or closures) is called at run time instead, with the same arguments.
* A list or tuple display of values passed where a built-in rule expects an
  array (a parameter with a gradient entry) is what NumPy makes of it, an array:
  ``np.mean([x, y])`` is compiled as ``np.mean(np.asarray([x, y]))``. Parameters
  that take a sequence of arrays (``np.stack(arrays)``, ``sum(iterable)``) are
  named in ``@adjoint(..., sequences=("arrays",))`` and keep their displays.

Complex values
--------------
Cotangents follow JAX's convention: the cotangent of a complex ``z = a + ib`` is
``dL/da - i dL/db``, so a holomorphic primitive's rule is its real rule (``dy *
f'(z)``, no conjugate) and a real value's cotangent is the real part of what
reaches it. A statement on a value that is certainly complex (analysis/kinds.py)
uses the primitive's rule from ``COMPLEX_RULES`` (``@complex_adjoint``: it must
hold for real and complex operands), else its ordinary rule if the primitive is
in ``COMPLEX_SAFE``; any other primitive is refused there. rules/complex_rules.py
has both lists.

Tangent (JVP) rules
-------------------
Forward mode (transform/forward.py) reads the same table: a primitive's tangent rule
is registered with ``@tangent(np.foo)`` (``TANGENTS``, keyed like ``RULES``;
``Rule.tangent`` reads it; srcgrad's own are in rules/jvp.py):

    @tangent(np.sin)
    def sin(y, x, *, t_x):
        return t_x * xp.cos(x)

* The first parameter is the output ``y``; the primitive's parameters follow, as in
  the adjoint; then one keyword-only ``t_<param>`` per parameter that has a
  tangent. The rule returns the output's tangent. It is a template like an
  adjoint's (simple assignments and one ``return``), inlined into the tangent
  program.
* A tangent that is known to be zero (a constant or integer argument) is left out
  when the rule is inlined: every term it is a factor of is dropped (tangent rules
  are linear in their tangents), ``a + <dropped>`` is ``a``, and a call whose only
  tangent argument it is is dropped too; a call with other, nonzero tangent
  arguments (jointly linear in them) gets ``0.0`` for it, ``None`` if it is a
  run-time helper ``rt.*``. A rule therefore writes each
  argument's contribution as a term of its own (``t_x1 * x2 + x1 * t_x2``).
* A primitive linear in some of its arguments declares that instead of a rule:
  ``linear(np.transpose, "a")`` is the primitive applied to the tangent in ``a``'s place,
  the other arguments unchanged (``xp.transpose(t_a, axes)``); a jointly linear one
  names each (``linear(np.linspace, "start", "stop")``). Arguments left at their
  defaults are not spelled out.
* A rule that leaves out the tangent of an argument that carries one (a ``t_<param>``
  it never reads) is refused in forward mode, never read as a zero.
* An elementwise primitive (a ufunc, an operator, a ``math`` function) without a
  hand-written tangent gets one derived from its adjoint by linearity when each
  gradient entry is linear in ``dy`` (``dy * f(x)``, ``rt.unbroadcast(-dy / x2, x2)``,
  ``xp.where(c, dy, 0.0)``): the tangent is the sum of the entries with ``dy``
  replaced by the argument's tangent (broadcasting replaces unbroadcast). A
  hand-written rule wins. Anything else without a tangent is refused in forward
  mode, naming the line.

Primitives are keyed by the live function object (``np.sin``), found by
resolving the user's names, never by spelling. Array methods and attributes
are keyed by ``Method("sum")`` / ``Attribute("T")`` because the receiver's type
is known only at run time. Functions whose results never carry a gradient
(``np.argmax``, comparisons, ``np.floor``...) are listed as non-differentiable:
their results are constants.
"""

import importlib
import inspect
import sys
from dataclasses import dataclass, field


class Method(str):
    """Registry key of an array method, e.g. ``Method("sum")`` for ``x.sum()``."""

    def __repr__(self):
        return f"Method({str(self)!r})"


class Attribute(str):
    """Registry key of an array attribute, e.g. ``Attribute("T")`` for ``x.T``."""

    def __repr__(self):
        return f"Attribute({str(self)!r})"


@dataclass
class Rule:
    """One adjoint rule: the primitive it differentiates and the template."""

    primitive: object
    function: object
    signature: inspect.Signature = field(repr=False)
    builtin: bool = True
    sequences: frozenset = frozenset()  # parameters that take a sequence of arrays
    literals: dict = field(default_factory=dict)  # parameter -> the literal values it supports

    @property
    def name(self):
        return self.function.__name__

    @property
    def params(self):
        """Parameters after ``(dy, y)``: the primitive's own parameters."""
        return list(self.signature.parameters.values())[2:]

    @property
    def tangent(self):
        """The hand-written tangent (JVP) rule of the primitive, or None."""
        return lookup_tangent(self.primitive)


RULES = {}
NONDIFFERENTIABLE = set()
_NONDIFF_NAMES = set()


def _key(primitive):
    try:
        hash(primitive)
        return primitive
    except TypeError:
        return id(primitive)


VERSION = [0]  # bumped by every registration: compiled gradients depend on the table


def register(primitive, function, builtin=True, sequences=(), literals=None):
    """Register ``function`` as the adjoint rule of ``primitive``."""
    VERSION[0] += 1
    rule = Rule(primitive, function, inspect.signature(function), builtin, frozenset(sequences),
                dict(literals or {}))
    RULES[_key(primitive)] = rule
    NONDIFFERENTIABLE.discard(_key(primitive))
    return rule


def adjoint(*primitives, builtin=True, sequences=(), literals=None):
    """Decorator: the function below is the adjoint rule of ``primitives``.

    Several primitives may share one rule (``np.abs`` and ``np.absolute``).
    ``sequences`` names the parameters that take a sequence of arrays.
    ``literals`` maps a parameter to the values the rule supports
    (``{"mode": ("constant", "edge")}``): a call passing another literal value
    is refused when the gradient is compiled, naming the line.
    """

    def decorate(function):
        for primitive in primitives:
            register(primitive, function, builtin, sequences, literals)
        return function

    return decorate


def user_adjoint(*primitives):
    """Register the decorated function as the gradient rule of a library function.

    The rule is ``rule(grad_output, output, *args, **kwargs)`` and returns the
    gradient of the first positional argument when the function takes one,
    else a tuple with one entry per positional argument (None where there is
    none). srcgrad calls it during the reverse sweep.

    Example:
        >>> @srcgrad.adjoint(scipy.special.erf)
        ... def erf_rule(g, y, x):
        ...     return g * 2 / np.sqrt(np.pi) * np.exp(-x * x)
    """
    if not primitives:
        raise TypeError("srcgrad.adjoint takes the function the rule is for: @srcgrad.adjoint(np.foo)")
    return adjoint(*primitives, builtin=False)


TANGENTS = {}  # key -> the tangent rule: a function, or a Linear declaration (see "Tangent (JVP) rules")


def tangent(*primitives, no_tangent=()):
    """Decorator: the function below is the tangent (JVP) rule of ``primitives``.
    ``no_tangent``: parameters that only give a shape or an index (``rt.unbroadcast``'s
    ``x``): a tangent they carry does not reach the output, so the rule leaves it out."""

    def decorate(function):
        VERSION[0] += 1
        function.__srcgrad_no_tangent__ = frozenset(no_tangent)
        for primitive in primitives:
            TANGENTS[_key(primitive)] = function
        return function

    return decorate


@dataclass(frozen=True)
class Linear:
    """A tangent declared by linearity (``linear(np.transpose, "a")``): the primitive
    applied again, the tangents in the named parameters' places, the other arguments
    unchanged (transform/tangent_rules.py builds the template)."""

    params: tuple                   # the parameters the primitive is (jointly) linear in
    call: str = None                # the template's spelling of the primitive ("xp.sum")
    no_tangent: frozenset = frozenset()


def linear(primitives, *params, call=None, no_tangent=()):
    """Declare the tangent of a primitive that is linear in ``params`` (jointly): it is
    the primitive applied with each tangent ``t_<param>`` in that parameter's place and
    the other arguments unchanged, e.g. ``linear(np.transpose, "a")`` is the rule
    ``xp.transpose(t_a, axes)``. ``primitives``: one, or a tuple sharing the declaration.
    ``call`` spells the primitive in the template when it is not ``xp.<name>`` or
    ``rt.<name>`` (a method: ``call="xp.sum"``); ``no_tangent`` as for ``@tangent``.
    A parameter neither linear nor ``no_tangent`` that carries a tangent is refused."""
    if not params:
        raise TypeError("linear(primitive, param, ...) names the parameters it is linear in")
    VERSION[0] += 1
    declared = Linear(tuple(params), call, frozenset(no_tangent))
    for primitive in primitives if isinstance(primitives, tuple) else (primitives,):
        TANGENTS[_key(primitive)] = declared
    return declared


def lookup_tangent(primitive):
    """The hand-written tangent rule of ``primitive``, or None (forward.py may derive one
    from its adjoint)."""
    try:
        found = TANGENTS.get(_key(primitive))
    except TypeError:
        return None
    if found is None and _load_library_rules():
        return TANGENTS.get(_key(primitive))
    return found


RUN_AT_ZERO = set()   # keys of rt helpers whose block forward mode runs at a computed zero adjoint


def run_at_zero(*helpers):
    """Declare run-time helpers whose derivative may not exist where their adjoint is a
    computed 0 (``rt.norm_vjp`` at a zero vector: ``||x||**2``): forward mode runs a
    block calling one while its adjoint is any but the Python 0.0 it starts as, so their
    tangent rules refuse there rather than be skipped (a Hessian of 0)."""
    VERSION[0] += 1
    RUN_AT_ZERO.update(_key(h) for h in helpers)


def runs_at_zero(primitive):
    try:
        return _key(primitive) in RUN_AT_ZERO
    except TypeError:
        return False


BATCHED_TANGENTS = {}  # key -> the tangent rule's batched form (rules/jvp_batched.py)


def batched_tangent(*primitives, form=None):
    """The batched form of ``primitives``' tangent rules (tangents with a leading batch
    axis of B seeds: ``sg.jacfwd``, ``sg.hessian``; transform/batching.py). Decorating a
    rule like a tangent rule gives it as a template; ``form`` names a generic one instead:
    ``"same"`` (the tangent rule is right as it is), ``"elementwise"`` (its tangents
    aligned to the output's rank), ``"per_sample"`` (the rule mapped over the batch in
    one statement). A tangent rule written by hand without one has no batched form."""

    def decorate(function):
        VERSION[0] += 1
        for primitive in primitives:
            BATCHED_TANGENTS[_key(primitive)] = function
        return function

    if form is not None:
        decorate(form)
        return None
    return decorate


def lookup_batched(primitive):
    """The batched form registered for ``primitive`` (a rule or a form's name), or None."""
    try:
        return BATCHED_TANGENTS.get(_key(primitive))
    except TypeError:
        return None


COMPLEX_RULES = {}
COMPLEX_SAFE = set()


def complex_adjoint(*primitives):
    """Decorator: the rule below is ``primitives``' rule on complex values (and must hold
    for real ones too, which it may meet where a real value enters complex arithmetic)."""

    def decorate(function):
        VERSION[0] += 1
        for primitive in primitives:
            COMPLEX_RULES[_key(primitive)] = Rule(primitive, function, inspect.signature(function))
        return function

    return decorate


def complex_safe(*primitives):
    """Declare primitives whose ordinary rule is also right on complex values."""
    VERSION[0] += 1
    for primitive in primitives:
        COMPLEX_SAFE.add(_key(primitive))


COMPLEX_TANGENTS = {}   # key -> the tangent rule on complex values (``@complex_tangent``)


def complex_tangent(*primitives):
    """Decorator: the tangent rule below is ``primitives``' on complex values (it must hold
    for real ones too). A primitive in ``COMPLEX_SAFE`` needs none: its ordinary tangent
    (holomorphic: ``f'(z) t``; C-linear: itself) holds."""

    def decorate(function):
        VERSION[0] += 1
        for primitive in primitives:
            COMPLEX_TANGENTS[_key(primitive)] = function
        return function

    return decorate


def lookup_complex(primitive):
    """The Rule for ``primitive`` on complex values, or None (refused there)."""
    try:
        key = _key(primitive)
        if key in COMPLEX_RULES:
            return COMPLEX_RULES[key]
        return RULES.get(key) if key in COMPLEX_SAFE else None
    except TypeError:
        return None


def takes_sequence_args(primitive):
    """Whether ``primitive``'s rule gives a list or tuple argument a gradient of its own
    structure (a parameter declared with ``@adjoint(..., sequences=...)``: ``np.stack``,
    ``sum``...). A list passed to any other primitive is read as an array by NumPy;
    srcgrad refuses to send a gradient into it (reverse.py)."""
    try:
        rule = lookup(primitive)
    except TypeError:
        return False
    return rule is not None and bool(rule.sequences)


def nondifferentiable(*primitives):
    """Declare primitives whose outputs are constants (no gradient flows)."""
    VERSION[0] += 1
    for primitive in primitives:
        if primitive is None:
            continue
        NONDIFFERENTIABLE.add(_key(primitive))
        if isinstance(primitive, (Method, Attribute)):
            _NONDIFF_NAMES.add(primitive)


ZERO_GRADIENT = set()  # keys of the non-differentiable primitives that are piecewise constant


def zero_gradient(*primitives):
    """Declare piecewise-constant primitives (``np.floor``, ``np.sign``): no gradient flows
    through them, but their result depends on their arguments, so an input the output
    reaches only through them has a zero gradient (PyTorch's and JAX's), not a missing one."""
    nondifferentiable(*primitives)
    for primitive in primitives:
        if primitive is not None:
            ZERO_GRADIENT.add(_key(primitive))


def has_zero_gradient(primitive):
    try:
        return _key(primitive) in ZERO_GRADIENT
    except TypeError:
        return False


SEQUENCE_RESULTS = set()  # keys of primitives whose result is a list or tuple of arrays


def returns_sequence(*primitives):
    """Declare primitives whose result is a list of arrays (``np.split``): a name bound
    to one has a list as its adjoint."""
    for primitive in primitives:
        SEQUENCE_RESULTS.add(_key(primitive))


def is_sequence_result(primitive):
    try:
        return _key(primitive) in SEQUENCE_RESULTS
    except TypeError:
        return False


def unsupported_literal(rule, arguments):
    """``(parameter, value, allowed)`` of the first literal option among a call's bound
    ``arguments`` (gast nodes) that ``rule``'s ``literals`` do not list, else None: both
    modes refuse such a call at its line."""
    import gast
    for param, allowed in (rule.literals.items() if rule is not None else ()):
        arg = arguments.get(param)
        if isinstance(arg, gast.Constant) and arg.value not in allowed:
            return param, arg.value, allowed
    return None


def lookup(primitive):
    """The Rule for ``primitive``, or None."""
    try:
        found = RULES.get(_key(primitive))
    except TypeError:
        return None
    if found is None and _load_library_rules():
        return RULES.get(_key(primitive))
    return found


# Rule modules of optional libraries, loaded the first time a lookup misses while the
# library is imported (importing SciPy with srcgrad would double srcgrad's import time).
LIBRARY_RULE_MODULES = {"scipy.special": "scipy_special", "scipy.signal": "scipy_signal"}
_LIBRARIES_LOADED = set()


def _load_library_rules():
    """Load the rules of each optional library the program has imported, once; whether
    any were loaded now (a lookup's miss asks: cheap until a library is imported)."""
    loaded = False
    for library, module in LIBRARY_RULE_MODULES.items():
        if library not in _LIBRARIES_LOADED and library in sys.modules:
            _LIBRARIES_LOADED.add(library)
            users = {key: rule for key, rule in RULES.items() if not rule.builtin}
            name = f"srcgrad.rules.{module}"
            version = VERSION[0]
            if name in sys.modules:   # registered before, and the table restored since
                importlib.reload(sys.modules[name])
            else:
                importlib.import_module(name)
            RULES.update(users)   # a rule the user registered before stays theirs
            # Only the library's own functions got rules, and a gradient that calls one
            # looked it up, which loaded them first: no compiled gradient is stale, so
            # the version (every cached gradient's guard) stays.
            VERSION[0] = version
            loaded = True
    return loaded


def is_nondifferentiable(primitive):
    if getattr(primitive, "__srcgrad_grad_mode__", None) is False:
        return True  # a helper decorated with @no_grad(): its results are constants
    try:
        return _key(primitive) in NONDIFFERENTIABLE
    except TypeError:
        return False


BUILTIN_RULE_MODULES = ("operators", "autograd", "numpy_elementwise", "numpy_reductions", "numpy_shape",
                        "numpy_joins", "numpy_products", "numpy_linalg", "numpy_statistics",
                        "numpy_differences", "numpy_ufunc_methods",
                        "builtins_math", "structure_rules", "runtime_rules",
                        "complex_rules", "jvp", "jvp_numpy", "jvp_runtime", "tape_rules",
                        "closure_rules", "helper_second_order", "decomposition_second_order", "linalg_second_order", "statistics_second_order",
                        "math_second_order", "statistics_module",
                        "jvp_batched")


def _load_builtin_rules():
    """Import the rule modules for their registrations; order does not matter."""
    import importlib
    for module in BUILTIN_RULE_MODULES:
        importlib.import_module(f"srcgrad.rules.{module}")
