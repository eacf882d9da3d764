"""The Timeline pane: browse events by day, week or month (or all time), by source,
with a text search. Periods are in the home time zone from Settings. Rows come from
``EventStore.events`` through the lazy ``TimelineModel``; this pane only turns the
controls into a filter."""
from __future__ import annotations

import logging
from datetime import date, datetime, time, timedelta, timezone

from PySide6.QtCore import QDate, Qt, QTimer, Signal
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QDateEdit, QHBoxLayout, QHeaderView, QLabel,
                               QLineEdit, QPushButton, QTableView, QVBoxLayout, QWidget)

from app.gui.event_detail import open_event_detail
from app.gui.models import TimelineModel
from app.gui.workers import JobRunner

log = logging.getLogger(__name__)

GRANULARITIES = ("Day", "Week", "Month", "All time")


def period_bounds(anchor: date, granularity: str) -> tuple[date, date] | None:
    """[first day, day after the last) of the period holding ``anchor``."""
    if granularity == "Day":
        return anchor, anchor + timedelta(days=1)
    if granularity == "Week":
        start = anchor - timedelta(days=anchor.weekday())
        return start, start + timedelta(days=7)
    if granularity == "Month":
        start = anchor.replace(day=1)
        nxt = (start + timedelta(days=32)).replace(day=1)
        return start, nxt
    return None


