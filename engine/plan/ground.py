"""Drop time filters the question never asked for.

The 1.5B planner copies time windows from its in-context examples: "Who did I run
with most often" came back filtered to ``year(e.start) == 2023``, and "When did I
last go running?" to the past seven days. Such a filter silently changes the answer.
A conjunct of a FILTER is dropped when it is one of these shapes and the question
gives it no ground:

* a year constant (``year(e.start) == 2023``) whose digits the question does not contain;
* a comparison with ``today()`` when the question names no relative time ("last
  week", "this year", "ago", "recently" ... — "last" alone is not one: "when did I
  last go running");
* a month constant (``month(e.start) == 6``) when the question names no month,
  season, holiday, birthday or "month".

Everything else is kept as written. A FILTER left with no condition is removed.

One more rule repairs a plan rather than trimming it: asked "how many messages did I
write", the planner adds up the messages (``SUM(..., attr_name="message")`` over
text). :func:`count_instead_of_adding_text` makes such a plan count its rows.

This module rewrites plan trees only; it must not execute anything.
"""
from __future__ import annotations

import re
from dataclasses import replace

from engine.plan import expr as X
from engine.plan import nodes as N
from engine.plan.repair import with_children
from engine.plan.validate import text_attributes

_COUNTING = re.compile(r"\b(how many|how often|number of|count)\b", re.I)

_RELATIVE = re.compile(
    r"\b(today|tonight|yesterday|tomorrow|week|weeks|weekend|month|months|year|years|day|days|ago|recent|"
    r"recently|lately|since|past|previous|current|currently|so far|this (morning|evening|spring|summer|autumn|"
    r"fall|winter))\b", re.I)
_MONTHS = re.compile(
    r"\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(t|tember)?|oct(ober)?|"
    r"nov(ember)?|dec(ember)?|spring|summer|autumn|fall|winter|christmas|easter|birthday|anniversary|month|months|"
    r"monthly|quarter)\b", re.I)


def drop_ungrounded_time_filters(plan: N.PlanNode, question: str) -> N.PlanNode:
    """``plan`` without the time conditions ``question`` does not ground (see the
    module docstring); the same object when nothing was dropped."""
    if isinstance(plan, (N.Qud, N.Retrieve)):
        return plan
    node = with_children(plan, lambda child: drop_ungrounded_time_filters(child, question))
    if not isinstance(node, N.Filter):
        return node
    body = node.filter.body
    conjuncts = list(body.values) if isinstance(body, X.BoolOp) and body.op == "and" else [body]
    kept = [c for c in conjuncts if _grounded(c, question)]
    if len(kept) == len(conjuncts):
        return node
    if not kept:
        return node.l
    new_body = kept[0] if len(kept) == 1 else X.BoolOp("and", tuple(kept))
    return replace(node, filter=X.Lambda(node.filter.params, new_body))


def _grounded(conjunct: X.Expr, question: str) -> bool:
    calls = {n.func for n in X.walk(conjunct) if isinstance(n, X.Call)}
    ints = [n.value for n in X.walk(conjunct)
            if isinstance(n, X.Const) and isinstance(n.value, int) and not isinstance(n.value, bool)]
    if "today" in calls:
        return bool(_RELATIVE.search(question))
    if "year" in calls:
        years = [v for v in ints if 1900 <= v <= 2100]
        if years and not all(str(y) in question for y in years):
            return False
    if "month" in calls and "year" not in calls and ints and not _MONTHS.search(question):
        return False
    return True


def count_instead_of_adding_text(plan: N.PlanNode, question: str) -> N.PlanNode:
    """A top SUM over an attribute extracted as text, for a question that asks how
    many or how often, becomes ``APPLY(l=..., fct=len)``; the attribute's EXTRACT
    goes too when nothing else reads it. Otherwise ``plan`` itself."""
    if not (isinstance(plan, N.Sum) and _COUNTING.search(question)
            and plan.attr_name in text_attributes(plan.l)):
        return plan
    return N.Apply(_without_extract(plan.l, plan.attr_name), "len")


def _without_extract(plan: N.PlanNode, name: str) -> N.PlanNode:
    """``plan`` without ``name`` in the EXTRACT that gives it, looking down through
    FILTERs that do not read it; unchanged when anything else is in the way."""
    if isinstance(plan, N.Filter) and name not in X.attributes_read(plan.filter.body, plan.filter.params[0]):
        inner = _without_extract(plan.l, name)
        return plan if inner is plan.l else replace(plan, l=inner)
    if isinstance(plan, N.Extract) and name in plan.attr_names:
        kept = [(n, t) for n, t in zip(plan.attr_names, plan.attr_types) if n != name]
        if not kept:
            return plan.l
        return replace(plan, attr_names=tuple(n for n, _ in kept), attr_types=tuple(t for _, t in kept))
    return plan
