"""Adversarial plan strings, generated: dunders, attribute chains, comprehensions,
deep nesting and calls outside the whitelist, inside every place a plan holds an
expression. The parser must refuse each with a PlanSyntaxError (and nothing else),
and whatever it accepts prints back to a plan that parses to the same tree."""
from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.plan import PlanSyntaxError, parse_plan, print_plan
from tests.reliability.contract import TALLY

R = 'RETRIEVE(query="runs")'
DUNDERS = ["__class__", "__mro__", "__subclasses__", "__globals__", "__dict__", "__init__", "__builtins__",
           "__import__", "__getattribute__", "__reduce__"]
FORBIDDEN_CALLS = ["open", "getattr", "setattr", "eval", "exec", "compile", "__import__", "print", "type",
                   "globals", "vars", "breakpoint", "input", "os.system", "e.title.format", "object"]

atoms = st.sampled_from(["e", "e.title", "e.start", "e.group", "1", "'x'", "True", "None", "os", "sys",
                         "_secret", "today()", "days(1)"] + DUNDERS)


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda a, attr: f"{a}.{attr}", inner, st.sampled_from(DUNDERS + ["title", "lower", "start"])),
        st.builds(lambda f, a: f"{f}({a})", st.sampled_from(FORBIDDEN_CALLS + ["len", "lower"]), inner),
        st.builds(lambda a, b: f"{a}[{b}]", inner, inner),
        st.builds(lambda a, b: f"({a} and {b})", inner, inner),
        st.builds(lambda a, b: f"[{a} for x in {b}]", inner, inner),
        st.builds(lambda a, b: f"{{{a}: 1 for x in {b}}}", inner, inner),
        st.builds(lambda a: f"(lambda: {a})()", inner),
        st.builds(lambda a, n: "(" * n + a + ")" * n, inner, st.integers(1, 400)),
    )


expressions = st.recursive(atoms, _extend, max_leaves=6)


def _places(expr: str) -> list[str]:
    return [
        expr,
        f"FILTER(l={R}, filter=lambda e: {expr})",
        f"RETRIEVE(query={expr})",
        f'JOIN(l1={R}, l2={R}, condition="{expr}")'.replace("'x'", "1"),
        f"APPLY(l={R}, fct=lambda e: {expr})",
        f"GROUP_BY(l={R}, attr_names=[{expr}])",
    ]


_DUNDER = re.compile(r"__\w+__")
_CALL = re.compile(r"(?<![\w.])(" + "|".join(re.escape(c) for c in FORBIDDEN_CALLS) + r")\(")


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(expr=expressions, place=st.integers(0, 5))
def test_hostile_plans_are_refused_in_plain_words(expr, place):
    text = _places(expr)[place]
    hostile = bool(_DUNDER.search(text) or _CALL.search(text) or " for x in " in text or "lambda: " in text)
    try:
        node = parse_plan(text)
    except PlanSyntaxError as err:
        assert str(err).strip() and len(str(err)) < 600, str(err)
        TALLY[("plan", "hostile" if hostile else "other")]["refused with PlanSyntaxError"] += 1
        return
    # accepted: it must hold nothing hostile, and mean what it prints
    assert not hostile, f"accepted a hostile plan: {text[:300]}"
    assert parse_plan(print_plan(node)) == node
    TALLY[("plan", "other")]["accepted, round-trips"] += 1
