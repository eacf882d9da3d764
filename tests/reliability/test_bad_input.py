"""Bad input, proven: every importer's real-shaped fixture, one record damaged at a
time (wrong types, missing fields or columns, huge fields, bad encodings), goes
through the real pipeline and must keep the contract in ``contract.py``; truncated
files must fail by name or import what they can, with located issues."""
from __future__ import annotations

import re
import shutil
import tempfile
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.contract import check_damaged_file, check_damaged_record, import_file
from tests.reliability.records import RecordFile, split_csv, split_json, split_text, write

# (case, the fixture split into records)
CASES: dict = {}


def _case(name: str) -> RecordFile:
    if not CASES:
        CASES.update({
            "spotify": lambda: split_json("spotify/StreamingHistory_music_0.json"),
            "spotify-2023": lambda: split_json("spotify/Streaming_History_Audio_2023_0.json"),
            "garmin": lambda: split_json("garmin/DI_CONNECT/DI-Connect-Fitness/erika@example.com_0_summarizedActivities.json"),
            "chatgpt": lambda: split_json("chatgpt/export/conversations.json"),
            "claude": lambda: split_json("claude/data-2024-11-02-09-30-00-batch-0000/conversations.json"),
            "takeout-activity": lambda: split_json("takeout/Takeout/My Activity/Search/MyActivity.json"),
            "takeout-location": lambda: split_json("takeout/location-history.json"),
            "takeout-semantic": lambda: split_json(
                "takeout/Takeout/Location History (Timeline)/Semantic Location History/2024/2024_MARCH.json"),
            "takeout-timeline": lambda: split_json("takeout/Timeline.json"),
            "dayone": lambda: split_json("journal/dayone/Journal.json"),
            "amazon": lambda: split_csv("amazon/Retail.OrderHistory.1/Retail.OrderHistory.1.csv"),
            "netflix": lambda: split_csv("netflix/ViewingActivity.csv"),
            "strava": lambda: split_csv("strava/activities.csv"),
            "mail": lambda: split_text("mail/Posteingang.mbox", r"^From ", ""),
            # a series and its changed occurrences are one record: an occurrence needs its series
            "calendar": lambda: split_text("calendar/Takeout/Calendar/alex.doe@example.org.ics", r"^BEGIN:VEVENT",
                                           r"^END:VCALENDAR", group=r"^UID:(.*)$"),
            "apple-health": lambda: split_text("apple_health/export.xml", r"^ <(?:Record|Workout|ActivitySummary|Correlation)\b",
                                       r"^</HealthData>"),
        })
    made = CASES[name]
    if callable(made):
        made = CASES[name] = made()
    return made


CASE_NAMES = ["spotify", "spotify-2023", "garmin", "chatgpt", "claude", "takeout-activity", "takeout-location",
              "takeout-semantic", "takeout-timeline", "dayone", "amazon", "netflix", "strava", "mail", "calendar",
              "apple-health"]

HUGE = "x" * 300_000
WRONG_VALUES = [None, 0, -1, 10**30, 1e308, "", "not a date", "2024-13-45T25:61:61Z", True, [], {}, [1, "a"],
                {"a": None}]
GARBAGE_TEXT = ["", "x", "-1", "9999-99-99", "2024-13-45T25:61:61Z", "NaN", "\u202e\u0000ctrl", HUGE]
BAD_BYTES = b"\xff\xfe\xc3("  # not UTF-8 in any reading
JSON_DAMAGES = ["delete", "wrong type", "huge", "lone surrogate", "bad bytes"]
CSV_DAMAGES = ["empty", "wrong type", "huge", "bad bytes", "missing column", "extra column"]
TEXT_DAMAGES = ["delete line", "garbage value", "huge", "bad bytes", "missing attribute"]


@cache
def _workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="hindsight-fuzz-"))


@pytest.fixture(scope="module", autouse=True)
def _remove_workdir():
    """The imported copies go when the module is done: a suite run leaves no files behind."""
    yield
    if _workdir.cache_info().currsize:
        shutil.rmtree(_workdir(), ignore_errors=True)
    _without.cache_clear()
    _workdir.cache_clear()


@cache
def _without(case: str, i: int):
    """The case's file without record ``i`` (whole for -1), imported."""
    rf = _case(case)
    path = write(_workdir() / "good" / case / str(i), rf.relpath, rf.join() if i < 0 else rf.without(i))
    return path, import_file(path)


def _damage_json(data: st.DataObject, rf: RecordFile, i: int) -> tuple[str, bytes]:
    import json

    value = json.loads(rf.records[i])
    damage = data.draw(st.sampled_from(JSON_DAMAGES), label="damage")
    # walk to a field at some depth of the record
    parent, key = None, None
    node = value
    for _ in range(data.draw(st.integers(1, 4), label="depth")):
        if isinstance(node, dict) and node:
            k = data.draw(st.sampled_from(sorted(node)), label="key")
        elif isinstance(node, list) and node:
            k = data.draw(st.integers(0, len(node) - 1), label="index")
        else:
            break
        parent, key, node = node, k, node[k]
    if parent is None:
        return damage, rf.records[i]
    marker = "\x01MARK\x01"
    if damage == "delete":
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    elif damage == "wrong type":
        parent[key] = data.draw(st.sampled_from(WRONG_VALUES), label="value")
    elif damage == "huge":
        parent[key] = HUGE
    else:
        parent[key] = marker
    out = json.dumps(value, ensure_ascii=False).encode("utf-8")
    if damage == "bad bytes":  # raw bytes that are not UTF-8
        out = out.replace(marker.encode(), b"caf" + BAD_BYTES)
    elif damage == "lone surrogate":  # valid JSON, not valid Unicode: "caf\udce9"
        out = out.replace(marker.encode(), b"caf\\udce9")
    return damage, out


