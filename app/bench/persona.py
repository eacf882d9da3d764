"""``hindsight bench persona``: answer quality and latency on a generated persona.

A persona of the chosen split is generated (deterministically), its exports are
imported through the ordinary pipeline (``import_paths`` with the persona's home
zone) into a store that is cached under the work folder, keyed by a hash of the
generator's and the importers' code, so a second run neither regenerates nor
re-imports. Each question is then answered by one method — the product (``reqap``)
or a baseline (``rag``, ``codegen``, see :mod:`app.bench.baselines`) — with the
question's own ``today``, and scored against the gold answers.

Every answered question is appended at once to a JSON-lines file and announced on
stderr, so a long run that is interrupted keeps what it did. This module never
writes outside the work and results folders it is given.
"""
from __future__ import annotations

import hashlib
import json
import logging
import resource
import shutil
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from app.bench import scoring

log = logging.getLogger(__name__)

METHODS = ("reqap", "rag", "codegen")
DEFAULT_WORK = Path("bench-results") / "work"
READY_FILE = "ready.json"
STORE_FILE = "hindsight.duckdb"

Echo = Callable[[str], None]


class BenchError(RuntimeError):
    """The benchmark cannot run (unknown persona, failed import, missing models); the
    message names what and says what to do."""


class Asker(Protocol):
    """What a benchmarked method offers: the engine's ``ask`` (extra keywords unused)."""

    def ask(self, question: str, *, today: date | None = None): ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------- preparing
