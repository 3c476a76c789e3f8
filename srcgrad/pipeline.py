"""The ordered stages from a user function to its compiled gradient, and nothing else."""

import dataclasses
import inspect

import gast

from srcgrad import anno, composed_entry, disk_entries, grad_mode, pytree, runtime
from srcgrad.anno import Static
from srcgrad.analysis import activity, aliasing, kinds, ranks, shift
from srcgrad.codegen import emit, loader
from srcgrad.compiled import LATER as _LATER, Compiled, Printed as _Printed, \
    Printing as _Printing, Sweeps as _Sweeps, Unfinished, gc_paused
from srcgrad.context import CompileContext, CompileOptions  # noqa: F401 (CompileOptions: tests)
from srcgrad.custom_function import is_once_differentiable
from srcgrad.errors import SrcgradError, UnsupportedError
from srcgrad.guard import Guard
from srcgrad.naming import Namer
from srcgrad.parse import parse_function
from srcgrad import templates
from srcgrad.templates import clone
from srcgrad import optimize
from srcgrad.optimize import loop_accumulators, scalar_items, unit_seed
from srcgrad.transform import (anf, argument_effects, as_array, assignment_expressions, attribute_state, aux, canonicalize,
                               comprehensions, constant_arguments, fence, flat_reads, function_tables,
                               generators, global_statements, inline, item_updates, local_classes,
                               local_functions, match_statements, methods, mutation, nonlocal_functions,
                               plain_statements, reverse, structure_parts, unroll, warning_blocks, zero_marks)
from srcgrad.transform import fuse as fusion
from srcgrad.transform.base import local_names, rename_reserved
from srcgrad import ast_util, ast_walks

# The options a compile obeys unless told others (api.py: ``default_options``). Tests that
# check optimized and unoptimized code agree set ``CompileOptions(optimize=False)`` here.
DEFAULT_OPTIONS = CompileOptions()


def default_options(fuse=False):
    """``DEFAULT_OPTIONS``, with fused kernels when ``fuse``: what api.py compiles under
    (and puts in its cache key)."""
    return DEFAULT_OPTIONS.replace(fuse=True) if fuse else DEFAULT_OPTIONS

# Names the generated code uses for itself; a user's variable of that name is renamed.
RESERVED = ("rt", "xp", "tape", "push", "pop", "saved", "hooks", "_")


def normalize(fn, stack=(), has_aux=False, static=None, options=None):
    """Parse, check, canonicalize, normalize and inline ``fn``: the shared prefix of every mode.

    Returns ``(node, info, bindings)``; ``front_end`` returns the whole CompileContext."""
    node, ctx = front_end(fn, options or DEFAULT_OPTIONS, stack, has_aux, static)
    return node, ctx.info, ctx.bindings


