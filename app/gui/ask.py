"""The Ask pane: a chat over ``QuestionEngine.ask``. Shows what the engine is doing
while it works (its ``AskProgress`` messages), then an answer card: the answer in a
sentence, "N source events" (the evidence table), the plan tree with each
operator's rows and time. Earlier answers stay and are passed as ``history`` so a
follow-up ("and in 2023?") can build on them: the engine places each question in the
history's chat tree, the card says which question it followed, and its menu asks it
again following another one (or as a new question). When no engine can be made, the pane
shows the first-run screen instead; it never invents an answer.

The engine's search index is refreshed in the background once the engine is built
and after every import (``SearchIndexRefresher``); a line above the question box
shows its progress. A question asked meanwhile waits for it in view, with the
indexing progress, instead of hanging inside RETRIEVE."""
from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QFrame, QHBoxLayout, QHeaderView,
                               QLabel, QLineEdit, QMenu, QProgressBar, QPushButton, QScrollArea, QStackedWidget,
                               QTableView, QToolButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from app.gui import engine_factory as ef
from app.gui.event_detail import open_event_detail
from app.gui.first_run import FirstRunWidget
from app.gui.index_refresh import SLOW_STAGES, IndexProgress, SearchIndexRefresher
from app.gui.models import EvidenceModel
from app.gui.workers import Job, JobRunner, settle_heap

log = logging.getLogger(__name__)

EXAMPLES = ("Which artist did I listen to most in 2023?",
            "How many hours of Netflix did I watch last month?",
            "When did I last go running?")


def _fmt_ms(ms: float | None) -> str:
    if ms is None:
        return ""
    return f"{ms:,.0f} ms" if ms < 1000 else f"{ms / 1000:,.1f} s"


class ElidingLabel(QLabel):
    """One line that ends in "…" when the pane is narrow, the whole text in its
    tooltip. A plain label asks for its full width, so a long progress message
    ("Waiting for search to be ready: 1,200 of 3,755 new events prepared — about
    2 min left", a plan) would widen the window."""

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("…") * 4, super().minimumSizeHint().height())

    def paintEvent(self, _event) -> None:
        rect = self.contentsRect()
        text = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, rect.width())
        painter = QPainter(self)
        self.style().drawItemText(painter, rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                                  self.palette(), self.isEnabled(), text, QPalette.ColorRole.WindowText)


def _total_ms(timings: dict[str, float] | None) -> float | None:
    """The time the whole answer took. The engine reports ``total_ms`` beside its
    parts (planning, execution and each operator within it): never add them all up."""
    if not timings:
        return None
    if "total_ms" in timings:
        return timings["total_ms"]
    parts = [timings[k] for k in ("planning_ms", "execution_ms") if k in timings]
    return sum(parts) if parts else None


