"""``hindsight bench retrieval``: RETRIEVE's recall and precision on a persona whose
truth is known.

A persona is generated and imported (``app.bench.persona.prepare``, cached); each
imported event is traced back to the real-world facts it expresses
(``models.training.retrieval_data.link``). For each concept ("running", "songs I
listened to", "Italian food", "time with Ana") RETRIEVE runs with the real models
and is compared with the events that express a fact the concept holds for. Events
that express no such fact but name the concept's value in their text are unknown
and counted neither way. Defaults to p5, a dev persona the classifiers never saw
(they were trained on p1-p3 and measured on p4); the test personas (p7, p8) are for
release figures only.
"""
from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

Echo = Callable[[str], None]


def run(*, persona: str = "p5", concepts: int = 40, seed: int = 11, work_dir: Path, scale: float = 0.3,
        years: float = 1.0, echo: Echo = lambda _: None, models=None) -> dict:
    import orjson

    from app.bench.persona import prepare
    from engine.execute import execute
    from engine.operators import Models
    from engine.plan.printer import quote
    from engine.qud.store_names import store_names
    from engine.retrieval.index import RetrievalIndex
    from engine.store import EventStore
    from models.registry import ModelRegistry
    from models.training import retrieval_data as rd

    prepared = prepare(persona, work_dir, echo, scale=scale, years=years)
    facts = [orjson.loads(line) for line in open(prepared.folder / "persona" / "canonical.jsonl", "rb")]
    by_key = rd.fact_index(facts)
    registry = models or ModelRegistry()
    otx = Models(sparse=registry.sparse_encoder(), patterns=registry.pattern_classifier(),
                 reranker=registry.event_classifier(), embedder=registry.embedder())
    per_concept: list[dict] = []
    with EventStore(prepared.store_path, read_only=True) as store:
        rows = store.reader().execute(
            "SELECT id, file, locator, attributes, start, tz_offset_min, lower(coalesce(title, '') || ' ' || "
            "coalesce(text, '') || ' ' || coalesce(attributes, '')), source FROM events").fetchall()
        linked = {r[0]: rd.link(by_key, r[1], r[2], orjson.loads(r[3]) if r[3] else {}, r[4], r[5]) for r in rows}
        texts = {r[0]: r[6] for r in rows}
        source_of = {r[0]: r[7] for r in rows}
        by_source: dict[str, list[int]] = {}  # source -> [truth, found, retrieved], summed over concepts
        echo(f"{persona}: {len(rows):,} events, {sum(1 for v in linked.values() if v):,} traced to facts")
        index = RetrievalIndex(store, sparse=otx.sparse, embedder=otx.embedder)
        t0 = time.perf_counter()
        index.refresh()
        echo(f"index ready in {time.perf_counter() - t0:.0f} s")
        book = store_names(store.reader())  # as the question engine reads them
        chosen = _choose(rd._concepts(facts), concepts, seed)
        rng = random.Random(seed)
        for n, concept in enumerate(chosen, 1):
            query = concept.query(rng)
            hits = {i for i, f in enumerate(facts) if concept.holds(f)}
            needle = (concept.value or "").lower()
            truth, unknown = set(), set()
            for eid, fs in linked.items():
                if any(i in hits for i in fs):
                    truth.add(eid)
                elif needle and needle in texts[eid]:
                    unknown.add(eid)
            t = time.perf_counter()
            result = execute(f"RETRIEVE(query={quote(query)})", store, otx, today=date.fromisoformat(prepared.today),
                             index=index, names=book)
            ms = (time.perf_counter() - t) * 1000
            got = set(result.evidence) - unknown
            tp = len(got & truth)
            own: dict[str, list[int]] = {}  # this concept's [truth, found, retrieved] per source
            for eid in truth | got:
                for tally in (by_source.setdefault(source_of[eid], [0, 0, 0]),
                              own.setdefault(source_of[eid], [0, 0, 0])):
                    tally[0] += eid in truth
                    tally[1] += eid in truth and eid in got
                    tally[2] += eid in got
            recall = tp / len(truth) if truth else None
            precision = tp / len(got) if got else (1.0 if not truth else 0.0)
            per_concept.append({"query": query, "level": "kind" if concept.attr is None else "value",
                                "truth": len(truth), "retrieved": len(got), "recall": recall,
                                "precision": precision, "ms": round(ms, 1),
                                "by_source": {src: dict(zip(("truth", "found", "retrieved"), t))
                                              for src, t in sorted(own.items())}})
            echo(f"[{n}/{len(chosen)}] {query!r}: {tp}/{len(truth)} found, {len(got)} retrieved "
                 f"(R {_pct(recall)}, P {_pct(precision)}) in {ms / 1000:.1f} s")
        index.close()
    if models is None:
        registry.close()
    return {"persona": persona, "scale": scale, "years": years, "events": len(rows),
            "overall": _summary(per_concept),
            "by_level": {lvl: _summary([c for c in per_concept if c["level"] == lvl]) for lvl in ("kind", "value")},
            "by_source": {src: _micro(*tally) for src, tally in sorted(by_source.items())},
            "concepts": per_concept}


