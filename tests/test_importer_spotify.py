"""Spotify: extended and basic streaming history, as files, folders and zips."""
from __future__ import annotations

import json
import zipfile
from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from engine.ingest import import_paths
from importers.base import Entry, ImportIssue
from importers.spotify import read_basic, read_extended
from tests.conftest import FIXTURES
from tests.reliability.contract import items_keep_the_contract

SPOTIFY = FIXTURES / "spotify"


def test_extended_history_kinds_times_and_attributes(store, berlin):
    report = import_paths(store, [SPOTIFY / "Streaming_History_Audio_2023_0.json"], context=berlin)
    assert report.files[0].importer == "spotify_extended"
    assert report.added == 4 and report.skipped == 0
    rows = store.events(source="spotify")
    kinds = [r["kind"] for r in rows]
    assert kinds == ["music_stream", "music_stream", "podcast_stream", "audiobook_stream"]
    first, second = rows[0], rows[1]
    # ts is the UTC end; start = end - ms_played
    assert first["end"] == datetime(2023, 3, 26, 0, 30)
    assert first["start"] == datetime(2023, 3, 26, 0, 26, 55)
    # Berlin switched to summer time at 01:00 UTC that night
    assert first["tz_offset_min"] == 60
    assert second["tz_offset_min"] == 120
    assert first["attributes"]["artist"] == "Harbour Lights"
    assert first["attributes"]["track"] == "Midnight Ferry"
    assert second["attributes"]["skipped"] is True and second["attributes"]["shuffle"] is True
    assert "Midnight Ferry" in first["text"] and "Harbour Lights" in first["text"]
    podcast = rows[2]
    assert podcast["attributes"]["show"] == "Structures Weekly"
    assert podcast["attributes"]["minutes_played"] == 40.0


def test_endsong_and_basic_history(store, berlin):
    import_paths(store, [SPOTIFY / "endsong_0.json", SPOTIFY / "StreamingHistory_music_0.json",
                         SPOTIFY / "StreamingHistory_podcast_0.json"], context=berlin)
    rows = store.events(source="spotify")
    assert len(rows) == 4
    basic = [r for r in rows if r["start"].year == 2022]
    # 00:59 UTC on 2022-10-30 is still summer time in Berlin; 01:10 UTC is winter time
    assert [r["tz_offset_min"] for r in basic[:2]] == [120, 60]
    assert basic[1]["attributes"]["artist"] == "Élodie Marchand"
    assert basic[2]["kind"] == "podcast_stream"


def test_broken_records_become_issues_and_the_rest_imports(store, berlin):
    report = import_paths(store, [SPOTIFY / "broken"], context=berlin)
    f = report.files[0]
    assert f.status == "imported"
    assert f.added == 2
    reasons = {i["locator"]: i["reason"] for i in f.issues}
    assert "missing field 'ts'" in reasons["item 2"]
    assert "timestamp" in reasons["item 3"]
    assert "expected an object" in reasons["item 4"]
    assert any("truncated" in r or "broken" in r for r in reasons.values())


def test_zip_and_reimport_adds_nothing(store, berlin, tmp_path):
    z = tmp_path / "my_spotify_data.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(SPOTIFY / "Streaming_History_Audio_2023_0.json", "Spotify Extended Streaming History/Streaming_History_Audio_2023_0.json")
        zf.writestr("Spotify Extended Streaming History/ReadMeFirst_ExtendedStreamingHistory.pdf", b"%PDF-1.4")
    first = import_paths(store, [z], context=berlin)
    assert first.added == 4
    assert first.unrecognized == ["%s/Spotify Extended Streaming History/ReadMeFirst_ExtendedStreamingHistory.pdf" % z]
    again = import_paths(store, [z], context=berlin)
    assert again.added == 0 and again.files[0].status == "already_imported"
    # an overlapping, newer export: two known plays and one new one
    recs = json.loads((SPOTIFY / "Streaming_History_Audio_2023_0.json").read_text())[:2]
    recs.append(dict(recs[0], ts="2023-12-01T10:00:00Z"))
    newer = tmp_path / "Streaming_History_Audio_2023-2024_0.json"
    newer.write_text(json.dumps(recs))
    overlap = import_paths(store, [newer], context=berlin)
    assert (overlap.added, overlap.duplicates) == (1, 2)
    assert store.count() == 5


@pytest.mark.parametrize("name, head, expected", [
    ("Streaming_History_Audio_2023_0.json", b'[{"ts": "2023-01-01T00:00:00Z", "ms_played": 1', "spotify_extended"),
    ("endsong_3.json", b'[{"ts":"2021-01-01T00:00:00Z","username":"x","ms_played":1', "spotify_extended"),
    ("whatever.json", b'[\n  {"ts": "2023-01-01T00:00:00Z", "platform": "ios", "ms_played": 5', "spotify_extended"),
    ("StreamingHistory0.json", b'[\n  {\n    "endTime" : "2020-01-01 10:00",\n    "artistName" : "A",\n    "trackName" : "B",\n    "msPlayed" : 1', "spotify_basic"),
    ("StreamingHistory_podcast_0.json", b'[{"endTime":"2020-01-01 10:00","podcastName":"P","episodeName":"E","msPlayed":1}]', "spotify_basic"),
])
def test_recognized_by_content(name, head, expected):
    from importers.registry import default_registry

    imp, conf = default_registry().best(Entry.from_bytes(name, head))
    assert imp is not None and imp.name == expected and conf >= 0.5


def test_other_json_is_not_claimed():
    from importers.spotify import IMPORTERS

    e = Entry.from_bytes("data.json", b'[{"title": "x", "time": "2020-01-01T00:00:00Z"}]')
    assert all(i.recognize(e) == 0 for i in IMPORTERS)


def _consume(reader, data: bytes) -> list:
    return items_keep_the_contract(reader(Entry.from_bytes("Streaming_History_Audio_2023_0.json", data)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_fuzz_random_bytes_never_raise(data):
    for reader in (read_extended, read_basic):
        out = _consume(reader, data)
        assert all(isinstance(x, ImportIssue) or x.source == "spotify" for x in out)


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=False),
                    st.text(max_size=30), st.lists(st.integers(), max_size=2))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.sampled_from(
    ["ts", "ms_played", "master_metadata_track_name", "master_metadata_album_artist_name", "spotify_track_uri",
     "episode_name", "audiobook_title", "platform", "skipped", "endTime", "msPlayed", "artistName", "trackName",
     "podcastName"]), _VALUES), max_size=5))
def test_fuzz_mutated_records_never_raise(records):
    data = json.dumps(records).encode()
    for reader in (read_extended, read_basic):
        _consume(reader, data)


def test_extreme_values_are_issues_not_crashes():
    data = json.dumps([{"ts": "0001-01-01T00:00:00Z", "ms_played": 10**9},
                       {"endTime": "0001-01-01 00:00", "msPlayed": 10**9, "artistName": "A", "trackName": "T"}]).encode()
    assert all(isinstance(x, ImportIssue) for x in _consume(read_extended, data)[:1])
    assert all(isinstance(x, ImportIssue) for x in _consume(read_basic, data)[1:])


def test_truncation_is_located_at_the_broken_item():
    issues = [x for x in _consume(read_extended, (SPOTIFY / "broken" / "Streaming_History_Audio_2024_1.json").read_bytes())
              if isinstance(x, ImportIssue)]
    assert issues[-1].locator == "item 6"
    assert "after 5 complete items" in issues[-1].reason
