"""Google Takeout through the real pipeline: My Activity JSON in English, German and
French; location history in its Semantic, Android on-device and iOS shapes; ignored
files; zips; re-imports; DST; broken files and fuzzing."""
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
from engine.store import EventStore, events_to_arrow
from importers import takeout_activity, takeout_location
from importers.base import Entry, Event, ImportContext, ImportIssue

FIXTURES = Path(__file__).parent / "fixtures"
FIX = FIXTURES / "takeout"
TAKEOUT = FIX / "Takeout"
MYACT = TAKEOUT / "My Activity"
SEMANTIC = TAKEOUT / "Location History (Timeline)" / "Semantic Location History"
BROKEN = FIX / "broken"
BERLIN = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))

RECOGNIZERS = {
    "takeout_my_activity": takeout_activity._recognize,
    "takeout_semantic_location": takeout_location._recognize_semantic,
    "google_timeline_android": takeout_location._recognize_ondevice,
    "google_timeline_ios": takeout_location._recognize_ios,
}


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def run(store, *paths):
    return import_paths(store, list(paths), context=BERLIN)


def titles(store, **kw) -> dict:
    return {e["title"]: e for e in store.events(**kw)}


# ---- My Activity -------------------------------------------------------------------------

def test_my_activity_searches_watches_visits_and_ads(store):
    report = run(store, MYACT / "Search" / "MyActivity.json", MYACT / "YouTube" / "MyActivity.json").to_json()
    assert [f["importer"] for f in report["files"]] == ["takeout_my_activity"] * 2
    assert all(f["issues"] == [] for f in report["files"])
    searches = {e["attributes"]["query"]: e for e in store.events(kind="search")}
    assert set(searches) == {"weather berlin weekend", "how long to boil an egg",
                             "coffee near Alexanderplatz", "sourdough starter"}
    assert searches["sourdough starter"]["attributes"]["product"] == "YouTube"
    assert searches["coffee near Alexanderplatz"]["attributes"]["product"] == "Maps"
    assert searches["weather berlin weekend"]["text"] == 'Searched Google for "weather berlin weekend".'
    assert searches["how long to boil an egg"]["attributes"]["location"] == "At this general area"
    videos = {e["attributes"]["video"]: e for e in store.events(kind="video_watch")}
    assert set(videos) == {"How to Fix a Bicycle Puncture in 5 Minutes", "a video that has been removed"}
    bike = videos["How to Fix a Bicycle Puncture in 5 Minutes"]["attributes"]
    assert bike["channel"] == "Pedal Workshop" and bike["url"].endswith("v=AbCdEfGhIjK")
    web = titles(store, kind="web_activity")
    assert web["Watched Buy the new SuperPhone today"]["attributes"]["from_ads"] is True
    visit = web["Visited Berlin Weather Forecast - 14 day outlook"]["attributes"]
    assert visit["activity"] == "visited" and visit["page"] == "Berlin Weather Forecast - 14 day outlook"
    assert web["Used Google Lens"]["attributes"]["product"] == "Android"


def test_my_activity_german_and_french_and_dst_autumn(store):
    run(store, FIX / "Meine Aktivitäten", FIX / "Mon activité")
    watch_de = titles(store)["Angesehen: Brot backen für Anfänger"]
    assert watch_de["kind"] == "video_watch"
    assert watch_de["attributes"]["video"] == "Brot backen für Anfänger"
    assert watch_de["attributes"]["channel"] == "Backstube Müller"
    # 2024-10-27 00:30Z is 02:30 CEST; 01:30Z is 02:30 CET (the hour repeats)
    assert watch_de["start"] == datetime(2024, 10, 27, 0, 30) and watch_de["tz_offset_min"] == 120
    search_de = titles(store)["Gesucht nach: Zeitumstellung Oktober"]
    assert search_de["kind"] == "search" and search_de["attributes"]["query"] == "Zeitumstellung Oktober"
    assert search_de["tz_offset_min"] == 60
    assert titles(store)["Besucht: Sommerzeit – Wikipedia"]["attributes"]["page"] == "Sommerzeit – Wikipedia"
    fr = titles(store)
    assert fr["Vous avez recherché horaires piscine Lyon"]["attributes"]["query"] == "horaires piscine Lyon"
    assert fr["Vous avez regardé Recette de la tarte Tatin"]["attributes"]["channel"] == "Cuisine Facile"


