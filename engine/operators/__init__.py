"""OTX's operators: the registry mapping operator names to implementations.

An implementation takes the plan node, the values of its child plans (lists of
rows, in parameter order) and the :class:`OperatorContext`, and returns a list of
rows or a :class:`Scalar`. Looking up a missing name says which names exist.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.operators import extract as _extract
from engine.operators import join as _join
from engine.operators import relational as _rel
from engine.operators import retrieve as _retrieve
from engine.operators.context import (ExecutionCancelled, Models, OperatorContext, OperatorError,
                                      RetrieveSettings, Scalar)

Implementation = Callable[..., Any]


class UnknownOperatorError(KeyError):
    def __init__(self, name: str, known: list[str]):
        self.name = name
        super().__init__(f"no implementation for operator {name!r}; known operators: {', '.join(known)}")

    def __str__(self) -> str:
        return self.args[0]


class OperatorRegistry:
    def __init__(self) -> None:
        self._impls: dict[str, Implementation] = {}

    def register(self, name: str, impl: Implementation) -> None:
        if not name or name in self._impls:
            raise ValueError(f"operator name {name!r} is empty or already registered")
        self._impls[name] = impl

    def get(self, name: str) -> Implementation:
        try:
            return self._impls[name]
        except KeyError:
            raise UnknownOperatorError(name, sorted(self._impls)) from None

    def names(self) -> list[str]:
        return sorted(self._impls)


def default_registry() -> OperatorRegistry:
    reg = OperatorRegistry()
    reg.register("RETRIEVE", lambda node, ctx: _retrieve.retrieve(node, ctx))
    reg.register("EXTRACT", lambda node, rows, ctx: _extract.extract(node, rows, ctx))
    reg.register("FILTER", lambda node, rows, ctx: _rel.filter_rows(node, rows, ctx))
    reg.register("GROUP_BY", lambda node, rows, ctx: _rel.group_by(node, rows, ctx))
    reg.register("JOIN", lambda node, l1, l2, ctx: _join.join(node, l1, l2, ctx))
    reg.register("MAP", lambda node, rows, ctx: _rel.map_rows(node, rows, ctx))
    reg.register("APPLY", lambda node, rows, ctx: _rel.apply(node, rows, ctx))
    reg.register("UNNEST", lambda node, rows, ctx: _rel.unnest(node, rows, ctx))
    for name in ("ARGMIN", "ARGMAX"):
        reg.register(name, lambda node, rows, ctx: _rel.arg_extreme(node, rows, ctx))
    for name in ("SUM", "AVG", "MIN", "MAX"):
        reg.register(name, lambda node, rows, ctx: _rel.aggregate(node, rows, ctx))
    return reg


__all__ = ["ExecutionCancelled", "Models", "OperatorContext", "OperatorError", "OperatorRegistry",
           "RetrieveSettings", "Scalar", "UnknownOperatorError", "default_registry"]