def front_end(fn, options, stack=(), has_aux=False, static=None):
    """``(node, ctx)``: ``fn``'s tree parsed, checked, canonicalized, normalized and inlined,
    and the CompileContext its passes shared (srcgrad/context.py).

    ``stack``: the ``inline.Frame`` of each function ``fn`` is inlined into (empty for the
    function differentiated). ``has_aux``: ``fn`` returns ``(output, aux)``; the tree
    returned returns the output and binds ``aux`` to the name ``ctx.aux`` (transform/aux.py).
    ``static``: parameter name -> the callable it is known to hold (a function passed as
    an argument); inside, the parameter denotes that object (inline.bind_static)."""
    node, info = fn.parse() if isinstance(fn, local_functions.LocalFunction) else parse_function(fn)
    census = ast_walks.Census(node)   # (the passes' first looks below: one walk)
    names = census.of(gast.Name)
    ctx = CompileContext(
        info, Namer({n.id for n in names} | set(RESERVED)),
        options, user_locals=frozenset(local_names(node, names)), stack=stack or (inline.Frame(fn),),
        normalize=lambda helper, helper_stack, helper_static: front_end(
            helper, options, helper_stack, static=helper_static),   # (a lifted lambda: its helpers)
        bindings={n.id: info.extra[n.id] for n in names if n.id in info.extra} if info.extra else {})
    static = dict(static or {})
    arity = static.pop(inline.STAR_ARITY, None)
    if static.pop(inline.GENERATOR, False):   # a generator read whole: the list of its items
        node, names = generators.collect(node, ctx), None
        census.changed(node)
    constants = static.pop(inline.CONSTANTS, None)
    if constants:   # a recursive helper given ints: what they decide, decided now
        node, names = constant_arguments.bind(node, constants), None
        census.changed(node)
    ctx.classes = methods.unbound_classes(node, static.pop(inline.PARAM_CLASSES, None) or {}, names)
    ctx.trees = methods.unbound_classes(node, static.pop(structure_parts.TREES, None) or {}, names)
    if arity is not None:   # a helper's *args/**kwargs passed on: g(*args, **kwargs)
        inline.expand_star_calls(node, arity)
        census.changed()
    for statements in _STATEMENT_PASSES:
        if statements.may_hold(info):   # global, match, del, with np.errstate, nonlocal, class
            node = statements.transform(node, ctx)
            census.changed(node)
    fence.check(node, info, allowed_with=lambda item: anf.grad_mode_of(item, info) is not None,
                helper=bool(stack), census=census)
    if not stack:
        _check_returns_a_value(node, info)
    if static:
        inline.bind_static(node, info, ctx.namer, static, ctx.bindings)
        census.changed()
    node = rename_reserved(node, info, ctx.namer, ctx.bindings, RESERVED, census, not stack)
    node = assignment_expressions.transform(node, ctx, census=census)  # (n := e): n = e, in order
    node = flat_reads.transform(node, ctx, census)  # x.flat[i], for v in x.flat: np.ravel(x)
    if item_updates.may_hold(info):   # d[k].append(v): d[k] += [v]
        node = item_updates.transform(node, ctx)
    node = methods.transform(node, ctx)  # p.energy(x), xs.pop(), d.update(), [*a, *b]: calls, joins
    census.changed(node)   # (from here, each pass that may have edited the tree says so)
    node = function_tables.transform(node, ctx, census)  # acts[name](x), [lambda v, i=i: ... for i in ...]
    node = local_functions.transform(node, ctx, census)  # lambdas, nested defs: helpers
    node = comprehensions.transform(node, ctx, census)  # loops that build them, for canonicalize
    node = assignment_expressions.transform(node, ctx, True, census)  # those in comprehensions
    node = unroll.transform(node, ctx, census)  # loops over self.layers: one body per layer
    ctx.aux = aux.split(node, ctx) if has_aux else None
    node = canonicalize.transform(node, ctx)  # before ANF: it introduces flags and indexing
    node = anf.transform(node, ctx)
    node = mutation.transform(node, ctx)  # out=, copyto, .fill(): indexed writes
    node = inline.transform(node, ctx)
    return node if stack else argument_effects.transform(node, ctx), ctx   # (changed arguments)


# The passes of statements most functions do not hold, in their order (each asks ``info``).
_STATEMENT_PASSES = (global_statements, match_statements, plain_statements, warning_blocks,
                     nonlocal_functions, local_classes, attribute_state)


def _check_returns_a_value(node, info):
    """The function differentiated must return the value to differentiate (a helper
    may return nothing: it is called for what it does)."""
    todo = list(node.body)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Return) and n.value is not None and not (
                isinstance(n.value, gast.Constant) and n.value.value is None):
            return
        if not isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)):
            todo.extend(gast.iter_child_nodes(n))
    origin = info.origin(node)
    raise SrcgradError(
        f"{getattr(info.fn, '__qualname__', info.name)} returns nothing (None): it has no "
        f"`return` with a value, and a gradient needs the function to return the value to "
        f"differentiate", info.filename, origin.lineno if origin else info.first_lineno, None,
        origin.source_line if origin else None,
        hint="End the function with `return <the value>` (e.g. `return loss`).")


