"""Plan expressions: the typed tree of a lambda body or a JOIN condition, and a
small interpreter for it.

Expressions are built by ``engine.plan.parse`` from a whitelisted subset of Python
syntax and evaluated here node by node (through a tree of this module's closures,
made once per expression). This module must never call eval, exec or
compile, never use getattr on values, and never call anything not in
``spec.FUNCTIONS``: a plan written by a model is data, not code.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date as Date, datetime as DateTime, timedelta
from typing import Any

from engine.plan.rows import Row
from engine.plan.spec import VALUE_ATTRIBUTES


MAX_REPEAT = 100_000


class EvalError(ValueError):
    """An expression could not be evaluated on a row (wrong types, missing attribute)."""


# ---- nodes --------------------------------------------------------------------------
class Expr:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Const(Expr):
    value: Any  # str, int, float, bool or None


@dataclass(frozen=True, slots=True)
class Var(Expr):
    name: str


@dataclass(frozen=True, slots=True)
class GetAttr(Expr):
    obj: Expr
    name: str


@dataclass(frozen=True, slots=True)
class GetItem(Expr):
    obj: Expr
    key: Const


@dataclass(frozen=True, slots=True)
class Call(Expr):
    func: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class BinOp(Expr):
    op: str  # + - * / // %
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    op: str  # not, -
    operand: Expr


@dataclass(frozen=True, slots=True)
class BoolOp(Expr):
    op: str  # and, or
    values: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Compare(Expr):
    left: Expr
    ops: tuple[str, ...]  # == != < <= > >= in "not in" is "is not"
    comparators: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class IfElse(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass(frozen=True, slots=True)
class ListLit(Expr):
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Lambda(Expr):
    params: tuple[str, ...]
    body: Expr


def walk(expr: Expr):
    """Every node of an expression, pre-order."""
    yield expr
    children: tuple = ()
    if isinstance(expr, (GetAttr, GetItem)):
        children = (expr.obj,)
    elif isinstance(expr, Call):
        children = expr.args
    elif isinstance(expr, BinOp):
        children = (expr.left, expr.right)
    elif isinstance(expr, Unary):
        children = (expr.operand,)
    elif isinstance(expr, BoolOp):
        children = expr.values
    elif isinstance(expr, Compare):
        children = (expr.left, *expr.comparators)
    elif isinstance(expr, IfElse):
        children = (expr.test, expr.body, expr.orelse)
    elif isinstance(expr, ListLit):
        children = expr.items
    elif isinstance(expr, Lambda):
        children = (expr.body,)
    for child in children:
        yield from walk(child)


def conjuncts(expr: Expr) -> list[Expr]:
    """The parts of a top-level ``and`` (``[expr]`` for anything else)."""
    return list(expr.values) if isinstance(expr, BoolOp) and expr.op == "and" else [expr]


def conjoin(parts: list[Expr]) -> Expr:
    """``parts`` joined by ``and`` (one part as it is); ``parts`` is not empty."""
    return parts[0] if len(parts) == 1 else BoolOp("and", tuple(parts))


def attributes_read(expr: Expr, var: str) -> set[str]:
    """Row attributes read from variable ``var`` (``e.artist``, ``e["artist"]``)."""
    out: set[str] = set()
    for node in walk(expr):
        if isinstance(node, GetAttr) and isinstance(node.obj, Var) and node.obj.name == var:
            out.add(node.name)
        elif (isinstance(node, GetItem) and isinstance(node.obj, Var) and node.obj.name == var
              and isinstance(node.key.value, str)):
            out.add(node.key.value)
    return out


# ---- evaluation ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class EvalContext:
    today: Date


def _local_midnight(d: Date, like: DateTime) -> DateTime:
    return DateTime(d.year, d.month, d.day, tzinfo=like.tzinfo)


def _align(a: Any, b: Any) -> tuple[Any, Any]:
    """Make dates, naive and aware datetimes comparable for arithmetic: a date is
    local midnight, a naive datetime is local time in the other side's offset."""
    if isinstance(a, DateTime) and isinstance(b, DateTime):
        if (a.tzinfo is None) != (b.tzinfo is None):
            if a.tzinfo is None:
                a = a.replace(tzinfo=b.tzinfo)
            else:
                b = b.replace(tzinfo=a.tzinfo)
        return a, b
    if isinstance(a, DateTime) and isinstance(b, Date):
        return a, _local_midnight(b, a)
    if isinstance(b, DateTime) and isinstance(a, Date):
        return _local_midnight(a, b), b
    return a, b


