"""``hindsight demo``: generate the bundled demo persona's exports, import them
into a data directory of their own, then open the app — or, with no display,
answer the demo's sample questions and show the generator's gold answer beside
each, so anyone can check the engine."""
from __future__ import annotations

import json
import os
import sys
from datetime import date
from pathlib import Path

import click

from app.errors import UserError
from app.shell import Ctx, common, print_json

DEMO_SUBDIR = "demo"
DATASET = "dataset"


def demo_dir(obj: Ctx) -> Path:
    return obj.resolve() / DEMO_SUBDIR


def has_display() -> bool:
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def prepare(obj: Ctx, rebuild: bool, echo) -> tuple[Path, dict]:
    """Generate and import the demo data once; returns (demo data dir, manifest)."""
    from engine.ingest import import_paths
    from engine.settings import Settings
    from engine.store import EventStore, store_path
    from synth import write_demo
    from synth.world import DEMO

    target = demo_dir(obj)
    dataset = target / DATASET
    manifest_path = dataset / "manifest.json"
    if rebuild and target.exists():
        import shutil

        shutil.rmtree(target)
    if not manifest_path.exists():
        echo(f"Generating the demo persona ({DEMO.name}, {DEMO.home_city}) …")
        write_demo(dataset)
    manifest = json.loads(manifest_path.read_text())
    settings = Settings(home_timezone=DEMO.home_tz, own_addresses=[DEMO.email])
    settings.save(target)
    with EventStore(store_path(target)) as store:
        if store.count() == 0:
            echo(f"Importing the demo exports into {target} …")
            report = import_paths(store, [dataset / manifest.get("exports_dir", "exports")],
                                  context=settings.import_context())
            if report.failed or report.unrecognized:
                raise UserError(f"the demo data did not import cleanly: "
                                f"{[f.message for f in report.failed] + report.unrecognized}")
            echo(f"  {report.added:,} events from {len(report.files)} files in {report.seconds:.1f} s")
            from app.assemble import refresh_index

            echo("  " + refresh_index(store))
    return target, manifest


@click.command("demo")
@common
@click.option("--no-gui", is_flag=True, help="Answer the sample questions in the terminal even if a display exists.")
@click.option("--rebuild", is_flag=True, help="Generate and import the demo data again.")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Answer only the first N sample questions.")
@click.pass_obj
def demo(obj: Ctx, no_gui: bool, rebuild: bool, limit: int | None) -> int:
    """Try Hindsight on a generated persona's exports (a year of music, mail,
    calendar, purchases, runs and notes)."""
    echo = (lambda *_: None) if obj.json else (lambda m: click.echo(m, err=True))
    target, manifest = prepare(obj, rebuild, echo)
    if has_display() and not no_gui and not obj.json:
        from app.cli_app import run_app

        echo("Opening the app on the demo data (Ctrl+L to ask a question) …")
        return run_app(obj, True, None, None, "ask", 0, None)
    return answer_samples(obj, target, manifest, limit)


def answer_samples(obj: Ctx, target: Path, manifest: dict, limit: int | None) -> int:
    from app.assemble import build_engine
    from engine.settings import Settings
    from engine.store import EventStore, store_path

    questions = [json.loads(line) for line in (target / DATASET / manifest["questions"]).read_text().splitlines()
                 if line.strip()]
    if limit is not None:
        questions = questions[:limit]
    today = date.fromisoformat(manifest["today"])
    results = []
    with EventStore(store_path(target)) as store:
        engine = build_engine(store, Settings.load(target), target)
        try:
            if not obj.json:
                click.echo(f"No display: answering the demo's {len(questions)} sample questions "
                           f"(today = {today}).\n")
            for q in questions:
                ans = engine.ask(q["question"], today=today)
                gold = _gold(q)
                results.append({"question": q["question"], "answer": ans.answer, "answer_text": ans.answer_text,
                                "gold": gold, "plan": ans.plan_text, "evidence": len(ans.evidence),
                                "seconds": round(ans.timings.get("total_ms", 0) / 1000, 1)})
                if not obj.json:
                    click.echo(f"Q: {q['question']}\nA: {ans.answer_text}\n   (generator's answer: {gold}; "
                               f"{ans.timings.get('total_ms', 0) / 1000:.1f} s)\n   plan: {ans.plan_text or '—'}\n")
        finally:
            engine.close()
    if obj.json:
        print_json({"data_dir": str(target), "today": today, "answers": results})
    else:
        click.echo(f"Explore more: hindsight --data-dir {target} ask \"…\"   "
                   f"or   hindsight app --demo (needs a display)")
    return 0


def _gold(q: dict) -> str:
    rows = q.get("answer") or []
    flat = [str(v) for row in rows for v in (row if isinstance(row, list) else [row])]
    return ", ".join(flat) if flat else "(none)"
