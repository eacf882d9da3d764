"""Garmin summarizedActivities.json through the real pipeline."""
from __future__ import annotations

import json
import zipfile
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ingest import import_paths
from engine.store import EventStore
from importers import garmin
from importers.base import Entry, ImportContext
from tests.reliability.contract import items_keep_the_contract

FIX = Path(__file__).parent / "fixtures"
HERE = FIX / "garmin"
MAIN = HERE / "DI_CONNECT" / "DI-Connect-Fitness" / "erika@example.com_0_summarizedActivities.json"
CTX = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def _import(store, path):
    return import_paths(store, [path], context=CTX).to_json()


def test_activities_units_and_offsets(store):
    rep = _import(store, MAIN)
    assert rep["files"][0]["importer"] == "garmin_activities" and rep["added"] == 3
    rows = store.events(source="garmin", kind="workout")
    first, second, ride = rows
    # distance is in centimetres, durations in milliseconds
    a = first["attributes"]
    assert a["distance_km"] == 10.021 and a["duration_min"] == 49.5 and a["elapsed_min"] == 51.0
    assert a["avg_heart_rate"] == 148 and a["max_heart_rate"] == 175 and a["calories"] == 650
    assert a["sport"] == "running" and a["activity"] == "running" and a["hr_zone_2_min"] == 15.0
    # offset comes from startTimeLocal - beginTimestamp, across the spring DST change
    assert (first["start"], first["tz_offset_min"]) == (datetime(2023, 3, 25, 6, 0), 60)
    assert (second["start"], second["tz_offset_min"]) == (datetime(2023, 3, 26, 6, 0), 120)
    # a trip abroad keeps the offset Garmin recorded, not the home zone's
    assert ride["tz_offset_min"] == -240 and ride["attributes"]["sport"] == "cycling"
    assert ride["end"] == datetime(2023, 7, 1, 17, 1)
    assert "50.00 km" in ride["text"] and "New York" in ride["text"]


def test_attribute_names_match_strava():
    from importers import strava
    g = next(garmin.read_activities(Entry.from_path(str(MAIN), context=CTX)))
    s = next(e for e in strava.read_activities(Entry.from_path(str(FIX / "strava" / "activities.csv"),
                                                                context=CTX)) if hasattr(e, "attributes"))
    shared = {"activity", "sport", "distance_km", "duration_min", "elapsed_min", "avg_heart_rate",
              "max_heart_rate", "calories", "name"}
    assert shared <= g.attributes.keys() and shared <= s.attributes.keys()


def test_bare_array_folder_zip_reimport(store, tmp_path):
    rep = _import(store, HERE / "bare_summarizedActivities.json")
    assert rep["added"] == 1
    z = tmp_path / "garmin_export.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(MAIN, "DI_CONNECT/DI-Connect-Fitness/erika@example.com_0_summarizedActivities.json")
        zf.writestr("DI_CONNECT/DI-Connect-Fitness/erika@example.com_0_personalRecord.json", "[]")
    rep = _import(store, z)
    # one activity was already there from the bare file
    assert rep["added"] == 2 and rep["duplicates"] == 1
    assert any("personalRecord" in i["path"] for i in rep["ignored"])
    rep = _import(store, MAIN.parent.parent)
    assert rep["files"][0]["status"] == "already_imported"


def test_broken_records_and_truncated_file(store):
    rep = _import(store, HERE / "broken")
    files = {Path(f["path"]).name: f for f in rep["files"]}
    bad = files["x_summarizedActivities.json"]
    assert bad["added"] + bad["duplicates"] == 2
    reasons = {i["locator"]: i["reason"] for i in bad["issues"]}
    assert "beginTimestamp" in reasons["activity 2 (activityId 11000000004)"]
    assert "distance" in reasons["activity 3 (activityId 11000000005)"]
    assert "found str" in reasons["activity 4"]
    cut = files["truncated_summarizedActivities.json"]
    assert "truncated" in cut["issues"][-1]["reason"]
    assert len(store.events(source="garmin")) == 2


def test_local_offset_rounding():
    assert garmin.local_offset_min(1_700_000_000_000, 1_700_000_000_000 + 3_600_000 + 999) == 60
    assert garmin.local_offset_min(1_700_000_000_000, 1_700_000_000_000 + 19_800_000) == 330
    assert garmin.local_offset_min(1_700_000_000_000, None) is None


def test_recognize_is_zero_for_other_fixtures():
    for path in FIX.rglob("*"):
        if path.is_file() and HERE not in path.parents:
            entry = Entry.from_path(str(path), context=CTX)
            for imp in garmin.IMPORTERS:
                assert imp.recognize(entry) == 0, (imp.name, path)


VALID = MAIN.read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes(data):
    items_keep_the_contract(garmin.read_activities(Entry.from_bytes("x_summarizedActivities.json", data, CTX)))


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                           max_leaves=10)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(VALID) - 1), st.binary(min_size=1, max_size=8),
       st.sampled_from(["beginTimestamp", "startTimeLocal", "duration", "distance", "avgHr", "name",
                        "activityType", "activityId"]), json_values)
def test_fuzz_mutated_records(pos, patch, field, value):
    items_keep_the_contract(garmin.read_activities(Entry.from_bytes(
        "x_summarizedActivities.json", VALID[:pos] + patch + VALID[pos + len(patch):], CTX)))
    recs = json.loads(VALID)
    recs[0]["summarizedActivitiesExport"][0][field] = value
    data = json.dumps(recs, allow_nan=True).encode()
    items_keep_the_contract(garmin.read_activities(Entry.from_bytes("x_summarizedActivities.json", data, CTX)))
