"""The span of time a FILTER's condition lets an event's start lie in, read off the
condition's tree: RETRIEVE under such a FILTER need not read the events outside it
(at a million events, "last year" was twelve years of song plays built into rows and
then filtered away).

Only conjuncts of the kinds below bound the span; anything else leaves it open, so
the span is never narrower than what the condition keeps:

* ``e.start`` compared with an expression of no variable (``today() - days(7)``,
  ``date(2024, 3, 1)``);
* ``year(e.start)`` compared with a number, and ``year(e.start) == Y`` with
  ``month(e.start) == M`` (a month of one year); ``month(e.start) == M`` alone is
  that month of every year, read in the start's local time as the condition does;
* ``date(e.start) == D``.

The span's ends are widened by ``MARGIN`` on each side: the condition reads local
time, the store keeps UTC. This module reads expression trees and evaluates their
constant parts; it runs no query.
"""
from __future__ import annotations

from datetime import date as Date
from datetime import datetime as DateTime
from datetime import timedelta, timezone
from typing import Any

from engine.plan import expr as X

#: more than any local offset from UTC (+14 h, -12 h)
MARGIN = timedelta(days=1)

#: [low, high) in naive UTC (None: open), and the month of the year the start's local
#: time is in (None: any)
Span = tuple[DateTime | None, DateTime | None, int | None]


def _is_start(node: X.Expr, var: str) -> bool:
    return ((isinstance(node, X.GetAttr) and node.name == "start" and isinstance(node.obj, X.Var)
             and node.obj.name == var)
            or (isinstance(node, X.GetItem) and isinstance(node.obj, X.Var) and node.obj.name == var
                and isinstance(node.key, X.Const) and node.key.value == "start"))


def _part_of_start(node: X.Expr, var: str, part: str) -> bool:
    return isinstance(node, X.Call) and node.func == part and len(node.args) == 1 and _is_start(node.args[0], var)


def _constant(node: X.Expr, ctx: X.EvalContext) -> Any:
    """The value of a part of no variable; None where it has one or cannot be evaluated."""
    if any(isinstance(n, X.Var) for n in X.walk(node)):
        return None
    try:
        return X.evaluate(node, {}, ctx)
    except X.EvalError:
        return None


def _instant(value: Any) -> DateTime | None:
    """A date or datetime as a naive UTC instant (a date: its midnight, as if UTC)."""
    if isinstance(value, DateTime):
        return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value
    if isinstance(value, Date):
        return DateTime(value.year, value.month, value.day)
    return None


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}


def _comparisons(body: X.Expr):
    """(left, op, right) of each conjunct that is one comparison, ``and`` taken apart."""
    for part in X.conjuncts(body):
        if isinstance(part, X.BoolOp) and part.op == "and":
            yield from _comparisons(part)
        elif isinstance(part, X.Compare) and len(part.ops) == 1:
            yield part.left, part.ops[0], part.comparators[0]


def start_span(fn: X.Lambda, ctx: X.EvalContext) -> Span | None:
    """The span every event ``fn`` keeps has its start in (widened by ``MARGIN``),
    or None when no conjunct of ``fn`` bounds it."""
    if len(fn.params) != 1:
        return None
    var = fn.params[0]
    low: DateTime | None = None
    high: DateTime | None = None
    years: set[int] = set()
    months: set[int] = set()

    def bound(lo: DateTime | None, hi: DateTime | None) -> None:
        nonlocal low, high
        if lo is not None and (low is None or lo > low):
            low = lo
        if hi is not None and (high is None or hi < high):
            high = hi

    for left, op, right in _comparisons(fn.body):
        if _constant(left, ctx) is not None and _constant(right, ctx) is None:
            left, right, op = right, left, _FLIPPED.get(op, op)
        value = _constant(right, ctx)
        if value is None:
            continue
        if _is_start(left, var) and (at := _instant(value)) is not None:
            # a day more than the bound: a date compares as its local midnight, and
            # the span is widened anyway
            if op in (">", ">="):
                bound(at, None)
            elif op in ("<", "<="):
                bound(None, at + timedelta(days=1))
            elif op == "==":
                bound(at, at + timedelta(days=1))
        elif _part_of_start(left, var, "year") and isinstance(value, int) and not isinstance(value, bool):
            if op == "==":
                years.add(value)
            elif op in (">", ">="):
                bound(DateTime(value + (op == ">"), 1, 1), None)
            elif op in ("<", "<="):
                bound(None, DateTime(value + (op == "<="), 1, 1))
        elif _part_of_start(left, var, "month") and op == "==" and isinstance(value, int) and 1 <= value <= 12:
            months.add(value)
        elif _part_of_start(left, var, "date") and op == "==" and (at := _instant(value)) is not None:
            bound(at, at + timedelta(days=1))
    if len(years) == 1:  # (two years at once keep nothing; left to the FILTER)
        (year,) = years
        if len(months) == 1:
            (month,) = months
            bound(DateTime(year, month, 1), DateTime(year + (month == 12), month % 12 + 1, 1))
        else:
            bound(DateTime(year, 1, 1), DateTime(year + 1, 1, 1))
    month_of_year = next(iter(months)) if len(months) == 1 and not years else None
    if low is None and high is None and month_of_year is None:
        return None
    return (None if low is None else low - MARGIN, None if high is None else high + MARGIN, month_of_year)