def wrt_names(node, wrt):
    """Normalize ``wrt`` (int, str, or a sequence of them) to a tuple of names."""
    params = [a.id for a in node.args.posonlyargs + node.args.args]
    all_params = params + [a.id for a in node.args.kwonlyargs]
    many = isinstance(wrt, (tuple, list))
    items = list(wrt) if many else [wrt]
    names = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise TypeError(f"srcgrad: wrt entries are parameter positions or names, got {item!r}")
        if isinstance(item, int):
            if not -len(params) <= item < len(params):
                raise ValueError(f"srcgrad: wrt={item} but the function has {len(params)} positional parameters")
            names.append(params[item])
        else:
            names.append(item)
    return tuple(names), many, all_params


@gc_paused
def compile_gradient(fn, wrt, hook_names=(), fuse=False, arg_ranks=None, has_aux=False,
                     options=None):
    """Compile the reverse-mode gradient of ``fn`` with respect to ``wrt``.

    ``has_aux``: ``fn`` returns ``(output, aux)``; only the output is differentiated and
    the forward sweep returns the pair.
    ``options``: the CompileOptions (``default_options(fuse)`` when None); their ``fuse``
    turns runs of elementwise statements into fused kernels (transform/fuse.py).
    ``arg_ranks`` (one ``ranks.rank_key`` per positional argument) specialises the
    gradient for arguments of those ranks: scalars need no unbroadcasting.
    """
    positional = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    # a callable's, a dataclass's (p.energy(x)), a plain object's class
    static = structure_parts.argument_statics(positional, arg_ranks)
    if static:   # a callable argument: the code is compiled for that object (its rank key)
        arg_ranks = tuple(None if isinstance(key, (ranks.StaticKey, ranks.ClassKey)) else key
                          for key in arg_ranks)
    if options is None:
        options = default_options(fuse)
    fuse = options.fuse
    node, ctx = front_end(fn, options, has_aux=has_aux, static=static)
    info, namer, bindings, user_locals = ctx.info, ctx.namer, ctx.bindings, ctx.user_locals
    names, _, _ = wrt_names(node, wrt)
    node = argument_effects.keep_differentiated(node, names, dict(zip(positional, arg_ranks or ())))
    for n in names:
        if n not in user_locals:
            raise ValueError(f"srcgrad: wrt={n!r} is neither a parameter nor a local variable of "
                             f"{fn.__qualname__}")
    params = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    # wrt of a local means the value it holds at the return: read then. wrt of a
    # parameter means the value passed in, which later writes do not change.
    param_checks = aliasing.check(node, info, namer.display, bindings=bindings,
                                  live_at_exit=[n for n in names if n not in params])
    # The wrt parameters hold floats: api refuses integer and complex inputs.
    kind_map = kinds.infer(node, {n: kinds.FLOAT for n in names}, info.peek)
    keep = set(names) | set(hook_names)
    act, dropped = _activity(node, names, kind_map, keep if options.optimize else None)
    positional = [a.id for a in node.args.posonlyargs + node.args.args]
    structured = {p for p, key in zip(positional, arg_ranks or ()) if isinstance(key, pytree.TreeKey)}
    if as_array.as_array_arguments(node, act.sequences | structured, ctx):
        # np.mean(values) of a list is now of an array, a value of its own
        kind_map = kinds.infer(node, {n: kinds.FLOAT for n in names}, info.peek)
        act, dropped = _activity(node, names, kind_map, keep if options.optimize else None)
    fixed = {"xp": "xp", "rt": "rt"}
    for hooked in hook_names:
        if hooked not in user_locals:
            raise ValueError(f"srcgrad: hooks names {hooked!r}, which is not a variable of {fn.__qualname__}")
    params = [a.id for a in node.args.posonlyargs + node.args.args]
    rank_map = ranks.infer(node, dict(zip(params, arg_ranks or ())))
    classes = ranks.shape_classes(node, rank_map)
    containers = ranks.containers(node, rank_map, dict(zip(params, arg_ranks or ())),
                                  info.peek, arg_ranks is not None)
    if arg_ranks:   # what the same code knows for arguments of any rank
        any_ranks = ranks.infer(node, {})
        any_classes = ranks.shape_classes(node, any_ranks)
        any_containers = ranks.containers(node, any_ranks, {}, info.peek, False)
    else:
        any_ranks, any_classes, any_containers = rank_map, classes, containers
    built = reverse.build(node, info, act, namer, names, fixed, node.name,
                          tuple(sorted(hook_names)), optimized=options.optimize,
                          ranks=rank_map, classes=classes,
                          scalar_reductions=bool(arg_ranks) and not fuse,
                          fused=fuse, kinds=kind_map, containers=containers,
                          aux=ctx.aux, param_checks=param_checks, bound=ctx.bindings)
    forward, backward = built.forward, built.backward
    for_grad = None
    # A complex output has no default seed (rt.default_seed refuses it): never assume 1.
    real_output = not (isinstance(node.body[-1].value, gast.Name)
                       and kind_map.of(node.body[-1].value) == kinds.COMPLEX)
    # With has_aux the caller sees the forward's aux: no sweep that skips computing it.
    # The forward sweep reads like the user's code: invariants hoisted, then (on it and on
    # its gradient-only copy) single-use temporaries folded. Not where statements are fused.
    tidy = options.optimize and not fuse
    if tidy:
        made = _compiler_names(forward, ctx)
        optimize.transform_forward(forward, made)
    if options.optimize and not fuse and not built.tuple_output and real_output and not has_aux:
        for_grad = optimize.forward_for_gradient(forward, rank_map, classes)
    any_rank = None
    if tidy:
        # Only shape facts that hold for arguments of any rank: the code stays rank free.
        any_rank = {n: c for n, c in classes.items()
                    if (rank_map.get(n), c) == (any_ranks.get(n), any_classes.get(n))}
        if for_grad is not None:
            optimize.transform_forward(for_grad, made, any_rank, optimize.FORWARD_LAST)

    def finish_forward(forward=forward, backward=backward):
        """The full forward sweep's last passes and comments. Where a gradient-only copy
        exists, grad's first call composes that copy and this waits for a reader of the
        full sweep (compiled.Unfinished); the copy was made before, so the order of the
        two changes nothing."""
        if tidy:
            optimize.transform_forward(forward, made, any_rank, optimize.FORWARD_LAST)
        forward.body = emit.comment_blocks(forward.body, "", 2)
        return forward, backward

    if for_grad is None:
        finish_forward()
    backward.body = emit.comment_blocks(backward.body, "grad of: ", 1)
    for offset, text in sorted(dropped.items()):
        emit.note_after(backward.body, "grad of: " + text,
                        f"{offset}: no gradient, the output does not depend on it (the "
                        f"shift cancels)")
    trees = (forward, backward) if for_grad is None else Unfinished(backward, finish_forward)
    # Names that hold one number: a composed gradient does not release them (nothing to free).
    scalars = frozenset(n for n, r in rank_map.items() if r in (0, ranks.INT))
    # Names certainly real floats: a composed gradient's seed of 1 need not multiply them.
    floats = frozenset(n for n, k in kind_map.env.items() if k == kinds.FLOAT)
    # The forward sweep a call that wants only the gradients composes with the backward
    # (fast_call.FastCall), and whether its seed is known to be 1 (a scalar output).
    gradient_forward = None
    if options.optimize and not fuse and not built.tuple_output and real_output and not has_aux:
        gradient_forward = (for_grad or forward, optimize.scalar_output(forward, rank_map))
    # The code holds for arguments of any rank unless it relies on a fact the ranks gave.
    # Which names may hold containers decides code too (a structured argument's gradient).
    # The backward optimizer reads shape classes, and ranks only of parameters (their
    # gradient buffers) and of ints (indices): other names' ranks may differ.
    rank_free = not static and containers == any_containers and all(
        classes.get(n) == any_classes.get(n) and (
            rank_map.get(n) == any_ranks.get(n)
            or n not in params and ranks.INT not in (rank_map.get(n), any_ranks.get(n)))
        for n in built.rank_facts_used)
    kernels = []
    if fuse:
        forward, backward = clone(forward), clone(backward)
        if not built.mutates_saved:
            fusion.rematerialize(forward, backward, info.resolve)
        kernels = fusion.transform(forward, info.resolve, namer, options.fuse_reductions)
        kernels += fusion.transform(backward, info.resolve, namer, options.fuse_reductions)
    extra = []
    if for_grad is not None:
        for_grad.body = emit.comment_blocks(for_grad.body, "", 2)
        extra = [for_grad]
    bindings.update(built.bindings)
    bindings["rt"] = runtime

    def print_sweeps():
        """The sweeps printed (not loaded): the on-disk cache's store writes this text,
        ``sweeps()`` loads it; whichever asks first prints it (``compiled.Printing``)."""
        if trees.__class__ is Unfinished:
            trees.trees()   # the full forward sweep finished
        # The trees themselves: to_source changes nothing of them (compose_gradient may
        # copy them at the same time, in another thread).
        printed = kernels + [forward] + extra + [backward]
        source = emit.to_source(printed)
        return _Printed(source, [f.name for f in printed], emit.origins_later(printed, source),
                        bool(extra))

    printing = _Printing(print_sweeps)

    def sweeps():
        """The sweeps printed and loaded: made when something first asks for them
        (``Compiled.forward``, ``source``, ...). ``grad``'s common call runs the composed
        function only (api.py), which its first call makes with the compile: its
        first compile loads one function, not the sweeps as well."""
        printed = printing()
        functions, _, _ = loader.load(printed.source, printed.names, info.globals, info.closure,
                                      bindings, hint=fn.__qualname__, origins=printed.origins)
        fwd, bwd = functions[len(kernels)], functions[-1]
        fwd_grad = functions[-2] if extra else None
        for f in (fwd, fwd_grad):
            if f is not None:
                f.__defaults__ = fn.__defaults__
                f.__kwdefaults__ = fn.__kwdefaults__
        return _Sweeps(fwd, bwd, printed.source, fwd_grad)

    return Compiled(_LATER, _LATER, _LATER, names, act, user_locals, Guard(fn, ctx.infos),
                    tuple_output=built.tuple_output, uses_tape=built.uses_tape,
                    mutates_saved=built.mutates_saved, functions=built.functions,
                    rank_free=rank_free, forward_for_grad=_LATER, trees=trees,
                    gradient_forward=gradient_forward, load=(info, bindings),
                    scalars=scalars, floats=floats, printed=printing, infos=ctx.infos,
                    sweeps=sweeps, sweep_names=built.names if gradient_forward is not None else None)


