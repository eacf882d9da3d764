"""Parse a plan written in Python call syntax into plan nodes, against the whitelist
in ``engine.plan.spec``.

``ast.parse`` only builds a syntax tree; nothing of the text is ever run. Every
node kind, name, call and literal is checked here, and anything else is refused
with a :class:`PlanSyntaxError` naming the operator and the offending construct,
so the planner can repair its plan. This module must not call eval, exec or
compile, and must not import anything that executes plans.
"""
from __future__ import annotations

import ast
from typing import Any

from engine.plan import expr as X
from engine.plan.nodes import NODE_CLASSES, PlanNode, Qud
from engine.plan.spec import (FUNCTIONS, LIST_FUNCTIONS, LIST_PARAM, MAX_DEPTH, ROW_PARAM, MAX_INT_DIGITS, MAX_LIST_ITEMS,
                              MAX_NAME, MAX_PLAN_CHARS, MAX_STRING, METHODS, OPERATORS, QUD,
                              TYPE_NAMES, ParamKind)


class PlanSyntaxError(ValueError):
    """The plan text is not a well-formed plan. ``operator`` and ``construct`` say
    where and what, for the planner's repair prompt."""

    def __init__(self, message: str, *, operator: str = "", construct: str = ""):
        self.operator = operator
        self.construct = construct
        where = f"{operator}: " if operator else ""
        super().__init__(f"{where}{message}")


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
           ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}

# Plain-language names for constructs people (and models) try.
_FORBIDDEN_NAMES = {
    ast.ListComp: "a list comprehension", ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension", ast.GeneratorExp: "a generator expression",
    ast.Starred: "star-unpacking", ast.NamedExpr: "an assignment expression (:=)",
    ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield from",
    ast.JoinedStr: "an f-string", ast.FormattedValue: "an f-string", ast.Dict: "a dict literal",
    ast.Set: "a set literal", ast.Slice: "a slice", ast.BitAnd: "&", ast.BitOr: "|",
    ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.Pow: "** (power)",
    ast.MatMult: "@", ast.Invert: "~",
}


def _describe(node: ast.AST) -> str:
    for kind, text in _FORBIDDEN_NAMES.items():
        if isinstance(node, kind):
            return text
    return type(node).__name__


def _depth(node: ast.AST) -> int:
    # iterative, so a pathological tree cannot exhaust Python's stack here
    best, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        if best > MAX_DEPTH:
            return best
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(n))
    return best


def _syntax_tree(text: str, what: str, operator: str = "") -> ast.expr:
    if not isinstance(text, str):
        raise PlanSyntaxError(f"the {what} must be text, got {type(text).__name__}", operator=operator)
    if len(text) > MAX_PLAN_CHARS:
        raise PlanSyntaxError(f"the {what} is {len(text)} characters long; at most {MAX_PLAN_CHARS} are allowed",
                              operator=operator, construct="length")
    if "\x00" in text:
        raise PlanSyntaxError(f"the {what} contains a NUL character", operator=operator, construct="NUL")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        construct = "nesting" if "nested" in (exc.msg or "") else "syntax"
        raise PlanSyntaxError(f"the {what} is not valid call syntax: {exc.msg} at column {exc.offset}",
                              operator=operator, construct=construct) from None
    except (RecursionError, MemoryError):
        raise PlanSyntaxError(f"the {what} is nested too deeply", operator=operator,
                              construct="nesting") from None
    if _depth(tree) > MAX_DEPTH:
        raise PlanSyntaxError(f"the {what} is nested deeper than {MAX_DEPTH} levels", operator=operator,
                              construct="nesting")
    return tree.body


def parse_plan(text: str) -> PlanNode:
    """The plan node tree of ``text``; raises :class:`PlanSyntaxError`."""
    return _Parser().plan(_syntax_tree(text, "plan"))


def parse_expression(text: str, variables: tuple[str, ...], *, operator: str = "", param: str = "") -> X.Expr:
    """A standalone expression (a JOIN condition) over ``variables``."""
    return _ExprConverter(operator, param, variables).convert(_syntax_tree(text, f"{param or 'expression'}", operator))


