"""Journal importers through the real pipeline: Markdown daily notes (Obsidian,
Logseq) and the Day One JSON export."""
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
from importers import journal
from importers.base import Entry, ImportContext
from tests.conftest import SHARED
from tests.reliability.contract import items_keep_the_contract

FIX = Path(__file__).parent / "fixtures"
HERE = FIX / "journal"
TIMELINEQA = SHARED / "data/timelineqa/sparse-0/sparse-0.json"
CTX = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def _import(store, path):
    return import_paths(store, [path], context=CTX).to_json()


def test_vault_folder(store):
    rep = _import(store, HERE / "vault")
    assert rep["added"] == 4
    assert [Path(p).name for p in rep["unrecognized"]] == ["Project ideas.md"]
    events = store.events(source="journal", kind="note")
    rows = {r["attributes"]["date"]: r for r in events}
    # a Logseq journal's top-level bullets are its entries; its page properties tag them all
    brunch, movie = sorted((r for r in events if r["attributes"]["date"] == "2023-03-26"), key=lambda r: r["locator"])
    assert (brunch["text"], brunch["locator"]) == ("Had brunch with Tom at Café Einstein.", "2023_03_26.md, line 1")
    assert (movie["text"], movie["locator"]) == ("Watched a movie in the evening.", "2023_03_26.md, line 3")
    assert brunch["start"] == movie["start"]
    lake = rows["2023-03-25"]
    assert lake["title"] == "Saturday at the lake"
    assert lake["attributes"]["tags"] == ["family", "outdoors", "summer"]
    assert lake["attributes"]["mood"] == "happy"
    assert "Wannsee" in lake["text"] and "---" not in lake["text"] and "mood" not in lake["text"]
    # the note spans its local day: midnight Berlin (winter time) in UTC
    assert lake["start"] == datetime(2023, 3, 24, 23, 0) and lake["tz_offset_min"] == 60
    assert lake["end"] == datetime(2023, 3, 25, 23, 0)
    logseq = rows["2023-03-26"]
    assert logseq["title"] == "2023-03-26" and logseq["attributes"]["tags"] == ["food", "friends"]
    # the day the clocks went forward is 23 hours long
    assert logseq["start"] == datetime(2023, 3, 25, 23, 0) and logseq["end"] == datetime(2023, 3, 26, 22, 0)
    autumn = rows["2023-10-29"]
    assert autumn["start"] == datetime(2023, 10, 28, 22, 0) and autumn["tz_offset_min"] == 120
    assert autumn["end"] == datetime(2023, 10, 29, 23, 0)
    assert autumn["text"] == "I attended a wedding in Potsdam."


def test_zip_reimport_and_edited_note(store, tmp_path):
    z = tmp_path / "vault.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for p in (HERE / "vault").rglob("*.md"):
            zf.write(p, "MyVault/" + p.relative_to(HERE / "vault").as_posix())
        zf.writestr("MyVault/.obsidian/workspace.json", "{}")
    rep = _import(store, z)
    assert rep["added"] == 4
    assert any(i["path"].endswith("workspace.json") for i in rep["ignored"])
    rep = _import(store, HERE / "vault")
    assert rep["added"] == 0 and all(f["status"] == "already_imported" for f in rep["files"])
    # the same day's note edited later is the same note (key = date + file name)
    edited = tmp_path / "2023-10-29.md"
    edited.write_text("I attended a wedding in Potsdam. It rained.\n")
    rep = _import(store, edited)
    assert rep["added"] == 0 and rep["duplicates"] == 1


def test_broken_notes(store):
    rep = _import(store, HERE / "broken")
    files = {Path(f["path"]).name: f for f in rep["files"]}
    latin = files["2023-04-01.md"]
    assert latin["added"] == 1 and "not UTF-8" in latin["issues"][0]["reason"]
    empty = files["2023-04-02.md"]
    assert empty["added"] == 0 and "empty" in empty["issues"][0]["reason"]
    assert any(Path(p).name == "2023-04-03.md" for p in rep["unrecognized"])  # binary content
    notes = {r["text"] for r in store.events(source="journal")}
    assert "Ich war im Café." in notes
    cut = files["Travel.json"]
    assert cut["added"] == 2 and "truncated" in cut["issues"][-1]["reason"]


def test_dayone(store):
    rep = _import(store, HERE / "dayone" / "Journal.json")
    f = rep["files"][0]
    assert f["importer"] == "journal_dayone" and f["added"] == 3
    reasons = {i["locator"]: i["reason"] for i in f["issues"]}
    assert "creationDate" in reasons["entry 4 (uuid D1)"]
    assert "Mars/Olympus" in reasons["entry 3 (uuid C1)"]
    rows = {r["attributes"]["entry_id"]: r for r in store.events(source="journal")}
    dinner = rows["A1B2C3D4E5F60718293A4B5C6D7E8F90"]
    assert dinner["title"] == "Dinner at Mom's."
    assert "lasagna! Great evening." in dinner["text"] and "dayone-moment" not in dinner["text"]
    assert dinner["attributes"]["city"] == "Hamburg" and dinner["attributes"]["tags"] == ["family"]
    assert dinner["attributes"]["temperature_c"] == 9.5 and dinner["tz_offset_min"] == 60
    july = rows["B1B2C3D4E5F60718293A4B5C6D7E8F91"]
    # the entry's own zone, not the home zone: 19:30 on the 4th in New York
    assert july["tz_offset_min"] == -240 and july["attributes"]["date"] == "2023-07-04"
    assert rows["C1"]["tz_offset_min"] == 120  # unknown zone: home zone in summer


