"""Reading one large JSON array in worker processes (engine.parallel_read) must
store and report exactly what reading it on one thread does, and fall back to that
whenever a range of the file does not parse as whole items."""
from __future__ import annotations

import io
import json
import logging
import threading
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

import importers._json as json_reading
from app.bench.scale import write_spotify_extended
from engine import parallel_read
from engine.ingest import import_paths
from engine.store import EventStore
from importers.base import ImportContext, ImportIssue
from tests.test_ingest_fast import _cases, _rows

CONTEXT = ImportContext(home_tz=ZoneInfo("America/St_Johns"))


@pytest.mark.parametrize("segment", [16, 97, 600, 1 << 20])
@pytest.mark.parametrize("data", _cases())
def test_ranges_that_all_parse_hold_exactly_the_items_of_the_array(data, segment, tmp_path):
    """A cut may fall inside a string or a nested object; then some range fails to
    parse. Whenever none fails, the ranges hold the array's items, in order."""
    path = tmp_path / "a.json"
    path.write_bytes(data)
    whole = list(json_reading.iter_array(io.BytesIO(data), reopen=lambda: io.BytesIO(data)))
    ranges = json_reading.array_segments(str(path), segment)
    if ranges is None:  # not an array: the serial reader says what it is
        assert not data.lstrip().startswith(b"[")
        return
    assert ranges[0][0] == data.index(b"[") + 1 and ranges[-1][1] == len(data)
    for (_, end), (start, _) in zip(ranges, ranges[1:]):
        assert data[end:start] == b","
    parsed = [json_reading.parse_segment(data[a:b], last=i == len(ranges) - 1) for i, (a, b) in enumerate(ranges)]
    if any(p is None for p in parsed):
        return
    assert not any(isinstance(x, ImportIssue) for x in whole)
    assert [item for p in parsed for item in p] == [item for _, item in whole]


def test_ranges_of_a_generated_history_are_many_and_parse(tmp_path):
    path = write_spotify_extended(tmp_path / "Streaming_History_Audio_2020.json", 400)
    ranges = json_reading.array_segments(str(path), 4096)
    assert len(ranges) > 30
    data = path.read_bytes()
    counts = [len(json_reading.parse_segment(data[a:b], last=i == len(ranges) - 1))
              for i, (a, b) in enumerate(ranges)]
    assert sum(counts) == 400


def test_locators_are_renumbered_past_the_earlier_ranges(tmp_path):
    from datetime import datetime

    from engine.rows import EVENT_COLUMNS, write_rows
    from engine.store import EventStore

    assert parallel_read.shift_locator("item 7", 100) == "item 107"
    assert parallel_read.shift_locator("Takeout item 7", 100) == "Takeout item 107"
    assert parallel_read.shift_locator("line 7", 100) == "line 7"
    # the store shifts the rows' locators the same way as it appends a worker's file
    locators = ["item 1", "conversation x", "label item 12", "item 3b"]
    with EventStore(tmp_path / "s" / "hindsight.duckdb") as store:
        rows = {c: [None] * 4 for c in EVENT_COLUMNS}
        rows.update(id=list("abcd"), source=["x"] * 4, kind=["k"] * 4, start=[datetime(2024, 1, 1)] * 4,
                    import_id=[1] * 4, file=["f"] * 4, locator=locators)
        from engine.rows import _ARROW_SCHEMA
        spill = store.spill_path("parallel")
        write_rows(pa.table(rows, schema=_ARROW_SCHEMA), spill)

        def append(con):
            con.begin()
            store.append_parquet(con, spill, 40)
            con.commit()
        store.write(append).result()
        got = dict(store.reader().execute("SELECT id, locator FROM events").fetchall())
        assert [got[i] for i in "abcd"] == ["item 41", "conversation x", "label item 52", "item 3b"]
        assert not spill.exists()
        assert [parallel_read.shift_locator(x, 40) for x in locators] == [got[i] for i in "abcd"]


