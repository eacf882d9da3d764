"""The plan language's single specification: operators, their parameters, and the
functions plan expressions may call.

The parser's whitelist, the validator, the canonical printer and the GBNF grammar
are all derived from the tables here, so the planner can only emit what the parser
accepts and the executor knows. This module holds data only: it must not parse,
evaluate or execute anything.
"""
from __future__ import annotations

import re

from dataclasses import dataclass
from enum import Enum


class ParamKind(str, Enum):
    PLAN = "plan"            # a nested operator (or QUD) producing a list of rows
    STR = "str"              # a string literal
    STR_LIST = "str_list"    # a list of string literals
    TYPE_LIST = "type_list"  # a list of type names (str, int, ...)
    LAMBDA1 = "lambda1"      # lambda e: <expr>, one row at a time
    LIST_FCT = "list_fct"    # len, or lambda l: <expr> over the whole list
    CONDITION = "condition"  # a quoted expression over i1 / i2


class Output(str, Enum):
    ROWS = "rows"
    SCALAR = "scalar"


@dataclass(frozen=True, slots=True)
class ParamSpec:
    name: str
    kind: ParamKind


@dataclass(frozen=True, slots=True)
class OperatorSpec:
    name: str
    params: tuple[ParamSpec, ...]
    output: Output
    doc: str

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def unnamed(self) -> int:
        """How many leading parameters the positional spelling writes without their
        names (``QudPlanner(positional=True)``): the inputs (``l``, ``l1``, ``l2``) and RETRIEVE's query, whose names say nothing
        their place does not. The others keep their names, which tell the model what
        it writes there (``res_name=``, ``val_attr_name=``)."""
        n = 0
        while n < len(self.params) and (self.params[n].kind is ParamKind.PLAN or self.name == "RETRIEVE"):
            n += 1
        return n


def _op(name: str, output: Output, doc: str, **params: ParamKind) -> OperatorSpec:
    return OperatorSpec(name, tuple(ParamSpec(k, v) for k, v in params.items()), output, doc)


P = ParamKind
_AGG_DOC = "{} of attr_name over the rows (nulls skipped)"

OPERATORS: dict[str, OperatorSpec] = {spec.name: spec for spec in (
    _op("RETRIEVE", Output.ROWS, "events relevant to the query", query=P.STR),
    _op("EXTRACT", Output.ROWS, "add attributes, typed", l=P.PLAN, attr_names=P.STR_LIST,
        attr_types=P.TYPE_LIST),
    _op("FILTER", Output.ROWS, "keep rows where the lambda is true", l=P.PLAN, filter=P.LAMBDA1),
    _op("GROUP_BY", Output.ROWS, "one row per distinct value combination, with group and count, largest first (no value: last)",
        l=P.PLAN, attr_names=P.STR_LIST),
    _op("JOIN", Output.ROWS, "pairs of rows where the condition over i1/i2 holds",
        l1=P.PLAN, l2=P.PLAN, condition=P.CONDITION),
    _op("MAP", Output.ROWS, "add res_name = fct(row) to each row", l=P.PLAN, fct=P.LAMBDA1,
        res_name=P.STR),
    _op("APPLY", Output.SCALAR, "a function of the whole list, e.g. len", l=P.PLAN, fct=P.LIST_FCT),
    _op("UNNEST", Output.ROWS, "one row per item of a list attribute", l=P.PLAN,
        nested_attr_name=P.STR, unnested_attr_name=P.STR),
    _op("ARGMIN", Output.SCALAR, "arg_attr_name of the row with the smallest val_attr_name",
        l=P.PLAN, arg_attr_name=P.STR, val_attr_name=P.STR),
    _op("ARGMAX", Output.SCALAR, "arg_attr_name of the row with the largest val_attr_name",
        l=P.PLAN, arg_attr_name=P.STR, val_attr_name=P.STR),
    _op("SUM", Output.SCALAR, _AGG_DOC.format("sum"), l=P.PLAN, attr_name=P.STR),
    _op("AVG", Output.SCALAR, _AGG_DOC.format("mean"), l=P.PLAN, attr_name=P.STR),
    _op("MIN", Output.SCALAR, _AGG_DOC.format("minimum"), l=P.PLAN, attr_name=P.STR),
    _op("MAX", Output.SCALAR, _AGG_DOC.format("maximum"), l=P.PLAN, attr_name=P.STR),
)}

#: A part of the plan still to be decomposed by the planner: QUD("sub-question").
QUD = "QUD"

#: Attributes every retrieved event has.
EVENT_ATTRIBUTES = ("start", "end", "source", "kind", "title", "text")
#: What GROUP_BY adds besides the grouping attributes.
GROUP_ATTRIBUTES = ("group", "count")

