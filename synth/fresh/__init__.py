"""The fresh-phrasing set: questions written by hand, as people phrase them, over
personas generated from new seeds (shaped like p1, with their own people, places,
shows and purchases), each with gold SQL over the canonical facts view
(:func:`synth.canonical.connect`).

The set was split once, per category by a stable hash of the question id, into
``train.jsonl`` (at most 40 %) and ``eval.jsonl`` (the rest). The eval part is
frozen: its sha256 is recorded here (:data:`EVAL_SHA256`) and :func:`load` refuses a
file that does not match. Eval questions are for measuring only: never train on,
tune on or quote them (a CI guard reads :func:`eval_texts`).

Gold answers are never stored: :func:`gold` runs a question's SQL over the
persona's ``canonical.jsonl`` with the persona's ``today``, so the gold follows the
generator. This module reads files and runs SQL; it writes nothing.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import duckdb

FRESH_DIR = Path(__file__).resolve().parent
PARTS = ("train", "eval")
TRAIN_SHARE = 0.4
CATEGORIES = ("count", "sum", "argmax", "lookup", "comparison", "first_last", "temporal", "yesno",
              "unanswerable")
ANSWER_TYPES = ("number", "list", "date", "text", "yesno", "none")
SOURCES = ("spotify", "netflix", "mail", "calendar", "amazon", "strava", "health", "journal", "chatgpt")

#: sha256 of ``eval.jsonl``. Change it only together with the file, on purpose: the
#: eval figures before and after are then not comparable.
EVAL_SHA256 = "26cb37c03f36a290b0bc3983510901695bcd00466e30050e6d1074cb4f4b2716"


class FreshSetError(ValueError):
    """A fresh-set file that is missing, malformed or not the frozen one."""


@dataclass(frozen=True, slots=True)
class FreshQuestion:
    id: str
    persona: int  # the seed: ``synth.generate(persona, ...)``
    category: str
    answer_type: str
    sources: tuple[str, ...]
    question: str
    sql: str  # reads the view ``events``; may use $today

    def to_json(self) -> dict:
        return {"id": self.id, "persona": self.persona, "category": self.category,
                "answer_type": self.answer_type, "sources": list(self.sources), "question": self.question,
                "sql": self.sql}


def part_path(part: str) -> Path:
    if part not in PARTS:
        raise FreshSetError(f"no part {part!r}; parts: {', '.join(PARTS)}")
    return FRESH_DIR / f"{part}.jsonl"


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _parse(line: str, where: str) -> FreshQuestion:
    try:
        d = json.loads(line)
        q = FreshQuestion(d["id"], int(d["persona"]), d["category"], d["answer_type"], tuple(d["sources"]),
                          d["question"], d["sql"])
    except (ValueError, KeyError, TypeError) as exc:
        raise FreshSetError(f"{where}: {exc}") from exc
    if q.category not in CATEGORIES or q.answer_type not in ANSWER_TYPES:
        raise FreshSetError(f"{where}: unknown category {q.category!r} or answer type {q.answer_type!r}")
    unknown = set(q.sources) - set(SOURCES)
    if unknown:
        raise FreshSetError(f"{where}: unknown sources {sorted(unknown)}")
    return q


def load(part: str | None = None) -> list[FreshQuestion]:
    """The questions of one part (``train`` or ``eval``), or of both, in file order.
    The eval part is checked against :data:`EVAL_SHA256` first."""
    out: list[FreshQuestion] = []
    for p in PARTS if part is None else (part,):
        path = part_path(p)
        if not path.is_file():
            raise FreshSetError(f"{path} is missing")
        if p == "eval" and file_sha256(path) != EVAL_SHA256:
            raise FreshSetError(f"{path} is not the frozen eval set (sha256 {file_sha256(path)}, recorded "
                                f"{EVAL_SHA256}); the eval part changes only together with EVAL_SHA256")
        with open(path, encoding="utf-8") as f:
            out += [_parse(line, f"{path.name}:{i}") for i, line in enumerate(f, 1) if line.strip()]
    return out


def personas() -> tuple[int, ...]:
    """The seeds of the personas the set is written over, in ascending order."""
    return tuple(sorted({q.persona for q in load()}))


def eval_texts() -> list[str]:
    """Every eval question's text: these must appear nowhere in engine/, models/ or tests/."""
    return [q.question for q in load("eval")]


# --------------------------------------------------------------------------- the split
def _rank(qid: str) -> str:
    return hashlib.sha256(f"fresh:{qid}".encode()).hexdigest()


def split(questions: Iterable[FreshQuestion]) -> dict[str, str]:
    """id -> part: per category, ordered by a stable hash of the id, the first
    ``floor(TRAIN_SHARE * n)`` go to train, the rest to eval. Applied once; the files
    keep its result."""
    by_cat: dict[str, list[FreshQuestion]] = {}
    for q in questions:
        by_cat.setdefault(q.category, []).append(q)
    out: dict[str, str] = {}
    for group in by_cat.values():
        ranked = sorted(group, key=lambda q: _rank(q.id))
        cut = int(TRAIN_SHARE * len(ranked))
        for i, q in enumerate(ranked):
            out[q.id] = "train" if i < cut else "eval"
    return out


# --------------------------------------------------------------------------- gold
def _json_value(v: Any) -> Any:
    if isinstance(v, float):
        return round(v, 2)
    if isinstance(v, date):
        return v.isoformat()[:10]
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if v is None or isinstance(v, (int, str, bool)):
        return v
    return str(v)


def gold(con: duckdb.DuckDBPyConnection, question: FreshQuestion, today: date | str) -> list[list[Any]]:
    """The gold rows of ``question`` over the canonical view in ``con`` (see
    :func:`synth.canonical.connect`), with ``$today`` bound to the persona's today."""
    today_d = date.fromisoformat(today) if isinstance(today, str) else today
    params = {"today": today_d} if "$today" in question.sql else {}
    try:
        rows = con.execute(question.sql, params).fetchall()
    except duckdb.Error as exc:
        raise FreshSetError(f"{question.id}: gold SQL failed: {exc}") from exc
    return [[_json_value(c) for c in r] for r in rows if any(c is not None for c in r)]


def answer_type_problem(answer_type: str, rows: Sequence[Sequence[Any]]) -> str | None:
    """Why ``rows`` is not an answer of ``answer_type`` (None when it is)."""
    if answer_type == "none":
        return None if not rows else f"expected no rows, got {rows[:3]}"
    if not rows:
        return "expected an answer, got no rows"
    cells = [r[0] for r in rows]
    if answer_type == "list":
        return None if all(isinstance(c, (str, int)) and not isinstance(c, bool) for c in cells) \
            else f"list values must be text or numbers, got {cells[:3]}"
    if len(rows) != 1:
        return f"expected one row, got {len(rows)}"
    value = cells[0]
    if answer_type == "number":
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) else f"not a number: {value!r}"
    if answer_type == "date":
        try:
            date.fromisoformat(str(value))
            return None
        except ValueError:
            return f"not a date: {value!r}"
    if answer_type == "yesno":
        return None if value in ("yes", "no") else f"not yes/no: {value!r}"
    return None if isinstance(value, str) and value.strip() else f"not a text: {value!r}"
