"""Qt item models over the event store: adapters that hold event ids (or a query)
and fetch rows in pages on a worker thread, never on the GUI thread.

``EvidenceModel`` shows a fixed list of event ids (an answer's evidence) in the
order the engine gave them; ``TimelineModel`` shows a filtered time range and loads
further pages as the view scrolls (``canFetchMore``/``fetchMore``). Neither holds
more than the pages that were looked at. They format rows; they decide nothing.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal

from app.gui.workers import JobRunner
from app.shell import local_time

log = logging.getLogger(__name__)

COLUMNS = ("Time (local)", "Source", "Title", "Details")
EVENT_ID_ROLE = Qt.ItemDataRole.UserRole + 1
_LOADING = "Loading…"


def format_when(ev: dict) -> str:
    start = ev.get("start")
    if start is None:
        return ""
    return f"{local_time(start, ev.get('tz_offset_min')):%Y-%m-%d %H:%M}"


def format_value(value: Any, limit: int = 40) -> str:
    if isinstance(value, float):
        text = f"{value:,.2f}".rstrip("0").rstrip(".")
    elif isinstance(value, (list, tuple)):
        text = ", ".join(str(v) for v in value)
    elif isinstance(value, datetime):
        text = value.isoformat(sep=" ", timespec="minutes")
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def key_attributes(ev: dict, count: int = 3) -> str:
    """The first few short attributes, the way a person would glance at them."""
    attrs = ev.get("attributes") or {}
    parts = []
    for key, value in attrs.items():
        if value in (None, "", [], {}) or isinstance(value, dict):
            continue
        parts.append(f"{key.replace('_', ' ')}: {format_value(value)}")
        if len(parts) == count:
            break
    return " · ".join(parts)


def _cell(ev: dict, column: int) -> str:
    if ev.get("_missing"):
        return ("", "", "(this event is no longer in the store)", "")[column]
    if column == 0:
        return format_when(ev)
    if column == 1:
        return f"{ev.get('source', '')} / {ev.get('kind', '')}"
    if column == 2:
        return ev.get("title") or (ev.get("text") or "")[:80]
    if ev.get("kind") == "note" and ev.get("text"):
        # a diary entry is what it says; a day's entries share their date as the title
        return format_value(_first_line(ev["text"]), 120)
    return key_attributes(ev)


def _first_line(text: str) -> str:
    """The first line of a note that is no heading."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip() and not ln.lstrip().startswith("#")]
    return lines[0] if lines else text.strip()


class _EventColumns(QAbstractTableModel):
    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def _row(self, row: int) -> dict | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def event_id(self, row: int) -> str | None:
        raise NotImplementedError

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        if role == EVENT_ID_ROLE:
            return self.event_id(index.row())
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        ev = self._row(index.row())
        if ev is None:
            return _LOADING if index.column() == 0 and role == Qt.ItemDataRole.DisplayRole else None
        if role == Qt.ItemDataRole.ToolTipRole:
            text = ev.get("text") or ""
            return f"{ev.get('title') or ''}\n{text[:400]}".strip() or None
        return _cell(ev, index.column())