def code_key() -> str:
    """A short hash of the generator's and the importers' source: a change in either
    makes a new cached store (the old one stays until its folder is deleted)."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for folder in ("synth", "importers"):
        for path in sorted((root / folder).glob("*.py")):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    for path in (root / "engine" / "ingest.py", root / "engine" / "store.py"):
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


@dataclass(slots=True)
class PreparedPersona:
    persona: str
    folder: Path
    store_path: Path
    today: str
    home_tz: str
    questions_path: Path
    import_figures: dict = field(default_factory=dict)
    cached: bool = False


def persona_ids(split: str | None, persona: str | None) -> list[str]:
    from synth import list_personas

    known = list_personas()
    if persona:
        if persona not in {p["id"] for p in known}:
            raise BenchError(f"no persona {persona!r}; known: {', '.join(p['id'] for p in known)}")
        return [persona]
    ids = [p["id"] for p in known if p["split"] == split]
    if not ids:
        raise BenchError(f"no persona in split {split!r}; splits: {sorted({p['split'] for p in known})}")
    return ids


def prepare(persona: str | int, work_dir: Path, echo: Echo = lambda _: None, *, scale: float = 1.0,
            years: float | None = None) -> PreparedPersona:
    """Generate and import ``persona`` (an id, or an integer seed for a new persona
    shaped like p1) under ``work_dir/<code key>/<persona id>``, or reuse what a
    previous run left there (marked complete by ``ready.json``). ``scale`` and
    ``years`` make a thinner, shorter life (smoke runs); they are part of the key."""
    import synth as synth
    from synth.world import UnknownPersonaError, persona_spec

    try:
        spec = persona_spec(persona)
    except UnknownPersonaError as exc:
        raise BenchError(str(exc.args[0])) from None
    pid = spec.id
    variant = pid if (scale == 1.0 and years is None) else f"{pid}-s{scale:g}-y{years or 'all'}"
    folder = Path(work_dir) / code_key() / variant
    ready = folder / READY_FILE
    if ready.is_file():
        info = json.loads(ready.read_text(encoding="utf-8"))
        echo(f"{pid}: using the store imported {info['imported_at']} in {folder}")
        return PreparedPersona(pid, folder, folder / STORE_FILE, info["today"], spec.home_tz,
                               folder / "persona" / "questions.jsonl", info["import"], cached=True)
    if folder.exists():
        shutil.rmtree(folder)  # an interrupted earlier preparation: start clean
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    kw: dict[str, Any] = {} if (scale == 1.0 and years is None) else {"scale": scale, "years": years}
    manifest = synth.generate(persona, folder / "persona", **kw)
    echo(f"{pid}: generated {manifest.facts:,} facts and {manifest.questions_count} questions "
         f"in {time.perf_counter() - t0:.0f} s")
    figures = import_exports(Path(manifest.out_dir) / manifest.exports_dir, folder / STORE_FILE, spec.home_tz)
    echo(f"{pid}: imported {figures['events']:,} events in {figures['seconds']:.1f} s "
         f"({figures['events_per_s']:,.0f} events/s)")
    info = {"persona": pid, "today": manifest.today, "import": figures,
            "imported_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    ready.write_text(json.dumps(info, indent=2), encoding="utf-8")
    return PreparedPersona(pid, folder, folder / STORE_FILE, manifest.today, spec.home_tz,
                           folder / "persona" / "questions.jsonl", figures)


def import_exports(exports: Path | Sequence[Path], store_file: Path, home_tz: str) -> dict:
    """Import through the real pipeline; figures for the import (events/s, failures)."""
    from engine.ingest import import_paths
    from engine.store import EventStore
    from importers.base import ImportContext

    paths = [exports] if isinstance(exports, Path) else list(exports)
    with EventStore(store_file) as store:
        t0 = time.perf_counter()
        report = import_paths(store, paths, context=ImportContext(home_tz=ZoneInfo(home_tz)))
        seconds = time.perf_counter() - t0
        total = store.count()
    if report.failed:
        raise BenchError("import failed for " + "; ".join(f"{f.path}: {f.message}" for f in report.failed[:3]))
    return {"events": total, "files": len(report.files), "seconds": round(seconds, 2),
            "events_per_s": round(total / seconds, 1) if seconds else 0.0, "skipped": report.skipped,
            "unrecognized": len(report.unrecognized)}


# --------------------------------------------------------------------------- methods
def open_method(method: str, store_file: Path, *, registry=None, echo: Echo = lambda _: None) -> Asker:
    """The method's asker over the store at ``store_file`` (opened read-only), with
    the real models from ``registry`` (a ``models.registry.ModelRegistry``)."""
    if method not in METHODS:
        raise BenchError(f"unknown method {method!r}; methods: {', '.join(METHODS)}")
    from models.registry import ModelMissing, ModelRegistry

    registry = registry or ModelRegistry()
    store = None
    try:
        if method == "codegen":
            from app.bench.baselines import CodeGenBaseline, open_read_only

            engine = CodeGenBaseline(open_read_only(store_file), registry.planner())
        else:
            from engine.retrieval.index import RetrievalIndex
            from engine.store import EventStore

            store = EventStore(store_file, read_only=True)
            if method == "reqap":
                from app.assemble import build_engine

                engine = build_engine(store, None, None, models=registry, use_plan_cache=False)
                index = engine.index
            else:
                from app.bench.baselines import RagBaseline

                index = RetrievalIndex(store, sparse=registry.sparse_encoder())
                engine = RagBaseline(store, index, registry.planner(), reranker=registry.event_classifier())
            t0 = time.perf_counter()
            stats = index.refresh(progress=_index_progress(echo))
            if stats.added or stats.encoded:
                echo(f"retrieval index: {stats.added:,} documents, {stats.encoded:,} encoded in "
                     f"{time.perf_counter() - t0:.0f} s")
        warm = getattr(getattr(engine, "planner", None), "warm_up", None) or getattr(engine, "warm_up", None)
        if callable(warm):
            t0 = time.perf_counter()
            warm()
            echo(f"planner prompt prefix evaluated in {time.perf_counter() - t0:.0f} s")
        return _Owned(engine, registry, store)
    except ModelMissing as exc:
        if store is not None:
            store.close()
        registry.close()
        raise BenchError(str(exc)) from exc


def _index_progress(echo: Echo) -> Callable[[str, int, int], None]:
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 30 or done == total:
            last[0] = now
            echo(f"  retrieval index ({stage}): {done:,}/{total:,}")
    return progress


class _Owned:
    """An asker that closes its models and store with itself."""

    def __init__(self, inner, registry, store=None):
        self.inner, self.registry, self.store = inner, registry, store

    def ask(self, question: str, *, today: date | None = None):
        return self.inner.ask(question, today=today)

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            if self.store is not None:
                self.store.close()
            self.registry.close()


# --------------------------------------------------------------------------- answering
def score_answer(q: dict, answer, method: str, gold: Sequence[Any] | None = None) -> dict:
    """The per-question record: prediction, scores, validity, calls and timings."""
    gold = q["answer"] if gold is None else gold
    prediction = answer.answer if answer.ok else None
    valid = bool(answer.ok or answer.plan_text) if method == "reqap" else bool(answer.ok)
    return {
        "id": q["id"], "category": q.get("category"), "question": q["question"], "today": q.get("today"),
        "gold": q["answer"], "prediction": prediction, "ok": bool(answer.ok),
        "hit": scoring.hit_at_1(prediction, gold), "rlx": scoring.relaxed_hit_at_1(prediction, gold),
        "valid_plan": valid, "llm_calls": int(answer.llm_calls or 0),
        "second_planner": bool(getattr(answer, "fallback", "")),
        "timings": {k: round(float(v), 1) for k, v in (answer.timings or {}).items()},
        "plan_text": answer.plan_text, "answer_text": answer.answer_text,
    }


def answer_all(asker: Asker, questions: Iterable[dict], method: str, out_jsonl: Path, *,
               echo: Echo = lambda _: None, gold_of: Callable[[dict], Sequence[Any]] | None = None) -> list[dict]:
    """Ask every question, score it, append its record to ``out_jsonl`` right away."""
    from engine.answer import Answer

    questions = list(questions)
    records: list[dict] = []
    out_jsonl.parent.mkdir(parents=True, exist_ok=True)
    with open(out_jsonl, "a", encoding="utf-8") as out:
        for i, q in enumerate(questions, start=1):
            today = date.fromisoformat(q["today"]) if q.get("today") else None
            t0 = time.perf_counter()
            try:
                answer = asker.ask(q["question"], today=today)
            except Exception as exc:  # one broken question must not end a run of hours; it is recorded
                log.error("question %s failed:\n%s", q["id"], traceback.format_exc())
                answer = Answer(q["question"], False, None, f"{type(exc).__name__}: {exc}",
                                timings={"total_ms": (time.perf_counter() - t0) * 1000}, today=today)
            rec = score_answer(q, answer, method, gold_of(q) if gold_of else None)
            records.append(rec)
            out.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
            out.flush()
            mark = "HIT" if rec["hit"] else "rlx" if rec["rlx"] else "---"
            echo(f"[{i}/{len(questions)}] {mark} {rec['timings'].get('total_ms', 0) / 1000:6.1f} s  "
                 f"{q['question']!r} -> {_short(rec['prediction'])} (gold {_short(q['answer'])})")
    return records


def _short(value: Any, n: int = 60) -> str:
    s = json.dumps(value, ensure_ascii=False, default=str)
    return s if len(s) <= n else s[:n - 1] + "…"


def planner_rows(figures: dict) -> list[str]:
    """The planner that wrote the plans, and how often a second planner re-planned."""
    if not figures.get("planner"):
        return []
    second = figures.get("second_planner_share")
    return [f"| planner | {figures['planner']}"
            + (f" (second planner answered {second * 100:.1f}%)" if figures["planner"] == "tuned" and second is not None
               else "") + " |"]


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def figures_for(method: str, records: Sequence[dict], **extra: Any) -> dict:
    out = {"method": method, **scoring.summarise(records)}
    if method == "reqap":
        from app.assemble import planner_kind

        out["planner"] = planner_kind()
    out.update(extra)
    out["peak_rss_mb"] = peak_rss_mb()
    return out


# --------------------------------------------------------------------------- the run
def run(method: str = "reqap", *, split: str = "dev", persona: str | None = None, limit: int | None = None,
        work_dir: Path = DEFAULT_WORK, results_dir: Path = Path("bench-results"), echo: Echo = lambda _: None,
        open_asker: Callable[[str, Path], Asker] | None = None, scale: float = 1.0,
        years: float | None = None) -> dict:
    """Prepare the personas, answer their questions of ``split`` with ``method``, and
    return the figures (per-question records go to a JSON-lines file)."""
    from synth.questions import load_questions

    if method not in METHODS:
        raise BenchError(f"unknown method {method!r}; methods: {', '.join(METHODS)}")
    ids = persona_ids(split, persona)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    out_jsonl = Path(results_dir) / f"persona-{method}-{stamp}.jsonl"
    records: list[dict] = []
    imports: dict[str, dict] = {}
    for pid in ids:
        prepared = prepare(pid, Path(work_dir), echo, scale=scale, years=years)
        imports[pid] = dict(prepared.import_figures, cached=prepared.cached)
        # the split's questions; a persona named explicitly from another split is asked its own
        q_split = split if not persona or split == _split_of(pid) else _split_of(pid)
        qs = load_questions(prepared.questions_path, q_split)
        if limit is not None:
            qs = spread(qs, max(0, limit - len(records)))
        if not qs:
            continue
        echo(f"{pid}: {len(qs)} questions with {method} (today {prepared.today}); records -> {out_jsonl}")
        t0 = time.perf_counter()
        asker = (open_asker or (lambda m, p: open_method(m, p, echo=echo)))(method, prepared.store_path)
        opened = time.perf_counter() - t0
        try:
            records += answer_all(asker, qs, method, out_jsonl, echo=echo)
        finally:
            asker.close()
        imports[pid]["open_seconds"] = round(opened, 1)
        if limit is not None and len(records) >= limit:
            break
    return figures_for(method, records, split=split, personas=list(imports), imports=imports, scale=scale,
                       years=years,
                       records_file=str(out_jsonl))


def spread(questions: Sequence[dict], n: int, seed: int = 0) -> list[dict]:
    """``n`` questions spread over templates and categories (one per template in a
    fixed shuffled order, then round again), not the first ``n``, which would all
    come from the first template or two. Deterministic."""
    import random

    by_template: dict[str, list[dict]] = {}
    for q in questions:
        by_template.setdefault(q["id"].rsplit(":", 1)[0], []).append(q)
    order = sorted(by_template)
    random.Random(seed).shuffle(order)
    out: list[dict] = []
    rnd = 0
    while len(out) < n and any(len(by_template[t]) > rnd for t in order):
        out += [by_template[t][rnd] for t in order if len(by_template[t]) > rnd][:n - len(out)]
        rnd += 1
    return out


def _split_of(pid: str) -> str:
    from synth import list_personas

    return next(p["split"] for p in list_personas() if p["id"] == pid)


# --------------------------------------------------------------------------- output
def table(figures: dict) -> str:
    def pct(x: float | None) -> str:
        return "–" if x is None else f"{x * 100:.1f}%"

    def ms(d: dict) -> str:
        return "–" if not d or d.get("median") is None else f"{d['median'] / 1000:.1f} s / {d['p95'] / 1000:.1f} s"

    rows = [f"Method **{figures['method']}**, {figures['questions']} questions"
            + (f" ({', '.join(figures.get('personas', []))}, split {figures.get('split')})"
               if figures.get("personas") else ""), "",
            "| figure | value |", "|---|---:|",
            f"| Hit@1 | {pct(figures['hit_at_1'])} |", f"| Rlx-Hit@1 | {pct(figures['rlx_hit_at_1'])} |",
            f"| valid plans / answers | {pct(figures['valid_plan_share'])} |",
            f"| answered (ok) | {pct(figures['answered_share'])} |",
            f"| LLM calls per question | {figures['llm_calls_per_question']} |",
            *planner_rows(figures),
            f"| latency median / p95 | {ms(figures['latency_ms'])} |",
            f"| planning median / p95 | {ms(figures['planning_ms'])} |",
            f"| peak RSS | {figures['peak_rss_mb']:.0f} MB |"]
    for pid, imp in (figures.get("imports") or {}).items():
        if imp:
            rows.append(f"| import {pid} | {imp.get('events', 0):,} events, {imp.get('events_per_s', 0):,.0f} "
                        f"events/s{' (cached store)' if imp.get('cached') else ''} |")
    if figures["per_category"]:
        rows += ["", "| category | questions | Hit@1 | Rlx-Hit@1 |", "|---|---:|---:|---:|"]
        rows += [f"| {c} | {v['questions']} | {pct(v['hit_at_1'])} | {pct(v['rlx_hit_at_1'])} |"
                 for c, v in figures["per_category"].items()]
    if figures["operator_ms"]:
        rows += ["", "| operator | calls | median | p95 |", "|---|---:|---:|---:|"]
        rows += [f"| {op} | {v['n']} | {v['median']:.0f} ms | {v['p95']:.0f} ms |"
                 for op, v in figures["operator_ms"].items()]
    return "\n".join(rows)