#: equality of a value with a text the plan writes: the value says the text (written
#: on the right, or on the left: "said")
_SAYS = {"==": "says", "!=": "says not"}
_SAID = {"==": "said", "!=": "said not"}
_WORDS = re.compile(r"\w+")


def _text_written(e: Expr) -> bool:
    return isinstance(e, Const) and isinstance(e.value, str) and bool(_WORDS.search(e.value))


def _says_text(value: Any, text: str) -> bool:
    """Whether ``value`` says ``text``: its words, whole and in order, case aside. A
    plan writes the product "yoga mat" or the sport "football" the way the question
    says it, and the data has "Harrell yoga mat", "Football"; "mat" is not said by
    "Matcha", nor "yoga mat" by "Yoga". A list says it where one of its texts does
    (the people of a dinner); any other value: plain equality."""
    if isinstance(value, (list, tuple)):
        return any(_says_text(v, text) for v in value)
    if not isinstance(value, str):
        return value == text
    x, y = _WORDS.findall(value.casefold()), _WORDS.findall(text.casefold())
    return any(x[i:i + len(y)] == y for i in range(len(x) - len(y) + 1))


def _compare(op: str, a: Any, b: Any) -> bool:
    if op in ("says", "says not", "said", "said not"):
        if a is None or b is None:
            return False
        said = _says_text(a, b) if op.startswith("says") else _says_text(b, a)
        return said != op.endswith("not")
    if op == "is":
        return a is None if b is None else a is b
    if op == "is not":
        return a is not None if b is None else a is not b
    if op in ("in", "not in"):
        if a is None or b is None:
            return False
        if isinstance(b, str):
            # people ask for "love" in a title without caring about case
            found = isinstance(a, str) and a.lower() in b.lower()
        else:
            try:
                found = a in b
            except TypeError as exc:
                raise EvalError(f"'{op}' looks inside a text or list, not {type(b).__name__} {b!r}") from exc
        return found if op == "in" else not found
    if a is None or b is None:
        # SQL semantics: a comparison with null is not true
        return False
    if isinstance(a, Date) and isinstance(b, Date) and isinstance(a, DateTime) != isinstance(b, DateTime):
        # an instant against a calendar day is compared by its local day: "e.start == date(2023, 12, 31)"
        # is all of New Year's Eve (not its first instant), "<=" takes in the whole day, ">" begins the next
        a, b = (a.date() if isinstance(a, DateTime) else a), (b.date() if isinstance(b, DateTime) else b)
    a, b = _align(a, b)
    try:
        if op == "==":
            return a == b
        if op == "!=":
            return a != b
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        if op == ">=":
            return a >= b
    except TypeError as exc:
        raise EvalError(f"cannot compare {type(a).__name__} {a!r} with {type(b).__name__} {b!r}") from exc
    raise EvalError(f"unknown comparison {op}")


