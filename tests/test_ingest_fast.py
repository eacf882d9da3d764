"""The fast import path (chunked orjson reading, columnar batches, reading ahead on
its own thread) must store exactly what the generic path stores and report the
same issues."""
from __future__ import annotations

import dataclasses
import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

import importers._json as json_reading
from app.bench.scale import write_spotify_extended
from engine.ingest import import_paths
from engine.store import EventStore, batch_to_arrow, events_to_arrow
from importers.base import (Event, EventBatch, ImportContext, Importer, ImportIssue, LocalOffsets, event_id,
                            offset_minutes)
from importers.registry import Registry, default_registry
from tests.conftest import FIXTURES

SPOTIFY = FIXTURES / "spotify"

_RECORDS = [{"ts": "2023-01-01T10:00:00Z", "title": "}, {\"x\": 1}", "nested": {"a": {"b": [1, {"c": "},"}]}}},
            {"ts": "2023-01-01T11:00:00Z", "n": -0.0, "f": 1.5e300, "small": 1e-300, "u": "é\u2028"},
            {"ts": "2023-01-01T12:00:00Z", "list": [{}, {"d": []}], "none": None}] * 7
_GOOD = json.dumps(_RECORDS, indent=2).encode()


def _cases() -> list[bytes]:
    cut = _GOOD.index(b'"2023-01-01T12:00:00Z"', 600)
    return [
        _GOOD, json.dumps(_RECORDS).encode(), b"[]", b" [\n ]\n", b"", b"{}", b'{"a": [1, 2]}', b"\xef\xbb\xbf[1]",
        b"[1, 2, 3]", _GOOD[:-40],  # truncated
        _GOOD[:cut] + b"\xff" + _GOOD[cut:],  # a bad byte in a later item
        _GOOD[:cut] + b"#" + _GOOD[cut + 1:],  # a bad character
        _GOOD.replace(b"-0.0", b"123456789012345678901", 1),  # an integer yajl refuses; ijson's Python parser reads it
        _GOOD.replace(b"-0.0", b"9223372036854775808", 1),  # one orjson would read
        _GOOD.replace(b"1.5e+300", b"1e400", 1),  # a float that overflows
        _GOOD.replace(b"-0.0", b"NaN", 1),
        _GOOD.replace(b'"\\u00e9', b'"\\ud800', 1),  # a lone surrogate: ijson keeps it
        _GOOD + b" trailing", _GOOD[:-2] + b"]]",
    ]


def _items(data: bytes, fast: bool) -> list:
    """The chunked orjson reading, or ijson alone (which may read the file again, with
    its Python parser, for an integer past 64 bits)."""
    def reopen():
        return io.BytesIO(data)
    items = (json_reading.iter_array(io.BytesIO(data), reopen=reopen) if fast
             else json_reading._ijson_items(io.BytesIO(data), "item", reopen=reopen))
    return [(x.locator, x.reason) if isinstance(x, ImportIssue) else x for x in items]


@pytest.mark.parametrize("chunk", [5, 64, 1 << 20])
@pytest.mark.parametrize("data", _cases())
def test_chunked_reading_gives_what_ijson_gives(data, chunk, monkeypatch):
    monkeypatch.setattr(json_reading, "CHUNK_BYTES", chunk)
    assert _items(data, fast=True) == _items(data, fast=False)


def test_a_clean_file_is_read_once(monkeypatch):
    monkeypatch.setattr(json_reading, "CHUNK_BYTES", 64)

    def reopen():
        raise AssertionError("a clean file must not be handed to ijson")

    items = list(json_reading.iter_array(io.BytesIO(_GOOD), reopen=reopen))
    assert [i for i, _ in items] == list(range(len(_RECORDS)))
    assert [rec for _, rec in items] == json.loads(_GOOD)


def _rows(store: EventStore) -> list[tuple]:
    return store.reader().execute(
        'SELECT id, source, kind, title, text, start, "end", tz_offset_min, attributes::VARCHAR, file, locator, raw '
        "FROM events ORDER BY id").fetchall()


