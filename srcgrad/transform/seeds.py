"""Where the backward sweep begins and ends: its seed, its zero adjoints, the hooks on
parameters and the gradients it returns (transform/reverse.py builds what lies between)."""

import gast

from srcgrad.ast_util import name
from srcgrad.templates import replace
from srcgrad.analysis import activity
from srcgrad import optimize
from srcgrad import ast_util
from srcgrad.errors import UnsupportedError


def results(ad, wrt):
    """The backward sweep's results: one gradient (or None) per wrt name."""
    results = []
    zeros = None
    for w in wrt:
        if w in ad.captures:
            results.append(name(ad.captures[w]))
        elif w in ad.act.adjoint:
            results.append(name(ad.d(w)))
        else:   # a zero (0.0: the API boundary shapes it) where only np.floor & co. reach
            if zeros is None:
                zeros = activity.zero_gradient_inputs(ad.node, wrt, ad.kinds)
            results.append(gast.Constant(value=0.0 if w in zeros else None, kind=None))
    return results


def prologue(ad, seed, outputs, tuple_output):
    """The backward sweep's first statements: the seeds and the zero adjoints."""
    prologue = []
    seeded = set()
    own = "rt.own({})" if ad.in_place else "{}"
    if not tuple_output:
        if ad.needs(outputs[0]):
            seeded.add(outputs[0].id)
            if ad.in_place:
                prologue += replace(f"{seed} = rt.own({seed})")
    for primal, dname in sorted(ad.adjoints.items()):
        if primal not in seeded:
            prologue += replace(f"{dname} = 0.0")
    if tuple_output:
        for k, out in enumerate(outputs):
            if ad.needs(out):
                dname = ad.d(out.id)
                if dname not in {ad.adjoints[p] for p in ad.adjoints if p not in seeded}:
                    prologue += replace(f"{dname} = 0.0")
                prologue += replace(f"{dname} = {dname} + " + own.format(f"rt.seq_item({seed}, {k})"))
    for cap in ad.captures.values():
        prologue += replace(f"{cap} = None")
    return prologue


def parameter_hooks(ad):
    """The hooks on parameters, run on their complete gradients at the end of the sweep."""
    out = []
    for param in ad.act.params:
        if param in ad.adjoints:
            d = ad.d(param)
            for hook in ad.hooks.get(param, ()):
                out += replace(f"{d} = rt.run_hook(HOOK, {d}, {param})", HOOK=hook)
            if param in ad.hook_lists:
                out += replace(f"{d} = rt.run_hooks({ad.hook_lists[param]}, {d}, {param})")
    return out


def without_seed_copy(rev, seed):
    """``rev`` without its ``seed = rt.own(seed)`` where the sweep reads the seed only as an
    operand of arithmetic, which makes new arrays, and never writes into it: nothing can
    write into the caller's array (nor into the 1.0 a composed gradient seeds itself with)."""
    copies = [s for s in rev if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
              and s.targets[0].id == seed and optimize.is_rt_call(s.value, "own")
              and isinstance(s.value.args[0], gast.Name) and s.value.args[0].id == seed]
    if len(copies) != 1:
        return rev
    operands, reads = set(), []
    for s in optimize.walk_statements(rev):
        if s is copies[0]:
            continue
        parts = [getattr(s, f) for f in ("test", "target", "iter") if hasattr(s, f)] \
            if isinstance(s, (gast.If, gast.For, gast.While)) else [s]
        for n in (n for part in parts for n in ast_util.walk(part)):
            if isinstance(n, gast.BinOp):
                operands |= {id(n.left), id(n.right)}
            elif isinstance(n, gast.UnaryOp):
                operands.add(id(n.operand))
            elif isinstance(n, gast.Name) and n.id == seed:
                if isinstance(n.ctx, gast.Load):
                    reads.append(n)
                elif not (isinstance(s, gast.Assign) and n in s.targets):
                    return rev   # written in place (``dy += g``, ``dy[i] = g``)
    if any(id(n) not in operands for n in reads):
        return rev
    return [s for s in rev if s is not copies[0]]


def refuse_alias_hook(ad, stmt, node, hooked):
    """A hook on ``z`` whose binding is ``z = y`` would see only the gradient that flows
    through ``z``, while PyTorch hooks the object both names hold: refused where ``y`` is
    read after that binding (the gradient it carries would miss the hook)."""
    order = list(ast_util.walk_statements(node.body))
    here = next(k for k, s in enumerate(order) if s is stmt)
    binding = next((k for k in range(here - 1, -1, -1)
                    if not isinstance(order[k], (gast.For, gast.If, gast.While))
                    and hooked in ast_util.stores(order[k])), None)
    s = order[binding] if binding is not None else None
    if not (isinstance(s, gast.Assign) and isinstance(s.value, gast.Name)):
        return
    source = s.value.id
    if any(source in ast_util.reads(t) for t in order[binding + 1:] if t is not stmt
           and not isinstance(t, (gast.For, gast.If, gast.While))):
        raise ad.error(stmt, UnsupportedError,
                       f"register_hook of {hooked!r}, bound to another variable's value "
                       f"({hooked} = {source}), is not supported: the hook would miss the "
                       f"gradient that flows through {source!r}",
                       f"Hook {source!r} itself, or bind {hooked!r} to a new value.")