def _history_with_bad_records(path: Path, n: int) -> Path:
    write_spotify_extended(path, n)
    records = json.loads(path.read_text())
    for i in range(37, n, 211):  # bad records scattered over many ranges
        records[i] = [{"ms_played": 5}, 42, {"ts": "yesterday", "ms_played": 1},
                      {"ts": "2020-01-01T00:00:00Z", "ms_played": -4}][i % 4]
    path.write_text(json.dumps(records, indent=1))
    return path


class _Counted(parallel_read.ParallelArrayRead):
    """Counts the rows the worker processes hand over."""

    rows = 0

    def __iter__(self):
        for part in super().__iter__():
            _Counted.rows += part.rows
            yield part


def _import(tmp_path: Path, name: str, files: list[Path], parallel: bool, monkeypatch, **kw):
    monkeypatch.setattr(parallel_read, "MIN_BYTES", 0 if parallel else 1 << 62)
    monkeypatch.setattr(parallel_read, "SEGMENT_BYTES", 16 << 10)
    monkeypatch.setattr(parallel_read, "workers", lambda: 2)
    monkeypatch.setattr(parallel_read, "ParallelArrayRead", _Counted)
    _Counted.rows = 0
    with EventStore(tmp_path / name / "hindsight.duckdb") as store:
        r = import_paths(store, files, context=CONTEXT, **kw)
        return [(f.path, f.status, f.read, f.added, f.skipped, f.issues) for f in r.files], _rows(store)


def test_a_history_read_in_parallel_is_stored_as_read_on_one_thread(tmp_path, monkeypatch, caplog):
    path = _history_with_bad_records(tmp_path / "Streaming_History_Audio_2021.json", 3_000)
    caplog.set_level(logging.INFO, logger="engine.ingest")
    parallel = _import(tmp_path, "parallel", [path], True, monkeypatch)
    assert _Counted.rows == 3_000 - len(range(37, 3_000, 211))  # all from the workers
    assert not [r for r in caplog.records if r.name == "engine.ingest"
                and ("one piece" in r.getMessage() or "parallel read failed" in r.getMessage())]
    serial = _import(tmp_path, "serial", [path], False, monkeypatch)
    assert parallel == serial
    report = parallel[0][0]
    assert report[1] == "imported" and report[2] == 3_000 and report[4] == len(range(37, 3_000, 211))
    assert {i["locator"] for i in report[5]} == {f"item {i + 1}" for i in range(37, 3_000, 211)}


def test_a_file_that_will_not_split_is_read_on_one_thread_instead(tmp_path, monkeypatch, caplog):
    """Cuts inside strings (names holding "}, ") and a truncated end: the parallel
    read gives up, its rows are dropped, and the one-thread read reports as always."""
    path = tmp_path / "Streaming_History_Audio_2022.json"
    write_spotify_extended(path, 2_000)
    records = json.loads(path.read_text())
    for r in records:
        r["master_metadata_track_name"] = 'Song"}, {"ts": "x' * 3
    data = json.dumps(records, indent=1).encode()
    path.write_bytes(data[:-500])  # cut off inside the last records
    caplog.set_level(logging.INFO, logger="engine.ingest")
    parallel = _import(tmp_path, "parallel", [path], True, monkeypatch)
    assert [r for r in caplog.records if r.name == "engine.ingest" and "one piece" in r.getMessage()]
    serial = _import(tmp_path, "serial", [path], False, monkeypatch)
    assert parallel == serial
    issues = parallel[0][0][5]
    assert issues and "broken or truncated" in issues[-1]["reason"]


def test_cancelling_a_parallel_read_keeps_nothing(tmp_path, monkeypatch):
    path = write_spotify_extended(tmp_path / "Streaming_History_Audio_2023.json", 2_000)
    cancel = threading.Event()

    def progress(p):
        if p.stage == "file_start":
            cancel.set()  # the first range is appended, then the import stops

    reports, rows = _import(tmp_path, "cancelled", [path], True, monkeypatch, cancel=cancel, progress=progress)
    assert 0 < _Counted.rows < 2_000
    assert reports[0][1] == "cancelled" and rows == []
