"""Rewrites that make a valid plan cheaper to run without changing its answer.

EXTRACT is the one expensive operator after RETRIEVE: the extractor model reads each
row (~5–60 ms a row on 2 cores). The planner often extracts first and filters after,
``FILTER(l=EXTRACT(l=RETRIEVE(query="workout"), attr_names=["duration"], ...),
filter=lambda e: year(e.start) == 2021)``, so every workout of every year went
through the model to keep one year's. Both operators work row by row, so a
condition that reads nothing the EXTRACT writes gives the same rows on either side
of it; :func:`filter_before_extract` moves such conditions below. And an EXTRACT
of what an EXTRACT below it already extracted (``EXTRACT(l=FILTER(l=EXTRACT(...,
["cuisine", ...]), ...), ["cuisine"])``) asks the model again for the same values;
:func:`extract_once` drops it. Under an answer that is a number or one value, an
extracted attribute nothing above reads is never seen ("How many conversations did
I have with ChatGPT" extracted a "role" it never filtered on: 14 s of model calls);
:func:`drop_unread_extracts` drops it.

This module rewrites plan trees only; it must not execute anything.
"""
from __future__ import annotations

from dataclasses import replace

from engine.plan import expr as X
from engine.plan import nodes as N
from engine.plan.repair import with_children

__all__ = ["drop_unread_extracts", "extract_once", "filter_before_extract", "optimize"]


def optimize(plan: N.PlanNode) -> N.PlanNode:
    """``plan`` rewritten to run faster with the same result; the same object when
    nothing applies."""
    return filter_before_extract(drop_unread_extracts(extract_once(plan)))


def drop_unread_extracts(plan: N.PlanNode, needed: frozenset[str] | None = None) -> N.PlanNode:
    """``plan`` without the extracted attributes that nothing above reads, below an
    aggregate (APPLY, SUM/AVG/MIN/MAX, ARGMIN/ARGMAX) through GROUP_BY, FILTER, MAP
    and EXTRACT; ``needed`` is what the nodes above read (None: everything, as for
    rows shown as the answer)."""
    if isinstance(plan, N.Apply):
        reads = frozenset() if plan.fct == "len" else None
    elif isinstance(plan, (N.Sum, N.Avg, N.Min, N.Max)):
        reads = frozenset({plan.attr_name})
    elif isinstance(plan, (N.ArgMin, N.ArgMax)):
        reads = frozenset({plan.arg_attr_name, plan.val_attr_name})
    elif needed is None:
        return plan
    elif isinstance(plan, N.GroupBy):
        reads = needed | set(plan.attr_names)
    elif isinstance(plan, N.Filter):
        reads = needed | X.attributes_read(plan.filter.body, plan.filter.params[0]) \
            if _reads_only_named_attributes(plan.filter.body, plan.filter.params[0]) else None
    elif isinstance(plan, N.Map):
        var = plan.fct.params[0]
        reads = (needed - {plan.res_name}) | X.attributes_read(plan.fct.body, var) \
            if _reads_only_named_attributes(plan.fct.body, var) else None
    elif isinstance(plan, N.Extract):
        kept = [(n, t) for n, t in zip(plan.attr_names, plan.attr_types) if n in needed]
        inner = drop_unread_extracts(plan.l, needed - set(plan.attr_names))
        if not kept:
            return inner
        if len(kept) == len(plan.attr_names) and inner is plan.l:
            return plan
        return replace(plan, l=inner, attr_names=tuple(n for n, _ in kept), attr_types=tuple(t for _, t in kept))
    else:
        return plan
    if reads is None:
        return plan
    return with_children(plan, lambda child: drop_unread_extracts(child, reads))


def extract_once(plan: N.PlanNode) -> N.PlanNode:
    """``plan`` without EXTRACTs of attributes that an EXTRACT below already gives
    (with the same type, through FILTERs and EXTRACTs, which keep rows' attributes);
    an EXTRACT left with none goes."""
    if isinstance(plan, (N.Qud, N.Retrieve)):
        return plan
    node = with_children(plan, extract_once)
    if not isinstance(node, N.Extract):
        return node
    below: set[tuple[str, str]] = set()
    inner = node.l
    while isinstance(inner, (N.Filter, N.Extract)):
        if isinstance(inner, N.Extract):
            below.update(zip(inner.attr_names, inner.attr_types))
        inner = inner.l
    kept = [(n, t) for n, t in zip(node.attr_names, node.attr_types) if (n, t) not in below]
    if len(kept) == len(node.attr_names):
        return node
    if not kept:
        return node.l
    return replace(node, attr_names=tuple(n for n, _ in kept), attr_types=tuple(t for _, t in kept))


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
    """Every use of the row variable is ``e.name`` or ``e["name"]``, and none is a
    group's rows (``e.group["km"]`` reads attributes of the rows below GROUP_BY)."""
    if "group" in X.attributes_read(expr, var):
        return False
    uses = sum(1 for n in X.walk(expr) if isinstance(n, X.Var) and n.name == var)
    named = sum(1 for n in X.walk(expr)
                if isinstance(n, (X.GetAttr, X.GetItem)) and isinstance(n.obj, X.Var) and n.obj.name == var)
    return uses == named
