"""Assembling the insights core for the shells (CLI and GUI): the insights job and
PROBE with the real models. Missing models become a ``UserError`` naming the fix."""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from app.errors import UserError

log = logging.getLogger(__name__)


def chats_without_insights(store) -> int:
    """Chat conversations the insights job has not seen (0 when there are no chats)."""
    from engine.insights import tables

    con = store.reader()
    if tables.exists(con):
        return con.execute("SELECT count(*) FROM events WHERE kind = 'chat_conversation' AND id NOT IN "
                           "(SELECT id FROM conversation_insights)").fetchone()[0]
    return con.execute("SELECT count(*) FROM events WHERE kind = 'chat_conversation'").fetchone()[0]


def update_insights(store, *, progress: Callable[[str, int, int], None] | None = None,
                    cancelled: Callable[[], bool] = lambda: False, models=None, force: bool = True):
    """Run the insights job (incremental) with the real models; returns its JobResult.
    Without ``force`` it returns None, loading no model, when every conversation has
    insights already (after an import that brought no chats)."""
    from engine.insights import job
    from models.insights import insight_models
    from models.registry import ModelMissing, ModelRegistry

    if not force and not chats_without_insights(store):
        return None
    registry = models or ModelRegistry()
    try:
        try:
            im = insight_models(registry)
        except ModelMissing as exc:
            raise UserError(str(exc)) from exc
        try:
            return job.run(store, im, progress=progress, cancelled=cancelled)
        finally:
            im.close()
    finally:
        if models is None:
            registry.close()


def build_probe(store, settings=None, *, models=None):
    """A :class:`engine.insights.probe.Probe` over ``store`` with the real planner,
    embedder and sparse encoder; its ``registry`` attribute is closed with ``close()``."""
    from engine.insights.probe import Probe
    from models.paths import PLANNER_GGUF_ENV
    from models.registry import ModelMissing, ModelRegistry

    if settings is not None and getattr(settings, "planner_model", None):
        os.environ[PLANNER_GGUF_ENV] = str(settings.planner_model)
    registry = models or ModelRegistry()
    try:
        probe = Probe(store, registry.planner(), registry.embedder(), registry.sparse_encoder())
    except ModelMissing as exc:
        if models is None:
            registry.close()
        raise UserError(str(exc)) from exc
    probe.warm_up(Path(registry.cache) / "planner-prefix-state")
    probe.registry = registry if models is None else None
    return probe


def close_probe(probe) -> None:
    registry = getattr(probe, "registry", None)
    if registry is not None:
        registry.close()
