"""FILTER, GROUP_BY, MAP, APPLY, UNNEST, ARGMIN/ARGMAX and SUM/AVG/MIN/MAX over
rows, with SQL semantics on empty inputs and nulls: SUM of nothing is 0, AVG, MIN
and MAX of nothing are null, len of nothing is 0, nulls are skipped by aggregates
and a comparison with null is not true. Every result carries the ids of the
events it was computed from. A failing expression stops the operator with a
message naming the event, never a substituted value.
"""
from __future__ import annotations

import itertools
import re
from datetime import date, datetime, timedelta
from typing import Any

from engine.operators.context import OperatorContext, OperatorError, Scalar
from engine.plan.expr import EvalError, Lambda, call_lambda
from engine.plan import nodes as N
from engine.plan.rows import Row, order_numbers
from engine.plan.spec import TRIP_GAP_DAYS

_CHECK_EVERY = 2000


def _call(op: str, fn: Lambda, row: Row, ctx: OperatorContext) -> Any:
    try:
        return call_lambda(fn, (row,), ctx.eval_context)
    except EvalError as exc:
        raise OperatorError(op, f"failed on event(s) {', '.join(sorted(row.ids)[:3])}: {exc}") from exc


def filter_rows(node: N.Filter, rows: list[Row], ctx: OperatorContext) -> list[Row]:
    out = []
    for i, row in enumerate(rows):
        if i % _CHECK_EVERY == 0:
            ctx.check_cancel()
        if _call("FILTER", node.filter, row, ctx):
            out.append(row)
    return out


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return ("__list__", tuple(_hashable(x) for x in v))
    if isinstance(v, Row):
        return ("__row__", tuple(sorted(v.ids)))
    if isinstance(v, dict):
        return ("__dict__", tuple(sorted((k, _hashable(x)) for k, x in v.items())))
    return v


def group_by(node: N.GroupBy, rows: list[Row], ctx: OperatorContext) -> list[Row]:
    groups: dict[tuple, list[Row]] = {}
    keys: dict[tuple, tuple] = {}
    for i, row in enumerate(rows):
        if i % _CHECK_EVERY == 0:
            ctx.check_cancel()
        for a in node.attr_names:
            if not row.has(a):
                raise OperatorError("GROUP_BY", f"event(s) {', '.join(sorted(row.ids)[:3])} have no attribute {a!r}")
        key = tuple(row.get(a) for a in node.attr_names)
        h = tuple(_hashable(k) for k in key)  # null is one group, as in SQL
        groups.setdefault(h, []).append(row)
        keys.setdefault(h, key)
    out = []
    # largest groups first (ties in order of first appearance), so "my top 3 artists"
    # reads the first rows, and a list shown to the user leads with what matters; the
    # group of events that lack a value comes last, however large
    def order(item):
        return (any(v is None for v in keys[item[0]]), -len(item[1]))

    for h, members in sorted(groups.items(), key=order):
        values = dict(zip(node.attr_names, keys[h]))
        values["group"] = members
        values["count"] = len(members)
        out.append(Row(values, frozenset().union(*(m.ids for m in members))))
    return out


def map_rows(node: N.Map, rows: list[Row], ctx: OperatorContext) -> list[Row]:
    out = []
    for i, row in enumerate(rows):
        if i % _CHECK_EVERY == 0:
            ctx.check_cancel()
        out.append(row.with_values(**{node.res_name: _call("MAP", node.fct, row, ctx)}))
    return out


def apply(node: N.Apply, rows: list[Row], ctx: OperatorContext) -> Scalar:
    ids = frozenset().union(*(r.ids for r in rows)) if rows else frozenset()
    if node.fct == "len":
        return Scalar(len(rows), ids)
    if node.fct == "orders":
        return Scalar(count_orders(rows), ids)
    if node.fct == "trips":
        n, undated = count_trips(rows)
        note = "" if not undated else \
            "1 row without a date was not counted" if undated == 1 else f"{undated} rows without a date were not counted"
        return Scalar(n, ids, note)
    if isinstance(node.fct, Lambda):
        try:
            return Scalar(call_lambda(node.fct, (rows,), ctx.eval_context), ids)
        except EvalError as exc:
            raise OperatorError("APPLY", str(exc)) from exc
    raise OperatorError("APPLY", f"unknown function {node.fct!r}")


def count_orders(rows: list[Row]) -> int:
    """The order numbers the rows give, each once, and each row that gives none."""
    numbers = [order_numbers(row) for row in rows]
    return len(set().union(*numbers)) + sum(1 for found in numbers if not found)


def count_trips(rows: list[Row]) -> tuple[int, int]:
    """(trips, rows without a start): the days the rows span, in runs whose days are
    at most TRIP_GAP_DAYS apart, one trip each. A 7-day calendar trip is one; so are
    a diary's notes from its 2nd, 5th and 7th day."""
    days: set[date] = set()
    undated = 0
    for row in rows:
        s, e = row.get("start"), row.get("end")
        if not isinstance(s, datetime):
            undated += 1
            continue
        last = (e - timedelta(microseconds=1)).date() if isinstance(e, datetime) and e > s else s.date()
        days.update(s.date() + timedelta(days=i) for i in range(min((last - s.date()).days, 366) + 1))
    trips, previous = 0, None
    for day in sorted(days):
        if previous is None or (day - previous).days > TRIP_GAP_DAYS:
            trips += 1
        previous = day
    return trips, undated