def _arith(op: str, a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    a, b = _align(a, b) if isinstance(a, (Date, DateTime)) and isinstance(b, (Date, DateTime)) else (a, b)
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            # "x" * 10**11 would exhaust memory: repeated text or lists stay small
            seq, n = (a, b) if isinstance(a, (str, list)) else (b, a)
            if isinstance(seq, (str, list)) and isinstance(n, int) and len(seq) * max(n, 0) > MAX_REPEAT:
                raise EvalError(f"repeating a text or list {n} times is too large")
            return a * b
        if op == "/":
            if isinstance(b, (int, float)) and b == 0:
                return None  # SQL: division by zero gives null
            return a / b
        if op == "//":
            return None if b == 0 else a // b
        if op == "%":
            return None if b == 0 else a % b
    except TypeError as exc:
        raise EvalError(f"cannot compute {type(a).__name__} {op} {type(b).__name__}") from exc
    except OverflowError as exc:
        raise EvalError(f"{a!r} {op} {b!r} is out of range") from exc
    raise EvalError(f"unknown operator {op}")


def _as_datetime_parts(x: Any, what: str) -> Date:
    if isinstance(x, (Date, DateTime)):
        return x
    raise EvalError(f"{what}() needs a date or datetime, got {type(x).__name__} {x!r}")


def _row_span(r: Any, what: str) -> tuple[DateTime, DateTime]:
    if not isinstance(r, Row):
        raise EvalError(f"{what}() compares rows (e.g. {what}(i1, i2)), got {type(r).__name__}")
    s, e = r.get("start"), r.get("end")
    if s is None:
        raise EvalError(f"{what}(): a row has no start")
    return s, (e if e is not None else s)


def spans_overlap(s1: DateTime, e1: DateTime, s2: DateTime, e2: DateTime) -> bool:
    """Positive-length spans overlap when they share more than an instant; a point
    event overlaps a span that contains it (ends included)."""
    lo, hi = max(s1, s2), min(e1, e2)
    return lo < hi or (lo == hi and (s1 == e1 or s2 == e2))


def _fn_date(ctx: EvalContext, *args: Any) -> Any:
    if len(args) == 1:
        x = args[0]
        if isinstance(x, DateTime):
            return x.date()
        if isinstance(x, Date):
            return x
        raise EvalError(f"date() needs a datetime, got {type(x).__name__} {x!r}")
    try:
        return Date(*(int(a) for a in args))
    except (TypeError, ValueError) as exc:
        raise EvalError(f"date{args}: {exc}") from exc


def _fn_datetime(ctx: EvalContext, *args: Any) -> Any:
    try:
        return DateTime(*(int(a) for a in args))
    except (TypeError, ValueError) as exc:
        raise EvalError(f"datetime{args}: {exc}") from exc


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _minmax(fn: Callable, *args: Any) -> Any:
    values = args[0] if len(args) == 1 else args
    if isinstance(values, (list, tuple)):
        present = [v for v in values if v is not None]
        return fn(present) if present else None
    raise EvalError(f"{fn.__name__}() of one value needs a list")


def _duration(ctx: EvalContext, r: Any) -> Any:
    s, e = _row_span(r, "duration")
    return e - s


def _str_fn(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(ctx: EvalContext, s: Any, *rest: Any) -> Any:
        if not isinstance(s, str):
            raise EvalError(f"{name}() needs text, got {type(s).__name__} {s!r}")
        return fn(s, *rest)
    return call


def _convert(kind: type) -> Callable[..., Any]:
    def call(ctx: EvalContext, x: Any) -> Any:
        try:
            return kind(x)
        except (TypeError, ValueError) as exc:
            raise EvalError(f"{kind.__name__}({x!r}): {exc}") from exc
    return call


# name -> implementation(ctx, *args). Null in -> null out is handled by the caller
# for every function not in _NULL_AWARE.
_IMPL: dict[str, Callable[..., Any]] = {
    "today": lambda ctx: ctx.today,
    "year": lambda ctx, x: _as_datetime_parts(x, "year").year,
    "month": lambda ctx, x: _as_datetime_parts(x, "month").month,
    "day": lambda ctx, x: _as_datetime_parts(x, "day").day,
    "hour": lambda ctx, x: x.hour if isinstance(x, DateTime) else _bad("hour", x),
    "minute": lambda ctx, x: x.minute if isinstance(x, DateTime) else _bad("minute", x),
    "weekday": lambda ctx, x: _as_datetime_parts(x, "weekday").weekday(),
    "weekday_name": lambda ctx, x: _WEEKDAYS[_as_datetime_parts(x, "weekday_name").weekday()],
    "date": _fn_date,
    "datetime": _fn_datetime,
    "days": lambda ctx, n: timedelta(days=n),
    "hours": lambda ctx, n: timedelta(hours=n),
    "minutes": lambda ctx, n: timedelta(minutes=n),
    "duration": _duration,
    "in_minutes": lambda ctx, td: td.total_seconds() / 60 if isinstance(td, timedelta) else _bad("in_minutes", td),
    "in_hours": lambda ctx, td: td.total_seconds() / 3600 if isinstance(td, timedelta) else _bad("in_hours", td),
    "overlaps": lambda ctx, a, b: spans_overlap(*_row_span(a, "overlaps"), *_row_span(b, "overlaps")),
    "same_day": lambda ctx, a, b: _fn_date(ctx, a) == _fn_date(ctx, b),
    "contains": lambda ctx, a, b: str(b).lower() in str(a).lower(),
    "lower": _str_fn("lower", str.lower),
    "upper": _str_fn("upper", str.upper),
    "strip": _str_fn("strip", str.strip),
    "startswith": _str_fn("startswith", lambda s, p: s.startswith(str(p))),
    "endswith": _str_fn("endswith", lambda s, p: s.endswith(str(p))),
    "len": lambda ctx, x: len(x) if isinstance(x, (str, list, tuple)) else _bad("len", x),
    "abs": lambda ctx, x: abs(x),
    "round": lambda ctx, x, n=0: round(x, int(n)) if n else round(x),
    "str": lambda ctx, x: x if isinstance(x, str) else (x.isoformat() if isinstance(x, (Date, DateTime)) else str(x)),
    "int": _convert(int),
    "float": _convert(float),
    "min": lambda ctx, *a: _minmax(min, *a),
    "max": lambda ctx, *a: _minmax(max, *a),
    "sum": lambda ctx, xs: sum(v for v in xs if v is not None) if isinstance(xs, (list, tuple)) else _bad("sum", xs),
}
_NULL_AWARE = {"today", "min", "max", "sum", "len", "str"}


def _bad(fn: str, x: Any) -> Any:
    raise EvalError(f"{fn}() cannot take {type(x).__name__} {x!r}")


def _value_attribute(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Row):
        if not obj.has(name):
            raise EvalError(f"the row has no attribute {name!r} (it has: {', '.join(sorted(obj.values))})")
        return obj.get(name)
    if isinstance(obj, Mapping):
        return obj.get(name)
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(x, (Row, Mapping)) for x in obj):
        return [_value_attribute(x, name) for x in obj]  # l["km"]: each row's value
    if isinstance(obj, (list, tuple)) and not obj:
        return []
    if name not in VALUE_ATTRIBUTES:
        raise EvalError(f"cannot read .{name} of {type(obj).__name__}")
    if isinstance(obj, timedelta) and name in ("days", "seconds"):
        return obj.days if name == "days" else obj.seconds
    if isinstance(obj, DateTime) and name in ("year", "month", "day", "hour", "minute", "second"):
        return {"year": obj.year, "month": obj.month, "day": obj.day, "hour": obj.hour,
                "minute": obj.minute, "second": obj.second}[name]
    if isinstance(obj, Date) and name in ("year", "month", "day"):
        return {"year": obj.year, "month": obj.month, "day": obj.day}[name]
    raise EvalError(f"cannot read .{name} of {type(obj).__name__} {obj!r}")


def evaluate(expr: Expr, env: Mapping[str, Any], ctx: EvalContext) -> Any:
    """The value of ``expr`` with variables from ``env``."""
    return _prepared(expr)(env, ctx)


# An expression evaluated over every row of a list is turned into a tree of Python
# closures once, one per node, each knowing its node's kind and its children's
# closures, instead of being dispatched on the node's type at every row: a FILTER of
# year(e.start) == 2021 over a year of song plays (27,840 rows) took ~95 ms that way.
# Nothing here turns text into code; the closures are this module's own functions.
_Evaluator = Callable[[Mapping[str, Any], EvalContext], Any]


_PREPARED: dict[int, tuple[Expr, _Evaluator]] = {}  # by the expression's identity: hashing a tree costs a walk
_KEPT = 4096


def _prepared(expr: Expr) -> _Evaluator:
    hit = _PREPARED.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]
    fn = _closure(expr)
    if len(_PREPARED) >= _KEPT:
        _PREPARED.clear()
    _PREPARED[id(expr)] = (expr, fn)  # the entry keeps the expression, so its id is not reused
    return fn


