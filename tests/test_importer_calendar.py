"""The iCalendar importer through the real pipeline: Google Takeout shape, recurrence
with overrides and cancellations, time zones (custom VTIMEZONE, floating, all-day,
DST), broken components, odd encodings, and the whole ics corpus in shared data."""
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
from importers.base import Entry, Event, ImportContext, ImportIssue
from importers.calendar import IMPORTERS, MAX_OCCURRENCES
from tests.conftest import SHARED
from tests.reliability.contract import items_keep_the_contract

FIX = Path(__file__).parent / "fixtures" / "calendar"
GOOGLE = FIX / "Takeout" / "Calendar" / "alex.doe@example.org.ics"
CORPUS = SHARED / "data/ics-corpus"
BERLIN = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))
IMPORTER = IMPORTERS[0]


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def run(store, *paths):
    return import_paths(store, list(paths), context=BERLIN)


def by_title(store, title):
    return [e for e in store.events(source="calendar") if e["title"] == title]


def test_google_takeout_file(store):
    report = run(store, GOOGLE).to_json()
    f, = report["files"]
    assert f["importer"] == "icalendar" and f["status"] == "imported"
    assert f["skipped"] == 0 and f["issues"] == []
    # 3 standups (5 - EXDATE - cancelled override), dentist, 2 all-day, choir,
    # 18 monthly reviews up to the horizon (latest date in file + 1 year).
    assert f["added"] == 3 + 1 + 2 + 1 + 18
    assert by_title(store, "Cancelled talk") == []


def test_recurrence_overrides_exdate_and_dst(store):
    run(store, GOOGLE)
    standups = [e for e in store.events(source="calendar") if e["title"].startswith("Team standup")]
    got = [(e["start"], e["tz_offset_min"], e["title"]) for e in standups]
    assert got == [
        (datetime(2024, 3, 20, 8, 0), 60, "Team standup"),
        (datetime(2024, 3, 27, 10, 0), 60, "Team standup (moved)"),  # override, moved to 11:00
        # 2024-04-03 cancelled via RECURRENCE-ID, 2024-04-10 removed by EXDATE; after DST:
        (datetime(2024, 4, 17, 7, 0), 120, "Team standup"),
    ]
    assert all(e["attributes"]["recurring"] for e in standups)
    assert standups[0]["attributes"]["calendar"] == "alex.doe@example.org"
    assert standups[0]["attributes"]["location"] == "Room 4.12"


def test_horizon_bounds_endless_series(store):
    run(store, GOOGLE)
    reviews = by_title(store, "Monthly review")
    assert len(reviews) == 18
    assert reviews[0]["start"] == datetime(2024, 1, 15, 9, 0)
    assert reviews[-1]["start"] == datetime(2025, 6, 15, 8, 0)
    assert {r["tz_offset_min"] for r in reviews} == {60, 120}


def test_all_day_floating_attendees(store):
    run(store, GOOGLE)
    mayday, = by_title(store, "Labour Day")
    assert mayday["start"] == datetime(2024, 4, 30, 22, 0)  # local midnight in Berlin
    assert mayday["end"] == datetime(2024, 5, 1, 22, 0)
    assert mayday["attributes"]["all_day"] is True and mayday["tz_offset_min"] == 120
    lake, = by_title(store, "Holiday at the lake")
    assert lake["end"] - lake["start"] == datetime(2024, 7, 5) - datetime(2024, 7, 1)
    choir, = by_title(store, "Choir rehearsal")  # floating time -> home zone
    assert choir["start"] == datetime(2024, 2, 15, 18, 0) and choir["tz_offset_min"] == 60
    dentist, = by_title(store, "Dentist")
    a = dentist["attributes"]
    assert a["attendees"] == ["Mira Sample <mira@example.net>", "jo@example.com"]
    assert a["organizer"] == "Alex Doe <alex.doe@example.org>"
    assert a["location"] == "Praxis Dr. Zahn, Hauptstraße 5, Berlin"
    assert a["description"].startswith("Bring the insurance card.")
    assert a["all_day"] is False and a["recurring"] is False and a["status"] == "confirmed"
    assert "Dentist" in dentist["text"] and "Mira Sample" in dentist["text"]
    # the text names people without their addresses (an address-less one by address),
    # and says what the event is about before who was asked to it
    t = dentist["text"]
    assert "mira@example.net" not in t and "alex.doe@example.org" not in t and "jo@example.com" in t
    assert t.index("Bring the insurance card.") < t.index("Organised by Alex Doe.") < t.index("With Mira Sample, jo@example.com.")
    assert dentist["start"] == datetime(2024, 4, 12, 16, 30) and dentist["tz_offset_min"] == 0


