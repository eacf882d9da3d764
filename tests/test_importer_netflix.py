"""Netflix importers through the real pipeline: ViewingActivity.csv and the quick
NetflixViewingHistory.csv download."""
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
from importers import netflix
from importers.base import Entry, ImportContext, ImportIssue
from tests.reliability.contract import items_keep_the_contract

FIX = Path(__file__).parent / "fixtures"
HERE = FIX / "netflix"
CTX = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))
OURS = [i for i in netflix.IMPORTERS]


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def _import(store, path):
    return import_paths(store, [path], context=CTX).to_json()


def test_viewing_activity_file(store):
    rep = _import(store, HERE / "ViewingActivity.csv")
    assert rep["files"][0]["importer"] == "netflix_viewing_activity"
    assert rep["added"] == 7 and rep["skipped"] == 0
    rows = {r["title"]: r for r in store.events(source="netflix")}
    ep = rows["Dark: Season 1: Secrets"]
    assert ep["kind"] == "episode_stream"
    assert ep["attributes"]["show"] == "Dark" and ep["attributes"]["season_number"] == 1
    assert ep["attributes"]["episode"] == "Secrets"
    assert ep["start"] == datetime(2023, 3, 25, 20, 15) and ep["tz_offset_min"] == 60
    assert ep["end"] == datetime(2023, 3, 25, 21, 0, 12)
    # colons inside the episode title survive; a trailer is kept but not viewing
    hook = rows["Stranger Things: Season 4: Chapter One: The Hellfire Club"]
    assert hook["kind"] == "trailer" and hook["attributes"]["supplemental"] is True
    assert hook["attributes"]["episode"] == "Chapter One: The Hellfire Club"
    assert "not viewing" in hook["text"]
    film = rows["The Irishman"]
    assert film["kind"] == "movie_stream" and film["attributes"]["profile"] == "Ben"
    assert film["attributes"]["country"] == "Germany"


def test_dst_change_gives_each_start_its_own_offset(store):
    _import(store, HERE / "ViewingActivity.csv")
    rows = {r["title"]: r for r in store.events(source="netflix")}
    # 2023-10-29: Berlin leaves summer time at 01:00 UTC
    before = rows["Dark: Season 2: Beginnings and Endings"]
    after = rows["Dark: Season 2: Dark Matter"]
    assert (before["start"], before["tz_offset_min"]) == (datetime(2023, 10, 29, 0, 30), 120)
    assert (after["start"], after["tz_offset_min"]) == (datetime(2023, 10, 29, 1, 30), 60)
    # and the day after the spring change is in summer time
    assert rows["Dark: Season 1: Lies"]["tz_offset_min"] == 120


def test_folder_and_zip_and_reimport(store, tmp_path):
    folder = tmp_path / "netflix"
    (folder / "CONTENT_INTERACTION").mkdir(parents=True)
    shutil.copy(HERE / "ViewingActivity.csv", folder / "CONTENT_INTERACTION" / "ViewingActivity.csv")
    (folder / "CONTENT_INTERACTION" / "Ratings.csv").write_text("Profile Name,Title Name\n")
    rep = _import(store, folder)
    assert rep["added"] == 7
    assert any(i["path"].endswith("Ratings.csv") for i in rep["ignored"])
    # the same file inside a zip is the identical file: nothing added
    z = tmp_path / "netflix-report.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(HERE / "ViewingActivity.csv", "netflix-report/CONTENT_INTERACTION/ViewingActivity.csv")
    rep = _import(store, z)
    assert rep["files"][0]["status"] == "already_imported" and rep["added"] == 0
    # an overlapping, later export adds only the new row
    rep = _import(store, HERE / "ViewingActivity_overlap.csv")
    assert rep["added"] == 1 and rep["duplicates"] == 4
    assert len(store.events(source="netflix")) == 8


