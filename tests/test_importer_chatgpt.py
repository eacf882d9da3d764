"""ChatGPT importer: the real pipeline over fixture exports and the real 2023 export."""
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
from importers import chatgpt
from importers.base import Entry, Event, ImportContext, ImportIssue
from tests.conftest import SHARED
from tests.reliability.contract import items_keep_the_contract

FIX = Path(__file__).parent / "fixtures" / "chatgpt"
REAL = SHARED / "data/chatgpt-export/conversations.json"
BERLIN = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def run(store, *paths, **kw):
    return import_paths(store, list(paths), context=BERLIN, **kw).to_json()


def turns(store, conversation_title=None):
    rows = [r for r in store_rows(store) if r["kind"] == "chat_turn"]
    if conversation_title is not None:
        rows = [r for r in rows if r["attributes"]["conversation_title"] == conversation_title]
    return {r["attributes"]["node_id"]: r for r in rows}


def store_rows(store):
    con = store.reader()
    cur = con.execute("SELECT * FROM events WHERE source = 'chatgpt'")
    cols = [d[0] for d in cur.description]
    rows = [dict(zip(cols, r)) for r in cur.fetchall()]
    for r in rows:
        r["attributes"] = json.loads(r["attributes"])
    return rows


def read_all(data: bytes, name: str = "conversations.json") -> list:
    return list(chatgpt.read(Entry.from_bytes(name, data, BERLIN)))


# ---- the fixture export -------------------------------------------------------------

def test_export_folder_keeps_the_tree(store):
    report = run(store, FIX / "export")
    (file,) = report["files"]
    assert file["importer"] == "chatgpt" and file["status"] == "imported"
    # the other members of the export zip are known and deliberately ignored
    ignored = sorted(Path(i["path"]).name for i in report["ignored"])
    assert ignored == ["chat.html", "file-Receipt01-receipt.jpg", "message_feedback.json",
                       "model_comparisons.json", "shared_conversations.json", "user.json"]
    assert report["unrecognized"] == []
    rows = store_rows(store)
    assert Counter(r["kind"] for r in rows) == {"chat_turn": 19, "chat_conversation": 3}

    lisbon = turns(store, "Weekend in Lisbon")
    # edited prompt: two user versions under the first answer, only the edit is current
    assert lisbon["a-u2"]["attributes"]["parent_id"] == "a-a1"
    assert lisbon["a-u2e"]["attributes"]["parent_id"] == "a-a1"
    assert [lisbon[n]["attributes"]["branch_index"] for n in ("a-u2", "a-u2e")] == [1, 2]
    assert lisbon["a-u2e"]["attributes"]["branch_count"] == 2
    assert lisbon["a-u2e"]["attributes"]["sibling_count"] == 1
    assert lisbon["a-a1"]["attributes"]["child_count"] == 2
    # regenerated answer: the first answer and the reasoning branch are siblings
    assert lisbon["a-a3"]["attributes"]["parent_id"] == "a-u2e"
    assert lisbon["a-th"]["attributes"]["parent_id"] == "a-u2e"
    current = {n for n, r in lisbon.items() if r["attributes"]["on_current_path"]}
    assert current == {"a-u1", "a-a1", "a-u2e", "a-th", "a-rr", "a-a4"}
    # the empty system scaffolding is no event; the first prompt is a root turn
    assert "a-sys" not in lisbon and lisbon["a-u1"]["attributes"]["parent_id"] is None
    assert lisbon["a-a4"]["attributes"]["turn_index"] == 5
    assert lisbon["a-th"]["attributes"]["reasoning"] is True
    assert lisbon["a-th"]["attributes"]["content_type"] == "thoughts"
    assert "Sintra has palaces" in lisbon["a-th"]["text"]
    assert lisbon["a-a4"]["attributes"]["model"] == "o3"
    assert lisbon["a-u1"]["text"] == ('You asked ChatGPT in the conversation "Weekend in Lisbon": '
                                      "Plan a 3-day trip to Lisbon for me.")


