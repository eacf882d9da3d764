"""The event store: schema and migrations, dedup, removal, concurrency."""
from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

import duckdb
import pytest

from engine.ingest import import_paths
from engine.store import _MIGRATIONS, SCHEMA_VERSION, EventStore, StoreError
from importers.base import Entry, Event, Importer
from importers.registry import Registry

UTC = timezone.utc


def _events(n: int, start: int = 0, source: str = "test") -> list[Event]:
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    return [Event(source=source, kind="note", start=t0 + timedelta(hours=i), title=f"event {i}",
                  text=f"Event number {i}", attributes={"n": i}, key=str(i), locator=f"line {i + 1}")
            for i in range(start, start + n)]


def _registry(events_by_name: dict[str, list[Event]], *, block: threading.Event | None = None,
              reached: threading.Event | None = None, fail_after: int | None = None) -> Registry:
    """An importer whose output is given per file name (a test fake)."""
    def recognize(entry: Entry) -> float:
        return 1.0 if entry.basename in events_by_name else 0.0

    def read(entry: Entry):
        for i, ev in enumerate(events_by_name[entry.basename]):
            if fail_after is not None and i == fail_after:
                raise RuntimeError("disk on fire")
            if block is not None and i == len(events_by_name[entry.basename]) // 2:
                reached.set()
                block.wait(10)
            yield ev

    return Registry([Importer("fake", "Fake export", "1", recognize, read)])


def _files(tmp_path, names):
    for n in names:
        (tmp_path / n).write_text(f"contents of {n}")
    return [tmp_path / n for n in names]


