"""The mbox importer through the real pipeline: Gmail Takeout and Thunderbird shapes,
sent/received, charsets and transfer encodings, HTML bodies, attachments, dates and
DST, broken messages, and fuzzing."""
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
from importers.mail import IMPORTERS, html_to_text
from tests.reliability.contract import items_keep_the_contract

FIX = Path(__file__).parent / "fixtures" / "mail"
GMAIL = FIX / "Takeout" / "Mail" / "All mail Including Spam and Trash.mbox"
BERLIN = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))
IMPORTER = IMPORTERS[0]


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def run(store, *paths, context=BERLIN):
    return import_paths(store, list(paths), context=context)


def by_id(store):
    return {e["attributes"].get("message_id"): e for e in store.events(source="mail")}


def test_gmail_takeout(store):
    f, = run(store, GMAIL).to_json()["files"]
    assert f["importer"] == "mbox" and f["added"] == 4 and f["issues"] == []
    mails = by_id(store)
    dinner = mails["CAF1-dinner@mail.example.net"]
    a = dinner["attributes"]
    assert dinner["kind"] == "mail" and dinner["title"] == "Dinner on Friday?"
    assert a["from"] == "mira@example.net" and a["from_name"] == "Mira Sample"
    assert a["to"] == ["alex.doe@example.org"] and a["cc"] == ["jo@example.com", "sam@example.com"]
    assert a["labels"] == ["Inbox", "Important", "Opened", "Trips, 2024"]
    assert a["thread_id"] == "1793874512345678901" and a["direction"] == "received"
    assert dinner["text"].startswith("Mail from Mira Sample to Alex Doe on Dinner on Friday?: Hi Alex,")
    assert "From what I heard" in dinner["text"]  # ">From " unescaped
    reply = mails["CAF2-reply@mail.example.org"]
    assert reply["attributes"]["direction"] == "sent"
    assert reply["attributes"]["in_reply_to"] == "CAF1-dinner@mail.example.net"
    assert "Grüße" in reply["text"]  # quoted-printable UTF-8


def test_html_latin1_and_attachments(store):
    run(store, GMAIL)
    mails = by_id(store)
    order = mails["order-4711@shop.example.com"]
    assert order["title"] == "Versandbestätigung für Ihre Bestellung"
    assert order["attributes"]["labels"] == ["Einkäufe", "Inbox"]
    assert "Order #4711 has shipped" in order["text"] and "42,00 € & free delivery" in order["text"]
    assert "alert" not in order["text"] and "color:red" not in order["text"]
    invoice = mails["invoice-2024-04@utility.example.com"]
    assert invoice["attributes"]["attachments"] == ["invoice-april.pdf", "Zählerstand.png"]
    assert "Amount due: 63.20 EUR" in invoice["text"]  # text/plain preferred over HTML
    assert "PDF-1.4" not in invoice["text"]
    raw = store.event(invoice["id"])["raw"]
    assert raw.startswith("X-GM-THRID") and "fake invoice" not in raw


def test_dates_use_header_offset_across_dst(store):
    run(store, GMAIL)
    mails = by_id(store)
    before = mails["CAF1-dinner@mail.example.net"]
    after = mails["CAF2-reply@mail.example.org"]
    assert (before["start"], before["tz_offset_min"]) == (datetime(2024, 3, 20, 8, 15), 60)
    assert (after["start"], after["tz_offset_min"]) == (datetime(2024, 4, 2, 16, 40), 120)
    assert mails["order-4711@shop.example.com"]["tz_offset_min"] == 0  # explicit +0000


def test_unknown_zone_uses_home_zone_per_timestamp(store):
    run(store, FIX / "dst.mbox")
    got = [(e["start"], e["tz_offset_min"]) for e in store.events()]
    assert got == [(datetime(2024, 3, 30, 12, 0), 60), (datetime(2024, 3, 31, 12, 0), 120)]


def test_thunderbird_localized_crlf_and_inferred_own_address(store):
    f, = run(store, FIX / "Posteingang.mbox").to_json()["files"]
    assert f["added"] == 3 and f["issues"] == []
    mails = by_id(store)
    # No labels, no own_addresses: the most frequent Delivered-To is the user.
    assert mails["tb-2@example.org"]["attributes"]["direction"] == "sent"
    assert mails["tb-1@example.de"]["attributes"]["direction"] == "received"
    assert "Grüße" in mails["tb-1@example.de"]["text"]  # windows-1252 body
    assert ">From the minutes" in mails["tb-1@example.de"]["text"]  # mboxrd: one '>' removed


