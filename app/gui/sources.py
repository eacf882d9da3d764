"""The Sources pane: import exports (drop or Ctrl+O) with one progress bar per file,
the import report, the list of sources with counts and date ranges, and removing an
import. The import itself is ``engine.ingest.import_paths`` running on a worker;
removal is ``EventStore.remove_import``. This pane only shows and asks."""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QFileDialog, QFrame, QHBoxLayout, QLabel, QMessageBox, QProgressBar, QPushButton,
                               QScrollArea, QSplitter, QStyle, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from app.gui.workers import Job, JobRunner

log = logging.getLogger(__name__)

MAX_ISSUES_SHOWN = 200
_STATUS_WORDS = {"imported": "imported", "already_imported": "already imported", "failed": "failed",
                 "cancelled": "cancelled", "empty": "empty file"}


@dataclass
class _DropJob:
    """One drop (or Ctrl+O): each dropped path has its own cancel event, so a file's
    ✕ stops that path (the others go on) and Esc stops them all."""

    paths: list[str]
    cancels: list[threading.Event] = field(default_factory=list)
    job: Job | None = None


class FileProgressRow(QFrame):
    def __init__(self, name: str, on_cancel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("fileProgress")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        self.name = QLabel(_short(name, 70))
        self.name.setToolTip(name)
        self.name.setMinimumWidth(260)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)
        self.bar.setMinimumWidth(180)
        self.detail = QLabel("waiting…")
        self.detail.setObjectName("progressText")
        self.detail.setMinimumWidth(170)
        # a standard icon: a "✕" glyph is missing from some fonts and showed as a dot
        self.cancel = QPushButton(self.style().standardIcon(QStyle.StandardPixmap.SP_DialogCancelButton), "")
        self.cancel.setFixedWidth(32)
        self.cancel.setToolTip("Cancel this import (files already finished stay imported)")
        self.cancel.setAccessibleName("Cancel this file's import")
        self.cancel.clicked.connect(on_cancel)
        layout.addWidget(self.name, 3)
        layout.addWidget(self.bar, 2)
        layout.addWidget(self.detail, 2)
        layout.addWidget(self.cancel)

    def update_progress(self, p) -> None:
        if p.bytes_total:
            self.bar.setRange(0, 1000)
            self.bar.setValue(min(1000, int(1000 * p.bytes_done / p.bytes_total)))
        if p.stage == "file_done":
            self.bar.setRange(0, 1000)
            self.bar.setValue(1000)
            self.detail.setText(f"{p.events:,} records read")
        else:  # the importer in the tooltip: its name cut the count off in a narrow window
            self.detail.setText(f"{p.events:,} records")
            self.detail.setToolTip(f"read by the {p.importer} importer")

    def finish(self, status: str, text: str) -> None:
        self.cancel.setEnabled(False)
        if self.bar.maximum() == 0:
            self.bar.setRange(0, 1000)
            self.bar.setValue(1000 if status == "imported" else 0)
        self.detail.setText(text)


def _display_name(file: str) -> str:
    """The file's name, with its archive when it came from one: "export.zip › a.json"."""
    parts = file.replace("\\", "/").split("/")
    archives = [p for p in parts[:-1] if p.lower().endswith(".zip")]
    return " › ".join([*archives[-1:], parts[-1]])


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


