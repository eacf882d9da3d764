"""The Insights pane: what your chat conversations are about, over time.

Charts of conversations per month by topic, a weekday x hour heat map, the top
topics and keywords of a chosen period, and an ask box for aggregative questions
("what did I ask about most this spring?") answered by PROBE as a ranked bar chart.
Every bar lists the conversations behind it below; double-click one to open it.

All reads, the insights job and PROBE run on workers (``JobRunner``); this pane only
draws what they return. ``probe_factory`` makes the PROBE answerer (loading models)
and is called on a worker the first time a question is asked."""
from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date, timedelta

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QGridLayout, QHBoxLayout, QHeaderView, QInputDialog,
                               QLabel, QLineEdit, QMessageBox, QPushButton, QSplitter, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from app.gui.charts import BarChart, HeatMap, MonthChart, WEEKDAY_SHORT
from app.gui.event_detail import open_event_detail
from app.gui.workers import Job, JobRunner

log = logging.getLogger(__name__)

PERIODS = ("All time", "Last 12 months", "This year", "Last year", "Last 3 months")
ASK_PLACEHOLDER = "Ask across all your chats, e.g. “What did I ask about most this spring?”"


def period_dates(name: str, today: date) -> tuple[date | None, date | None]:
    """[since, until] (inclusive) of a period named in ``PERIODS``."""
    if name == "Last 12 months":
        return today - timedelta(days=365), today
    if name == "Last 3 months":
        return today - timedelta(days=91), today
    if name == "This year":
        return date(today.year, 1, 1), today
    if name == "Last year":
        return date(today.year - 1, 1, 1), date(today.year - 1, 12, 31)
    return None, None