def test_own_addresses_from_context(store):
    ctx = ImportContext(home_tz=ZoneInfo("Europe/Berlin"), own_addresses=frozenset({"info@verein.example.de"}))
    run(store, FIX / "Posteingang.mbox", context=ctx)
    mails = by_id(store)
    assert mails["tb-1@example.de"]["attributes"]["direction"] == "sent"
    assert mails["tb-2@example.org"]["attributes"]["direction"] == "received"


def test_broken_messages_become_issues(store):
    f, = run(store, FIX / "broken.mbox").to_json()["files"]
    assert f["status"] == "imported" and f["added"] == 4
    reasons = {i["locator"]: i["reason"] for i in f["issues"]}
    assert "cannot be read" in reasons["message 2 (line 10), Message-ID <no-date@example.com>"]
    assert "empty" in reasons["message 3 (line 19)"]
    assert "x-klingon-8" in reasons["message 4 (line 22)"]
    mails = by_id(store)
    garbled = mails["garbled-date@example.com"]  # Date garbled -> separator line's date
    assert garbled["start"] == datetime(2024, 2, 5, 10, 0) and garbled["tz_offset_min"] == 60
    assert mails["bad-base64@example.com"]["text"].endswith("Hello world")
    assert mails["trunc@example.com"]["title"] == "Truncated mess"
    nomsgid, = [e for e in store.events() if "message_id" not in e["attributes"]]
    assert "café crème" in nomsgid["text"]  # unknown charset decoded with replacement


def test_not_mail_and_empty(store):
    report = run(store, FIX / "not-mail.mbox", FIX / "empty.mbox").to_json()
    files = {Path(f["path"]).name: f for f in report["files"]}
    assert files["empty.mbox"]["status"] == "empty"
    assert files["not-mail.mbox"]["added"] == 0
    assert any("does not look like an mbox" in i["reason"] for i in files["not-mail.mbox"]["issues"])


def test_folder_zip_and_reimport(store, tmp_path):
    folder = tmp_path / "Takeout"
    shutil.copytree(FIX / "Takeout", folder)
    assert run(store, folder).to_json()["added"] == 4
    zpath = tmp_path / "takeout-20240501.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.write(GMAIL, "Takeout/Mail/All mail Including Spam and Trash.mbox")
    again = run(store, zpath).to_json()
    assert again["files"][0]["status"] == "already_imported" and again["added"] == 0
    later = run(store, FIX / "later-export.mbox").to_json()
    assert later["added"] == 1 and later["duplicates"] == 1
    assert store.count() == 5


def test_recognize_other_fixtures_zero():
    others = [p for p in FIX.parent.rglob("*") if p.is_file() and FIX not in p.parents]
    assert others
    for p in others:
        assert IMPORTER.recognize(Entry.from_path(str(p), p.name)) == 0, p


def test_recognize_by_content_not_name():
    data = GMAIL.read_bytes()
    assert IMPORTER.recognize(Entry.from_bytes("Inbox", data)) >= 0.9  # Thunderbird: no extension
    assert IMPORTER.recognize(Entry.from_bytes("Alle Nachrichten.mbox", data)) >= 0.9
    assert IMPORTER.recognize(Entry.from_bytes("notes.txt", b"From here on we walk.\nok\n")) == 0


def test_html_to_text():
    assert html_to_text("<p>a&amp;b</p><p>c<br>d</p><style>x{}</style>") == "a&b\nc\nd"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000))
def test_fuzz_random_bytes(data):
    for item in IMPORTER.read(Entry.from_bytes("x.mbox", b"From a@b Mon Jan  1 00:00:00 2024\n" + data, BERLIN)):
        items_keep_the_contract([item])


_GMAIL_LINES = GMAIL.read_bytes().split(b"\n")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(_GMAIL_LINES) - 1),
                          st.sampled_from(["drop", "dup", "cut", "junk"]),
                          st.binary(max_size=40)), max_size=8))
def test_fuzz_mutated_mbox(mutations):
    lines = list(_GMAIL_LINES)
    for index, op, junk in mutations:
        if not lines:
            break
        index %= len(lines)
        if op == "drop":
            del lines[index]
        elif op == "dup":
            lines.insert(index, lines[index])
        elif op == "cut":
            lines[index] = lines[index][: len(lines[index]) // 2]
        else:
            lines[index] = lines[index] + junk
    for item in IMPORTER.read(Entry.from_bytes("x.mbox", b"\n".join(lines), BERLIN)):
        items_keep_the_contract([item])
