"""Where a new turn goes in a chat history's tree (CRyCHIc §2.4).

For each user turn, in time order: an empty history makes it a root; an implicit
follow-up or an information prompt becomes a child of the most recent turn; a polite
prompt starts a root; an instruction goes to the parent chooser, which sees the
simplified prompt against the stored vectors of the 20 most recent turns together,
with the tree built so far, and gives each turn and "a new root" a probability (the
paper takes the turn the follow-up judge scores highest; see :func:`place`).

Each turn's vector (prompt and response) is computed once, when it is inserted, and
kept by the caller beside the turn; placing later turns only reads it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from engine.chattree.analysis import (ChatTreeModels, PromptAnalysis, analyse_prompt, response_text, turn_vector_of,
                                     whole_text)

#: How many of the most recent turns the judge compares (the paper's 20).
JUDGE_WINDOW = 20

Reason = Literal["first", "implicit", "information", "polite", "judge", "new_topic", "chosen"]

REASON_TEXT = {
    "first": "the first turn",
    "implicit": "an implicit follow-up of the turn before",
    "information": "information added to the turn before",
    "polite": "a polite remark, kept apart",
    "judge": "follows up this turn",
    "new_topic": "a new topic",
    "chosen": "chosen by you",
}


@dataclass(frozen=True, slots=True)
class TreeTurn:
    """An earlier turn as placement sees it: its id, its stored vector and the id of
    the turn it was placed under (None: a root)."""

    id: str
    vector: Sequence[float]
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    parent: str | None  # the id of the turn it follows up; None: a root
    reason: Reason
    score: float | None  # the chooser's probability for the parent (or the best turn's, for a new topic)
    analysis: PromptAnalysis

    @property
    def label(self) -> str:
        return self.analysis.label


def place(analysis: PromptAnalysis, history: Sequence[TreeTurn], models: ChatTreeModels) -> Placement:
    """The paper's insert rules for a turn whose prompt is analysed; ``history`` holds
    the earlier turns oldest first."""
    if not history:
        return Placement(None, "first", None, analysis)
    if analysis.implicit_follow_up:
        return Placement(history[-1].id, "implicit", None, analysis)
    if analysis.label == "information":
        return Placement(history[-1].id, "information", None, analysis)
    if analysis.label == "polite":
        return Placement(None, "polite", None, analysis)
    recent = list(history[-JUDGE_WINDOW:])
    # One choice among all recent turns and a new root, not the paper's best-scored turn
    # nor the most recent turn the judge accepts: a prompt continues the latest turn of
    # its topic, every turn of that topic scores high, and the other topic's latest turn
    # often passes a low threshold too (#40: MixMC dev recall 0.80 with either rule).
    position = {t.id: i for i, t in enumerate(recent)}
    parents = [None if t.parent is None else position.get(t.parent, -1) for t in recent]
    chances = models.heads.follow_up_choice(analysis.vector, [t.vector for t in recent], parents)
    best = max(range(len(recent)), key=chances.__getitem__)
    if chances[best] >= models.heads.threshold:
        return Placement(recent[best].id, "judge", float(chances[best]), analysis)
    return Placement(None, "new_topic", float(chances[best]), analysis)


def turn_vector(prompt: str, response: str, models: ChatTreeModels) -> list[float]:
    """The vector stored with a turn when it is inserted: the prompt embedded whole
    and its response (no sentence analysis, so no segmenter: the Ask pane keeps one
    after every answer, and spaCy loads only when a question must be placed)."""
    reply = response_text(response)
    vectors = models.embedder.embed([whole_text(prompt)] + ([reply] if reply else []))
    return turn_vector_of(vectors[0], vectors[1] if reply else None)


def turn_vectors(turns: Sequence[tuple[PromptAnalysis, str]], models: ChatTreeModels) -> list[list[float]]:
    """The vectors of many turns (each prompt's analysis and its response), with one
    embed call for all the responses."""
    replies = [response_text(r) for _a, r in turns]
    said = [r for r in replies if r]
    made = iter(models.embedder.embed(said) if said else [])
    return [turn_vector_of(a.whole_vector, next(made) if r else None) for (a, _r), r in zip(turns, replies)]


@dataclass(frozen=True, slots=True)
class Inserted:
    placement: Placement
    vector: list[float]


def insert_turn(prompt: str, response: str, history: Sequence[TreeTurn], models: ChatTreeModels) -> Inserted:
    """Analyse and place one turn, and make its vector for the turns after it."""
    analysis = analyse_prompt(prompt, models)
    return Inserted(place(analysis, history, models), turn_vectors([(analysis, response)], models)[0])


class ChatTree:
    """One linear history (the Ask pane's): turns are inserted in order, each placed
    against all turns before it. ``parents`` maps each turn to its parent (or None)."""

    def __init__(self, models: ChatTreeModels):
        self.models = models
        self.turns: list[TreeTurn] = []
        self.parents: dict[str, str | None] = {}

    def add(self, turn_id: str, vector: Sequence[float], parent: str | None) -> None:
        """A turn placed before (restored from storage), with its stored vector."""
        self.turns.append(TreeTurn(turn_id, tuple(vector), parent))
        self.parents[turn_id] = parent

    def place(self, prompt: str) -> Placement:
        """Where ``prompt`` would go now (nothing is added)."""
        return place(analyse_prompt(prompt, self.models), self.turns, self.models)

    def insert(self, turn_id: str, prompt: str, response: str = "") -> Inserted:
        done = insert_turn(prompt, response, self.turns, self.models)
        self.add(turn_id, done.vector, done.placement.parent)
        return done

    def ancestors(self, turn_id: str) -> list[str]:
        """The turns above ``turn_id``, its root first (the context a follow-up needs)."""
        chain: list[str] = []
        node = self.parents.get(turn_id)
        while node is not None and node not in chain:
            chain.append(node)
            node = self.parents.get(node)
        return chain[::-1]