def test_paragraphs_are_entries(store, tmp_path):
    note = tmp_path / "2023-05-06.md"
    note.write_text("---\ntitle: Saturday\ntags: [weekend]\n---\n# Morning\n\nRan 10 km with Ana.\n"
                    "Felt strong. #running\n\n---\n\n# Evening\n\nPizza at Da Michele.\n\n"
                    "```\nshopping list\n\nmilk\n```\n")
    rep = _import(store, note)
    assert rep["added"] == 3 and rep["skipped"] == 0
    entries = store.events(source="journal", with_raw=True)
    run, pizza, code = sorted(entries, key=lambda r: int(r["locator"].split()[-1]))
    assert (run["title"], run["text"], run["locator"]) == ("Morning", "Ran 10 km with Ana.\nFelt strong. #running",
                                                          "2023-05-06.md, line 7")
    assert run["attributes"]["tags"] == ["weekend", "running"] and run["attributes"]["words"] == 8
    assert (pizza["title"], pizza["text"], pizza["locator"]) == ("Evening", "Pizza at Da Michele.",
                                                                "2023-05-06.md, line 14")
    assert pizza["attributes"]["tags"] == ["weekend"] and pizza["raw"] == "Pizza at Da Michele."
    assert code["text"] == "```\nshopping list\n\nmilk\n```"  # a code block is one entry, blank lines and all
    # a note that grows a paragraph later adds that paragraph and keeps the ones it had
    note.write_text(note.read_text() + "\nLate walk by the river.\n")
    rep = _import(store, note)
    assert rep["added"] == 1 and rep["duplicates"] == 3
    assert "Late walk by the river." in {r["text"] for r in store.events(source="journal")}


@pytest.mark.skipif(not TIMELINEQA.exists(), reason="TimelineQA data not available")
def test_timelineqa_diary_sentences_as_daily_notes(store, tmp_path):
    data = json.loads(TIMELINEQA.read_text())
    written = {}
    for day, episodes in list(data.items())[:40]:
        sentences = [e.get("text_template_based", "") for e in episodes.values() if isinstance(e, dict)]
        text = " ".join(s for s in sentences if s)
        if not text:
            continue
        iso = day.replace("/", "-")
        (tmp_path / "notes").mkdir(exist_ok=True)
        (tmp_path / "notes" / f"{iso}.md").write_text(text + "\n")
        written[iso] = text.strip()
    rep = _import(store, tmp_path / "notes")
    assert rep["added"] == len(written) and rep["skipped"] == 0
    got = {r["attributes"]["date"]: r["text"] for r in store.events(source="journal")}
    assert got == written


def test_front_matter_shapes():
    meta, body = journal.split_front_matter("---\ntags:\n  - a\n  - '#b'\nweather: sunny\n---\nBody")
    assert meta == {"tags": ["a", "b"], "weather": "sunny"} and body == "Body"
    meta, body = journal.split_front_matter("---\nno closing line\nBody")
    assert meta == {} and body.startswith("---")


def test_recognize_is_zero_for_other_fixtures():
    for path in FIX.rglob("*"):
        if path.is_file() and HERE not in path.parents:
            entry = Entry.from_path(str(path), context=CTX)
            for imp in journal.IMPORTERS:
                assert imp.recognize(entry) == 0, (imp.name, path)


DAYONE = (HERE / "dayone" / "Journal.json").read_bytes()
NOTE = (HERE / "vault" / "2023-03-25.md").read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes(data):
    items_keep_the_contract(journal.read_daily_note(Entry.from_bytes("2023-01-01.md", data, CTX)))
    items_keep_the_contract(journal.read_dayone(Entry.from_bytes("Journal.json", data, CTX)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.binary(min_size=1, max_size=8), st.text(max_size=200))
def test_fuzz_mutated_valid_files(pos, patch, text):
    p = pos % len(DAYONE)
    items_keep_the_contract(journal.read_dayone(Entry.from_bytes("Journal.json", DAYONE[:p] + patch + DAYONE[p + len(patch):], CTX)))
    q = pos % len(NOTE)
    items_keep_the_contract(journal.read_daily_note(Entry.from_bytes("2023-01-01.md", NOTE[:q] + patch + NOTE[q + len(patch):], CTX)))
    items_keep_the_contract(journal.read_daily_note(Entry.from_bytes("2023_01_01.md", ("---\n" + text).encode(), CTX)))
