"""``hindsight bench scale``: a real user's history at 100k, 300k and 1M events.

Each size is a store of generated lives (``synth``: Spotify with the
generator's catalogue, whose plays follow its listeners' Zipfian tastes, mail with
bodies, diary notes, calendars, workouts, ChatGPT chats, health, Netflix, Amazon),
imported through the ordinary pipeline from the exports the generator writes. One
persona lives up to ``MAX_YEARS`` years; a larger size adds the next persona's life
to the same store, as a household's exports would. Generated exports are cached in
the work folder, so the larger sizes reuse what the smaller ones generated.

Per size, in a child process of its own (so its peak RSS is its own): import
events/s, index events/s (the retrieval index with the real SPLADE encoder and
Embedder), the store's size on disk (events and index, bytes per event), the
latency of a fixed question set answered by the real engine (median and p95), and
peak RSS. The table adds the growth factor per 10x events.

Never writes outside the work folder it is given.
"""
from __future__ import annotations

import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from app.selftest import rss_mb

Echo = Callable[[str], None]

#: the longest life generated for one persona; a larger store adds the next persona
MAX_YEARS = 12.0
#: events one simulated year brings (measured on p5: 13,951), to choose the years
EVENTS_PER_YEAR = 14_000
PERSONAS = ("p1", "p2", "p3", "p4", "p5", "p6")
#: questions any generated life can be asked, answered with the life's own ``today``
QUESTIONS = (
    "How many songs did I listen to last month?",
    "Which artist did I listen to the most last year?",
    "How many times did I go running last year?",
    "How many mails did I get last week?",
    "What did I buy on Amazon last month?",
    "How many TV episodes did I watch last month?",
    "When did I last go swimming?",
    "How many calendar events did I have last week?",
)


def lives_for(size: int) -> list[tuple[str, float]]:
    """(persona, years) whose lives together bring about ``size`` events."""
    out: list[tuple[str, float]] = []
    left = size
    for persona in PERSONAS:
        if left <= 0:
            break
        years = min(MAX_YEARS, max(left / EVENTS_PER_YEAR, 0.25))
        out.append((persona, round(years, 2)))
        left -= int(years * EVENTS_PER_YEAR)
    if left > 0:
        raise ValueError(f"{size:,} events is more than {len(PERSONAS)} personas of {MAX_YEARS:g} years bring")
    return out


def _exports(persona: str, years: float, work: Path, echo: Echo) -> tuple[Path, str, str]:
    """The persona's exports for ``years`` years (generated once, then cached):
    (folder, home zone, today)."""
    import synth

    folder = work / "lives" / f"{persona}-y{years:g}"
    ready = folder / "ready.json"
    spec = next(p for p in synth.list_personas() if p["id"] == persona)
    if not ready.is_file():
        t0 = time.perf_counter()
        manifest = synth.generate(persona, folder, years=years, with_questions=False)
        ready.write_text(json.dumps({"today": manifest.today, "exports": manifest.exports_dir}))
        echo(f"  generated {persona}'s {years:g} years in {time.perf_counter() - t0:.0f} s")
    info = json.loads(ready.read_text())
    return folder / info["exports"], spec["tz"], info["today"]


