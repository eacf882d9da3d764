"""The import pipeline: walk what the user dropped (files, folders, zips), hand each
file to the most confident importer, and write its events to the store.

Each file is one transaction on the store's writer thread, so a crash, kill or
cancel in the middle leaves the store as it was before that file. Identical files
(same sha256, same importer version) are not read twice. Files nobody recognises
are listed in the report, never silently dropped.
"""
from __future__ import annotations

import hashlib
import io
import logging
import os
import queue
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import duckdb
import pyarrow as pa

from engine import parallel_read
from engine.archive import damage, looks_like_zip
from engine.store import EventStore, batch_to_arrow, dumps, events_to_arrow
from importers.base import Entry, Event, EventBatch, ImportContext, Importer, ImportIssue
from importers.registry import Registry, default_registry

log = logging.getLogger(__name__)

MIN_CONFIDENCE = 0.5
MAX_STORED_ISSUES = 1000
# Files every archive or folder may carry that mean nothing to anybody.
_JUNK = {".ds_store", "thumbs.db", "desktop.ini"}
# A member that unpacks to more than this many times its packed size, and to more than
# ZIP_BOMB_BYTES, is a zip bomb: text exports pack 3-30x, and deflate tops out near 1030x.
ZIP_BOMB_RATIO = 200
ZIP_BOMB_BYTES = 256 << 20
# Zips inside zips are opened this deep (a Takeout zip holds per-product zips; no export
# nests deeper), so a recursive archive cannot unfold without end.
ZIP_DEPTH = 3


class ImportCancelled(Exception):
    pass


@dataclass(slots=True)
class Progress:
    """What the pipeline is doing; sent to the progress callback."""

    stage: str  # "file_start" | "file_progress" | "file_done"
    file: str
    importer: str = ""
    events: int = 0
    bytes_done: int = 0
    bytes_total: int | None = None
    file_index: int = 0
    files_total: int = 0


ProgressCallback = Callable[[Progress], None]


@dataclass(slots=True)
class FileReport:
    path: str
    importer: str | None
    status: str  # imported | already_imported | failed | cancelled | empty
    read: int = 0
    added: int = 0
    duplicates: int = 0
    skipped: int = 0
    issues: list[dict] = field(default_factory=list)
    import_id: int | None = None
    message: str = ""

    def to_json(self) -> dict:
        d = asdict(self)
        return {k: d[k] for k in ("path", "importer", "status", "read", "added", "duplicates",
                                  "skipped", "issues", "import_id", "message")}


@dataclass(slots=True)
class ImportReport:
    files: list[FileReport] = field(default_factory=list)
    unrecognized: list[str] = field(default_factory=list)
    ignored: list[dict] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def duplicates(self) -> int:
        return sum(f.duplicates for f in self.files)

    @property
    def skipped(self) -> int:
        return sum(f.skipped for f in self.files)

    @property
    def failed(self) -> list[FileReport]:
        return [f for f in self.files if f.status == "failed"]

    def to_json(self) -> dict:
        return {
            "files": [f.to_json() for f in self.files],
            "added": self.added, "duplicates": self.duplicates, "skipped": self.skipped,
            "unrecognized": self.unrecognized, "ignored": self.ignored, "missing": self.missing,
            "seconds": round(self.seconds, 3),
        }


class _CountingReader(io.RawIOBase):
    """Counts bytes read from a stream so progress can be shown for any importer."""

    def __init__(self, raw: IO[bytes], on_read: Callable[[int], None]):
        self._raw = raw
        self._on_read = on_read

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self._raw.read(len(b))
        n = len(data)
        b[:n] = data
        self._on_read(n)
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def _walk(path: Path, display: str, context: ImportContext, report: ImportReport) -> Iterator[Entry]:
    """Every importable file under ``path``: plain files, folder contents, zip members
    (also zips inside zips), in a stable order."""
    if path.is_dir():
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = Path(root) / name
                rel = f"{display}/{full.relative_to(path).as_posix()}"
                yield from _walk_file(full, rel, context, report)
    elif path.is_file():
        yield from _walk_file(path, display, context, report)
    else:
        report.missing.append(display)


