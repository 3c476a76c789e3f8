"""Load generated source as functions that see the user's live globals and closure.

The source is registered in ``linecache`` under a file name of its own, so
tracebacks, ``inspect.getsource`` and pdb show the generated lines. The
functions get the user function's globals dictionary (a rebinding of a global
is seen) and closure cells for the user's own free variables (live too); names
srcgrad adds (``rt``, rules called at run time, objects of inlined helpers from
other modules) come through cells of their own.
"""

import itertools
import linecache
import types

_counter = itertools.count()


def load(source, function_names, user_globals, user_cells, bindings, hint="f"):
    """Compile ``source`` and return its functions, in the order of ``function_names``.

    Args:
        source: module source with one def per name in ``function_names``.
        user_globals: the dict the functions use as globals.
        user_cells: dict name -> cell of the user function's closure.
        bindings: dict name -> object for srcgrad's own free names.
    """
    filename = f"<srcgrad {hint} #{next(_counter)}>"
    free = sorted(set(user_cells) | set(bindings))
    # A factory whose locals are the free names makes them closure variables of the defs.
    header = "def __srcgrad_factory__():\n"
    header += "".join(f"    {n} = None\n" for n in free) or "    pass\n"
    indented = "".join("    " + line + "\n" if line.strip() else "\n" for line in source.splitlines())
    footer = f"    return ({', '.join(function_names)},)\n"
    full = header + indented + footer
    code = compile(full, filename, "exec")
    linecache.cache[filename] = (len(full), None, full.splitlines(True), filename)
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = {c.co_name: c for c in factory_code.co_consts if isinstance(c, types.CodeType)}
    cells = {n: user_cells[n] if n in user_cells else types.CellType(bindings[n]) for n in free}
    functions = []
    for fname in function_names:  # a function may call those listed before it
        fcode = inner[fname]
        closure = tuple(cells[n] for n in fcode.co_freevars)
        functions.append(types.FunctionType(fcode, user_globals, fname, None, closure or None))
        cells.setdefault(fname, types.CellType(functions[-1]))
    return functions, full, filename
