"""The question-answering API the shells call: ``QuestionEngine.ask`` turns a
question into an :class:`Answer` (value, sentence, plan tree, evidence, timings).

The CLI's ``hindsight ask`` and the GUI's chat pane both go through this
interface, so no answering logic lives in a shell. Progress is reported through a
callback (``AskProgress``), cancellation through a ``threading.Event``. This module
defines the types; the implementation composes the planner (QUD) and the executor
(OTX).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Protocol


def jsonable(value: Any, other: Callable[[Any], Any] = str) -> Any:
    """``value`` in the types JSON has, as an answer's value is given: dates and times
    as ISO strings, durations as seconds, tuples as lists, keys as strings. Any other
    value that is not a string, number, bool or None goes through ``other``."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (list, tuple)):
        return [jsonable(v, other) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v, other) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return other(value)


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One operator of the executed plan, for the plan tree: what it did, how many
    rows it produced and how long it took."""

    operator: str
    arguments: str
    rows: int | None = None
    ms: float | None = None
    status: str = "done"  # done | failed | cancelled | skipped
    notes: tuple[str, ...] = ()
    children: tuple["PlanStep", ...] = ()

    def to_json(self) -> dict:
        return {"operator": self.operator, "arguments": self.arguments, "rows": self.rows,
                "ms": None if self.ms is None else round(self.ms, 1), "status": self.status,
                "notes": list(self.notes), "children": [c.to_json() for c in self.children]}


@dataclass(slots=True)
class Answer:
    """The result of one question. ``ok`` is False when no answer could be computed;
    then ``answer`` is None and ``answer_text`` says plainly what was tried."""

    question: str
    ok: bool
    answer: Any
    answer_text: str
    plan_text: str = ""
    plan: PlanStep | None = None
    evidence: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    llm_calls: int = 0
    today: date | None = None
    #: which earlier question (an index into the ``history`` it was asked with) this one
    #: followed up, planned with it and its ancestors as context; None: a new question
    follows: int | None = None
    #: why: the chat tree's insert rule ("judge", "implicit", ...), or "chosen" by the user
    follow_reason: str = ""
    #: the question and its answer as one vector (the Ask history's chat tree keeps it)
    turn_vector: tuple[float, ...] = ()
    #: when there is no answer: the closest questions the data can answer (asking one
    #: of them of the same engine runs the plan it was offered with)
    suggestions: tuple[str, ...] = ()
    #: why a second planner wrote the plan ("" when the first one's plan answered)
    fallback: str = ""
    #: how the days the question left open were read ("“last sunday” as Sunday, 25 August
    #: 2024"), as the planner was given them; "" when it named none so
    read_as: str = ""

    def to_json(self) -> dict:
        return {"question": self.question, "ok": self.ok, "answer": self.answer, "follows": self.follows,
                "follow_reason": self.follow_reason,
                "answer_text": self.answer_text, "plan_text": self.plan_text,
                "plan": self.plan.to_json() if self.plan else None, "evidence": list(self.evidence),
                "timings": {k: round(v, 1) for k, v in self.timings.items()}, "llm_calls": self.llm_calls,
                "today": self.today.isoformat() if self.today else None, "suggestions": list(self.suggestions),
                "fallback": self.fallback, "read_as": self.read_as}


@dataclass(frozen=True, slots=True)
class AskProgress:
    """What the engine is doing, in words a person can read:
    stage "planning" ("Planning step 3: FILTER …"), "executing" ("Retrieving: 1,204
    candidates → 97 events"), or "done"."""

    stage: str
    message: str
    step: int = 0


AskProgressCallback = Callable[[AskProgress], None]


#: ``follows`` default: the engine decides which earlier question a new one follows.
FOLLOWS_AUTO = "auto"


class QuestionEngine(Protocol):
    """``ask(question, history=earlier answers)``; an engine that keeps a chat tree
    also takes ``follows=`` (an index into ``history``, or None for a new question)
    when the user chose what a question follows."""

    def ask(self, question: str, *, today: date | None = None, history: Sequence[Answer] = (),
            progress: AskProgressCallback | None = None,
            cancel: threading.Event | None = None) -> Answer: ...

    def close(self) -> None: ...
