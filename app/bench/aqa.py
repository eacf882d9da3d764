"""``hindsight bench aqa``: aggregative questions over chat logs (PROBE), scored as
the WildChat-AQA paper scores them (NDCG@1/3/5/10 of ranked candidates beside a
random ranking), plus the time the insights job takes per conversation and the time
per answer.

The labelled conversations (:mod:`app.bench.aqa_set`) are written as a ChatGPT
export and imported through the ordinary importer into a store cached in the work
folder; the insights job runs on it with the real models (incrementally: a second
run finds nothing to do). Planner answers are cached by question, prompt and model,
so a re-run measures retrieval and counting without planning again; the answer
times reported are those of runs that planned.
"""
from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from app.bench.aqa_fresh import fresh_questions
from app.bench.aqa_set import (HOME_TZ, TODAY, AQADataError, Question, labelled, ndcg, questions, random_ndcg,
                               write_export)

Echo = Callable[[str], None]
KS = (1, 3, 5, 10)
_GROUP = {"topic": "topic", "subtopic": "subtopic", "keyword": "keyword", "weekday": "weekday",
          "season": "season", "day_part": "day_part", "month": "month"}


class AQABenchError(RuntimeError):
    pass


def _code_key() -> str:
    h = hashlib.sha256()
    for f in sorted((Path(__file__).parent / "aqa_set.py", Path(__file__).parent / "aqa_labels.json")):
        h.update(f.read_bytes())
    return h.hexdigest()[:10]


def prepare_store(work_dir: Path, copies: int = 1, limit: int | None = None, echo: Echo = lambda _: None) -> Path:
    """The store with the labelled conversations imported (cached)."""
    from app.bench.persona import import_exports

    folder = Path(work_dir) / f"aqa-{_code_key()}-x{copies}-{limit or 'all'}"
    store_file = folder / "hindsight.duckdb"
    if (folder / "imported.json").exists():
        return store_file
    items = labelled()
    export = write_export(items, folder / "export", copies=copies)
    if limit:
        data = json.loads(export.read_text())[:limit]
        export.write_text(json.dumps(data))
    figures = import_exports(export, store_file, HOME_TZ)
    (folder / "imported.json").write_text(json.dumps(figures))
    echo(f"aqa: imported {figures['events']:,} events into {store_file}")
    return store_file


def oracle_plan(q: Question):
    """The plan a perfect planner would write: the gold filters, the question as the query."""
    from engine.insights.plan import ProbePlan

    return ProbePlan(queries=(q.text,), group_by=_GROUP[q.kind], weekdays=q.weekdays, day_part=q.day_part,
                     topic=q.topic, since=q.since, until=q.until)


class PlanCache:
    """Planner answers by question, prompt and model, in a JSON file."""

    def __init__(self, path: Path, identity: str):
        from engine.insights.plan import GRAMMAR, prefix

        self.path = path
        self.salt = hashlib.sha256((identity + prefix() + GRAMMAR).encode()).hexdigest()[:12]
        self.data = json.loads(path.read_text()) if path.exists() else {}

    def get(self, question: str):
        from engine.insights.plan import ProbePlan

        hit = self.data.get(f"{self.salt}:{question}")
        if hit is None:
            return None
        return ProbePlan(queries=tuple(hit["queries"]), group_by=hit["group_by"], year=hit["year"],
                         season=hit["season"], month=hit["month"], last=hit["last"], last_unit=hit["last_unit"],
                         weekdays=tuple(hit["weekdays"]), day_part=hit["day_part"], topic=hit["topic"])

    def put(self, question: str, plan) -> None:
        self.data[f"{self.salt}:{question}"] = {
            "queries": list(plan.queries), "group_by": plan.group_by, "year": plan.year, "season": plan.season,
            "month": plan.month, "last": plan.last, "last_unit": plan.last_unit, "weekdays": list(plan.weekdays),
            "day_part": plan.day_part, "topic": plan.topic}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data, indent=0))