class EvidenceDialog(QDialog):
    """The events an answer was computed from, loaded page by page."""

    def __init__(self, store, runner: JobRunner, question: str, ids, parent: QWidget | None = None):
        super().__init__(parent)
        self.store, self.runner = store, runner
        self.setWindowTitle(f"{len(ids):,} source events")
        self.resize(900, 520)
        layout = QVBoxLayout(self)
        head = QLabel(f"<b>{len(ids):,} source events</b> for “{question}”")
        head.setWordWrap(True)
        head.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(head)
        hint = QLabel("Double-click an event to see its details and the original record.")
        hint.setObjectName("muted")
        layout.addWidget(hint)
        self.model = EvidenceModel(store, runner, ids, self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(24)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.table.setColumnWidth(0, 140)
        self.table.setColumnWidth(1, 170)
        self.table.setColumnWidth(2, 300)
        self.table.doubleClicked.connect(self.open_row)
        layout.addWidget(self.table, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def open_row(self, index) -> None:
        event_id = self.model.event_id(index.row())
        if event_id:
            open_event_detail(self, self.store, self.runner, event_id)


#: Earlier questions offered in an answer card's "follows" menu (most recent first).
FOLLOW_MENU_QUESTIONS = 12


def _quoted(question: str, limit: int = 60) -> str:
    return "“" + (question if len(question) <= limit else question[:limit - 1].rstrip() + "…") + "”"


class AnswerCard(QFrame):
    def __init__(self, answer, on_evidence: Callable[[object], None], progress_log: list[str],
                 parent: QWidget | None = None, *, earlier: list[str] | None = None,
                 on_follow_change: Callable[[object, int | None], None] | None = None,
                 on_suggestion: Callable[[str], object] | None = None):
        """``earlier``: the questions asked before this one (what it may follow);
        ``on_follow_change(answer, index or None)`` asks it again following another;
        ``on_suggestion(question)`` asks one of the questions a refusal offers."""
        super().__init__(parent)
        self.answer = answer
        self.setObjectName("answerCard")
        self.setProperty("failed", "false" if answer.ok else "true")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 10, 14, 10)
        self.follows_button: QToolButton | None = None
        if earlier:
            layout.addWidget(self._follows_row(answer, earlier, on_follow_change))
        self.text = QLabel(answer.answer_text or "(the engine gave no text)")
        self.text.setObjectName("answerText")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.text)
        read_as = getattr(answer, "read_as", "")
        self.read_as: QLabel | None = None
        if read_as:  # the days the question left open, as they were read: the user can check them
            self.read_as = QLabel(f"Read {read_as}.")
            self.read_as.setObjectName("muted")
            self.read_as.setWordWrap(True)
            self.read_as.setToolTip("A day named without its year is the latest such day up to the day you "
                                    "asked; “last Sunday” the latest Sunday before it. Say the year to mean "
                                    "another one.")
            layout.addWidget(self.read_as)
        self.suggestion_buttons: list[QPushButton] = []
        offered = list(getattr(answer, "suggestions", ()) or ())
        if offered:
            layout.addWidget(self._suggestions_row(offered, on_suggestion))

        row = QHBoxLayout()
        n = len(answer.evidence)
        self.evidence_button = QPushButton(f"{n:,} source event{'s' if n != 1 else ''}")
        self.evidence_button.setObjectName("link")
        self.evidence_button.setEnabled(n > 0)
        self.evidence_button.setToolTip("Open the events this answer was computed from" if n
                                        else "This answer rests on no stored events")
        self.evidence_button.clicked.connect(lambda: on_evidence(answer))
        row.addWidget(self.evidence_button)
        self.plan_button = QPushButton("Show plan ▸")
        self.plan_button.setObjectName("link")
        has_plan = answer.plan is not None or bool(answer.plan_text)
        self.plan_button.setEnabled(has_plan)
        # an answer that rests on nothing and ran no plan (an empty store, an empty question) has no links
        self.plan_button.setVisible(has_plan)
        self.evidence_button.setVisible(has_plan or n > 0)
        self.plan_button.setToolTip("How the answer was computed: each operator, its rows and its time")
        self.plan_button.clicked.connect(self.toggle_plan)
        row.addWidget(self.plan_button)
        row.addStretch(1)
        total_ms = _total_ms(answer.timings)
        facts = [f for f in (_fmt_ms(total_ms), f"{answer.llm_calls} model call{'s' if answer.llm_calls != 1 else ''}"
                             if answer.llm_calls else "") if f]
        fallback = getattr(answer, "fallback", "")
        if fallback:
            facts.append("planned twice")
        self.facts = QLabel(" · ".join(facts))
        self.facts.setObjectName("muted")
        if answer.timings or fallback:
            self.facts.setToolTip("\n".join([f"{k}: {_fmt_ms(v)}" for k, v in answer.timings.items()]
                                             + ([fallback[0].upper() + fallback[1:]] if fallback else [])))
        row.addWidget(self.facts)
        layout.addLayout(row)

        self.plan_tree = QTreeWidget()
        self.plan_tree.setHeaderLabels(["Operator", "Arguments", "Rows", "Time"])
        self.plan_tree.setColumnWidth(0, 200)
        self.plan_tree.setColumnWidth(1, 380)
        self.plan_tree.setColumnWidth(2, 80)
        if answer.plan is not None:
            self.plan_tree.addTopLevelItem(self._plan_item(answer.plan))
        elif answer.plan_text:
            for line in answer.plan_text.splitlines():
                self.plan_tree.addTopLevelItem(QTreeWidgetItem([line]))
        self.plan_tree.expandAll()
        self.plan_tree.hide()
        layout.addWidget(self.plan_tree)
        if progress_log:
            self.setToolTip("What the engine did:\n" + "\n".join(progress_log[-20:]))

    def _suggestions_row(self, offered: list[str], on_suggestion) -> QWidget:
        """ "Ask instead:" and a button per question the data can answer."""
        holder = QWidget()
        row = QVBoxLayout(holder)
        row.setContentsMargins(0, 4, 0, 0)
        label = QLabel("Ask instead:")
        label.setObjectName("muted")
        row.addWidget(label)
        for question in offered:
            button = QPushButton("→ " + question)
            button.setObjectName("link")
            button.setToolTip("Hindsight can answer this from your data; click to ask it")
            button.setEnabled(on_suggestion is not None)
            button.clicked.connect(lambda _=False, q=question: on_suggestion(q))
            row.addWidget(button, alignment=Qt.AlignmentFlag.AlignLeft)
            self.suggestion_buttons.append(button)
        return holder

    def _follows_row(self, answer, earlier: list[str], on_change) -> QWidget:
        """ "Follows “…” ▾": which earlier question this one was planned with, and a
        menu to ask it again following another one, or as a new question."""
        follows = getattr(answer, "follows", None)
        button = QToolButton()
        button.setObjectName("link")
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        button.setText(("Follows " + _quoted(earlier[follows]) if follows is not None and follows < len(earlier)
                        else "New question") + " ▾")
        button.setToolTip("Which earlier question this one was answered with as context. Choose another one "
                          "(or “New question”) to ask it again that way.")
        menu = QMenu(button)
        for i in list(range(len(earlier)))[::-1][:FOLLOW_MENU_QUESTIONS]:
            act = menu.addAction("Follows " + _quoted(earlier[i]))
            act.setCheckable(True)
            act.setChecked(i == follows)
            act.setEnabled(on_change is not None and i != follows)
            act.triggered.connect(lambda _=False, i=i: on_change(answer, i))
        menu.addSeparator()
        new = menu.addAction("New question")
        new.setCheckable(True)
        new.setChecked(follows is None)
        new.setEnabled(on_change is not None and follows is not None)
        new.triggered.connect(lambda _=False: on_change(answer, None))
        button.setMenu(menu)
        self.follows_button = button
        holder = QWidget()
        row = QHBoxLayout(holder)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(button)
        row.addStretch(1)
        return holder

    def _plan_item(self, step) -> QTreeWidgetItem:
        rows = "" if step.rows is None else f"{step.rows:,}"
        item = QTreeWidgetItem([step.operator, step.arguments, rows, _fmt_ms(step.ms)])
        item.setToolTip(1, step.arguments)
        tips = [f"status: {step.status}", *step.notes]
        item.setToolTip(0, "\n".join(tips))
        if step.status != "done":
            item.setText(0, f"{step.operator} ({step.status})")
        for child in step.children:
            item.addChild(self._plan_item(child))
        return item

    def count_plan_items(self) -> int:
        def count(item: QTreeWidgetItem) -> int:
            return 1 + sum(count(item.child(i)) for i in range(item.childCount()))
        return sum(count(self.plan_tree.topLevelItem(i)) for i in range(self.plan_tree.topLevelItemCount()))

    def toggle_plan(self) -> None:
        visible = self.plan_tree.isHidden()  # own state: the card itself may not be shown yet
        self.plan_tree.setVisible(visible)
        if visible:
            n = self.count_plan_items()
            self.plan_tree.setFixedHeight(min(360, 34 + 24 * n))
        self.plan_button.setText("Hide plan ▾" if visible else "Show plan ▸")