class SourcesPane(QWidget):
    """Emits ``data_changed`` after an import or a removal changed the store."""

    data_changed = Signal()
    import_finished = Signal(object)  # the ImportReport
    import_started = Signal()
    removal_finished = Signal(int, int)  # import id, events removed
    status_message = Signal(str)

    def __init__(self, store, settings, runner: JobRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self.store = store
        self.settings = settings
        self.runner = runner
        self._current: _DropJob | None = None
        self._queue: list[list[str]] = []
        self._rows: dict[str, tuple[int, FileProgressRow]] = {}
        self.last_report = None

        outer = QVBoxLayout(self)
        head = QHBoxLayout()
        title = QLabel("Sources")
        title.setObjectName("paneTitle")
        head.addWidget(title)
        head.addStretch(1)
        self.import_button = QPushButton("Import…")
        self.import_button.setObjectName("primary")
        self.import_button.setToolTip("Import export files, folders or zips (Ctrl+O). You can also drop them "
                                      "anywhere on the window.")
        self.import_button.clicked.connect(self.choose_and_import)
        self.cancel_button = QPushButton("Cancel import")
        self.cancel_button.setToolTip("Stop the running import (Esc). The file being read is rolled back; "
                                      "files already finished stay.")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel_import)
        head.addWidget(self.cancel_button)
        head.addWidget(self.import_button)
        outer.addLayout(head)

        self.drop_hint = QLabel("Drop your exports anywhere on this window — Spotify, Netflix, mail (mbox), "
                                "calendars (.ics), Amazon, Apple Health, Strava, Garmin, Google Takeout, journals, "
                                "ChatGPT and Claude — as files, folders or zips. Or press Ctrl+O.")
        self.drop_hint.setObjectName("dropHint")
        self.drop_hint.setWordWrap(True)
        self.drop_hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        outer.addWidget(self.drop_hint)

        splitter = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        self.progress_area = QWidget()
        self.progress_layout = QVBoxLayout(self.progress_area)
        self.progress_layout.setContentsMargins(0, 0, 0, 0)
        self.progress_layout.setSpacing(4)
        self.progress_layout.addStretch(1)
        self.progress_scroll = QScrollArea()
        self.progress_scroll.setWidgetResizable(True)
        self.progress_scroll.setWidget(self.progress_area)
        self.progress_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.progress_scroll.setMaximumHeight(170)
        self.progress_scroll.hide()
        top_layout.addWidget(self.progress_scroll)
        self.summary = QLabel("Nothing imported in this session yet.")
        self.summary.setObjectName("muted")
        self.summary.setWordWrap(True)
        top_layout.addWidget(self.summary)
        self.report_tree = QTreeWidget()
        self.report_tree.setHeaderLabels(["File", "Result", "Added", "Duplicates", "Skipped"])
        self.report_tree.setToolTip("What the last import did, per file; expand a file to see each skipped "
                                    "record and why")
        self.report_tree.setAlternatingRowColors(True)
        self.report_tree.setColumnWidth(0, 420)
        self.report_tree.setColumnWidth(1, 200)
        top_layout.addWidget(self.report_tree, 1)
        splitter.addWidget(top)

        lists = QWidget()
        lists_layout = QHBoxLayout(lists)
        lists_layout.setContentsMargins(0, 0, 0, 0)
        left = QVBoxLayout()
        left.addWidget(QLabel("<b>Your sources</b>"))
        self.sources_tree = QTreeWidget()
        self.sources_tree.setHeaderLabels(["Source", "Events", "From", "To"])
        self.sources_tree.setAlternatingRowColors(True)
        self.sources_tree.setColumnWidth(0, 200)
        left.addWidget(self.sources_tree)
        right = QVBoxLayout()
        imports_head = QHBoxLayout()
        imports_head.addWidget(QLabel("<b>Imports</b>"))
        imports_head.addStretch(1)
        self.remove_button = QPushButton("Remove import…")
        self.remove_button.setToolTip("Remove the selected import and exactly the events it brought "
                                      "(events another import also has stay)")
        self.remove_button.setEnabled(False)
        self.remove_button.clicked.connect(self.remove_selected)
        imports_head.addWidget(self.remove_button)
        right.addLayout(imports_head)
        self.imports_tree = QTreeWidget()
        self.imports_tree.setHeaderLabels(["#", "File", "Importer", "Events", "Imported"])
        self.imports_tree.setRootIsDecorated(False)
        self.imports_tree.setAlternatingRowColors(True)
        self.imports_tree.setColumnWidth(0, 36)
        self.imports_tree.setColumnWidth(1, 220)
        self.imports_tree.setColumnWidth(2, 120)
        self.imports_tree.setColumnWidth(3, 60)
        self.imports_tree.itemSelectionChanged.connect(
            lambda: self.remove_button.setEnabled(bool(self.imports_tree.selectedItems())))
        right.addWidget(self.imports_tree)
        lists_layout.addLayout(left, 1)
        lists_layout.addLayout(right, 1)
        splitter.addWidget(lists)
        splitter.setSizes([300, 300])
        outer.addWidget(splitter, 1)

    # ---- importing ------------------------------------------------------------------
    @property
    def importing(self) -> bool:
        return self._current is not None

    def choose_and_import(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Import exports", str(Path.home()),
                                                "Exports (*.zip *.json *.csv *.mbox *.ics *.xml *.gpx *.fit *.txt *.md);;"
                                                "All files (*)")
        if files:
            self.import_paths(files)

    def choose_folder_and_import(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Import a folder of exports", str(Path.home()))
        if folder:
            self.import_paths([folder])

    def import_paths(self, paths: list[str]) -> None:
        if not paths:
            return
        if self._current is not None:
            self._queue.append(list(paths))
            self.status_message.emit(f"Queued {len(paths)} item(s); they import when the current import ends.")
            return
        from engine.ingest import ImportReport, import_paths
        from engine.settings import SettingsError

        try:
            context = self.settings.import_context()
        except SettingsError as exc:
            QMessageBox.warning(self, "Settings", f"{exc}. Fix it in Settings, then import again.")
            return
        drop = _DropJob(list(paths), [threading.Event() for _ in paths])
        self._clear_progress()
        store = self.store

        def run(report, cancel: threading.Event):
            total = ImportReport()
            for i, (path, own_cancel) in enumerate(zip(drop.paths, drop.cancels)):
                if cancel.is_set():
                    own_cancel.set()
                part = import_paths(store, [path], context=context, cancel=own_cancel,
                                    progress=lambda p, i=i: report((i, p)))
                total.files += part.files
                total.unrecognized += part.unrecognized
                total.ignored += part.ignored
                total.missing += part.missing
                total.seconds += part.seconds
            return total

        self._current = drop
        self.cancel_button.setEnabled(True)
        self.summary.setText(f"Importing {len(paths)} item(s)…")
        self.progress_scroll.show()
        self.import_started.emit()
        drop.job = self.runner.start("import", run, background=True, on_progress=self._on_progress,
                                     on_success=self._on_report, on_failure=self._on_import_failed,
                                     on_cancel=lambda: self._on_import_failed("cancelled"),
                                     on_finish=self._on_import_done)

    def cancel_import(self) -> bool:
        if self._current is None:
            return False
        self._queue.clear()
        for ev in self._current.cancels:
            ev.set()
        if self._current.job is not None:
            self._current.job.cancel()
        self.summary.setText("Cancelling… the file being read is rolled back.")
        self.cancel_button.setEnabled(False)
        return True

    def _cancel_path(self, index: int) -> None:
        if self._current is not None and index < len(self._current.cancels):
            self._current.cancels[index].set()
            self.summary.setText(f"Cancelling {self._current.paths[index]}…")

    def _clear_progress(self) -> None:
        for _, row in self._rows.values():
            row.deleteLater()
        self._rows.clear()

    def _on_progress(self, item) -> None:
        index, p = item
        entry = self._rows.get(p.file)
        if entry is None:
            row = FileProgressRow(p.file, lambda _=False, i=index: self._cancel_path(i))
            self.progress_layout.insertWidget(self.progress_layout.count() - 1, row)
            entry = self._rows[p.file] = (index, row)
        entry[1].update_progress(p)
        self.summary.setText(f"Importing file {p.file_index} of {p.files_total}: {_short(p.file, 80)}")

    def _on_report(self, report) -> None:
        self.last_report = report
        for fr in report.files:
            entry = self._rows.get(fr.path)
            if entry is not None:
                text = (f"{fr.added:,} added, {fr.duplicates:,} dup." if fr.status == "imported"
                        else _STATUS_WORDS.get(fr.status, fr.status))
                entry[1].finish(fr.status, text)
        self._show_report(report)
        self.import_finished.emit(report)

    def _on_import_failed(self, message: str) -> None:
        self.summary.setText(f"The import stopped: {message}")
        for _, row in self._rows.values():
            row.finish("failed", "stopped")

    def _on_import_done(self) -> None:
        self._current = None
        self.cancel_button.setEnabled(False)
        self.refresh()
        self.data_changed.emit()
        if self._queue:
            self.import_paths(self._queue.pop(0))

    def _show_report(self, report) -> None:
        tree = self.report_tree
        tree.clear()
        cancelled = sum(1 for f in report.files if f.status == "cancelled")
        parts = [f"Added {report.added:,} events", f"{report.duplicates:,} duplicates",
                 f"{report.skipped:,} records skipped"]
        if report.failed:
            parts.append(f"{len(report.failed)} file(s) failed")
        if cancelled:
            parts.append(f"{cancelled} file(s) cancelled")
        if report.unrecognized:
            parts.append(f"{len(report.unrecognized)} file(s) not recognised")
        self.summary.setText(", ".join(parts) + f" — in {report.seconds:.1f} s.")
        for fr in report.files:
            result = _STATUS_WORDS.get(fr.status, fr.status)
            if fr.importer and fr.status == "imported":
                result = f"imported ({fr.importer})"
            item = QTreeWidgetItem([fr.path, result, f"{fr.added:,}", f"{fr.duplicates:,}", f"{fr.skipped:,}"])
            item.setToolTip(0, fr.path)
            if fr.message:
                item.setToolTip(1, fr.message)
                if fr.status != "imported":
                    item.setText(1, f"{result}: {fr.message}")
            for issue in fr.issues[:MAX_ISSUES_SHOWN]:
                child = QTreeWidgetItem([issue.get("locator") or "", f"skipped: {issue.get('reason', '')}"])
                child.setToolTip(1, issue.get("reason", ""))
                item.addChild(child)
            if len(fr.issues) > MAX_ISSUES_SHOWN:
                item.addChild(QTreeWidgetItem(["", f"… {len(fr.issues) - MAX_ISSUES_SHOWN} more "
                                                   "(see 'hindsight imports --json')"]))
            tree.addTopLevelItem(item)
            if fr.issues and len(report.files) <= 5:
                item.setExpanded(True)
        for path in report.unrecognized:
            tree.addTopLevelItem(QTreeWidgetItem([path, "not a format Hindsight knows; skipped"]))
        for ig in report.ignored:
            tree.addTopLevelItem(QTreeWidgetItem([ig["path"], f"ignored: {ig['reason']}"]))
        for path in report.missing:
            tree.addTopLevelItem(QTreeWidgetItem([path, "no such file or folder"]))

    # ---- sources and imports ---------------------------------------------------------
    def refresh(self) -> None:
        store = self.store

        def load(_report, _cancel):
            return store.sources(), store.imports()

        self.runner.start("sources", load, long=False, on_success=self._show_lists,
                          on_failure=lambda msg: self.status_message.emit(f"Cannot read the sources: {msg}"))

    def _show_lists(self, result) -> None:
        sources, imports = result
        self.sources_tree.clear()
        by_source: dict[str, list[dict]] = {}
        for row in sources:
            by_source.setdefault(row["source"], []).append(row)
        for source, kinds in by_source.items():
            total = sum(k["events"] for k in kinds)
            first = min(k["first"] for k in kinds)
            last = max(k["last"] for k in kinds)
            top = QTreeWidgetItem([source, f"{total:,}", f"{first:%Y-%m-%d}", f"{last:%Y-%m-%d}"])
            for k in kinds:
                top.addChild(QTreeWidgetItem([k["kind"], f"{k['events']:,}", f"{k['first']:%Y-%m-%d}",
                                              f"{k['last']:%Y-%m-%d}"]))
            self.sources_tree.addTopLevelItem(top)
            top.setExpanded(True)
        if not sources:
            self.sources_tree.addTopLevelItem(QTreeWidgetItem(["(no events yet)"]))
        self.imports_tree.clear()
        for r in reversed(imports):
            item = QTreeWidgetItem([str(r["id"]), _display_name(r["file"]), r["importer"], f"{r['added']:,}",
                                    f"{r['finished_at']:%Y-%m-%d}"])
            item.setData(0, Qt.ItemDataRole.UserRole, r["id"])
            item.setData(1, Qt.ItemDataRole.UserRole, r["added"])
            item.setToolTip(1, f"{r['file']}\nfrom {r['path']}")
            self.imports_tree.addTopLevelItem(item)
        for column in (2, 3, 4):
            self.imports_tree.resizeColumnToContents(column)
        self.remove_button.setEnabled(bool(self.imports_tree.selectedItems()))

    def remove_selected(self) -> None:
        items = self.imports_tree.selectedItems()
        if not items:
            return
        item = items[0]
        import_id = int(item.data(0, Qt.ItemDataRole.UserRole))
        added = int(item.data(1, Qt.ItemDataRole.UserRole))
        answer = QMessageBox.question(
            self, "Remove import",
            f"Remove import #{import_id} ({item.text(1)}) and up to {added:,} events it brought?\n\n"
            "Events that another import also contains stay. The export file itself is not touched.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
        if answer != QMessageBox.StandardButton.Yes:
            return
        self.remove_button.setEnabled(False)
        store = self.store

        def remove(_report, _cancel) -> int:
            return store.remove_import(import_id)

        def done(removed: int) -> None:
            self.status_message.emit(f"Removed import #{import_id} and {removed:,} events.")
            self.refresh()
            self.data_changed.emit()
            self.removal_finished.emit(import_id, removed)

        self.runner.start(f"remove import {import_id}", remove, on_success=done,
                          on_failure=lambda msg: QMessageBox.warning(self, "Remove import",
                                                                     f"Could not remove import #{import_id}: {msg}"))
