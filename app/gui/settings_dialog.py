"""The Settings dialog: home time zone, own mail addresses, the planner model (a
GGUF file) and the data folder. It edits an ``engine.settings.Settings`` and saves
it with ``Settings.save``, the same file the CLI's ``hindsight settings`` writes.
The data folder itself cannot live inside the data folder, so the app remembers it
in Qt's per-user settings and uses it from the next start."""
from __future__ import annotations

import copy
from pathlib import Path
from zoneinfo import available_timezones

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout,
                               QLabel, QLineEdit, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget)

from engine.settings import Settings, SettingsError

QSETTINGS_ORG = "Hindsight"
DATA_DIR_KEY = "data_dir"


def remembered_data_dir() -> str | None:
    value = QSettings(QSETTINGS_ORG, "Hindsight").value(DATA_DIR_KEY)
    return str(value) if value else None


def remember_data_dir(path: str | None) -> None:
    qs = QSettings(QSETTINGS_ORG, "Hindsight")
    if path:
        qs.setValue(DATA_DIR_KEY, path)
    else:
        qs.remove(DATA_DIR_KEY)


class SettingsDialog(QDialog):
    def __init__(self, settings: Settings, data_dir: Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.resize(620, 420)
        self.original = settings
        self.data_dir = Path(data_dir)
        self.result_settings: Settings | None = None
        self.data_dir_changed = False
        layout = QVBoxLayout(self)
        form = QFormLayout()

        self.timezone = QComboBox()
        self.timezone.setEditable(True)
        self.timezone.addItem("")
        self.timezone.addItems(sorted(available_timezones()))
        self.timezone.setCurrentText(settings.home_timezone or "")
        self.timezone.setToolTip("Used for exports that give times without an offset, and for the Timeline's "
                                 "days. Empty = this computer's zone.")
        form.addRow("Home time zone:", self.timezone)

        self.addresses = QPlainTextEdit("\n".join(settings.own_addresses))
        self.addresses.setPlaceholderText("me@example.org\nme@work.example")
        self.addresses.setToolTip("One per line. Tells mail you sent from mail you received; empty = infer.")
        self.addresses.setMaximumHeight(90)
        form.addRow("Your mail addresses:", self.addresses)

        self.planner = QLineEdit(settings.planner_model or "")
        self.planner.setPlaceholderText("(the built planner model)")
        self.planner.setToolTip("A GGUF file to use as the planner instead of the one Hindsight builds")
        browse_planner = QPushButton("Browse…")
        browse_planner.clicked.connect(self._browse_planner)
        form.addRow("Planner model:", self._row(self.planner, browse_planner))

        self.data_folder = QLineEdit(str(self.data_dir))
        self.data_folder.setToolTip("Where the event store, settings and logs live. A change applies the next "
                                    "time Hindsight starts.")
        browse_data = QPushButton("Browse…")
        browse_data.clicked.connect(self._browse_data)
        form.addRow("Data folder:", self._row(self.data_folder, browse_data))
        layout.addLayout(form)

        self.error = QLabel()
        self.error.setObjectName("error")
        self.error.setWordWrap(True)
        layout.addWidget(self.error)
        layout.addStretch(1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    @staticmethod
    def _row(*widgets: QWidget) -> QWidget:
        holder = QWidget()
        row = QHBoxLayout(holder)
        row.setContentsMargins(0, 0, 0, 0)
        for w in widgets:
            row.addWidget(w, 1 if isinstance(w, QLineEdit) else 0)
        return holder

    def _browse_planner(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a planner model", self.planner.text(),
                                              "GGUF models (*.gguf)")
        if path:
            self.planner.setText(path)

    def _browse_data(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Choose the data folder", self.data_folder.text())
        if path:
            self.data_folder.setText(path)

    def edited(self) -> Settings:
        s = copy.deepcopy(self.original)
        s.home_timezone = self.timezone.currentText().strip() or None
        s.own_addresses = [a.strip() for a in self.addresses.toPlainText().splitlines() if a.strip()]
        s.planner_model = self.planner.text().strip() or None
        return s

    def accept(self) -> None:
        s = self.edited()
        try:
            s.home_tz()
        except SettingsError as exc:
            self.error.setText(f"{exc}. Pick a zone from the list, e.g. Europe/Berlin.")
            return
        bad = [a for a in s.own_addresses if "@" not in a]
        if bad:
            self.error.setText(f"Not a mail address: {', '.join(bad)}")
            return
        if s.planner_model and not Path(s.planner_model).expanduser().is_file():
            self.error.setText(f"No such file: {s.planner_model}")
            return
        try:
            s.save(self.data_dir)
        except OSError as exc:
            self.error.setText(f"Cannot save the settings in {self.data_dir}: {exc}")
            return
        folder = self.data_folder.text().strip()
        if folder and Path(folder).expanduser() != self.data_dir:
            remember_data_dir(str(Path(folder).expanduser()))
            self.data_dir_changed = True
        self.result_settings = s
        super().accept()