def _mean(xs) -> float:
    xs = list(xs)
    return round(statistics.mean(xs), 3) if xs else 0.0


def _summary(rows: list[dict]) -> dict:
    out = {"questions": len(rows)}
    for k in KS:
        out[f"ndcg@{k}"] = _mean(r[f"ndcg@{k}"] for r in rows)
        out[f"random@{k}"] = _mean(r[f"random@{k}"] for r in rows)
    return out


def run(*, split: str = "eval", pooling: str = "max", oracle: bool = False, limit: int | None = None,
        work_dir: Path = Path("bench-results/work"), timing: int = 0, echo: Echo = lambda _: None) -> dict:
    """Answer the questions of ``split`` (dev, eval, fresh or all) and score them."""
    from engine.insights import job as insights_job
    from engine.insights.plan import ProbePlanError, plan_question
    from engine.insights.probe import Probe
    from engine.store import EventStore
    from models.insights import insight_models
    from models.registry import ModelRegistry

    try:
        store_file = prepare_store(work_dir, echo=echo)
    except AQADataError as exc:
        raise AQABenchError(str(exc)) from exc
    if split == "fresh":
        qs = fresh_questions(labelled())[:limit]
    else:
        qs = [q for q in questions(labelled()) if split == "all" or q.split == split][:limit]
    figures: dict = {"split": split, "pooling": pooling, "planner": "oracle" if oracle else "llm"}
    with ModelRegistry() as registry, EventStore(store_file) as store:
        models = insight_models(registry)
        try:
            result = insights_job.run(store, models, progress=lambda stage, done, total: echo(
                f"aqa: {stage} {done}/{total}") if done == total or done % 64 == 0 else None)
            figures["taxonomy"] = {"conversations": result.conversations, "topics": result.topics,
                                   "subtopics": result.subtopics}
            if result.inferred:
                figures["attributes"] = {"conversations": result.inferred,
                                         "seconds": round(result.seconds["total"], 1),
                                         "ms_per_conversation": round(1000 * result.seconds["total"] / result.inferred, 1)}
            if timing:
                figures["attributes_at_scale"] = _timing(work_dir, timing, models, echo)
        finally:
            models.close()
        planner = None if oracle else registry.planner()
        # one cache file per split, so that reading the dev plans never shows a frozen one
        cache = PlanCache(Path(work_dir) / f"aqa-plans-{split}.json", getattr(planner, "identity", "oracle"))
        probe = Probe(store, planner, registry.embedder(), registry.sparse_encoder(), pooling=pooling)
        rows, planned_times, failures = [], [], 0
        for n, q in enumerate(qs, 1):
            plan = oracle_plan(q) if oracle else cache.get(q.text)
            t0 = time.monotonic()
            if plan is None:
                try:
                    plan = plan_question(planner, q.text)
                except ProbePlanError as exc:
                    failures += 1
                    echo(f"aqa: no plan for {q.text!r}: {exc}")
                    from engine.insights.plan import ProbePlan
                    plan = ProbePlan(queries=(q.text,))
                cache.put(q.text, plan)
                planned = True
            else:
                planned = False
            ans = probe.ask(q.text, today=TODAY, candidates=q.candidates, plan=plan)
            seconds = time.monotonic() - t0
            if planned:
                planned_times.append(seconds)
            row = {"id": q.id, "question": q.text, "kind": q.kind, "conditions": list(q.conditions),
                   "ranking": ans.ranking, "gold": q.gold, "evidence": len(ans.evidence), "seconds": round(seconds, 3)}
            if split == "dev":  # the frozen splits' plans are not written out, so nobody tunes on them
                row |= {"filters": ans.filters, "queries": list(plan.queries)}
            for k in KS:
                row[f"ndcg@{k}"] = ndcg(ans.ranking, q.gold, k)
                row[f"random@{k}"] = random_ndcg(q.candidates, q.gold, k)
            rows.append(row)
            if split == "dev":
                echo(f"aqa: {n}/{len(qs)} ndcg@1 {row['ndcg@1']:.2f} {seconds:.1f} s"
                     f"{' (planned)' if planned else ''} {q.text}")
            else:
                echo(f"aqa: {n}/{len(qs)} {seconds:.1f} s{' (planned)' if planned else ''}")
    figures["overall"] = _summary(rows)
    for kind in sorted({r["kind"] for r in rows}):
        figures[f"kind:{kind}"] = _summary([r for r in rows if r["kind"] == kind])
    figures["topic_or_subtopic"] = _summary([r for r in rows if r["kind"] in ("topic", "subtopic")])
    for n_cond in (0, 1, 2):
        figures[f"conditions:{n_cond}"] = _summary([r for r in rows if len(r["conditions"]) == n_cond])
    figures["answer_seconds"] = {"planned_mean": _mean(planned_times),
                                 "planned_max": round(max(planned_times), 3) if planned_times else 0.0,
                                 "planned": len(planned_times), "all_mean": _mean(r["seconds"] for r in rows)}
    figures["plan_failures"] = failures
    # a frozen split's per-question lines carry only scores: what failed, and how, stays unread
    figures["questions"] = rows if split == "dev" else [
        {k: v for k, v in r.items() if k in ("id", "kind", "conditions", "seconds") or k.startswith(("ndcg", "random"))}
        for r in rows]
    return figures


