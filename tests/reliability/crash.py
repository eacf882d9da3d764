"""Killing a Hindsight job with SIGKILL at a seeded random moment, and checking what
a restart leaves: the place where every crash-safety test plugs in.

A :class:`KilledJob` names a job (a Python snippet run in a child process with the
worktree's code) and the check that must hold after the job has been killed once
and then run again to the end. The import and the search-index refresh are
registered in ``test_crash.py``; chat trees and insights add theirs the same way
(``test_derived_crash.py``) and get the same trials.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class KilledJob:
    name: str
    #: Python run in the child with ``data`` (the data folder, a Path) and ``export``
    #: (a Path) bound; it prints "phase NAME" lines as it goes, flushed, the first of
    #: them "phase start" when the work that may be killed begins
    script: str
    #: called after the restart's run finished: asserts the data folder is whole
    check: Callable[[Path], None]
    #: called right after the kill, before the restart: asserts what a reader would
    #: find then (an old state or a new one, never half of one)
    at_kill: Callable[[Path], None] | None = None


def run_child(job: KilledJob, data: Path, export: Path, *, kill_after: float | None = None,
              timeout: float = 300) -> tuple[int, list[str], float]:
    """Run ``job`` in a child process; with ``kill_after``, SIGKILL it that many
    seconds after it said "phase start". Returns its exit status, the phases it
    printed and the seconds from "phase start" to its end."""
    code = ("import sys\nfrom pathlib import Path\n"
            f"data, export = Path({str(data)!r}), Path({str(export)!r})\n" + job.script)
    env = os.environ | {"PYTHONPATH": str(ROOT), "HINDSIGHT_CACHE_DIR": str(data.parent / "no-models")}
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    while (line := child.stdout.readline()) and line.strip() != "phase start":
        pass  # the interpreter starts and the job prepares: not what is being tested
    started = time.monotonic()
    if kill_after is not None:
        deadline = started + kill_after
        while time.monotonic() < deadline and child.poll() is None:
            time.sleep(min(0.005, max(0.0, deadline - time.monotonic())))
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
    out, err = child.communicate(timeout=timeout)
    seconds = time.monotonic() - started
    phases = ["start"] + [ln.removeprefix("phase ") for ln in out.splitlines() if ln.startswith("phase ")]
    if kill_after is None and child.returncode != 0:
        raise AssertionError(f"{job.name} failed:\n{err[-3000:]}")
    return child.returncode, phases, seconds


def run_here(job: KilledJob, data: Path, export: Path) -> None:
    """Run ``job`` to its end in this process: the restart after a kill."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        exec(job.script, {"data": data, "export": export, "__name__": f"restart_{job.name}"})  # noqa: S102 - our own test script


def kill_and_restart(job: KilledJob, data: Path, export: Path, seed: int, span: float, *,
                     restart_here: bool = True, after: float = 0.0) -> str:
    """One trial: kill ``job`` at a moment drawn by ``seed`` within ``span`` seconds
    from ``after`` seconds after its start, run it again to the end (in this process,
    unless the job changes module state a test process must not keep), run its check.
    Returns the phase the kill landed in."""
    moment = after + random.Random(seed).uniform(0, span)
    code, phases, _ = run_child(job, data, export, kill_after=moment)
    landed = "after it finished" if code == 0 else f"during {phases[-1]}"
    if job.at_kill is not None:
        job.at_kill(data)
    if restart_here:
        run_here(job, data, export)
    else:
        run_child(job, data, export)
    job.check(data)
    return landed
