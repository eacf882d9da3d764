"""The DuckDB event store: one file per data directory.

Ownership rule: one writer. Every write (imports, removals, migrations after open)
runs on the store's single writer thread via :meth:`EventStore.write`; any thread may
read through :meth:`EventStore.reader`, which gives it its own cursor, so the GUI can
read while an import writes. DuckDB's MVCC means readers see only committed data.

Times are stored as UTC wall time (``TIMESTAMP``) plus ``tz_offset_min``, the local
offset at the event's start.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import duckdb
import orjson
import pyarrow as pa

from engine.rows import (EVENT_COLUMNS, ITEM_LOCATOR, batch_to_arrow, dumps,  # noqa: F401 - re-exported
                         events_to_arrow, write_rows)
from importers.base import Event, to_utc_naive

log = logging.getLogger(__name__)
T = TypeVar("T")

SCHEMA_VERSION = 2
STORE_FILENAME = "hindsight.duckdb"



@contextmanager
def transaction(con) -> Iterator[None]:
    """One DuckDB transaction on ``con``: committed when the block ends, rolled back
    (and the error raised again) if it raises."""
    con.begin()
    try:
        yield
        con.commit()
    except Exception:
        con.rollback()
        raise

class StoreError(RuntimeError):
    """A problem with the store a user can act on (locked, too new, unreadable)."""


# Each migration brings the schema from version i to i+1. Never edit a released one.
_MIGRATIONS: list[tuple[str, str]] = [
    ("initial schema: events, imports", """
        CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
        CREATE SEQUENCE import_ids START 1;
        CREATE TABLE imports (
            id INTEGER PRIMARY KEY,
            path VARCHAR NOT NULL,          -- what the user dropped (file, folder or zip)
            file VARCHAR NOT NULL,          -- the imported file, incl. the archive member
            sha256 VARCHAR NOT NULL,
            importer VARCHAR NOT NULL,
            importer_version VARCHAR NOT NULL,
            started_at TIMESTAMP NOT NULL,
            finished_at TIMESTAMP NOT NULL,
            read BIGINT NOT NULL, added BIGINT NOT NULL,
            duplicates BIGINT NOT NULL, skipped BIGINT NOT NULL,
            issues JSON NOT NULL
        );
        CREATE TABLE events (
            id VARCHAR NOT NULL,
            source VARCHAR NOT NULL,
            kind VARCHAR NOT NULL,
            title VARCHAR,
            text VARCHAR,
            start TIMESTAMP NOT NULL,
            "end" TIMESTAMP,
            tz_offset_min INTEGER,
            attributes JSON,
            import_id INTEGER NOT NULL,
            file VARCHAR,
            locator VARCHAR,
            raw VARCHAR
        );
    """),
    ("remember duplicates per import, so removing one of two overlapping exports "
     "keeps the events the other one also has; group files by drop", """
        CREATE TABLE import_duplicates (import_id INTEGER NOT NULL, event_id VARCHAR NOT NULL);
        ALTER TABLE imports ADD COLUMN batch VARCHAR;
    """),
]
assert len(_MIGRATIONS) == SCHEMA_VERSION

# Rows per row group of the store's tables. DuckDB's default, 122,880, holds a row
# group's columns in memory while an import commits and checkpoints it: for mail, with
# bodies of a few KB, that was 300-1,000 MB over the import's buffer limit (an 80k-mail
# mbox peaked at 584 MB, 4 x 80k rows of 3.6 KB at 1,132 MB; at 16,384 rows 332 MB).
ROW_GROUP_ROWS = 16_384
#: what :meth:`EventStore.release_cache` leaves of the buffer pool
CACHE_FLOOR = "64MB"
_CATALOG = "store"


def _open(path: str, read_only: bool, memory_limit: str) -> duckdb.DuckDBPyConnection:
    """The database at ``path``, attached with :data:`ROW_GROUP_ROWS` (a setting of
    the attachment, not of the file) and made every statement's default."""
    if path == ":memory:":
        return duckdb.connect(path, config={"memory_limit": memory_limit})
    # the in-memory main database would spill to ./.tmp: keep spills beside the store
    db = duckdb.connect(":memory:", config={"memory_limit": memory_limit, "temp_directory": path + ".tmp"})
    try:
        db.execute(f"ATTACH {_sql_text(path)} AS {_CATALOG} "
                   f"({'READ_ONLY, ' if read_only else ''}ROW_GROUP_SIZE {ROW_GROUP_ROWS})")
        db.execute(f"USE {_CATALOG}")
    except BaseException:
        db.close()
        raise
    return db


