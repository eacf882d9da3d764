"""Prompt analysis (CRyCHIc §2.1–2.2): a prompt split into sentences, each labelled
polite expression, information or instruction; the prompt's own label; its
simplified form; and whether it is an implicit follow-up.

The models come in through :class:`ChatTreeModels` (a Segmenter, an Embedder and the
trained :class:`~engine.protocols.ChatTurnHeads`), so tests pass fakes. This module
holds no word lists: every decision is a model's.
"""
from __future__ import annotations

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
#: A turn's vector is made from this much of the prompt and of the response.
TURN_PROMPT_CHARS = 600
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


def analyse_prompt(prompt: str, models: ChatTreeModels) -> PromptAnalysis:
    text = " ".join(prompt[:ANALYSED_CHARS].split())
    sentences = tuple(models.segmenter.sentences(text)) if text else ()
    if not sentences:
        sentences = (text,) if text else ("",)
    labelled = sentences[:MAX_SENTENCES]
    whole = text[:SENTENCE_CHARS * 2]
    shown = [s[:SENTENCE_CHARS] for s in labelled]
    # one embed call for the sentences and the whole prompt (the IFQC's input)
    vectors = models.embedder.embed(shown + [whole])
    labels = tuple(models.heads.sentence_labels(vectors[:-1])) + ("information",) * (len(sentences) - len(labelled))
    implicit_score = models.heads.implicit_follow_up([vectors[-1]], [len(prompt.split())])[0]
    simplified = simplified_prompt(sentences, labels)
    if simplified == whole:
        vector = vectors[-1]
    elif simplified in shown:
        vector = vectors[shown.index(simplified)]
    else:
        vector = models.embedder.embed([simplified[:SENTENCE_CHARS * 2]])[0]
    return PromptAnalysis(sentences=sentences, labels=labels, label=prompt_label(labels), simplified=simplified,
                          implicit_follow_up=implicit_score >= models.heads.implicit_threshold,
                          implicit_score=float(implicit_score), vector=tuple(vector))


def turn_text(prompt: str, response: str) -> str:
    """What a turn's stored vector is made from: the prompt's head and the response's."""
    head = " ".join(prompt[:TURN_PROMPT_CHARS].split())
    reply = " ".join(response[:TURN_RESPONSE_CHARS].split())
    return f"{head}\n{reply}" if reply else head
