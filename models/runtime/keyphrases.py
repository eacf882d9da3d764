"""Key phrases and language of conversation texts for the insights job.

:class:`SpacyKeyphraser` (``engine.protocols.Keyphraser``) runs spaCy's
en_core_web_sm with its tagger and parser as well as its recogniser, because noun
phrases need both; :class:`LangidIdentifier` (``engine.protocols.LanguageIdentifier``)
is py3langid's naive Bayes model over byte n-grams (BSD-3-Clause, no pickle: its
model is a NumPy archive). Both import their library when built.
"""
from __future__ import annotations

from collections.abc import Sequence

from models.runtime.segmenter import SPACY_MODEL, import_spacy, torch_hidden

#: entity types that are no named thing a conversation is about (numbers, dates, amounts)
_UNNAMED = {"CARDINAL", "ORDINAL", "DATE", "TIME", "QUANTITY", "MONEY", "PERCENT"}
#: part-of-speech tags cut from the edges of a noun phrase ("the", "my", "a new")
_EDGE_TAGS = {"DET", "PRON", "PUNCT", "NUM", "SYM", "SPACE", "PART", "CCONJ", "ADP", "X"}


class SpacyKeyphraser:
    """Entities and noun phrases per text, from one spaCy pass over each."""

    def __init__(self, name: str = SPACY_MODEL, *, batch_size: int = 16):
        with torch_hidden():  # as the segmenter: thinc on numpy, torch never loaded
            # the tagger and parser make noun phrases; the lemmatizer is not needed
            self._nlp = import_spacy().load(name, exclude=["lemmatizer"])
        self.language = self._nlp.lang
        self._nlp.max_length = 2_000_000
        self._batch = batch_size
        self.name = f"keyphrases-{name}"

    def keyphrases(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
        if self._nlp is None:
            raise RuntimeError(f"keyphraser {self.name} is closed")
        out = []
        for doc in self._nlp.pipe(list(texts), batch_size=self._batch):
            found: list[tuple[str, str]] = []
            for ent in doc.ents:
                if ent.label_ not in _UNNAMED:
                    found.append((_trim(ent), ent.label_))
            for chunk in doc.noun_chunks:
                if chunk.root.pos_ == "PRON":
                    continue
                phrase = _trim(chunk)
                if phrase:
                    found.append((phrase if any(t.pos_ == "PROPN" for t in chunk) else phrase.lower(), "NOUN"))
            for tok in doc:  # proper nouns outside any phrase (code names, products)
                if tok.pos_ == "PROPN" and not tok.ent_type_ and tok.dep_ not in ("compound",):
                    found.append((tok.text, "PROPN"))
            out.append([f for f in found if f[0]])
        return out

    def close(self) -> None:
        self._nlp = None


def _trim(span) -> str:
    tokens = list(span)
    while tokens and (tokens[0].pos_ in _EDGE_TAGS or tokens[0].is_stop):
        tokens = tokens[1:]
    while tokens and (tokens[-1].pos_ in _EDGE_TAGS or tokens[-1].is_stop):
        tokens = tokens[:-1]
    if not tokens:
        return ""
    return span.doc[tokens[0].i:tokens[-1].i + 1].text


class LangidIdentifier:
    """ISO 639-1 codes of texts by py3langid; empty text gives ``""``."""

    def __init__(self):
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        self._id = LanguageIdentifier.from_model_file(MODEL_FILE)
        self.name = "py3langid"

    def identify(self, texts: Sequence[str]) -> list[str]:
        if self._id is None:
            raise RuntimeError("language identifier is closed")
        return [self._id.classify(t)[0] if t.strip() else "" for t in texts]

    def close(self) -> None:
        self._id = None