def _compiler_names(forward, ctx):
    """The names the forward sweep binds that the compiler made: not a parameter, not a
    user's variable (nor an inlined helper's, renamed), not the tape's."""
    args = forward.args
    params = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
    users = set(ctx.user_locals) | set(ctx.namer.original) | params | set(RESERVED)
    return {n.id for n in ast_util.nodes_of(forward, gast.Name)
            if isinstance(n.ctx, gast.Store) and n.id not in users}


def refuse_once_differentiable(compiled, what=""):
    """Raise if the gradient applies a custom Function whose backward is marked
    ``once_differentiable``: differentiating that gradient again is refused."""
    once = [c for c in compiled.functions if is_once_differentiable(c)]
    if once:
        info = compiled.load[0]
        raise UnsupportedError(
            f"{what}{once[0].__name__}.backward is marked once_differentiable: its gradient "
            f"cannot be differentiated again", info.filename, info.first_lineno,
            hint="Remove @once_differentiable if the backward is itself differentiable code.")


def with_trees(compiled):
    """``compiled``, its trees (and ``gradient_forward``) compiled again if it was loaded
    from the on-disk cache without them: what reads the trees (composing, the jit's
    translation) calls this first."""
    if compiled.recompile is not None and not compiled.has_trees:   # loaded from disk
        full = compiled.recompile()
        # The trees last: a thread that finds them finds gradient_forward in place, never
        # the placeholder COMPOSABLE (which does not unpack as (forward, seed_is_one)).
        compiled.gradient_forward, compiled.load = full.gradient_forward, full.load
        compiled.floats = full.floats
        compiled.trees, compiled.recompile = full.__dict__["trees"], None   # (unfinished or not)
    return compiled


