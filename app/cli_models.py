"""``hindsight models build|status``: the CLI shell over ``models.build`` and
``models.status``. Registered by app/cli.py (``main.add_command(models)``)."""
from __future__ import annotations

import json
import sys

import click

from app.shell import Ctx, common


@click.group()
def models() -> None:
    """Build and inspect the local models (planner, retrieval, extraction)."""


@models.command()
@common
@click.option("--quick", is_flag=True, help="Few steps on little data: weak models for smoke tests.")
@click.option("--force", is_flag=True, help="Rebuild even when a build with the same inputs exists.")
@click.pass_obj
def build(obj: Ctx, quick: bool, force: bool) -> None:
    """Assemble, train and convert every model role into the user cache."""
    from models.build import BuildError, build_all
    from models.gguf import GGUFAssemblyError
    from models.paths import WeightsPackageMissing

    as_json = obj.json
    profile = "quick" if quick else "full"
    try:
        if as_json:
            results = build_all(profile, None, force)
        elif not sys.stderr.isatty():
            # CI and logs: one line per stage and per tenth of progress, not a live bar.
            last: dict[str, tuple[str, int]] = {}

            def report(role: str, stage: str, fraction: float, message: str) -> None:
                mark = (stage, int(fraction * 10))
                if last.get(role) != mark:
                    last[role] = mark
                    click.echo(f"{role:<19} {fraction * 100:3.0f}%  {stage}"
                               + (f": {message}" if message else ""), err=True)

            results = build_all(profile, report, force)
        else:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            with Progress(TextColumn("{task.fields[role]:<19}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                          TimeElapsedColumn(), TextColumn("{task.description}"), transient=False) as bar:
                tasks: dict[str, int] = {}

                def report(role: str, stage: str, fraction: float, message: str) -> None:
                    if role not in tasks:
                        tasks[role] = bar.add_task("", total=1.0, role=role)
                    text = f"{stage}: {message}" if message else stage
                    bar.update(tasks[role], completed=fraction, description=text[:70])

                results = build_all(profile, report, force)
    except (BuildError, GGUFAssemblyError, WeightsPackageMissing) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps({role: m.to_json() for role, m in results.items()}, indent=2))
    else:
        for role, m in results.items():
            label = " (quick: weak, for smoke tests)" if m.profile == "quick" else ""
            click.echo(f"{role:<19} ready{label}  {m.path}")


@models.command()
@common
@click.pass_obj
def status(obj: Ctx) -> None:
    """Which model roles are ready, with file, size, hash, source and dev figures."""
    from models.status import status as model_status

    data = model_status()
    if obj.json:
        click.echo(json.dumps(data, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"models in {data['cache']}")
    for col in ("role", "ready", "size", "source", "built", "dev figures"):
        table.add_column(col)
    for role, s in data["roles"].items():
        ready = "yes" if s["ready"] else f"no — {s['fix']}"
        if s["ready"] and s.get("profile") == "quick":
            ready = "yes (quick: weak)"
        size = f"{s['bytes'] / 1e6:.1f} MB" if s.get("bytes") else ""
        figures = ", ".join(f"{k}={v}" for k, v in s.get("metrics", {}).items()
                            if k.startswith(("exact_", "precision", "recall", "accuracy")))
        table.add_row(role, ready, size, s.get("source") or "", (s.get("built_at") or "")[:16], figures)
    Console(file=sys.stdout).print(table)