def test_content_types_and_null_title(store):
    run(store, FIX / "export" / "conversations.json")
    receipt = {r["attributes"]["node_id"]: r for r in store_rows(store)
               if r["attributes"]["conversation_id"].endswith("0b") and r["kind"] == "chat_turn"}
    assert receipt["b-u1"]["attributes"]["content_type"] == "multimodal_text"
    assert "[image: receipt.jpg]" in receipt["b-u1"]["text"]
    assert receipt["b-u1"]["attributes"]["attachments"] == ["receipt.jpg"]
    code, out = receipt["b-code"]["attributes"], receipt["b-out"]["attributes"]
    assert (code["content_type"], code["recipient"], code["language"]) == ("code", "python", "python")
    assert (out["content_type"], out["role"], out["author_name"], out["parent_id"]) == (
        "execution_output", "tool", "python", "b-code")
    assert "22.85" in receipt["b-out"]["text"]
    # no model_slug on the message: the conversation's default model
    assert receipt["b-a1"]["attributes"]["model"] == "gpt-4o-mini"
    # null create_time: the parent's time
    assert receipt["b-a1"]["start"] == receipt["b-out"]["start"]
    # an unknown content type with text is still a turn; one without text is not
    assert receipt["b-w"]["attributes"]["unknown_content"] == ["fancy_widget"]
    assert "b-w2" not in receipt and receipt["b-u2"]["attributes"]["parent_id"] == "b-w"
    (conv,) = [r for r in store_rows(store) if r["kind"] == "chat_conversation"
               and r["attributes"]["conversation_id"].endswith("0b")]
    assert conv["title"] == "Untitled conversation" and conv["attributes"]["conversation_title"] == ""
    assert conv["attributes"]["message_count"] == 6


def test_conversation_event(store):
    report = run(store, FIX / "export" / "conversations.json")
    issues = report["files"][0]["issues"]
    assert {i["locator"].rsplit("node ", 1)[1] for i in issues} == {"b-w", "b-w2"}
    assert "fancy_widget" in issues[0]["reason"]
    (conv,) = [r for r in store_rows(store) if r["title"] == "Sourdough help"]
    a = conv["attributes"]
    assert conv["kind"] == "chat_conversation"
    assert (a["is_archived"], a["is_starred"], a["gizmo_id"], a["model"]) == (True, True, "g-SourdoughCoach", "gpt-4o")
    assert (a["message_count"], a["user_message_count"], a["assistant_message_count"]) == (4, 2, 1)
    assert str(conv["start"]) == "2024-10-26 20:00:00" and str(conv["end"]) == "2024-10-27 08:00:00"
    assert "It began with: Why is my sourdough flat?" in conv["text"]
    hidden = turns(store, "Sourdough help")["c-ctx"]["attributes"]
    assert hidden["hidden"] is True and hidden["content_type"] == "user_editable_context"


def test_utc_and_offset_across_dst(store):
    run(store, FIX / "export" / "conversations.json")
    lisbon = turns(store, "Weekend in Lisbon")
    # 2024-03-31 01:00 UTC Berlin moves from +01:00 to +02:00
    assert str(lisbon["a-a1"]["start"]) == "2024-03-30 10:00:20" and lisbon["a-a1"]["tz_offset_min"] == 60
    assert str(lisbon["a-a4"]["start"]) == "2024-03-31 10:01:10" and lisbon["a-a4"]["tz_offset_min"] == 120
    bread = turns(store, "Sourdough help")  # and back on 2024-10-27 01:00 UTC
    assert bread["c-u1"]["tz_offset_min"] == 120 and bread["c-a1"]["tz_offset_min"] == 60


def test_zip_and_split_export_and_reimport(store, tmp_path):
    z = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for f in sorted((FIX / "split").iterdir()):
            zf.write(f, f.name)
    report = run(store, z)
    assert [f["status"] for f in report["files"]] == ["imported", "imported"]
    assert sorted(Path(i["path"]).name for i in report["ignored"]) == [
        "conversations.json.index", "export_manifest.json"]
    assert report["added"] == 22
    # the same zip again: nothing read twice
    again = run(store, z)
    assert [f["status"] for f in again["files"]] == ["already_imported"] * 2 and again["added"] == 0
    # the single-file export holds the same conversations: all duplicates
    overlap = run(store, FIX / "export" / "conversations.json")
    assert overlap["files"][0]["status"] == "imported"
    assert overlap["added"] == 0 and overlap["duplicates"] == 22