@gc_paused
def compose_gradient(compiled, many, only_gradients=False, for_transform=False,
                     check_structures=False, aux=False):
    """One plain Python function computing the gradient: forward then backward sweep.

    This is what makes higher-order derivatives work: the result is ordinary
    source that srcgrad can read and transform again. With ``only_gradients``
    it is ``grad``'s common call as one function (no tape or saved tuple crosses a
    call), returning the tuple the backward sweep returns: for a scalar output, the
    forward sweep that computes only what the adjoint reads (``forward_for_grad``)
    and the seed 1; otherwise the forward sweep and the default seed.
    ``for_transform`` (with ``only_gradients``): the code forward mode reads again
    (hessians.py): the tape's ``push(v)``/``pop()`` spelled ``tape.append(v)``/
    ``rt.tape_pop(tape)``, whose list forward mode follows, and no releases.

    ``check_structures``: refuse structures on entry, as the generic composed code does
    (``GradFunction.as_function`` reads the ``for_transform`` code again in reverse mode).
    ``aux`` (a gradient compiled with ``has_aux``): the function returns ``(gradients,
    aux)``, the forward sweep's aux beside what the backward sweep returns.

    Raises:
        UnsupportedError: without ``only_gradients``, the gradient records a tape (loops,
            rebinding) or writes into arrays in place (as_function composes those with
            ``for_transform``).
    """
    if only_gradients and not for_transform and compiled.composed_part is not None:
        try:
            return disk_entries.load_composed(compiled)   # loaded with the gradient: no compile
        except Exception:   # a damaged entry: composed below, and stored again
            compiled.composed_part = None
    with_trees(compiled)
    info, bindings = compiled.load
    if only_gradients:
        forward, seed_is_one = compiled.gradient_forward if not aux else (compiled.trees[0], False)
        if aux or for_transform:   # (steps below edit the statements themselves)
            forward, backward = clone(forward), clone(compiled.backward_tree)
        else:
            forward, backward = (templates.composing_copy(forward),
                                 templates.composing_copy(compiled.backward_tree))
        aux = _split_aux(forward) if aux else None
        name = backward.name[:-len("_backward")]
        seed = gast.Constant(value=1.0, kind=None) if seed_is_one else _default_seed_of(forward)
        if for_transform:
            methods = _TapeMethods((forward, backward))
            forward, backward = methods.visit(forward), methods.visit(backward)
            bindings = _detach_constants(forward, bindings)
            if check_structures:   # reverse mode reads it again (api.GradFunction.as_function)
                bindings = composed_entry.check_leaves(forward, info, bindings)
            return _compose(forward, backward, info, bindings, f"gradient_{name}", seed, many,
                            aux=aux, marked=compiled.wrt if check_structures else None)
        # The backward's statements are the sweep's own (composing_copy): their name sets too.
        names, compiled.sweep_names = compiled.sweep_names, None
        function = _compose(forward, backward, info, bindings, f"gradient_{name}", seed, True,
                            release=compiled.scalars, floats=compiled.floats, names=names)
        if compiled.disk_key is not None:   # the next process loads it with the gradient
            disk_entries.store_composed(compiled, function)
        return function
    forward, backward = (clone(t) for t in compiled.trees)
    aux = _split_aux(forward) if aux else None
    refuse_once_differentiable(compiled)
    if compiled.uses_tape or compiled.mutates_saved or compiled.tuple_output:
        raise UnsupportedError(
            f"the gradient of {info.fn.__qualname__} uses a tape (loops, rebinding or indexed "
            f"writes) or has several outputs; differentiating it again is not supported yet",
            info.filename, info.first_lineno,
            hint="Write the first derivative by hand for such code, or use finite differences.")
    bindings = _detach_constants(forward, composed_entry.check_leaves(forward, info, bindings))
    return _compose(forward, backward, info, bindings, f"grad_{forward.name[:-len('_forward')]}",
                    _default_seed_of(forward), many, aux=aux, marked=compiled.wrt)


