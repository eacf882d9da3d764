"""The GUI reads while an import and an index refresh write: the timeline and
evidence models page through the store on their workers, the GUI thread is never
blocked for more than 200 ms, and no read ever sees part of an import (every event
a read returns belongs to an import whose record is committed with it)."""
from __future__ import annotations

import gc
import json
import os
import threading
import time
import warnings
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from engine.ingest import import_paths  # noqa: E402
from engine.retrieval.index import RetrievalIndex  # noqa: E402
from engine.store import EventStore  # noqa: E402
from tests.reliability.contract import CONTEXT, TALLY  # noqa: E402

BLOCK_LIMIT_S = 0.2
PER_FILE = 8_000
WHOLE = {k * PER_FILE for k in range(5)}  # what a read may see: a whole number of imported files


def _plays(path: Path, n: int, offset: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([
        {"ts": f"2023-{1 + (i // 2000) % 12:02d}-{1 + (i // 70) % 28:02d}T{(i // 3) % 24:02d}:{(i * 7) % 60:02d}:"
               f"{i % 60:02d}Z", "ms_played": 30_000 + i, "master_metadata_track_name": f"Song {i}",
         "master_metadata_album_artist_name": f"Band {i % 97}", "master_metadata_album_album_name": "LP",
         "spotify_track_uri": f"spotify:track:{i:022d}", "platform": "linux", "conn_country": "DE"}
        for i in range(offset, offset + n)]))
    return path


@pytest.mark.slow
@pytest.mark.gui
def test_gui_reads_during_an_import_and_a_refresh_never_block_or_see_half_an_import(qtbot, tmp_path):
    from PySide6.QtCore import QElapsedTimer, QTimer

    from app.gui.models import EvidenceModel, TimelineModel
    from app.gui.workers import JobRunner, lower_thread_priority, settle_heap
    from tests.test_operators import FakeSparse

    files = [_plays(tmp_path / "export" / f"Streaming_History_Audio_2023_{k}.json", PER_FILE, k * PER_FILE)
             for k in range(4)]
    store = EventStore(tmp_path / "data" / "hindsight.duckdb")
    runner = JobRunner()
    timeline = TimelineModel(store, runner)
    settle_heap()  # as the window does once it has started
    seen: list[tuple[int, int]] = []  # (timeline rows read, 0)
    orphans: list[int] = []  # per sample: events whose import record was not committed with them
    done = threading.Event()

    def write() -> None:
        lower_thread_priority()  # as the app runs imports and index refreshes (JobRunner's background pool)
        try:
            for path in files:  # one transaction per file: reads see 0, 8k, 16k ... events
                import_paths(store, [path], context=CONTEXT)
            index = RetrievalIndex(store, sparse=FakeSparse())
            index.refresh()
            index.close()
        finally:
            done.set()

    def check_rows(rows: int, _complete: bool) -> None:
        seen.append((rows, 0))
        if not done.is_set():
            timeline.refresh()

    timeline.rows_loaded.connect(check_rows)
    # the GUI thread's heartbeat: the longest gap between two 20 ms ticks is how long it was blocked
    clock, gaps = QElapsedTimer(), []
    clock.start()
    last = [clock.elapsed()]

    def tick() -> None:
        now = clock.elapsed()
        gaps.append((now - last[0]) / 1000)
        last[0] = now

    heartbeat = QTimer()
    heartbeat.timeout.connect(tick)
    heartbeat.start(20)
    evidence_loads = []
    counts: list[int] = []
    latest_ids: list[list[str]] = [[]]

    def sample() -> None:  # another reader: what a sources pane or a count would see
        con = store.reader()
        while not done.is_set():
            n, lost = con.execute("SELECT count(*), count(*) FILTER (WHERE import_id NOT IN "
                                  "(SELECT id FROM imports)) FROM events").fetchone()
            counts.append(n)
            orphans.append(lost)
            latest_ids[0] = [r[0] for r in con.execute(
                "SELECT id FROM events USING SAMPLE 50 ROWS").fetchall()]
            time.sleep(0.01)

    writer = threading.Thread(target=write, name="test-import")
    sampler = threading.Thread(target=sample, name="test-sampler")
    writer.start()
    sampler.start()
    timeline.set_filter()
    while not done.is_set():
        # an answer's evidence, opened again and again while the import goes on
        ids = list(latest_ids[0])
        model = EvidenceModel(store, runner, ids)
        t0 = time.monotonic()
        model.data(model.index(0, 0))  # as a view showing the first row would
        qtbot.waitUntil(lambda: model.loaded_rows() >= len(ids), timeout=30_000)
        evidence_loads.append(time.monotonic() - t0)
        qtbot.wait(50)
    qtbot.waitUntil(lambda: not timeline._pending, timeout=30_000)
    heartbeat.stop()  # the joins below wait on purpose
    writer.join()
    sampler.join()
    runner.wait(30_000)
    store.close()
    gc.unfreeze()  # the tests after this one collect as they did before
    worst = max(gaps[1:] or [0.0])
    TALLY[("concurrency", "GUI reads during import+refresh")][
        f"{len(seen)} timeline reads, {len(evidence_loads)} evidence loads, GUI blocked at most "
        f"{worst * 1000:.0f} ms"] += 1
    assert len(seen) >= 3 and len(evidence_loads) >= 3, (len(seen), len(evidence_loads))
    assert not any(orphans), "a read saw events of an import not yet committed"
    assert set(counts) <= WHOLE, f"a read saw part of an import: {sorted(set(counts) - WHOLE)[:5]}"
    load = os.getloadavg()[0]
    if load > (os.cpu_count() or 1):
        # other processes held the cores: a gap then measures the machine, not Hindsight
        warnings.warn(f"load average {load:.1f} on {os.cpu_count()} cores: the GUI thread's longest "
                      f"gap ({worst * 1000:.0f} ms) was not held to {BLOCK_LIMIT_S * 1000:.0f} ms")
    else:
        assert worst <= BLOCK_LIMIT_S, f"the GUI thread was blocked for {worst * 1000:.0f} ms"