def _timing(work_dir: Path, n: int, models, echo: Echo) -> dict:
    """The insights job from scratch on ``n`` conversations (the set repeated)."""
    from engine.insights import job as insights_job
    from engine.store import EventStore

    copies = -(-n // len(labelled()))
    store_file = prepare_store(work_dir, copies=copies, limit=n, echo=echo)
    with EventStore(store_file) as store:
        store.write(lambda con: con.execute("DROP TABLE IF EXISTS conversation_insights; "
                                            "DROP TABLE IF EXISTS insight_name_answers")).result()
        result = insights_job.run(store, models, progress=lambda s, d, t: echo(f"aqa timing: {s} {d}/{t}")
                                  if d == t or d % 128 == 0 else None)
    return {"conversations": result.conversations, "seconds": round(result.seconds["total"], 1),
            "infer_seconds": round(result.seconds["infer"], 1), "taxonomy_seconds": round(result.seconds["taxonomy"], 2)}


def table(figures: dict) -> str:
    rows = [f"PROBE on {figures['split']} questions, {figures['planner']} planner, {figures['pooling']} pooling",
            "", "| part | questions | NDCG@1 | @3 | @5 | @10 | random @1 | @3 | @5 | @10 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, f in figures.items():
        if isinstance(f, dict) and "ndcg@1" in f and f["questions"]:
            rows.append(f"| {key} | {f['questions']} | " + " | ".join(f"{f[f'ndcg@{k}']:.3f}" for k in KS) + " | "
                        + " | ".join(f"{f[f'random@{k}']:.3f}" for k in KS) + " |")
    a = figures["answer_seconds"]
    rows.append("")
    rows.append(f"Answer time with planning: mean {a['planned_mean']:.2f} s, max {a['planned_max']:.2f} s "
                f"over {a['planned']} questions; all answers (cached plans) mean {a['all_mean']:.2f} s. "
                f"Plan failures: {figures['plan_failures']}.")
    if "attributes" in figures:
        t = figures["attributes"]
        rows.append(f"Attributes: {t['conversations']} conversations in {t['seconds']} s "
                    f"({t['ms_per_conversation']} ms each).")
    if "attributes_at_scale" in figures:
        t = figures["attributes_at_scale"]
        rows.append(f"Attributes from scratch: {t['conversations']} conversations in {t['seconds']} s "
                    f"(inference {t['infer_seconds']} s, taxonomy {t['taxonomy_seconds']} s).")
    tx = figures.get("taxonomy", {})
    rows.append(f"Taxonomy: {tx.get('topics')} topics, {tx.get('subtopics')} subtopics over "
                f"{tx.get('conversations')} conversations.")
    return "\n".join(rows)
