"""OTX: execute a plan over the event store.

``execute(plan, store, models, today=...)`` parses (if given text) and validates
the plan, rewrites it to run cheaper with the same answer (:mod:`engine.plan.optimize`:
filters on what events already have run before EXTRACT), runs its operators
bottom-up through the operator registry, and returns a :class:`Result`: the exact
answer, its evidence (the ids of the events it was computed from) and, per plan
node, row counts, milliseconds and remarks for the GUI's plan tree. Cancellation is
checked between operators and inside long loops. An operator that fails stops the
run with an :class:`ExecutionError` in plain language; no value is ever made up.
This module never writes the store.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from engine.operators import (ExecutionCancelled, Models, OperatorContext, OperatorError, OperatorRegistry,
                              RetrieveSettings, Scalar, UnknownOperatorError, default_registry)
from engine.plan import check_plan, parse_plan
from engine.plan import expr as X
from engine.plan.names_given import NameBook
from engine.plan.nodes import Extract, Filter, Join, PlanNode, Retrieve, iter_nodes
from engine.plan.optimize import optimize
from engine.plan.printer import print_plan
from engine.plan.rows import Row
from engine.plan.spec import OPERATORS, ParamKind

log = logging.getLogger(__name__)


class ExecutionError(RuntimeError):
    """The plan could not be executed; ``path`` and ``operator`` say where."""

    def __init__(self, message: str, *, path: str = "", operator: str = ""):
        self.path = path
        self.operator = operator
        super().__init__(message)


@dataclass(slots=True)
class NodeStats:
    path: str
    operator: str
    plan: str          # the node's canonical text
    rows: int | None = None
    ms: float | None = None
    status: str = "pending"  # pending | running | done | failed | cancelled
    notes: list[str] = field(default_factory=list)
    detail: str = ""  # while running: how far a long step has got ("4,096 of 6,629 texts")


@dataclass(slots=True)
class Result:
    value: Any                  # the answer: a scalar, or the list of rows
    evidence: tuple[str, ...]   # ids of the events the answer derives from
    rows: list[Row] | None      # when the plan ends in a list of rows
    nodes: list[NodeStats]
    note: str = ""
    ms: float = 0.0
    ties: tuple = ()            # an argmax's other winners (see Scalar)


ProgressCallback = Callable[[NodeStats], None]


def execute(plan: str | PlanNode, store, models: Models | None = None, *, today: date,
            progress: ProgressCallback | None = None, cancel: threading.Event | None = None,
            index=None, registry: OperatorRegistry | None = None,
            retrieve_settings: RetrieveSettings | None = None, names: NameBook | None = None) -> Result:
    """Run ``plan`` over ``store``. ``today`` is the date questions are asked on
    (fixed for benchmarks). ``names``: the store's names, where the caller has read
    them (:mod:`engine.qud.store_names`): a search's query that starts with one names
    it. Raises PlanSyntaxError/PlanValidationError for a bad
    plan, ExecutionError when an operator fails, ExecutionCancelled on cancel."""
    node = parse_plan(plan) if isinstance(plan, str) else plan
    check_plan(node)
    node = optimize(node)  # the same answer, fewer rows through the extractor
    registry = registry or default_registry()
    ctx = OperatorContext(store=store, models=models or Models(), today=today, cancel=cancel, index=index,
                          retrieve=retrieve_settings or RetrieveSettings(), names=names)
    stats = {path: NodeStats(path, n.OP, print_plan(n)) for path, n in iter_nodes(node)}
    t0 = time.perf_counter()
    out = _run(node, "0", ctx, registry, stats, progress)
    ms = (time.perf_counter() - t0) * 1000
    ordered = list(stats.values())
    if isinstance(out, Scalar):
        return Result(out.value, tuple(sorted(out.ids)), None, ordered, out.note, ms, out.ties)
    ids = frozenset().union(*(r.ids for r in out)) if out else frozenset()
    return Result(out, tuple(sorted(ids)), out, ordered, "", ms)


def _run(node: PlanNode, path: str, ctx: OperatorContext, registry: OperatorRegistry,
         stats: dict[str, NodeStats], progress: ProgressCallback | None, wanted=None, window: int = 0):
    ctx.check_cancel()
    spec = OPERATORS[node.OP]
    if isinstance(node, Join) and _a_search(node.l2) and _same_day(node.condition) and ctx.retrieve.day_window:
        # the days of the left side tell the search on the right which events can pair
        left = _run(node.l1, f"{path}.l1", ctx, registry, stats, progress)
        right = _run(node.l2, f"{path}.l2", ctx, registry, stats, progress, _on_the_days_of(left),
                     ctx.retrieve.day_window)
        inputs = [left, right]
    else:
        # a FILTER right over a RETRIEVE tells it which events can matter (RetrieveSettings.rerank_window);
        # an EXTRACT passes on what is wanted of it to the RETRIEVE it reads (the days a JOIN pairs)
        if isinstance(node, Filter) and isinstance(node.l, Retrieve):
            below, below_window = node.filter, ctx.retrieve.rerank_window
        elif isinstance(node, Extract) and isinstance(node.l, Retrieve) and wanted is not None:
            below, below_window = wanted, window
        else:
            below, below_window = None, 0
        inputs = [_run(getattr(node, p.name), f"{path}.{p.name}", ctx, registry, stats, progress, below,
                       below_window)
                  for p in spec.params if p.kind is ParamKind.PLAN]
    ctx.check_cancel()
    st = stats[path]
    st.status = "running"
    if progress:
        progress(st)
    try:
        impl = registry.get(node.OP)
    except UnknownOperatorError as exc:
        raise ExecutionError(str(exc), path=path, operator=node.OP) from exc
    ctx.notes = []
    ctx.wanted = wanted
    ctx.window = window if wanted is not None else 0
    ctx.report = _reporter(st, progress)
    t0 = time.perf_counter()
    try:
        out = impl(node, *inputs, ctx)
    except ExecutionCancelled:
        st.status = "cancelled"
        if progress:
            progress(st)
        raise
    except OperatorError as exc:
        st.status, st.notes = "failed", [*ctx.notes, str(exc)]
        if progress:
            progress(st)
        raise ExecutionError(f"step {node.OP} failed: {exc}", path=path, operator=node.OP) from exc
    finally:
        ctx.wanted, ctx.window, ctx.report = None, 0, None
    st.ms = (time.perf_counter() - t0) * 1000
    st.rows = 1 if isinstance(out, Scalar) else len(out)
    st.notes = list(ctx.notes)
    if isinstance(out, Scalar) and out.note:
        st.notes.append(out.note)
    st.status = "done"
    log.debug("%s %s: %s rows in %.1f ms", path, node.OP, st.rows, st.ms)
    if progress:
        progress(st)
    return out


def _reporter(st: NodeStats, progress: ProgressCallback | None) -> Callable[[str], None] | None:
    """How a running operator says how far it has got: in ``st.detail``, passed on."""
    if progress is None:
        return None

    def report(detail: str) -> None:
        st.detail = detail
        progress(st)
    return report


def _a_search(node: PlanNode) -> bool:
    """A RETRIEVE, or an EXTRACT right over one."""
    return isinstance(node, Retrieve) or isinstance(node, Extract) and isinstance(node.l, Retrieve)


def _same_day(condition: X.Expr) -> bool:
    """Whether a JOIN pairs rows only on the same day: ``same_day(i1.start, i2.start)``,
    alone or with other conditions."""
    return any(isinstance(c, X.Call) and c.func == "same_day" and len(c.args) == 2
               and all(isinstance(a, X.GetAttr) and a.name == "start" for a in c.args)
               and {a.obj.name for a in c.args if isinstance(a.obj, X.Var)} == {"i1", "i2"}
               for c in X.conjuncts(condition))


def _on_the_days_of(rows) -> X.Lambda | None:
    """A condition that keeps the rows starting on a day one of ``rows`` starts on
    (local days, as ``same_day`` reads them); None for no rows or a scalar."""
    if not isinstance(rows, list) or not rows:
        return None
    days = sorted({r.get("start").date() for r in rows if r.get("start") is not None})
    if not days:
        return None
    dates = tuple(X.Call("date", (X.Const(d.year), X.Const(d.month), X.Const(d.day))) for d in days)
    start = X.Call("date", (X.GetAttr(X.Var("e"), "start"),))
    return X.Lambda(("e",), X.Compare(start, ("in",), (X.ListLit(dates),)))
