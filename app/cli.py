"""The ``hindsight`` command: a thin shell over the core.

Every command takes ``--json`` (machine-readable output on stdout) and
``--data-dir``. Exit codes: 0 success, 1 a user error (one-line message),
2 an internal error (message plus the log file with the traceback).
"""
from __future__ import annotations

import logging
import shlex
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import click

from app.errors import EXIT_INTERNAL, EXIT_USER, UserError
from app.shell import Ctx, common, event_json, local_time, print_json

log = logging.getLogger(__name__)


class HindsightGroup(click.Group):
    """Maps errors to the documented exit codes instead of click's defaults."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        obj = extra.pop("obj", None) or Ctx()
        try:
            rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                              standalone_mode=False, obj=obj, **extra)
            code = rv if isinstance(rv, int) else 0
        except click.exceptions.Exit as exc:
            code = exc.exit_code
        except click.ClickException as exc:  # usage errors, bad parameters
            click.echo(f"error: {exc.format_message()}", err=True)
            code = EXIT_USER
        except click.Abort:
            click.echo("aborted", err=True)
            code = EXIT_USER
        except UserError as exc:
            click.echo(f"error: {exc}", err=True)
            code = EXIT_USER
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            code = 130
        except Exception as exc:  # noqa: BLE001 - the edge: anything else is a bug report
            log.exception("internal error")
            where = obj.log_path or "the log"
            click.echo(f"internal error: {type(exc).__name__}: {exc} (details in {where})", err=True)
            code = EXIT_INTERNAL
        finally:
            obj.close()
        if standalone_mode:
            sys.exit(code)
        return code


@click.group(cls=HindsightGroup, context_settings={"help_option_names": ["-h", "--help"]},
             invoke_without_command=True, no_args_is_help=True)
@common
@click.option("-v", "--verbose", is_flag=True, help="Log debug messages to stderr.")
@click.option("--self-test", is_flag=True,
              help="Check this installation and exit: open the window (offscreen without a display), import a "
                   "small bundled export into a temporary store, answer a question, run every model once.")
@click.option("--self-test-timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              help="With --self-test: the most seconds to wait for the engine and for the answer.")
@click.version_option(package_name="hindsight")
@click.pass_context
def main(ctx: click.Context, verbose: bool, self_test: bool, self_test_timeout: float) -> int | None:
    """Hindsight: ask exact questions over your own data exports, offline.

    \b
    Start with:  hindsight import ~/Downloads/my_spotify_data.zip
    Then:        hindsight events --source spotify --limit 5
    Installed?   hindsight --self-test
    """
    obj: Ctx = ctx.obj
    obj.verbose = verbose
    if self_test:
        if ctx.invoked_subcommand is not None:
            raise UserError("--self-test runs alone; leave out the command")
        from app import selftest

        return selftest.cli(obj, self_test_timeout)
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
    return None


# ---- import ---------------------------------------------------------------------------
@main.command("import")
@common
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--importer", "only", metavar="NAME", help="Use this importer for every file (see 'hindsight doctor').")
@click.option("--no-index", is_flag=True, help="Skip updating the search index (the first question then does it).")
@click.pass_obj
def import_cmd(obj: Ctx, paths: tuple[str, ...], only: str | None, no_index: bool) -> int:
    """Import exports: files, folders or zips, in any mix."""
    from engine.ingest import import_paths
    from importers.registry import RegistryError, default_registry

    registry = default_registry()
    if only:
        try:
            registry.get(only)
        except RegistryError as exc:
            raise UserError(str(exc)) from exc
    context = obj.settings().import_context()
    store = obj.store()
    cancel = threading.Event()
    show_bar = not obj.json and sys.stderr.isatty()
    try:
        if show_bar:
            report = _import_with_progress(store, list(paths), registry, context, only, cancel)
        else:
            report = import_paths(store, list(paths), registry=registry, context=context, only=only, cancel=cancel)
    except KeyboardInterrupt:
        cancel.set()
        raise
    if report.added and not no_index and not cancel.is_set():
        from app.assemble import refresh_index

        summary = refresh_index(store, progress=_index_progress(show_bar), cancel=cancel)
        log.info("after import: %s", summary)
        if not obj.json:
            click.echo(summary.capitalize() + ".", err=True)
    if report.added and not cancel.is_set():
        from app.cli_chats import after_import

        after_import(store, show=show_bar, quiet=obj.json, cancel=cancel)
        _update_insights(obj, store, show_bar)
    if obj.json:
        print_json(report.to_json())
    else:
        _print_report(report)
    nothing = not any(f.status in ("imported", "already_imported") for f in report.files)
    if report.missing or report.failed or (nothing and (report.unrecognized or not report.files)):
        return EXIT_USER
    return 0


def _update_insights(obj: Ctx, store, show: bool) -> None:
    """Infer the attributes of newly imported chat conversations (topics, keywords ...)."""
    from app.insights import chats_without_insights, update_insights

    if not chats_without_insights(store):
        return
    def progress(stage: str, done: int, total: int) -> None:
        if show:
            click.echo(f"\r  chat insights: {stage} {done:,}/{total:,}", err=True, nl=done == total)

    try:
        result = update_insights(store, progress=progress)
    except UserError as exc:  # the import itself succeeded; say what is missing
        click.echo(f"warning: chat insights not updated: {exc}", err=True)
        return
    if not obj.json:
        click.echo(f"Chat insights: {result.conversations:,} conversations in {result.topics} topics.", err=True)


def _import_with_progress(store, paths, registry, context, only, cancel):
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from engine.ingest import import_paths

    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(),
                  TextColumn("{task.fields[events]} events"), TimeRemainingColumn(),
                  transient=False, console=None) as bar:
        tasks: dict[str, int] = {}

        def on_progress(p) -> None:
            tid = tasks.get(p.file)
            if tid is None:
                name = p.file if len(p.file) < 60 else "…" + p.file[-59:]
                tid = tasks[p.file] = bar.add_task(name, total=p.bytes_total, events=0)
            bar.update(tid, completed=p.bytes_done if p.stage != "file_done" else (p.bytes_total or p.bytes_done),
                       events=f"{p.events:,}")

        return import_paths(store, paths, registry=registry, context=context, only=only,
                            progress=on_progress, cancel=cancel)


def _index_progress(show: bool):
    if not show:
        return None
    import time

    last = [0.0]
    began: dict[str, tuple[float, int]] = {}  # stage -> (when, done) at its first report

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        since, first = began.setdefault(stage, (now, done))
        if now - last[0] > 1.0 or done == total:
            last[0] = now
            left = ""
            if now - since > 2 and done > first and done < total:  # a pace to tell the time left by
                left = f", about {_duration((total - done) * (now - since) / (done - first))} left"
            click.echo(f"\r  indexing for search: {stage} {done:,}/{total:,}{left}\033[K", err=True,
                       nl=done == total)
    return progress


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds} s" if seconds < 90 else f"{seconds // 60} min {seconds % 60:02d} s"


def _print_report(report) -> None:
    for f in report.files:
        if f.status == "imported":
            line = f"{f.path}: {f.added:,} added, {f.duplicates:,} duplicates, {f.skipped:,} skipped ({f.importer})"
        elif f.status == "already_imported":
            line = f"{f.path}: already imported ({f.message}); nothing added"
        else:
            line = f"{f.path}: {f.status}: {f.message}"
        click.echo(line)
        for issue in f.issues[:10]:
            click.echo(f"    {issue['locator']}: {issue['reason']}")
        if len(f.issues) > 10:
            click.echo(f"    … {len(f.issues) - 10} more (see 'hindsight imports --json')")
    for p in report.missing:
        click.echo(f"{p}: no such file or folder", err=True)
    for p in report.unrecognized:
        click.echo(f"{p}: not a format Hindsight knows; skipped (see 'hindsight doctor' for the formats)")
    for ig in report.ignored:
        click.echo(f"{ig['path']}: ignored ({ig['reason']})")
    click.echo(f"Total: {report.added:,} added, {report.duplicates:,} duplicates, {report.skipped:,} skipped "
               f"in {report.seconds:.1f} s")


# ---- imports (list / remove) ---------------------------------------------------------------
@main.group("imports", invoke_without_command=True)
@common
@click.pass_context
def imports_cmd(ctx: click.Context) -> None:
    """List imported files; 'hindsight imports remove ID' removes one and its events."""
    if ctx.invoked_subcommand is None:
        obj: Ctx = ctx.obj
        rows = obj.store(read_only=True).imports()
        if obj.json:
            print_json(rows)
            return
        if not rows:
            click.echo("Nothing imported yet.")
        for r in rows:
            click.echo(f"#{r['id']:<4} {r['finished_at']:%Y-%m-%d %H:%M}  {r['importer']:<18} "
                       f"{r['added']:>9,} events  {r['file']}")


@imports_cmd.command("remove")
@common
@click.argument("import_ids", nargs=-1, required=True, type=int)
@click.option("--yes", is_flag=True, help="Don't ask for confirmation.")
@click.pass_obj
def imports_remove(obj: Ctx, import_ids: tuple[int, ...], yes: bool) -> None:
    """Remove imports and exactly the events they brought."""
    from engine.store import StoreError

    store = obj.store()
    known = {r["id"]: r for r in store.imports()}
    for i in import_ids:
        if i not in known:
            raise UserError(f"no import #{i}; see 'hindsight imports'")
    if not yes and not obj.json:
        n = sum(known[i]["added"] for i in import_ids)
        click.confirm(f"Remove {len(import_ids)} import(s) and up to {n:,} events?", abort=True)
    removed = {}
    for i in import_ids:
        try:
            removed[i] = store.remove_import(i)
        except StoreError as exc:
            raise UserError(str(exc)) from exc
    if obj.json:
        print_json({"removed": [{"import_id": i, "events": n} for i, n in removed.items()]})
    else:
        for i, n in removed.items():
            click.echo(f"Removed import #{i} and {n:,} events.")


# ---- events / show ------------------------------------------------------------------------
def _parse_when(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise UserError(f"--{name}: {value!r} is not a date (use YYYY-MM-DD or YYYY-MM-DDTHH:MM)") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


@main.command("events")
@common
@click.option("--source", help="Only this source (spotify, netflix, mail, …).")
@click.option("--kind", help="Only this kind (music_stream, mail, workout, …).")
@click.option("--since", help="From this date/time (UTC), e.g. 2023-01-01.")
@click.option("--until", help="Before this date/time (UTC).")
@click.option("--search", help="Only events whose title or text contains this.")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True)
@click.pass_obj
def events_cmd(obj: Ctx, source, kind, since, until, search, limit) -> None:
    """List events in time order."""
    store = obj.store(read_only=True)
    rows = store.events(source=source, kind=kind, since=_parse_when(since, "since"),
                        until=_parse_when(until, "until"), search=search, limit=limit)
    if obj.json:
        print_json([event_json(r) for r in rows])
        return
    for r in rows:
        when = local_time(r["start"], r["tz_offset_min"])
        click.echo(f"{when:%Y-%m-%d %H:%M %z}  {r['source']:<8} {r['kind']:<15} {r['title'][:70]}  [{r['id']}]")
    if not rows:
        click.echo("No events match.")


@main.command("show")
@common
@click.argument("event_id")
@click.pass_obj
def show_cmd(obj: Ctx, event_id: str) -> None:
    """Show one event with its attributes and where it came from."""
    ev = obj.store(read_only=True).event(event_id)
    if ev is None:
        raise UserError(f"no event {event_id!r}")
    out = event_json(ev)
    out["provenance"] = {"import_id": ev["import_id"], "import_path": ev.get("import_path"),
                         "importer": ev.get("importer"), "file": ev["file"], "locator": ev["locator"],
                         "original": ev.get("raw")}
    if obj.json:
        print_json(out)
        return
    click.echo(f"{out['title']}\n{out['text']}\n")
    click.echo(f"  when:    {local_time(ev['start'], ev['tz_offset_min']):%Y-%m-%d %H:%M %z}"
               + (f" – {local_time(ev['end'], ev['tz_offset_min']):%H:%M}" if ev.get("end") else ""))
    click.echo(f"  source:  {ev['source']} / {ev['kind']}")
    for k, v in (ev["attributes"] or {}).items():
        click.echo(f"  {k}: {v}")
    click.echo(f"\n  from {ev['file']} ({ev['locator']}), import #{ev['import_id']} by {ev.get('importer')}")
    if ev.get("raw"):
        raw = ev["raw"] if len(ev["raw"]) < 2000 else ev["raw"][:2000] + " …"
        click.echo(f"  original record:\n{raw}")


# ---- ask ----------------------------------------------------------------------------
@main.command("ask")
@common
@click.argument("question")
@click.option("--today", help="Fix 'today' for relative dates (YYYY-MM-DD); default: the real date.")
@click.option("--no-cache", is_flag=True, help="Plan afresh even if this question was planned before.")
@click.option("--no-server", is_flag=True,
              help="Answer in this process; don't use or start the background process that keeps models loaded.")
@click.pass_obj
def ask_cmd(obj: Ctx, question: str, today: str | None, no_cache: bool, no_server: bool) -> int:
    """Answer a question over your events, with the plan and the evidence."""
    from datetime import date

    fixed = None
    if today:
        try:
            fixed = date.fromisoformat(today)
        except ValueError:
            raise UserError(f"--today: {today!r} is not a date (YYYY-MM-DD)") from None
    show = not obj.json and sys.stderr.isatty()

    def say(message: str) -> None:
        if show:
            click.echo(f"  {message}", err=True)

    answer = None
    if not no_server:
        from app import ask_server

        # the models stay loaded in a background process between questions (started
        # here when none runs); None: it could not answer, so this process does
        answer = ask_server.ask(obj.resolve(), question, today=fixed, no_cache=no_cache, progress=say)
    if answer is None:
        answer = _ask_here(obj, question, fixed, no_cache, say)
    if obj.json:
        print_json(answer)
    else:
        click.echo(answer["answer_text"])
        if answer.get("read_as"):
            click.echo(f"(Read {answer['read_as']}.)")
        offered = answer.get("suggestions") or []
        if offered:
            click.echo("\nQuestions your data can answer:")
            for q in offered:
                click.echo(f"  hindsight ask {shlex.quote(q)}")
        if answer.get("plan_text"):
            click.echo(f"\nPlan: {answer['plan_text']}")
        if answer.get("fallback"):
            click.echo(f"({answer['fallback']})")
        evidence = answer.get("evidence") or []
        if evidence:
            shown = ", ".join(evidence[:5]) + (" …" if len(evidence) > 5 else "")
            click.echo(f"Evidence: {len(evidence):,} events ({shown}); see 'hindsight show ID'")
        t = answer.get("timings")
        if t:
            click.echo(f"Took {t.get('total_ms', 0) / 1000:.1f} s "
                       f"(planning {t.get('planning_ms', 0) / 1000:.1f} s, {answer.get('llm_calls', 0)} LLM calls)")
    return 0 if answer["ok"] else EXIT_USER


def _ask_here(obj: Ctx, question: str, today, no_cache: bool, say) -> dict:
    from app.assemble import build_engine

    store = obj.store()
    if store.count() == 0:
        raise UserError("no events yet: import an export first ('hindsight import PATH')")
    engine = build_engine(store, obj.settings(), obj.resolve(), use_plan_cache=not no_cache)
    try:
        return engine.ask(question, today=today, progress=lambda p: say(p.message)).to_json()
    finally:
        engine.close()


# ---- settings --------------------------------------------------------------------------
@main.command("settings")
@common
@click.option("--home-timezone", help="IANA zone for sources without offsets, e.g. Europe/Berlin.")
@click.option("--own-address", "own_addresses", multiple=True, help="Your mail address (repeatable).")
@click.option("--planner-model", type=click.Path(dir_okay=False), help="A GGUF file to use as the planner.")
@click.pass_obj
def settings_cmd(obj: Ctx, home_timezone, own_addresses, planner_model) -> None:
    """Show or change settings."""
    from dataclasses import asdict

    from engine.settings import SettingsError

    s = obj.settings()
    changed = False
    if home_timezone is not None:
        s.home_timezone = home_timezone or None
        changed = True
    if own_addresses:
        s.own_addresses = list(own_addresses)
        changed = True
    if planner_model is not None:
        s.planner_model = planner_model or None
        changed = True
    if changed:
        try:
            s.home_tz()
        except SettingsError as exc:
            raise UserError(str(exc)) from exc
        s.save(obj.resolve())
    if obj.json:
        print_json(asdict(s))
    else:
        for k, v in asdict(s).items():
            click.echo(f"{k}: {v if v not in (None, []) else '(default)'}")


def _register_optional_commands() -> None:
    """Commands whose modules live beside this one; each is a real command."""
    from app import cli_app, cli_bench, cli_chats, cli_demo, cli_doctor, cli_insights, cli_models, cli_verify

    main.add_command(cli_doctor.doctor)
    main.add_command(cli_bench.bench)
    main.add_command(cli_models.models)
    main.add_command(cli_app.app)
    main.add_command(cli_demo.demo)
    main.add_command(cli_verify.verify)
    main.add_command(cli_chats.chats)
    main.add_command(cli_insights.insights)


_register_optional_commands()

if __name__ == "__main__":  # python -m app.cli
    main()