def _split_aux(forward):
    """The aux of the forward sweep of a has_aux gradient (it returns ``((output, aux),
    saved)``), its return left with the output only; the aux's expression."""
    pair = forward.body[-1].value.elts[0]
    forward.body[-1].value.elts[0] = pair.elts[0]
    return pair.elts[1]


DETACH = "_sg_detach"


def _detach_constants(forward, bindings):
    """Wrap what a statement under ``sg.no_grad`` (or ``detach``) binds in ``sg.detach``
    (under ``sg.set_grad_enabled(flag)``: where the flag is false):
    the first gradient's sweeps skip its adjoint by annotation, which the code read again
    (hvp, hessian, grad of grad) does not carry, so it would differentiate through it."""
    wrapped = False
    for s in ast_util.walk(forward):
        if not isinstance(s, gast.Assign) or isinstance(s.value, gast.Constant):
            continue
        flag = anno.getanno(s, Static.GRAD_FLAG)
        if anno.getanno(s, Static.NO_ADJOINT, False) or flag is not None:
            detached = gast.Call(func=gast.Name(id=DETACH, ctx=gast.Load(), annotation=None,
                                                type_comment=None), args=[s.value], keywords=[])
            # under set_grad_enabled(flag): a constant where the flag is false
            s.value = detached if flag is None else gast.IfExp(
                test=gast.Name(id=flag, ctx=gast.Load(), annotation=None, type_comment=None),
                body=clone(s.value), orelse=detached)
            wrapped = True
    return dict(bindings, **{DETACH: grad_mode.detach}) if wrapped else bindings


