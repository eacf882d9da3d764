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
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from engine.store import EventStore, dumps
from importers.base import Entry, Event, ImportContext, ImportIssue
from importers.registry import Registry, default_registry

log = logging.getLogger(__name__)

MIN_CONFIDENCE = 0.5
MAX_STORED_ISSUES = 1000
# Files every archive or folder may carry that mean nothing to anybody.
_JUNK = {".ds_store", "thumbs.db", "desktop.ini"}


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
    yield Entry.from_path(str(path), display, context)


def _walk_zip(opener: Callable[[], IO[bytes]], display: str, context: ImportContext,
              report: ImportReport) -> Iterator[Entry]:
    try:
        with opener() as fh, zipfile.ZipFile(fh) as zf:
            infos = [i for i in zf.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        report.files.append(FileReport(display, None, "failed",
                                       message=f"{display}: cannot read the zip archive: {exc}"))
        return
    for info in sorted(infos, key=lambda i: i.filename):
        name = f"{display}/{info.filename}"
        base = info.filename.rsplit("/", 1)[-1].lower()
        if base in _JUNK or info.filename.startswith("__MACOSX/"):
            report.ignored.append({"path": name, "reason": "system file"})
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
            yield from _walk_zip(member_opener, name, context, report)
        else:
            yield Entry(name, member_opener, info.file_size, context)


def _sha256(entry: Entry) -> str:
    h = hashlib.sha256()
    with entry.open() as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def import_paths(store: EventStore, paths: list[str | Path], *, registry: Registry | None = None,
                 context: ImportContext | None = None, progress: ProgressCallback | None = None,
                 cancel: threading.Event | None = None, batch_size: int = 20_000,
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
    for n, (entry, batch, top) in enumerate(plan, start=1):
        if cancel is not None and cancel.is_set():
            report.files.append(FileReport(entry.name, None, "cancelled", message="cancelled before it started"))
            continue
        fr = _import_entry(store, registry, entry, top, batch, only, progress, cancel, batch_size,
                           n, len(plan), report)
        if fr is not None:
            report.files.append(fr)
    report.seconds = time.perf_counter() - t0
    return report


def _import_entry(store: EventStore, registry: Registry, entry: Entry, top: str, batch: str,
                  only: str | None,
                  progress: ProgressCallback | None, cancel: threading.Event | None, batch_size: int,
                  index: int, total: int, report: ImportReport) -> FileReport | None:
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
        sha = _sha256(entry)
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        return FileReport(entry.name, None, "failed", message=f"{entry.name}: cannot read the file: {exc}")

    prior = store.find_import(sha, importer.name, importer.version, entry.basename)
    if prior is not None:
        return FileReport(entry.name, importer.name, "already_imported", read=prior["read"], added=0,
                          duplicates=prior["added"] + prior["duplicates"], skipped=prior["skipped"],
                          import_id=prior["id"],
                          message=f"identical to import #{prior['id']} from {prior['finished_at']:%Y-%m-%d %H:%M}")

    def emit(stage: str, events: int, done: int) -> None:
        if progress is not None:
            progress(Progress(stage, entry.name, importer.name, events, done, entry.size, index, total))

    def job(con) -> FileReport:
        started = datetime.now(timezone.utc).replace(tzinfo=None)
        fr = FileReport(entry.name, importer.name, "imported")
        issues: list[dict] = []
        done_bytes = [0]

        def counted_entry() -> Entry:
            def opener() -> IO[bytes]:
                return io.BufferedReader(_CountingReader(entry.open(), lambda n: done_bytes.__setitem__(0, done_bytes[0] + n)),
                                         buffer_size=1 << 16)
            e = Entry(entry.name, opener, entry.size, entry.context)
            e._head = entry.head  # already read; don't read it again
            return e

        import_id = con.execute("SELECT nextval('import_ids')").fetchone()[0]
        fr.import_id = import_id
        emit("file_start", 0, 0)
        con.begin()  # the file's one transaction: all of it or nothing
        try:
            batch_events: list[Event] = []
            last_emit = time.monotonic()
            for item in importer.read(counted_entry()):
                fr.read += 1
                if isinstance(item, ImportIssue):
                    fr.skipped += 1
                    if len(issues) < MAX_STORED_ISSUES:
                        issues.append({"locator": item.locator, "reason": item.reason})
                    continue
                item.file = entry.name
                batch_events.append(item)
                if len(batch_events) >= batch_size:
                    store.append_events(con, batch_events, import_id)
                    batch_events.clear()
                    if cancel is not None and cancel.is_set():
                        raise ImportCancelled()
                    now = time.monotonic()
                    if now - last_emit > 0.2:
                        emit("file_progress", fr.read, done_bytes[0])
                        last_emit = now
            store.append_events(con, batch_events, import_id)
            if cancel is not None and cancel.is_set():
                raise ImportCancelled()
            res = store.finish_import(con, import_id)
            fr.added, fr.duplicates = res.added, res.duplicates
            if fr.skipped > len(issues):
                issues.append({"locator": "", "reason": f"{fr.skipped - len(issues)} more issues not listed"})
            fr.issues = issues
            con.execute(
                "INSERT INTO imports (id, path, file, sha256, importer, importer_version, started_at, "
                "finished_at, read, added, duplicates, skipped, issues, batch) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [import_id, top, entry.name,
                 sha, importer.name, importer.version, started,
                 datetime.now(timezone.utc).replace(tzinfo=None), fr.read, fr.added, fr.duplicates,
                 fr.skipped, dumps(issues), batch])
            con.commit()
        except ImportCancelled:
            con.rollback()
            return FileReport(entry.name, importer.name, "cancelled",
                              message=f"{entry.name}: cancelled; nothing from this file was kept")
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
            con.rollback()
            log.exception("import of %s failed", entry.name)
            where = f" after record {fr.read}" if fr.read else ""
            return FileReport(entry.name, importer.name, "failed",
                              message=f"{entry.name}: {importer.title} import failed{where}: "
                                      f"{type(exc).__name__}: {exc}; nothing from this file was kept")
        emit("file_done", fr.read, done_bytes[0])
        return fr

    return store.write(job).result()

