"""Reverse mode's parts: the control-flow templates, the tape tags, the typed result of build."""

import astor
import gast

from srcgrad import anno, templates
from srcgrad.transform import control_flow, tape

Static = anno.Static


def _source(stmts):
    return astor.to_source(gast.gast_to_ast(gast.Module(body=stmts, type_ignores=[]))).strip()


def test_a_statement_block_is_spliced_into_a_template_as_it_is():
    body = templates.replace("y = x * 2")
    filled = templates.replace("for i in range(n):\n    BODY\n    z = 1", BODY=body)
    assert filled[0].body[0] is body[0]
    assert _source(filled) == "for i in range(n):\n    y = x * 2\n    z = 1"


def test_an_empty_block_in_a_template_becomes_pass():
    assert _source(templates.replace("while t:\n    BODY", BODY=[])) == "while t:\n    pass"


def test_a_loop_template_tags_its_pushes_and_pops_but_not_its_body():
    body = [tape.push(templates.name("y"), None, ("item", "y"))]
    fwd, rev = control_flow.for_loop("v", templates.name("xs"), "n_v", body, tape.pop_into("y", ("item", "y")),
                                     [], None)
    assert _source(fwd) == ("push(v)\nn_v = 0\nfor v in xs:\n    n_v = n_v + 1\n    push(y)\n"
                            "    push(v)\npush(n_v)")
    assert [anno.getanno(s, Static.TAPE) for s in fwd[:1] + fwd[2].body[1:] + fwd[3:]] == \
        ["v", ("item", "y"), "v", "n_v"]
    assert _source(rev) == "n_v = pop()\nfor _ in range(n_v):\n    v = pop()\n    y = pop()\nv = pop()"
    assert [anno.getanno(s, Static.TAPE) for s in rev[:1] + rev[1].body + rev[2:]] == \
        ["n_v", "v", ("item", "y"), "v"]


def test_a_range_loop_ended_by_a_break_saves_the_prefix_it_ran():
    stop = templates.replace("if stop:\n    break")
    fwd, rev = control_flow.range_loop("i", templates.replace_as_expression("range(n)"), "range_i", "n_i",
                                       [], [], stop, True, None)
    assert _source(fwd) == ("push(i)\nrange_i = range(n)\nn_i = 0\nfor i in range_i:\n    n_i = n_i + 1\n"
                            "    if stop:\n        break\npush(range_i[:n_i])")
    assert anno.getanno(fwd[-1], Static.TAPE) == "range_i"
    assert _source(rev) == "range_i = pop()\nfor i in reversed(range_i):\n    pass\ni = pop()"
