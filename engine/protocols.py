"""What the engine needs from models, as Protocols.

The engine is constructed with objects that satisfy these; the shells (``app``)
pass the real implementations from ``models``, tests pass small fakes. Nothing
here loads a model or imports a heavy library.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

PatternLabel = Literal["relevant", "irrelevant", "partial"]


@runtime_checkable
class Planner(Protocol):
    """A local LLM that continues a prompt, optionally constrained by a GBNF grammar."""

    def complete(self, prompt: str, *, grammar: str | None = None, max_tokens: int = 256,
                 stop: Sequence[str] = (), temperature: float = 0.0) -> str: ...

    def close(self) -> None: ...


@runtime_checkable
class Embedder(Protocol):
    """Dense sentence embeddings, L2-normalised, one row per text."""

    dimension: int

    def embed(self, texts: Sequence[str]) -> "list[list[float]]": ...

    def close(self) -> None: ...


@runtime_checkable
class SparseEncoder(Protocol):
    """A learned sparse encoder (SPLADE): each text becomes term -> weight."""

    def encode(self, texts: Sequence[str]) -> list[dict[str, float]]: ...

    def close(self) -> None: ...


@runtime_checkable
class Reranker(Protocol):
    """A cross-encoder: for each (query, text) pair, the probability the text is relevant.
    RETRIEVE's event classifier."""

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...

    def close(self) -> None: ...


@runtime_checkable
class PatternClassifier(Protocol):
    """RETRIEVE's pattern classifier: is a key-value pattern (e.g. ``source: spotify``,
    ``kind: workout | activity: running``) relevant, irrelevant or partially relevant
    to the query?"""

    def classify(self, query: str, patterns: Sequence[str]) -> list[PatternLabel]: ...

    def close(self) -> None: ...


@runtime_checkable
class Extractor(Protocol):
    """EXTRACT's seq2seq model: for each ``(text, key)`` pair, the value of ``key`` in
    ``text`` (empty string if absent). Text first, as the model was trained."""

    def extract(self, items: Sequence[tuple[str, str]]) -> list[str]: ...

    def close(self) -> None: ...


@runtime_checkable
class ScoredExtractor(Extractor, Protocol):
    """An Extractor that also says how sure it is: each answer with the model's log
    probability of it (0 is certain). EXTRACT drops a category the text does not
    state when the model was unsure of it."""

    def extract_scored(self, items: Sequence[tuple[str, str]]) -> list[tuple[str, float]]: ...


@runtime_checkable
class Segmenter(Protocol):
    """Sentence splitting and named entities (spaCy)."""

    def sentences(self, text: str) -> list[str]: ...

    def sentences_many(self, texts: Sequence[str]) -> list[list[str]]:
        """``sentences`` of each text, in one pass (spaCy batches them)."""
        ...

    def entities(self, text: str) -> list[tuple[str, str]]: ...

    def close(self) -> None: ...


SentenceLabel = Literal["polite", "information", "instruction"]


@runtime_checkable
class ChatTurnHeads(Protocol):
    """The small trained heads of chat-tree reconstruction (CRyCHIc), over sentence
    embeddings made by an :class:`Embedder`:

    - ``sentence_labels``: each sentence's role in a prompt;
    - ``implicit_follow_up``: for each prompt vector (with its word count), the
      probability that it is an implicit follow-up ("make it shorter", "and in 2023?")
      that leans on the most recent turn;
    - ``follow_up_scores``: for a simplified prompt's vector and earlier turns' vectors,
      the probability that the prompt follows up each turn (each turn alone);
    - ``follow_up_choice``: the same turns seen together, with the tree built so far
      (``parents[i]``: the position of turn i's parent among ``turns``, ``None`` for a
      root, -1 for a parent further back): the probability that each turn is the
      prompt's parent, and last, that the prompt starts a new root; they sum to 1.

    ``threshold`` (the least choice probability of a parent) and ``implicit_threshold``
    (IFQC) were tuned on a dev set; ``version`` names the weights, so trees built with
    other heads are rebuilt."""

    threshold: float
    implicit_threshold: float
    version: str

    def sentence_labels(self, vectors: Sequence[Sequence[float]]) -> list[SentenceLabel]: ...

    def implicit_follow_up(self, vectors: Sequence[Sequence[float]], word_counts: Sequence[int]) -> list[float]: ...

    def follow_up_scores(self, prompt: Sequence[float], turns: Sequence[Sequence[float]]) -> list[float]: ...

    def follow_up_choice(self, prompt: Sequence[float], turns: Sequence[Sequence[float]],
                         parents: Sequence[int | None]) -> list[float]: ...


@runtime_checkable
class Keyphraser(Protocol):
    """Named things in texts (spaCy): for each text, its entities and noun phrases as
    ``(phrase, label)``, label an entity type (``ORG``, ``PRODUCT`` ...) or ``NOUN``
    for a noun phrase. Phrases come cleaned of leading articles and pronouns.
    ``language`` is the ISO 639-1 code of the language its model reads."""

    language: str

    def keyphrases(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]: ...

    def close(self) -> None: ...


@runtime_checkable
class LanguageIdentifier(Protocol):
    """The language of each text as an ISO 639-1 code (``en``, ``nl`` ...)."""

    def identify(self, texts: Sequence[str]) -> list[str]: ...

    def close(self) -> None: ...
