"""The whole path with the real models: import fixture exports, build the engine
the CLI and the GUI use, ask, and check that the answer is traceable. Uses the
quick-profile models (weak classifiers), so it checks the machinery — a valid
plan from the real LLM, executed, with evidence that exists — not answer quality,
which the benchmarks measure."""
from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import pytest

from engine.ingest import import_paths
from engine.plan import parse_plan, validate_plan
from engine.settings import Settings
from importers.base import ImportContext
from tests.conftest import FIXTURES

pytestmark = pytest.mark.slow


def test_real_engine_answers_with_a_valid_plan_and_real_evidence(store, model_registry, tmp_path):
    from app.assemble import build_engine, refresh_index

    ctx = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))
    report = import_paths(store, [FIXTURES / "spotify", FIXTURES / "strava"], context=ctx)
    assert report.added > 5
    refresh_index(store, models=model_registry)
    engine = build_engine(store, Settings(home_timezone="Europe/Berlin"), tmp_path, models=model_registry)
    try:
        answer = engine.ask("How many podcast episodes did I listen to in 2023?", today=date(2024, 1, 1))
    finally:
        engine.close()
    why = f"{answer.answer_text!r} (plan {answer.plan_text!r})"
    assert answer.llm_calls >= 1 and answer.plan_text, why
    plan = parse_plan(answer.plan_text)
    assert validate_plan(plan) == [], why
    assert "RETRIEVE(" in answer.plan_text, why
    if answer.ok and answer.answer == 0:  # a count of none has no events to show
        assert answer.evidence == (), why
    elif answer.ok:
        assert answer.evidence, answer.answer_text
        found = store.events(ids=answer.evidence, limit=None)
        assert len(found) == len(answer.evidence)
    else:  # an honest "nothing found" is allowed with weak quick models; a made-up value is not
        assert answer.answer is None and "found nothing" in answer.answer_text, why
    assert answer.timings["total_ms"] > 0
