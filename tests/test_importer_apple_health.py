"""Apple Health export.xml through the real pipeline: workouts (old and new attribute
shapes), daily totals per local day with one source counted, sleep nights, Activity
rings, DST, zips, re-imports, broken files and fuzzing."""
from __future__ import annotations

import zipfile
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ingest import import_paths
from engine.store import EventStore
from importers import apple_health
from importers.base import Entry, Event, ImportContext, ImportIssue
from tests.conftest import SHARED
from tests.reliability.contract import items_keep_the_contract

FIXTURES = Path(__file__).parent / "fixtures"
FIX = FIXTURES / "apple_health"
REAL = SHARED / "data/apple-health/export.xml"
BERLIN = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def run(store, *paths):
    return import_paths(store, list(paths), context=BERLIN)


def by_key(store, **kw) -> dict:
    out = {}
    for e in store.events(**kw):
        a = e["attributes"]
        ident = a.get("metric"), a.get("date") or a.get("night") or a.get("activity")
        out[ident] = e
    return out


def test_fixture_export_gives_workouts_daily_totals_sleep_and_rings(store):
    report = run(store, FIX / "export.xml").to_json()
    (f,) = report["files"]
    assert f["importer"] == "apple_health" and f["status"] == "imported"
    # the export date's partial day is left out, and the report says why
    assert [i["locator"] for i in f["issues"]] == ["daily totals for 2024-04-01"]

    workouts = {e["attributes"]["activity"]: e for e in store.events(kind="workout")}
    assert set(workouts) == {"cycling", "traditional strength training", "running"}
    run_ = workouts["running"]["attributes"]
    # iOS 16+ WorkoutStatistics
    assert run_["distance_km"] == 8.02 and run_["calories"] == 612
    assert (run_["avg_heart_rate"], run_["max_heart_rate"]) == (152, 178)
    assert run_["duration_min"] == 45.2 and run_["elevation_gain_m"] == 45.2
    assert run_["device"] == "Apple Watch" and run_["app"] == "Testperson’s Apple Watch"
    # iOS <= 15 attributes in miles and kilojoules, converted
    cyc = workouts["cycling"]["attributes"]
    assert cyc["distance_km"] == 20.0 and cyc["calories"] == 500
    assert "distance_km" not in workouts["traditional strength training"]["attributes"]
    assert workouts["traditional strength training"]["attributes"]["calories"] == 185
    assert "8.02 km" in workouts["running"]["text"] and "152 bpm" in workouts["running"]["text"]

    days = by_key(store, kind="health_summary")
    # iPhone 3500 vs Watch 3300 on the same walks: the larger source, never the sum
    steps30 = days[("steps", "2024-03-30")]["attributes"]
    assert steps30["steps"] == 3500 and steps30["source_used"] == "Testperson’s iPhone"
    assert steps30["by_source"] == {"Testperson’s Apple Watch": 3300, "Testperson’s iPhone": 3500}
    assert days[("steps", "2024-03-31")]["attributes"]["steps"] == 4000
    assert ("steps", "2024-04-01") not in days
    assert days[("walking_running_distance", "2024-03-30")]["attributes"]["distance_km"] == 1.2  # 1200 m
    hr = days[("heart_rate", "2024-03-31")]["attributes"]
    assert (hr["min_bpm"], hr["avg_bpm"], hr["max_bpm"], hr["samples"]) == (58, 90, 140, 3)
    rings = days[("activity", "2024-03-31")]["attributes"]
    assert rings["active_energy_kcal"] == 702.8 and rings["exercise_min"] == 52
    assert rings["stand_hours"] == 12 and rings["rings_closed"] == 3
    assert ("activity", "2019-01-01") not in days  # all-zero day before a Watch existed

    sleep = {e["attributes"]["night"]: e for e in store.events(kind="sleep")}
    assert set(sleep) == {"2024-03-28", "2024-03-30"}
    night = sleep["2024-03-30"]["attributes"]
    # Watch stages 120+60+90+110 min asleep (awake excluded); iPhone in bed 23:00 CET-07:30 CEST
    assert night["asleep_min"] == 380 and night["in_bed_min"] == 450
    assert (night["deep_min"], night["rem_min"], night["awake_min"]) == (60, 90, 10)
    assert sleep["2024-03-28"]["attributes"]["asleep_min"] == 450  # pre-iOS 16 "Asleep" value
    assert store.count() == 3 + 3 + 1 + 2 + 2  # workouts, steps/distance days, hr, rings, nights