# ---- location ---------------------------------------------------------------------------

def test_semantic_location_history(store):
    report = run(store, SEMANTIC).to_json()
    assert {f["importer"] for f in report["files"]} == {"takeout_semantic_location"}
    visits = titles(store, kind="place_visit")
    gate = visits["Brandenburg Gate"]
    assert gate["attributes"]["address"] == "Pariser Platz, 10117 Berlin, Germany"
    assert (gate["attributes"]["lat"], gate["attributes"]["lng"]) == (52.516294, 13.377703)
    assert gate["attributes"]["place_id"] == "ChIJiQnyVcZRqEcRY0xnhE77uyY"
    assert gate["attributes"]["duration_min"] == 44.5
    # 00:25Z on 2024-03-31 is before the 01:00Z switch: CET; 02:00Z is after: CEST
    assert gate["tz_offset_min"] == 60 and visits["Home"]["tz_offset_min"] == 120
    assert visits["Home"]["attributes"]["semantic_type"] == "home"
    # pre-2022 epoch-millisecond timestamps
    marien = visits["Marienplatz"]
    assert marien["start"] == datetime(2019, 10, 27, 0, 0) and marien["end"] == datetime(2019, 10, 27, 2, 0)
    trips = {e["attributes"]["activity_type"]: e for e in store.events(kind="travel")}
    assert set(trips) == {"WALKING", "IN_SUBWAY", "CYCLING"}
    walk = trips["WALKING"]["attributes"]
    assert walk["distance_km"] == 2.48 and walk["activity"] == "walking"
    assert (walk["start_lat"], walk["end_lng"]) == (52.520066, 13.377703)
    assert trips["IN_SUBWAY"]["attributes"]["activity"] == "subway"
    assert trips["CYCLING"]["attributes"]["distance_km"] == 4.1


def test_android_on_device_timeline(store):
    f = run(store, FIX / "Timeline.json").to_json()["files"][0]
    assert f["importer"] == "google_timeline_android" and f["issues"] == []
    assert f["added"] == 3  # two visits and one trip; the path-only segment is not an event
    home = store.events(kind="place_visit")[0]
    assert home["attributes"]["semantic_type"] == "home" and home["attributes"]["place"] == "Home"
    assert home["start"] == datetime(2024, 10, 26, 18, 0) and home["tz_offset_min"] == 120
    assert home["end"] == datetime(2024, 10, 27, 8, 15)
    (bike,) = store.events(kind="travel")
    assert bike["attributes"]["activity"] == "cycling" and bike["attributes"]["distance_km"] == 7.35
    assert (bike["attributes"]["start_lat"], bike["attributes"]["start_lng"]) == (52.4986, 13.4534)
    assert bike["tz_offset_min"] == 60


def test_ios_location_history(store):
    f = run(store, FIX / "location-history.json").to_json()["files"][0]
    assert f["importer"] == "google_timeline_ios" and f["added"] == 3
    visits = store.events(kind="place_visit")
    assert visits[0]["attributes"]["place_id"] == "ChIJnyc000000000000000001"
    assert (visits[0]["attributes"]["lat"], visits[0]["attributes"]["lng"]) == (40.748817, -73.985428)
    assert visits[0]["start"] == datetime(2024, 7, 14, 12, 0) and visits[0]["tz_offset_min"] == -240
    assert visits[1]["attributes"]["semantic_type"] == "work"
    (walk,) = store.events(kind="travel")
    assert walk["attributes"]["activity_type"] == "WALKING" and walk["attributes"]["distance_km"] == 1.33


# ---- the whole export -----------------------------------------------------------------