TYPE_NAMES = ("str", "int", "float", "date", "datetime", "bool")

#: Attribute names whose values are people (EXTRACT asks for names, written like names).
PEOPLE_KEYS = re.compile(r"^(?:with_)?(people|persons?|attendees?|participants?|friends?|companions?|partners?|"
                         r"contacts?|guests?|with|who|whom|sender|recipients?)(?:_with)?$", re.I)  # "with whom"

#: Names a lambda over the list may use as fct directly (APPLY(fct=len)). ``trips``
#: counts the rows as trips: rows on days at most TRIP_GAP_DAYS apart are one trip;
#: ``orders`` counts the order numbers the rows give, and each row without one.
LIST_FUNCTIONS = ("len", "trips", "orders")
#: A diary writes a week in Rome as notes on some of its days (a meal on the 2nd, a
#: museum on the 5th); days further apart than this are separate trips.
TRIP_GAP_DAYS = 4


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    name: str
    min_args: int
    max_args: int
    doc: str


def _fn(name: str, lo: int, hi: int, doc: str) -> FunctionSpec:
    return FunctionSpec(name, lo, hi, doc)


#: Functions plan expressions may call. Date parts are of local time.
FUNCTIONS: dict[str, FunctionSpec] = {f.name: f for f in (
    _fn("today", 0, 0, "the execution date (local)"),
    _fn("year", 1, 1, "year of a date/datetime"),
    _fn("month", 1, 1, "month 1-12"),
    _fn("day", 1, 1, "day of month"),
    _fn("hour", 1, 1, "hour 0-23, local"),
    _fn("minute", 1, 1, "minute 0-59"),
    _fn("weekday", 1, 1, "0 = Monday ... 6 = Sunday"),
    _fn("weekday_name", 1, 1, "Monday ... Sunday"),
    _fn("date", 1, 3, "date(dt) the local date of a datetime; date(y, m, d) a date"),
    _fn("datetime", 3, 5, "datetime(y, m, d[, h, min]) in local time"),
    _fn("days", 1, 1, "a duration of n days"),
    _fn("hours", 1, 1, "a duration of n hours"),
    _fn("minutes", 1, 1, "a duration of n minutes"),
    _fn("duration", 1, 1, "end - start of a row"),
    _fn("in_minutes", 1, 1, "a duration as minutes (float)"),
    _fn("in_hours", 1, 1, "a duration as hours (float)"),
    _fn("overlaps", 2, 2, "the time spans of two rows overlap"),
    _fn("same_day", 2, 2, "two datetimes fall on the same local day"),
    _fn("contains", 2, 2, "case-insensitive substring test"),
    _fn("lower", 1, 1, "lower case"),
    _fn("upper", 1, 1, "upper case"),
    _fn("strip", 1, 1, "without surrounding spaces"),
    _fn("startswith", 2, 2, "string prefix test"),
    _fn("endswith", 2, 2, "string suffix test"),
    _fn("len", 1, 1, "length of a string or list"),
    _fn("abs", 1, 1, "absolute value"),
    _fn("round", 1, 2, "round(x[, digits])"),
    _fn("str", 1, 1, "as text"),
    _fn("int", 1, 1, "as integer"),
    _fn("float", 1, 1, "as number"),
    _fn("min", 1, 2, "min(list) or min(a, b)"),
    _fn("max", 1, 2, "max(list) or max(a, b)"),
    _fn("sum", 1, 1, "sum of a list (nulls skipped)"),
)}

#: Method-call spellings the parser accepts and rewrites to FUNCTIONS (x.lower() -> lower(x)).
METHODS = ("lower", "upper", "strip", "startswith", "endswith", "date", "weekday")

#: Attribute reads allowed on values that are not rows (datetimes, dates, durations).
VALUE_ATTRIBUTES = ("year", "month", "day", "hour", "minute", "second", "days", "seconds")

#: Attribute names written with a dot (e.start); any other is written e["name"], so
#: a Python keyword can never follow a dot. Both spellings read the same attribute.
DOT_ATTRIBUTES = tuple(sorted(set(EVENT_ATTRIBUTES) | set(GROUP_ATTRIBUTES) | set(VALUE_ATTRIBUTES)))

#: The canonical lambda parameter: e for one row, l for the whole list.
ROW_PARAM = "e"
LIST_PARAM = "l"

# Limits against runaway or adversarial plans.
MAX_PLAN_CHARS = 20_000
MAX_DEPTH = 60
MAX_STRING = 500
MAX_INT_DIGITS = 12
MAX_LIST_ITEMS = 50
MAX_NAME = 40