def test_same_node_ids_in_two_conversations_are_two_turns(store, tmp_path):
    # The real export has copies of a conversation sharing node ids: keys are per conversation.
    convs = json.loads((FIX / "split" / "conversations-000.json").read_bytes())
    twin = json.loads(json.dumps(convs[0]))
    twin["id"] = twin["conversation_id"] = "6790a1b2-0009-8000-a000-000000000099"
    p = tmp_path / "conversations.json"
    p.write_text(json.dumps([convs[0], twin]))
    report = run(store, p)
    assert report["added"] == 2 * 10 and report["duplicates"] == 0


# ---- broken files -------------------------------------------------------------------

def test_truncated_file_keeps_what_came_before(store):
    report = run(store, FIX / "broken" / "conversations-truncated.json")
    f = report["files"][0]
    assert f["status"] == "imported" and f["added"] == 10
    (issue,) = f["issues"]
    assert issue["locator"] == "item 2" and "truncated" in issue["reason"]


def test_malformed_records_become_issues(store):
    report = run(store, FIX / "broken" / "conversations-malformed.json")
    f = report["files"][0]
    by_loc = {i["locator"]: i["reason"] for i in f["issues"]}
    assert "found str" in by_loc["item 2"] and "found int" in by_loc["item 5"]
    assert "no 'mapping'" in by_loc["conversation 6790a1b2-0005-8000-a000-00000000000e (item 3)"]
    d = "conversation 6790a1b2-0004-8000-a000-00000000000d (item 4)"
    assert "expected a node object, found str" in by_loc[f"{d}, node d-str"]
    assert "treated as a root" in by_loc[f"{d}, node d-orphan"]
    assert "cycle" in by_loc[f"{d}, node d-x"]
    assert "'yesterday' is not a time" in by_loc[f"{d}, node d-u1"]
    assert "current node d-missing" in by_loc[d]
    assert "no usable timestamps" in by_loc["conversation 6790a1b2-0006-8000-a000-00000000000f (item 6)"]
    # the good conversations on either side are complete
    assert len(turns(store, "Weekend in Lisbon")) == 9 and len(turns(store, "Sourdough help")) == 4
    dangling = turns(store, "Dangling and looping")
    assert set(dangling) == {"d-u1", "d-a1", "d-orphan"}


def test_bom_and_utf16(store, tmp_path):
    assert run(store, FIX / "broken" / "conversations-bom.json")["added"] == 5
    p = tmp_path / "conversations.json"
    shutil.copy(FIX / "broken" / "conversations-utf16.json", p)
    f = run(store, p)["files"][0]
    assert f["importer"] == "chatgpt" and f["added"] == 0
    assert "UTF-16" in f["issues"][0]["reason"]


@pytest.mark.parametrize("data, reason", [
    (b"   \n", "empty"),
    (b"<html>not json</html>", "not a JSON array"),
    (b'{"foo": 1}', "no 'mapping'"),
    (b"[]", None),
])
def test_odd_files(data, reason):
    issues = [x for x in read_all(data) if isinstance(x, ImportIssue)]
    if reason is None:
        assert issues == []
    else:
        assert reason in issues[0].reason


def test_wrapped_and_single_conversation_objects():
    convs = json.loads((FIX / "split" / "conversations-000.json").read_bytes())
    wrapped = read_all(json.dumps({"conversations": convs}).encode())
    single = read_all(json.dumps(convs[0]).encode(), "conversation.json")
    assert sum(isinstance(x, Event) for x in wrapped) == 10
    assert sum(isinstance(x, Event) for x in single) == 10


# ---- recognition --------------------------------------------------------------------

def test_recognize():
    for name in ("export/conversations.json", "split/conversations-000.json", "broken/conversations-bom.json"):
        assert chatgpt.recognize(Entry.from_path(str(FIX / name))) >= 0.9
    others = [p for p in (FIX.parent).rglob("*") if p.is_file() and FIX not in p.parents]
    for p in others:
        assert chatgpt.recognize(Entry.from_path(str(p))) == 0.0, p