def test_utc_and_offsets_across_the_spring_dst_change(store):
    run(store, FIX / "export.xml")
    days = by_key(store, kind="health_summary")
    # 2024-03-31 in Berlin begins at 00:00 CET (+01:00) and ends 00:00 CEST
    s31 = days[("steps", "2024-03-31")]
    assert s31["start"] == datetime(2024, 3, 30, 23, 0) and s31["tz_offset_min"] == 60
    assert days[("activity", "2024-03-31")]["start"] == datetime(2024, 3, 30, 23, 0)
    assert days[("activity", "2024-03-30")]["start"] == datetime(2024, 3, 29, 23, 0)
    running = next(e for e in store.events(kind="workout") if e["attributes"]["activity"] == "running")
    assert running["start"] == datetime(2024, 3, 31, 8, 0) and running["tz_offset_min"] == 120
    assert running["end"] == datetime(2024, 3, 31, 8, 45, 10)
    night = store.events(kind="sleep")[-1]
    assert night["start"] == datetime(2024, 3, 30, 22, 0) and night["end"] == datetime(2024, 3, 31, 5, 30)
    assert night["tz_offset_min"] == 60


def test_real_small_export(store):
    if not REAL.exists():
        pytest.skip("shared real export not available")
    report = run(store, REAL).to_json()
    assert report["files"][0]["status"] == "imported" and report["files"][0]["issues"] == []
    (hr,) = [e for e in store.events(kind="health_summary") if e["attributes"]["metric"] == "heart_rate"]
    assert (hr["attributes"]["min_bpm"], hr["attributes"]["avg_bpm"], hr["attributes"]["max_bpm"]) == (74, 74.5, 75)
    assert hr["start"] == datetime(2023, 12, 31, 22, 0) and hr["tz_offset_min"] == 120
    (night,) = store.events(kind="sleep")
    assert night["attributes"]["asleep_min"] == 12.5 and night["attributes"]["source_used"] == "Alexandre's Apple Watch"


def _phone_zip(path: Path) -> Path:
    z = path / "export.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(FIX / "export.xml", "apple_health_export/export.xml")
        zf.write(FIX / "export_cda.xml", "apple_health_export/export_cda.xml")
        zf.writestr("apple_health_export/workout-routes/route_2024-03-31_10.45am.gpx",
                    '<?xml version="1.0"?><gpx version="1.1" creator="Apple Health Export"><trk></trk></gpx>')
    return z


@pytest.mark.parametrize("shape", ["file", "folder", "zip"])
def test_drop_as_file_folder_or_zip(store, tmp_path, shape):
    if shape == "file":
        target = FIX / "export.xml"
    elif shape == "folder":
        target = tmp_path / "apple_health_export"
        target.mkdir()
        (target / "export.xml").write_bytes((FIX / "export.xml").read_bytes())
        (target / "export_cda.xml").write_bytes((FIX / "export_cda.xml").read_bytes())
    else:
        target = _phone_zip(tmp_path)
    report = run(store, target).to_json()
    imported = [f for f in report["files"] if f["importer"] == "apple_health"]
    assert len(imported) == 1 and imported[0]["added"] == 11
    if shape != "file":
        assert any(i["path"].endswith("export_cda.xml") for i in report["ignored"])
    assert store.count() == 11


def test_localized_name_recognized_by_content(store):
    report = run(store, FIX / "exportar.xml").to_json()
    assert report["files"][0]["importer"] == "apple_health"
    (w,) = store.events(kind="workout")
    assert w["attributes"]["activity"] == "walking" and w["tz_offset_min"] == -180
    assert w["start"] == datetime(2023, 11, 4, 20, 0)


def test_second_import_adds_nothing(store, tmp_path):
    first = run(store, FIX / "export.xml")
    again = run(store, FIX / "export.xml").to_json()["files"][0]
    assert again["status"] == "already_imported" and again["added"] == 0
    # A later export: the same records plus one new workout
    text = (FIX / "export.xml").read_text(encoding="utf-8")
    extra = ('<Workout workoutActivityType="HKWorkoutActivityTypeYoga" duration="20" durationUnit="min" '
             'sourceName="Testperson’s iPhone" startDate="2024-03-31 18:00:00 +0200" '
             'endDate="2024-03-31 18:20:00 +0200"/>\n</HealthData>')
    later = tmp_path / "export.xml"
    later.write_text(text.replace("</HealthData>", extra), encoding="utf-8")
    f = run(store, later).to_json()["files"][0]
    assert f["status"] == "imported" and f["added"] == 1
    assert f["duplicates"] == first.files[0].added
    assert store.count() == first.files[0].added + 1


def test_truncated_file_keeps_workouts_and_explains_missing_totals(store):
    f = run(store, FIX / "truncated_export.xml").to_json()["files"][0]
    assert f["status"] == "imported"
    locs = [i["locator"] for i in f["issues"]]
    assert locs[0].startswith("line 83") and "ends early" in f["issues"][0]["reason"]
    assert locs[1] == "daily totals" and "3 days" in f["issues"][1]["reason"]
    assert {e["attributes"]["activity"] for e in store.events(kind="workout")} == {
        "cycling", "traditional strength training"}
    assert store.events(kind="health_summary") == [] and store.events(kind="sleep") == []