@dataclass(frozen=True, slots=True)
class BatchResult:
    added: int
    duplicates: int


class EventStore:
    """Open (creating or migrating) the store at ``path``; ``":memory:"`` for tests."""

    def __init__(self, path: str | Path = ":memory:", *, read_only: bool = False,
                 memory_limit: str = "1GB", import_memory_limit: str = "128MB"):
        self.path = str(path)
        self.memory_limit = memory_limit
        # An import streams, so a small buffer pool suffices (DuckDB spills beyond
        # it), and the import's peak memory stays flat in the file's size instead
        # of growing to ``memory_limit`` with the rows of its open transaction.
        self.import_memory_limit = import_memory_limit
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            # A bounded buffer pool: DuckDB would otherwise cache up to 80% of RAM,
            # and a desktop app shares the machine.
            self._db = _open(self.path, read_only, memory_limit)
        except duckdb.IOException as exc:
            # "Could not set lock on file ... Conflicting lock is held" (not the "block" of a checksum error)
            if re.search(r"\block\b", str(exc), re.I):
                raise StoreError(
                    f"the store {self.path} is open in another Hindsight process; "
                    "close it (or wait for its import to finish) and try again") from exc
            raise StoreError(_cannot_open(self.path, exc)) from exc
        except duckdb.Error as exc:
            if "file handle conflict" in str(exc):  # attached already, by another EventStore of this process
                raise StoreError(f"the store {self.path} is open already in this process: one EventStore "
                                 "owns it (its single writer); use that one, or close it first") from exc
            raise StoreError(_cannot_open(self.path, exc)) from exc
        self.read_only = read_only
        self._local = threading.local()
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._cursor_lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindsight-writer")
        self._closed = False
        if read_only:
            v = self.schema_version()
            if v != SCHEMA_VERSION:
                raise StoreError(f"the store {self.path} has schema {v}, this Hindsight needs "
                                 f"{SCHEMA_VERSION}; open it once without read-only to migrate")
        else:
            self.write(self._migrate).result()
            self._remove_stale_spills()  # DuckDB's lock says no other process has the store open

    # ---- connections -----------------------------------------------------------
    def reader(self) -> duckdb.DuckDBPyConnection:
        """This thread's own cursor. Reads only; writes go through :meth:`write`."""
        con = getattr(self._local, "con", None)
        if con is None:
            if self._closed:
                raise StoreError("the store is closed")
            con = self._db.cursor()
            if self.path != ":memory:":
                con.execute(f"USE {_CATALOG}")  # a cursor starts in the in-memory catalog
            self._local.con = con
            with self._cursor_lock:
                self._cursors.append(con)
        return con

    def write(self, fn: Callable[[duckdb.DuckDBPyConnection], T]) -> "Future[T]":
        """Run ``fn(con)`` on the single writer thread; returns a Future."""
        if self.read_only:
            raise StoreError(f"the store {self.path} is open read-only")
        if self._closed:
            raise StoreError("the store is closed")
        return self._writer.submit(lambda: fn(self.reader()))

    def close(self) -> None:
        if self._closed:
            return
        self._writer.shutdown(wait=True)
        self._closed = True
        with self._cursor_lock:
            for con in self._cursors:
                try:
                    con.close()
                except duckdb.Error:
                    pass
            self._cursors.clear()
        self._db.close()

    def __enter__(self) -> "EventStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- schema ----------------------------------------------------------------
    def schema_version(self) -> int:
        con = self.reader()
        has_meta = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'").fetchone()[0]
        if not has_meta:
            return 0
        row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> None:
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise StoreError(f"the store {self.path} was written by a newer Hindsight "
                             f"(schema {current}, this one knows {SCHEMA_VERSION}); update Hindsight")
        if 0 < current < SCHEMA_VERSION:
            self._backup_before_migration(con, current)
        for version in range(current, SCHEMA_VERSION):
            why, sql = _MIGRATIONS[version]
            log.info("migrating store %s to schema %d: %s", self.path, version + 1, why)
            con.begin()
            try:
                con.execute(sql)
                con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(version + 1)])
                con.commit()
            except Exception:
                con.rollback()
                raise

    def _backup_before_migration(self, con: duckdb.DuckDBPyConnection, current: int) -> Path | None:
        """Copy the store aside before its schema changes: a migration that fails
        halfway, or a newer Hindsight the user goes back from, leaves the copy whole.
        ``hindsight.duckdb.before-schema-3`` is the store as schema 2 left it."""
        if self.path == ":memory:":
            return None
        source = Path(self.path)
        backup = source.with_name(f"{source.name}.before-schema-{current + 1}")
        con.execute("CHECKPOINT")  # everything committed is in the file, none of it only in the log
        partial = backup.with_name(backup.name + ".partial")
        try:
            shutil.copyfile(source, partial)
            os.replace(partial, backup)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise StoreError(f"cannot back up the store {source} to {backup} before updating its schema: "
                             f"{exc}; free some disk space and open it again") from exc
        log.info("backed up the store %s to %s before migrating it from schema %d", source, backup, current)
        return backup

    def release_cache(self) -> "Future[None] | None":
        """Give back the table blocks the buffer pool keeps after a read of the whole
        store: an index refresh reads every event, and at a million events 216 MB of
        them stayed cached (and 260 MB resident) until the store closed. The pool is
        shrunk to :data:`CACHE_FLOOR` and its limit set back, on the writer thread,
        so that an import's own limit (:meth:`importing`) is never changed under it.
        Returns the writer's Future at once (None for a closed or read-only store's,
        done already): the caller does not wait behind an import that is running.
        Failing to shrink (a query holds more) only costs memory: logged, not raised."""
        def shrink(con: duckdb.DuckDBPyConnection) -> None:
            try:
                con.execute(f"SET memory_limit = {_sql_text(CACHE_FLOOR)}")
            except duckdb.Error as exc:
                log.info("could not shrink the store's buffer pool: %s", exc)
            finally:
                con.execute(f"SET memory_limit = {_sql_text(self.memory_limit)}")

        if self._closed:
            return None
        if self.read_only:  # nothing imports into it: this thread's cursor will do
            shrink(self.reader())
            return None
        try:
            return self.write(shrink)
        except (StoreError, RuntimeError):  # closed meanwhile, or the writer shut down
            return None

    # ---- writer-side helpers (call only inside write()) ----------------------------
    @contextmanager
    def importing(self, con: duckdb.DuckDBPyConnection) -> Iterator[None]:
        """Run an import under :attr:`import_memory_limit` and with one DuckDB
        thread, then restore both. One thread, because the import's reading thread
        keeps a core busy parsing; a second DuckDB thread only fought it for that
        core. Both settings are the database's: readers share them meanwhile."""
        threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
        con.execute(f"SET memory_limit = {_sql_text(self.import_memory_limit)}")
        con.execute("SET threads = 1")
        try:
            yield
        finally:
            con.execute(f"SET memory_limit = {_sql_text(self.memory_limit)}")
            con.execute(f"SET threads = {int(threads)}")

    def append_events(self, con: duckdb.DuckDBPyConnection, events: Sequence[Event], import_id: int) -> None:
        """Append a batch inside the caller's transaction (writer thread only);
        :meth:`finish_imports` removes duplicates once per group of files."""
        if events:
            self.append_table(con, events_to_arrow(events, import_id))

    def append_table(self, con: duckdb.DuckDBPyConnection, table: pa.Table) -> None:
        """Append rows made by :func:`events_to_arrow` or :func:`batch_to_arrow`
        (which any thread may call) inside the caller's transaction (writer thread only).

        The rows travel through a temporary Parquet file rather than a registered
        Arrow table: DuckDB keeps registered Arrow buffers alive until the
        transaction ends, which made memory grow with the file's size."""
        if not table.num_rows:
            return
        spill = self.spill_path()
        write_rows(table, spill)
        del table
        self.append_parquet(con, spill)

    @staticmethod
    def append_parquet(con: duckdb.DuckDBPyConnection, path: Path, item_shift: int = 0) -> None:
        """Append the rows of a Parquet file written by :func:`write_rows` (by this
        process or a worker) and delete it; with ``item_shift``, each "item N" locator
        becomes "item N+item_shift" (rows read from a later part of a file)."""
        source = "read_parquet(?)"
        columns = "*"
        if item_shift:  # the regular expression runs once per row: it is on the writer's path
            source = f"(SELECT *, regexp_extract(locator, '{ITEM_LOCATOR}', ['head', 'n']) AS _item FROM {source})"
            columns = (f"* EXCLUDE (_item) REPLACE (CASE WHEN _item.n <> '' THEN "
                       f"_item.head || (CAST(_item.n AS BIGINT) + {int(item_shift)}) ELSE locator END AS locator)")
        try:
            con.execute(f"INSERT INTO events SELECT {columns} FROM {source}", [str(path)])
        finally:
            path.unlink(missing_ok=True)

    def spill_path(self, prefix: str = "batch") -> Path:
        """A fresh file name in the store's folder for temporary rows. Whatever is left
        there when the store opens for writing came from an import that was killed."""
        base = self.spill_dir()
        base.mkdir(parents=True, exist_ok=True)
        # A fresh name per batch: DuckDB caches file metadata by path, and a reused
        # name written twice within a second was read with a stale footer.
        return base / f"{prefix}-{os.getpid()}-{uuid.uuid4().hex}.parquet"

    def spill_dir(self) -> Path:
        return Path(tempfile.gettempdir()) if self.path == ":memory:" else Path(self.path).parent / "tmp"

    def _remove_stale_spills(self) -> None:
        if self.path == ":memory:":
            return  # the system temp folder is shared; nothing there is known to be ours
        for stale in self.spill_dir().glob("*.parquet"):
            try:
                stale.unlink()
            except OSError as exc:  # pragma: no cover - e.g. another user's file
                log.warning("cannot remove the stale temporary file %s: %s", stale, exc)

    @staticmethod
    def finish_imports(con: duckdb.DuckDBPyConnection, import_ids: Sequence[int]) -> dict[int, int]:
        """Deduplicate what ``import_ids`` appended, set-wise, and return how many
        events each added: events an earlier import already stored are dropped (and
        remembered in ``import_duplicates``); an event several of these files contain
        is kept once, by the first. Call inside the transaction that appended them."""
        if not import_ids:
            return {}
        ids = list(import_ids)
        con.execute("""
            INSERT INTO import_duplicates
            SELECT DISTINCT n.import_id, n.id FROM events n
            SEMI JOIN (SELECT id FROM events WHERE NOT list_contains(?, import_id)) o ON o.id = n.id
            WHERE list_contains(?, n.import_id)
        """, [ids, ids])
        con.execute("""
            DELETE FROM events WHERE list_contains(?, import_id)
              AND id IN (SELECT event_id FROM import_duplicates WHERE list_contains(?, import_id))
        """, [ids, ids])
        total, distinct = con.execute(
            "SELECT count(*), count(DISTINCT id) FROM events WHERE list_contains(?, import_id)", [ids]).fetchone()
        if distinct < total:  # repeats inside these files (rare): keep the first of each
            con.execute("""
                CREATE OR REPLACE TEMP TABLE _repeats AS
                SELECT rowid AS rid, id, import_id,
                       first_value(import_id) OVER (PARTITION BY id ORDER BY rowid) AS owner,
                       row_number() OVER (PARTITION BY id ORDER BY rowid) AS rn
                FROM events WHERE list_contains(?, import_id)
                QUALIFY rn > 1
            """, [ids])
            con.execute("INSERT INTO import_duplicates SELECT DISTINCT import_id, id FROM _repeats "
                        "WHERE import_id <> owner")
            con.execute("DELETE FROM events WHERE rowid IN (SELECT rid FROM _repeats)")
            con.execute("DROP TABLE _repeats")
        rows = con.execute("SELECT import_id, count(*) FROM events WHERE list_contains(?, import_id) "
                           "GROUP BY import_id", [ids]).fetchall()
        return dict(rows)

    # ---- reads -------------------------------------------------------------------
    def count(self) -> int:
        return self.reader().execute("SELECT count(*) FROM events").fetchone()[0]

    def events(self, *, source: str | None = None, kind: str | None = None,
               since: datetime | None = None, until: datetime | None = None,
               import_id: int | None = None, ids: Iterable[str] | None = None,
               search: str | None = None, limit: int | None = None, offset: int = 0,
               with_raw: bool = False) -> list[dict]:
        """Events in time order, filtered. ``since``/``until`` are UTC (naive = UTC)."""
        where, params = [], []
        if source:
            where.append("source = ?"); params.append(source)
        if kind:
            where.append("kind = ?"); params.append(kind)
        if since:
            where.append("start >= ?"); params.append(_naive_utc(since))
        if until:
            where.append("start < ?"); params.append(_naive_utc(until))
        if import_id is not None:
            where.append("import_id = ?"); params.append(import_id)
        id_table = None
        if ids is not None:
            id_list = list(ids)
            if not id_list:
                return []
            # A registered table and a semi-join: list_contains over a long list is slow.
            id_table = f"_ids_{uuid.uuid4().hex}"
            where.append(f"id IN (SELECT id FROM {id_table})")
        if search:
            where.append("(title ILIKE ? OR text ILIKE ?)"); params += [f"%{search}%"] * 2
        cols = [c for c in EVENT_COLUMNS if with_raw or c != "raw"]
        sql = "SELECT " + ", ".join(f'"{c}"' for c in cols) + " FROM events"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY start, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        if offset:
            sql += f" OFFSET {int(offset)}"
        con = self.reader()
        if id_table is not None:
            con.register(id_table, pa.table({"id": pa.array(id_list, pa.string())}))
        try:
            rows = con.execute(sql, params).fetchall()
        finally:
            if id_table is not None:
                con.unregister(id_table)
        return [_event_row(dict(zip(cols, r))) for r in rows]

    def event(self, event_id_: str) -> dict | None:
        rows = self.reader().execute(
            "SELECT e.*, i.path AS import_path, i.importer FROM events e "
            "LEFT JOIN imports i ON i.id = e.import_id WHERE e.id = ?", [event_id_])
        cols = [d[0] for d in rows.description]
        row = rows.fetchone()
        return _event_row(dict(zip(cols, row))) if row else None

    def imports(self) -> list[dict]:
        rows = self.reader().execute("SELECT * FROM imports ORDER BY id")
        cols = [d[0] for d in rows.description]
        out = []
        for r in rows.fetchall():
            d = dict(zip(cols, r))
            d["issues"] = orjson.loads(d["issues"]) if d["issues"] else []
            out.append(d)
        return out

    def prior_imports(self) -> dict[tuple[str, str, str, str], dict]:
        """Earlier imports keyed by (sha256, importer, version, file name). The name
        counts: a daily note's date is its file name, so two days with the same text
        are two notes."""
        rows = self.reader().execute(
            "SELECT sha256, importer, importer_version, regexp_extract(file, '[^/]*$'), "
            "id, read, added, duplicates, skipped, finished_at FROM imports ORDER BY id DESC").fetchall()
        keys = ("id", "read", "added", "duplicates", "skipped", "finished_at")
        return {tuple(r[:4]): dict(zip(keys, r[4:])) for r in rows}

    def sources(self) -> list[dict]:
        """Per source and kind: how many events and which dates they span, in the
        events' local time (a note of 1 January is not "31 December" in UTC)."""
        local = "start + to_minutes(coalesce(tz_offset_min, 0))"
        rows = self.reader().execute(
            f"SELECT source, kind, count(*), min({local}), max({local}) FROM events "
            "GROUP BY source, kind ORDER BY source, kind").fetchall()
        return [dict(source=s, kind=k, events=n, first=a, last=b) for s, k, n, a, b in rows]

    # ---- writes ------------------------------------------------------------------
    def remove_import(self, import_id: int) -> int:
        """Remove one import and exactly its events; events another import also
        delivered stay, now owned by that import. Returns events removed."""
        def job(con: duckdb.DuckDBPyConnection) -> int:
            exists = con.execute("SELECT count(*) FROM imports WHERE id = ?", [import_id]).fetchone()[0]
            if not exists:
                raise StoreError(f"no import #{import_id}")
            con.begin()
            try:
                # Hand events over to the earliest other import that also contained them.
                con.execute("""
                    UPDATE events SET import_id = h.new_owner
                    FROM (SELECT event_id, min(import_id) AS new_owner FROM import_duplicates
                          WHERE import_id <> ? GROUP BY event_id) h
                    WHERE events.id = h.event_id AND events.import_id = ?
                """, [import_id, import_id])
                con.execute("""
                    DELETE FROM import_duplicates d USING events e
                    WHERE d.event_id = e.id AND d.import_id = e.import_id
                """)
                removed = con.execute("DELETE FROM events WHERE import_id = ? RETURNING 1",
                                      [import_id]).fetchall()
                con.execute("DELETE FROM import_duplicates WHERE import_id = ?", [import_id])
                con.execute("DELETE FROM imports WHERE id = ?", [import_id])
                con.commit()
            except Exception:
                con.rollback()
                raise
            return len(removed)
        return self.write(job).result()


def _cannot_open(path: str, exc: BaseException) -> str:
    text = str(exc)
    if "read-only file system" in text.lower() or "permission denied" in text.lower():
        return (f"cannot open the store {path}: its folder is read-only ({text}); "
                "make it writable, or pass --data-dir a writable folder")
    if "corrupt" in text.lower() or "checksum" in text.lower():
        return (f"the store {path} is damaged ({text}); run 'hindsight doctor' for what to do")
    return f"cannot open the store {path}: {text}"


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _naive_utc(dt: datetime) -> datetime:
    return to_utc_naive(dt) if dt.tzinfo is not None else dt


def _event_row(d: dict) -> dict:
    if isinstance(d.get("attributes"), str):
        d["attributes"] = orjson.loads(d["attributes"])
    return d


def store_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / STORE_FILENAME