# ---- fuzzing ------------------------------------------------------------------------

@FUZZ
@given(st.binary(max_size=2048))
def test_fuzz_random_bytes(data):
    for item in read_all(data):
        items_keep_the_contract([item])


_SAMPLE = (FIX / "export" / "conversations.json").read_text()
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8)


@FUZZ
@given(st.data())
def test_fuzz_mutated_records(data):
    convs = json.loads(_SAMPLE)
    conv = data.draw(st.sampled_from(convs))
    # replace a random field of the conversation, a node or a message with junk
    node_id = data.draw(st.sampled_from(sorted(conv["mapping"])))
    target = data.draw(st.sampled_from(["conv", "node", "message", "content"]))
    obj = {"conv": conv, "node": conv["mapping"][node_id],
           "message": conv["mapping"][node_id].get("message") or {},
           "content": (conv["mapping"][node_id].get("message") or {}).get("content") or {}}[target]
    if obj:
        key = data.draw(st.sampled_from(sorted(obj)))
        obj[key] = data.draw(_json_values)
    items_keep_the_contract(read_all(json.dumps([conv]).encode()))
    # cutting the file anywhere never raises either
    raw = json.dumps([conv]).encode()
    cut = data.draw(st.integers(0, len(raw)))
    items_keep_the_contract(read_all(raw[:cut]))


# ---- the real export ----------------------------------------------------------------

def _count_real(convs) -> tuple[int, int, int]:
    """Independent count: nodes with a message that carries any text, nodes in all."""
    def has_text(content) -> bool:
        for key in ("text", "result", "summary"):
            if isinstance(content.get(key), str) and content[key].strip():
                return True
        return any(isinstance(p, str) and p.strip() for p in content.get("parts") or [])

    nodes = sum(len(c["mapping"]) for c in convs)
    with_message = sum(1 for c in convs for n in c["mapping"].values() if n.get("message"))
    with_text = sum(1 for c in convs for n in c["mapping"].values()
                    if n.get("message") and has_text(n["message"]["content"]))
    return nodes, with_message, with_text


@pytest.mark.skipif(not REAL.exists(), reason="shared real export not available")
def test_real_export(store):
    convs = json.loads(REAL.read_bytes())
    nodes, with_message, with_text = _count_real(convs)
    assert (len(convs), nodes) == (192, 1752)
    report = run(store, REAL)
    f = report["files"][0]
    assert f["importer"] == "chatgpt" and f["issues"] == []
    rows = store_rows(store)
    kinds = Counter(r["kind"] for r in rows)
    assert kinds == {"chat_conversation": 192, "chat_turn": with_text}
    # every message the export has became a turn except the empty ones
    empty = with_message - with_text
    assert 0 < empty <= 200

    by_conv: dict[str, dict[str, dict]] = {}
    for r in rows:
        if r["kind"] == "chat_turn":
            by_conv.setdefault(r["attributes"]["conversation_id"], {})[r["attributes"]["node_id"]] = r
    # parent links resolve to turns of the same conversation
    for cid, nodes_ in by_conv.items():
        for r in nodes_.values():
            parent = r["attributes"]["parent_id"]
            assert parent is None or parent in nodes_, (cid, r["attributes"]["node_id"])
    # branches: every node with several message children shows up as sibling turns
    for c in convs:
        mine = by_conv[c["id"]]
        for n in c["mapping"].values():
            kids = [k for k in n["children"] if k in mine]
            if len(kids) > 1:
                assert [mine[k]["attributes"]["branch_index"] for k in kids] == list(range(1, len(kids) + 1))
                assert sum(mine[k]["attributes"]["on_current_path"] for k in kids) <= 1
        # the current path is exactly the chain from current_node to the root
        path, node = set(), c["current_node"]
        while node:
            path.add(node)
            node = c["mapping"][node]["parent"]
        assert {k for k, r in mine.items() if r["attributes"]["on_current_path"]} == path & set(mine)
    conv_rows = {r["attributes"]["conversation_id"]: r for r in rows if r["kind"] == "chat_conversation"}
    assert sum(r["attributes"]["message_count"] for r in conv_rows.values()) == with_text
