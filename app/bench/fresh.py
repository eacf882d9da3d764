"""``hindsight bench fresh``: answer quality on the fresh-phrasing set
(:mod:`synth.fresh`), questions written by hand over personas from new seeds.

Each persona is generated and imported through :func:`app.bench.persona.prepare`
(cached like the persona benchmark), the gold of every question is computed from
the persona's canonical facts with its SQL, and the question is asked with the
persona's ``today``. The headline score is Hit@1, with Rlx-Hit@1 for amounts (the
``sum`` category), as the persona benchmark reports both. ``gold_only`` skips the
store and the models: it generates the personas (cached) and checks that every
gold SQL runs and gives an answer of the question's type.

Nothing here writes outside the work and results folders it is given.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from app.bench.persona import (DEFAULT_WORK, METHODS, READY_FILE, Asker, BenchError, Echo, answer_all, code_key,
                               figures_for, open_method, planner_rows, prepare)
from synth import fresh
from synth.canonical import CANONICAL_FILE, connect

#: Categories scored with Rlx-Hit@1 in the headline: amounts (±10 %).
RELAXED_CATEGORIES = ("sum",)
FACTS_FILE = "facts.json"


def select(questions: Sequence[fresh.FreshQuestion], limit: int | None) -> list[fresh.FreshQuestion]:
    """All questions, or ``limit`` of them taken a category at a time in turn (each
    category in file order), so a short run still sees every category."""
    if limit is None or limit >= len(questions):
        return list(questions)
    by_cat: dict[str, list[fresh.FreshQuestion]] = {}
    for q in questions:
        by_cat.setdefault(q.category, []).append(q)
    out: list[fresh.FreshQuestion] = []
    rnd = 0
    while len(out) < limit:
        out += [qs[rnd] for c, qs in sorted(by_cat.items()) if len(qs) > rnd][:limit - len(out)]
        rnd += 1
    return out


def gold_for(canonical: Path, questions: Sequence[fresh.FreshQuestion], today: str) -> dict[str, list]:
    """question id -> gold rows, computed over ``canonical``."""
    con = connect(canonical)
    try:
        return {q.id: fresh.gold(con, q, today) for q in questions}
    finally:
        con.close()


def as_item(q: fresh.FreshQuestion, today: str, gold: list) -> dict:
    """The question in the shape :func:`app.bench.persona.answer_all` asks and scores."""
    return {"id": q.id, "persona": f"s{q.persona}", "category": q.category, "answer_type": q.answer_type,
            "question": q.question, "today": today, "answer": gold}


def headline(record: dict) -> bool:
    return bool(record["rlx"] if record.get("category") in RELAXED_CATEGORIES else record["hit"])


def _share(flags: Sequence[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


def summarise(records: Sequence[dict]) -> dict:
    """The headline score, overall and per category (the persona benchmark's
    figures come from :func:`app.bench.scoring.summarise`)."""
    by_cat: dict[str, list[dict]] = {}
    for r in records:
        by_cat.setdefault(r.get("category") or "?", []).append(r)
    return {"score": _share([headline(r) for r in records]),
            "score_per_category": {c: {"questions": len(rs), "score": _share([headline(r) for r in rs])}
                                   for c, rs in sorted(by_cat.items())}}


def _by_persona(questions: Sequence[fresh.FreshQuestion]) -> dict[int, list[fresh.FreshQuestion]]:
    out: dict[int, list[fresh.FreshQuestion]] = {}
    for q in questions:
        out.setdefault(q.persona, []).append(q)
    return dict(sorted(out.items()))


def run(method: str = "reqap", *, part: str = "eval", limit: int | None = None, work_dir: Path = DEFAULT_WORK,
        results_dir: Path = Path("bench-results"), echo: Echo = lambda _: None,
        open_asker: Callable[[str, Path], Asker] | None = None) -> dict:
    """Prepare the set's personas, ask the questions of ``part`` with ``method`` and
    return the figures (per-question records go to a JSON-lines file)."""
    if method not in METHODS:
        raise BenchError(f"unknown method {method!r}; methods: {', '.join(METHODS)}")
    try:
        questions = select(fresh.load(part), limit)
    except fresh.FreshSetError as exc:
        raise BenchError(str(exc)) from exc
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    out_jsonl = Path(results_dir) / f"fresh-{part}-{method}-{stamp}.jsonl"
    records: list[dict] = []
    imports: dict[str, dict] = {}
    for seed, qs in _by_persona(questions).items():
        prepared = prepare(seed, Path(work_dir), echo)
        imports[prepared.persona] = dict(prepared.import_figures, cached=prepared.cached)
        golds = gold_for(prepared.folder / "persona" / CANONICAL_FILE, qs, prepared.today)
        items = [as_item(q, prepared.today, golds[q.id]) for q in qs]
        echo(f"{prepared.persona}: {len(items)} fresh {part} questions with {method} (today {prepared.today}); "
             f"records -> {out_jsonl}")
        t0 = time.perf_counter()
        asker = (open_asker or (lambda m, p: open_method(m, p, echo=echo)))(method, prepared.store_path)
        imports[prepared.persona]["open_seconds"] = round(time.perf_counter() - t0, 1)
        try:
            done = answer_all(asker, items, method, out_jsonl, echo=echo)
        finally:
            asker.close()
        for item, rec in zip(items, done):
            rec["answer_type"] = item["answer_type"]
            rec["score"] = headline(rec)
        records += done
    figures = figures_for(method, records, part=part, personas=list(imports), imports=imports,
                          records_file=str(out_jsonl))
    figures.update(summarise(records))
    return figures


# --------------------------------------------------------------------------- gold only
def generated(seed: int, work_dir: Path, echo: Echo = lambda _: None) -> tuple[Path, str]:
    """(canonical file, today) of the persona for ``seed``: the benchmark's prepared
    copy when there is one, else a generated one cached beside it (no import)."""
    import synth

    root = Path(work_dir) / code_key()
    prepared = root / f"s{seed}"
    if (prepared / READY_FILE).is_file():
        info = json.loads((prepared / READY_FILE).read_text(encoding="utf-8"))
        return prepared / "persona" / CANONICAL_FILE, info["today"]
    folder = root / f"s{seed}-facts"
    marker = folder / FACTS_FILE
    if marker.is_file():
        return folder / CANONICAL_FILE, json.loads(marker.read_text(encoding="utf-8"))["today"]
    t0 = time.perf_counter()
    manifest = synth.generate(seed, folder, with_questions=False)
    echo(f"s{seed}: generated {manifest.facts:,} facts in {time.perf_counter() - t0:.0f} s")
    marker.write_text(json.dumps({"today": manifest.today}), encoding="utf-8")
    return folder / CANONICAL_FILE, manifest.today


def gold_only(*, part: str | None = None, limit: int | None = None, work_dir: Path = DEFAULT_WORK,
              echo: Echo = lambda _: None) -> dict:
    """Every question's gold answer and whether it has the question's answer type."""
    try:
        questions = select(fresh.load(part), limit)
    except fresh.FreshSetError as exc:
        raise BenchError(str(exc)) from exc
    rows: list[dict] = []
    for seed, qs in _by_persona(questions).items():
        canonical, today = generated(seed, Path(work_dir), echo)
        try:
            golds = gold_for(canonical, qs, today)
        except fresh.FreshSetError as exc:
            raise BenchError(str(exc)) from exc
        for q in qs:
            rows.append({"id": q.id, "persona": f"s{seed}", "category": q.category, "answer_type": q.answer_type,
                         "question": q.question, "gold": golds[q.id],
                         "problem": fresh.answer_type_problem(q.answer_type, golds[q.id])})
    return {"part": part or "all", "questions": rows, "problems": sum(1 for r in rows if r["problem"])}


# --------------------------------------------------------------------------- output
def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:.1f}%"


def _secs(d: dict | None) -> str:
    return "–" if not d or d.get("median") is None else f"{d['median'] / 1000:.1f} s / {d['p95'] / 1000:.1f} s"


def table(figures: dict) -> str:
    rows = [f"Fresh-phrasing set, part **{figures.get('part')}**, method **{figures['method']}**: "
            f"{figures['questions']} questions ({', '.join(figures.get('personas') or [])})", "",
            "| figure | value |", "|---|---:|",
            f"| Hit@1 (Rlx for amounts) | {_pct(figures['score'])} |",
            f"| Hit@1 | {_pct(figures['hit_at_1'])} |",
            f"| Rlx-Hit@1 | {_pct(figures['rlx_hit_at_1'])} |",
            f"| valid plans | {_pct(figures['valid_plan_share'])} |",
            f"| answered (ok) | {_pct(figures['answered_share'])} |",
            f"| planning median / p95 | {_secs(figures['planning_ms'])} |",
            f"| ask median / p95 | {_secs(figures['latency_ms'])} |",
            f"| LLM calls per question | {figures['llm_calls_per_question']} |",
            *planner_rows(figures),
            f"| peak RSS | {figures['peak_rss_mb']:.0f} MB |"]
    cats = figures.get("score_per_category") or {}
    if cats:
        rows += ["", "| category | questions | Hit@1 (Rlx for amounts) | Hit@1 | Rlx-Hit@1 |", "|---|---:|---:|---:|---:|"]
        per = figures.get("per_category") or {}
        rows += [f"| {c} | {v['questions']} | {_pct(v['score'])} | {_pct(per.get(c, {}).get('hit_at_1'))} | "
                 f"{_pct(per.get(c, {}).get('rlx_hit_at_1'))} |" for c, v in cats.items()]
    return "\n".join(rows)


def gold_table(result: dict) -> str:
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    rows = [f"Fresh-phrasing set, part **{result['part']}**: gold of {len(result['questions'])} questions, "
            f"{result['problems']} with a problem", "",
            "| id | category | type | question | gold | problem |", "|---|---|---|---|---|---|"]
    for r in result["questions"]:
        gold = json.dumps([row[0] if len(row) == 1 else row for row in r["gold"]], ensure_ascii=False)
        gold = gold if len(gold) <= 80 else gold[:79] + "…"
        rows.append(f"| {r['id']} | {r['category']} | {r['answer_type']} | {cell(r['question'])} | {cell(gold)} | "
                    f"{cell(r['problem'] or '')} |")
    return "\n".join(rows)