def test_broken_rows_become_issues_and_the_rest_imports(store):
    rep = _import(store, HERE / "broken" / "ViewingActivity_broken.csv")
    f = rep["files"][0]
    assert f["added"] == 1
    by_line = {i["locator"]: i["reason"] for i in f["issues"]}
    assert "Start Time" in by_line["line 3"]
    assert "H:MM:SS" in by_line["line 4"]
    assert "truncated" in by_line["line 5"] and "truncated" in by_line["line 6"]


def test_windows_1252_file_is_read_and_reported(store):
    rep = _import(store, HERE / "broken" / "ViewingActivity_latin1.csv")
    f = rep["files"][0]
    assert f["added"] == 1
    assert "not UTF-8" in f["issues"][0]["reason"]
    ev = store.events(source="netflix")[0]
    assert ev["title"] == "Amélie" and ev["attributes"]["profile"] == "Zoë"


def test_quick_history_us_dates(store):
    rep = _import(store, HERE / "NetflixViewingHistory.csv")
    assert rep["files"][0]["importer"] == "netflix_viewing_history" and rep["added"] == 4
    rows = {r["title"]: r for r in store.events(source="netflix")}
    irish = rows["The Irishman"]
    # local midnight of 27 March 2023 (summer time) in UTC
    assert irish["start"] == datetime(2023, 3, 26, 22, 0) and irish["tz_offset_min"] == 120
    assert irish["attributes"]["date"] == "2023-03-27"
    assert rows["Dark: Season 1: Secrets"]["attributes"]["date"] == "2023-03-25"


def test_quick_history_infers_day_first_from_the_column(store):
    _import(store, HERE / "dayfirst" / "NetflixViewingHistory.csv")
    rows = {r["title"]: r for r in store.events(source="netflix")}
    # "25/03/2023" in the column makes "03/04/2023" the 3rd of April
    assert rows["Dark: Season 1: Secrets"]["attributes"]["date"] == "2023-04-03"


def test_quick_history_dotted_dates_and_bad_date(store):
    rep = _import(store, HERE / "dotted" / "NetflixViewingHistory.csv")
    f = rep["files"][0]
    assert f["added"] == 1
    assert f["issues"][0]["locator"] == "line 3" and "31.02.23" in f["issues"][0]["reason"]
    ev = store.events(source="netflix")[0]
    assert ev["attributes"]["show"] == "Dark" and ev["attributes"]["season"] == "Staffel 1"


def test_infer_day_first():
    assert netflix.infer_day_first(iter(["1/2/23", "13/2/23"])) is True
    assert netflix.infer_day_first(iter(["1/2/23", "2/13/23"])) is False
    assert netflix.infer_day_first(iter(["1/2/23"])) is None


def test_recognize_is_zero_for_other_fixtures():
    for path in FIX.rglob("*"):
        if path.is_file() and HERE not in path.parents:
            entry = Entry.from_path(str(path), context=CTX)
            for imp in OURS:
                assert imp.recognize(entry) == 0, (imp.name, path)


VALID = (HERE / "ViewingActivity.csv").read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes(data):
    for imp in OURS:
        for item in imp.read(Entry.from_bytes("ViewingActivity.csv", data, CTX)):
            items_keep_the_contract([item])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(VALID) - 1), st.binary(min_size=1, max_size=8), st.integers(0, 40))
def test_fuzz_mutated_valid_file(pos, patch, cut):
    data = VALID[:pos] + patch + VALID[pos + len(patch):len(VALID) - cut]
    for imp in OURS:
        items_keep_the_contract(imp.read(Entry.from_bytes("ViewingActivity.csv", data, CTX)))
    hist = (HERE / "NetflixViewingHistory.csv").read_bytes()
    p = pos % len(hist)
    items_keep_the_contract(netflix.read_history(Entry.from_bytes("NetflixViewingHistory.csv",
                                               hist[:p] + patch + hist[p + len(patch):], CTX)))