def _damage_csv(data: st.DataObject, rf: RecordFile, i: int) -> tuple[str, bytes]:
    import csv
    import io

    from tests.reliability.records import _csv_line

    row = next(csv.reader(io.StringIO(rf.records[i].decode("utf-8"))))
    damage = data.draw(st.sampled_from(CSV_DAMAGES), label="damage")
    j = data.draw(st.integers(0, len(row) - 1), label="column")
    if damage == "empty":
        row[j] = ""
    elif damage == "wrong type":
        row[j] = data.draw(st.sampled_from(GARBAGE_TEXT[1:-1]), label="value")
    elif damage == "huge":
        row[j] = HUGE
    elif damage == "bad bytes":
        row[j] = row[j] + BAD_BYTES.decode("utf-8", "surrogateescape")
    elif damage == "missing column":
        del row[j]
    else:
        row.append("extra")
    return damage, _csv_line(row)


_ATTR = re.compile(rb'(\w+)="([^"]*)"')


def _damage_text(data: st.DataObject, rf: RecordFile, i: int) -> tuple[str, bytes]:
    lines = rf.records[i].split(b"\n")
    damage = data.draw(st.sampled_from(TEXT_DAMAGES), label="damage")
    # the record's first line (From, BEGIN:VEVENT, <Record) and a closing line hold the structure
    inner = [n for n, line in enumerate(lines) if 0 < n and line.strip() and not line.startswith((b"END:VEVENT", b" </"))]
    xml = rf.relpath.endswith(".xml")
    if xml:
        inner = [0] + [n for n in inner if _ATTR.search(lines[n])]
    if not inner:
        return damage, rf.records[i]
    n = data.draw(st.sampled_from(inner), label="line")
    line = lines[n]
    if xml:  # damage one attribute's value; the XML stays well-formed
        attrs = list(_ATTR.finditer(line))
        m = attrs[data.draw(st.integers(0, len(attrs) - 1), label="attribute")]
        if damage in ("delete line", "missing attribute"):
            new = b""
        else:
            value = {"garbage value": data.draw(st.sampled_from(GARBAGE_TEXT[:5]), label="value").encode(),
                     "huge": HUGE.encode(), "bad bytes": b"caf\xc3\xa9" + "\u00e9".encode("latin-1")}[damage]
            new = m.group(1) + b'="' + value + b'"'
        lines[n] = line[:m.start()] + new + line[m.end():]
        return damage, b"\n".join(lines)
    key, sep, _ = line.partition(b":")
    if damage in ("delete line", "missing attribute"):
        del lines[n]
    elif damage == "garbage value":
        value = data.draw(st.sampled_from(GARBAGE_TEXT[:7]), label="value").encode("utf-8")
        lines[n] = key + sep + (b" " if sep else b"") + value
    elif damage == "huge":
        lines[n] = key + sep + HUGE.encode()
    else:
        lines[n] = line.rstrip(b"\r") + BAD_BYTES + (b"\r" if line.endswith(b"\r") else b"")
    return damage, b"\n".join(lines)


_DAMAGERS = {"json": _damage_json, "csv": _damage_csv, "text": _damage_text}


@pytest.mark.parametrize("case", CASE_NAMES)
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_one_damaged_record_is_reported_and_the_rest_imported(case, data):
    rf = _case(case)
    i = data.draw(st.integers(0, len(rf.records) - 1), label="record")
    damage, record = _DAMAGERS[rf.kind](data, rf, i)
    _, good = _without(case, i)
    _, whole = _without(case, -1)
    path = write(_workdir() / "damaged" / case, rf.relpath, rf.with_record(i, record))
    check_damaged_record(case, damage, path, import_file(path), good, whole)


@pytest.mark.parametrize("case", CASE_NAMES)
@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_truncated_file_fails_by_name_or_imports_with_located_issues(case, data):
    rf = _case(case)
    full = rf.join()
    cut = data.draw(st.integers(1, len(full) - 1), label="cut")
    path = write(_workdir() / "truncated" / case, rf.relpath, full[:cut])
    check_damaged_file(case, "truncated", path, import_file(path))


@pytest.mark.parametrize("case", CASE_NAMES)
def test_the_split_fixture_imports_like_the_original(case):
    """The harness itself: a fixture put back together from its records imports the
    same events as the file on disk, so "without record i" means what it says."""
    from tests.conftest import FIXTURES

    rf = _case(case)
    original = import_file(FIXTURES / rf.relpath)
    again = import_file(write(_workdir() / "joined" / case, rf.relpath, rf.join()))
    assert again.ids == original.ids and len(again.ids) >= 2