class _Parser:
    def plan(self, node: ast.expr, parent: str = "") -> PlanNode:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            got = _describe(node)
            raise PlanSyntaxError(f"expected an operator call such as RETRIEVE(query=...), found {got}",
                                  operator=parent, construct=got)
        name = node.func.id
        if name == QUD:
            return self._qud(node)
        spec = OPERATORS.get(name)
        if spec is None:
            known = ", ".join([*OPERATORS, QUD])
            raise PlanSyntaxError(f"unknown operator {name}(); known operators: {known}",
                                  operator=parent, construct=name)
        # As in Python: positional arguments first, in the spec's parameter order
        # (the planner's optional shorter spelling), then named ones.
        if len(node.args) > len(spec.params):
            raise PlanSyntaxError(f"too many arguments: {name} takes {len(spec.params)} ("
                                  + ", ".join(q.name for q in spec.params) + ")", operator=name,
                                  construct="positional argument")
        values: dict[str, Any] = {}
        for p, arg in zip(spec.params, node.args):
            if isinstance(arg, ast.Starred):
                raise PlanSyntaxError("*-unpacking of arguments is not allowed", operator=name, construct="*args")
            values[p.name] = self._param(name, p.name, p.kind, arg)
        for kw in node.keywords:
            if kw.arg is None:
                raise PlanSyntaxError("**-unpacking of arguments is not allowed", operator=name,
                                      construct="**kwargs")
            p = spec.param(kw.arg)
            if p is None:
                raise PlanSyntaxError(f"unknown parameter {kw.arg!r}; {name} takes "
                                      + ", ".join(q.name for q in spec.params), operator=name, construct=kw.arg)
            if kw.arg in values:
                raise PlanSyntaxError(f"parameter {kw.arg!r} given twice", operator=name, construct=kw.arg)
            values[kw.arg] = self._param(name, p.name, p.kind, kw.value)
        missing = [p.name for p in spec.params if p.name not in values]
        if missing:
            raise PlanSyntaxError(f"missing parameter(s) {', '.join(missing)}", operator=name,
                                  construct="missing parameter")
        return NODE_CLASSES[name](**{p.name: values[p.name] for p in spec.params})

    def _qud(self, node: ast.Call) -> Qud:
        args = list(node.args) + [k.value for k in node.keywords if k.arg == "question"]
        if len(args) != 1 or any(k.arg not in ("question",) for k in node.keywords):
            raise PlanSyntaxError('QUD takes exactly one question, e.g. QUD("When did I run?")',
                                  operator=QUD, construct="arguments")
        return Qud(_string(args[0], QUD, "question"))

    def _param(self, op: str, name: str, kind: ParamKind, value: ast.expr) -> Any:
        if kind is ParamKind.PLAN:
            return self.plan(value, op)
        if kind is ParamKind.STR:
            return _string(value, op, name)
        if kind is ParamKind.STR_LIST:
            return tuple(_string(v, op, name) for v in _list_items(value, op, name))
        if kind is ParamKind.TYPE_LIST:
            return tuple(_type_name(v, op, name) for v in _list_items(value, op, name))
        if kind is ParamKind.LAMBDA1:
            return _lambda(value, op, name, ROW_PARAM)
        if kind is ParamKind.LIST_FCT:
            if isinstance(value, ast.Name):
                if value.id in LIST_FUNCTIONS:
                    return value.id
                raise PlanSyntaxError(f"{name}={value.id} is not allowed; use one of {', '.join(LIST_FUNCTIONS)} "
                                      "or a lambda over the list", operator=op, construct=value.id)
            return _lambda(value, op, name, LIST_PARAM)
        if kind is ParamKind.CONDITION:
            text = _string(value, op, name)
            return parse_expression(text, ("i1", "i2"), operator=op, param=name)
        raise PlanSyntaxError(f"unsupported parameter kind {kind}", operator=op)


def _string(node: ast.expr, op: str, name: str) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if len(node.value) > MAX_STRING and name != "condition":
            raise PlanSyntaxError(f"{name} is a string of {len(node.value)} characters; at most {MAX_STRING}",
                                  operator=op, construct="huge literal")
        return node.value
    raise PlanSyntaxError(f"{name} must be a string literal, found {_describe(node)}", operator=op,
                          construct=_describe(node))