def _walk_file(path: Path, display: str, context: ImportContext, report: ImportReport) -> Iterator[Entry]:
    if path.name.lower() in _JUNK:
        report.ignored.append({"path": display, "reason": "system file"})
        return
    if zipfile.is_zipfile(path):
        yield from _walk_zip(lambda: open(path, "rb"), display, context, report)
        return
    entry = Entry.from_path(str(path), display, context)
    if entry.size and (path.suffix.lower() == ".zip" or looks_like_zip(entry.head)):
        # a zip without its table of contents: most often a download cut short
        report.files.append(_damaged_zip(display, lambda: open(path, "rb")))
        return
    yield entry


def _damaged_zip(display: str, opener: Callable[[], IO[bytes]], exc: BaseException | None = None) -> FileReport:
    """The report for a zip that will not open, saying where it is damaged."""
    try:
        with opener() as fh:
            size = fh.seek(0, os.SEEK_END)
            why = damage(fh, size)
    except (OSError, EOFError, zipfile.BadZipFile, ValueError) as inner:
        why = f"{exc or inner}"
    return FileReport(display, None, "failed",
                      message=f"{display}: this zip is damaged ({why}); nothing in it was imported. "
                              "Copy or download the export again")


def _walk_zip(opener: Callable[[], IO[bytes]], display: str, context: ImportContext,
              report: ImportReport, depth: int = 1) -> Iterator[Entry]:
    try:
        with opener() as fh, zipfile.ZipFile(fh) as zf:
            infos = [i for i in zf.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, EOFError) as exc:
        report.files.append(_damaged_zip(display, opener, exc))
        return
    except OSError as exc:
        report.files.append(FileReport(display, None, "failed",
                                       message=f"{display}: cannot read the zip archive: {exc}"))
        return
    for info in sorted(infos, key=lambda i: i.filename):
        name = f"{display}/{info.filename}"
        base = info.filename.rsplit("/", 1)[-1].lower()
        if base in _JUNK or info.filename.startswith("__MACOSX/"):
            report.ignored.append({"path": name, "reason": "system file"})
            continue
        if info.file_size > ZIP_BOMB_BYTES and info.file_size > ZIP_BOMB_RATIO * max(info.compress_size, 1):
            report.files.append(FileReport(
                name, None, "failed",
                message=f"{name}: not imported: it would unpack {info.compress_size:,} bytes to "
                        f"{info.file_size:,} (a zip bomb, or a damaged archive)"))
            continue

        def member_opener(info=info) -> IO[bytes]:
            fh = opener()
            try:
                zf = zipfile.ZipFile(fh)
                member = zf.open(info)
            except Exception:
                fh.close()
                raise
            # close the archive with the member
            orig_close = member.close

            def close() -> None:
                orig_close()
                zf.close()
                fh.close()
            member.close = close  # type: ignore[method-assign]
            return member

        if base.endswith(".zip"):
            if depth >= ZIP_DEPTH:
                report.files.append(FileReport(name, None, "failed",
                                               message=f"{name}: not opened: zips nested deeper than "
                                                       f"{ZIP_DEPTH} levels are not imported"))
                continue
            yield from _walk_zip(member_opener, name, context, report, depth + 1)
        else:
            yield Entry(name, member_opener, info.file_size, context)


def _sha256(entry: Entry) -> str:
    h = hashlib.sha256()
    with entry.open() as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(slots=True)
class _Work:
    """A recognised, hashed file waiting to be imported."""

    entry: Entry
    importer: Importer
    sha: str
    top: str
    batch: str
    index: int


# Files below this size are imported several to a transaction: a transaction per
# small file costs far more than reading it (a folder of daily notes, a Takeout zip).
SMALL_FILE = 2 << 20
GROUP_BYTES = 16 << 20
GROUP_FILES = 500


