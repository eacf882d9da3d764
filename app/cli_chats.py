"""``hindsight chats``: imported ChatGPT and Claude conversations as trees of topics
(which earlier prompt each prompt follows up), built by ``engine.chattree``."""
from __future__ import annotations

import sys

import click

from app.errors import UserError
from app.shell import Ctx, common, local_time, print_json

LABEL_MARK = {"instruction": "ask", "information": "info", "polite": "polite"}


@click.group("chats")
def chats() -> None:
    """Imported chat conversations as trees: which prompt follows up which.

    \b
    hindsight chats list --search docker
    hindsight chats show CONVERSATION_ID
    hindsight chats turns --conversation CONVERSATION_ID --json
    """


def _reader(obj: Ctx):
    return obj.store(read_only=True).reader()


@chats.command("list")
@common
@click.option("--search", metavar="TEXT", help="Only conversations whose title, prompts or replies contain TEXT.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show at most N conversations.")
@click.pass_obj
def list_cmd(obj: Ctx, search: str | None, limit: int | None) -> None:
    """Conversations with their number of prompts and topics, newest first."""
    from engine.chattree import queries

    rows = queries.conversations(_reader(obj), search=search, limit=limit)
    if obj.json:
        print_json([{"conversation_id": r.conversation_id, "source": r.source, "title": r.title, "start": r.start,
                     "prompts": r.prompts, "topics": r.topics} for r in rows])
        return
    if not rows:
        click.echo("No chat trees yet: import a ChatGPT or Claude export (hindsight import PATH), "
                   "or build them with 'hindsight chats build'." if not search else f"No conversation mentions {search!r}.")
        return
    for r in rows:
        when = local_time(r.start, 0).strftime("%Y-%m-%d") if r.start else "          "
        click.echo(f"{r.conversation_id}  {when}  {r.source:<7} {r.prompts:>3} prompt{'' if r.prompts == 1 else 's'} "
                   f"{r.topics:>2} topic{'' if r.topics == 1 else 's'}  {r.title}")


def tree_lines(nodes) -> list[str]:
    """The conversation's forest as indented text: one line per prompt, follow-ups
    indented under the prompt they follow; edits of a prompt are marked as such."""
    from engine.chattree import queries

    lines: list[str] = []

    def walk(node, depth: int) -> None:
        notes = []
        if node.implicit_follow_up:
            notes.append("implicit follow-up")
        if node.branch_count > 1:
            notes.append(f"edit {node.branch_index} of {node.branch_count}")
        if node.response_count > 1:
            notes.append(f"{node.response_count} replies")
        if not node.on_current_path:
            notes.append("not on the shown branch")
        note = f"  ({'; '.join(notes)})" if notes else ""
        lines.append(f"{'    ' * depth}- [{LABEL_MARK.get(node.label, node.label)}] {node.snippet}{note}  #{node.node_id}")
        for child in node.children:
            walk(child, depth + 1)

    for i, root in enumerate(queries.forest(nodes), start=1):
        lines.append(f"Topic {i}")
        walk(root, 1)
    return lines


@chats.command("show")
@common
@click.argument("conversation_id")
@click.pass_obj
def show_cmd(obj: Ctx, conversation_id: str) -> None:
    """One conversation's tree: each topic with its follow-ups indented below."""
    from engine.chattree import queries

    nodes = queries.turns(_reader(obj), conversation_id)
    if not nodes:
        raise UserError(f"no chat tree for conversation {conversation_id!r}; see 'hindsight chats list'")
    if obj.json:
        print_json([{**n.to_json(), "reason": n.reason, "score": n.score, "prompt": n.snippet,
                     "event_id": n.event_id, "alternative": [n.branch_index, n.branch_count]} for n in nodes])
        return
    click.echo("\n".join(tree_lines(nodes)))


@chats.command("turns")
@common
@click.option("--conversation", "conversation_id", metavar="ID", help="Only this conversation's prompts.")
@click.pass_obj
def turns_cmd(obj: Ctx, conversation_id: str | None) -> None:
    """Every user prompt with the prompt it follows up (null: a new topic)."""
    from engine.chattree import queries

    nodes = queries.turns(_reader(obj), conversation_id)
    if conversation_id is not None and not nodes:
        raise UserError(f"no chat tree for conversation {conversation_id!r}; see 'hindsight chats list'")
    if obj.json:
        print_json([n.to_json() for n in nodes])
        return
    for n in nodes:
        click.echo(f"{n.conversation_id}  {n.node_id}  <- {n.parent_node_id or '(new topic)'}  "
                   f"{n.label}{' implicit' if n.implicit_follow_up else ''}")


@chats.command("build")
@common
@click.option("--force", is_flag=True, help="Rebuild every tree, not only those of new or changed conversations.")
@click.pass_obj
def build_cmd(obj: Ctx, force: bool) -> None:
    """Build the trees of imported conversations (imports do this by themselves)."""
    stats = build_trees(obj.store(), show=not obj.json and sys.stderr.isatty(), force=force)
    if obj.json:
        print_json({"conversations": stats.conversations, "built": stats.built, "unchanged": stats.unchanged,
                    "removed": stats.removed, "prompts": stats.turns, "seconds": round(stats.seconds, 2),
                    "ms_per_prompt": round(stats.ms_per_turn, 1)})
    else:
        click.echo(stats.summary().capitalize() + ".")


def build_trees(store, *, show: bool, force: bool = False, cancel=None):
    from app.chattrees import ChatTreesUnavailable, rebuild_chat_trees

    last = [0.0]

    def progress(done: int, total: int) -> None:
        import time

        now = time.monotonic()
        if show and total and (now - last[0] > 0.5 or done == total):
            last[0] = now
            click.echo(f"\r  building chat trees: {done:,}/{total:,} conversations", err=True, nl=done == total)

    try:
        return rebuild_chat_trees(store, progress=progress, cancel=cancel, force=force)
    except ChatTreesUnavailable as exc:
        raise UserError(str(exc)) from exc


def after_import(store, *, show: bool, quiet: bool, cancel=None) -> None:
    """Called by ``hindsight import`` when it added events: trees for new chats. A
    missing model is a warning here, not a failed import."""
    from app.chattrees import chats_need_building

    if not chats_need_building(store):
        return
    try:
        stats = build_trees(store, show=show, cancel=cancel)
    except UserError as exc:
        click.echo(f"warning: {exc}", err=True)
        return
    if not quiet:
        click.echo(stats.summary().capitalize() + ".", err=True)
