"""``hindsight bench timelineqa``: the TimelineQA life (shared data) as a benchmark.

Its diary sentences are written as Markdown daily notes
(:func:`synth.timelineqa.write_notes`) and imported through the ordinary
journal importer into a store cached under the work folder; its 36 multi-hop and
100 atomic questions are answered with the benchmark's fixed today and scored like
the persona benchmark. TimelineQA writes list answers as one string ("Jack,
Olivia"); each element also counts as a gold value. Nothing here writes outside
the work and results folders.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from app.bench.persona import (DEFAULT_WORK, METHODS, READY_FILE, STORE_FILE, Asker, BenchError, Echo,
                               answer_all, code_key, figures_for, import_exports, open_method)
from synth.timelineqa import TimelineQAError, load_questions, write_notes

__all__ = ["TimelineQAError", "gold_values", "prepare", "run"]

#: The diary has no zone; notes are local days, so any fixed zone gives the same days.
HOME_TZ = "UTC"


def gold_values(q: dict) -> list[list[Any]]:
    """The question's gold rows, plus one row per element of a comma-joined answer."""
    rows = [list(r) for r in q["answer"]]
    extra = []
    for r in rows:
        for cell in r:
            if isinstance(cell, str) and ", " in cell:
                extra += [[part.strip()] for part in cell.split(", ") if part.strip()]
    return rows + extra


def prepare(work_dir: Path, echo: Echo = lambda _: None, data_dir: Path | None = None) -> tuple[Path, dict, bool]:
    """The store with the diary imported (cached); returns (store file, import figures, cached)."""
    name = "timelineqa" if data_dir is None else \
        "timelineqa-" + hashlib.sha256(str(Path(data_dir).resolve()).encode()).hexdigest()[:8]
    folder = Path(work_dir) / code_key() / name
    ready = folder / READY_FILE
    if ready.is_file():
        info = json.loads(ready.read_text(encoding="utf-8"))
        echo(f"timelineqa: using the store imported {info['imported_at']} in {folder}")
        return folder / STORE_FILE, info["import"], True
    if folder.exists():
        shutil.rmtree(folder)
    notes = folder / "journal"
    t0 = time.perf_counter()
    written = write_notes(notes, data_dir)
    echo(f"timelineqa: wrote {len(written):,} daily notes in {time.perf_counter() - t0:.1f} s")
    figures = import_exports(notes, folder / STORE_FILE, HOME_TZ)
    echo(f"timelineqa: imported {figures['events']:,} events in {figures['seconds']:.1f} s")
    ready.write_text(json.dumps({"import": figures, "imported_at": datetime.now(timezone.utc)
                                 .isoformat(timespec="seconds")}, indent=2), encoding="utf-8")
    return folder / STORE_FILE, figures, False


def select(questions: Sequence[dict], kind: str, limit: int | None) -> list[dict]:
    if kind not in ("atomic", "multihop", "all"):
        raise BenchError(f"unknown question kind {kind!r}; kinds: atomic, multihop, all")
    chosen = [q for q in questions if kind == "all" or q["kind"] == kind]
    if limit is None or limit >= len(chosen):
        return chosen
    # an even share of each kind (multi-hop and atomic), in the file's order within each
    kinds = sorted({q["kind"] for q in chosen})
    out: list[dict] = []
    for i, k in enumerate(kinds):
        share = (limit - len(out)) // (len(kinds) - i)
        out += [q for q in chosen if q["kind"] == k][:share]
    return out


def run(method: str = "reqap", *, kind: str = "all", limit: int | None = None, work_dir: Path = DEFAULT_WORK,
        results_dir: Path = Path("bench-results"), echo: Echo = lambda _: None,
        open_asker: Callable[[str, Path], Asker] | None = None, data_dir: Path | None = None) -> dict:
    if method not in METHODS:
        raise BenchError(f"unknown method {method!r}; methods: {', '.join(METHODS)}")
    questions = select(load_questions(data_dir), kind, limit)
    store_file, imported, cached = prepare(Path(work_dir), echo, data_dir)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    out_jsonl = Path(results_dir) / f"timelineqa-{method}-{stamp}.jsonl"
    echo(f"timelineqa: {len(questions)} questions with {method}; records -> {out_jsonl}")
    asker = (open_asker or (lambda m, p: open_method(m, p, echo=echo)))(method, store_file)
    try:
        records = answer_all(asker, questions, method, out_jsonl, echo=echo, gold_of=gold_values)
    finally:
        asker.close()
    return figures_for(method, records, kind=kind, personas=["timelineqa"],
                       imports={"timelineqa": dict(imported, cached=cached)}, records_file=str(out_jsonl))