class InsightsPane(QWidget):
    status_message = Signal(str)

    def __init__(self, store, settings, runner: JobRunner, *, probe_factory: Callable[[], object] | None = None,
                 updater: Callable | None = None, today: Callable[[], date] = date.today,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.store, self.settings, self.runner = store, settings, runner
        self.probe_factory = probe_factory
        self.updater = updater
        self.today = today
        self.probe = None
        self._update_job: Job | None = None
        self._ask_job: Job | None = None
        self._load_job: Job | None = None
        self.overview: dict = {}

        self.period = QComboBox()
        self.period.addItems(PERIODS)
        self.period.setToolTip("The period the charts and lists count")
        self.period.currentIndexChanged.connect(lambda _i: self.refresh())
        self.update_button = QPushButton("Update insights")
        self.update_button.setToolTip("Infer topics, keywords and summaries of conversations not done yet")
        self.update_button.clicked.connect(lambda: self.update_insights())
        self.rename_button = QPushButton("Rename topic…")
        self.rename_button.setToolTip("Rename a topic; give it another topic's name to merge the two")
        self.rename_button.clicked.connect(self.rename_topic)
        self.status = QLabel()
        self.status.setObjectName("muted")
        top = QHBoxLayout()
        top.addWidget(QLabel("Period:"))
        top.addWidget(self.period)
        top.addWidget(self.update_button)
        top.addWidget(self.rename_button)
        top.addWidget(self.status, 1)

        self.question = QLineEdit()
        self.question.setPlaceholderText(ASK_PLACEHOLDER)
        self.question.returnPressed.connect(self.ask)
        self.ask_button = QPushButton("Ask")
        self.ask_button.clicked.connect(self.ask)
        ask_row = QHBoxLayout()
        ask_row.addWidget(self.question, 1)
        ask_row.addWidget(self.ask_button)
        self.answer_note = QLabel()
        self.answer_note.setWordWrap(True)
        self.answer_note.setObjectName("muted")

        self.months = MonthChart()
        self.heat = HeatMap()
        self.topics = BarChart("Top topics", empty="No topics yet: import a ChatGPT or Claude export.")
        self.keywords = BarChart("Top keywords", empty="No keywords yet.")
        self.answer = BarChart("Answer", empty="Ask a question above: the answer is a ranked list with counts.")
        grid = QGridLayout()
        grid.addWidget(self.months, 0, 0, 1, 2)
        grid.addWidget(self.heat, 0, 2)
        grid.addWidget(self.topics, 1, 0)
        grid.addWidget(self.keywords, 1, 1)
        grid.addWidget(self.answer, 1, 2)
        grid.setColumnStretch(0, 1); grid.setColumnStretch(1, 1); grid.setColumnStretch(2, 1)
        charts = QWidget()
        charts.setLayout(grid)

        self.list_title = QLabel("Click a bar to list its conversations.")
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["Date", "Title", "Topic", "Subtopic", "Summary"])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.table.doubleClicked.connect(self._open_row)
        below = QWidget()
        bl = QVBoxLayout(below)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.list_title)
        bl.addWidget(self.table)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(charts)
        split.addWidget(below)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(ask_row)
        layout.addWidget(self.answer_note)
        layout.addWidget(split, 1)

        self.topics.clicked.connect(self.show_conversations)
        self.keywords.clicked.connect(self.show_conversations)
        self.answer.clicked.connect(self.show_conversations)
        self.months.segment_clicked.connect(self._month_clicked)
        self.heat.cell_clicked.connect(self._cell_clicked)

    # ---- reading ---------------------------------------------------------------------
    def period_range(self) -> tuple[date | None, date | None]:
        return period_dates(self.period.currentText(), self.today())

    def refresh(self) -> Job:
        from engine.insights import views

        store, period = self.store, views.Period(*self.period_range())
        if self._load_job is not None:
            self._load_job.cancel()
        self._load_job = self.runner.start("insights overview", lambda _r, _c: views.overview(store, period),
                                           long=False, on_success=self._show, on_failure=self._failed)
        return self._load_job

    def _show(self, overview: dict) -> None:
        self.overview = overview
        topics = overview["topics"]
        names = [t["topic"] for t in topics]
        self.months.set_data(overview["per_month"], names)
        colours = {n: self.months.colour_of(n) for n in names}
        self.topics.set_bars([(t["topic"], t["count"], t["conversation_ids"]) for t in topics[:12]], colours)
        self.keywords.set_bars([(k["keyword"], k["count"], k["conversation_ids"]) for k in overview["keywords"]])
        self.heat.set_grid(overview["heat_map"])
        total = sum(t["count"] for t in topics)
        if not overview["has_insights"]:
            self.status.setText("No chat insights yet: import a ChatGPT or Claude export, then Update insights.")
        else:
            self.status.setText(f"{total:,} conversations in {len(topics)} topics")

    def _failed(self, message: str) -> None:
        self.status.setText(f"Could not read the insights: {message}")

    # ---- click-through ---------------------------------------------------------------
    def _month_clicked(self, month: str, topic: str) -> None:
        from engine.insights import views

        store, period = self.store, views.Period(*self.period_range())
        self.runner.start("month ids", lambda _r, _c: views.conversation_ids(store, period, month=month, topic=topic),
                          long=False, on_success=lambda ids: self.show_conversations(f"{month} · {topic}", ids))

    def _cell_clicked(self, weekday: int, hour: int) -> None:
        from engine.insights import views

        store, period = self.store, views.Period(*self.period_range())
        self.runner.start("cell ids", lambda _r, _c: views.conversation_ids(store, period, weekday=weekday, hour=hour),
                          long=False, on_success=lambda ids: self.show_conversations(
                              f"{WEEKDAY_SHORT[weekday]} {hour:02d}:00", ids))

    def show_conversations(self, label: str, ids: list) -> Job:
        from engine.insights import views

        store = self.store
        self.list_title.setText(f"{label}: {len(ids):,} conversations (double-click to open)")
        return self.runner.start("conversations", lambda _r, _c: views.conversations(store, list(ids)), long=False,
                                 on_success=self._fill_table)

    def _fill_table(self, rows: list[dict]) -> None:
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, value in enumerate((f"{row['date']} {row['hour']:02d}h", row["title"], row["topic"],
                                       row["subtopic"], row["summary"])):
                item = QTableWidgetItem(str(value or ""))
                item.setData(Qt.ItemDataRole.UserRole, row["id"])
                item.setToolTip(row["summary"])
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)

    def _open_row(self, index) -> None:
        event_id = self.table.item(index.row(), 0).data(Qt.ItemDataRole.UserRole)
        open_event_detail(self, self.store, self.runner, event_id)

    # ---- the insights job --------------------------------------------------------------
    def update_insights(self, force: bool = True) -> Job | None:
        """Run the insights job; without ``force`` only when some chats have none yet."""
        if self.updater is None or self._update_job is not None:
            return None
        store, updater = self.store, self.updater

        def work(report, cancel):
            return updater(store, progress=lambda stage, done, total: report((stage, done, total)),
                           cancelled=cancel.is_set, force=force)

        self.update_button.setEnabled(False)
        self.status.setText("Updating chat insights…")
        self._update_job = self.runner.start("chat insights", work, background=True, on_progress=self._progress,
                                             on_success=self._updated, on_failure=self._update_failed,
                                             on_cancel=lambda: self._update_failed("stopped; Update continues it"),
                                             on_finish=self._update_finished)
        return self._update_job

    def _progress(self, p) -> None:
        stage, done, total = p
        self.status.setText(f"Chat insights: {stage} {done:,} of {total:,}")

    def _updated(self, result) -> None:
        if result is None:  # nothing new to infer
            self.refresh()
            return
        self.status_message.emit(f"Chat insights: {result.conversations:,} conversations in {result.topics} topics.")
        if self.probe is not None:
            self.probe.refresh()
        self.refresh()

    def _update_failed(self, message: str) -> None:
        self.status.setText(f"Chat insights not updated: {message}")

    def _update_finished(self) -> None:
        self._update_job = None
        self.update_button.setEnabled(True)

    def cancel(self) -> bool:
        running = [j for j in (self._update_job, self._ask_job) if j is not None]
        for job in running:
            job.cancel()
        return bool(running)

    def rename_topic(self) -> None:
        names = [t["topic"] for t in self.overview.get("topics", [])]
        if not names:
            QMessageBox.information(self, "Rename topic", "There are no topics yet.")
            return
        current, ok = QInputDialog.getItem(self, "Rename topic", "Topic:", names, 0, False)
        if not ok:
            return
        new, ok = QInputDialog.getText(self, "Rename topic", f"New name for “{current}” (another topic's name "
                                                              "merges the two):", text=current)
        if not ok or not new.strip() or new.strip() == current:
            return
        from engine.insights.job import rename_topic

        store = self.store
        self.runner.start("rename topic", lambda _r, _c: rename_topic(store, current, new.strip()), long=False,
                          on_success=lambda _n: self.refresh(),
                          on_failure=lambda m: QMessageBox.warning(self, "Rename topic", m))

    # ---- asking ------------------------------------------------------------------------
    def ask(self) -> Job | None:
        question = self.question.text().strip()
        if not question or self._ask_job is not None:
            return None
        if self.probe_factory is None and self.probe is None:
            self.answer_note.setText("Answering needs the planner model: see Ask › Set up models.")
            return None
        pane, today = self, self.today()

        def work(_report, _cancel):
            if pane.probe is None:
                pane.probe = pane.probe_factory()
            return pane.probe.ask(question, today=today)

        self.ask_button.setEnabled(False)
        self.answer_note.setText("Thinking… (the first question loads the planner model)")
        self._ask_job = self.runner.start("insights question", work, on_success=self._answered,
                                          on_failure=lambda m: self.answer_note.setText(f"Could not answer: {m}"),
                                          on_cancel=lambda: self.answer_note.setText("Cancelled."),
                                          on_finish=self._ask_finished)
        return self._ask_job

    def _answered(self, answer) -> None:
        self.answer.title = f"Answer: by {answer.plan.group_by}"
        self.answer.set_bars([(v.value, v.count, v.conversation_ids) for v in answer.answer])
        f = {k: v for k, v in answer.filters.items() if v not in (None, [])}
        shown = ", ".join(f"{k.replace('_', ' ')} {', '.join(v) if isinstance(v, list) else v}" for k, v in f.items())
        self.answer_note.setText(
            (answer.note + " " if answer.note else "")
            + f"Counted over {len(answer.evidence):,} conversations" + (f" ({shown})" if shown else "")
            + f"; searched for: {'; '.join(answer.plan.queries)}. {answer.timings['total_s']:.1f} s.")

    def _ask_finished(self) -> None:
        self._ask_job = None
        self.ask_button.setEnabled(True)

    def close_probe(self) -> None:
        if self.probe is not None:
            from app.insights import close_probe

            close_probe(self.probe)
            self.probe = None
