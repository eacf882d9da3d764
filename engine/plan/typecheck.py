"""Static types of plan expressions: what a lambda's parts hold, and the calls and
comparisons that cannot work whatever the rows hold.

A plan passes the grammar and the attribute checks and still fails on every row
when, say, ``month()`` is given the truth value of a comparison, or a date is
compared with a number. ``check`` finds these before the plan runs, so the planner
can try again instead of the user getting an error. Types are coarse: a value's
kind, or ``ANY`` where the plan does not say. Only a combination the interpreter
(``engine.plan.expr``) rejects for every value of the known kinds, or one that can
never be true, is a problem; anything unknown passes. Null is not a type here: the
interpreter passes it through.
"""
from __future__ import annotations

from collections.abc import Mapping

from engine.plan import expr as X
from engine.plan.spec import LIST_PARAM, VALUE_ATTRIBUTES

BOOL, NUM, STR, DATE, DATETIME, DURATION, LIST, ROWS, ROW, ANY = (
    "bool", "number", "text", "date", "datetime", "duration", "list", "list of rows", "row", "any")

#: The types of the attributes every event has, and GROUP_BY's count.
EVENT_TYPES: Mapping[str, str] = {"start": DATETIME, "end": DATETIME, "source": STR, "kind": STR, "title": STR,
                                  "text": STR, "count": NUM,
                                  "group": ROWS}
#: EXTRACT's attr_types as expression types.
EXTRACTED: Mapping[str, str] = {"str": STR, "int": NUM, "float": NUM, "bool": BOOL, "date": DATE,
                                "datetime": DATETIME}

_TIMES = frozenset({DATE, DATETIME})
_NUMS = frozenset({NUM, BOOL})  # a truth value is a number to Python's arithmetic
# Per function: the kinds each argument may have (the last entry repeats), and the result.
_SIGNATURES: Mapping[str, tuple[tuple[frozenset[str], ...], str]] = {
    "today": ((), DATE),
    "year": ((_TIMES,), NUM), "month": ((_TIMES,), NUM), "day": ((_TIMES,), NUM),
    "weekday": ((_TIMES,), NUM), "weekday_name": ((_TIMES,), STR),
    "hour": ((frozenset({DATETIME}),), NUM), "minute": ((frozenset({DATETIME}),), NUM),
    "datetime": ((_NUMS | {STR},), DATETIME),
    "days": ((_NUMS,), DURATION), "hours": ((_NUMS,), DURATION), "minutes": ((_NUMS,), DURATION),
    "duration": ((frozenset({ROW}),), DURATION),
    "overlaps": ((frozenset({ROW}),), BOOL),
    "in_minutes": ((frozenset({DURATION}),), NUM), "in_hours": ((frozenset({DURATION}),), NUM),
    "same_day": ((_TIMES,), BOOL),
    "lower": ((frozenset({STR}),), STR), "upper": ((frozenset({STR}),), STR),
    "strip": ((frozenset({STR}),), STR),
    "startswith": ((frozenset({STR}), frozenset({ANY})), BOOL),
    "endswith": ((frozenset({STR}), frozenset({ANY})), BOOL),
    "contains": ((frozenset({ANY}),), BOOL),
    "len": ((frozenset({STR, LIST, ROWS}),), NUM),
    "abs": ((_NUMS | {DURATION},), ANY), "round": ((_NUMS,), NUM),
    "str": ((frozenset({ANY}),), STR), "int": ((_NUMS | {STR},), NUM), "float": ((_NUMS | {STR},), NUM),
    "sum": ((frozenset({LIST}),), NUM),
}
# Arithmetic that works, by operator: (left, right) -> result.
_ARITH: Mapping[str, Mapping[tuple[str, str], str]] = {
    "+": {(NUM, NUM): NUM, (STR, STR): STR, (LIST, LIST): LIST, (DURATION, DURATION): DURATION,
          (DATE, DURATION): DATE, (DATETIME, DURATION): DATETIME, (DURATION, DATE): DATE,
          (DURATION, DATETIME): DATETIME},
    "-": {(NUM, NUM): NUM, (DURATION, DURATION): DURATION, (DATE, DURATION): DATE,
          (DATETIME, DURATION): DATETIME, (DATE, DATE): DURATION, (DATETIME, DATETIME): DURATION,
          (DATE, DATETIME): DURATION, (DATETIME, DATE): DURATION},
    "*": {(NUM, NUM): NUM, (DURATION, NUM): DURATION, (NUM, DURATION): DURATION, (STR, NUM): STR,
          (NUM, STR): STR, (LIST, NUM): LIST, (NUM, LIST): LIST},
    "/": {(NUM, NUM): NUM, (DURATION, NUM): DURATION, (DURATION, DURATION): NUM},
    "//": {(NUM, NUM): NUM, (DURATION, NUM): DURATION, (DURATION, DURATION): NUM},
    "%": {(NUM, NUM): NUM, (DURATION, DURATION): DURATION},
}
# Kinds whose values order against each other (< <= > >=); == between two kinds of
# different families is never true.
_FAMILY = {NUM: "number", BOOL: "number", STR: "text", DATE: "time", DATETIME: "time", DURATION: "duration",
           LIST: "list", ROWS: "list", ROW: "row"}


