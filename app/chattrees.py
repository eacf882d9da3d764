"""The chat trees with the real models: the shells (CLI import, ``hindsight chats``,
the GUI's Chats tab and Ask pane) build :class:`engine.chattree.ChatTreeModels` here,
from the registry's MiniLM embedder and spaCy segmenter and the committed heads."""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class ChatTreesUnavailable(RuntimeError):
    """A model the chat trees need is missing; the message says how to fix it."""


def heads():
    """The committed, verified chat-tree heads."""
    from models.runtime.chattree_heads import HeadsMismatch, NumpyChatTurnHeads

    try:
        return NumpyChatTurnHeads.load()
    except (HeadsMismatch, FileNotFoundError) as exc:
        raise ChatTreesUnavailable(f"chat trees cannot be built: {exc}") from exc


def real_models(registry, loaded_heads=None):
    """``ChatTreeModels`` from ``registry`` (a ``models.registry.ModelRegistry``)."""
    from engine.chattree import ChatTreeModels
    from models.registry import ModelMissing

    found = loaded_heads or heads()
    try:
        return ChatTreeModels(segmenter=registry.segmenter(), embedder=registry.embedder(), heads=found)
    except ModelMissing as exc:
        raise ChatTreesUnavailable(f"chat trees cannot be built: {exc}") from exc


def rebuild_chat_trees(store, *, progress=None, cancel=None, registry=None, force: bool = False):
    """Bring the imported conversations' trees up to date; returns
    ``engine.chattree.tables.RebuildStats``. Raises :class:`ChatTreesUnavailable`."""
    from engine.chattree import tables
    from models.registry import ModelRegistry

    found = heads()
    if not force and not tables.pending(store, found.version):  # up to date: no model is loaded
        return tables.rebuild(store, _NoModels(found), progress=progress, cancel=cancel)
    own = registry is None
    registry = registry or ModelRegistry()
    try:
        return tables.rebuild(store, real_models(registry, found), progress=progress, cancel=cancel, force=force)
    finally:
        if own:
            registry.close()


def chats_need_building(store) -> bool:
    """Whether any chat conversation is in the store (cheap: no model is loaded)."""
    from engine.chattree.conversations import CHAT_SOURCES

    con = store.reader()
    return bool(con.execute(f"SELECT count(*) FROM events WHERE kind = 'chat_conversation' AND source IN "
                            f"({', '.join('?' * len(CHAT_SOURCES))}) LIMIT 1", list(CHAT_SOURCES)).fetchone()[0])


class _NoModels:
    """Stands in for ``ChatTreeModels`` when nothing is to be built: a rebuild then
    reads only the heads' version; touching a model is a bug."""

    def __init__(self, found):
        self.heads = found

    def __getattr__(self, name):
        raise AttributeError(f"no model is loaded for an up-to-date rebuild (asked for {name!r})")
