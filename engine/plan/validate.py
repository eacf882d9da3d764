"""Static checks of a parsed plan, as ReQAP states them: every attribute an
operator reads must be produced below it (by EXTRACT, MAP, GROUP_BY, UNNEST or be
one every event has), list inputs must be lists, and an executable plan has no QUD
left. Problems are returned as values with the node's path, so the planner can
repair and retry. This module reads plans only; it must not execute them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.plan import expr as X
from engine.plan import nodes as N
from engine.plan import typecheck as T
from engine.plan.spec import EVENT_ATTRIBUTES, GROUP_ATTRIBUTES, OPERATORS, Output, TYPE_NAMES


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    operator: str
    message: str

    def __str__(self) -> str:
        return f"{self.operator} at {self.path}: {self.message}"


class PlanValidationError(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("the plan is not valid:\n" + "\n".join(f"- {p}" for p in problems))


@dataclass(frozen=True, slots=True)
class _Shape:
    output: Output | None       # None: unknown (an undecomposed QUD)
    attrs: frozenset[str] | None  # None: unknown, anything may be there
    text: frozenset[str] = frozenset()  # attributes EXTRACT gives as str: nothing to add up
    types: Mapping[str, str] = field(default_factory=dict)  # the kind of value each attribute holds, where known

    def row_types(self) -> Mapping[str, str] | None:
        return None if self.attrs is None else self.types


def _reads(fn: X.Expr, var: str) -> set[str]:
    out = X.attributes_read(fn, var)
    for node in X.walk(fn):
        # functions that take the whole row read its span
        if isinstance(node, X.Call) and node.func in ("overlaps", "duration"):
            if any(isinstance(a, X.Var) and a.name == var for a in node.args):
                out |= {"start", "end"}
    return out


def validate_plan(plan: N.PlanNode, *, executable: bool = True) -> list[Problem]:
    """All problems found; empty when the plan can run. With ``executable=False`` a
    QUD placeholder is fine (the planner is still decomposing)."""
    problems: list[Problem] = []
    _shape(plan, "0", problems, executable)
    return problems


def output_attributes(plan: N.PlanNode) -> frozenset[str] | None:
    """The attributes ``plan``'s rows carry, by the same rules the checks use
    (None: unknown, e.g. below an undecomposed QUD)."""
    return _shape(plan, "0", [], False).attrs


def text_attributes(plan: N.PlanNode) -> frozenset[str]:
    """The attributes of ``plan``'s rows that EXTRACT gives as text (str)."""
    return _shape(plan, "0", [], False).text


def check_plan(plan: N.PlanNode) -> None:
    problems = validate_plan(plan)
    if problems:
        raise PlanValidationError(problems)


def _need(problems: list[Problem], path: str, op: str, shape: _Shape, names: set[str] | tuple[str, ...],
          what: str) -> None:
    if shape.attrs is None:
        return
    for name in sorted(set(names)):
        if name not in shape.attrs:
            have = ", ".join(sorted(shape.attrs))
            problems.append(Problem(path, op, (
                f"{what} reads the attribute {name!r}, which nothing below produces (available: {have}); "
                f"add an EXTRACT(attr_names=[\"{name}\"], ...) or MAP(res_name=\"{name}\") below it")))


def _typed(problems: list[Problem], path: str, op: str, what: str, body: X.Expr,
           params: dict[str, Mapping[str, str] | None]) -> str:
    """The kind of value ``body`` gives; what cannot work in it goes to ``problems``."""
    found: list[str] = []
    kind = T.typed(body, params, found)
    problems.extend(Problem(path, op, f"{what} {message}") for message in dict.fromkeys(found))
    return kind


def _rows(problems: list[Problem], path: str, op: str, param: str, shape: _Shape) -> None:
    if shape.output is Output.SCALAR:
        problems.append(Problem(path, op, f"{param}= must be a list of rows, but it gives a single value"))


