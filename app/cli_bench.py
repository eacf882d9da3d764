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
@click.option("--import", "do_import", is_flag=True, hidden=True, help="Kept for old scripts; see --import-only.")
@click.option("--import-only", is_flag=True,
              help="Only import throughput and peak RSS on one large generated Spotify file per size.")
@click.option("--sizes", default=None,
              help="Comma-separated event counts [default: 100000,300000,1000000; with --import-only "
                   "250000,1000000].")
@click.option("--questions", type=click.IntRange(0, 8), default=8, show_default=True,
              help="Questions of the fixed set asked per size (0: no answers, no planner).")
@click.option("--results", type=click.Path(file_okay=False), default="bench-results", show_default=True)
@click.option("--work-dir", type=click.Path(file_okay=False), default="bench-results/work/scale", show_default=True,
              help="Where generated lives and the stores built from them are kept.")
@click.pass_obj
def scale(obj: Ctx, do_import: bool, import_only: bool, sizes: str | None, questions: int, results: str,
          work_dir: str) -> None:
    """A real user's scale: import, index, store size, ask latency and peak RSS per size."""
    from app.bench import report, scale as scale_bench, scale_mix

    sizes = sizes or ("250000,1000000" if import_only else "100000,300000,1000000")
    try:
        ns = [int(s.replace("_", "")) for s in sizes.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--sizes: {sizes!r} is not a list of numbers") from None
    if not ns or min(ns) <= 0:
        raise UserError("--sizes needs positive event counts")
    echo = _stderr_echo if obj.json else click.echo
    if import_only:
        figures = scale_bench.run(sorted(ns), echo=echo)
        _finish(obj, "scale", figures, scale_bench.table(figures), results)
        return
    try:
        scale_mix.lives_for(max(ns))
    except ValueError as exc:
        raise UserError(f"--sizes: {exc}") from None
    figures = scale_mix.run(sorted(ns), Path(work_dir), questions=questions, echo=echo)
    _finish(obj, "scale-mix", figures, scale_mix.table(figures), results)


@bench.command("index")
@common
@click.option("--plays", type=click.IntRange(min=1), default=43_060, show_default=True,
              help="Spotify plays in the generated export.")
@click.option("--tracks", type=click.IntRange(min=1), default=123, show_default=True,
              help="Songs they are plays of (the favourites played most, Zipf).")
@click.option("--results", type=click.Path(file_okay=False), default="bench-results", show_default=True)
@click.pass_obj
def index_cmd(obj: Ctx, plays: int, tracks: int, results: str) -> None:
    """Search-index throughput (events/s) on a Spotify-heavy store, with the real encoders."""
    from app.bench import scale as scale_bench
    from models.registry import ModelMissing

    try:
        figures = scale_bench.index_run(plays, tracks, echo=_stderr_echo if obj.json else click.echo)
    except ModelMissing as exc:
        raise UserError(str(exc)) from exc
    table = ("| events | songs | seconds | events/s | CPU s | events/CPU s | texts SPLADE-encoded | texts embedded "
             "| peak RSS MB |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
             f"| {figures['events']:,} | {tracks} | {figures['seconds']} | {figures['events_per_s']:,.0f} | "
             f"{figures['cpu_seconds']} | {figures['events_per_cpu_s']:,.0f} | "
             f"{figures['sparse_texts']:,} | {figures['embedded_texts']:,} | {figures['peak_rss_mb']:,} |")
    _finish(obj, "index", figures, table, results)


@bench.command("largefiles")
@common
@click.option("--mbox-gb", type=float, default=5.0, show_default=True, help="Size of the generated mbox.")
@click.option("--health-gb", type=float, default=2.0, show_default=True,
              help="Size of the generated Apple Health export.xml.")
@click.option("--work-dir", type=click.Path(file_okay=False), default="bench-results/largefiles",
              show_default=True, help="Where the files are written and imported (needs their size free, twice).")
@click.option("--results", type=click.Path(file_okay=False), default="bench-results", show_default=True)
@click.pass_obj
def largefiles_cmd(obj: Ctx, mbox_gb: float, health_gb: float, work_dir: str, results: str) -> None:
    """Peak memory importing a multi-GB mbox and Apple Health export (goal: 500 MB)."""
    from app.bench import largefiles

    figures = largefiles.run(int(mbox_gb * 1e9), int(health_gb * 1e9), Path(work_dir),
                             echo=_stderr_echo)
    _finish(obj, "largefiles", figures, largefiles.table(figures), results)


def _stderr_echo(message: str) -> None:
    # progress goes to stderr so --json output on stdout stays parseable
    click.echo(message, err=True)


def _finish(obj: Ctx, name: str, figures: dict, table_md: str, results: str) -> None:
    from app.bench import report

    md_path, diff = report.save(name, figures, table_md, Path(results))
    if obj.json:
        print_json({"figures": figures, "report": str(md_path), "diff": diff})
    else:
        click.echo("\n" + table_md)
        if diff:
            click.echo("\n" + diff)
        click.echo(f"\nSaved {md_path}")


_METHOD = click.option("--method", type=click.Choice(["reqap", "rag", "codegen"]), default="reqap",
                       show_default=True, help="The product (reqap) or a baseline on the same models.")
_LIMIT = click.option("--limit", type=click.IntRange(min=1), default=None,
                      help="Answer only the first N questions (a quick check).")
_RESULTS = click.option("--results", type=click.Path(file_okay=False), default="bench-results", show_default=True)
_WORK = click.option("--work-dir", type=click.Path(file_okay=False), default="bench-results/work",
                     show_default=True, help="Where generated personas and their imported stores are cached.")


@bench.command("cli")
@common
@click.option("--question", "questions", multiple=True,
              help="A question to ask (repeat it); default: the scale benchmark's eight.")
@click.option("--today", help="Fix 'today' for relative dates (YYYY-MM-DD).")
@_RESULTS
@click.pass_obj
def cli_cmd(obj: Ctx, questions: tuple[str, ...], today: str | None, results: str) -> None:
    """What 'hindsight ask' costs on top of the answer: cold (it starts the background
    process), warm (through it) and in its own process (--no-server), over your data
    folder (--data-dir)."""
    from app.bench import cli_latency
    from app.bench.scale_mix import QUESTIONS

    asked = list(questions) or list(QUESTIONS)
    if len(asked) < 2:
        raise UserError("--question: give at least two (one is asked cold, the rest warm)")
    try:
        figures = cli_latency.run(obj.resolve(), asked, today, echo=_stderr_echo if obj.json else click.echo)
    except RuntimeError as exc:
        raise UserError(str(exc)) from exc
    _finish(obj, "cli", figures, cli_latency.table(figures), results)


@bench.command("persona")
@common
@_METHOD
@click.option("--split", type=click.Choice(["train", "dev", "test"]), default="dev", show_default=True)
@click.option("--persona", "persona_id", default=None, help="One persona id (see the generator's list).")
@_LIMIT
@click.option("--scale", type=click.FloatRange(0.01, 1.0), default=1.0, show_default=True,
              help="Thin music, mail and TV to this share (smoke runs: the first retrieval index of a full "
                   "persona takes long to build).")
@click.option("--years", type=click.FloatRange(0.1, 10.0), default=None,
              help="Simulate only this many years (smoke runs); default: the persona's span.")
@_RESULTS
@_WORK
@click.pass_obj
def persona_cmd(obj: Ctx, method: str, split: str, persona_id: str | None, limit: int | None, scale: float,
                years: float | None, results: str, work_dir: str) -> None:
    """Answer quality (Hit@1, Rlx-Hit@1) and latency on generated personas."""
    from app.bench import persona as persona_bench

    try:
        figures = persona_bench.run(method, split=split, persona=persona_id, limit=limit, work_dir=Path(work_dir),
                                    results_dir=Path(results), echo=_stderr_echo, scale=scale, years=years)
    except persona_bench.BenchError as exc:
        raise UserError(str(exc)) from exc
    name = f"persona-{method}-{split}" + ("" if scale == 1.0 and years is None else "-small")
    _finish(obj, name, figures, persona_bench.table(figures), results)


@bench.command("fresh")
@common
@_METHOD
@click.option("--part", type=click.Choice(["train", "eval"]), default="eval", show_default=True,
              help="Which part of the fresh-phrasing set (eval is frozen and for measuring only).")
@_LIMIT
@click.option("--gold-only", is_flag=True, default=False,
              help="No store, no models: check every question's gold SQL runs and print the gold answers.")
@_RESULTS
@_WORK
@click.pass_obj
def fresh_cmd(obj: Ctx, method: str, part: str, limit: int | None, gold_only: bool, results: str,
              work_dir: str) -> None:
    """Answer quality and latency on questions written by hand, as people phrase
    them, over personas from new seeds (Hit@1, Rlx for amounts, per category)."""
    from app.bench import fresh as fresh_bench
    from app.bench import persona as persona_bench

    try:
        if gold_only:
            result = fresh_bench.gold_only(part=part, limit=limit, work_dir=Path(work_dir), echo=_stderr_echo)
        else:
            figures = fresh_bench.run(method, part=part, limit=limit, work_dir=Path(work_dir),
                                      results_dir=Path(results), echo=_stderr_echo)
    except persona_bench.BenchError as exc:
        raise UserError(str(exc)) from exc
    if not gold_only:
        _finish(obj, f"fresh-{part}-{method}", figures, fresh_bench.table(figures), results)
        return
    if obj.json:
        print_json(result)
    else:
        click.echo(fresh_bench.gold_table(result))
    if result["problems"]:
        raise UserError(f"{result['problems']} questions have a gold that does not fit their answer type")


@bench.command("rules")
@common
@click.option("--limit", type=click.IntRange(min=1), default=40, show_default=True,
              help="Questions per dev persona (the fresh train part is asked whole).")
@click.option("--persona", "personas", multiple=True, default=("p5", "p6"), show_default=True,
              help="Dev personas to ask (repeat the option for several).")
@click.option("--train-persona", "train_personas", multiple=True, default=("p1",), show_default=True,
              help="Train personas whose train-template questions are asked too.")
@_RESULTS
@_WORK
@click.pass_obj
def rules_cmd(obj: Ctx, limit: int, personas: tuple[str, ...], train_personas: tuple[str, ...], results: str,
              work_dir: str) -> None:
    """What each question-wording rule of the planner is worth: every plan run with
    every rule, with none and with all but each, on the fresh train part, the dev
    personas and a train persona (never the eval part or the test split)."""
    from app.bench import persona as persona_bench
    from app.bench import rules as rules_bench

    try:
        figures = rules_bench.run(limit=limit, personas=personas, train_personas=train_personas, work_dir=Path(work_dir),
                                  results_dir=Path(results), echo=_stderr_echo)
    except persona_bench.BenchError as exc:
        raise UserError(str(exc)) from exc
    _finish(obj, "rules", figures, rules_bench.table(figures), results)


@bench.command("retrieval")
@common
@click.option("--persona", "persona_id", default="p5", show_default=True,
              help="The persona to measure on (p5, p6: dev personas the classifiers never saw; "
                   "p7, p8: the test split, for release figures only).")
@click.option("--concepts", type=click.IntRange(min=1), default=40, show_default=True,
              help="How many queries: every kind of event, then values (sports, cuisines, people) at random.")
@click.option("--scale", type=click.FloatRange(0.01, 1.0), default=0.3, show_default=True,
              help="Thin music, mail and TV to this share.")
@click.option("--years", type=click.FloatRange(0.1, 10.0), default=1.0, show_default=True)
@_RESULTS
@_WORK
@click.pass_obj
def retrieval_cmd(obj: Ctx, persona_id: str, concepts: int, scale: float, years: float, results: str,
                  work_dir: str) -> None:
    """RETRIEVE's recall and precision against the generator's facts."""
    from app.bench import persona as persona_bench
    from app.bench import retrieval as retrieval_bench
    from models.registry import ModelMissing

    try:
        figures = retrieval_bench.run(persona=persona_id, concepts=concepts, work_dir=Path(work_dir), scale=scale,
                                      years=years, echo=_stderr_echo)
    except (persona_bench.BenchError, ModelMissing) as exc:
        raise UserError(str(exc)) from exc
    except StopIteration:
        raise UserError(f"unknown persona {persona_id!r}; see 'hindsight bench persona --help'") from None
    _finish(obj, f"retrieval-{persona_id}", figures, retrieval_bench.table(figures), results)


@bench.command("models")
@common
@_RESULTS
@click.pass_obj
def models_cmd(obj: Ctx, results: str) -> None:
    """Load time, added RSS and throughput of every model role, loaded one after another
    into one process, and the RSS of all of them together."""
    from models.benchmark import measure
    from models.registry import ModelMissing, ModelRegistry

    try:
        with ModelRegistry() as registry:
            figures = measure(registry, echo=_stderr_echo)
    except ModelMissing as exc:
        raise UserError(str(exc)) from exc
    rows = ["| role | load | RSS added | throughput |", "|---|---:|---:|---:|"]
    rows += [f"| {role} | {f['load_s']:.2f} s | {f['rss_added_mb']:,.0f} MB | {f['per_s']:,.1f} {f['unit']} |"
             for role, f in figures.items() if isinstance(f, dict)]
    rows.append(f"| all roles loaded | | {figures['all_loaded_rss_mb']:,.0f} MB RSS | |")
    _finish(obj, "models", figures, "\n".join(rows), results)


@bench.command("extractor")
@common
@_RESULTS
@click.pass_obj
def extractor_cmd(obj: Ctx, results: str) -> None:
    """Exact match of EXTRACT's answers per kind of value (names, places, products,
    categories ...), raw from the model and as EXTRACT makes them, on the dev examples
    (entities unseen in training) and the dev persona's events; and on dev examples set
    in long mails, read in passages as EXTRACT reads them and read whole."""
    from app.bench import extractor as extractor_bench
    from models.registry import ModelMissing, ModelRegistry

    try:
        with ModelRegistry() as registry:
            figures = extractor_bench.run(registry.extractor(), echo=_stderr_echo,
                                          segmenter=registry.on_first_use("segmenter"))
            figures["long_mails"] = extractor_bench.long_mails(
                registry.extractor(), registry.embedder(), segmenter=registry.on_first_use("segmenter"),
                echo=_stderr_echo)
    except ModelMissing as exc:
        raise UserError(str(exc)) from exc
    _finish(obj, "extractor", figures, extractor_bench.table(figures) + "\n\n"
            + extractor_bench.long_mail_table(figures["long_mails"]), results)


@bench.command("planner")
@common
@_LIMIT
@_RESULTS
@click.option("--busy", is_flag=True,
              help="Instead: the planner's threads fixed against paced, idle and beside a busy program.")
@click.pass_obj
def planner_cmd(obj: Ctx, limit: int | None, results: str, busy: bool) -> None:
    """Planner decoding: the same questions' plans written with and without guessed
    (drafted) tokens, time and forward passes side by side, and how many plans agree.
    With --busy: written with a fixed thread count and with the pacer that drops to one
    thread while another program holds a core, on this machine and beside a busy loop."""
    from app.bench import planner as planner_bench
    from models.registry import ModelMissing, ModelRegistry

    try:
        with ModelRegistry() as registry:
            if busy:
                figures = planner_bench.run_threads(registry, echo=_stderr_echo, limit=limit)
            else:
                figures = planner_bench.run(registry, echo=_stderr_echo, limit=limit)
    except ModelMissing as exc:
        raise UserError(str(exc)) from exc
    if busy:
        _finish(obj, "planner-threads", figures, planner_bench.threads_table(figures), results)
    else:
        _finish(obj, "planner", figures, planner_bench.table(figures), results)


@bench.command("timelineqa")
@common
@_METHOD
@click.option("--kind", type=click.Choice(["atomic", "multihop", "all"]), default="all", show_default=True)
@_LIMIT
@_RESULTS
@_WORK
@click.pass_obj
def timelineqa_cmd(obj: Ctx, method: str, kind: str, limit: int | None, results: str, work_dir: str) -> None:
    """TimelineQA's diary as Markdown notes: its 36 multi-hop and 100 atomic questions."""
    from app.bench import persona as persona_bench
    from app.bench import timelineqa as tqa_bench

    try:
        figures = tqa_bench.run(method, kind=kind, limit=limit, work_dir=Path(work_dir), results_dir=Path(results),
                                echo=_stderr_echo)
    except (persona_bench.BenchError, tqa_bench.TimelineQAError) as exc:
        raise UserError(str(exc)) from exc
    _finish(obj, f"timelineqa-{method}-{kind}", figures, persona_bench.table(figures), results)


@bench.command("chattree")
@common
@click.option("--shared", type=click.Path(file_okay=False), default=None,
              help="The folder holding data/multichallenge and data/chatgpt-export (default: ../shared).")
@click.option("--no-rebuild", is_flag=True, help="Skip timing the rebuild of the real ChatGPT export's trees.")
@_RESULTS
@click.pass_obj
def chattree_cmd(obj: Ctx, shared: str | None, no_rebuild: bool, results: str) -> None:
    """Chat trees: accuracy, precision, recall and F1 of each prompt's parent on MixMC
    dev/test and hand-annotated real ChatGPT conversations, beside the previous-turn
    baseline; ms per inserted turn; the real export's rebuild time."""
    from app.bench import chattree as chattree_bench
    from app.chattrees import ChatTreesUnavailable, real_models
    from models.registry import ModelRegistry

    try:
        with ModelRegistry() as registry:
            figures = chattree_bench.run(real_models(registry), echo=_stderr_echo, rebuild=not no_rebuild,
                                         shared=Path(shared) if shared else chattree_bench.DEFAULT_SHARED)
    except (ChatTreesUnavailable, chattree_bench.BenchDataMissing) as exc:
        raise UserError(str(exc)) from exc
    _finish(obj, "chattree", figures, chattree_bench.table(figures), results)


@bench.command("aqa")
@common
@click.option("--split", type=click.Choice(["dev", "eval", "fresh", "all"]), default="eval", show_default=True,
              help="dev: the questions to tune on; eval: the frozen generated ones; fresh: the frozen "
                   "hand-written ones (all: dev and eval).")
@click.option("--pooling", type=click.Choice(["max", "sum"]), default="max", show_default=True,
              help="How a conversation's scores over PROBE's queries are pooled.")
@click.option("--oracle", is_flag=True, help="Use the gold filters instead of the planner (an ablation).")
@click.option("--timing", type=click.IntRange(min=0), default=0, show_default=True,
              help="Also time the insights job from scratch on this many conversations (e.g. 1000).")
@_LIMIT
@_RESULTS
@_WORK
@click.pass_obj
def aqa_cmd(obj: Ctx, split: str, pooling: str, oracle: bool, timing: int, limit: int | None, results: str,
            work_dir: str) -> None:
    """Aggregative questions over chat logs (PROBE): NDCG@1/3/5/10 of ranked candidate
    answers beside a random ranking, time per answer and per conversation's attributes."""
    from app.bench import aqa as aqa_bench
    from models.registry import ModelMissing

    try:
        figures = aqa_bench.run(split=split, pooling=pooling, oracle=oracle, limit=limit, work_dir=Path(work_dir),
                                timing=timing, echo=_stderr_echo)
    except (aqa_bench.AQABenchError, ModelMissing) as exc:
        raise UserError(str(exc)) from exc
    name = f"aqa-{split}-{pooling}" + ("-oracle" if oracle else "")
    _finish(obj, name, figures, aqa_bench.table(figures), results)
