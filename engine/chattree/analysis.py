"""Prompt analysis (CRyCHIc §2.1–2.2): a prompt split into sentences, each labelled
polite expression, information or instruction; the prompt's own label; its
simplified form; and whether it is an implicit follow-up.

The models come in through :class:`ChatTreeModels` (a Segmenter, an Embedder and the
trained :class:`~engine.protocols.ChatTurnHeads`), so tests pass fakes. This module
holds no word lists: every decision is a model's.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.protocols import ChatTurnHeads, Embedder, Segmenter, SentenceLabel

#: Only the head of a long prompt is analysed: a pasted document or code block says
#: nothing more about the prompt's role, and spaCy's cost grows with its length.
ANALYSED_CHARS = 2_000
#: Sentences labelled per prompt (the first ones); the rest count as information.
MAX_SENTENCES = 12
#: A sentence is embedded up to this many characters (MiniLM reads ~256 tokens anyway).
SENTENCE_CHARS = 300
#: A turn's vector is its prompt's (the whole prompt's head, made by the analysis)
#: plus that of this much of the response.
TURN_RESPONSE_CHARS = 400


@dataclass(frozen=True, slots=True)
class ChatTreeModels:
    """What tree building needs from models."""

    segmenter: "Segmenter"
    embedder: "Embedder"
    heads: "ChatTurnHeads"


@dataclass(frozen=True, slots=True)
class PromptAnalysis:
    sentences: tuple[str, ...]
    labels: tuple["SentenceLabel", ...]
    label: "SentenceLabel"
    simplified: str
    implicit_follow_up: bool
    implicit_score: float
    vector: tuple[float, ...]  # the simplified prompt's embedding, what the judge compares
    whole_vector: tuple[float, ...] = ()  # the prompt's head, embedded whole (the IFQC's input)


def prompt_label(labels: "tuple[SentenceLabel, ...] | list[SentenceLabel]") -> "SentenceLabel":
    """Instruction if any sentence is one, else information if any is, else polite."""
    if "instruction" in labels:
        return "instruction"
    if "information" in labels:
        return "information"
    return "polite"


def simplified_prompt(sentences: "tuple[str, ...]", labels: "tuple[SentenceLabel, ...]") -> str:
    """All instruction sentences plus one information sentence (the first), in their
    order; the whole prompt when it has neither (a polite prompt)."""
    keep: list[str] = []
    info_taken = False
    for sentence, label in zip(sentences, labels):
        if label == "instruction":
            keep.append(sentence)
        elif label == "information" and not info_taken:
            keep.append(sentence)
            info_taken = True
    return " ".join(keep) if keep else " ".join(sentences)


def _analysed(prompt: str) -> str:
    return " ".join(prompt[:ANALYSED_CHARS].split())


def whole_text(prompt: str) -> str:
    """What of a prompt is embedded whole (the IFQC's input, and a turn's vector)."""
    return _analysed(prompt)[:SENTENCE_CHARS * 2]


def analyse_prompt(prompt: str, models: ChatTreeModels) -> PromptAnalysis:
    return analyse_prompts([prompt], models)[0]


def analyse_prompts(prompts: Sequence[str], models: ChatTreeModels) -> list[PromptAnalysis]:
    """Analyse many prompts with one call per model: the segmenter splits them all at
    once, the embedder embeds every sentence and every whole prompt in one call, each
    head labels them all in one call, and one more embed call makes the simplified
    prompts that are neither the whole prompt nor one of its sentences. A prompt's
    analysis does not depend on the prompts beside it."""
    texts = [_analysed(p) for p in prompts]
    split = models.segmenter.sentences_many([t for t in texts if t])
    it = iter(split)
    per: list[tuple[tuple[str, ...], list[str], str]] = []  # sentences, shown, whole
    flat: list[str] = []
    for text in texts:
        sentences = tuple(next(it)) if text else ()
        if not sentences:
            sentences = (text,) if text else ("",)
        shown = [s[:SENTENCE_CHARS] for s in sentences[:MAX_SENTENCES]]
        whole = text[:SENTENCE_CHARS * 2]  # whole_text(prompt)
        per.append((sentences, shown, whole))
        flat += shown + [whole]
    vectors = models.embedder.embed(flat) if flat else []
    sentence_vectors, whole_vectors, starts = [], [], []
    at = 0
    for _sentences, shown, _whole in per:
        starts.append(len(sentence_vectors))
        sentence_vectors += vectors[at:at + len(shown)]
        whole_vectors.append(vectors[at + len(shown)])
        at += len(shown) + 1
    all_labels = list(models.heads.sentence_labels(sentence_vectors)) if sentence_vectors else []
    implicit_scores = models.heads.implicit_follow_up(whole_vectors, [len(p.split()) for p in prompts]) \
        if whole_vectors else []
    partial = []
    for i, (sentences, shown, whole) in enumerate(per):
        labels = tuple(all_labels[starts[i]:starts[i] + len(shown)]) + ("information",) * (len(sentences) - len(shown))
        simplified = simplified_prompt(sentences, labels)
        if simplified == whole:
            vector = whole_vectors[i]
        elif simplified in shown:
            vector = sentence_vectors[starts[i] + shown.index(simplified)]
        else:
            vector = None
        partial.append((sentences, labels, simplified, vector))
    missing = [i for i, (*_rest, vector) in enumerate(partial) if vector is None]
    made = models.embedder.embed([partial[i][2][:SENTENCE_CHARS * 2] for i in missing]) if missing else []
    made_for = dict(zip(missing, made))
    out = []
    for i, (sentences, labels, simplified, vector) in enumerate(partial):
        score = float(implicit_scores[i])
        out.append(PromptAnalysis(sentences=sentences, labels=labels, label=prompt_label(labels),
                                  simplified=simplified, implicit_follow_up=score >= models.heads.implicit_threshold,
                                  implicit_score=score, vector=tuple(made_for[i] if vector is None else vector),
                                  whole_vector=tuple(whole_vectors[i])))
    return out


def response_text(response: str) -> str:
    """The part of a response its turn's vector is made from."""
    return " ".join(response[:TURN_RESPONSE_CHARS].split())


def turn_vector_of(prompt_vector: Sequence[float], response_vector: Sequence[float] | None) -> list[float]:
    """A turn's stored vector: the sum of its prompt's whole vector and its response's,
    normalised (the prompt's alone when there is no response). The prompt's is made by
    the analysis already, so a turn costs one more embedding, of the response's head,
    instead of one of prompt and response together (#40: that was half of the time a
    rebuild took)."""
    import numpy as np

    v = np.asarray(prompt_vector, dtype=np.float64)
    if response_vector is not None:
        v = v + np.asarray(response_vector, dtype=np.float64)
    n = float(np.linalg.norm(v))
    return (v / n).tolist() if n > 0 else v.tolist()