# "Ana, Ben and Carl", "Ana & Ben", "Ana; Ben": how a text (an extracted span) lists names
_TEXT_LIST = re.compile(r"\s*(?:,\s*and\s+|,|;|&|\band\b)\s*")


def split_text_list(text: str) -> list[str]:
    return [p.strip() for p in _TEXT_LIST.split(text) if p.strip()]


def unnest(node: N.Unnest, rows: list[Row], ctx: OperatorContext) -> list[Row]:
    out = []
    for row in rows:
        items = row.get(node.nested_attr_name)
        if items is None:
            continue  # unnesting null gives no rows, as in SQL
        if isinstance(items, str):
            items = split_text_list(items)  # an extracted span that lists several
        if not isinstance(items, (list, tuple)):
            raise OperatorError("UNNEST", f"{node.nested_attr_name!r} of event(s) "
                                          f"{', '.join(sorted(row.ids)[:3])} is not a list but {items!r}")
        for item in items:
            new = row.with_values(**{node.unnested_attr_name: item})
            if isinstance(item, Row):
                new = Row(new.values, item.ids, item.raw, item.titles)
            out.append(new)
    return out


def _ordering_error(op: str, a: Any, b: Any) -> OperatorError:
    return OperatorError(op, f"cannot order {type(a).__name__} {a!r} against {type(b).__name__} {b!r}")


def arg_extreme(node: N.ArgMin | N.ArgMax, rows: list[Row], ctx: OperatorContext) -> Scalar:
    op = node.OP
    best: list[Row] = []
    best_val: Any = None
    # "which cuisine most" names a cuisine: the group of events with none (where the
    # extractor found no cuisine) is no answer, however big
    unnamed = [row for row in rows if row.get(node.arg_attr_name) is None and row.get(node.val_attr_name) is not None]
    for row in rows:
        v = row.get(node.val_attr_name)
        if v is None or row.get(node.arg_attr_name) is None:
            continue
        if not best:
            best, best_val = [row], v
            continue
        try:
            better = v > best_val if op == "ARGMAX" else v < best_val
            equal = v == best_val
        except TypeError:
            raise _ordering_error(op, v, best_val) from None
        if better:
            best, best_val = [row], v
        elif equal:
            best.append(row)
    if not best:
        return Scalar(None, frozenset(), f"no row has a {node.arg_attr_name!r}" if unnamed else "no row has a value")
    winner = best[0]
    note = ""
    if len(best) > 1:
        note = (f"tie at {best_val!r} between " +
                ", ".join(repr(_winner(r, node.arg_attr_name)) for r in best[:5]) + "; the first is shown")
    if unnamed:
        note = "; ".join(filter(None, [note, f"{len(unnamed)} row(s) without a {node.arg_attr_name!r} left out"]))
    return Scalar(_winner(winner, node.arg_attr_name), winner.ids, note,
                  tuple(_winner(r, node.arg_attr_name) for r in best[1:]))


def _winner(row: Row, attr: str) -> Any:
    """What an argmax names: ``attr`` of ``row``, or, where ``attr`` is one of the
    keys of a group of several (GROUP_BY year and month), all of that group's keys
    in order: "which month of which year" is answered [2006, 8], not 8."""
    values = row.values
    if "group" in values:
        keys = list(itertools.takewhile(lambda k: k != "group", values))
        if len(keys) > 1 and attr in keys:
            return [values[k] for k in keys]
    return row.get(attr)


def aggregate(node: N.Sum | N.Avg | N.Min | N.Max, rows: list[Row], ctx: OperatorContext) -> Scalar:
    op = node.OP
    present = [(r.get(node.attr_name), r) for r in rows if r.get(node.attr_name) is not None]
    ids = frozenset().union(*(r.ids for _, r in present)) if present else frozenset()
    values = [v for v, _ in present]
    if op in ("SUM", "AVG"):
        for v, r in present:
            if isinstance(v, bool) or not isinstance(v, (int, float, timedelta)):
                raise OperatorError(op, f"{node.attr_name!r} of event(s) {', '.join(sorted(r.ids)[:3])} "
                                        f"is {v!r}, not a number")
        if not values:
            # nothing to add up is 0 ("nothing spent"); rows none of which states the value
            # have no sum (SQL's null): the tip of a dinner whose bill nobody wrote down
            return Scalar(0 if op == "SUM" and not rows else None, ids)
        try:
            total = sum(values[1:], values[0])
        except TypeError:
            raise OperatorError(op, f"cannot add {node.attr_name!r} values of different kinds") from None
        return Scalar(total if op == "SUM" else total / len(values), ids)
    if not values:
        return Scalar(None, ids)
    try:
        best = min(values) if op == "MIN" else max(values)
    except TypeError:
        raise OperatorError(op, f"{node.attr_name!r} values cannot be ordered: "
                                f"{sorted({type(v).__name__ for v in values})}") from None
    # the evidence of a minimum or maximum is the row(s) that hold it
    holders = frozenset().union(*(r.ids for v, r in present if v == best))
    return Scalar(best, holders)