def import_paths(store: EventStore, paths: list[str | Path], *, registry: Registry | None = None,
                 context: ImportContext | None = None, progress: ProgressCallback | None = None,
                 cancel: threading.Event | None = None, batch_size: int = 10_000,
                 only: str | None = None) -> ImportReport:
    """Import everything under ``paths``. ``only`` forces one importer by name."""
    registry = registry or default_registry()
    context = context or ImportContext()
    report = ImportReport()
    t0 = time.perf_counter()
    plan: list[tuple[Entry, str, str]] = []
    for p in paths:
        path = Path(p).expanduser()
        batch = uuid.uuid4().hex[:12]
        for entry in _walk(path, str(p), context, report):
            plan.append((entry, batch, str(p)))
    prior = store.prior_imports()
    planned: dict[tuple, str] = {}
    work: list[_Work] = []
    for n, (entry, batch, top) in enumerate(plan, start=1):
        if cancel is not None and cancel.is_set():
            report.files.append(FileReport(entry.name, None, "cancelled", message="cancelled before it started"))
            continue
        prepared = _prepare(registry, entry, only, report)
        if prepared is None:
            continue
        if isinstance(prepared, FileReport):
            report.files.append(prepared)
            continue
        importer, sha = prepared
        key = (sha, importer.name, importer.version, entry.basename)
        if key in prior:
            p_ = prior[key]
            report.files.append(FileReport(
                entry.name, importer.name, "already_imported", read=p_["read"], added=0,
                duplicates=p_["added"] + p_["duplicates"], skipped=p_["skipped"], import_id=p_["id"],
                message=f"identical to import #{p_['id']} from {p_['finished_at']:%Y-%m-%d %H:%M}"))
            continue
        if key in planned:
            report.files.append(FileReport(entry.name, importer.name, "already_imported",
                                           message=f"the same file as {planned[key]} in this import"))
            continue
        planned[key] = entry.name
        work.append(_Work(entry, importer, sha, top, batch, n))
    for group in _groups(work):
        report.files.extend(_run_group(store, group, progress, cancel, batch_size, len(plan)))
    report.seconds = time.perf_counter() - t0
    return report


def _prepare(registry: Registry, entry: Entry, only: str | None,
             report: ImportReport) -> tuple[Importer, str] | FileReport | None:
    """Pick the importer and hash the file; a FileReport when it can't be imported,
    None when it is listed as unrecognised or ignored."""
    if entry.size == 0:
        return FileReport(entry.name, None, "empty", message=f"{entry.name}: the file is empty")
    try:
        if only:
            importer = registry.get(only)
        else:
            importer, conf = registry.best(entry)
            if importer is None or conf < MIN_CONFIDENCE:
                ignorer = registry.ignored(entry)
                if ignorer is not None:
                    report.ignored.append({"path": entry.name, "reason": f"not used by {ignorer.title}"})
                else:
                    report.unrecognized.append(entry.name)
                return None
        return importer, _sha256(entry)
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        return FileReport(entry.name, None, "failed", message=f"{entry.name}: cannot read the file: {exc}")


def _groups(work: list[_Work]) -> Iterator[list[_Work]]:
    group: list[_Work] = []
    size = 0
    for w in work:
        n = w.entry.size or 0
        if n >= SMALL_FILE:
            if group:
                yield group
                group, size = [], 0
            yield [w]
            continue
        if group and (size + n > GROUP_BYTES or len(group) >= GROUP_FILES):
            yield group
            group, size = [], 0
        group.append(w)
        size += n
    if group:
        yield group


def _counted(entry: Entry, done: list[int]) -> Entry:
    """The same entry, counting bytes read for progress."""
    def opener() -> IO[bytes]:
        def count(n: int) -> None:
            done[0] += n
        return io.BufferedReader(_CountingReader(entry.open(), count), buffer_size=1 << 16)

    e = Entry(entry.name, opener, entry.size, entry.context)
    e._head = entry.head  # already read; don't read it again
    return e


