"""One event in full: when, what, every attribute, and where it came from (the
dropped file, the file inside it, the row/line locator, the original record), with
"Show in folder". Loading happens on a worker; the dialog only displays."""
from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFormLayout, QLabel, QMessageBox, QPlainTextEdit,
                               QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from app.gui.models import format_value
from app.gui.workers import JobRunner
from app.shell import local_time


def folder_to_show(ev: dict) -> Path | None:
    """The folder holding what the user dropped; a zip member is shown as its zip."""
    for candidate in (ev.get("import_path"), ev.get("file")):
        if not candidate:
            continue
        p = Path(candidate).expanduser()
        # walk up from "export.zip/inner/file.json" to the first part that exists
        while not p.exists() and p != p.parent:
            p = p.parent
        if p.exists() and str(p) not in ("/", "."):
            return p if p.is_dir() else p.parent
    return None


def pretty_record(raw: str | None) -> str:
    if not raw:
        return "(the importer kept no original record for this event)"
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except (ValueError, TypeError):
        return raw


class EventDetailDialog(QDialog):
    def __init__(self, ev: dict, parent: QWidget | None = None):
        super().__init__(parent)
        self.record = ev
        self.setWindowTitle(ev.get("title") or ev["id"])
        self.resize(720, 640)
        layout = QVBoxLayout(self)

        title = QLabel(ev.get("title") or "(untitled)")
        title.setObjectName("paneTitle")
        title.setWordWrap(True)
        title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(title)
        if ev.get("text") and ev.get("text") != ev.get("title"):
            text = QLabel(ev["text"][:1500])
            text.setWordWrap(True)
            text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(text)

        form = QFormLayout()
        when = f"{local_time(ev['start'], ev.get('tz_offset_min')):%Y-%m-%d %H:%M %z}"
        if ev.get("end"):
            when += f" – {local_time(ev['end'], ev.get('tz_offset_min')):%Y-%m-%d %H:%M}"
        form.addRow("When:", self._selectable(when))
        form.addRow("Source:", self._selectable(f"{ev.get('source')} / {ev.get('kind')}"))
        form.addRow("Event id:", self._selectable(ev["id"]))
        layout.addLayout(form)

        attrs = ev.get("attributes") or {}
        self.attributes = QTableWidget(len(attrs), 2)
        self.attributes.setHorizontalHeaderLabels(["Attribute", "Value"])
        self.attributes.verticalHeader().setVisible(False)
        self.attributes.horizontalHeader().setStretchLastSection(True)
        for row, (key, value) in enumerate(attrs.items()):
            self.attributes.setItem(row, 0, QTableWidgetItem(key))
            self.attributes.setItem(row, 1, QTableWidgetItem(format_value(value, limit=400)))
        self.attributes.resizeColumnToContents(0)
        self.attributes.setMaximumHeight(40 + 26 * min(len(attrs), 7))
        if attrs:
            layout.addWidget(self.attributes)

        prov = QLabel("<b>Where it came from</b>")
        layout.addWidget(prov)
        pform = QFormLayout()
        pform.addRow("Imported from:", self._selectable(str(ev.get("import_path") or "?")))
        pform.addRow("File:", self._selectable(str(ev.get("file") or "?")))
        pform.addRow("Record:", self._selectable(str(ev.get("locator") or "?")))
        pform.addRow("Import:", self._selectable(f"#{ev.get('import_id')} by {ev.get('importer') or '?'}"))
        layout.addLayout(pform)

        self.original = QPlainTextEdit(pretty_record(ev.get("raw")))
        self.original.setReadOnly(True)
        self.original.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.original.setToolTip("The original record, exactly as the export had it")
        layout.addWidget(QLabel("Original record:"))
        layout.addWidget(self.original, 1)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.show_folder = QPushButton("Show in folder")
        self.folder = folder_to_show(ev)
        self.show_folder.setEnabled(self.folder is not None)
        self.show_folder.setToolTip(str(self.folder) if self.folder else "The imported file is no longer on disk")
        self.show_folder.clicked.connect(self._show_in_folder)
        copy = QPushButton("Copy id")
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(ev["id"]))
        buttons.addButton(self.show_folder, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(copy, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    @staticmethod
    def _selectable(text: str) -> QLabel:
        label = QLabel(text)
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return label

    def _show_in_folder(self) -> None:
        if self.folder is None or not QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.folder))):
            QMessageBox.information(self, "Show in folder", f"Cannot open {self.folder} in a file manager.")


def open_event_detail(parent: QWidget, store, runner: JobRunner, event_id: str) -> None:
    """Fetch the event on a worker, then show its detail dialog (non-modal)."""
    def fetch(_report, _cancel):
        return store.event(event_id)

    def show(ev: dict | None) -> None:
        if ev is None:
            QMessageBox.information(parent, "Event", f"The event {event_id} is no longer in the store "
                                                     "(its import was removed).")
            return
        dialog = EventDetailDialog(ev, parent)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        _open_dialogs.append(dialog)
        dialog.destroyed.connect(lambda *_: _open_dialogs.remove(dialog) if dialog in _open_dialogs else None)

    runner.start(f"event {event_id}", fetch, long=False, on_success=show,
                 on_failure=lambda msg: QMessageBox.warning(parent, "Event", f"Cannot load the event: {msg}"))


# Dialogs shown non-modally must stay referenced; tests look the latest one up here.
_open_dialogs: list[EventDetailDialog] = []


def open_dialogs() -> list[EventDetailDialog]:
    return list(_open_dialogs)
