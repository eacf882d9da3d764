"""Keeps RETRIEVE's search index up to date in the background, so that the first
question after an import does not silently pay for indexing the new events.

It refreshes the question engine's own index object (``engine.index``, a
``RetrievalIndex``) on the job runner's long pool. A question's own refresh takes
the same index lock, so it waits for this one and finds nothing left to do; a
second index on the same file is never opened. Progress arrives as
:class:`IndexProgress` on the GUI thread; the Ask pane and the status bar turn it
into words. This module touches no widget and never writes the store.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from app.gui.workers import Job, JobRunner

log = logging.getLogger(__name__)

# Before this much of the slow stage has been timed, a time estimate is a guess.
ESTIMATE_AFTER_S = 3.0
#: the refresh's slow stages, each counting done of total events: term weights,
#: then (with an Embedder) passage vectors
SLOW_STAGES = ("sparse", "vectors")


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """Where a refresh stands: ``stage`` is "documents" (reading the new events,
    quick), then "sparse" (term weights) and "vectors" (passage vectors), the slow
    parts; ``done`` of ``total`` events."""

    stage: str
    done: int
    total: int
    seconds_left: float | None = None

    @property
    def left(self) -> str:
        """ "about 3 min left", or "" before the pace is known."""
        return "" if self.seconds_left is None else time_left(self.seconds_left)


def time_left(seconds: float) -> str:
    if seconds < 60:
        return "under a minute left"
    minutes = round(seconds / 60)
    return f"about {minutes} min left"


class _Estimate:
    """Time left from the pace of the slow stage so far (its first report is the
    reference: documents copied from earlier refreshes arrive all at once)."""

    def __init__(self) -> None:
        self.start: tuple[float, int] | None = None
        self.stage = ""

    def seconds_left(self, stage: str, done: int, total: int) -> float | None:
        if stage not in SLOW_STAGES:
            return None
        now = time.monotonic()
        if self.start is None or stage != self.stage:  # each slow stage has a pace of its own
            self.start, self.stage = (now, done), stage
            return None
        t0, d0 = self.start
        if now - t0 < ESTIMATE_AFTER_S or done <= d0:
            return None
        return (total - done) / ((done - d0) / (now - t0))


class SearchIndexRefresher(QObject):
    """One background refresh at a time; a refresh asked for while one runs
    follows it (the new events arrived after it read the store)."""

    progressed = Signal(object)  # IndexProgress
    finished = Signal(object)  # engine.retrieval.index.RefreshStats, or None: cancelled or failed

    def __init__(self, runner: JobRunner, parent: QObject | None = None):
        super().__init__(parent)
        self.runner = runner
        self._engine = None  # whose index the next refresh brings up to date
        self._job: Job | None = None
        self._job_engine = None
        self._again = False
        self._stale = False
        self._outcome = None
        self._progress: IndexProgress | None = None
        self._estimate = _Estimate()
        self.last_error: str | None = None  # why the last refresh failed
        self._to_close: list = []  # (engine, close) waiting for the running refresh to stop

    # ---- state ------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._job is not None

    @property
    def stale(self) -> bool:
        """A refresh was asked for and has not completed (it runs, or was cancelled or failed)."""
        return self._stale

    @property
    def progress(self) -> IndexProgress | None:
        """The running refresh's last report; None before it reports (a refresh with
        nothing to do never does)."""
        return self._progress if self._job is not None else None

    @property
    def stopping(self) -> bool:
        return self._job is not None and self._job.is_cancelled

    # ---- control ----------------------------------------------------------------------
    def refresh(self, engine) -> bool:
        """Bring ``engine.index`` up to date in the background. False when the engine
        has no index to refresh."""
        if not hasattr(getattr(engine, "index", None), "refresh"):
            return False
        self._engine = engine
        self._stale = True
        if self._job is not None:
            self._again = True  # the running refresh read the store before this was asked
            return True
        self._start()
        return True

    def cancel(self) -> bool:
        """Stop the running refresh after its current batch; what it finished is kept."""
        if self._job is None or self._job.is_cancelled:
            return False
        self._again = False
        self._job.cancel()
        return True

    def close_when_stopped(self, engine, close) -> None:
        """``close(engine)`` now, or, when a refresh is running on its index, once that
        refresh has stopped (it is cancelled): closing the index under it would fail."""
        if self._engine is engine:
            self._engine = None
        # a job whose function returned is done, though its 'finished' may still be queued
        # (at shutdown the event loop no longer runs to deliver it)
        if self._job is not None and self._job_engine is engine and not self._job.done:
            self._job.cancel()
            self._to_close.append((engine, close))
        else:
            close(engine)

    # ---- the job ------------------------------------------------------------------------
    def _start(self) -> None:
        engine = self._engine
        index = engine.index
        self._again = False
        self._outcome = None
        self._progress = None
        self._estimate = _Estimate()
        self.last_error = None

        def run(report, cancel):
            stats = index.refresh(cancel=cancel, progress=lambda stage, done, total: report((stage, done, total)))
            return None if cancel.is_set() else stats

        self._job_engine = engine
        self._job = self.runner.start("refresh the search index", run, background=True, on_progress=self._on_progress,
                                      on_success=self._on_success, on_failure=self._on_failure,
                                      on_finish=self._on_finish)

    def _on_progress(self, report) -> None:
        stage, done, total = report
        self._progress = IndexProgress(stage, done, total, self._estimate.seconds_left(stage, done, total))
        self.progressed.emit(self._progress)

    def _on_success(self, stats) -> None:
        self._outcome = stats
        if not self._again:
            self._stale = False

    def _on_failure(self, message: str) -> None:
        self.last_error = message  # the job runner has logged it with its traceback

    def _on_finish(self) -> None:
        self._job = self._job_engine = None
        for engine, close in self._to_close:
            close(engine)
        self._to_close.clear()
        outcome = self._outcome
        if self._again and self._engine is not None:
            self._start()
        self.finished.emit(outcome)
