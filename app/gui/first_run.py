"""The first-run / no-models screen of the Ask pane: says plainly why no question
can be answered yet, lists each model role and whether it is ready, and offers to
build or locate the models, with progress. It never shows a traceback: every
failure arrives as a message (details go to the log)."""
from __future__ import annotations

import logging

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QTreeWidget,
                               QTreeWidgetItem, QVBoxLayout, QWidget)

from app.gui import engine_factory as ef
from app.gui.workers import Job, JobRunner

log = logging.getLogger(__name__)

_TITLES = {
    ef.ENGINE_MISSING: "Asking questions is not available in this installation yet",
    ef.MODEL_LAYER_MISSING: "The model layer is not installed",
    ef.MODELS_MISSING: "Set up the on-device models",
    ef.FAILED: "The question engine could not start",
}


class FirstRunWidget(QWidget):
    retry_requested = Signal()
    planner_chosen = Signal(str)
    build_finished = Signal(bool)  # succeeded

    def __init__(self, runner: JobRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self.runner = runner
        self.kind = ""
        self._build_job: Job | None = None
        self._roles_total = 0
        self._roles_done: set[str] = set()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 24, 24, 24)
        self.title = QLabel()
        self.title.setObjectName("paneTitle")
        self.title.setWordWrap(True)
        layout.addWidget(self.title)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.message)
        self.explain = QLabel("Hindsight answers on this computer with small local models. They are built once "
                              "from installed packages (nothing is downloaded). Importing and browsing your "
                              "data work without them.")
        self.explain.setObjectName("muted")
        self.explain.setWordWrap(True)
        layout.addWidget(self.explain)

        self.roles = QTreeWidget()
        self.roles.setHeaderLabels(["Model", "Status", "Details"])
        self.roles.setRootIsDecorated(False)
        self.roles.setColumnWidth(0, 170)
        self.roles.setColumnWidth(1, 110)
        self.roles.setMinimumHeight(140)
        layout.addWidget(self.roles, 1)

        buttons = QHBoxLayout()
        self.build_quick = QPushButton("Build models (quick)")
        self.build_quick.setToolTip("A smaller, faster build: good to try Hindsight (minutes)")
        self.build_full = QPushButton("Build models (full)")
        self.build_full.setObjectName("primary")
        self.build_full.setToolTip("The best answers; takes longer and runs once")
        self.locate = QPushButton("Use a planner GGUF…")
        self.locate.setToolTip("Point Hindsight at a planner model file you already have (.gguf)")
        self.retry = QPushButton("Check again")
        self.build_quick.clicked.connect(lambda: self.start_build("quick"))
        self.build_full.clicked.connect(lambda: self.start_build("full"))
        self.locate.clicked.connect(self._choose_planner)
        self.retry.clicked.connect(self.retry_requested)
        for b in (self.build_full, self.build_quick, self.locate):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.retry)
        layout.addLayout(buttons)

        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.hide()
        self.progress_text = QLabel()
        self.progress_text.setObjectName("progressText")
        self.progress_text.setWordWrap(True)
        layout.addWidget(self.progress)
        layout.addWidget(self.progress_text)
        self.filler = QWidget()  # takes the room the role list leaves when it is hidden
        layout.addWidget(self.filler, 1)

    def show_problem(self, problem: ef.EngineUnavailable) -> None:
        self.kind = problem.kind
        self.title.setText(_TITLES.get(problem.kind, "The question engine is not ready"))
        self.message.setText(problem.message)
        buildable = (problem.kind in (ef.MODELS_MISSING, ef.FAILED)
                     or (problem.kind == ef.ENGINE_MISSING and bool(problem.missing_roles)))
        for b in (self.build_quick, self.build_full, self.locate):
            b.setVisible(buildable)
        self.explain.setVisible(buildable)
        self.roles.clear()
        self.roles.setVisible(bool(problem.roles))
        self.filler.setVisible(not problem.roles)
        for role, info in problem.roles.items():
            ready = bool(info.get("ready"))
            detail = (info.get("source") or info.get("path") or "") if ready else (info.get("reason") or "")
            item = QTreeWidgetItem([role.replace("_", " "), "ready" if ready else "missing", str(detail)])
            item.setData(0, Qt.ItemDataRole.UserRole, role)
            item.setToolTip(2, str(detail))
            self.roles.addTopLevelItem(item)

    @property
    def building(self) -> bool:
        return self._build_job is not None

    def start_build(self, profile: str) -> None:
        if self._build_job is not None:
            return
        self._roles_total = max(1, self.roles.topLevelItemCount())
        self._roles_done.clear()
        self.progress.setValue(0)
        self.progress.show()
        self.progress_text.setText(f"Building the models ({profile}); this runs once and can take a while. "
                                   "You can keep importing and browsing meanwhile.")
        for b in (self.build_quick, self.build_full, self.locate, self.retry):
            b.setEnabled(False)

        def build(report, _cancel):
            ef.build_models(profile, lambda role, stage, fraction, message: report((role, stage, fraction, message)))
            return profile

        self._build_job = self.runner.start(f"build models ({profile})", build, on_progress=self._on_progress,
                                            on_success=lambda _p: self._on_built(True, ""),
                                            on_failure=lambda msg: self._on_built(False, msg))

    def _on_progress(self, item) -> None:
        role, stage, fraction, message = item
        if stage == "done":
            self._roles_done.add(role)
        overall = (len(self._roles_done) + (0 if stage == "done" else max(0.0, min(1.0, fraction)))) / self._roles_total
        self.progress.setValue(int(1000 * min(1.0, overall)))
        self.progress_text.setText(f"{role.replace('_', ' ')}: {stage}" + (f" — {message}" if message else ""))
        for i in range(self.roles.topLevelItemCount()):
            it = self.roles.topLevelItem(i)
            if it.data(0, Qt.ItemDataRole.UserRole) == role:
                it.setText(1, "ready" if stage == "done" else f"{int(100 * fraction)} %")

    def _on_built(self, ok: bool, message: str) -> None:
        self._build_job = None
        for b in (self.build_quick, self.build_full, self.locate, self.retry):
            b.setEnabled(True)
        if ok:
            self.progress.setValue(1000)
            self.progress_text.setText("Models are ready. Starting the question engine…")
            self.retry_requested.emit()
        else:
            self.progress_text.setText(f"Building the models failed: {message}. Details are in the log; "
                                       "'hindsight doctor' says what to fix.")
        self.build_finished.emit(ok)

    def _choose_planner(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a planner model", "", "GGUF models (*.gguf)")
        if path:
            self.planner_chosen.emit(path)
