"""Nodes visited by the tree walkers (ast_util.walk, nodes_of, the name sets' walk) and copied
(templates.clone, template instantiation), per caller, in one first call of a fresh
thirty_lines (or a generated function): where the compile walks and copies trees.
    PYTHONPATH=$PWD python3 .dev/walks.py [straight|loop SIZE]"""
import gc, inspect, os, sys, textwrap, collections
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import compile_time as ct, workloads
import srcgrad as sg
from srcgrad import disk_cache, ast_util, templates
disk_cache.settings.enabled = False
cnt = collections.Counter(); total = collections.Counter()
def caller(depth=2):
    f = sys._getframe(depth)
    while f and f.f_code.co_name in ("<genexpr>", "<listcomp>", "<setcomp>", "<dictcomp>", "_sets", "_collect", "loads", "stores", "refs", "calls", "reads", "nodes_of_w", "_names_and_calls_w"):
        f = f.f_back
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_code.co_name}"
ow, on, onc = ast_util.walk, ast_util.nodes_of, ast_util._names_and_calls
def walk_w(node):
    c = caller(); k = 0
    for n in ow(node):
        k += 1; yield n
    cnt[("walk", c)] += k; total["walk"] += k
def size(node):
    return sum(1 for _ in ow(node))
def nodes_of_w(node, cls):
    c = caller(); k = size(node); cnt[("nodes_of", c)] += k; total["nodes_of"] += k
    return on(node, cls)
def _names_and_calls_w(node):
    c = caller(); k = size(node); cnt[("names", c)] += k; total["names"] += k
    return onc(node)
import srcgrad
for mod in list(sys.modules.values()):
    if getattr(mod, "__name__", "").startswith("srcgrad"):
        for nm, w, o in (("walk", walk_w, ow), ("nodes_of", nodes_of_w, on), ("_names_and_calls", _names_and_calls_w, onc)):
            if getattr(mod, nm, None) is o: setattr(mod, nm, w)
oc = templates.clone
depth = [0]
def clone_w(node, *a, **k):
    if depth[0]:
        return oc(node, *a, **k)
    c = caller(); n = size(node) if isinstance(node, srcgrad.ast_util.gast.AST) else sum(size(x) for x in node if isinstance(x, srcgrad.ast_util.gast.AST))
    cnt[("clone", c)] += n; total["clone"] += n
    depth[0] += 1
    try: return oc(node, *a, **k)
    finally: depth[0] -= 1
osub = templates._substituted
def sub_w(node, subs, renames=None):
    if depth[0]:
        return osub(node, subs, renames)
    c = caller(); n = size(node)
    cnt[("template", c)] += n; total["template"] += n
    depth[0] += 1
    try: return osub(node, subs, renames)
    finally: depth[0] -= 1
templates._substituted = sub_w
for mod in list(sys.modules.values()):
    if getattr(mod, "__name__", "").startswith("srcgrad") and getattr(mod, "clone", None) is oc:
        setattr(mod, "clone", clone_w)
if len(sys.argv) > 2:
    src, fname, args, wrt = ct.make_source(int(sys.argv[2]), sys.argv[1]), "f", ct._args(), (0, 1)
else:
    src, fname, args, wrt = textwrap.dedent(inspect.getsource(workloads.thirty_lines)), "thirty_lines", workloads.thirty_lines_make(), (0, 1, 2)
sg.grad(ct.make_function(src, fname), wrt=wrt)(*args)
cnt.clear(); total.clear()
g = sg.grad(ct.make_function(src, fname), wrt=wrt)
g(*args)
print(dict(total), "sum", sum(total.values()))
import collections as C
bymod = C.Counter()
for (w, c), k in cnt.items(): bymod[c.split(":")[0]] += k
print(bymod.most_common(25))
for (w, c), k in cnt.most_common(45):
    print(f"{w:9s} {c:50s} {k}")
