"""Real-shaped fixtures taken apart into records and put back together, so a fuzz
test can damage exactly one record and know what the others must still give.

A :class:`RecordFile` is ``head + records + tail`` as bytes; joining it again gives a
file that imports like the fixture. JSON exports are split at their largest list of
objects (a Spotify play, a ChatGPT conversation, a Takeout location), CSV at rows,
mbox at ``From`` lines, iCalendar at ``VEVENT`` blocks and Apple Health at the
top-level elements of ``HealthData``.
"""
from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES


@dataclass(frozen=True)
class RecordFile:
    relpath: str  # where the file lies under tests/fixtures (its name is what importers recognise)
    kind: str  # json | csv | text
    head: bytes
    records: tuple[bytes, ...]
    tail: bytes
    sep: bytes = b""
    # for JSON: each record as a value, so a mutation can change one field
    values: tuple[Any, ...] = field(default=(), compare=False)
    header: tuple[str, ...] = ()

    def join(self, records: tuple[bytes, ...] | None = None) -> bytes:
        return self.head + self.sep.join(self.records if records is None else records) + self.tail

    def without(self, i: int) -> bytes:
        return self.join(self.records[:i] + self.records[i + 1:])

    def with_record(self, i: int, record: bytes) -> bytes:
        return self.join(self.records[:i] + (record,) + self.records[i + 1:])


_MARK = "\x00RECORDS\x00"


def split_json(relpath: str) -> RecordFile:
    doc = json.loads((FIXTURES / relpath).read_text("utf-8-sig"))
    path = _largest_list(doc)
    assert path is not None, f"{relpath}: no list of objects to fuzz"
    records = _get(doc, path)
    skeleton = _set(doc, path, _MARK)
    text = json.dumps(skeleton, ensure_ascii=False, indent=1)
    head, tail = text.split(json.dumps(_MARK), 1)
    return RecordFile(relpath, "json", (head + "[\n").encode(), tuple(_dump(r) for r in records),
                      ("\n]" + tail).encode(), b",\n", tuple(records))


def _dump(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _largest_list(value: Any, path: tuple = ()) -> tuple | None:
    """The path to the longest list of objects in ``value`` (the shallowest of equals)."""
    lists: list[tuple[int, int, tuple]] = []

    def walk(v: Any, p: tuple) -> None:
        if isinstance(v, list) and len(v) > 1 and all(isinstance(x, dict) for x in v):
            lists.append((-len(v), len(p), p))
        if isinstance(v, dict):
            for k, child in v.items():
                walk(child, p + (k,))
        elif isinstance(v, list):
            for i, child in enumerate(v):
                walk(child, p + (i,))

    walk(value, path)
    return min(lists, key=lambda t: t[:2])[2] if lists else None


def _get(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def _set(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _set(value[path[0]], path[1:], new)
    return copy


def split_csv(relpath: str) -> RecordFile:
    data = (FIXTURES / relpath).read_bytes()
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    rows = list(csv.reader(io.StringIO(data[len(bom):].decode("utf-8"), newline="")))
    return RecordFile(relpath, "csv", bom + _csv_line(rows[0]) + b"\r\n", tuple(_csv_line(r) for r in rows[1:]),
                      b"\r\n", b"\r\n", header=tuple(rows[0]))


def _csv_line(cells: list[str]) -> bytes:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="").writerow(cells)
    return out.getvalue().encode("utf-8", "surrogateescape")


def split_text(relpath: str, start: str, end: str, group: str = "") -> RecordFile:
    """Records begin at lines matching ``start``; the tail begins at ``end``. With
    ``group``, pieces whose first match of it is the same are one record."""
    data = (FIXTURES / relpath).read_bytes()
    starts = [m.start() for m in re.finditer(start.encode(), data, re.M)]
    tail_at = re.search(end.encode(), data, re.M).start() if end else len(data)
    bounds = starts + [tail_at]
    pieces = [data[a:b] for a, b in zip(bounds, bounds[1:])]
    if group:
        grouped: dict[bytes, bytes] = {}
        for n, piece in enumerate(pieces):
            m = re.search(group.encode(), piece, re.M)
            key = m.group(1).strip() if m else str(n).encode()
            grouped[key] = grouped.get(key, b"") + piece
        pieces = list(grouped.values())
    return RecordFile(relpath, "text", data[:starts[0]], tuple(pieces), data[tail_at:])


def write(root: Path, relpath: str, data: bytes) -> Path:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def rebuilt(rf: RecordFile, **changes) -> RecordFile:
    return replace(rf, **changes)