def measure_size(size: int, work: Path, questions: int, echo: Echo = lambda _: None) -> dict:
    """Runs in a child process: build, index and ask one size; its figures."""
    from zoneinfo import ZoneInfo

    from engine.ingest import import_paths
    from engine.retrieval.index import RetrievalIndex, index_path
    from engine.store import EventStore
    from importers.base import ImportContext
    from models.registry import ModelRegistry

    folder = work / f"store-{size}"
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    store_file = folder / "hindsight.duckdb"
    lives = [_exports(p, y, work, echo) for p, y in lives_for(size)]
    figures: dict = {"size": size, "lives": len(lives)}
    with EventStore(store_file) as store:
        t0 = time.perf_counter()
        for exports, tz, _ in lives:
            import_paths(store, [exports], context=ImportContext(home_tz=ZoneInfo(tz)))
        figures["import_seconds"] = time.perf_counter() - t0
        figures["events"] = store.count()
        figures["by_kind"] = dict(store.reader().execute(
            "SELECT kind, count(*) FROM events GROUP BY kind ORDER BY 2 DESC").fetchall())
        echo(f"  imported {figures['events']:,} events in {figures['import_seconds']:.0f} s")
        registry = ModelRegistry()
        try:
            t0 = time.perf_counter()
            index = RetrievalIndex(store, sparse=registry.sparse_encoder(), embedder=registry.embedder())
            last = [0.0]

            def progress(stage: str, done: int, total: int) -> None:
                if time.perf_counter() - last[0] > 30 or done == total:
                    last[0] = time.perf_counter()
                    echo(f"    index {stage}: {done:,}/{total:,} after {last[0] - t0:.0f} s")

            stats = index.refresh(progress=progress)
            index.fts_search("warm up", 1)  # the full-text index is built at the first search
            figures["index_seconds"] = time.perf_counter() - t0
            figures["units_encoded"] = stats.texts_encoded
            figures["texts_embedded"] = index._db.execute("SELECT count(*) FROM text_vectors").fetchone()[0]
            index._db.execute("CHECKPOINT")
            index.close()
            store.write(lambda con: con.execute("CHECKPOINT")).result()
            echo(f"  indexed in {figures['index_seconds']:.0f} s: {stats.texts_encoded:,} units encoded, "
                 f"{figures['texts_embedded']:,} texts embedded")
            # the peak so far is the import's and the refresh's (the planner is not loaded yet)
            figures["index_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            # and what the process holds now, before the planner and the other models load
            figures["indexed_rss_mb"] = rss_mb()
            if figures["indexed_rss_mb"] is not None:
                echo(f"  resident after indexing: {figures['indexed_rss_mb']:,.0f} MB "
                     f"(peak so far {figures['index_peak_rss_mb']:,.0f} MB)")
            figures["store_bytes"] = store_file.stat().st_size
            figures["index_bytes"] = index_path(store_file).stat().st_size
            # asked on the day the last life ends: with an earlier one, the later lives' mail
            # after it counted as "last week" (304 for 45)
            today = max(t for _, _, t in lives)
            figures["latencies"] = _ask(store, registry, today, questions, echo) if questions else []
        finally:
            registry.close()
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def _ask(store, registry, today: str, n: int, echo: Echo) -> list[float]:
    from datetime import date

    from app.assemble import build_engine

    engine = build_engine(store, None, None, models=registry, use_plan_cache=False)
    seconds = []
    try:
        for q in QUESTIONS[:n]:
            t0 = time.perf_counter()
            answer = engine.ask(q, today=date.fromisoformat(today))
            seconds.append(time.perf_counter() - t0)
            echo(f"    {seconds[-1]:5.1f} s  {q} -> {answer.answer_text[:80]!r}")
    finally:
        engine.close()
    return seconds


def run(sizes: list[int], work: Path, *, questions: int = len(QUESTIONS), echo: Echo = print) -> dict:
    """Every size in its own child process; figures per size and the growth per 10x."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in sizes:
        echo(f"{size:,} events:")
        child = subprocess.run(
            [sys.executable, "-c", "import json, sys; from pathlib import Path; "
             "from app.bench.scale_mix import measure_size; "
             "r = measure_size(int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), "
             "lambda m: print(m, file=sys.stderr, flush=True)); print(json.dumps(r))",
             str(size), str(work), str(questions)],
            stdout=subprocess.PIPE, stderr=None, text=True, check=False, env={**os.environ})
        if child.returncode != 0:
            raise RuntimeError(f"the {size:,}-event run failed (exit {child.returncode}); see the messages above")
        rows.append(_figures(json.loads(child.stdout.strip().splitlines()[-1])))
    out: dict = {"sizes": {str(r["size"]): r for r in rows}}
    if len(rows) >= 2:
        small, big = rows[0], rows[-1]
        decades = math.log10(big["events"] / small["events"])
        if decades > 0:
            out["growth_per_10x"] = {k: round((big[k] / small[k]) ** (1 / decades), 2)
                                     for k in ("import_events_per_s", "index_events_per_s", "bytes_per_event",
                                               "ask_median_s", "ask_p95_s", "peak_rss_mb") if small.get(k)}
    return out


def _figures(r: dict) -> dict:
    lat = sorted(r.pop("latencies"))
    events = r["events"]
    r.update(import_events_per_s=round(events / r["import_seconds"], 1),
             index_events_per_s=round(events / r["index_seconds"], 1),
             bytes_per_event=round((r["store_bytes"] + r["index_bytes"]) / events, 1),
             ask_median_s=round(statistics.median(lat), 2) if lat else None,
             ask_p95_s=round(lat[min(len(lat) - 1, math.ceil(0.95 * len(lat)) - 1)], 2) if lat else None,
             peak_rss_mb=round(r["peak_rss_mb"]), index_peak_rss_mb=round(r.get("index_peak_rss_mb") or 0),
             import_seconds=round(r["import_seconds"], 1), index_seconds=round(r["index_seconds"], 1))
    return r


def table(figures: dict) -> str:
    rows = [("| events | import events/s | index events/s | index s | bytes/event (store + index) | "
             "ask median s | ask p95 s | peak RSS MB (to the end of indexing) |"),
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in figures["sizes"].values():
        rows.append(f"| {r['events']:,} | {r['import_events_per_s']:,.0f} | {r['index_events_per_s']:,.0f} | "
                    f"{r['index_seconds']:.0f} | {r['bytes_per_event']:,.0f} "
                    f"({r['store_bytes'] / r['events']:,.0f} + {r['index_bytes'] / r['events']:,.0f}) | "
                    f"{r['ask_median_s']} | {r['ask_p95_s']} | {r['peak_rss_mb']:,} ({r['index_peak_rss_mb']:,}) |")
    growth = figures.get("growth_per_10x")
    if growth:
        rows.append("| growth per 10x | " + " | ".join(
            f"{growth[k]}x" if k in growth else "–" for k in ("import_events_per_s", "index_events_per_s")) +
            " | – | " + " | ".join(f"{growth[k]}x" if k in growth else "–"
                                   for k in ("bytes_per_event", "ask_median_s", "ask_p95_s", "peak_rss_mb")) + " |")
    return "\n".join(rows)