def _run_group(store: EventStore, group: list[_Work], progress: ProgressCallback | None,
               cancel: threading.Event | None, batch_size: int, total: int) -> list[FileReport]:
    """Import a group of files in one transaction on the writer thread. Each file keeps
    its own import id; a file whose importer fails has its rows deleted and the rest
    of the group goes on. A database error aborts the transaction: then each file is
    retried on its own, so one bad file cannot take others down with it."""
    def emit(w: _Work, stage: str, events: int, done: int) -> None:
        if progress is not None:
            progress(Progress(stage, w.entry.name, w.importer.name, events, done, w.entry.size, w.index, total))

    def job(con) -> list[FileReport]:
        done_reports: list[FileReport] = []
        pending: list[tuple[_Work, FileReport, list[dict], int, datetime]] = []
        con.begin()
        try:
            for w in group:
                if cancel is not None and cancel.is_set():
                    raise ImportCancelled()
                started = datetime.now(timezone.utc).replace(tzinfo=None)
                import_id = con.execute("SELECT nextval('import_ids')").fetchone()[0]
                fr = FileReport(w.entry.name, w.importer.name, "imported", import_id=import_id)
                issues: list[dict] = []
                appended = _read_file(store, con, w, fr, issues, import_id, batch_size, cancel, emit)
                if appended is None:  # the importer failed: drop its rows, keep the group
                    con.execute("DELETE FROM events WHERE import_id = ?", [import_id])
                    done_reports.append(fr)
                    continue
                pending.append((w, fr, issues, appended, started))
            added = store.finish_imports(con, [fr.import_id for _, fr, _, _, _ in pending])
            finished = datetime.now(timezone.utc).replace(tzinfo=None)
            for w, fr, issues, appended, started in pending:
                fr.added = added.get(fr.import_id, 0)
                fr.duplicates = appended - fr.added
                if len(issues) >= MAX_STORED_ISSUES:
                    issues.append({"locator": "", "reason": "more issues not listed"})
                fr.issues = issues
                con.execute(
                    "INSERT INTO imports (id, path, file, sha256, importer, importer_version, started_at, "
                    "finished_at, read, added, duplicates, skipped, issues, batch) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [fr.import_id, w.top, w.entry.name, w.sha, w.importer.name, w.importer.version, started,
                     finished, fr.read, fr.added, fr.duplicates, fr.skipped, dumps(issues), w.batch])
            con.commit()
        except ImportCancelled:
            con.rollback()
            return [FileReport(w.entry.name, w.importer.name, "cancelled",
                               message=f"{w.entry.name}: cancelled; nothing from this file was kept") for w in group]
        except duckdb.Error as exc:
            con.rollback()
            if len(group) > 1:
                log.warning("group of %d files failed in the database (%s); retrying one by one", len(group), exc)
                return None  # type: ignore[return-value]
            w = group[0]
            log.exception("import of %s failed in the database", w.entry.name)
            return [FileReport(w.entry.name, w.importer.name, "failed",
                               message=f"{w.entry.name}: the store refused it: {exc}; nothing from this file "
                                       f"was kept{_what_to_do(str(exc))}")]
        for w, fr, _, _, _ in pending:
            emit(w, "file_done", fr.read, w.entry.size or 0)
        by_name = {fr.path: fr for fr in done_reports} | {fr.path: fr for _, fr, _, _, _ in pending}
        return [by_name[w.entry.name] for w in group]

    def limited_job(con) -> list[FileReport]:
        with store.importing(con):
            return job(con)

    result = store.write(limited_job).result()
    if result is None:
        out: list[FileReport] = []
        for w in group:
            out.extend(_run_group(store, [w], progress, cancel, batch_size, total))
        return out
    return result


def _what_to_do(error: str) -> str:
    """What a user can do about a write the store refused, when the cause is theirs."""
    low = error.lower()
    if "no space left" in low or "file too large" in low or "disk is full" in low:
        return "; the disk is full: free some space and import it again (what was stored before is intact)"
    if "read-only file system" in low or "permission denied" in low:
        return "; the data folder is read-only: make it writable or pass --data-dir a writable folder"
    return ""