class _TapeMethods(ast_util.NodeTransformer):
    """``push = tape.append`` and ``pop = tape.pop`` dropped, ``push(v)`` and ``pop()``
    called as the list's methods. A discarded ``lst.pop()`` (a gradient read again
    reverses an append so) binds what it pops with ``rt.tape_pop``, whose reversal
    puts it back (reverse.py; rules/tape_rules.py): the code of any order reads again."""

    def __init__(self, trees=()):
        taken = {n.id for t in trees for n in ast_util.nodes_of(t, gast.Name)}
        self.popped = next(f"popped_{k}" if k else "popped" for k in range(len(taken) + 1)
                           if (f"popped_{k}" if k else "popped") not in taken)

    def visit_Expr(self, s):
        call = s.value
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) \
                and call.func.attr == "pop" and isinstance(call.func.value, gast.Name) \
                and not call.args and not call.keywords:
            return templates.replace(f"{self.popped} = rt.tape_pop({call.func.value.id})")[0]
        return self.generic_visit(s)

    def visit_Assign(self, s):
        if len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                and s.targets[0].id in ("push", "pop"):
            return None
        return self.generic_visit(s)

    def visit_Call(self, call):
        self.generic_visit(call)
        if isinstance(call.func, gast.Name) and call.func.id == "push":
            call.func = gast.Attribute(value=_load("tape"), attr="append", ctx=gast.Load())
        elif isinstance(call.func, gast.Name) and call.func.id == "pop":
            call.func = gast.Attribute(value=_load("rt"), attr="tape_pop", ctx=gast.Load())
            call.args = [_load("tape")]
        return call


def _load(name):
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def _activity(node, names, kind_map, keep):
    """activity.resolve, less the offsets whose every use cancels (analysis/shift.py: a
    stable softmax's maximum), unless ``keep`` is None (not optimizing) or names them;
    and for each offset dropped, the name and user line of the statement that reads it."""
    act = activity.resolve(node, names, kind_map)
    if keep is None:
        return act, {}
    dropped = shift.cancelling_offsets(node, keep) & act.adjoint
    if not dropped:
        return act, {}
    act = dataclasses.replace(act, active=act.active - dropped, adjoint=act.adjoint - dropped)
    return act, {m: _first_reader(node, m) for m in dropped}


def _first_reader(node, name):
    """The user line of the first top-level statement of ``node`` that reads ``name``
    (the ``z = a - m`` of an offset ``m``), or "" where none has one."""
    for s in node.body:
        if isinstance(s, gast.Assign) and name in ast_util.reads(s.value):
            origin = anno.getanno(s, Static.ORIGIN)
            return origin.source_line.strip() if origin is not None else ""
    return ""