def _list_items(node: ast.expr, op: str, name: str) -> list[ast.expr]:
    if not isinstance(node, (ast.List, ast.Tuple)):
        raise PlanSyntaxError(f"{name} must be a list like [\"a\", \"b\"], found {_describe(node)}",
                              operator=op, construct=_describe(node))
    if not node.elts:
        raise PlanSyntaxError(f"{name} must not be empty", operator=op, construct="empty list")
    if len(node.elts) > MAX_LIST_ITEMS:
        raise PlanSyntaxError(f"{name} has {len(node.elts)} items; at most {MAX_LIST_ITEMS}", operator=op,
                              construct="huge literal")
    return list(node.elts)


def _type_name(node: ast.expr, op: str, name: str) -> str:
    value = node.id if isinstance(node, ast.Name) else (
        node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None)
    if value not in TYPE_NAMES:
        raise PlanSyntaxError(f"{name} items must be one of {', '.join(TYPE_NAMES)}, found "
                              f"{value if value is not None else _describe(node)}", operator=op,
                              construct=str(value if value is not None else _describe(node)))
    return value


def _lambda(node: ast.expr, op: str, name: str, canonical: str) -> X.Lambda:
    """A one-parameter lambda; its parameter is renamed to the canonical one (e or l)
    so equal plans compare equal whatever name the planner chose."""
    if not isinstance(node, ast.Lambda):
        raise PlanSyntaxError(f"{name} must be a lambda such as lambda e: ..., found {_describe(node)}",
                              operator=op, construct=_describe(node))
    a = node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.kw_defaults or a.posonlyargs:
        raise PlanSyntaxError(f"{name}: the lambda may only take plain parameters", operator=op,
                              construct="lambda parameters")
    params = tuple(p.arg for p in a.args)
    if len(params) != 1:
        raise PlanSyntaxError(f"{name}: the lambda must take 1 parameter, it takes {len(params)}",
                              operator=op, construct="lambda parameters")
    _check_name(params[0], op, name)
    body = _ExprConverter(op, name, params, rename={params[0]: canonical}).convert(node.body)
    return X.Lambda((canonical,), body)


def _check_name(ident: str, op: str, param: str) -> None:
    if ident.startswith("_"):
        raise PlanSyntaxError(f"{param}: names starting with '_' ({ident}) are not allowed", operator=op,
                              construct=ident)
    if len(ident) > MAX_NAME:
        raise PlanSyntaxError(f"{param}: the name {ident[:20]}... is too long", operator=op, construct="long name")


