"""Background jobs for the GUI: run a function on a worker thread, report progress
and the result through Qt signals, cancel it through a ``threading.Event``.

A job's function never touches a widget; it receives ``report(obj)`` (delivered as
the ``progress`` signal on the GUI thread) and the ``cancel`` event. Signals are
emitted from the worker thread and, because the ``Job`` object lives on the GUI
thread, Qt queues them to the GUI thread's event loop.
"""
from __future__ import annotations

import gc
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger(__name__)

# How long a Python thread may keep the GIL while another waits for it. The GUI thread
# waits its turn behind import, index and read jobs; at Python's default (5 ms), with
# three busy jobs on 2 cores, the window froze for up to 247 ms during an import and
# index refresh, at 1 ms for up to 165 ms (tests/reliability/test_concurrency.py, 4 runs each).
GUI_SWITCH_INTERVAL_S = 0.001

# How much less CPU a background job's thread asks for than the rest (a nice value).
# The planner's two llama.cpp threads meet at hundreds of barriers per token, so one
# of them waiting for a core behind a job costs far more than the job's share: three
# plans took 15.4-15.7 s during an insights job on 2 cores, 5.6-5.9 s with the job's
# thread at nice 10, 5.0-5.3 s with no job (scripted, one run each).
BACKGROUND_NICE = 10

JobFunction = Callable[[Callable[[Any], None], threading.Event], Any]


def settle_heap() -> None:
    """Leave what is loaded by now (modules, models, the window) out of the garbage
    collector's walks. A full collection holds every thread, the GUI's included, for
    as long as it walks the objects: 48-63 ms over the 80,000 a window and its jobs
    keep, each time an import or index refresh has made enough new ones
    (tests/reliability/test_concurrency.py). Called once the window has started and
    again when the question engine has loaded. A frozen object is still freed when
    nothing refers to it any more; only a cycle of frozen objects stays for good."""
    gc.freeze()


def lower_thread_priority(nice: int = BACKGROUND_NICE) -> bool:
    """Give the calling thread (and the threads and processes it starts) the nice
    value ``nice`` where the platform sets it per thread (Linux). It cannot be raised
    back without privileges, so only a thread kept for background work calls this.
    Returns whether it took."""
    get_id = getattr(threading, "get_native_id", None)
    if not sys.platform.startswith("linux") or get_id is None:
        return False
    try:
        import os

        tid = get_id()
        if os.getpriority(os.PRIO_PROCESS, tid) < nice:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        return True
    except OSError as exc:
        log.debug("could not lower a background thread's priority: %s", exc)
        return False


class Job(QObject):
    """One background call. Exactly one of ``succeeded``/``failed``/``cancelled``
    fires, then ``finished``."""

    progress = Signal(object)
    succeeded = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    finished = Signal()

    def __init__(self, name: str, fn: JobFunction, parent: QObject | None = None):
        super().__init__(parent)
        self.name = name
        self.fn = fn
        self.cancel_event = threading.Event()
        self.done = False

    def cancel(self) -> None:
        self.cancel_event.set()

    @property
    def is_cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def _run(self) -> None:
        try:
            result = self.fn(self.progress.emit, self.cancel_event)
        except Exception as exc:  # noqa: BLE001 - the edge: shown to the user, logged with traceback
            if self.cancel_event.is_set():
                log.info("job %s stopped after cancel: %s", self.name, exc)
                self.cancelled.emit()
            else:
                log.exception("background job %s failed", self.name)
                self.failed.emit(f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc))
        else:
            if self.cancel_event.is_set() and result is None:
                self.cancelled.emit()
            else:
                self.succeeded.emit(result)
        finally:
            self.done = True
            self.finished.emit()


class _Runnable(QRunnable):
    def __init__(self, job: Job, *, background: bool = False):
        super().__init__()
        self.job = job
        self.background = background
        self.setAutoDelete(True)

    def run(self) -> None:
        if self.background:  # the background pool's threads do nothing else
            lower_thread_priority()
        self.job._run()


class JobRunner(QObject):
    """Owns the thread pools and keeps running jobs alive until they finish.

    Three pools, so that a long import or question never starves the short reads
    that fill tables and lists while it runs, and work nobody waits on (imports,
    index refreshes, chat trees, insights, model builds) runs at a lower priority
    than a question being answered."""

    running_changed = Signal(int)

    def __init__(self, parent: QObject | None = None, *, long_threads: int = 3, read_threads: int = 2,
                 background_threads: int = 3):
        super().__init__(parent)
        # the jobs below are Python threads: keep the GUI thread's wait for the GIL short
        sys.setswitchinterval(min(sys.getswitchinterval(), GUI_SWITCH_INTERVAL_S))
        self.long_pool = QThreadPool(self)
        self.long_pool.setMaxThreadCount(long_threads)
        self.read_pool = QThreadPool(self)
        self.read_pool.setMaxThreadCount(read_threads)
        self.background_pool = QThreadPool(self)
        self.background_pool.setMaxThreadCount(background_threads)
        self._jobs: set[Job] = set()
        self._runnables: dict[Job, _Runnable] = {}

    def start(self, name: str, fn: JobFunction, *, long: bool = True, background: bool = False,
              on_progress: Callable[[Any], None] | None = None,
              on_success: Callable[[Any], None] | None = None,
              on_failure: Callable[[str], None] | None = None,
              on_cancel: Callable[[], None] | None = None,
              on_finish: Callable[[], None] | None = None) -> Job:
        """Run ``fn`` in the background. The callbacks are connected before the job
        starts, so none of its signals can be missed; they run on the GUI thread.
        ``background`` is for long work nobody waits on: it runs at a lower priority."""
        job = Job(name, fn, self)
        for signal, slot in ((job.progress, on_progress), (job.succeeded, on_success),
                             (job.failed, on_failure), (job.cancelled, on_cancel),
                             (job.finished, on_finish)):
            if slot is not None:
                signal.connect(slot)
        job.finished.connect(lambda j=job: self._forget(j))
        self._jobs.add(job)
        runnable = _Runnable(job, background=background)
        self._runnables[job] = runnable
        (self.background_pool if background else self.long_pool if long else self.read_pool).start(runnable)
        self.running_changed.emit(len(self.jobs()))
        return job

    def _forget(self, job: Job) -> None:
        self._jobs.discard(job)
        self._runnables.pop(job, None)
        job.deleteLater()
        self.running_changed.emit(len(self.jobs()))

    def jobs(self) -> list[Job]:
        return [j for j in self._jobs if not j.done]

    def cancel_all(self) -> None:
        for job in list(self._jobs):
            job.cancel()

    def wait(self, msecs: int = 10_000) -> bool:
        return all([pool.waitForDone(msecs) for pool in (self.long_pool, self.read_pool, self.background_pool)])