def shift(anchor: date, granularity: str, steps: int) -> date:
    if granularity == "Day":
        return anchor + timedelta(days=steps)
    if granularity == "Week":
        return anchor + timedelta(weeks=steps)
    if granularity == "Month":
        month = anchor.month - 1 + steps
        return date(anchor.year + month // 12, month % 12 + 1, 1)
    return anchor


def period_label(anchor: date, granularity: str) -> str:
    bounds = period_bounds(anchor, granularity)
    if bounds is None:
        return "All time"
    start, end = bounds
    if granularity == "Day":
        return f"{start:%A, %d %B %Y}"
    if granularity == "Week":
        last = end - timedelta(days=1)
        return f"Week {start.isocalendar().week}: {start:%d %b} – {last:%d %b %Y}"
    return f"{start:%B %Y}"


class TimelinePane(QWidget):
    page_shown = Signal(int, bool)  # rows loaded, complete

    def __init__(self, store, settings, runner: JobRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self.store, self.settings, self.runner = store, settings, runner
        self.anchor = date.today()
        self._anchor_set_by_user = False
        layout = QVBoxLayout(self)

        head = QHBoxLayout()
        title = QLabel("Timeline")
        title.setObjectName("paneTitle")
        head.addWidget(title)
        head.addStretch(1)
        self.count = QLabel()
        self.count.setObjectName("muted")
        head.addWidget(self.count)
        layout.addLayout(head)

        controls = QHBoxLayout()
        self.granularity = QComboBox()
        self.granularity.addItems(GRANULARITIES)
        self.granularity.setCurrentText("Month")
        self.granularity.setToolTip("Browse by day, week or month, or everything at once")
        self.prev_button = QPushButton("◀")
        self.prev_button.setToolTip("Previous period")
        self.prev_button.setFixedWidth(40)
        self.next_button = QPushButton("▶")
        self.next_button.setToolTip("Next period")
        self.next_button.setFixedWidth(40)
        self.period = QLabel()
        self.period.setMinimumWidth(240)
        self.period.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.date_edit = QDateEdit()
        self.date_edit.setCalendarPopup(True)
        self.date_edit.setDisplayFormat("yyyy-MM-dd")
        self.date_edit.setToolTip("Jump to a date")
        self.source = QComboBox()
        self.source.addItem("All sources", None)
        self.source.setMinimumWidth(140)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search titles and text…")
        self.search.setClearButtonEnabled(True)
        self.search.setAcceptDrops(False)
        for w in (self.granularity, self.prev_button, self.period, self.next_button, self.date_edit):
            controls.addWidget(w)
        controls.addSpacing(12)
        controls.addWidget(self.source)
        controls.addWidget(self.search, 1)
        layout.addLayout(controls)

        self.model = TimelineModel(store, runner, self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(24)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setColumnWidth(0, 140)
        self.table.setColumnWidth(1, 180)
        self.table.setColumnWidth(2, 380)
        self.table.setToolTip("Double-click an event for its details and where it came from")
        self.table.doubleClicked.connect(self._open_row)
        layout.addWidget(self.table, 1)

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(300)  # type, then search: not one query per keystroke
        self._search_timer.timeout.connect(self.apply_filter)
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.granularity.currentTextChanged.connect(lambda _t: self.apply_filter())
        self.source.currentIndexChanged.connect(lambda _i: self.apply_filter())
        self.prev_button.clicked.connect(lambda: self.move(-1))
        self.next_button.clicked.connect(lambda: self.move(1))
        self.date_edit.dateChanged.connect(self._date_picked)
        self.model.rows_loaded.connect(self._rows_loaded)
        self.model.loading_changed.connect(lambda busy: busy and self.count.setText("Loading…"))
        self.model.load_failed.connect(lambda msg: self.count.setText(f"Cannot read events: {msg}"))

    def _tz(self):
        from engine.settings import SettingsError

        try:
            return self.settings.home_tz()
        except SettingsError:
            return timezone.utc

    def move(self, steps: int) -> None:
        self._anchor_set_by_user = True
        self.set_anchor(shift(self.anchor, self.granularity.currentText(), steps))

    def _date_picked(self, qdate: QDate) -> None:
        picked = date(qdate.year(), qdate.month(), qdate.day())
        if picked != self.anchor:
            self._anchor_set_by_user = True
            self.set_anchor(picked)

    def set_anchor(self, anchor: date) -> None:
        self.anchor = anchor
        self.date_edit.blockSignals(True)
        self.date_edit.setDate(QDate(anchor.year, anchor.month, anchor.day))
        self.date_edit.blockSignals(False)
        self.apply_filter()

    def apply_filter(self) -> None:
        gran = self.granularity.currentText()
        bounds = period_bounds(self.anchor, gran)
        for w in (self.prev_button, self.next_button, self.date_edit):
            w.setEnabled(bounds is not None)
        self.period.setText(period_label(self.anchor, gran))
        since = until = None
        if bounds is not None:
            tz = self._tz()
            since = datetime.combine(bounds[0], time(), tzinfo=tz)
            until = datetime.combine(bounds[1], time(), tzinfo=tz)
        self.model.set_filter(source=self.source.currentData(), since=since, until=until,
                              search=self.search.text().strip() or None)

    def _rows_loaded(self, rows: int, complete: bool) -> None:
        self.count.setText(f"{rows:,} event{'s' if rows != 1 else ''}" if complete
                           else f"{rows:,}+ events (scroll for more)")
        self.page_shown.emit(rows, complete)

    def refresh(self) -> None:
        """Reload the source list (and, the first time, jump to the latest events)."""
        store = self.store

        def load(_report, _cancel):
            return store.sources()

        self.runner.start("timeline sources", load, long=False, on_success=self._sources_loaded,
                          on_failure=lambda msg: self.count.setText(f"Cannot read the sources: {msg}"))

    def _sources_loaded(self, rows: list[dict]) -> None:
        current = self.source.currentData()
        names = sorted({r["source"] for r in rows})
        self.source.blockSignals(True)
        self.source.clear()
        self.source.addItem("All sources", None)
        for name in names:
            self.source.addItem(name, name)
        index = self.source.findData(current)
        self.source.setCurrentIndex(max(0, index))
        self.source.blockSignals(False)
        if rows and not self._anchor_set_by_user:
            latest = max(r["last"] for r in rows).replace(tzinfo=timezone.utc).astimezone(self._tz())
            self.set_anchor(latest.date())
        else:
            self.apply_filter()

    def _open_row(self, index) -> None:
        event_id = self.model.event_id(index.row())
        if event_id:
            open_event_detail(self, self.store, self.runner, event_id)
