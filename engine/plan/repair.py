"""Repair the planner's most common invalid plan: an operator that reads an attribute
nothing below it produces (``SUM(l=FILTER(RETRIEVE("swimming"), ...), attr_name=
"distance_km")``). ReQAP's rule wants an EXTRACT for it; the repair inserts exactly
that EXTRACT directly under the reader, typed by how the attribute is used. The
repaired plan is validated again like any other; ``count`` and ``group`` are never
extracted (they only mean something after a GROUP_BY, so such a plan stays invalid).

This module rewrites plan trees only; it must not execute anything.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date

from engine.plan import expr as X
from engine.plan import nodes as N
from engine.plan.spec import GROUP_ATTRIBUTES, OPERATORS
from engine.plan.validate import output_attributes


def with_children(plan: N.PlanNode, rewrite: Callable[[N.PlanNode], N.PlanNode]) -> N.PlanNode:
    """``plan`` with ``rewrite`` applied to each of its child plans; the same object
    when no child changed (rewrites run bottom-up by calling this first)."""
    changes: dict[str, N.PlanNode] = {}
    for p in OPERATORS[plan.OP].params:
        if p.kind.value == "plan":
            child = getattr(plan, p.name)
            new = rewrite(child)
            if new is not child:
                changes[p.name] = new
    return replace(plan, **changes) if changes else plan


def add_missing_extracts(plan: N.PlanNode) -> N.PlanNode:
    """``plan`` with an EXTRACT inserted under each single-input operator that reads
    attributes its input does not have; the same object when nothing was missing.

    An attribute is extracted as a number where any operator of the plan reads it as
    one: in ``SUM(FILTER(RETRIEVE("swimming"), e["distance_km"] is not None),
    "distance_km")`` the FILTER alone would make it text, which SUM cannot add."""
    numeric = {name for _, node in N.iter_nodes(plan) for name, kind in _reads(node) if kind == "float"}
    return _insert_extracts(plan, numeric)


def _insert_extracts(plan: N.PlanNode, numeric: set[str]) -> N.PlanNode:
    if isinstance(plan, (N.Qud, N.Retrieve)):
        return plan
    node = with_children(plan, lambda child: _insert_extracts(child, numeric))
    wanted = _reads(node)
    have = output_attributes(node.l) if wanted else None
    if have is not None:
        missing = [(name, kind) for name, kind in wanted if name not in have and name not in GROUP_ATTRIBUTES]
        if missing:
            names = tuple(dict.fromkeys(n for n, _ in missing))
            kinds = tuple("float" if name in numeric else next(k for n, k in missing if n == name)
                          for name in names)
            node = replace(node, l=N.Extract(node.l, names, kinds))
    return node


def _reads(node: N.PlanNode) -> list[tuple[str, str]]:
    """(attribute, type to extract it as) for what a single-input operator reads."""
    if isinstance(node, (N.Sum, N.Avg, N.Min, N.Max)):
        return [(node.attr_name, "float")]
    if isinstance(node, (N.ArgMin, N.ArgMax)):
        return [(node.arg_attr_name, "str"), (node.val_attr_name, "float")]
    if isinstance(node, N.GroupBy):
        return [(a, "str") for a in node.attr_names]
    if isinstance(node, N.Unnest):
        return [(node.nested_attr_name, "str")]
    if isinstance(node, N.Filter):
        return _typed_reads(node.filter.body, node.filter.params[0])
    if isinstance(node, N.Map):
        return _typed_reads(node.fct.body, node.fct.params[0])
    return []


def _typed_reads(body: X.Expr, var: str) -> list[tuple[str, str]]:
    """Attributes a lambda reads: a number where it is compared with or computed
    against a number, else text."""
    numeric: set[str] = set()
    for node in X.walk(body):
        if isinstance(node, X.Compare):
            sides = (node.left, *node.comparators)
            if any(isinstance(s, X.Const) and isinstance(s.value, (int, float)) and not isinstance(s.value, bool)
                   for s in sides):
                for s in sides:
                    numeric |= X.attributes_read(s, var) if not isinstance(s, X.Call) else set()
        elif isinstance(node, X.BinOp):
            numeric |= X.attributes_read(node.left, var) | X.attributes_read(node.right, var)
    return [(name, "float" if name in numeric else "str") for name in sorted(X.attributes_read(body, var))]


#: the calendar fields a date has, coarsest first
_FIELDS = ("year", "month", "day")


def bind_relative_dates(plan: N.PlanNode) -> N.PlanNode:
    """``plan`` with each FILTER that compares one calendar field of a time with the
    same field of a date relative to today (``month(e.start) == month(today() -
    days(30))``) also comparing the coarser fields of the two (``year(e.start) ==
    year(today() - days(30))``); the same object when none lacks them.

    A date relative to today is one day, and its month without its year is that
    month of every year: the planner wrote such a filter for "last month", and at a
    million events a count of last month's songs came out 61,292, every January of
    twelve years. A field compared with a constant (``month(e.start) == 12``: "in
    December", any year), a time whose other fields are compared too (its month and
    day: this day in every year) and anything but a plain equality are left as
    written."""

    def rewrite(node: N.PlanNode) -> N.PlanNode:
        node = with_children(node, rewrite)
        if not isinstance(node, N.Filter):
            return node
        parts = X.conjuncts(node.filter.body)
        out: list[X.Expr] = []
        for c in parts:
            # "this day in any year" says its month too: a time with another field compared stays
            if _relative_field(c) and not any(_compares_field(parts, other, c.left.args)
                                              for other in _FIELDS if other != c.left.func):
                out += [X.Compare(X.Call(coarser, c.left.args), ("==",), (X.Call(coarser, c.comparators[0].args),))
                        for coarser in _FIELDS[:_FIELDS.index(c.left.func)]]
            out.append(c)
        if len(out) == len(parts):
            return node
        return replace(node, filter=X.Lambda(node.filter.params, X.conjoin(out)))

    return rewrite(plan)


def _relative_field(c: X.Expr) -> bool:
    """``c`` is ``F(x) == F(d)`` for a calendar field F and a ``d`` that reads ``today()``."""
    return (isinstance(c, X.Compare) and c.ops == ("==",) and len(c.comparators) == 1
            and isinstance(c.left, X.Call) and c.left.func in _FIELDS and len(c.left.args) == 1
            and isinstance(right := c.comparators[0], X.Call) and right.func == c.left.func
            and len(right.args) == 1
            and any(isinstance(x, X.Call) and x.func == "today" for x in X.walk(right))
            and not any(isinstance(x, X.Call) and x.func == "today" for x in X.walk(c.left)))


def _compares_field(parts: list[X.Expr], field: str, when: tuple[X.Expr, ...]) -> bool:
    """Some conjunct already says something of ``field`` of ``when`` (any comparison)."""
    return any(isinstance(x, X.Call) and x.func == field and x.args == when
               for c in parts for x in X.walk(c))


def over_the_days_read(plan: N.PlanNode, spans: Sequence[tuple[date, date]]) -> N.PlanNode:
    """``plan`` with each FILTER condition that keeps the first day of a span of days
    the question was read to name (``spans``: "last week" read as Monday 19 to Sunday
    25 August 2024, :mod:`engine.temporal`) and says nothing of its last day keeping
    the whole span: ``date(e.start) == date(2024, 8, 19)`` becomes ``date(e.start) >=
    date(2024, 8, 19) and date(e.start) <= date(2024, 8, 25)``. Told "in the week of
    Monday, 19 August 2024", the tuned planner keeps that Monday alone (3 of 3 plans;
    told "between" the two days or "since" the Monday, 5 of 7, on questions of the
    repair's own, not the benchmarks'). The same object when nothing changed."""
    spans = [(first, last) for first, last in spans if last > first]
    if not spans:
        return plan

    def rewrite(node: N.PlanNode) -> N.PlanNode:
        node = with_children(node, rewrite)
        if not isinstance(node, N.Filter):
            return node
        said = {d for x in X.walk(node.filter.body) if (d := _date_constant(x)) is not None}
        body = _over_spans(node.filter.body, spans, said)
        return node if body is node.filter.body else replace(node, filter=X.Lambda(node.filter.params, body))

    return rewrite(plan)


def _over_spans(expr: X.Expr, spans: list[tuple[date, date]], said: set[date]) -> X.Expr:
    """``expr`` with each ``x == date(first)`` of a span whose last day no part of the
    condition (its days: ``said``) names made ``first <= x <= last``."""
    if isinstance(expr, X.BoolOp):
        values = tuple(_over_spans(v, spans, said) for v in expr.values)
        if all(a is b for a, b in zip(values, expr.values)):
            return expr
        if expr.op == "and":  # "a and (b and c)" is "a and b and c"
            values = tuple(x for v in values for x in X.conjuncts(v))
        return X.BoolOp(expr.op, values)
    if not (isinstance(expr, X.Compare) and expr.ops == ("==",) and len(expr.comparators) == 1):
        return expr
    day = _date_constant(expr.comparators[0])
    for first, last in spans:
        if day == first and last not in said:
            left = expr.left
            return X.BoolOp("and", (X.Compare(left, (">=",), (_date_call(first),)),
                                    X.Compare(left, ("<=",), (_date_call(last),))))
    return expr


def _date_constant(x: X.Expr) -> date | None:
    """The day ``date(y, m, d)`` says, for constant ``y``, ``m``, ``d``."""
    if isinstance(x, X.Call) and x.func == "date" and len(x.args) == 3 \
            and all(isinstance(a, X.Const) and isinstance(a.value, int) for a in x.args):
        try:
            return date(*(a.value for a in x.args))
        except ValueError:
            return None
    return None


def _date_call(d: date) -> X.Call:
    return X.Call("date", (X.Const(d.year), X.Const(d.month), X.Const(d.day)))
