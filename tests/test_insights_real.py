"""Chat insights and PROBE with the real models (MiniLM, SPLADE, spaCy, py3langid,
the planner LLM) on labelled conversations from shared data: the machinery end to
end - attributes inferred, a taxonomy discovered, a question planned under the
grammar and answered with counted values. Quality is measured by
``hindsight bench aqa``, not here."""
from __future__ import annotations

import pytest

from app.bench.aqa_set import HOME_TZ, TODAY, labelled, write_export
from engine.ingest import import_paths
from importers.base import ImportContext

pytestmark = pytest.mark.slow


def test_real_insights_and_probe_end_to_end(store, model_registry, tmp_path):
    from zoneinfo import ZoneInfo

    from engine.insights import job, views
    from engine.insights.probe import Probe
    from models.insights import insight_models

    items = [c for c in labelled() if c.key.startswith("chatgpt-export:")][:40]
    export = write_export(items, tmp_path / "export")
    import_paths(store, [export], context=ImportContext(home_tz=ZoneInfo(HOME_TZ)))
    models = insight_models(model_registry)
    try:
        result = job.run(store, models)
    finally:
        models.close()
    assert result.inferred == 40 and result.topics >= 2
    rows = dict(store.reader().execute("SELECT title, language FROM conversation_insights").fetchall())
    assert rows["Django Multi-DB Setup"] == "en" and rows["Offerte software project"] == "nl"
    django = store.reader().execute("SELECT keywords FROM conversation_insights WHERE title = 'Django Oscar "
                                    "Attribute Error'").fetchone()[0]
    assert "django" in django.lower()
    assert sum(t["count"] for t in views.topics(store)) == 40

    probe = Probe(store, model_registry.planner(), model_registry.embedder(), model_registry.sparse_encoder())
    answer = probe.ask("Which topic did I ask chatbots about most in 2024?", today=TODAY,
                       candidates=["Software development", "Cooking", "Travel"])
    out = answer.to_json()
    assert out["filters"]["since"] == "2024-01-01" and out["filters"]["until"] == "2025-01-01", out
    assert 1 <= len(out["queries"]) <= 10 and out["answer"], out
    assert out["ranking"][0] == "Software development", out
    assert out["timings"]["total_s"] < 60
