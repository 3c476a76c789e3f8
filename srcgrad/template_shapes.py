"""A string template's variables written as placeholders, so that one parse serves every
template of that shape (``templates.replace``: ``f"{dt} = {dt} + G"`` names the sweep's
variables, a different string each time).
"""

import keyword
import re


# A template's tokens, as far as ``shape`` needs them: numbers (``1e5``: no name in
# them), names, brackets, ``=`` (a keyword argument's) and its longer look-alikes, dots.
_TOKENS = re.compile(r"(\d[\w.]*)|([A-Za-z_]\w*)|([(\[{])|([)\]}])|(==|!=|<=|>=|:=|=)|(\.)")
# Keywords a template may hold around its names (others, ``lambda``, ``del``, ...: not shaped).
_SHAPE_KEYWORDS = {"if", "else", "elif", "is", "not", "and", "or", "in", "for", "while",
                   "None", "True", "False", "pass", "return", "break", "continue"}


def shape(template, subs):
    """``_shape``'s answer, from the answer for an earlier template of the same form: the
    same characters but for the letters and digits of its names (a mask: the tokens
    ``_shape`` reads are the same, at the same places), the same names where ``_shape``
    kept them (attributes, keyword arguments, keywords, substitutions' keys), and names
    equal where they were equal. The placeholders are the earlier template's, each taking
    the name at its place (``_shape`` could pick others where a name is one of them: the
    tree copied is the same). ``f"{dt} = {dt} + G"`` names each adjoint: a new string for
    every gradient added, whose tokens ``_shape`` read one by one."""
    key = (template.translate(_MASK), tuple(subs))
    known = _FORMS.get(key)
    if known is not None:
        found = _like(known, template, subs)
        if found is not None:
            return found
    shaped, renames = _shape(template, subs)
    if renames is not None and len(_FORMS) < _MOST_FORMS:
        _FORMS[key] = _form(template, shaped, renames)
    return shaped, renames


# The characters whose class decides the tokens of ``_TOKENS``: letters (and ``_``) and digits.
_MASK = {c: "a" for c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"}
_MASK.update({c: "0" for c in b"0123456789"})
_FORMS = {}   # (a template's mask, the substitutions' keys) -> _form of the first one seen
_MOST_FORMS = 4096


def _form(template, shaped, renames):
    """What ``shape`` keeps of ``_shape``'s answer for ``template``: the answer, the
    places (start, end, placeholder) of the variables ``_shape`` renamed, and the text
    between them (numbers and kept names included: a template of the same mask may differ
    from ``template`` only in its letters and digits)."""
    places, pieces, at = [], [], 0
    for m in _TOKENS.finditer(shaped):   # (the placeholders: as long as their names)
        if m.group(2) in renames:
            places.append((m.start(), m.end(), m.group(2)))
            pieces.append(template[at:m.start()])
            at = m.end()
    pieces.append(template[at:])
    return shaped, tuple(places), tuple(pieces)


def _like(known, template, subs):
    """``(shaped, renames)`` for ``template`` from ``known`` (``_form``), or None where it
    does not fit."""
    shaped, places, pieces = known
    renames, taken = {}, set()
    at = 0
    for (start, end, place), piece in zip(places, pieces):
        if template[at:start] != piece:
            return None
        at = end
        name = template[start:end]
        have = renames.get(place)
        if have is None:
            if name in taken or name in subs or name in _SHAPE_KEYWORDS or keyword.iskeyword(name):
                return None
            renames[place] = name
            taken.add(name)
        elif have != name:
            return None
    if template[at:] != pieces[-1]:
        return None
    return shaped, renames


def _shape(template, subs):
    """``template`` with each name that is a variable (not an attribute, a keyword
    argument, a keyword or a substitution's key) written as a placeholder of the same
    length, so that the parsed tree is the same, positions included, less the names;
    and the placeholders' names (``{}``: none). Left as it is where quotes, comments or
    other keywords could make a name's role unclear."""
    if "'" in template or '"' in template or "#" in template or "\\" in template:
        return template, None
    tokens = list(_TOKENS.finditer(template))
    names = {m.group(2) for m in tokens if m.group(2) is not None}
    if any(keyword.iskeyword(n) and n not in _SHAPE_KEYWORDS for n in names):
        return template, None
    placeholders, renames = {}, {}
    candidates = {}   # a length -> the placeholders of that length not handed out yet
    pieces, at, depth = [], 0, 0
    for k, m in enumerate(tokens):
        if m.group(3) is not None:
            depth += 1
        elif m.group(4) is not None:
            depth -= 1
        variable = m.group(2)
        if variable is None or variable in subs or variable in _SHAPE_KEYWORDS:
            continue
        if k and tokens[k - 1].group(6) is not None:
            continue   # an attribute
        if depth and k + 1 < len(tokens) and tokens[k + 1].group(5) == "=":
            continue   # a keyword argument
        placeholder = placeholders.get(variable)
        if placeholder is None:
            free = candidates.get(len(variable))
            if free is None:
                free = candidates[len(variable)] = _placeholders(len(variable), names)
            placeholder = placeholders[variable] = next(free, None)
            if placeholder is None:
                return template, None
            renames[placeholder] = variable
        pieces += [template[at:m.start()], placeholder]
        at = m.end()
    pieces.append(template[at:])
    return "".join(pieces), renames


def _placeholders(length, taken):
    """The names of ``length`` characters (a capital and digits: never a keyword) not in
    ``taken``, in order, as an iterator: a template's variables of one length take the
    next one each (a search from the first for each was quadratic in a template of many
    names, as a tape's push of a long loop's values)."""
    if length == 1:
        found = "QZXJKVWYUH"
    else:
        found = (f"{p}{j:0{length - 1}d}" for p in "QZXJ" for j in range(10 ** min(length - 1, 4)))
    return (c for c in found if c not in taken)