def test_custom_vtimezone_and_cp1252(store):
    report = run(store, FIX / "outlook-cp1252.ics").to_json()
    f, = report["files"]
    assert f["added"] == 1
    assert any("Windows-1252" in i["reason"] for i in f["issues"])
    ev, = store.events(source="calendar")
    assert ev["title"] == "Review with Zoë" and ev["attributes"]["location"] == "Café Central"
    assert ev["start"] == datetime(2024, 7, 10, 12, 0) and ev["tz_offset_min"] == 120


def test_broken_components_become_issues(store):
    f, = run(store, FIX / "broken.ics").to_json()["files"]
    assert f["status"] == "imported" and f["added"] == 2
    assert sorted(e["title"] for e in store.events()) == ["Good event after", "Good event before"]
    reasons = {i["locator"]: i["reason"] for i in f["issues"]}
    assert "DTSTART" in reasons["VEVENT at line 10, UID bad-dtstart"]
    assert "no DTSTART" in reasons["VEVENT at line 15, UID no-dtstart"]
    assert "recurrence" in reasons["VEVENT at line 19, UID bad-rule"]
    assert "truncated" in reasons["VEVENT at line 30"]


def test_dense_series_is_capped(store):
    f, = run(store, FIX / "dense.ics").to_json()["files"]
    assert f["added"] == MAX_OCCURRENCES
    assert any(f"more than {MAX_OCCURRENCES}" in i["reason"] for i in f["issues"])


def test_not_a_calendar_is_rejected_clearly(store):
    report = run(store, FIX / "not-a-calendar.ics").to_json()
    f, = report["files"]
    assert f["added"] == 0 and "not an iCalendar file" in f["issues"][0]["reason"]


def test_folder_zip_and_reimport(store, tmp_path):
    folder = tmp_path / "Takeout"
    shutil.copytree(FIX / "Takeout", folder)
    first = run(store, folder).to_json()
    assert first["added"] == 25
    zpath = tmp_path / "takeout.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.write(GOOGLE, "Takeout/Calendar/alex.doe@example.org.ics")
    again = run(store, zpath).to_json()
    assert again["files"][0]["status"] == "already_imported" and again["added"] == 0
    later = run(store, FIX / "later-export.ics").to_json()
    assert later["added"] == 1 and later["duplicates"] == 25
    assert store.count() == 26
    lunch, = by_title(store, "Lunch with Jo")
    assert lunch["file"].endswith("later-export.ics")


def test_recognize_other_fixtures_zero():
    others = [p for p in (FIX.parent).rglob("*") if p.is_file() and FIX not in p.parents]
    assert others, "expected fixtures of other importers"
    for p in others:
        if p.suffix.lower() in (".ics", ".ical", ".jcal"):
            continue
        assert IMPORTER.recognize(Entry.from_path(str(p), p.name)) == 0, p


def test_corpus_never_crashes(store, capsys):
    """Every file of the shared corpus imports or is rejected with a message."""
    files = sorted(p for p in CORPUS.iterdir() if p.name != "LICENSE.rst")
    assert len(files) >= 120
    report = import_paths(store, files, context=BERLIN)
    by_path = {f.path: f for f in report.files}
    imported = with_issues = rejected = 0
    for p in files:
        f = by_path.get(str(p))
        assert f is not None, f"{p.name} was not handled: {report.unrecognized}"
        # "already_imported": the corpus holds byte-identical copies of some files
        assert f.status in ("imported", "empty", "already_imported"), (p.name, f.status, f.message)
        if f.status == "already_imported":
            imported += 1
            continue
        if f.added + f.duplicates:  # corpus files share UIDs, so some events are duplicates
            imported += 1
            with_issues += bool(f.skipped)
        else:
            rejected += 1
            assert f.issues and all(i["reason"] for i in f.issues), p.name
    with capsys.disabled():
        print(f"\nics corpus: {len(files)} files, {imported} imported "
              f"({with_issues} of them with issues), {rejected} rejected with a message, "
              f"{store.count()} events, {report.seconds:.1f} s")
    assert imported > 60


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes(data):
    for item in IMPORTER.read(Entry.from_bytes("x.ics", data, BERLIN)):
        items_keep_the_contract([item])


_LINES = GOOGLE.read_text(encoding="utf-8").splitlines()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(_LINES) - 1),
                          st.sampled_from(["drop", "dup", "cut", "junk"]),
                          st.text(max_size=20)), max_size=6))
def test_fuzz_mutated_calendar(mutations):
    lines = list(_LINES)
    for index, op, junk in mutations:
        index %= len(lines)
        if op == "drop":
            del lines[index]
        elif op == "dup":
            lines.insert(index, lines[index])
        elif op == "cut":
            lines[index] = lines[index][: len(lines[index]) // 2]
        else:
            lines[index] = lines[index] + junk
        if not lines:
            break
    data = "\r\n".join(lines).encode("utf-8", "surrogatepass")
    for item in IMPORTER.read(Entry.from_bytes("x.ics", data, BERLIN)):
        items_keep_the_contract([item])
