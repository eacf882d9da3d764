"""Events as the Arrow rows the store appends: the column layout and the
conversions, kept apart from DuckDB so the processes that read a large export in
parallel (:mod:`engine.parallel_read`) need not load it."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from importers.base import Event, EventBatch, event_id, to_utc_naive

# a locator naming an item of a JSON array ("item 7", "Takeout item 7"): its prefix and number
ITEM_LOCATOR = r"^(.*\bitem )(\d+)$"

EVENT_COLUMNS = ("id", "source", "kind", "title", "text", "start", "end", "tz_offset_min",
                 "attributes", "import_id", "file", "locator", "raw")

_ARROW_SCHEMA = pa.schema([
    ("id", pa.string()), ("source", pa.string()), ("kind", pa.string()), ("title", pa.string()),
    ("text", pa.string()), ("start", pa.timestamp("us")), ("end", pa.timestamp("us")),
    ("tz_offset_min", pa.int32()), ("attributes", pa.string()), ("import_id", pa.int32()),
    ("file", pa.string()), ("locator", pa.string()), ("raw", pa.string()),
])


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def dumps(value: Any) -> str:
    return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()


def events_to_arrow(events: Sequence[Event], import_id: int) -> pa.Table:
    """Column-wise conversion; the hot path of every import."""
    cols: dict[str, list] = {name: [] for name in EVENT_COLUMNS}
    for ev in events:
        cols["id"].append(event_id(ev))
        cols["source"].append(ev.source)
        cols["kind"].append(ev.kind)
        cols["title"].append(ev.title)
        cols["text"].append(ev.text)
        cols["start"].append(to_utc_naive(ev.start))
        cols["end"].append(to_utc_naive(ev.end) if ev.end is not None else None)
        cols["tz_offset_min"].append(ev.tz_offset_min)
        cols["attributes"].append(dumps(ev.attributes))
        cols["import_id"].append(import_id)
        cols["file"].append(ev.file)
        cols["locator"].append(ev.locator)
        cols["raw"].append(ev.raw)
    return pa.table(cols, schema=_ARROW_SCHEMA)


def batch_to_arrow(batch: EventBatch, import_id: int, file: str) -> pa.Table:
    """The same table as :func:`events_to_arrow` gives for ``batch.events()``
    (with ``file`` set), built column by column. Arrow turns aware times into
    UTC itself, faster than ``to_utc_naive`` per time."""
    n = len(batch)
    return pa.table({
        "id": batch.ids(), "source": pa.repeat(pa.scalar(batch.source, pa.string()), n),
        "kind": batch.kind, "title": batch.title, "text": batch.text, "start": batch.start, "end": batch.end,
        "tz_offset_min": batch.tz_offset_min, "attributes": [dumps(a) for a in batch.attributes],
        "import_id": pa.repeat(pa.scalar(import_id, pa.int32()), n),
        "file": pa.repeat(pa.scalar(file, pa.string()), n), "locator": batch.locator, "raw": batch.raw,
    }, schema=_ARROW_SCHEMA)


def write_rows(table: pa.Table, path) -> None:
    """Rows for :meth:`engine.store.EventStore.append_parquet`: a Parquet file
    written as fast as possible (it is read once, then deleted)."""
    pq.write_table(table, path, compression="none", use_dictionary=False, write_statistics=False)