def test_batches_store_exactly_what_single_events_store(tmp_path):
    """The same files through read_batches and through read (the generic path)."""
    generated = write_spotify_extended(tmp_path / "Streaming_History_Audio_2019.json", 2_500)
    files = [SPOTIFY / "Streaming_History_Audio_2023_0.json", SPOTIFY / "endsong_0.json", SPOTIFY / "broken",
             generated]
    context = ImportContext(home_tz=ZoneInfo("America/St_Johns"))
    fast_registry = default_registry()
    extended = fast_registry.get("spotify_extended")
    assert extended.read_batches is not None
    generic_registry = Registry([dataclasses.replace(extended, read_batches=None)])
    reports, rows = [], []
    for name, registry in (("fast", fast_registry), ("generic", generic_registry)):
        with EventStore(tmp_path / name / "hindsight.duckdb") as store:
            r = import_paths(store, files, registry=registry, context=context, batch_size=700)
            reports.append([(f.path, f.status, f.read, f.added, f.skipped, f.issues) for f in r.files])
            rows.append(_rows(store))
    assert reports[0] == reports[1]
    assert rows[0] == rows[1]
    assert len(rows[0]) == 4 + 1 + 2 + 2_500
    assert {f[1] for f in reports[0]} == {"imported"}


def test_a_batch_without_keys_hashes_like_an_event():
    start = datetime(2024, 5, 1, 8, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    batch = EventBatch("notes", kind=["note", "note"], title=["a", "b"], text=["x", "y"], start=[start, start],
                       end=[None, start + timedelta(hours=1)], tz_offset_min=[120, 120],
                       attributes=[{"k": 1}, {}], key=["", "n-2"], locator=["1", "2"], raw=[None, None])
    events = list(batch.events())
    assert events[0].start == start and events[1].end == start + timedelta(hours=1)
    assert batch.ids() == [event_id(e) for e in events]
    assert batch.ids()[0] != batch.ids()[1]
    # the store keeps UTC wall time, whichever way the rows arrive
    assert batch_to_arrow(batch, 1, "f").equals(events_to_arrow(
        [dataclasses.replace(e, file="f") for e in events], 1))


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/St_Johns", "Australia/Lord_Howe", "Asia/Kathmandu"])
def test_memoised_offsets_are_exact_around_transitions(zone):
    tz = ZoneInfo(zone)
    offsets = LocalOffsets(tz)
    t = datetime(2023, 1, 1, tzinfo=timezone.utc)
    seen = set()
    while t < datetime(2024, 1, 1, tzinfo=timezone.utc):
        expected = offset_minutes(t, tz)
        assert offsets(t) == expected, t
        seen.add(expected)
        t += timedelta(minutes=7, seconds=13)
    assert len(seen) == (1 if zone == "Asia/Kathmandu" else 2)


def _fake(read=None, read_batches=None) -> Registry:
    return Registry([Importer("fake", "Fake export", "1", lambda e: 1.0, read or (lambda e: iter(())),
                              read_batches=read_batches)])


def _event(i: int) -> Event:
    return Event(source="fake", kind="thing", start=datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(hours=i),
                 key=f"k{i}")


@pytest.mark.parametrize("batched", [False, True])
def test_an_importer_failing_mid_file_keeps_nothing_and_says_where(store, tmp_path, batched):
    def read(entry):
        yield _event(1)
        yield ImportIssue("row 2", "no date")
        yield _event(3)
        raise RuntimeError("parser bug")

    def read_batches(entry, size):
        yield EventBatch("fake", kind=["thing"], title=[""], text=[""], start=[_event(1).start], end=[None],
                         tz_offset_min=[0], attributes=[{}], key=["k1"], locator=["1"], raw=[None])
        yield ImportIssue("row 2", "no date")
        raise RuntimeError("parser bug")

    f = tmp_path / "x.fake"
    f.write_text("x")
    registry = _fake(read, read_batches if batched else None)
    fr = import_paths(store, [f], registry=registry).files[0]
    assert fr.status == "failed"
    assert f"after record {2 if batched else 3}: RuntimeError: parser bug" in fr.message
    assert store.count() == 0


def test_an_import_runs_under_the_import_memory_limit_and_restores_the_store_limit(tmp_path):
    seen = []
    with EventStore(tmp_path / "s" / "hindsight.duckdb", memory_limit="700MB", import_memory_limit="100MB") as store:
        def setting() -> str:
            return store.reader().execute("SELECT current_setting('memory_limit')").fetchone()[0]

        before = setting()

        def read(entry):
            seen.append(setting())
            yield _event(1)

        f = tmp_path / "x.fake"
        f.write_text("x")
        assert import_paths(store, [f], registry=_fake(read)).added == 1
        assert setting() == before
    assert seen and seen[0] != before
    assert seen[0].startswith(("95", "100")) and before.startswith(("667", "700"))


def test_many_small_files_in_one_group_each_get_their_rows(store, tmp_path):
    """One transaction for the group, one reading thread per file, in order."""
    paths = []
    for n in range(30):
        p = Path(tmp_path / f"endsong_{n}.json")
        p.write_text(json.dumps([{"ts": f"2020-01-01T00:{n:02d}:00Z", "ms_played": 1000 + n,
                                  "master_metadata_track_name": f"T{n}", "spotify_track_uri": f"spotify:track:{n}"}]))
        paths.append(p)
    r = import_paths(store, paths)
    assert [f.added for f in r.files] == [1] * 30
    assert len({f.import_id for f in r.files}) == 30
    rows = store.reader().execute("SELECT file, title FROM events ORDER BY file").fetchall()
    assert all(title == f"T{Path(file).stem.split('_')[1]}" for file, title in rows)


def test_an_importer_that_fails_before_yielding_is_reported_not_waited_for(store, tmp_path):
    import threading

    def read(entry):  # not a generator: it fails on the call itself
        raise ValueError("cannot read this")

    f = tmp_path / "x.fake"
    f.write_text("x")
    out = []
    worker = threading.Thread(target=lambda: out.append(import_paths(store, [f], registry=_fake(read))), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert out, "the import hung waiting for the reading thread"
    fr = out[0].files[0]
    assert fr.status == "failed" and "ValueError: cannot read this" in fr.message


def test_a_file_of_bad_records_counts_every_issue_and_lists_the_first_thousand(store, tmp_path):
    def read(entry):
        for i in range(2_500):
            yield ImportIssue(f"row {i + 1}", "no date")
        yield _event(1)

    f = tmp_path / "x.fake"
    f.write_text("x")
    fr = import_paths(store, [f], registry=_fake(read)).files[0]
    assert (fr.read, fr.added, fr.skipped) == (2_501, 1, 2_500)
    assert len(fr.issues) == 1_001 and fr.issues[0]["locator"] == "row 1"
    assert fr.issues[-1]["reason"] == "more issues not listed"


def test_a_batch_of_long_texts_is_handed_on_by_its_size_not_only_its_count(store, tmp_path, monkeypatch):
    """Memory stays bounded by text, not by event count: 60 mails of 4,000 characters
    go to the writer in batches of at most 10,000 characters' worth (3 mails), and all
    of them are stored."""
    from datetime import datetime, timezone

    from engine import ingest
    from importers.base import Event, Importer
    from importers.registry import Registry

    sizes = []
    real = ingest.events_to_arrow
    monkeypatch.setattr(ingest, "events_to_arrow", lambda events, import_id: sizes.append(len(events))
                        or real(events, import_id))
    monkeypatch.setattr(ingest, "BATCH_BYTES", 10_000)
    mails = [Event(source="mail", kind="message", start=datetime(2024, 1, 1 + i % 28, tzinfo=timezone.utc),
                   title=f"Mail {i}", text="x" * 4000, key=str(i)) for i in range(60)]
    f = tmp_path / "box.txt"
    f.write_text("x")
    reg = Registry([Importer("fake", "Fake", "1", lambda e: 1.0, lambda e: iter(mails))])
    assert ingest.import_paths(store, [f], registry=reg).added == 60
    assert sum(sizes) == 60 and max(sizes) <= 3