def _choose(all_concepts: list, n: int, seed: int) -> list:
    """Every kind-level concept, then value concepts at random up to ``n``."""
    kinds = [c for c in all_concepts if c.attr is None]
    values = [c for c in all_concepts if c.attr is not None]
    random.Random(seed).shuffle(values)
    return (kinds + values)[:max(n, len(kinds))] if n >= len(kinds) else kinds[:n]


def _summary(rows: list[dict]) -> dict:
    recalls = [r["recall"] for r in rows if r["recall"] is not None]
    return {"concepts": len(rows),
            "recall_macro": round(statistics.fmean(recalls), 3) if recalls else None,
            "precision_macro": round(statistics.fmean(r["precision"] for r in rows), 3) if rows else None,
            "ms_median": round(statistics.median(r["ms"] for r in rows), 1) if rows else None,
            "ms_p95": round(sorted(r["ms"] for r in rows)[max(0, int(0.95 * len(rows)) - 1)], 1) if rows else None}


def _micro(truth: int, found: int, retrieved: int) -> dict:
    """One source's events over every concept: how many of its relevant events were
    found (recall) and how many of those retrieved were relevant (precision)."""
    return {"truth": truth, "found": found, "retrieved": retrieved,
            "recall": round(found / truth, 3) if truth else None,
            "precision": round(found / retrieved, 3) if retrieved else None}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def table(figures: dict) -> str:
    lines = [f"RETRIEVE on persona {figures['persona']} ({figures['events']:,} events; scale {figures['scale']}, "
             f"{figures['years']} years)", "",
             "| level | concepts | recall (macro) | precision (macro) | median ms | p95 ms |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, s in [("all", figures["overall"]), *figures["by_level"].items()]:
        lines.append(f"| {name} | {s['concepts']} | {_pct(s['recall_macro'])} | {_pct(s['precision_macro'])} | "
                     f"{s['ms_median']} | {s['ms_p95']} |")
    lines += ["", "Per source, every concept's events together (micro): a source a concept finds nothing "
              "relevant in counts only for what it retrieved there.", "",
              "| source | relevant | found | retrieved | recall | precision |", "|---|---:|---:|---:|---:|---:|"]
    for src, s in figures["by_source"].items():
        lines.append(f"| {src} | {s['truth']:,} | {s['found']:,} | {s['retrieved']:,} | {_pct(s['recall'])} | "
                     f"{_pct(s['precision'])} |")
    lines += ["", "| query | truth | retrieved | recall | precision | per source: found/relevant of retrieved |",
              "|---|---:|---:|---:|---:|---|"]
    for c in figures["concepts"]:
        sources = ", ".join(f"{src} {t['found']}/{t['truth']} of {t['retrieved']}"
                            for src, t in c.get("by_source", {}).items())
        lines.append(f"| {c['query']} | {c['truth']} | {c['retrieved']} | {_pct(c['recall'])} | "
                     f"{_pct(c['precision'])} | {sources} |")
    return "\n".join(lines)
