"""JOIN, executed in DuckDB.

The condition (an expression over ``i1``/``i2``) is compiled to SQL so DuckDB can
use range joins for temporal conditions: overlap, one span before/after the other
within a window, same local day, equality of attributes. Datetimes go in twice:
as UTC, for comparing instants across time zones, and as local time, for
``date``/``hour``/``weekday``. A condition the compiler does not cover is evaluated
row pair by row pair in Python instead (and the node says so). Rows never pass
through SQL: only their index and the attributes the condition reads.

An event whose span is whole local days (a diary's day note, an all-day calendar
entry) says on which day it began and ended, not when: "Osteria da Hänel for
dinner" in the note of 16 February starts at midnight, and "i2.start > i1.end"
after that evening's football game was false. In compiled conditions such an
event's start is any instant of its first day and its end any instant of its last,
and a comparison holds when some instants make it hold (interval arithmetic: each
instant is a lower and an upper bound, equal for timed events). A day is taken to
begin at 6 am: Friday's note of a lunch is no meal within six hours after
Thursday's game that ended at 20:30. Calendar parts (``same_day``, ``hour`` ...)
read the local start as before. The Python fallback compares the midnights.

An entry of several whole days (a trip, a holiday) is different: it occupies its
days, so what happened on its last day happened during it, not after ("the first
run after the Lisbon trip" is no run in Lisbon on the morning of its last day), and
its span is compared exactly, first midnight to last, in SQL as in Python.

A row is no pair with itself: one record that both searches found is one
happening, not one happening after (or during) another. (A row merged from a day
note and a game may pair with the same note found for the dinner: the note then
tells of both.)
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any

import duckdb
import pyarrow as pa

from engine.operators.context import OperatorContext, OperatorError
from engine.operators.retrieve import MERGED_TEXTS
from engine.plan import expr as X
from engine.plan.expr import EvalError, evaluate
from engine.plan.nodes import Join
from engine.plan.rows import Row, spans_whole_days

log = logging.getLogger(__name__)


class _NotSql(Exception):
    pass


@dataclass(frozen=True)
class _Sql:
    sql: str                 # UTC for datetimes; the lower bound of an instant
    local: str | None = None  # local wall time, for datetimes only
    hi: str | None = None     # the upper bound of an instant of whole-day events

    @property
    def upper(self) -> str:
        return self.hi or self.sql


def _column_type(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if not present:
        return "VARCHAR"
    if all(isinstance(v, datetime) for v in present):
        return "TIMESTAMP"
    if all(isinstance(v, date) and not isinstance(v, datetime) for v in present):
        return "DATE"
    if all(isinstance(v, bool) for v in present):
        return "BOOLEAN"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "DOUBLE"
    if all(isinstance(v, str) for v in present):
        return "VARCHAR"
    raise _NotSql(f"mixed value types {sorted({type(v).__name__ for v in present})}")


def _utc(v: datetime | None) -> datetime | None:
    if v is None:
        return None
    return v.astimezone(timezone.utc).replace(tzinfo=None) if v.tzinfo else v


def _wall(v: datetime | None) -> datetime | None:
    return None if v is None else v.replace(tzinfo=None)


_DAY = timedelta(days=1)
_MORNING = timedelta(hours=6)  # what a day's note tells of happened after 6 am


def _bounds(row: Row, attr: str, value: datetime | None) -> tuple[datetime | None, datetime | None]:
    """The earliest and latest instant ``value`` (the row's start or end) can stand for."""
    if attr not in ("start", "end") or value is None or not spans_whole_days(row):
        return value, value
    if (row.get("end").date() - row.get("start").date()).days > 1:  # several days, occupied whole
        return value, value
    if attr == "start":
        return value + _MORNING, value + _DAY
    return value - _DAY + _MORNING, value


def _side_table(rows: list[Row], attrs: set[str]) -> tuple[pa.Table, dict[str, str]]:
    cols: dict[str, list] = {"_idx": list(range(len(rows)))}
    types: dict[str, str] = {}
    for a in sorted(attrs):
        for r in rows:
            if not r.has(a) and a != "end":
                raise OperatorError("JOIN", f"event(s) {', '.join(sorted(r.ids)[:3])} have no attribute {a!r}; "
                                            "extract it before the join")
        values = [r.get(a) for r in rows]
        if a == "end":  # a point event ends when it starts
            values = [r.get("end") or r.get("start") for r in rows]
        t = _column_type(values)
        types[a] = t
        if t == "TIMESTAMP":
            bounds = [_bounds(r, a, v) for r, v in zip(rows, values)]
            cols[f"{a}__utc"] = pa.array([_utc(lo) for lo, _ in bounds], pa.timestamp("us"))
            cols[f"{a}__hi"] = pa.array([_utc(hi) for _, hi in bounds], pa.timestamp("us"))
            cols[f"{a}__local"] = pa.array([_wall(v) for v in values], pa.timestamp("us"))
        elif t == "DOUBLE":
            cols[a] = pa.array([None if v is None else float(v) for v in values], pa.float64())
        elif t == "BOOLEAN":
            cols[a] = pa.array(values, pa.bool_())
        elif t == "DATE":
            cols[a] = pa.array(values, pa.date32())
        else:
            cols[a] = pa.array(values, pa.string())
    return pa.table(cols), types


def _lit(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, date):
        return f"DATE '{v.isoformat()}'"
    raise _NotSql(f"literal {v!r}")


_CMP = {"==": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_PART = {"year": "year", "month": "month", "day": "day", "hour": "hour", "minute": "minute"}


class _Compiler:
    def __init__(self, types: dict[str, dict[str, str]], today: date):
        self.types = types  # alias -> attr -> type
        self.today = today
        self.alias = {"i1": "a", "i2": "b"}

    def ref(self, var: str, attr: str) -> _Sql:
        t = self.types[var].get(attr)
        if t is None:
            raise _NotSql(f"{var}.{attr} unknown")
        a = self.alias[var]
        if t == "TIMESTAMP":
            return _Sql(f'{a}."{attr}__utc"', f'{a}."{attr}__local"', f'{a}."{attr}__hi"')
        return _Sql(f'{a}."{attr}"')

    def span(self, e: X.Expr) -> tuple[str, str]:
        """The earliest start and the latest end."""
        if not (isinstance(e, X.Var) and e.name in self.alias):
            raise _NotSql("span of a non-row")
        s, en = self.ref(e.name, "start"), self.ref(e.name, "end")
        return s.sql, en.upper

    def c(self, e: X.Expr) -> _Sql:
        if isinstance(e, X.Const):
            return _Sql(_lit(e.value))
        if isinstance(e, (X.GetAttr, X.GetItem)) and isinstance(e.obj, X.Var) and e.obj.name in self.alias:
            name = e.name if isinstance(e, X.GetAttr) else e.key.value
            if not isinstance(name, str):
                raise _NotSql("index")
            return self.ref(e.obj.name, name)
        if isinstance(e, X.BoolOp):
            return _Sql("(" + f" {e.op.upper()} ".join(self.c(v).sql for v in e.values) + ")")
        if isinstance(e, X.Unary):
            inner = self.c(e.operand)
            if e.op == "not":
                # plan expressions are two-valued (a comparison with null is false, so
                # its negation is true), SQL is three-valued: map null to false first
                return _Sql(f"(NOT COALESCE({inner.sql}, FALSE))")
            return _Sql(f"(-{inner.upper})", hi=inner.hi and f"(-{inner.sql})")
        if isinstance(e, X.BinOp):
            if e.op not in ("+", "-", "*", "/", "%"):
                raise _NotSql(e.op)
            l, r = self.c(e.left), self.c(e.right)
            # bounds: the least and the greatest the result can be
            if not (l.hi or r.hi):
                lo, hi = f"({l.sql} {e.op} {r.sql})", None
            elif e.op in ("+", "-"):
                lo = f"({l.sql} {e.op} {r.upper if e.op == '-' else r.sql})"
                hi = f"({l.upper} {e.op} {r.sql if e.op == '-' else r.upper})"
            elif e.op in ("*", "/") and not r.hi and isinstance(e.right, X.Const) \
                    and isinstance(e.right.value, (int, float)) and e.right.value > 0:
                lo, hi = f"({l.sql} {e.op} {r.sql})", f"({l.upper} {e.op} {r.sql})"
            else:
                raise _NotSql(f"{e.op} of bounded instants")
            if l.local is not None and r.local is not None:
                return _Sql(lo, hi=hi)  # an interval between instants
            if l.local is not None or r.local is not None:
                return _Sql(lo, f"({l.local or l.sql} {e.op} {r.local or r.sql})", hi)
            return _Sql(lo, hi=hi)
        if isinstance(e, X.Compare):
            parts, left = [], self.c(e.left)
            for op, comp in zip(e.ops, e.comparators):
                right = _Sql("") if isinstance(comp, X.ListLit) and op in ("in", "not in") else self.c(comp)
                parts.append(self.compare(op, left, right, comp))
                left = right
            return _Sql("(" + " AND ".join(parts) + ")")
        if isinstance(e, X.Call):
            return self.call(e)
        raise _NotSql(type(e).__name__)

    def compare(self, op: str, l: _Sql, r: _Sql, r_expr: X.Expr) -> str:
        if op in ("is", "is not"):
            return f"({l.local or l.sql} IS {'NOT ' if op == 'is not' else ''}NULL)"
        if op in ("in", "not in"):
            if isinstance(r_expr, X.ListLit):
                items = ", ".join(self.c(i).sql for i in r_expr.items)
                return f"({l.sql} {'NOT ' if op == 'not in' else ''}IN ({items}))"
            found = f"(position(lower({l.sql}) IN lower({r.sql})) > 0)"
            return found if op == "in" else f"(NOT {found})"
        if (l.local is None) != (r.local is None):
            # an instant against a plain date or wall time: compare local wall time
            return f"({l.local or l.sql} {_CMP[op]} {r.local or r.sql})"
        if not (l.hi or r.hi):
            return f"({l.sql} {_CMP[op]} {r.sql})"
        # some instants within the bounds make it hold
        if op in ("<", "<="):
            return f"({l.sql} {op} {r.upper})"
        if op in (">", ">="):
            return f"({l.upper} {op} {r.sql})"
        if op == "==":
            return f"({l.sql} <= {r.upper} AND {r.sql} <= {l.upper})"
        return f"NOT ({l.sql} = {l.upper} AND {r.sql} = {r.upper} AND {l.sql} = {r.sql})"

    def call(self, e: X.Call) -> _Sql:
        f, args = e.func, e.args
        if f == "overlaps":
            (s1, e1), (s2, e2) = self.span(args[0]), self.span(args[1])
            # the two inequalities first, so DuckDB plans an IEJoin
            return _Sql(f"({s1} <= {e2} AND {s2} <= {e1} AND "
                        f"(greatest({s1}, {s2}) < least({e1}, {e2}) OR {s1} = {e1} OR {s2} = {e2}))")
        if f == "today":
            return _Sql(_lit(self.today))
        if f in ("days", "hours", "minutes"):
            unit = {"days": "DAY", "hours": "HOUR", "minutes": "MINUTE"}[f]
            return _Sql(f"(({self.c(args[0]).sql}) * INTERVAL 1 {unit})")
        if f == "duration":
            s, en = self.span(args[0])
            return _Sql(f"({en} - {s})")
        if f in ("in_minutes", "in_hours"):
            div = 60 if f == "in_minutes" else 3600
            arg = self.c(args[0])
            return _Sql(f"(epoch({arg.sql}) / {div})", hi=arg.hi and f"(epoch({arg.hi}) / {div})")
        vals = [self.c(a) for a in args]
        if f == "abs" and vals[0].hi:
            raise _NotSql("abs of a span between instants")
        loc = [v.local or v.sql for v in vals]
        if f == "date" and len(args) == 3:
            return _Sql(f"make_date({', '.join(f'CAST({v.sql} AS BIGINT)' for v in vals)})")
        if f == "datetime":
            parts = [f"CAST({v.sql} AS BIGINT)" for v in vals] + ["0"] * (6 - len(vals))
            # a wall-clock time: compared with the local column (see compare)
            return _Sql(f"make_timestamp({', '.join(parts)})")
        if f == "date" and len(args) == 1:
            return _Sql(f"CAST({loc[0]} AS DATE)")
        if f == "same_day":
            return _Sql(f"(CAST({loc[0]} AS DATE) = CAST({loc[1]} AS DATE))")
        if f in _PART:
            return _Sql(f"{_PART[f]}({loc[0]})")
        if f == "weekday":
            return _Sql(f"(isodow({loc[0]}) - 1)")
        if f in ("lower", "upper"):
            return _Sql(f"{f}({vals[0].sql})")
        if f == "strip":
            return _Sql(f"trim({vals[0].sql})")
        if f == "contains":
            return _Sql(f"(position(lower({vals[1].sql}) IN lower({vals[0].sql})) > 0)")
        if f in ("startswith", "endswith"):
            return _Sql(f"{'starts_with' if f == 'startswith' else 'ends_with'}({vals[0].sql}, {vals[1].sql})")
        if f == "abs":
            return _Sql(f"abs({vals[0].sql})")
        raise _NotSql(f)


def _reads(cond: X.Expr, var: str) -> set[str]:
    attrs = X.attributes_read(cond, var)
    for n in X.walk(cond):
        if isinstance(n, X.Call) and n.func in ("overlaps", "duration"):
            if any(isinstance(a, X.Var) and a.name == var for a in n.args):
                attrs |= {"start", "end"}
    return attrs


def _merge(r1: Row, r2: Row) -> Row:
    """The pair as one row: the left row's attributes win on a clash, and the text
    is both texts, so an EXTRACT above reads each event ("which cuisine after
    football" asked the cuisine of the football match alone, and the model made
    one up)."""
    values = dict(r2.values)
    values.update(r1.values)
    texts = [t for t in (r1.get("text"), r2.get("text")) if t]
    if len(texts) == 2 and texts[0] != texts[1]:
        values["text"] = MERGED_TEXTS.join(texts)
    raw = dict(r2.raw)
    raw.update(r1.raw)
    return Row(values, r1.ids | r2.ids, raw)


def join(node: Join, left: list[Row], right: list[Row], ctx: OperatorContext) -> list[Row]:
    if not left or not right:
        return []
    try:
        t1, types1 = _side_table(left, _reads(node.condition, "i1"))
        t2, types2 = _side_table(right, _reads(node.condition, "i2"))
        sql = _Compiler({"i1": types1, "i2": types2}, ctx.today).c(node.condition).sql
    except _NotSql as exc:
        ctx.note(f"condition evaluated in Python ({exc})")
        return _join_python(node, left, right, ctx)
    con = duckdb.connect()
    try:
        con.register("t1", t1)
        con.register("t2", t2)
        pairs = con.execute(f"SELECT a._idx, b._idx FROM t1 a JOIN t2 b ON {sql} ORDER BY 1, 2").fetchall()
    except duckdb.Error as exc:
        raise OperatorError("JOIN", f"the condition could not be evaluated: {exc}") from exc
    finally:
        con.close()
    ctx.check_cancel()
    return [_merge(left[i], right[j]) for i, j in pairs if left[i].ids != right[j].ids]


def _join_python(node: Join, left: list[Row], right: list[Row], ctx: OperatorContext) -> list[Row]:
    out, ev, n = [], ctx.eval_context, 0
    for r1 in left:
        for r2 in right:
            n += 1
            if n % 5000 == 0:
                ctx.check_cancel()
            try:
                ok = evaluate(node.condition, {"i1": r1, "i2": r2}, ev)
            except EvalError as exc:
                raise OperatorError("JOIN", f"the condition failed on events {sorted(r1.ids)} and "
                                            f"{sorted(r2.ids)}: {exc}") from exc
            if ok and r1.ids != r2.ids:
                out.append(_merge(r1, r2))
    return out