def _shape(node: N.PlanNode, path: str, problems: list[Problem], executable: bool) -> _Shape:
    op = node.OP
    if isinstance(node, N.Qud):
        if executable:
            problems.append(Problem(path, op, f"the sub-question {node.question!r} is not decomposed yet"))
        if not node.question.strip():
            problems.append(Problem(path, op, "the sub-question is empty"))
        return _Shape(None, None)
    if isinstance(node, N.Retrieve):
        if not node.query.strip():
            problems.append(Problem(path, op, "the query is empty"))
        return _Shape(Output.ROWS, frozenset(EVENT_ATTRIBUTES),
                      types={a: T.EVENT_TYPES[a] for a in EVENT_ATTRIBUTES})

    kids = {p.name: _shape(getattr(node, p.name), f"{path}.{p.name}", problems, executable)
            for p in OPERATORS[op].params if p.kind.value == "plan"}
    for name, shape in kids.items():
        _rows(problems, path, op, name, shape)
    child = kids.get("l")
    output = OPERATORS[op].output

    def extend(shape: _Shape, names: tuple[str, ...] | set[str], text: frozenset[str] = frozenset(),
               types: Mapping[str, str] | None = None) -> _Shape:
        kinds = {**shape.types, **{n: T.ANY for n in names}, **(types or {})}
        return _Shape(output, None if shape.attrs is None else shape.attrs | frozenset(names),
                      (shape.text - frozenset(names)) | text, kinds)

    if isinstance(node, N.Extract):
        if len(node.attr_names) != len(node.attr_types):
            problems.append(Problem(path, op, f"{len(node.attr_names)} attr_names but {len(node.attr_types)} "
                                              "attr_types; give one type per name"))
        bad = [t for t in node.attr_types if t not in TYPE_NAMES]
        if bad:
            problems.append(Problem(path, op, f"unknown type(s) {', '.join(bad)}"))
        return extend(child, node.attr_names,
                      frozenset(n for n, t in zip(node.attr_names, node.attr_types) if t == "str"),
                      {n: T.EXTRACTED.get(t, T.ANY) for n, t in zip(node.attr_names, node.attr_types)})
    if isinstance(node, N.Filter):
        _need(problems, path, op, child, _reads(node.filter.body, node.filter.params[0]), "the filter")
        _typed(problems, path, op, "the filter", node.filter.body, {node.filter.params[0]: child.row_types()})
        return child
    if isinstance(node, N.GroupBy):
        _need(problems, path, op, child, node.attr_names, "GROUP_BY")
        return _Shape(output, frozenset(node.attr_names) | frozenset(GROUP_ATTRIBUTES),
                      child.text & frozenset(node.attr_names),
                      {**{n: child.types.get(n, T.ANY) for n in node.attr_names}, "group": T.ROWS, "count": T.NUM})
    if isinstance(node, N.Join):
        l1, l2 = kids["l1"], kids["l2"]
        _need(problems, path, op, l1, _reads(node.condition, "i1"), "the condition (i1)")
        _need(problems, path, op, l2, _reads(node.condition, "i2"), "the condition (i2)")
        if not any(isinstance(n, X.Var) for n in X.walk(node.condition)):
            problems.append(Problem(path, op, "the condition uses neither i1 nor i2"))
        _typed(problems, path, op, "the condition", node.condition, {"i1": l1.row_types(), "i2": l2.row_types()})
        attrs = None if l1.attrs is None or l2.attrs is None else l1.attrs | l2.attrs
        both = {n: t for n, t in l1.types.items() if l2.types.get(n, t) == t}
        both.update((n, t) for n, t in l2.types.items() if n not in l1.types)
        return _Shape(output, attrs, l1.text | l2.text, both)
    if isinstance(node, N.Map):
        _need(problems, path, op, child, _reads(node.fct.body, node.fct.params[0]), "the function")
        params = {node.fct.params[0]: child.row_types()}
        kind = _typed(problems, path, op, "the function", node.fct.body, params)
        return extend(child, (node.res_name,), types={node.res_name: kind})
    if isinstance(node, N.Apply):
        if isinstance(node.fct, X.Lambda):
            _typed(problems, path, op, "the function", node.fct.body, {})
        return _Shape(output, frozenset())
    if isinstance(node, N.Unnest):
        _need(problems, path, op, child, (node.nested_attr_name,), "UNNEST")
        return extend(child, (node.unnested_attr_name,),
                      frozenset({node.unnested_attr_name}) if node.nested_attr_name in child.text else frozenset())
    if isinstance(node, (N.ArgMin, N.ArgMax)):
        _need(problems, path, op, child, (node.arg_attr_name, node.val_attr_name), op)
        if child.types.get(node.val_attr_name) == T.STR:
            problems.append(Problem(path, op, (
                f"{op} ranks the rows by {node.val_attr_name!r}, which is text, so the order means nothing; "
                "rank them by a number, a date or a time (a count, an amount, start)")))
        return _Shape(output, frozenset())
    if isinstance(node, (N.Sum, N.Avg, N.Min, N.Max)):
        _need(problems, path, op, child, (node.attr_name,), op)
        if isinstance(node, (N.Sum, N.Avg)) and node.attr_name in child.text:
            problems.append(Problem(path, op, (
                f"{op} adds up {node.attr_name!r}, which EXTRACT gives as text (str); to count rows use "
                f"APPLY(l=..., fct=len), to add amounts extract them as float")))
        return _Shape(output, frozenset())
    problems.append(Problem(path, op, f"no validation rule for {op}"))
    return _Shape(None, None)
