"""The canonical facts table: one JSON line per real-world fact (kind, UTC and local
time, local offset, attributes, and the export records that express it), and the
typed DuckDB view that gold SQL runs against.

The view flattens attributes into columns so question templates read like plain
SQL (``sport = 'running'``, ``start_local``). It must stay the only place that knows
the JSON layout.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import timezone
from pathlib import Path

import duckdb

from synth.simulate import Fact

CANONICAL_FILE = "canonical.jsonl"

# attribute -> DuckDB type of the flattened column
ATTRIBUTE_COLUMNS: dict[str, str] = {
    "artist": "VARCHAR", "track": "VARCHAR", "album": "VARCHAR", "genre": "VARCHAR", "context": "VARCHAR",
    "platform": "VARCHAR", "skipped": "BOOLEAN", "minutes": "DOUBLE", "ms_played": "BIGINT",
    "show": "VARCHAR", "episode": "VARCHAR", "season": "INTEGER", "device": "VARCHAR", "country": "VARCHAR",
    "sport": "VARCHAR", "distance_km": "DOUBLE", "duration_min": "DOUBLE", "calories": "DOUBLE",
    "avg_hr": "INTEGER", "place": "VARCHAR", "city": "VARCHAR",
    "restaurant": "VARCHAR", "cuisine": "VARCHAR", "meal": "VARCHAR", "address": "VARCHAR",
    "activity": "VARCHAR",
    "shop": "VARCHAR", "product": "VARCHAR", "category": "VARCHAR", "unit_price": "DOUBLE",
    "quantity": "INTEGER", "amount": "DOUBLE", "currency": "VARCHAR", "order_id": "VARCHAR",
    "direction": "VARCHAR", "counterpart": "VARCHAR", "counterpart_email": "VARCHAR", "topic": "VARCHAR",
    "subject": "VARCHAR", "title": "VARCHAR", "turns": "INTEGER",
    "person": "VARCHAR", "relation": "VARCHAR", "nights": "INTEGER", "steps": "INTEGER", "mood": "VARCHAR",
}


# SHOW is a DuckDB keyword; the column is called show_title.
COLUMN_ALIASES = {"show": "show_title"}


def fact_row(f: Fact) -> dict:
    start_utc = f.start.astimezone(timezone.utc)
    off = f.start.utcoffset()
    offset = int(off.total_seconds() // 60) if off is not None else 0
    attrs = {k: v for k, v in f.attrs.items()}
    return {
        "id": f.id, "kind": f.kind,
        "start_utc": start_utc.strftime("%Y-%m-%dT%H:%M:%S"),
        "end_utc": f.end.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") if f.end else None,
        "tz_offset_min": offset, "tz": f.tz,
        "start_local": f.start.strftime("%Y-%m-%dT%H:%M:%S"),
        "attributes": attrs,
        "about": f.about.id if f.about is not None else None,
        "exports": f.exports,
    }


def write_canonical(facts: Iterable[Fact], path: Path) -> int:
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for f in facts:
            out.write(json.dumps(fact_row(f), ensure_ascii=False, sort_keys=True, separators=(",", ":")))
            out.write("\n")
            n += 1
    return n


def connect(path: Path, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with ``events`` (flattened, typed) over a canonical file."""
    con = con or duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    cols = {"id": "VARCHAR", "kind": "VARCHAR", "start_utc": "TIMESTAMP", "end_utc": "TIMESTAMP",
            "tz_offset_min": "INTEGER", "tz": "VARCHAR", "start_local": "TIMESTAMP", "attributes": "JSON",
            "about": "VARCHAR", "exports": "JSON"}
    spec = ", ".join(f"'{k}': '{v}'" for k, v in cols.items())
    con.execute(f"CREATE OR REPLACE TABLE raw_facts AS SELECT * FROM read_json(?, format='newline_delimited', "
                f"columns={{{spec}}})", [str(path)])
    flat = ", ".join(f"TRY_CAST(attributes->>'{k}' AS {t}) AS {COLUMN_ALIASES.get(k, k)}"
                     for k, t in ATTRIBUTE_COLUMNS.items())
    con.execute(f"""
        CREATE OR REPLACE TABLE events AS
        SELECT id, kind, start_utc, end_utc, tz_offset_min, tz, start_local,
               start_local + (end_utc - start_utc) AS end_local,
               CAST(start_local AS DATE) AS day,
               COALESCE(CAST(attributes->'people' AS VARCHAR[]), []) AS people,
               {flat},
               about, exports, attributes
        FROM raw_facts
    """)
    return con
