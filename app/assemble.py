"""The composition root: builds the real question engine from the store, the
user's settings and the built models. The CLI, the GUI and the benchmarks all get
their engine here, so they answer with exactly the same machinery.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

from app.errors import UserError

log = logging.getLogger(__name__)

PLAN_CACHE = "plan-cache.json"
PLAN_CACHE_FALLBACK = "plan-cache-fewshot.json"
# Which planner writes plans: "tuned" (the fine-tuned 0.5B model, one call per plan,
# the default where its adapter is committed; a question its plan gives no answer to
# is planned again by the few-shot planner), "tuned-only" (the same without that
# second try: for measuring the tuned planner alone) or "fewshot" (the 1.5B model with
# the example prefix and the QUD decomposition).
PLANNER_ENV = "HINDSIGHT_PLANNER"
PLANNER_KINDS = ("tuned", "tuned-only", "fewshot")


def planner_kind() -> str:
    from models.runtime.planner_adapter import adapter_path

    kind = os.environ.get(PLANNER_ENV, "").strip().lower()
    if kind in PLANNER_KINDS:
        return kind
    if kind:
        raise UserError(f"{PLANNER_ENV}={kind!r}: expected one of {', '.join(PLANNER_KINDS)}")
    return "tuned" if adapter_path() is not None else "fewshot"


def unused_roles() -> frozenset[str]:
    """Model roles this installation does not use: the fine-tuned planner's base
    model while the few-shot planner answers alone (no adapter committed, or chosen),
    the few-shot planner's while the tuned one answers without a second try. An
    installed build without it is complete, not "1 of 8 models missing"."""
    try:
        kind = planner_kind()
    except UserError:
        return frozenset()
    return {"fewshot": frozenset({"planner_tuned"}), "tuned-only": frozenset({"planner"})}.get(kind, frozenset())


class StoreSchema:
    """The store's sources and attribute names for the tuned planner's prompt, read
    again only when the store's event count changes (an import, a removal)."""

    def __init__(self, store):
        self.store = store
        self._count: int | None = None
        self._text = ""

    def __call__(self) -> str:
        from engine.qud.tuned import schema_lines, store_schema

        n = self.store.count()
        if n != self._count:
            self._text = schema_lines(store_schema(self.store.reader()))
            self._count = n
        return self._text


def build_engine(store, settings, data_dir: Path | None, *, models=None, use_plan_cache: bool = True):
    """A ready :class:`engine.qa.HindsightEngine`. ``models`` is a
    ``models.registry.ModelRegistry`` (one is made if not given; the engine then owns
    it). Missing models raise UserError naming the command that builds them."""
    from engine.operators import Models
    from engine.qa import HindsightEngine
    from engine.qud import PlanCache, QudPlanner
    from engine.retrieval.index import RetrievalIndex
    from models.paths import PLANNER_GGUF_ENV
    from models.registry import ModelMissing, ModelRegistry

    if settings is not None and getattr(settings, "planner_model", None):
        os.environ[PLANNER_GGUF_ENV] = str(settings.planner_model)
    registry = models or ModelRegistry()
    try:
        for role in ("sparse_encoder", "pattern_classifier", "event_classifier", "extractor"):
            registry.check(role)
        # the models RETRIEVE needs, in the order it needs them, load while the planner
        # loads and plans; the extractor only when a question extracts (memory: #43)
        registry.preload(("sparse_encoder", "embedder", "pattern_classifier", "event_classifier"))
        kind = planner_kind()
        llm = registry.get("planner_tuned") if kind != "fewshot" else registry.planner()
        otx = Models(sparse=registry.on_first_use("sparse_encoder"),
                     patterns=registry.on_first_use("pattern_classifier"),
                     reranker=registry.on_first_use("event_classifier"), extractor=registry.on_first_use("extractor"),
                     embedder=registry.on_first_use("embedder"), segmenter=registry.on_first_use("segmenter"))
    except ModelMissing as exc:
        raise UserError(str(exc)) from exc
    def cache_file(name: str) -> PlanCache:
        return PlanCache(Path(data_dir) / name if (use_plan_cache and data_dir) else None)

    state_dir = Path(registry.cache) / "planner-prefix-state"
    fallback = None
    if kind == "fewshot":
        planner = QudPlanner(llm, cache=cache_file(PLAN_CACHE))
    else:
        from engine.qud.tuned import TunedPlanner

        planner = TunedPlanner(llm, StoreSchema(store), cache=cache_file(PLAN_CACHE))
        if kind == "tuned":
            def fallback():  # loaded at the first question the tuned planner's plan does not answer
                few = QudPlanner(registry.planner(), cache=cache_file(PLAN_CACHE_FALLBACK))
                few.warm_up(state_dir=state_dir)
                return few
    planner.warm_up(state_dir=state_dir)
    try:  # the index asks the encoders their names: it waits for them to load
        index = RetrievalIndex(store, sparse=otx.sparse, embedder=otx.embedder)
    except ModelMissing as exc:
        raise UserError(str(exc)) from exc
    engine = HindsightEngine(store, planner, otx, index=index, chat_models=_ask_chat_models(registry),
                             fallback=fallback)
    engine.prepare_names()
    engine.models_registry = registry  # closed with the engine
    original_close = engine.close

    def close() -> None:
        original_close()
        if models is None:
            registry.close()

    engine.close = close  # type: ignore[method-assign]
    return engine


def _ask_chat_models(registry):
    """The Ask history's chat tree models (spaCy loads at the first follow-up); None,
    with a warning in the log, where the heads are missing: follow-ups then follow the
    question before."""
    from app.chattrees import ChatTreesUnavailable, heads
    from engine.chattree import ChatTreeModels

    try:
        return ChatTreeModels(segmenter=registry.on_first_use("segmenter"), embedder=registry.embedder(),
                              heads=heads())
    except ChatTreesUnavailable as exc:
        log.warning("the Ask pane's follow-ups fall back to the question before: %s", exc)
        return None


def refresh_index(store, *, progress=None, cancel=None, models=None) -> str:
    """Bring RETRIEVE's index up to date after an import, so the first question does
    not pay for it. Uses the sparse encoder when it is built; otherwise indexes for
    full-text search only and says so (the engine adds SPLADE weights later).
    Returns a one-line summary."""
    from engine.retrieval.index import RetrievalIndex
    from models.registry import ModelMissing, ModelRegistry

    registry = models or ModelRegistry()
    try:
        try:
            sparse = registry.sparse_encoder()
            note = ""
        except ModelMissing:
            sparse, note = None, " (full-text only: the sparse encoder is not built yet)"
        try:
            embedder = registry.embedder()
        except ModelMissing:
            embedder = None  # the engine embeds what it needs during questions instead
        index = RetrievalIndex(store, sparse=sparse, embedder=embedder)
        try:
            stats = index.refresh(cancel=cancel, progress=progress)
        finally:
            index.close()
    finally:
        if models is None:
            registry.close()
    return (f"indexed {stats.added:,} new events for search, removed {stats.removed:,}, "
            f"{stats.encoded:,} sparse-encoded, {stats.embedded:,} embedded in {stats.seconds:.1f} s{note}")
