"""The main window: Ask, Sources and Timeline tabs, menus, shortcuts (Ctrl+O import,
Ctrl+L question box, Esc cancel), drop-anywhere importing, Settings and About.

It wires the panes together and owns the job runner; it holds no import, query or
answering logic of its own."""
from __future__ import annotations

import logging
from dataclasses import fields
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QMessageBox, QTabWidget, QWidget

from app.gui import engine_factory as ef
from app.gui.ask import AskPane
from app.gui.chats import ChatsPane
from app.gui.settings_dialog import SettingsDialog
from app.gui.index_refresh import SLOW_STAGES
from app.gui.insights import InsightsPane
from app.gui.sources import SourcesPane
from app.gui.timeline import TimelinePane
from app.gui.workers import JobRunner, settle_heap

log = logging.getLogger(__name__)

SHORTCUTS_HELP = """<table cellspacing="6">
<tr><td><b>Ctrl+O</b></td><td>Import export files (or drop them anywhere on the window)</td></tr>
<tr><td><b>Ctrl+Shift+O</b></td><td>Import a folder</td></tr>
<tr><td><b>Ctrl+L</b></td><td>Go to the question box</td></tr>
<tr><td><b>Esc</b></td><td>Cancel the running import or question</td></tr>
<tr><td><b>Ctrl+1 / 2 / 3 / 4 / 5</b></td><td>Ask, Sources, Timeline, Chats, Insights</td></tr>
<tr><td><b>Ctrl+,</b></td><td>Settings</td></tr>
</table>"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hindsight")
    except PackageNotFoundError:
        return "development"


class MainWindow(QMainWindow):
    events_counted = Signal(int)

    def __init__(self, store, settings, data_dir: Path, *, engine_factory=ef.make_engine,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.store, self.settings, self.data_dir = store, settings, Path(data_dir)
        self.setWindowTitle("Hindsight")
        self.resize(1180, 780)
        self.setAcceptDrops(True)
        self.runner = JobRunner(self)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(False)
        self.ask = AskPane(store, settings, self.runner, engine_factory)
        self.sources = SourcesPane(store, settings, self.runner)
        self.timeline = TimelinePane(store, settings, self.runner)
        self.chats = ChatsPane(store, self.runner)
        self.tabs.addTab(self.ask, "Ask")
        self.tabs.addTab(self.sources, "Sources")
        self.tabs.addTab(self.timeline, "Timeline")
        self.tabs.addTab(self.chats, "Chats")
        self.insights = InsightsPane(store, settings, self.runner, probe_factory=self._make_probe,
                                     updater=_update_insights)
        self.tabs.addTab(self.insights, "Insights")
        # a new Ask engine (another planner chosen in Settings) has new models: the
        # Insights tab's PROBE, which shares them, is made again from them when next asked
        self.ask.engine_ready.connect(self.insights.close_probe)
        self.tabs.setTabToolTip(self.tabs.indexOf(self.insights), "Topics of your chats over time, and questions "
                                                                  "across all of them (Ctrl+5)")
        self.tabs.setTabToolTip(0, "Ask questions about your data (Ctrl+1)")
        self.tabs.setTabToolTip(1, "Import exports and manage what was imported (Ctrl+2)")
        self.tabs.setTabToolTip(2, "Browse your events by day, week or month (Ctrl+3)")
        self.tabs.setTabToolTip(3, "Imported ChatGPT and Claude chats as trees of topics (Ctrl+4)")
        self.setCentralWidget(self.tabs)

        self.index_status = QLabel()
        self._index_note = ""  # the last "stopped"/"failed" message about the index
        self.index_status.setObjectName("muted")
        self.index_status.hide()
        self.statusBar().addPermanentWidget(self.index_status)
        self.event_count = QLabel()
        self.statusBar().addPermanentWidget(self.event_count)
        self.statusBar().showMessage(f"Data folder: {self.data_dir}")

        self.sources.data_changed.connect(self._data_changed)
        self.sources.status_message.connect(lambda m: self.statusBar().showMessage(m, 10_000))
        self.chats.status_message.connect(lambda m: self.statusBar().showMessage(m, 10_000))
        self.insights.status_message.connect(lambda m: self.statusBar().showMessage(m, 10_000))
        self.ask.first_run.planner_chosen.connect(self._planner_chosen)
        self.ask.indexer.progressed.connect(self._show_index_progress)
        self.ask.indexer.finished.connect(self._index_finished)
        self._build_menus()

    # ---- menus and shortcuts -----------------------------------------------------------
    def _action(self, text: str, slot, shortcut=None, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        if tip:
            action.setStatusTip(tip)
            action.setToolTip(tip)
        action.triggered.connect(slot)
        self.addAction(action)  # shortcuts work even while the menu bar is hidden
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self.import_action = self._action("&Import files…", self.sources.choose_and_import, QKeySequence.StandardKey.Open,
                                          "Import export files or zips")
        file_menu.addAction(self.import_action)
        file_menu.addAction(self._action("Import &folder…", self.sources.choose_folder_and_import, "Ctrl+Shift+O",
                                         "Import every export in a folder"))
        file_menu.addSeparator()
        file_menu.addAction(self._action("&Settings…", self.open_settings, "Ctrl+,",
                                         "Time zone, mail addresses, planner model, data folder"))
        file_menu.addSeparator()
        file_menu.addAction(self._action("&Quit", self.close, QKeySequence.StandardKey.Quit))

        ask_menu = bar.addMenu("&Ask")
        self.focus_action = self._action("&Focus the question box", self.focus_question, "Ctrl+L")
        ask_menu.addAction(self.focus_action)
        self.cancel_action = self._action("&Cancel the running job", self.cancel_running, Qt.Key.Key_Escape,
                                          "Stop the running import or question")
        ask_menu.addAction(self.cancel_action)
        ask_menu.addAction(self._action("Set up &models…", self.show_model_setup, tip="Build or locate the models"))

        view_menu = bar.addMenu("&View")
        for i, name in enumerate(("Ask", "Sources", "Timeline", "Chats", "Insights")):
            view_menu.addAction(self._action(name, lambda _=False, i=i: self.tabs.setCurrentIndex(i), f"Ctrl+{i + 1}"))

        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self._action("&Keyboard shortcuts", self.show_shortcuts, "F1"))
        help_menu.addAction(self._action("&About Hindsight", self.show_about))

    def focus_question(self) -> None:
        self.tabs.setCurrentWidget(self.ask)
        self.ask.focus_question()

    def cancel_running(self) -> bool:
        cancelled = self.sources.cancel_import()
        cancelled = self.ask.cancel() or cancelled
        cancelled = self.chats.cancel() or cancelled
        cancelled = self.insights.cancel() or cancelled
        if cancelled:
            self.statusBar().showMessage("Cancelling…", 5000)
        return cancelled

    def show_model_setup(self) -> None:
        self.tabs.setCurrentWidget(self.ask)
        self.ask.load_engine()

    def show_shortcuts(self) -> None:
        QMessageBox.information(self, "Keyboard shortcuts", SHORTCUTS_HELP)

    def show_about(self) -> None:
        QMessageBox.about(self, "About Hindsight",
                          f"<h3>Hindsight {_version()}</h3>"
                          "<p>Ask exact questions about your own data exports — offline. Every answer links to "
                          "the events it was computed from.</p>"
                          "<p>Nothing leaves this computer: imports, the event store and the models all stay "
                          f"here.</p><p>Data folder: <code>{self.data_dir}</code></p>")

    # ---- settings -------------------------------------------------------------------
    def open_settings(self) -> SettingsDialog:
        dialog = SettingsDialog(self.settings, self.data_dir, self)
        dialog.accepted.connect(lambda: self._settings_saved(dialog))
        dialog.open()
        return dialog

    def _settings_saved(self, dialog: SettingsDialog) -> None:
        new = dialog.result_settings
        if new is None:
            return
        planner_changed = new.planner_model != self.settings.planner_model
        for f in fields(new):  # update in place: every pane holds this same object
            setattr(self.settings, f.name, getattr(new, f.name))
        self.statusBar().showMessage("Settings saved.", 5000)
        self.timeline.apply_filter()
        if planner_changed and not self.ask.busy_asking:
            self.ask.load_engine()
        if dialog.data_dir_changed:
            QMessageBox.information(self, "Data folder", "Hindsight will use the new data folder the next time "
                                                         "it starts.")

    def _planner_chosen(self, path: str) -> None:
        self.settings.planner_model = path
        try:
            self.settings.save(self.data_dir)
        except OSError as exc:
            QMessageBox.warning(self, "Settings", f"Cannot save the settings in {self.data_dir}: {exc}")
        self.ask.load_engine()

    # ---- data -------------------------------------------------------------------------
    def start(self) -> None:
        """Load everything the window shows; all of it on workers."""
        self.ask.load_engine()
        self.sources.refresh()
        self.timeline.refresh()
        self.chats.refresh()
        self.chats.rebuild()  # trees of chats imported before they existed, or with older heads
        self.insights.refresh()
        self._count_events()
        settle_heap()

    def _data_changed(self) -> None:
        self.timeline.refresh()
        self.insights.update_insights(force=False)  # new chats get their topics; the pane refreshes after
        self._count_events()
        self.ask.refresh_index()
        self.chats.rebuild()

    def _show_index_progress(self, p) -> None:
        if self._index_note and self.statusBar().currentMessage() == self._index_note:
            self.statusBar().clearMessage()  # "stopped" is no longer true: it goes on
        self.index_status.setText(f"Preparing search: {p.done:,} of {p.total:,} new events" if p.stage in SLOW_STAGES
                                  else f"Preparing search: reading {p.total:,} new events")
        self.index_status.show()

    def _index_finished(self, stats) -> None:
        if self.ask.indexer.running:
            return  # a follow-up refresh goes on; its progress replaces this
        self.index_status.hide()
        if stats is None:
            if self.ask.indexer.last_error:
                self._index_note = f"Search could not be prepared for the new events: {self.ask.indexer.last_error}"
            elif self.ask.indexer.stale:
                self._index_note = "Search preparation stopped; the rest is prepared before your next question."
            else:
                return
            self.statusBar().showMessage(self._index_note, 15_000)
        elif stats.added or stats.encoded:
            self.statusBar().showMessage(f"Search is ready: {stats.added or stats.encoded:,} new events prepared "
                                         f"in {stats.seconds:,.0f} s.", 10_000)

    def _count_events(self) -> None:
        store = self.store
        self.runner.start("count events", lambda _r, _c: store.count(), long=False,
                          on_success=self._show_count)

    def _show_count(self, n: int) -> None:
        self.event_count.setText(f"{n:,} events")
        self.events_counted.emit(n)

    # ---- drag and drop anywhere on the window --------------------------------------------
    @staticmethod
    def _local_paths(event) -> list[str]:
        mime = event.mimeData()
        if not mime.hasUrls():
            return []
        return [u.toLocalFile() for u in mime.urls() if u.isLocalFile()]

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if self._local_paths(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:
        if self._local_paths(event):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = self._local_paths(event)
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        self.tabs.setCurrentWidget(self.sources)
        self.sources.import_paths(paths)

    # ---- closing -------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        if self.sources.importing:
            answer = QMessageBox.question(self, "Quit", "An import is running. Cancel it and quit? "
                                                        "The file being read is rolled back.")
            if answer != QMessageBox.StandardButton.Yes:
                event.ignore()
                return
        self.shutdown()
        event.accept()

    def shutdown(self) -> None:
        self.runner.cancel_all()
        self.sources.cancel_import()
        self.ask.cancel()
        if not self.runner.wait(30_000):
            log.warning("background jobs still running at exit")
        self.ask.close_engine()
        self.insights.close_probe()

    def _make_probe(self):
        """The Insights tab's PROBE, on the Ask engine's models where it has them: one
        planner in memory (2 GB), not one per tab."""
        from app.insights import build_probe

        return build_probe(self.store, self.settings, models=getattr(self.ask.engine, "models_registry", None))


def _update_insights(store, **kw):
    from app.insights import update_insights

    return update_insights(store, **kw)
