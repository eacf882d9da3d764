"""Plan nodes: one frozen dataclass per operator of ``spec.OPERATORS`` plus ``Qud``.

Field names and order are the operator's parameters as the spec lists them, so the
parser, printer and grammar agree by construction. Nodes are values: equal plans
compare equal and can be hashed. This module builds nothing and runs nothing.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import ClassVar, Union

from engine.plan.expr import Expr, Lambda
from engine.plan.spec import OPERATORS, QUD, ParamKind


class PlanNode:
    OP: ClassVar[str] = ""
    __slots__ = ()

    def children(self) -> tuple["PlanNode", ...]:
        spec = OPERATORS.get(self.OP)
        if spec is None:
            return ()
        return tuple(getattr(self, p.name) for p in spec.params if p.kind is ParamKind.PLAN)


@dataclass(frozen=True, slots=True)
class Qud(PlanNode):
    OP: ClassVar[str] = QUD
    question: str


@dataclass(frozen=True, slots=True)
class Retrieve(PlanNode):
    OP: ClassVar[str] = "RETRIEVE"
    query: str


@dataclass(frozen=True, slots=True)
class Extract(PlanNode):
    OP: ClassVar[str] = "EXTRACT"
    l: PlanNode
    attr_names: tuple[str, ...]
    attr_types: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Filter(PlanNode):
    OP: ClassVar[str] = "FILTER"
    l: PlanNode
    filter: Lambda


@dataclass(frozen=True, slots=True)
class GroupBy(PlanNode):
    OP: ClassVar[str] = "GROUP_BY"
    l: PlanNode
    attr_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Join(PlanNode):
    OP: ClassVar[str] = "JOIN"
    l1: PlanNode
    l2: PlanNode
    condition: Expr


@dataclass(frozen=True, slots=True)
class Map(PlanNode):
    OP: ClassVar[str] = "MAP"
    l: PlanNode
    fct: Lambda
    res_name: str


@dataclass(frozen=True, slots=True)
class Apply(PlanNode):
    OP: ClassVar[str] = "APPLY"
    l: PlanNode
    fct: Union[Lambda, str]  # a LIST_FUNCTIONS name such as "len", or lambda l: ...


@dataclass(frozen=True, slots=True)
class Unnest(PlanNode):
    OP: ClassVar[str] = "UNNEST"
    l: PlanNode
    nested_attr_name: str
    unnested_attr_name: str


@dataclass(frozen=True, slots=True)
class ArgMin(PlanNode):
    OP: ClassVar[str] = "ARGMIN"
    l: PlanNode
    arg_attr_name: str
    val_attr_name: str


@dataclass(frozen=True, slots=True)
class ArgMax(PlanNode):
    OP: ClassVar[str] = "ARGMAX"
    l: PlanNode
    arg_attr_name: str
    val_attr_name: str


@dataclass(frozen=True, slots=True)
class Sum(PlanNode):
    OP: ClassVar[str] = "SUM"
    l: PlanNode
    attr_name: str


@dataclass(frozen=True, slots=True)
class Avg(PlanNode):
    OP: ClassVar[str] = "AVG"
    l: PlanNode
    attr_name: str


@dataclass(frozen=True, slots=True)
class Min(PlanNode):
    OP: ClassVar[str] = "MIN"
    l: PlanNode
    attr_name: str


@dataclass(frozen=True, slots=True)
class Max(PlanNode):
    OP: ClassVar[str] = "MAX"
    l: PlanNode
    attr_name: str


NODE_CLASSES: dict[str, type[PlanNode]] = {cls.OP: cls for cls in (
    Qud, Retrieve, Extract, Filter, GroupBy, Join, Map, Apply, Unnest, ArgMin, ArgMax,
    Sum, Avg, Min, Max)}

# The spec and the classes must agree field for field.
for _name, _spec in OPERATORS.items():
    _cls = NODE_CLASSES[_name]
    assert tuple(f.name for f in fields(_cls)) == tuple(p.name for p in _spec.params), _name


def iter_nodes(node: PlanNode, path: str = "0") -> Iterator[tuple[str, PlanNode]]:
    """(path, node) pre-order; a path names a node for progress and the GUI's tree
    ("0", "0.l", "0.l.l1", ...)."""
    yield path, node
    spec = OPERATORS.get(node.OP)
    if spec is None:
        return
    for p in spec.params:
        if p.kind is ParamKind.PLAN:
            yield from iter_nodes(getattr(node, p.name), f"{path}.{p.name}")
