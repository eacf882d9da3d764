"""``hindsight bench``: benchmarks that print figures and keep results."""
from __future__ import annotations

from pathlib import Path

import click

from app.errors import UserError
from app.shell import Ctx, common, print_json


@click.group("bench")
def bench() -> None:
    """Benchmarks: import throughput and memory, answer quality and latency."""


@bench.command("scale")
@common
@click.option("--import", "do_import", is_flag=True, default=True, show_default=True,
              help="Import throughput and peak RSS on generated files.")
@click.option("--sizes", default="250000,1000000", show_default=True,
              help="Comma-separated event counts; the largest vs smallest shows whether memory stays flat.")
@click.option("--results", type=click.Path(file_okay=False), default="bench-results", show_default=True)
@click.pass_obj
def scale(obj: Ctx, do_import: bool, sizes: str, results: str) -> None:
    """Import throughput (events/s) and peak RSS as the input file grows."""
    from app.bench import report, scale as scale_bench

    try:
        ns = [int(s.replace("_", "")) for s in sizes.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--sizes: {sizes!r} is not a list of numbers") from None
    if not ns or min(ns) <= 0:
        raise UserError("--sizes needs positive event counts")
    echo = (lambda *_: None) if obj.json else click.echo
    figures = scale_bench.run(sorted(ns), echo=echo)
    md_path, diff = report.save("scale", figures, scale_bench.table(figures), Path(results))
    if obj.json:
        print_json({"figures": figures, "report": str(md_path), "diff": diff})
    else:
        click.echo("\n" + scale_bench.table(figures))
        if diff:
            click.echo("\n" + diff)
        click.echo(f"\nSaved {md_path}")