@dataclass(slots=True)
class _Chunk:
    """What the reading thread hands the writer: rows ready to append, the issues
    met since the last chunk, or the importer's failure (with how many events it
    had read that never made it into a chunk)."""

    issues: list[ImportIssue] = field(default_factory=list)
    rows: pa.Table | None = None
    failure: BaseException | None = None
    unsent: int = 0
    unparsed: bool = False
    part: parallel_read.Part | None = None  # rows a worker process left in a Parquet file


class _Stopped(Exception):
    """The writer gave up on this file; the reading thread ends quietly."""


#: A batch of events is handed to the writer at ``batch_size`` events or when its
#: texts reach this many characters, whichever comes first, so long texts do not
#: multiply what is held (as events, as Arrow rows, in the writer). Importing a 1 GB
#: mbox (268k mails of ~4 KB) in one run each: peak RSS 765 MB by count alone, 735 MB
#: at 16 MB, 628 MB at 4 MB, 607 MB at 2 MB; 40-42 s each. The rest is not batches.
BATCH_BYTES = 4 << 20


class _ReadAhead:
    """Runs an importer on its own thread, a few batches ahead of the writer, and
    turns its events into Arrow rows there: the Python work of reading a file then
    overlaps DuckDB's inserts, which release the GIL. Only the writer thread ever
    touches the store; the importer still just yields."""

    DEPTH = 1

    def __init__(self, w: _Work, entry: Entry, import_id: int, batch_size: int):
        self._queue: queue.Queue[_Chunk | None] = queue.Queue(maxsize=self.DEPTH)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(w, entry, import_id, batch_size),
                                        name="hindsight-import-reader", daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[_Chunk]:
        while (chunk := self._queue.get()) is not None:
            yield chunk

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def _put(self, chunk: _Chunk | None) -> None:
        while True:
            try:
                self._queue.put(chunk, timeout=0.05)
                return
            except queue.Full:
                if self._stop.is_set():
                    raise _Stopped() from None

    def _run(self, w: _Work, entry: Entry, import_id: int, batch_size: int) -> None:
        name = w.entry.name
        read_batches = w.importer.read_batches
        items: Iterator | None = None
        issues: list[ImportIssue] = []
        events: list[Event] = []
        held = 0  # characters of text the events in hand hold
        try:
            try:
                items = read_batches(entry, batch_size) if read_batches is not None else w.importer.read(entry)
                for item in items:
                    if isinstance(item, ImportIssue):
                        issues.append(item)
                        if len(issues) >= MAX_STORED_ISSUES:  # a file of nothing but bad records
                            self._put(_Chunk(issues))
                            issues = []
                    elif isinstance(item, EventBatch):  # the fast path: whole columns at once
                        self._put(_Chunk(issues, batch_to_arrow(item, import_id, name)))
                        issues = []
                    else:
                        item.file = name
                        events.append(item)
                        held += len(item.text or "") + len(item.raw or "") + len(item.title or "")
                        if len(events) >= batch_size or held >= BATCH_BYTES:
                            self._put(_Chunk(issues, events_to_arrow(events, import_id)))
                            issues, events, held = [], [], 0
                if events or issues:
                    self._put(_Chunk(issues, events_to_arrow(events, import_id) if events else None))
            except _Stopped:
                return
            except BaseException as exc:  # noqa: BLE001 - handed to the writer, which decides
                self._put(_Chunk(issues, failure=exc, unsent=len(events)))
                return
            finally:
                close = getattr(items, "close", None)
                if close is not None:
                    close()
            self._put(None)
        except _Stopped:
            return