def _closure(expr: Expr) -> _Evaluator:
    """The evaluator of ``expr``; one that reads no variable (``today() - days(30)``)
    is computed once per evaluation context, not once per row: over 223,332 song
    plays, ``month(e.start) == month(today() - days(30))`` made five calls a row."""
    inner = _node_closure(expr)
    if isinstance(expr, (Const, Var, Lambda)) or any(isinstance(n, Var) for n in walk(expr)):
        return inner
    return _once_per_context(inner)


def _once_per_context(inner: _Evaluator) -> _Evaluator:
    """``inner``'s value kept for the latest evaluation context it was computed in
    (its value depends on nothing else); an error is raised again each time."""
    kept: list = [None]  # (context, value), replaced whole: another thread never sees half of it

    def constant(env, ctx):
        entry = kept[0]
        if entry is not None and entry[0] == ctx:
            return entry[1]
        value = inner(env, ctx)
        kept[0] = (ctx, value)
        return value
    return constant


def _node_closure(expr: Expr) -> _Evaluator:  # noqa: C901 - one branch per node kind
    if isinstance(expr, Const):
        value = expr.value
        return lambda env, ctx: value
    if isinstance(expr, Var):
        name = expr.name

        def var(env, ctx):
            if name not in env:
                raise EvalError(f"unknown name {name!r}")
            return env[name]
        return var
    if isinstance(expr, GetAttr):
        obj, name = _closure(expr.obj), expr.name
        return lambda env, ctx: _value_attribute(obj(env, ctx), name)
    if isinstance(expr, GetItem):
        obj, key = _closure(expr.obj), expr.key.value

        def item(env, ctx):
            o = obj(env, ctx)
            if o is None:
                return None
            if isinstance(key, str):
                return _value_attribute(o, key) if isinstance(o, (Row, Mapping)) else _bad("[]", o)
            if isinstance(o, (list, tuple, str)) and isinstance(key, int):
                return o[key] if -len(o) <= key < len(o) else None
            raise EvalError(f"cannot index {type(o).__name__} with {key!r}")
        return item
    if isinstance(expr, BoolOp):
        values = tuple(_closure(v) for v in expr.values)
        if expr.op == "and":
            def every(env, ctx):
                result: Any = True
                for v in values:
                    result = v(env, ctx)
                    if not result:
                        return False
                return bool(result)
            return every

        def some(env, ctx):
            for v in values:
                if v(env, ctx):
                    return True
            return False
        return some
    if isinstance(expr, Unary):
        operand, op = _closure(expr.operand), expr.op

        def unary(env, ctx):
            x = operand(env, ctx)
            if op == "not":
                return not x
            if x is None:
                return None
            try:
                return -x
            except TypeError as exc:
                raise EvalError(f"cannot negate {type(x).__name__}") from exc
        return unary
    if isinstance(expr, BinOp):
        op, left, right = expr.op, _closure(expr.left), _closure(expr.right)
        return lambda env, ctx: _arith(op, left(env, ctx), right(env, ctx))
    if isinstance(expr, Compare):
        first = _closure(expr.left)
        # a text the plan writes, compared for (in)equality with a value, is said by it
        # (:func:`_says_text`): "yoga mat" of the product "Harrell yoga mat"
        lefts = (expr.left, *expr.comparators)
        pairs = tuple((_SAYS.get(op, op) if _text_written(c) else _SAID.get(op, op) if _text_written(lefts[n]) else op,
                       _closure(c)) for n, (op, c) in enumerate(zip(expr.ops, expr.comparators)))

        def compare(env, ctx):
            left = first(env, ctx)
            for op, comparator in pairs:
                right = comparator(env, ctx)
                if not _compare(op, left, right):
                    return False
                left = right
            return True
        return compare
    if isinstance(expr, IfElse):
        test, body, orelse = _closure(expr.test), _closure(expr.body), _closure(expr.orelse)
        return lambda env, ctx: body(env, ctx) if test(env, ctx) else orelse(env, ctx)
    if isinstance(expr, ListLit):
        items = tuple(_closure(i) for i in expr.items)
        return lambda env, ctx: [i(env, ctx) for i in items]
    if isinstance(expr, Call):
        return _call_closure(expr)
    return _failing("a lambda is not a value here" if isinstance(expr, Lambda)
                    else f"unknown expression node {type(expr).__name__}")


def _call_closure(expr: Call) -> _Evaluator:
    func, impl = expr.func, _IMPL.get(expr.func)
    if impl is None:
        return _failing(f"unknown function {func}()")
    args = tuple(_closure(a) for a in expr.args)
    null_aware = func in _NULL_AWARE

    def call(env, ctx):
        values = [a(env, ctx) for a in args]
        if not null_aware and any(v is None for v in values):
            return None
        try:
            return impl(ctx, *values)
        except EvalError:
            raise
        except (OverflowError, MemoryError) as exc:
            raise EvalError(f"{func}() of {values!r} is out of range") from exc
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise EvalError(f"{func}() failed on {values!r}: {exc}") from exc
    return call


def _failing(message: str) -> _Evaluator:
    def fail(env, ctx):
        raise EvalError(message)
    return fail


def call_lambda(fn: Lambda, args: tuple[Any, ...], ctx: EvalContext) -> Any:
    if len(args) != len(fn.params):
        raise EvalError(f"the lambda takes {len(fn.params)} argument(s), got {len(args)}")
    return _prepared(fn.body)(dict(zip(fn.params, args)), ctx)