def _zip_folder(src: Path, dest: Path) -> Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(src.rglob("*")):
            if p.is_file():
                zf.write(p, "Takeout/" + p.relative_to(src).as_posix())
    return dest


@pytest.mark.parametrize("shape", ["folder", "zip"])
def test_takeout_folder_or_zip_lists_ignored_files(store, tmp_path, shape):
    target = TAKEOUT if shape == "folder" else _zip_folder(TAKEOUT, tmp_path / "takeout-20240401T000000Z-001.zip")
    report = run(store, target).to_json()
    assert report["unrecognized"] == []
    ignored = sorted(Path(i["path"]).name for i in report["ignored"])
    assert ignored == ["MyActivity.html", "Records.json", "Settings.json", "archive_browser.html"]
    assert sum(f["added"] for f in report["files"]) == 5 + 4 + 4 + 2
    assert all(f["status"] == "imported" for f in report["files"])


def test_second_import_adds_nothing_and_overlap_counts_duplicates(store, tmp_path):
    path = MYACT / "Search" / "MyActivity.json"
    run(store, path)
    again = run(store, path).to_json()["files"][0]
    assert again["status"] == "already_imported" and again["added"] == 0
    # a later takeout: the same items (reformatted) plus one new search
    items = json.loads(path.read_text(encoding="utf-8"))
    items.insert(0, {"header": "Search", "title": "Searched for new thing", "time": "2024-04-02T10:00:00.000Z",
                     "products": ["Search"]})
    later = tmp_path / "MyActivity.json"
    later.write_text(json.dumps(items), encoding="utf-8")
    f = run(store, later).to_json()["files"][0]
    assert (f["status"], f["added"], f["duplicates"]) == ("imported", 1, 5)
    # place visits: key is placeId + start; trips: start + end + type
    run(store, SEMANTIC / "2024" / "2024_MARCH.json")
    doc = json.loads((SEMANTIC / "2024" / "2024_MARCH.json").read_text(encoding="utf-8"))
    doc["timelineObjects"][1]["placeVisit"]["placeConfidence"] = "MEDIUM_CONFIDENCE"  # re-scored later
    again = tmp_path / "2024_MARCH.json"
    again.write_text(json.dumps(doc), encoding="utf-8")
    f = run(store, again).to_json()["files"][0]
    assert (f["added"], f["duplicates"]) == (0, 4)


# ---- broken files -------------------------------------------------------------------------

def test_broken_my_activity_files(store):
    report = run(store, BROKEN).to_json()
    files = {Path(f["path"]).name: f for f in report["files"]}
    trunc = files["MyActivity_truncated.json"]
    assert trunc["added"] == 3 and trunc["issues"][0]["locator"] == "item 4"  # the 4th is cut off
    assert "truncated" in trunc["issues"][0]["reason"]
    bad = files["MyActivity_bad_items.json"]
    assert bad["added"] == 2
    assert [i["locator"] for i in bad["issues"]] == ["item 2", "item 3", "item 4", "item 5"]
    assert "last tuesday" in bad["issues"][1]["reason"] and "title" in bad["issues"][3]["reason"]
    latin = files["MyActivity_latin1.json"]
    # bytes that are not UTF-8 are read as U+FFFD: the record is kept, with a located warning
    assert latin["added"] == 1 and "not UTF-8" in latin["issues"][0]["reason"] and latin["issues"][0]["kept"]
    assert latin["issues"][0]["locator"].startswith("byte ")
    assert files["MyActivity_empty.json"]["status"] == "empty"
    sem_trunc = files["2024_APRIL_truncated.json"]
    assert sem_trunc["added"] == 2 and sem_trunc["issues"][0]["locator"] == "timelineObjects item 3"
    sem_bad = files["2024_MAY_bad_items.json"]
    assert sem_bad["added"] == 1
    assert [i["locator"] for i in sem_bad["issues"]] == [
        "timelineObjects item 1", "timelineObjects item 2", "timelineObjects item 3"]
    assert "ends before it starts" in sem_bad["issues"][1]["reason"]


