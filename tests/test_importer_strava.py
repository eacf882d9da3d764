"""Strava activities.csv through the real pipeline: repeated column names,
German and French headers, locale date shapes, and the activity files it ignores."""
from __future__ import annotations

import shutil
import zipfile
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ingest import import_paths
from engine.store import EventStore
from importers import strava
from importers.base import Entry, ImportContext
from tests.reliability.contract import items_keep_the_contract

FIX = Path(__file__).parent / "fixtures"
HERE = FIX / "strava"
CTX = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def _import(store, path):
    return import_paths(store, [path], context=CTX).to_json()


def test_english_export_reads_the_detail_block(store):
    rep = _import(store, HERE / "activities.csv")
    assert rep["files"][0]["importer"] == "strava_activities" and rep["added"] == 3
    rows = {r["title"]: r for r in store.events(source="strava", kind="workout")}
    run = rows["Morning Run"]
    a = run["attributes"]
    # second-block metres and seconds, not the first block's rounded km
    assert a["distance_km"] == 10.021 and a["elapsed_min"] == 52.0 and a["duration_min"] == 50.08
    assert a["avg_heart_rate"] == 152 and a["max_heart_rate"] == 171 and a["calories"] == 689
    assert a["activity"] == "Run" and a["sport"] == "running" and a["commute"] is False
    assert run["start"] == datetime(2023, 3, 25, 7, 2, 23) and run["tz_offset_min"] == 60
    assert run["end"] == datetime(2023, 3, 25, 7, 54, 23)
    ride = rows["Night Ride, late"]
    assert ride["attributes"]["commute"] is True and ride["attributes"]["sport"] == "cycling"
    assert "25.50 km" in ride["text"] and "commute" in ride["text"]


def test_dst_change(store):
    _import(store, HERE / "activities.csv")
    rows = {r["title"]: r for r in store.events(source="strava")}
    # 12:30 AM and 1:30 AM UTC on 2023-10-29 fall either side of Berlin's change
    assert rows["Night Ride, late"]["tz_offset_min"] == 120
    assert rows["Swim"]["tz_offset_min"] == 60


def test_german_headers_and_dates(store):
    rep = _import(store, HERE / "de" / "activities.csv")
    assert rep["added"] == 2
    rows = {r["title"]: r for r in store.events(source="strava")}
    lauf = rows["Abendlauf"]
    assert lauf["start"] == datetime(2023, 3, 25, 7, 2, 23)
    assert lauf["attributes"]["distance_km"] == 10.021 and lauf["attributes"]["sport"] == "running"
    tour = rows["Radtour"]
    assert tour["start"] == datetime(2023, 9, 12, 17, 0) and tour["attributes"]["commute"] is True
    assert tour["attributes"]["sport"] == "cycling" and tour["attributes"]["elapsed_min"] == 120.0


def test_french_headers_and_dates(store):
    rep = _import(store, HERE / "fr" / "activities.csv")
    assert rep["added"] == 2
    rows = {r["title"]: r for r in store.events(source="strava")}
    velo = rows["Sortie vélo"]
    assert velo["start"] == datetime(2018, 9, 12, 15, 2, 23)
    assert velo["attributes"]["avg_heart_rate"] == 140 and velo["attributes"]["distance_km"] == 40.1
    assert rows["Course du matin"]["start"] == datetime(2019, 2, 3, 8, 0)
    assert rows["Course du matin"]["attributes"]["sport"] == "running"


@pytest.mark.parametrize("text, expected", [
    ("Sep 12, 2018, 3:02:23 PM", datetime(2018, 9, 12, 15, 2, 23)),
    ("Sep 12, 2018, 12:02:23 AM", datetime(2018, 9, 12, 0, 2, 23)),
    ("12 Sep 2018, 15:02:23", datetime(2018, 9, 12, 15, 2, 23)),
    ("12.09.2018, 15:02:23", datetime(2018, 9, 12, 15, 2, 23)),
    ("12. März 2018, 15:02:23", datetime(2018, 3, 12, 15, 2, 23)),
    ("12 juil. 2018, 15:02:23", datetime(2018, 7, 12, 15, 2, 23)),
    ("2018-09-12 15:02:23", datetime(2018, 9, 12, 15, 2, 23)),
])
def test_date_shapes(text, expected):
    assert strava.parse_activity_date(text).replace(tzinfo=None) == expected


def test_folder_with_activity_files_zip_and_reimport(store, tmp_path):
    rep = _import(store, HERE / "export")
    assert rep["added"] == 2 and not rep["unrecognized"]
    ignored = {Path(i["path"]).name for i in rep["ignored"]}
    assert {"8000000001.fit.gz", "8000000002.gpx"} <= ignored
    z = tmp_path / "export_123.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for p in (HERE / "export").rglob("*"):
            if p.is_file():
                zf.write(p, p.relative_to(HERE / "export").as_posix())
    rep = _import(store, z)
    assert rep["files"][0]["status"] == "already_imported" and rep["added"] == 0
    # the full file overlaps: two duplicates, one new
    rep = _import(store, HERE / "activities.csv")
    assert rep["added"] == 1 and rep["duplicates"] == 2


def test_broken_rows(store, tmp_path):
    rep = _import(store, HERE / "broken" / "activities.csv")
    f = rep["files"][0]
    by_line = {i["locator"]: i["reason"] for i in f["issues"]}
    assert "Activity Date" in by_line["line 3"]
    assert "Activity ID" in by_line["line 4"]
    assert "fast" in by_line["line 5"]  # bad number left out, the activity kept
    assert "truncated" in by_line["line 6"]
    assert {r["title"] for r in store.events(source="strava")} == {"Morning Run", "Bad HR"}
    latin = tmp_path / "activities.csv"
    latin.write_bytes((HERE / "de" / "activities.csv").read_text("utf-8").encode("cp1252"))
    rep = _import(store, latin)
    assert rep["files"][0]["added"] == 2
    assert "not UTF-8" in rep["files"][0]["issues"][0]["reason"]


def test_recognize_is_zero_for_other_fixtures():
    for path in FIX.rglob("*"):
        if path.is_file() and HERE not in path.parents:
            entry = Entry.from_path(str(path), context=CTX)
            for imp in strava.IMPORTERS:
                assert imp.recognize(entry) == 0, (imp.name, path)


VALID = (HERE / "activities.csv").read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes(data):
    items_keep_the_contract(strava.read_activities(Entry.from_bytes("activities.csv", data, CTX)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(VALID) - 1), st.binary(min_size=1, max_size=8), st.integers(0, 60))
def test_fuzz_mutated_valid_file(pos, patch, cut):
    data = VALID[:pos] + patch + VALID[pos + len(patch):len(VALID) - cut]
    items_keep_the_contract(strava.read_activities(Entry.from_bytes("activities.csv", data, CTX)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=40))
def test_fuzz_date_parser_raises_only_its_own_error(text):
    try:
        strava.parse_activity_date(text)
    except strava.StravaFormatError:
        pass
