"""Rewrites that make a valid plan cheaper to run without changing its answer.

EXTRACT is the one expensive operator after RETRIEVE: the extractor model reads each
row (~5–60 ms a row on 2 cores). The planner often extracts first and filters after,
``FILTER(l=EXTRACT(l=RETRIEVE(query="workout"), attr_names=["duration"], ...),
filter=lambda e: year(e.start) == 2021)``, so every workout of every year went
through the model to keep one year's. Both operators work row by row, so a
condition that reads nothing the EXTRACT writes gives the same rows on either side
of it; :func:`filter_before_extract` moves such conditions below.

This module rewrites plan trees only; it must not execute anything.
"""
from __future__ import annotations

from dataclasses import replace

from engine.plan import expr as X
from engine.plan import nodes as N
from engine.plan.repair import with_children

__all__ = ["filter_before_extract", "optimize"]


def optimize(plan: N.PlanNode) -> N.PlanNode:
    """``plan`` rewritten to run faster with the same result; the same object when
    nothing applies."""
    return filter_before_extract(plan)


def filter_before_extract(plan: N.PlanNode) -> N.PlanNode:
    """Each FILTER directly over an EXTRACT, with the conjuncts of its condition that
    read no extracted attribute moved under the EXTRACT (through stacked EXTRACTs as
    far as they allow). Conjuncts that read an extracted attribute stay where they
    were; a condition that passes the row itself to a function (``duration(e)``)
    stays whole."""
    if isinstance(plan, (N.Qud, N.Retrieve)):
        return plan
    node = with_children(plan, filter_before_extract)
    if not (isinstance(node, N.Filter) and isinstance(node.l, N.Extract)):
        return node
    var = node.filter.params[0]
    conjuncts = X.conjuncts(node.filter.body)
    written = set(node.l.attr_names)
    movable = [_reads_only_named_attributes(c, var) and not (X.attributes_read(c, var) & written)
               for c in conjuncts]
    if not any(movable):
        return node
    down = [c for c, m in zip(conjuncts, movable) if m]
    up = [c for c, m in zip(conjuncts, movable) if not m]
    below = filter_before_extract(N.Filter(node.l.l, X.Lambda(node.filter.params, X.conjoin(down))))
    extract = replace(node.l, l=below)
    if not up:
        return extract
    return replace(node, l=extract, filter=X.Lambda(node.filter.params, X.conjoin(up)))


def _reads_only_named_attributes(expr: X.Expr, var: str) -> bool:
    """Every use of the row variable is ``e.name`` or ``e["name"]``."""
    uses = sum(1 for n in X.walk(expr) if isinstance(n, X.Var) and n.name == var)
    named = sum(1 for n in X.walk(expr)
                if isinstance(n, (X.GetAttr, X.GetItem)) and isinstance(n.obj, X.Var) and n.obj.name == var)
    return uses == named