def _default_seed_of(forward):
    """``rt.default_seed(out)`` of the output ``forward`` returns."""
    return gast.Call(func=gast.Attribute(value=gast.Name(id="rt", ctx=gast.Load(), annotation=None,
                                                         type_comment=None),
                                         attr="default_seed", ctx=gast.Load()),
                     args=[forward.body[-1].value.elts[0]], keywords=[])


def _compose(forward, backward, info, bindings, name, seed_value, many, release=None, aux=None,
             marked=None, floats=frozenset(), names=None):
    """Load forward's body, ``seed = seed_value`` and backward's body as one function
    named ``name`` (the saved tuple's names are the forward's own; ``aux``: an expression
    returned beside the gradients, ``return gradients, aux``). ``release`` (the
    names known to hold scalars, or None): free each other value once dead (not for
    code that is differentiated again, where every release would be one more
    rebinding to save). ``marked`` (the names differentiated, or None): reverse mode reads
    it again, so its adjoints start as ``rt.ZERO``, rules are skipped only on that, and a
    gradient that reaches nothing is zeros of its variable (zero_marks.py). ``floats``:
    the names certainly real floats, which a seed of 1.0 need not multiply (unit_seed.py).
    ``names``: the backward's statements' ``NameSets`` where they are the sweep's own (the
    steps below keep it valid), by default a fresh one."""
    seed = backward.args.args[0].id
    if release is None:   # differentiated again
        forward.body = zero_marks.applied(forward.body)
    body = forward.body[:-1] + [gast.Assign(targets=[gast.Name(id=seed, ctx=gast.Store(), annotation=None,
                                                                type_comment=None)],
                                            value=seed_value, type_comment=None)]
    back = [s for s in backward.body if not (isinstance(s, gast.Assign) and isinstance(s.value, gast.Name)
                                            and s.value.id == "saved")]
    # The statements' name sets, shared by the steps below (each keeps them valid).
    names = names if names is not None else ast_util.NameSets()
    if isinstance(seed_value, gast.Constant) and seed_value.value:
        back = unit_seed.known_seed(back, seed, names)
        # An adjoint's ``d = 0.0`` that only a skipped ``if rt.has_grad`` could read is dead.
        zeros = {s.targets[0].id for s in back if isinstance(s, gast.Assign)
                 and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Constant)}
        optimize.dead.eliminate(back, zeros, set(), names=names)
        if seed_value.value == 1.0 and isinstance(seed_value.value, float):
            unit_seed.drop_unit_factors(back, seed, floats, names)
    if marked is not None:
        back = zero_marks.mark(back, marked)
        names.clear()
    results = list(back[-1].value.elts)   # (the backward sweep's own return stays)
    value = gast.Tuple(elts=results, ctx=gast.Load()) if many else results[0]
    back[-1] = gast.Return(value=value if aux is None else gast.Tuple(elts=[value, aux], ctx=gast.Load()))
    body += back
    if release is not None:   # (loop_accumulators: the backward sweep's loops add in place)
        params = {a.id for a in forward.args.posonlyargs + forward.args.args + forward.args.kwonlyargs}
        seeded = body[-len(back) - 1]   # the seed's assignment: the backward sweep follows it
        made = scalar_items.run(body, params, names)   # float64 items read as Python floats in loops
        loop_accumulators.run(body, seeded, floats, names)
        body = optimize.release_dead(body, params, set(release) | made, names)
    composed = gast.FunctionDef(name=name, args=forward.args, body=body, decorator_list=[],
                                returns=None, type_comment=None, type_params=[])
    source = emit.to_source([composed])
    bindings = dict(bindings, rt=runtime)
    origins = emit.origins_later([composed], source)
    (function,), _, _ = loader.load(source, [composed.name], info.globals, info.closure, bindings,
                                    hint=composed.name, origins=origins)
    composed_entry.loaded(function, bindings)
    function._srcgrad_text = (source, origins)   # what disk_entries.store_composed keeps
    function.__defaults__ = info.fn.__defaults__
    function.__kwdefaults__ = info.fn.__kwdefaults__
    if marked is not None:   # what it does not depend on has a zero derivative (api.GradFunction)
        function._srcgrad_is_gradient = True
    return function