class _ExprConverter:
    """Python expression syntax -> ``engine.plan.expr`` nodes, whitelisted."""

    def __init__(self, op: str, param: str, variables: tuple[str, ...], rename: dict[str, str] | None = None):
        self.op, self.param, self.variables = op, param, variables
        self.rename = rename or {}

    def fail(self, message: str, construct: str) -> PlanSyntaxError:
        return PlanSyntaxError(f"{self.param}: {message}", operator=self.op, construct=construct)

    def convert(self, node: ast.expr) -> X.Expr:
        c = self.convert
        if isinstance(node, ast.Constant):
            return X.Const(self._literal(node.value))
        if isinstance(node, ast.Name):
            if node.id in ("True", "False", "None"):  # only via Constant in 3.11, kept for safety
                return X.Const({"True": True, "False": False, "None": None}[node.id])
            _check_name(node.id, self.op, self.param)
            if node.id not in self.variables:
                if node.id in FUNCTIONS:
                    raise self.fail(f"{node.id} is a function; call it, e.g. {node.id}(...)", node.id)
                raise self.fail(f"unknown name {node.id!r}; the expression may use "
                                f"{', '.join(self.variables)} and the plan functions", node.id)
            return X.Var(self.rename.get(node.id, node.id))
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise self.fail(f"attribute access to {node.attr!r} is not allowed", node.attr)
            _check_name(node.attr, self.op, self.param)
            return X.GetAttr(c(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            key = node.slice
            if not (isinstance(key, ast.Constant) and isinstance(key.value, (str, int))
                    and not isinstance(key.value, bool)):
                raise self.fail(f"only e[\"name\"] or x[0] subscripts are allowed, not {_describe(key)}",
                                _describe(key))
            if isinstance(key.value, str):
                if key.value.startswith("_"):
                    raise self.fail(f"access to {key.value!r} is not allowed", key.value)
                # e["artist"] and e.artist read the same attribute
                return X.GetAttr(c(node.value), self._literal(key.value))
            return X.GetItem(c(node.value), X.Const(self._literal(key.value)))
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.BinOp):
            sym = _BINOPS.get(type(node.op))
            if sym is None:
                raise self.fail(f"the operator {_describe(node.op)} is not allowed", _describe(node.op))
            return X.BinOp(sym, c(node.left), c(node.right))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return X.Unary("not", c(node.operand))
            if isinstance(node.op, ast.USub):
                inner = c(node.operand)
                if isinstance(inner, X.Const) and isinstance(inner.value, (int, float)) and not isinstance(inner.value, bool):
                    return X.Const(-inner.value)
                return X.Unary("-", inner)
            if isinstance(node.op, ast.UAdd):
                return c(node.operand)
            raise self.fail(f"the operator {_describe(node.op)} is not allowed", _describe(node.op))
        if isinstance(node, ast.BoolOp):
            return X.BoolOp("and" if isinstance(node.op, ast.And) else "or", tuple(c(v) for v in node.values))
        if isinstance(node, ast.Compare):
            ops = []
            for o, right in zip(node.ops, node.comparators):
                sym = _CMPOPS[type(o)]
                if sym in ("is", "is not") and not (isinstance(right, ast.Constant) and right.value is None):
                    raise self.fail("'is' may only compare with None", "is")
                ops.append(sym)
            return X.Compare(c(node.left), tuple(ops), tuple(c(v) for v in node.comparators))
        if isinstance(node, ast.IfExp):
            return X.IfElse(c(node.test), c(node.body), c(node.orelse))
        if isinstance(node, (ast.List, ast.Tuple)):
            if len(node.elts) > MAX_LIST_ITEMS:
                raise self.fail(f"a list of {len(node.elts)} items is too long (at most {MAX_LIST_ITEMS})",
                                "huge literal")
            return X.ListLit(tuple(c(v) for v in node.elts))
        if isinstance(node, ast.Lambda):
            raise self.fail("a lambda inside an expression is not allowed", "nested lambda")
        what = _describe(node)
        raise self.fail(f"{what} is not allowed in plan expressions", what)

    def _literal(self, value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if len(str(abs(value))) > MAX_INT_DIGITS:
                raise self.fail(f"the number has more than {MAX_INT_DIGITS} digits", "huge literal")
            return value
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")) or abs(value) > 1e15:
                raise self.fail(f"the number {value} is out of range", "huge literal")
            return value
        if isinstance(value, str):
            if len(value) > MAX_STRING:
                raise self.fail(f"a string of {len(value)} characters is too long (at most {MAX_STRING})",
                                "huge literal")
            return value
        raise self.fail(f"{type(value).__name__} literals are not allowed", type(value).__name__)

    def _call(self, node: ast.Call) -> X.Expr:
        if node.keywords:
            raise self.fail("functions in expressions take positional arguments only",
                            f"keyword {node.keywords[0].arg}")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail("star-unpacking is not allowed", "star-unpacking")
        if isinstance(node.func, ast.Name):
            name = node.func.id
            if name.startswith("_"):
                raise self.fail(f"calling {name} is not allowed", name)
            spec = FUNCTIONS.get(name)
            if spec is None:
                raise self.fail(f"calling {name}() is not allowed; allowed functions: {', '.join(FUNCTIONS)}", name)
            args = tuple(self.convert(a) for a in node.args)
        elif isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name.startswith("_"):
                raise self.fail(f"attribute access to {name!r} is not allowed", name)
            if name not in METHODS:
                raise self.fail(f"the method .{name}() is not allowed; allowed methods: {', '.join(METHODS)}", name)
            spec = FUNCTIONS[name]
            args = (self.convert(node.func.value), *(self.convert(a) for a in node.args))
        else:
            raise self.fail(f"only named functions may be called, not {_describe(node.func)}", _describe(node.func))
        if not spec.min_args <= len(args) <= spec.max_args:
            want = str(spec.min_args) if spec.min_args == spec.max_args else f"{spec.min_args}-{spec.max_args}"
            raise self.fail(f"{name}() takes {want} argument(s), got {len(args)}", name)
        return X.Call(name, args)
