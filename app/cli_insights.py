"""``hindsight insights``: what your chat conversations are about, and aggregative
questions over them ("what did I ask about most this spring?").

Commands: ``update`` (infer the attributes, incremental), ``topics`` (the discovered
taxonomy with counts for a period), ``ask`` (PROBE: ranked values with counts, and
a ranking of candidate answers), ``rename`` (rename or merge a topic)."""
from __future__ import annotations

import sys
from datetime import date

import click

from app.errors import EXIT_USER, UserError
from app.shell import Ctx, common, print_json


@click.group("insights")
def insights() -> None:
    """Topics, keywords and aggregative questions over your chat conversations."""


def _date(value: str | None, option: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UserError(f"{option}: {value!r} is not a date (YYYY-MM-DD)") from None


def _progress(show: bool):
    def progress(stage: str, done: int, total: int) -> None:
        if show:
            click.echo(f"\r  {stage}: {done:,}/{total:,}", err=True, nl=done == total)
    return progress


@insights.command("update")
@common
@click.pass_obj
def update_cmd(obj: Ctx) -> None:
    """Infer summary, keywords, topic, subtopic, language and time of every chat
    conversation not done yet, then rediscover the topics."""
    from app.insights import update_insights

    store = obj.store()
    result = update_insights(store, progress=_progress(not obj.json and sys.stderr.isatty()))
    if obj.json:
        print_json({"conversations": result.conversations, "inferred": result.inferred, "topics": result.topics,
                    "subtopics": result.subtopics, "seconds": result.seconds})
    else:
        click.echo(f"{result.conversations:,} conversations ({result.inferred:,} inferred now): "
                   f"{result.topics} topics, {result.subtopics} subtopics in {result.seconds['total']:.1f} s")


@insights.command("topics")
@common
@click.option("--since", help="First local date (YYYY-MM-DD).")
@click.option("--until", help="Last local date (YYYY-MM-DD), inclusive.")
@click.pass_obj
def topics_cmd(obj: Ctx, since: str | None, until: str | None) -> int:
    """The topics of your conversations in a period, largest first, with subtopics and keywords."""
    from engine.insights import views

    period = views.Period(_date(since, "--since"), _date(until, "--until"))
    store = obj.store(read_only=True)
    if not views.has_insights(store):
        raise UserError("no conversation insights yet: import a ChatGPT or Claude export, "
                        "then run 'hindsight insights update'")
    found = views.topics(store, period)
    if obj.json:
        print_json({"since": period.since, "until": period.until, "topics": found})
        return 0
    if not found:
        click.echo("No conversations in this period.")
        return EXIT_USER
    for t in found:
        click.echo(f"{t['count']:5,}  {t['topic']}   ({', '.join(t['keywords'][i]['keyword'] for i in range(min(4, len(t['keywords']))))})")
        for s in t["subtopics"]:
            click.echo(f"{s['count']:11,}  {s['subtopic']}")
    return 0


@insights.command("ask")
@common
@click.argument("words", nargs=-1, required=True)
@click.option("--today", help="Fix 'today' for relative dates (YYYY-MM-DD); default: the real date.")
@click.option("--candidates", "with_candidates", is_flag=True,
              help="The words after the question are candidate answers to rank: ask \"QUESTION\" --candidates A B C.")
@click.pass_obj
def ask_cmd(obj: Ctx, words: tuple[str, ...], today: str | None, with_candidates: bool) -> int:
    """Answer an aggregative question ("what did I ask about most this spring?") with
    ranked values, their counts and the conversations behind each."""
    from app.insights import build_probe, close_probe
    from engine.insights.plan import ProbePlanError
    from engine.insights.probe import NoInsights

    question, *candidates = words
    if candidates and not with_candidates:
        raise UserError("put the question in quotes; candidate answers follow --candidates")
    if with_candidates and len(candidates) < 2:
        raise UserError("--candidates needs at least two candidate answers after the question")
    fixed = _date(today, "--today")
    store = obj.store(read_only=True)
    from engine.insights import views

    if not views.has_insights(store):
        raise UserError("no conversation insights yet: import a ChatGPT or Claude export, "
                        "then run 'hindsight insights update'")
    probe = build_probe(store, obj.settings())
    try:
        answer = probe.ask(question, today=fixed, candidates=candidates)
    except ProbePlanError as exc:
        raise UserError(f"could not plan {question!r}: {exc}") from exc
    except NoInsights as exc:
        raise UserError(str(exc)) from exc
    finally:
        close_probe(probe)
    if obj.json:
        print_json(answer.to_json())
        return 0
    if answer.note:
        click.echo(answer.note)
    for v in answer.answer:
        click.echo(f"{v.count:5,}  {v.value}")
    if answer.ranking is not None:
        click.echo("\nCandidates, best first: " + ", ".join(answer.ranking))
    f = answer.filters
    shown = {k: v for k, v in f.items() if v not in (None, [])}
    click.echo(f"\nCounted by {answer.plan.group_by} over {len(answer.evidence):,} conversations"
               + (f" ({', '.join(f'{k} {v}' for k, v in shown.items())})" if shown else "")
               + f"; searched for: {'; '.join(answer.plan.queries)}. Took {answer.timings['total_s']:.1f} s.")
    return 0


@insights.command("rename")
@common
@click.argument("topic")
@click.argument("new_name")
@click.pass_obj
def rename_cmd(obj: Ctx, topic: str, new_name: str) -> None:
    """Rename a topic or subtopic; giving it another topic's name merges the two."""
    from engine.insights.job import rename_topic

    try:
        n = rename_topic(obj.store(), topic, new_name)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    if obj.json:
        print_json({"renamed": n, "topic": topic, "name": new_name})
    else:
        click.echo(f"{topic!r} is now {new_name!r} ({n} cluster{'s' if n != 1 else ''}).")