def _read_file(store: EventStore, con, w: _Work, fr: FileReport, issues: list[dict], import_id: int,
               batch_size: int, cancel: threading.Event | None, emit) -> int | None:
    """Stream one file's events into the open transaction. Returns how many events were
    appended, or None when the importer failed (``fr`` then says why)."""
    done = [0]
    emit(w, "file_start", 0, 0)
    if parallel_read.usable(w.importer.read_array_batches, w.entry):
        kept = len(issues)
        appended = _append_chunks(store, con, w, fr, issues,
                                  _ParallelChunks(w, import_id, batch_size, done, store.spill_dir()),
                                  cancel, emit, done)
        if appended is not _UNPARSED:
            return appended
        # a range would not parse (a broken file, or a cut inside an item): start over in one piece
        log.info("%s: reading it in one piece", w.entry.name)
        con.execute("DELETE FROM events WHERE import_id = ?", [import_id])
        del issues[kept:]
        fr.read = fr.skipped = 0
        done[0] = 0
    return _append_chunks(store, con, w, fr, issues, _ReadAhead(w, _counted(w.entry, done), import_id, batch_size),
                          cancel, emit, done)


_UNPARSED: Any = object()  # what _append_chunks returns when a parallel read gives up


class _ParallelChunks:
    """:class:`engine.parallel_read.ParallelArrayRead` as the chunks the writer takes."""

    def __init__(self, w: _Work, import_id: int, batch_size: int, done: list[int], spill_dir: Path):
        self._name = w.entry.name
        self._read = parallel_read.ParallelArrayRead(w.entry, w.importer.read_array_batches, import_id,
                                                     batch_size, done, spill_dir)

    def __iter__(self) -> Iterator[_Chunk]:
        try:
            for part in self._read:
                yield _Chunk(part.issues, part=part)
        except parallel_read.Unparsed:
            yield _Chunk(unparsed=True)
        except Exception:  # noqa: BLE001 - a worker failed or could not start: the serial read decides
            log.warning("%s: the parallel read failed", self._name, exc_info=True)
            yield _Chunk(unparsed=True)

    def close(self) -> None:
        self._read.close()


def _append_chunks(store: EventStore, con, w: _Work, fr: FileReport, issues: list[dict], reader,
                   cancel: threading.Event | None, emit, done: list[int]) -> int | None:
    """Append what ``reader`` yields; see :func:`_read_file`. ``_UNPARSED`` when a
    parallel reader gives up."""
    appended = 0
    last_emit = time.monotonic()
    try:
        for chunk in reader:
            if chunk.unparsed:
                return _UNPARSED
            for item in chunk.issues:
                if not item.kept:  # a warning's record arrives as an event too
                    fr.read += 1
                    fr.skipped += 1
                if len(issues) < MAX_STORED_ISSUES:
                    issue = {"locator": item.locator, "reason": item.reason}
                    if item.kept:
                        issue["kept"] = True
                    issues.append(issue)
            if chunk.failure is not None:
                fr.read += chunk.unsent
                raise chunk.failure
            if chunk.part is not None and chunk.part.parquet is not None:
                n = chunk.part.rows
                store.append_parquet(con, chunk.part.parquet, chunk.part.item_shift)
            elif chunk.rows is not None:
                n = chunk.rows.num_rows
                store.append_table(con, chunk.rows)
            else:
                continue
            fr.read += n
            appended += n
            del chunk
            if cancel is not None and cancel.is_set():
                raise ImportCancelled()
            now = time.monotonic()
            if now - last_emit > 0.2:
                # a broken file is read a second time (importers._json falls back to ijson)
                emit(w, "file_progress", fr.read, min(done[0], w.entry.size or done[0]))
                last_emit = now
    except (ImportCancelled, duckdb.Error):
        raise
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
        log.exception("import of %s failed", w.entry.name)
        where = f" after record {fr.read}" if fr.read else ""
        fr.status = "failed"
        fr.message = (f"{w.entry.name}: {w.importer.title} import failed{where}: "
                      f"{type(exc).__name__}: {exc}; nothing from this file was kept{_what_to_do(str(exc))}")
        fr.read = fr.skipped = 0
        return None
    finally:
        reader.close()
    if cancel is not None and cancel.is_set():
        raise ImportCancelled()
    return appended
