"""Adversarial plans are refused with a clear error naming the operator and the
offending construct, and nothing in the plan language runs text as code."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine.plan import PlanSyntaxError, parse_plan

R = 'RETRIEVE(query="runs")'


def F(body: str) -> str:
    return f"FILTER(l={R}, filter=lambda e: {body})"


def J(cond: str) -> str:
    return f'JOIN(l1={R}, l2={R}, condition="{cond}")'


CASES = [
    # (plan text, operator named in the error, construct named in the error)
    ('__import__("os").system("rm -rf ~")', "", "Call"),
    ('RETRIEVE(query=__import__("os").getcwd())', "RETRIEVE", "Call"),
    (F("e.__class__"), "FILTER", "__class__"),
    (F("e.start.__class__.__mro__"), "FILTER", "__mro__"),
    (F('e["__dict__"]'), "FILTER", "__dict__"),
    (F("[x for x in e.group]"), "FILTER", "a list comprehension"),
    (F("{x: 1 for x in e.group}"), "FILTER", "a dict comprehension"),
    (F("sum(x for x in e.group)"), "FILTER", "a generator expression"),
    (F('open("/etc/passwd").read()'), "FILTER", "read"),
    (F('open("/etc/passwd")'), "FILTER", "open"),
    (F('getattr(e, "title")'), "FILTER", "getattr"),
    (F("type(e)"), "FILTER", "type"),
    (F('e.title.format(e)'), "FILTER", "format"),
    (F("(lambda: 1)()"), "FILTER", "Lambda"),
    (F("e.x if (y := 1) else 0"), "FILTER", "an assignment expression (:=)"),
    (F('f"{e.title}"'), "FILTER", "an f-string"),
    (F('{"a": 1}'), "FILTER", "a dict literal"),
    (F("e.group[1:2]"), "FILTER", "a slice"),
    (F("os"), "FILTER", "os"),
    (F("e.count > 10 ** 9"), "FILTER", "** (power)"),
    (F("e.count > 1" + "0" * 40), "FILTER", "huge literal"),
    (F("e.x is 3"), "FILTER", "is"),
    (F('b"bytes" == e.title'), "FILTER", "bytes"),
    (F("_secret"), "FILTER", "_secret"),
    (f"FILTER(l={R}, filter=lambda e, *rest: True)", "FILTER", "lambda parameters"),
    (f"FILTER(l={R}, filter=lambda e, f: True)", "FILTER", "lambda parameters"),
    (f"FILTER(l={R}, filter=True)", "FILTER", "Constant"),
    (J("__import__('os')"), "JOIN", "__import__"),
    (J("i1.start.__globals__"), "JOIN", "__globals__"),
    (J("i3.start < i2.start"), "JOIN", "i3"),
    (J("exec('1')"), "JOIN", "exec"),
    ('RETRIEVE(query="' + "x" * 5000 + '")', "RETRIEVE", "huge literal"),
    (F("(" * 300 + "1" + ")" * 300), "", "nesting"),
    ("FILTER(l=" * 80 + R + ", filter=lambda e: True)" * 80, "", "nesting"),
    ('EVAL(query="x")', "", "EVAL"),
    ('RETRIEVE("runs", "walks")', "RETRIEVE", "positional argument"),
    ('RETRIEVE("runs", query="walks")', "RETRIEVE", "query"),
    ('RETRIEVE(*["runs"])', "RETRIEVE", "*args"),
    ('RETRIEVE(query="x", **{"a": 1})', "RETRIEVE", "**kwargs"),
    ('RETRIEVE(query="x", limit=5)', "RETRIEVE", "limit"),
    ("GROUP_BY(l=" + R + ")", "GROUP_BY", "missing parameter"),
    (f"APPLY(l={R}, fct=print)", "APPLY", "print"),
    (f'EXTRACT(l={R}, attr_names=["a"], attr_types=[object])', "EXTRACT", "object"),
    (f'EXTRACT(l={R}, attr_names=["a"] * 99, attr_types=[str])', "EXTRACT", "BinOp"),
    (f"GROUP_BY(l={R}, attr_names=[" + ", ".join('"a"' for _ in range(60)) + "])", "GROUP_BY", "huge literal"),
    ('RETRIEVE(query="x"); import os', "", "syntax"),
    ('RETRIEVE(query="x")\x00', "", "NUL"),
    ('QUD("a", "b")', "QUD", "arguments"),
    ("x" * 30_000, "", "length"),
]


@pytest.mark.parametrize("text,operator,construct", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_adversarial_plan_is_rejected(text, operator, construct):
    with pytest.raises(PlanSyntaxError) as info:
        parse_plan(text)
    err = info.value
    assert err.operator == operator
    assert construct in err.construct or construct in str(err), (err.construct, str(err))
    if operator:
        assert str(err).startswith(f"{operator}:")
    assert len(str(err)) < 600  # a message a planner prompt (and a person) can use


def test_unknown_operator_lists_the_known_ones():
    with pytest.raises(PlanSyntaxError, match="known operators: RETRIEVE, EXTRACT"):
        parse_plan('EVAL(query="x")')


def test_there_are_enough_cases():
    assert len(CASES) >= 20


def test_plan_code_never_evaluates_text():
    """No eval/exec/compile/__import__ calls and no getattr in the plan language or
    the operators: plans are interpreted node by node."""
    root = Path(__file__).resolve().parents[1] / "engine"
    files = [*(root / "plan").glob("*.py"), *(root / "operators").glob("*.py"), root / "execute.py"]
    assert len(files) > 8
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"eval", "exec", "compile", "__import__"}, f"{path}:{node.lineno}"
                if path.name == "expr.py":
                    assert node.func.id != "getattr", f"{path}:{node.lineno}"


@pytest.mark.parametrize("body,message", [
    ('len(e.title * 999999999999) > 0', "too large"),
    ("e.start + days(999999999999) > e.start", "out of range"),
    ("today() + days(99999999) > e.start", "out of range"),
])
def test_runaway_expressions_fail_in_plain_words(body, message):
    """Plans that parse but would exhaust memory or overflow stop with a message."""
    from datetime import date, datetime, timezone

    from engine.operators import Models, OperatorContext, OperatorError
    from engine.operators.relational import filter_rows
    from engine.plan.rows import Row
    row = Row({"title": "run", "start": datetime(2024, 1, 1, tzinfo=timezone.utc)}, ("ev-1",))
    node = parse_plan(f'FILTER(l=RETRIEVE(query="x"), filter=lambda e: {body})')
    ctx = OperatorContext(store=None, models=Models(), today=date(2024, 6, 1))
    with pytest.raises(OperatorError, match=f"FILTER: failed on event.*ev-1.*{message}"):
        filter_rows(node, [row], ctx)