class EvidenceModel(_EventColumns):
    """A fixed list of event ids; rows are fetched a page at a time when shown."""

    PAGE = 200
    page_loaded = Signal(int)

    def __init__(self, store, runner: JobRunner, ids: Sequence[str], parent=None):
        super().__init__(parent)
        self._store = store
        self._runner = runner
        self._ids = list(ids)
        self._pages: dict[int, list[dict]] = {}
        self._pending: set[int] = set()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._ids)

    def event_id(self, row: int) -> str | None:
        return self._ids[row] if 0 <= row < len(self._ids) else None

    def loaded_rows(self) -> int:
        return sum(len(p) for p in self._pages.values())

    def _row(self, row: int) -> dict | None:
        page = row // self.PAGE
        rows = self._pages.get(page)
        if rows is None:
            self._request(page)
            return None
        return rows[row - page * self.PAGE]

    def _request(self, page: int) -> None:
        if page in self._pending:
            return
        self._pending.add(page)
        wanted = self._ids[page * self.PAGE:(page + 1) * self.PAGE]
        store = self._store

        def fetch(_report, _cancel) -> list[dict]:
            found = {ev["id"]: ev for ev in store.events(ids=wanted)}
            # keep the engine's order; an id that vanished (import removed) stays visible
            return [found.get(i) or {"id": i, "_missing": True} for i in wanted]

        self._runner.start(f"evidence page {page}", fetch, long=False,
                           on_success=lambda rows, p=page: self._loaded(p, rows),
                           on_failure=lambda msg, p=page: self._failed(p, msg))

    def _loaded(self, page: int, rows: list[dict]) -> None:
        self._pending.discard(page)
        self._pages[page] = rows
        first = page * self.PAGE
        last = min(first + self.PAGE, len(self._ids)) - 1
        if last >= first:
            self.dataChanged.emit(self.index(first, 0), self.index(last, len(COLUMNS) - 1))
        self.page_loaded.emit(page)

    def _failed(self, page: int, message: str) -> None:
        self._pending.discard(page)
        log.warning("could not load evidence page %d: %s", page, message)


class TimelineModel(_EventColumns):
    """Events matching a filter, in time order, loaded a page at a time as the view
    scrolls. Changing the filter drops what was loaded and any answer still on its
    way for the old filter."""

    PAGE = 500
    loading_changed = Signal(bool)
    rows_loaded = Signal(int, bool)  # rows so far, complete
    load_failed = Signal(str)

    def __init__(self, store, runner: JobRunner, parent=None):
        super().__init__(parent)
        self._store = store
        self._runner = runner
        self._rows: list[dict] = []
        self._filter: dict[str, Any] | None = None
        self._generation = 0
        self._pending = False
        self._complete = True

    def set_filter(self, *, source: str | None = None, since: datetime | None = None,
                   until: datetime | None = None, search: str | None = None) -> None:
        self.beginResetModel()
        self._generation += 1
        self._rows = []
        self._filter = {"source": source or None, "since": since, "until": until, "search": search or None}
        self._pending = False
        self._complete = False
        self.endResetModel()
        self._fetch()

    def refresh(self) -> None:
        if self._filter is not None:
            self.set_filter(**self._filter)

    @property
    def complete(self) -> bool:
        return self._complete

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def event_id(self, row: int) -> str | None:
        return self._rows[row]["id"] if 0 <= row < len(self._rows) else None

    def _row(self, row: int) -> dict | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:
        return not parent.isValid() and not self._complete and not self._pending and self._filter is not None

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:
        if self.canFetchMore(parent):
            self._fetch()

    def _fetch(self) -> None:
        if self._filter is None or self._pending:
            return
        self._pending = True
        self.loading_changed.emit(True)
        generation, offset, flt, store, page = self._generation, len(self._rows), dict(self._filter), self._store, self.PAGE

        def fetch(_report, _cancel) -> list[dict]:
            return store.events(limit=page, offset=offset, **flt)

        self._runner.start("timeline page", fetch, long=False,
                           on_success=lambda rows, g=generation: self._loaded(g, rows),
                           on_failure=lambda msg, g=generation: self._failed(g, msg))

    def _loaded(self, generation: int, rows: list[dict]) -> None:
        if generation != self._generation:
            return  # an answer for a filter the user already left
        self._pending = False
        if rows:
            self.beginInsertRows(QModelIndex(), len(self._rows), len(self._rows) + len(rows) - 1)
            self._rows.extend(rows)
            self.endInsertRows()
        self._complete = len(rows) < self.PAGE
        self.loading_changed.emit(False)
        self.rows_loaded.emit(len(self._rows), self._complete)

    def _failed(self, generation: int, message: str) -> None:
        if generation != self._generation:
            return
        self._pending = False
        self._complete = True
        self.loading_changed.emit(False)
        self.load_failed.emit(message)