def test_a_byte_that_is_not_utf8_is_a_located_warning_and_the_rest_imports(store):
    f = run(store, FIX / "latin1_export.xml").to_json()["files"][0]
    line55 = b"".join((FIX / "latin1_export.xml").read_bytes().splitlines(keepends=True)[:54])
    # the Latin-1 "ü" of line 55, column 67 (expat counts from 0)
    assert f["issues"][0]["locator"] == f"byte {len(line55) + 67:,}" and f["issues"][0]["kept"]
    assert "not UTF-8" in f["issues"][0]["reason"]
    assert f["added"] == 11
    assert any("J\ufffdrgens iPhone" in (e["raw"] or "") for e in store.events(with_raw=True))


def test_bad_records_become_issues_and_the_rest_imports(store):
    f = run(store, FIX / "bad_records_export.xml").to_json()["files"][0]
    reasons = {i["locator"]: i["reason"] for i in f["issues"]}
    assert "bad or missing startDate 'yesterday'" in reasons["Record 1 (yesterday)"]
    assert "bad value 'lots'" in reasons["Record 2 (2024-01-10 09:00:00 -0500)"]
    assert "day is out of range" in reasons["Record 4 (2024-02-30 10:00:00 -0500)"]
    assert "unknown value" in reasons["Record 5 (2024-01-10 23:00:00 -0500)"]
    assert "Workout 1 (no date)" in reasons
    assert "bad dateComponents" in reasons["ActivitySummary 1 (2024-13-45)"]
    (w,) = store.events(kind="workout")
    assert w["attributes"]["activity"] == "high intensity interval training"
    (steps,) = store.events(kind="health_summary")
    assert steps["attributes"]["steps"] == 1234 and steps["tz_offset_min"] == -300


def test_empty_file_is_reported(store):
    f = run(store, FIX / "empty_export.xml").to_json()["files"][0]
    assert f["status"] == "empty"


def test_recognize_refuses_other_importers_fixtures():
    others = [p for p in FIXTURES.rglob("*") if p.is_file() and FIX not in p.parents]
    for p in others:
        assert apple_health._recognize(Entry.from_path(str(p))) == 0.0, p
    assert apple_health._recognize(Entry.from_path(str(FIX / "export_cda.xml"))) == 0.0


def _consume(data: bytes) -> list:
    return items_keep_the_contract(apple_health.read(Entry.from_bytes("export.xml", data, BERLIN)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes(data):
    for item in _consume(b'<?xml version="1.0"?><HealthData>' + data):
        items_keep_the_contract([item])
    _consume(data)


_VALUES = st.one_of(st.text(max_size=30), st.sampled_from(
    ["2024-03-31 10:00:00 +0200", "2024-02-30 10:00:00 +0100", "0001-01-01 00:00:00 +1400",
     "9999-12-31 23:59:59 -9959", "nan", "inf", "-5", "1e308", "HKCategoryValueSleepAnalysisAsleepREM",
     "HKQuantityTypeIdentifierStepCount", "HKQuantityTypeIdentifierHeartRate", "mi", "kJ", ""]))


def _attr(v: str) -> str:
    from xml.sax.saxutils import quoteattr
    return quoteattr("".join(ch for ch in v if ch >= " " or ch in "\t\n"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tag=st.sampled_from(["Record", "Workout", "ActivitySummary", "ExportDate"]),
       attrs=st.dictionaries(st.sampled_from(
           ["type", "startDate", "endDate", "value", "unit", "sourceName", "duration", "durationUnit",
            "totalDistance", "totalDistanceUnit", "workoutActivityType", "dateComponents",
            "activeEnergyBurned", "appleStandHours"]), _VALUES, max_size=8),
       child=st.dictionaries(st.sampled_from(["type", "sum", "unit", "average", "maximum"]), _VALUES, max_size=4),
       cut=st.integers(min_value=0, max_value=3000))
def test_fuzz_mutated_records(tag, attrs, child, cut):
    body = " ".join(f"{k}={_attr(v)}" for k, v in attrs.items())
    kid = " ".join(f"{k}={_attr(v)}" for k, v in child.items())
    doc = (f'<?xml version="1.0" encoding="UTF-8"?><HealthData locale="en_US">'
           f'<{tag} {body}><WorkoutStatistics {kid}/><MetadataEntry key="HKElevationAscended" value="x cm"/>'
           f'</{tag}></HealthData>').encode()
    for data in (doc, doc[:cut]):
        for item in _consume(data):
            items_keep_the_contract([item])
            if isinstance(item, Event):
                # what the store would do with it must work too
                from engine.store import events_to_arrow
                events_to_arrow([item], 1)
