"""Claude importer: the real pipeline over fixture exports (batch folder, zip, web API shape)."""
from __future__ import annotations

import json
import shutil
import zipfile
from collections import Counter
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ingest import import_paths
from engine.store import EventStore
from importers import chatgpt, claude
from importers.base import Entry, Event, ImportContext, ImportIssue
from tests.reliability.contract import items_keep_the_contract

FIX = Path(__file__).parent / "fixtures" / "claude"
EXPORT = FIX / "data-2024-11-02-09-30-00-batch-0000"
BERLIN = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
C1, C3 = "5f1c2d3e-0001-4a00-8000-00000000c001", "5f1c2d3e-0003-4a00-8000-00000000c003"


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def run(store, *paths, **kw):
    return import_paths(store, list(paths), context=BERLIN, **kw).to_json()


def rows(store, kind=None):
    cur = store.reader().execute("SELECT * FROM events WHERE source = 'claude' ORDER BY start")
    cols = [d[0] for d in cur.description]
    out = [dict(zip(cols, r)) for r in cur.fetchall()]
    for r in out:
        r["attributes"] = json.loads(r["attributes"])
    return [r for r in out if kind is None or r["kind"] == kind]


def turns_of(store, cid):
    return [r for r in rows(store, "chat_turn") if r["attributes"]["conversation_id"] == cid]


def read_all(data: bytes, name: str = "conversations.json") -> list:
    return list(claude.read(Entry.from_bytes(name, data, BERLIN)))


def test_batch_folder(store):
    report = run(store, EXPORT)
    (f,) = report["files"]
    assert (f["importer"], f["status"], f["issues"]) == ("claude", "imported", [])
    assert sorted(Path(i["path"]).name for i in report["ignored"]) == ["projects.json", "users.json"]
    assert Counter(r["kind"] for r in rows(store)) == {"chat_turn": 10, "chat_conversation": 3}
    t = turns_of(store, C1)
    assert [r["attributes"]["role"] for r in t] == ["user", "assistant", "user", "assistant"]
    # linear export: each message follows the one before it
    assert [r["attributes"]["parent_id"] for r in t] == [None] + [r["attributes"]["node_id"] for r in t[:-1]]
    assert [r["attributes"]["turn_index"] for r in t] == [0, 1, 2, 3]
    assert all(r["attributes"]["on_current_path"] for r in t)
    first, thinking, _, tools = (r["attributes"] for r in t)
    assert first["attachments"] == ["starter-notes.txt", "starter-photo.jpg"]
    assert first["attachment_sizes"] == [5120, None]
    assert "[attachment starter-notes.txt: Day 1: 50 g flour" in t[0]["text"]
    assert len(t[0]["text"]) < claude.MAX_ATTACHMENT_CHARS + 400  # extracted content is cut
    assert thinking["reasoning"] is True and thinking["content_type"] == "thinking+text"
    assert "[Claude's thinking: The notes show a young starter" in t[1]["text"]
    assert tools["tools"] == ["web_search"] and "Whole rye feeds starters fast" in t[3]["text"]
    assert t[0]["text"].startswith('You asked Claude in the conversation "Sourdough starter schedule": '
                                   "How often should I feed my starter?")


def test_utc_and_offset_across_dst(store):
    run(store, EXPORT / "conversations.json")
    t = turns_of(store, C1)  # Berlin leaves summer time on 2024-10-27 01:00 UTC
    assert str(t[0]["start"]) == "2024-10-26 22:00:00" and t[0]["tz_offset_min"] == 120
    assert str(t[3]["start"]) == "2024-10-27 09:15:00" and t[3]["tz_offset_min"] == 60


def test_web_api_shape_branches(store):
    run(store, EXPORT / "conversations.json")
    t = {r["attributes"]["node_id"][-2:]: r["attributes"] for r in turns_of(store, C3)}
    # two versions of the first prompt under the root sentinel; the second is current
    assert (t["c1"]["parent_id"], t["c3"]["parent_id"]) == (None, None)
    assert (t["c1"]["branch_index"], t["c3"]["branch_index"], t["c3"]["branch_count"]) == (1, 2, 2)
    assert t["c4"]["parent_id"].endswith("c3") and t["c2"]["parent_id"].endswith("c1")
    assert {k for k, a in t.items() if a["on_current_path"]} == {"c3", "c4"}
    assert t["c4"]["model"] == "claude-3-5-sonnet-20241022"
    (conv,) = [r for r in rows(store, "chat_conversation") if r["attributes"]["conversation_id"] == C3]
    assert conv["attributes"]["is_starred"] is True
    assert "Summary: Asked about trains" in conv["text"]


def test_conversation_events_and_untitled(store):
    run(store, EXPORT / "conversations.json")
    convs = {r["attributes"]["conversation_id"][-4:]: r for r in rows(store, "chat_conversation")}
    c1 = convs["c001"]
    assert c1["title"] == "Sourdough starter schedule"
    assert (str(c1["start"]), str(c1["end"])) == ("2024-10-26 21:58:41.128870", "2024-10-27 09:15:02.481503")
    assert (c1["attributes"]["message_count"], c1["attributes"]["user_message_count"]) == (4, 2)
    assert c1["attributes"]["account_id"] == "0b1e2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    c2 = convs["c002"]
    assert c2["title"] == "Untitled conversation" and c2["attributes"]["conversation_title"] == ""
    reply = turns_of(store, "5f1c2d3e-0002-4a00-8000-00000000c002")[1]
    assert reply["attributes"]["role"] == "assistant" and "Bom dia." in reply["text"]
    assert str(reply["start"]) == "2024-06-01 08:00:00"  # no created_at: the previous message's time