def test_recognize_refuses_other_importers_fixtures_and_each_other():
    others = [p for p in FIXTURES.rglob("*") if p.is_file() and FIX not in p.parents]
    for p in others:
        for name, rec in RECOGNIZERS.items():
            assert rec(Entry.from_path(str(p))) == 0.0, (name, p)
    owners = {
        MYACT / "Search" / "MyActivity.json": "takeout_my_activity",
        FIX / "Mon activité" / "Recherche" / "MonActivité.json": "takeout_my_activity",
        SEMANTIC / "2019" / "2019_OCTOBER.json": "takeout_semantic_location",
        FIX / "Timeline.json": "google_timeline_android",
        FIX / "location-history.json": "google_timeline_ios",
    }
    for path, owner in owners.items():
        scores = {n: r(Entry.from_path(str(path))) for n, r in RECOGNIZERS.items()}
        assert max(scores, key=scores.get) == owner and scores[owner] >= 0.5
        assert sorted(scores.values())[-2] == 0.0, (path, scores)


# ---- fuzzing ------------------------------------------------------------------------------

READERS = [takeout_activity.read, takeout_location.read_semantic, takeout_location.read_ondevice,
           takeout_location.read_ios]


def _consume(reader, data: bytes) -> None:
    for item in reader(Entry.from_bytes("x.json", data, BERLIN)):
        assert isinstance(item, (Event, ImportIssue))
        if isinstance(item, Event):
            events_to_arrow([item], 1)  # what the store does with it must work too


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=1500))
def test_fuzz_random_bytes(data):
    for reader in READERS:
        _consume(reader, data)
        _consume(reader, b'{"timelineObjects":[' + data)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    | st.sampled_from(["2024-03-31T01:30:00Z", "1572134400000", "0001-01-01T00:00:00+01:00",
                       "9999-12-31T23:59:59-23:00", "geo:91,200", "52.5°, 13.4°", "Searched for x",
                       "Watched y", "Angesehen: z", "-99999999999999"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=12)
_KEYS = ["time", "title", "header", "products", "subtitles", "details", "titleUrl", "duration",
         "startTimestamp", "endTimestamp", "startTimestampMs", "location", "latitudeE7", "placeId",
         "startTime", "endTime", "visit", "activity", "topCandidate", "placeLocation", "distanceMeters",
         "startTimeTimezoneUtcOffsetMinutes", "start", "end", "type", "placeVisit", "activitySegment"]


def _mutate(base: dict, draw_paths: list[tuple[list[str], object]]) -> dict:
    doc = json.loads(json.dumps(base))
    for path, value in draw_paths:
        node = doc
        for k in path[:-1]:
            nxt = node.get(k) if isinstance(node, dict) else None
            if not isinstance(nxt, dict):
                nxt = {}
                node[k] = nxt
            node = nxt
        node[path[-1]] = value
    return doc


_BASES = [
    json.loads((MYACT / "YouTube" / "MyActivity.json").read_text(encoding="utf-8"))[0],
    json.loads((SEMANTIC / "2024" / "2024_MARCH.json").read_text(encoding="utf-8"))["timelineObjects"][1],
    json.loads((SEMANTIC / "2024" / "2024_MARCH.json").read_text(encoding="utf-8"))["timelineObjects"][0],
    json.loads((FIX / "Timeline.json").read_text(encoding="utf-8"))["semanticSegments"][1],
    json.loads((FIX / "location-history.json").read_text(encoding="utf-8"))[0],
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(_BASES),
       muts=st.lists(st.tuples(st.lists(st.sampled_from(_KEYS), min_size=1, max_size=3), _JSON), max_size=4),
       cut=st.integers(min_value=0, max_value=400))
def test_fuzz_mutated_records(base, muts, cut):
    rec = _mutate(base, muts)
    item = json.dumps(rec)
    docs = [f"[{item}]", f'{{"timelineObjects": [{item}]}}', f'{{"semanticSegments": [{item}]}}']
    for doc in docs:
        raw = doc.encode()
        for reader in READERS:
            _consume(reader, raw)
            _consume(reader, raw[:cut])