def check(body: X.Expr, params: Mapping[str, Mapping[str, str] | None]) -> list[str]:
    """What cannot work in ``body`` (a lambda's body or a JOIN condition). ``params``
    gives, per row variable, the types of its row's attributes (None: unknown); the
    list parameter ``l``, when it is not a row variable, is a list."""
    problems: list[str] = []
    _type(body, params, problems)
    return list(dict.fromkeys(problems))


def type_of(body: X.Expr, params: Mapping[str, Mapping[str, str] | None]) -> str:
    """The kind of value ``body`` gives (ANY where it cannot be told)."""
    return _type(body, params, [])


def typed(body: X.Expr, params: Mapping[str, Mapping[str, str] | None], problems: list[str]) -> str:
    """:func:`type_of` and :func:`check` in one walk: the kind, with what cannot work
    appended to ``problems``."""
    return _type(body, params, problems)


def _norm(kind: str) -> str:
    return NUM if kind == BOOL else LIST if kind == ROWS else kind


def _type(e: X.Expr, params: Mapping[str, Mapping[str, str] | None], problems: list[str]) -> str:
    if isinstance(e, X.Const):
        v = e.value
        return (BOOL if isinstance(v, bool) else NUM if isinstance(v, (int, float)) else STR if isinstance(v, str)
                else ANY)
    if isinstance(e, X.Var):
        if e.name == LIST_PARAM and e.name not in params:
            return ROWS
        return ROW if e.name in params else ANY
    if isinstance(e, (X.GetAttr, X.GetItem)):
        name = e.name if isinstance(e, X.GetAttr) else e.key.value
        if isinstance(e.obj, X.Var) and e.obj.name in params and isinstance(name, str):
            known = params[e.obj.name]
            return (EVENT_TYPES if known is None else known).get(name, ANY)
        inner = _type(e.obj, params, problems)
        if inner == ROWS and isinstance(name, int):
            return ROW
        if inner == ROWS and isinstance(name, str):
            return LIST  # l["km"]: the attribute of every row, a list of values
        if isinstance(e, X.GetAttr) and name in VALUE_ATTRIBUTES:
            if inner in (NUM, BOOL, STR, LIST, ROWS):
                problems.append(f"reads .{name} of a {inner}, which has none")
            return NUM
        return ANY
    if isinstance(e, X.Call):
        return _call(e, [_type(a, params, problems) for a in e.args], problems)
    if isinstance(e, X.BinOp):
        left, right = _type(e.left, params, problems), _type(e.right, params, problems)
        if ANY in (left, right):
            return ANY
        result = _ARITH.get(e.op, {}).get((_norm(left), _norm(right)))
        if result is None:
            problems.append(f"cannot compute {left} {e.op} {right}")
            return ANY
        return result
    if isinstance(e, X.Unary):
        inner = _type(e.operand, params, problems)
        if e.op == "not":
            return BOOL
        if inner in (STR, DATE, DATETIME, LIST, ROWS, ROW):
            problems.append(f"cannot negate a {inner}")
            return ANY
        return inner
    if isinstance(e, X.BoolOp):
        for v in e.values:
            _type(v, params, problems)
        return BOOL
    if isinstance(e, X.Compare):
        kinds = [_type(c, params, problems) for c in (e.left, *e.comparators)]
        for op, a, b in zip(e.ops, kinds, kinds[1:]):
            _compare(op, a, b, problems)
        return BOOL
    if isinstance(e, X.IfElse):
        _type(e.test, params, problems)
        body, orelse = _type(e.body, params, problems), _type(e.orelse, params, problems)
        return body if body == orelse else ANY
    if isinstance(e, X.ListLit):
        for i in e.items:
            _type(i, params, problems)
        return LIST
    return ANY


def _call(e: X.Call, args: list[str], problems: list[str]) -> str:
    if e.func == "date":
        if len(args) == 1:
            _argument(e.func, 0, args[0], _TIMES, problems)
        else:
            for i, a in enumerate(args):
                _argument(e.func, i, a, _NUMS | {STR}, problems)
        return DATE
    if e.func in ("min", "max"):
        if len(args) == 1:
            _argument(e.func, 0, args[0], frozenset({LIST}), problems)
        return ANY
    signature = _SIGNATURES.get(e.func)
    if signature is None:
        return ANY
    allowed, result = signature
    for i, a in enumerate(args):
        if allowed:
            _argument(e.func, i, a, allowed[min(i, len(allowed) - 1)], problems)
    return result


def _argument(func: str, i: int, kind: str, allowed: frozenset[str], problems: list[str]) -> None:
    if kind == ANY or ANY in allowed or kind in allowed:
        return
    wanted = " or ".join(sorted(allowed))
    problems.append(f"{func}() takes a {wanted} as argument {i + 1}, but is given a {kind}")


def _compare(op: str, a: str, b: str, problems: list[str]) -> None:
    if ANY in (a, b) or op in ("is", "is not"):
        return
    if op in ("in", "not in"):
        if b not in (STR, LIST, ROWS):
            problems.append(f"'{op}' looks inside a text or list, but is given a {b}")
        return
    fa, fb = _FAMILY.get(a), _FAMILY.get(b)
    if fa == fb:
        if op not in ("==", "!=") and fa in ("list", "row"):
            problems.append(f"cannot order a {a} against a {b}")
        return
    if op in ("==", "!="):
        problems.append(f"compares a {a} with a {b}: {'never' if op == '==' else 'always'} true")
    else:
        problems.append(f"cannot order a {a} against a {b}")