def test_zip_and_reimport(store, tmp_path):
    z = tmp_path / "data-2024-11-02-09-30-00-batch-0000.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for f in sorted(EXPORT.iterdir()):
            zf.write(f, f"{EXPORT.name}/{f.name}")
    first = run(store, z)
    assert first["added"] == 13 and first["files"][0]["importer"] == "claude"
    again = run(store, z)
    assert again["files"][0]["status"] == "already_imported" and again["added"] == 0
    # an overlapping, different file: the malformed one repeats two conversations
    overlap = run(store, FIX / "broken" / "malformed.json")
    assert overlap["files"][0]["status"] == "imported"
    assert overlap["duplicates"] == 3 + 5 and overlap["added"] == 3


def test_truncated(store):
    f = run(store, FIX / "broken" / "truncated.json")["files"][0]
    assert f["added"] == 5
    (issue,) = f["issues"]
    assert issue["locator"] == "item 2" and "truncated" in issue["reason"]


def test_malformed(store):
    f = run(store, FIX / "broken" / "malformed.json")["files"][0]
    by_loc: dict[str, str] = {}
    for i in f["issues"]:
        by_loc[i["locator"]] = by_loc.get(i["locator"], "") + i["reason"] + " | "
    odd = "conversation 5f1c2d3e-0004-4a00-8000-00000000c004 (item 4)"
    assert "no 'chat_messages'" in by_loc["conversation 5f1c2d3e-0005-4a00-8000-00000000c005 (item 2)"]
    assert "found int" in by_loc["item 3"]
    assert "found str" in by_loc[f"{odd}, message 1"]
    assert "'sparkle'" in by_loc[f"{odd}, message 5f1c2d3e-0004-4b00-8000-0000000000d2"]
    d1 = by_loc[f"{odd}, message 5f1c2d3e-0004-4b00-8000-0000000000d1"]
    assert "'voice_note'" in d1 and "'last tuesday' is not an ISO time" in d1
    t = turns_of(store, "5f1c2d3e-0004-4a00-8000-00000000c004")
    # the unknown block's text is kept; the empty message is no turn and the chain skips it
    assert [r["attributes"]["node_id"][-2:] for r in t] == ["d1", "d3"]
    assert "Remind me to buy rye flour" in t[0]["text"] and t[0]["attributes"]["attachments"] == ["memo.m4a"]
    assert t[1]["attributes"]["parent_id"] == t[0]["attributes"]["node_id"]
    assert len(turns_of(store, C3)) == 4


def test_utf16(store, tmp_path):
    p = tmp_path / "conversations.json"
    shutil.copy(FIX / "broken" / "utf16.json", p)
    f = run(store, p, only="claude")["files"][0]
    assert f["added"] == 0 and "UTF-16" in f["issues"][0]["reason"]


@pytest.mark.parametrize("data, reason", [
    (b"\n", "empty"),
    (b"hello", "not a JSON array"),
    (b'{"uuid": "x"}', "no 'chat_messages'"),
    (b"[]", None),
])
def test_odd_files(data, reason):
    issues = [x for x in read_all(data) if isinstance(x, ImportIssue)]
    assert (issues == []) if reason is None else reason in issues[0].reason


def test_recognize_tells_claude_from_chatgpt():
    entry = Entry.from_path(str(EXPORT / "conversations.json"))
    assert claude.recognize(entry) >= 0.9 and chatgpt.recognize(entry) == 0.0
    gpt = Entry.from_path(str(FIX.parent / "chatgpt" / "export" / "conversations.json"))
    assert claude.recognize(gpt) == 0.0 and chatgpt.recognize(gpt) >= 0.9
    for p in FIX.parent.rglob("*"):
        if p.is_file() and FIX not in p.parents:
            assert claude.recognize(Entry.from_path(str(p))) == 0.0, p
    for name in ("users.json", "projects.json"):
        assert claude.recognize(Entry.from_path(str(EXPORT / name))) == 0.0


@FUZZ
@given(st.binary(max_size=2048))
def test_fuzz_random_bytes(data):
    items_keep_the_contract(read_all(data))


_SAMPLE = (EXPORT / "conversations.json").read_text()
_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8)


@FUZZ
@given(st.data())
def test_fuzz_mutated_records(data):
    conv = data.draw(st.sampled_from(json.loads(_SAMPLE)))
    target = data.draw(st.sampled_from(["conv", "message", "block"]))
    message = data.draw(st.sampled_from(conv["chat_messages"]))
    blocks = message.get("content") or [{}]
    obj = {"conv": conv, "message": message, "block": data.draw(st.sampled_from(blocks))}[target]
    if obj:
        obj[data.draw(st.sampled_from(sorted(obj)))] = data.draw(_junk)
    raw = json.dumps([conv]).encode()
    items_keep_the_contract(read_all(raw))
    cut = data.draw(st.integers(0, len(raw)))
    items_keep_the_contract(read_all(raw[:cut]))
