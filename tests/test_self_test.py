"""`hindsight --self-test` with fakes: every step runs and is named, a broken model is
named and fails the run, and without models the command exits non-zero saying which.
The installed build's real self-test is in tests/test_dist_build.py (slow)."""
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from app import selftest  # noqa: E402
from engine.operators import Models  # noqa: E402
from engine.qa import HindsightEngine  # noqa: E402
from engine.qud import QudPlanner  # noqa: E402
from tests.test_operators import FakeEmbedder, FakeExtractor, FakePatterns, FakeReranker, FakeSparse  # noqa: E402
from tests.test_qud import ScriptedLLM  # noqa: E402

pytestmark = pytest.mark.gui

PLAN = 'APPLY(l=RETRIEVE(query="Harbour Lights"), fct=len)'


class FakeSegmenter:
    def sentences_many(self, texts):
        return [self.sentences(t) for t in texts]

    def sentences(self, text):
        return [s.strip() + "." for s in text.split(".") if s.strip()]

    def entities(self, text):
        return [("Lisbon", "GPE")] if "Lisbon" in text else []

    def close(self):
        pass


class PlainLLM(ScriptedLLM):
    """The planner role: scripted plans for the engine, plain text for a bare prompt."""

    def complete(self, prompt, *, grammar=None, max_tokens=256, stop=(), temperature=0.0):
        if grammar is None:
            return " blue"
        return super().complete(prompt, grammar=grammar, max_tokens=max_tokens, stop=stop, temperature=temperature)


class FakeRegistry:
    def __init__(self, broken: str | None = None):
        extractor = FakeExtractor("")
        extractor.extract = lambda items: ["harbour lights" for _ in items]
        self.models = {"planner": PlainLLM({selftest.QUESTION: [PLAN]}), "planner_tuned": PlainLLM({}),
                       "embedder": FakeEmbedder(),
                       "sparse_encoder": FakeSparse(), "pattern_classifier": FakePatterns({}),
                       "event_classifier": FakeReranker("harbour"), "extractor": extractor,
                       "segmenter": FakeSegmenter()}
        self.broken = broken

    def get(self, role):
        if role == self.broken:
            raise RuntimeError(f"{role} weights are damaged")
        return self.models[role]


def factory(registry):
    def make(store, _settings):
        engine = HindsightEngine(store, QudPlanner(registry.get("planner")), Models())
        engine.models_registry = registry
        return engine
    return make


def test_every_step_passes_and_is_named(qapp, monkeypatch):
    monkeypatch.setenv("HINDSIGHT_PLANNER", "tuned")  # both planners: the fine-tuned one and its second try
    report = selftest.run(engine_factory=factory(FakeRegistry()), timeout=60)
    names = [s.name for s in report.steps]
    assert names[:4] == ["import", "window", "engine", "question"]
    assert set(names[4:]) == {name for name, _ in selftest.MODEL_CHECKS.values()}
    assert "fine-tuned planner (llama.cpp + LoRA)" in names


def test_a_role_the_installation_does_not_use_is_not_checked(qapp, monkeypatch):
    monkeypatch.setenv("HINDSIGHT_PLANNER", "fewshot")
    report = selftest.run(engine_factory=factory(FakeRegistry(broken="planner_tuned")), timeout=60)
    assert report.ok and "fine-tuned planner (llama.cpp + LoRA)" not in [s.name for s in report.steps]
    assert report.ok, [(s.name, s.detail) for s in report.steps if not s.ok]
    assert "6 events" in report.steps[0].detail  # the bundled export
    assert "Harbour Lights" in report.steps[3].detail
    assert report.platform == "offscreen"
    assert report.window_after_s is not None and report.answer_after_s >= report.window_after_s
    assert report.rss_mb and report.rss_mb > 10


def test_a_broken_model_is_named_and_fails_the_run(qapp):
    report = selftest.run(engine_factory=factory(FakeRegistry(broken="extractor")), timeout=60)
    assert not report.ok
    assert report.failed == ["extractor (CTranslate2)"]
    step = next(s for s in report.steps if s.name == "extractor (CTranslate2)")
    assert "damaged" in step.detail


def test_a_wrong_model_output_is_a_failure(qapp):
    registry = FakeRegistry()
    registry.models["embedder"].embed = lambda texts: [[0.5, 0.5] for _ in texts]  # wrong size, not unit length
    report = selftest.run(engine_factory=factory(registry), timeout=60)
    assert report.failed == ["embedder (ONNX MiniLM)"]


def test_the_option_exits_non_zero_naming_what_is_missing(cli, qapp, monkeypatch):
    class NothingBuilt:
        def __init__(self, *a, **k):
            pass

        def get(self, role):
            from models.registry import ModelMissing

            raise ModelMissing(role, "not built here")

        def close(self):
            pass

    monkeypatch.setattr("models.registry.ModelRegistry", NothingBuilt)
    code, stdout, stderr = cli("--self-test", "--self-test-timeout", "60")
    assert code == 1
    assert "ok   import" in stdout and "FAIL engine" in stdout
    assert "FAIL planner (llama.cpp)" in stdout and "FAIL spaCy segmenter" in stdout
    assert "Self-test FAILED" in stderr and "planner (llama.cpp)" in stderr
    code, _, stderr = cli("--self-test", "events")
    assert code == 1 and "runs alone" in stderr
