"""The canonical printer: plan nodes back to plan text.

``parse_plan(print_plan(p)) == p`` for every plan ``p``, and the text uses exactly
the spelling the GBNF grammar allows (parameters in spec order, all named or with the
inputs and RETRIEVE's query unnamed, double-quoted strings, ", " separators), so
printed plans can be shown to the planner as examples.
This module only formats; it must not parse or execute.
"""
from __future__ import annotations

from typing import Any

from engine.plan import expr as X
from engine.plan.nodes import PlanNode, Qud
from engine.plan.spec import DOT_ATTRIBUTES, OPERATORS, ParamKind

# Binding strength, loosest first (as in Python's grammar).
_PREC_IFELSE, _PREC_OR, _PREC_AND, _PREC_NOT, _PREC_CMP, _PREC_ADD, _PREC_MUL, _PREC_NEG, _PREC_POSTFIX = range(1, 10)
_BIN_PREC = {"+": _PREC_ADD, "-": _PREC_ADD, "*": _PREC_MUL, "/": _PREC_MUL, "//": _PREC_MUL, "%": _PREC_MUL}


def quote(text: str, q: str = '"') -> str:
    out = text.replace("\\", "\\\\").replace(q, "\\" + q).replace("\n", "\\n").replace("\t", "\\t")
    out = "".join(ch if ch >= " " else f"\\x{ord(ch):02x}" for ch in out)
    return q + out + q


def print_plan(node: PlanNode, *, positional: bool = False) -> str:
    """The plan's text; ``positional=True`` leaves out the names of the inputs and of
    RETRIEVE's query (the planner's shorter spelling, see ``OperatorSpec.unnamed``:
    ``FILTER(RETRIEVE("runs"), filter=lambda e: ...)``)."""
    if isinstance(node, Qud):
        return f"QUD({quote(node.question)})"
    spec = OPERATORS[node.OP]
    parts = []
    for i, p in enumerate(spec.params):
        value = _param(p.kind, getattr(node, p.name), positional)
        parts.append(value if positional and i < spec.unnamed else f"{p.name}={value}")
    return f"{node.OP}({', '.join(parts)})"


def _param(kind: ParamKind, value: Any, positional: bool = False) -> str:
    if kind is ParamKind.PLAN:
        return print_plan(value, positional=positional)
    if kind is ParamKind.STR:
        return quote(value)
    if kind is ParamKind.STR_LIST:
        return "[" + ", ".join(quote(v) for v in value) + "]"
    if kind is ParamKind.TYPE_LIST:
        return "[" + ", ".join(value) + "]"
    if kind in (ParamKind.LAMBDA1, ParamKind.LIST_FCT):
        return value if isinstance(value, str) else print_expr(value)
    if kind is ParamKind.CONDITION:
        return quote(print_expr(value, string_quote="'"))
    raise ValueError(f"unknown parameter kind {kind}")


def print_expr(e: X.Expr, *, string_quote: str = '"') -> str:
    return _Printer(string_quote).show(e, 0)


class _Printer:
    def __init__(self, q: str):
        self.q = q

    def show(self, e: X.Expr, outer: int) -> str:
        text, prec = self._text(e)
        return f"({text})" if prec < outer else text

    def receiver(self, obj: X.Expr) -> str:
        # "0.year" reads as the float "0." then a name: a number needs parentheses
        if isinstance(obj, X.Const) and isinstance(obj.value, (int, float)) and not isinstance(obj.value, bool):
            return f"({self.show(obj, 0)})"
        return self.show(obj, _PREC_POSTFIX)

    def _text(self, e: X.Expr) -> tuple[str, int]:
        s = self.show
        if isinstance(e, X.Const):
            v = e.value
            if isinstance(v, str):
                return quote(v, self.q), 10
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
                return repr(v), _PREC_NEG
            return repr(v), 10
        if isinstance(e, X.Var):
            return e.name, 10
        if isinstance(e, X.GetAttr):
            if e.name in DOT_ATTRIBUTES:
                return f"{self.receiver(e.obj)}.{e.name}", _PREC_POSTFIX
            return f"{self.receiver(e.obj)}[{quote(e.name, self.q)}]", _PREC_POSTFIX
        if isinstance(e, X.GetItem):
            return f"{self.receiver(e.obj)}[{s(e.key, 0)}]", _PREC_POSTFIX
        if isinstance(e, X.Call):
            return f"{e.func}({', '.join(s(a, 0) for a in e.args)})", _PREC_POSTFIX
        if isinstance(e, X.BinOp):
            p = _BIN_PREC[e.op]
            # left-associative: the right operand needs parentheses at equal strength
            return f"{s(e.left, p)} {e.op} {s(e.right, p + 1)}", p
        if isinstance(e, X.Unary):
            if e.op == "not":
                return f"not {s(e.operand, _PREC_NOT)}", _PREC_NOT
            return f"-{s(e.operand, _PREC_NEG)}", _PREC_NEG
        if isinstance(e, X.BoolOp):
            p = _PREC_AND if e.op == "and" else _PREC_OR
            return f" {e.op} ".join(s(v, p + 1) for v in e.values), p
        if isinstance(e, X.Compare):
            parts = [s(e.left, _PREC_CMP + 1)]
            for op, c in zip(e.ops, e.comparators):
                parts.append(f"{op} {s(c, _PREC_CMP + 1)}")
            return " ".join(parts), _PREC_CMP
        if isinstance(e, X.IfElse):
            return (f"{s(e.body, _PREC_IFELSE + 1)} if {s(e.test, _PREC_IFELSE + 1)} "
                    f"else {s(e.orelse, _PREC_IFELSE)}"), _PREC_IFELSE
        if isinstance(e, X.ListLit):
            return "[" + ", ".join(s(i, 0) for i in e.items) + "]", 10
        if isinstance(e, X.Lambda):
            return f"lambda {', '.join(e.params)}: {s(e.body, 0)}", 0
        raise ValueError(f"cannot print {type(e).__name__}")