def test_new_store_has_current_schema(store):
    assert store.schema_version() == SCHEMA_VERSION
    tables = {r[0] for r in store.reader().execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert {"events", "imports", "import_duplicates", "meta"} <= tables


def test_migrates_a_version_1_store_keeping_its_data(tmp_path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute(_MIGRATIONS[0][1])
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO imports VALUES (1, 'x', 'x', 'abc', 'fake', '1', now(), now(), 1, 1, 0, 0, '[]')")
    con.execute("INSERT INTO events VALUES ('e1', 'test', 'note', 't', 'x', '2024-01-01', NULL, 60, '{}', 1, 'x', 'line 1', NULL)")
    con.close()
    with EventStore(path) as s:
        assert s.schema_version() == SCHEMA_VERSION
        assert s.count() == 1
        assert s.imports()[0]["batch"] is None
        # the v2 table works
        assert s.reader().execute("SELECT count(*) FROM import_duplicates").fetchone()[0] == 0


def test_refuses_a_store_from_a_newer_version(tmp_path):
    path = tmp_path / "new.duckdb"
    with EventStore(path):
        pass
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(StoreError, match="newer Hindsight"):
        EventStore(path)


def test_reimport_and_overlap_add_no_duplicates(store, tmp_path):
    a, b = _files(tmp_path, ["a.txt", "b.txt"])
    reg = _registry({"a.txt": _events(100), "b.txt": _events(100, start=50)})
    r1 = import_paths(store, [a], registry=reg)
    assert (r1.added, r1.duplicates) == (100, 0)
    r2 = import_paths(store, [a], registry=reg)
    assert r2.files[0].status == "already_imported" and r2.added == 0
    r3 = import_paths(store, [b], registry=reg)
    assert (r3.added, r3.duplicates) == (50, 50)
    assert store.count() == 150
    ids = store.reader().execute("SELECT count(DISTINCT id) FROM events").fetchone()[0]
    assert ids == 150


def test_repeats_inside_one_file_are_kept_once(store, tmp_path):
    (a,) = _files(tmp_path, ["a.txt"])
    evs = _events(10) + _events(5)  # the first five twice
    r = import_paths(store, [a], registry=_registry({"a.txt": evs}), batch_size=4)
    assert (r.added, r.duplicates) == (10, 5)
    assert store.count() == 10


def test_removing_an_import_removes_exactly_its_events(store, tmp_path):
    a, b = _files(tmp_path, ["a.txt", "b.txt"])
    reg = _registry({"a.txt": _events(100), "b.txt": _events(100, start=50)})
    import_paths(store, [a, b], registry=reg)
    ia, ib = (r["id"] for r in store.imports())
    # removing a keeps the 50 events b also contained
    removed = store.remove_import(ia)
    assert removed == 50
    assert store.count() == 100
    assert {r["import_id"] for r in store.events(limit=None)} == {ib}
    assert store.remove_import(ib) == 100
    assert store.count() == 0 and store.imports() == []
    with pytest.raises(StoreError, match="no import"):
        store.remove_import(ia)


def test_failing_file_keeps_nothing_and_others_import(store, tmp_path):
    a, b = _files(tmp_path, ["a.txt", "b.txt"])
    reg = _registry({"a.txt": _events(100), "b.txt": _events(100, start=1000)}, fail_after=70)
    r = import_paths(store, [a, b], registry=reg, batch_size=10)
    assert [f.status for f in r.files] == ["failed", "failed"]
    assert "disk on fire" in r.files[0].message and "a.txt" in r.files[0].message
    assert "nothing from this file was kept" in r.files[0].message
    assert store.count() == 0 and store.imports() == []
    ok = _registry({"a.txt": _events(100)})
    assert import_paths(store, [a], registry=ok).added == 100


def test_readers_see_committed_data_while_an_import_writes(store, tmp_path):
    a, b = _files(tmp_path, ["a.txt", "b.txt"])
    import_paths(store, [a], registry=_registry({"a.txt": _events(10)}))
    block, reached = threading.Event(), threading.Event()
    reg = _registry({"b.txt": _events(1000, start=100)}, block=block, reached=reached)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("r", import_paths(store, [b], registry=reg, batch_size=100)))
    t.start()
    assert reached.wait(10)
    # mid-file: 500 events of b are appended but not committed; a reader on another
    # thread is not blocked and sees only the committed 10
    seen = {}
    reader = threading.Thread(target=lambda: seen.setdefault("n", store.count()))
    reader.start()
    reader.join(5)
    assert seen.get("n") == 10
    block.set()
    t.join(20)
    assert result["r"].added == 1000
    assert store.count() == 1010


def test_cancel_keeps_nothing_from_the_file(store, tmp_path):
    (a,) = _files(tmp_path, ["a.txt"])
    cancel = threading.Event()
    seen = []

    def progress(p):
        seen.append(p.stage)
        if p.stage == "file_start":
            cancel.set()

    r = import_paths(store, [a], registry=_registry({"a.txt": _events(500)}), progress=progress,
                     cancel=cancel, batch_size=50)
    assert r.files[0].status == "cancelled"
    assert store.count() == 0 and store.imports() == []


def test_second_process_gets_a_clear_message(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "locked.duckdb"
    with EventStore(path):
        out = subprocess.run([sys.executable, "-c",
                              "import sys; from engine.store import EventStore, StoreError\n"
                              "try:\n    EventStore(sys.argv[1])\nexcept StoreError as e:\n    print(e)\n",
                              str(path)], capture_output=True, text=True, timeout=60)
    assert "open in another Hindsight process" in out.stdout


def test_events_filters(store, tmp_path):
    (a,) = _files(tmp_path, ["a.txt"])
    import_paths(store, [a], registry=_registry({"a.txt": _events(48)}))
    day2 = store.events(since=datetime(2024, 1, 2, tzinfo=UTC), until=datetime(2024, 1, 3, tzinfo=UTC))
    assert len(day2) == 24 and day2[0]["title"] == "event 24"
    assert len(store.events(search="number 4", limit=None)) == 9  # 4 and 40..47
    assert store.events(ids=[]) == []
    some = store.events(limit=3)
    assert [e["title"] for e in store.events(ids=[e["id"] for e in some])] == ["event 0", "event 1", "event 2"]
    assert store.event(some[0]["id"])["locator"] == "line 1"
    assert store.sources() == [{"source": "test", "kind": "note", "events": 48,
                                "first": datetime(2024, 1, 1), "last": datetime(2024, 1, 2, 23)}]


def test_same_bytes_under_another_name_is_a_new_file(store, tmp_path):
    """Two daily notes with the same text are two notes: the file name is part of
    what makes a file 'already imported'."""
    a, b = tmp_path / "2024-01-01.txt", tmp_path / "2024-01-02.txt"
    a.write_text("Quiet day.")
    b.write_text("Quiet day.")
    evs = {"2024-01-01.txt": _events(1), "2024-01-02.txt": _events(1, start=24)}
    r = import_paths(store, [a, b], registry=_registry(evs))
    assert [f.status for f in r.files] == ["imported", "imported"]
    assert store.count() == 2


def test_small_files_share_a_transaction_but_fail_alone(store, tmp_path):
    files = _files(tmp_path, ["a.txt", "b.txt", "c.txt"])
    evs = {"a.txt": _events(10), "b.txt": _events(10, start=100), "c.txt": _events(10, start=5)}

    def read(entry):
        if entry.basename == "b.txt":
            yield evs["b.txt"][0]
            raise ValueError("bad record")
        yield from evs[entry.basename]

    reg = Registry([Importer("fake", "Fake export", "1", lambda e: 1.0, read)])
    r = import_paths(store, files, registry=reg)
    assert [(f.status, f.added, f.duplicates) for f in r.files] == [
        ("imported", 10, 0), ("failed", 0, 0), ("imported", 5, 5)]
    assert "bad record" in r.files[1].message
    assert store.count() == 15
    assert len(store.imports()) == 2
    # the event c shares with a belongs to a; removing a hands it over to c
    a_id, c_id = (i["id"] for i in store.imports())
    assert store.remove_import(a_id) == 5
    assert store.count() == 10


def test_sources_give_local_dates(store, tmp_path):
    """A note written at 00:30 on New Year's Day in Berlin is 2023, not 2022 (UTC)."""
    (a,) = _files(tmp_path, ["a.txt"])
    berlin = timezone(timedelta(hours=1))
    new_year = Event(source="journal", kind="note", start=datetime(2023, 1, 1, 0, 30, tzinfo=berlin),
                     title="New year", text="Happy new year", tz_offset_min=60)
    import_paths(store, [a], registry=_registry({"a.txt": [new_year]}))
    [row] = store.sources()
    assert row["first"] == datetime(2023, 1, 1, 0, 30) == row["last"]


def test_a_large_import_is_stored_in_small_row_groups_and_spills_beside_the_store(tmp_path):
    """A row group's columns are held in memory while an import commits: mail bodies
    in DuckDB's default 122,880-row groups cost hundreds of MB (engine.store.ROW_GROUP_ROWS)."""
    path = tmp_path / "data" / "hindsight.duckdb"
    store = EventStore(path)
    import_paths(store, _files(tmp_path, ["big.txt"]), registry=_registry({"big.txt": _events(40_000)}))
    store.write(lambda con: con.execute("CHECKPOINT")).result()
    groups = store.reader().execute("SELECT row_group_id, max(count) FROM pragma_storage_info('events') "
                                    "GROUP BY row_group_id").fetchall()
    assert store.count() == 40_000
    assert len(groups) >= 3 and max(n for _, n in groups) <= 16_384, groups  # not one group of 40k rows
    setting = store.reader().execute("SELECT current_setting('temp_directory')").fetchone()[0]
    assert setting == str(path) + ".tmp"
    store.close()
    with EventStore(path, read_only=True) as again:  # reopened, read-only, the same events
        assert again.count() == 40_000
    with EventStore(path):  # a second writer in one process is refused by name
        with pytest.raises(StoreError, match="open already in this process"):
            EventStore(path)


def test_release_cache_gives_back_what_a_full_read_left_in_the_pool(tmp_path, monkeypatch):
    """A read of every row leaves its blocks in the buffer pool until the store
    closes; release_cache gives them back and keeps the store's memory limit."""
    import engine.store as store_module

    monkeypatch.setattr(store_module, "CACHE_FLOOR", "16MB")

    def pool_mb(con) -> float:
        return con.execute("SELECT sum(memory_usage_bytes) / 1e6 FROM duckdb_memory() "
                           "WHERE tag = 'BASE_TABLE'").fetchone()[0]

    with EventStore(tmp_path / "hindsight.duckdb", memory_limit="1GB") as store:
        store.write(lambda con: con.execute(
            "CREATE TABLE scratch AS SELECT range AS i, md5(range::VARCHAR) || md5((range + 1)::VARCHAR) AS s "
            "FROM range(1000000)")).result()
        store.write(lambda con: con.execute("CHECKPOINT")).result()
        con = store.reader()
        assert con.execute("SELECT count(DISTINCT s) FROM scratch").fetchone()[0] == 1_000_000
        floor_mb = 16
        assert pool_mb(con) > 2 * floor_mb  # what the read left cached
        store.release_cache().result()  # on the writer thread, not waited for by the caller
        assert pool_mb(con) <= floor_mb
        assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == \
            duckdb.connect(config={"memory_limit": "1GB"}).execute(
                "SELECT current_setting('memory_limit')").fetchone()[0]
        # and the table reads on, as whole as before
        assert con.execute("SELECT count(*), sum(i) FROM scratch").fetchone() == (1_000_000, 499_999_500_000)


def test_release_cache_does_not_wait_behind_an_import(tmp_path):
    """A refresh that ends while an import writes must not hold the index (and the
    questions waiting for it) until the import is done: release_cache only queues."""
    with EventStore(tmp_path / "hindsight.duckdb") as store:
        go = threading.Event()
        busy = store.write(lambda con: go.wait(10))  # an import, as the writer sees it
        t0 = time.perf_counter()
        released = store.release_cache()
        assert time.perf_counter() - t0 < 1 and not released.done()
        go.set()
        busy.result()
        assert released.result(timeout=10) is None