def _progress_row(button_text: str, tip: str, on_click) -> tuple[QWidget, QProgressBar, ElidingLabel, QPushButton]:
    """A hidden row of a progress bar, a line of text and a button."""
    row = QWidget()
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    bar = QProgressBar()
    bar.setFixedWidth(120)
    label = ElidingLabel()
    label.setObjectName("progressText")
    button = QPushButton(button_text)
    button.setToolTip(tip)
    button.clicked.connect(on_click)
    layout.addWidget(bar)
    layout.addWidget(label, 1)
    layout.addWidget(button)
    row.hide()
    return row, bar, label, button


class AskPane(QWidget):
    engine_ready = Signal()
    engine_unavailable = Signal(object)  # EngineUnavailable
    answered = Signal(object)  # Answer
    ask_failed = Signal(str)
    ask_cancelled = Signal()
    evidence_opened = Signal(object)  # EvidenceDialog

    PAGE_LOADING, PAGE_CHAT, PAGE_FIRST_RUN = range(3)

    def __init__(self, store, settings, runner: JobRunner, engine_factory=ef.make_engine,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.store, self.settings, self.runner = store, settings, runner
        self.engine_factory = engine_factory
        self.engine = None
        self.problem: ef.EngineUnavailable | None = None
        self.answers: list = []
        self._ask_job: Job | None = None
        self._engine_job: Job | None = None
        self._progress_log: list[str] = []
        self._pending_question: str | None = None  # asked while the engine loads
        self._waiting_question: str | None = None  # asked while the search index is refreshed
        self.indexer = SearchIndexRefresher(runner, self)
        self.indexer.progressed.connect(self._on_index_progress)
        self.indexer.finished.connect(self._on_index_finished)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.stack = QStackedWidget()
        outer.addWidget(self.stack)

        loading = QLabel("Starting the question engine…")
        loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        loading.setObjectName("muted")
        self.stack.addWidget(loading)

        chat = QWidget()
        chat_layout = QVBoxLayout(chat)
        self.scroll = QScrollArea()
        self.scroll.setObjectName("chat")
        self.scroll.setWidgetResizable(True)
        self.body = QWidget()
        self.body.setObjectName("chatBody")
        self.body_layout = QVBoxLayout(self.body)
        self.body_layout.setSpacing(10)
        self.welcome = self._make_welcome()
        self.body_layout.addWidget(self.welcome)
        self.body_layout.addStretch(1)
        self.scroll.setWidget(self.body)
        chat_layout.addWidget(self.scroll, 1)

        self.progress_row, self.busy, self.progress_label, self.cancel_button = _progress_row(
            "Cancel", "Stop answering (Esc)", self.cancel)
        self.busy.setRange(0, 0)
        chat_layout.addWidget(self.progress_row)

        # the background index refresh, while no question waits for it (then the row above says it)
        self.index_row, self.index_bar, self.index_label, self.index_stop = _progress_row(
            "Stop", "Stop preparing search for now; what is done is kept, and the rest is prepared before "
            "your next question", self.stop_indexing)
        chat_layout.addWidget(self.index_row)

        input_row = QHBoxLayout()
        self.question = QLineEdit()
        self.question.setPlaceholderText("Ask about your data — e.g. “Which artist did I listen to most in 2023?”")
        self.question.setToolTip("Ctrl+L focuses this box. Follow-ups like “and in 2022?” build on the "
                                 "previous answer.")
        self.question.setAcceptDrops(False)  # drops go to the window: they are imports
        self.question.returnPressed.connect(self.ask_from_box)
        self.ask_button = QPushButton("Ask")
        self.ask_button.setObjectName("primary")
        self.ask_button.clicked.connect(self.ask_from_box)
        input_row.addWidget(self.question, 1)
        input_row.addWidget(self.ask_button)
        chat_layout.addLayout(input_row)
        self.stack.addWidget(chat)

        self.first_run = FirstRunWidget(runner)
        self.first_run.retry_requested.connect(self.load_engine)
        self.stack.addWidget(self.first_run)

    def _make_welcome(self) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        title = QLabel("Ask your data")
        title.setObjectName("paneTitle")
        layout.addWidget(title)
        text = QLabel("Questions are answered on this computer from the events you imported. Every answer "
                      "links to the events it was computed from. Try:")
        text.setWordWrap(True)
        text.setObjectName("muted")
        layout.addWidget(text)
        for example in EXAMPLES:
            b = QPushButton(example)
            b.setObjectName("link")
            b.clicked.connect(lambda _=False, q=example: (self.question.setText(q), self.question.setFocus()))
            layout.addWidget(b)
        return box

    # ---- engine --------------------------------------------------------------------
    def load_engine(self) -> None:
        """Make the engine on a worker; afterwards show the chat or the first-run screen."""
        if self._engine_job is not None:
            return
        self.stack.setCurrentIndex(self.PAGE_LOADING)
        factory, store, settings = self.engine_factory, self.store, self.settings

        def make(_report, _cancel):
            try:
                return factory(store, settings)
            except ef.EngineUnavailable as exc:
                return exc  # an expected state, not a failure: the first-run screen shows it

        self._engine_job = self.runner.start("make engine", make, on_success=self._engine_made,
                                             on_failure=lambda msg: self._engine_made(
                                                 ef.EngineUnavailable(f"The question engine could not start: {msg}",
                                                                      ef.FAILED)))

    def _engine_made(self, result) -> None:
        self._engine_job = None
        if isinstance(result, ef.EngineUnavailable):
            self.engine, self.problem = None, result
            self.first_run.show_problem(result)
            self.stack.setCurrentIndex(self.PAGE_FIRST_RUN)
            self.engine_unavailable.emit(result)
            return
        old, self.engine, self.problem = self.engine, result, None
        if old is not None and old is not result:
            self.indexer.close_when_stopped(old, self._close_engine)
        self.stack.setCurrentIndex(self.PAGE_CHAT)
        settle_heap()  # the models stay loaded from now on
        self.engine_ready.emit()
        # events imported with 'hindsight import --no-index', or a refresh cut short last time
        self.refresh_index()
        if self._pending_question:
            question, self._pending_question = self._pending_question, None
            self.ask(question)

    @staticmethod
    def _close_engine(engine) -> None:
        try:
            engine.close()
        except Exception:  # noqa: BLE001 - closing must not stop the app
            log.exception("closing the question engine failed")

    def close_engine(self) -> None:
        """Stop the index refresh (it keeps what it finished) and close the engine."""
        if self.engine is not None:
            engine, self.engine = self.engine, None
            self.indexer.close_when_stopped(engine, self._close_engine)

    # ---- the search index ------------------------------------------------------------
    def refresh_index(self) -> None:
        """Index new events in the background (after an import, or once the engine is
        built); without an engine this waits for the one being built."""
        if self.engine is not None:
            self.indexer.refresh(self.engine)
            self._show_index_state()

    def stop_indexing(self) -> bool:
        if not self.indexer.cancel():
            return False
        self._show_index_state()
        return True

    def _on_index_progress(self, _p: IndexProgress) -> None:
        self._show_index_state()

    def _on_index_finished(self, _stats) -> None:
        if self._waiting_question is not None and not self.indexer.running:
            if self.engine is None:  # closed meanwhile: nothing can answer it
                self.cancel()
            else:
                question, self._waiting_question = self._waiting_question, None
                self._start_ask(question)
        self._show_index_state()

    def _show_index_state(self) -> None:
        """The refresh's progress: in the question's row while a question waits for
        it, else in its own row (which a refresh with nothing to do never shows)."""
        p = self.indexer.progress
        waiting = self._waiting_question is not None
        self.index_row.setVisible(p is not None and not waiting)
        bar = self.busy if waiting else self.index_bar
        if p is not None and p.stage in SLOW_STAGES and p.total:
            bar.setRange(0, p.total)
            bar.setValue(p.done)
        else:
            bar.setRange(0, 0)
        # the vectors stage counts the same events again: say it is the second pass
        tail = (" (second pass)" if p is not None and p.stage == "vectors" else "") + \
            (f" — {p.left}" if p is not None and p.left else "")
        if waiting:
            if p is None:
                text = "Waiting for search to be ready…"
            elif p.stage == "documents":
                text = f"Waiting for search to be ready: reading {p.total:,} new events…"
            else:
                text = f"Waiting for search to be ready: {p.done:,} of {p.total:,} new events prepared{tail}"
            self.progress_label.setText(text)
        elif p is not None:
            if self.indexer.stopping:
                text = "Stopping after the current batch…"
            elif p.stage == "documents":
                text = f"Preparing search for {p.total:,} new events…"
            else:
                text = f"Preparing search for new events: {p.done:,} of {p.total:,}{tail}"
            self.index_label.setText(text)
            self.index_stop.setEnabled(not self.indexer.stopping)

    # ---- asking --------------------------------------------------------------------
    @property
    def busy_asking(self) -> bool:
        return self._ask_job is not None or self._waiting_question is not None

    def focus_question(self) -> None:
        if self.stack.currentIndex() == self.PAGE_CHAT:
            self.question.setFocus(Qt.FocusReason.ShortcutFocusReason)
            self.question.selectAll()

    def ask_from_box(self) -> None:
        text = self.question.text().strip()
        if text and self.ask(text):
            self.question.clear()

    def ask(self, question: str) -> bool:
        """Start answering ``question``; False when the engine is busy or missing. If
        the engine is still loading, the question is asked once it is ready; if the
        search index is being refreshed, once that is done."""
        if self.busy_asking:
            return False
        if self.engine is None:
            if self._engine_job is not None:
                self._pending_question = question
                return True
            return False
        self.welcome.hide()
        self._add_widget(self._bubble(question))
        self._progress_log = []
        self.progress_row.show()
        self.ask_button.setEnabled(False)
        if self.indexer.running or self.indexer.stale:
            # RETRIEVE would refresh the index itself, out of sight: wait for it here, in view
            if self.indexer.stopping or not self.indexer.running:
                self.indexer.refresh(self.engine)
            if self.indexer.running:
                self._waiting_question = question
                self._show_index_state()
                return True
        self._start_ask(question)
        return True

    def ask_following(self, question: str, follows: int | None) -> bool:
        """Ask ``question`` again as a follow-up of the earlier answer ``follows`` (an
        index into ``answers``), or as a new question (None): the user's choice, which
        the new answer keeps for the questions after it."""
        if self.busy_asking or self.engine is None:
            return False
        self.welcome.hide()
        shown = _quoted(self.answers[follows].question) if follows is not None else "nothing before it"
        self._add_widget(self._bubble(question))
        self._add_widget(self._note(f"Asked again, following {shown}."))
        self._progress_log = []
        self.progress_row.show()
        self.ask_button.setEnabled(False)
        self._start_ask(question, follows=follows)
        return True

    def _change_follow(self, answer, follows: int | None) -> None:
        self.ask_following(answer.question, follows)

    def _start_ask(self, question: str, **chosen) -> None:
        """``chosen``: ``follows=`` when the user chose what the question follows."""
        self.busy.setRange(0, 0)
        self.progress_label.setText("Understanding the question…")
        engine, history = self.engine, tuple(self.answers)

        def run(report, cancel):
            return engine.ask(question, today=date.today(), history=history, progress=report, cancel=cancel,
                              **chosen)

        self._ask_job = self.runner.start("ask", run, on_progress=self._on_progress, on_success=self._on_answer,
                                          on_failure=self._on_failure, on_cancel=self._on_cancel,
                                          on_finish=self._on_finish)

    def cancel(self) -> bool:
        """Cancel the question being answered, or the one waiting for the index (the
        index refresh goes on: the next question needs it too)."""
        if self._waiting_question is not None:
            self._waiting_question = None
            self._on_cancel()
            self._on_finish()
            return True
        if self._ask_job is None:
            return False
        self._ask_job.cancel()
        self.progress_label.setText("Cancelling…")
        return True

    def _on_progress(self, p) -> None:
        message = getattr(p, "message", str(p))
        self._progress_log.append(message)
        self.progress_label.setText(message)

    def _on_answer(self, answer) -> None:
        earlier = [a.question for a in self.answers]
        self.answers.append(answer)
        self._add_widget(AnswerCard(answer, self.open_evidence, self._progress_log, earlier=earlier,
                                    on_follow_change=self._change_follow, on_suggestion=self.ask))
        self.answered.emit(answer)

    def _on_failure(self, message: str) -> None:
        self._add_widget(self._note(f"Hindsight could not answer this: {message}", error=True))
        self.ask_failed.emit(message)

    def _on_cancel(self) -> None:
        self._add_widget(self._note("Cancelled."))
        self.ask_cancelled.emit()

    def _on_finish(self) -> None:
        self._ask_job = None
        self.progress_row.hide()
        self.ask_button.setEnabled(True)
        self._show_index_state()

    def open_evidence(self, answer) -> EvidenceDialog:
        dialog = EvidenceDialog(self.store, self.runner, answer.question, answer.evidence, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.evidence_opened.emit(dialog)
        return dialog

    def cards(self) -> list[AnswerCard]:
        return self.body.findChildren(AnswerCard)

    # ---- layout helpers ----------------------------------------------------------
    def _add_widget(self, widget: QWidget) -> None:
        self.body_layout.insertWidget(self.body_layout.count() - 1, widget)
        QTimer.singleShot(0, lambda: self.scroll.verticalScrollBar().setValue(
            self.scroll.verticalScrollBar().maximum()))

    @staticmethod
    def _bubble(text: str) -> QWidget:
        holder = QWidget()
        row = QHBoxLayout(holder)
        row.setContentsMargins(80, 0, 0, 0)
        row.addStretch(1)
        label = QLabel(text)
        label.setObjectName("questionBubble")
        # a short question stays on one line; wrapping labels in a stretch layout get squeezed
        label.setWordWrap(len(text) > 90)
        label.setMaximumWidth(720)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row.addWidget(label)
        return holder

    @staticmethod
    def _note(text: str, error: bool = False) -> QLabel:
        label = QLabel(text)
        label.setWordWrap(True)
        label.setObjectName("error" if error else "muted")
        return label
