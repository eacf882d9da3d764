"""Reading one large JSON-array export in several processes at once.

Parsing JSON and shaping events is Python work that holds the GIL: one reading
thread reads a million-record Spotify history at 32-45k records/s (this VM varies)
whatever the writer does. Here the file is cut into byte ranges of whole items
(:func:`importers._json.array_segments`); worker processes parse ranges and write
their rows to Parquet files, and the writer appends those in file order. Only the
writer touches the store, as always.

Item numbers restart at 1 in each range; the writer adds the items of all earlier
ranges (the store shifts the rows' locators as it appends them), so locators
("item N") and issues read exactly as a serial read gives them. When any range will
not parse as whole items (the file is broken, or a guessed cut fell inside an
item), the iterator says so and the caller reads the file serially instead, which
reports the breakage as it always did.
"""
from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.connection
import os
import re
import threading
import uuid
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from engine.rows import ITEM_LOCATOR, batch_to_arrow, write_rows
from importers._json import array_segments, drain, objects, parse_segment
from importers.base import ArrayBatchReader, Entry, EventBatch, ImportContext, ImportIssue

#: files smaller than this are read by one thread: starting processes costs ~1 s
MIN_BYTES = 48 << 20
#: about this much of the file per task: ~25k Spotify plays, ~20 MB of Arrow rows
SEGMENT_BYTES = 16 << 20
MAX_WORKERS = 4


def workers() -> int:
    return min(os.cpu_count() or 1, MAX_WORKERS)


def usable(read_array_batches: ArrayBatchReader | None, entry: Entry) -> bool:
    """Whether this file is worth reading in parallel."""
    return (read_array_batches is not None and entry.path is not None
            and (entry.size or 0) >= MIN_BYTES and workers() >= 2)


@dataclass(slots=True)
class Segment:
    """One range read: its rows (item numbers counted from the range's start), its
    issues, how many items it held; ``ok`` False when it would not parse."""

    ok: bool
    items: int = 0
    rows: int = 0  # written to the range's Parquet file (none when 0)
    issues: list[ImportIssue] = field(default_factory=list)
    bytes: int = 0


def read_segment(path: str, start: int, end: int, last: bool, reader: ArrayBatchReader,
                 context: ImportContext, import_id: int, file: str, batch_size: int, out: str) -> Segment:
    """Runs in a worker process: the range's rows go to the Parquet file ``out``
    (the writer appends it as it is, without the rows passing through a pipe).

    The cyclic garbage collector is off meanwhile: a range makes ~25k dicts, which
    it would scan again and again, yet parsed JSON and the rows built from it hold
    no reference cycles, so reference counting frees all of it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read_segment(path, start, end, last, reader, context, import_id, file, batch_size, out)
    finally:
        if collecting:
            gc.enable()


def _read_segment(path: str, start: int, end: int, last: bool, reader: ArrayBatchReader,
                  context: ImportContext, import_id: int, file: str, batch_size: int, out: str) -> Segment:
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    items = parse_segment(data, last)
    del data
    if items is None:
        return Segment(False)
    seg = Segment(True, len(items), bytes=end - start)
    tables = []
    for item in reader(objects(drain(items)), context, batch_size):
        if isinstance(item, EventBatch):
            tables.append(batch_to_arrow(item, import_id, file))
        else:
            seg.issues.append(item)
    if tables:
        table = pa.concat_tables(tables)
        seg.rows = table.num_rows
        write_rows(table, out)
    return seg


def _exit_with_parent() -> None:
    """Runs first in each worker: a worker whose importing process dies (killed,
    crashed) exits too, instead of waiting for work that never comes."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="hindsight-parent-watch", daemon=True).start()


class Unparsed(Exception):
    """A range did not parse as whole items: read the file serially."""


_ITEM_NUMBER = re.compile(ITEM_LOCATOR)


def shift_locator(locator: str, by: int) -> str:
    """"item N" made "item N+by" (as the store does for rows: ``append_parquet``)."""
    m = _ITEM_NUMBER.match(locator)
    return f"{m.group(1)}{int(m.group(2)) + by}" if m else locator


@dataclass(slots=True)
class Part:
    """One range's result for the writer, in file order: its issues (numbered in the
    file) and, when it has rows, the Parquet file holding them, whose "item N"
    locators must be shifted by ``item_shift`` as they are appended."""

    issues: list[ImportIssue]
    rows: int
    parquet: Path | None
    item_shift: int


class ParallelArrayRead:
    """Iterates the :class:`Part` s of a file in order, read by worker processes a few
    ranges ahead; raises :class:`Unparsed` when the file must be read serially.
    ``done[0]`` counts the bytes handed over, for progress. Rows wait in Parquet
    files in ``spill_dir``; :meth:`close` removes any not appended."""

    def __init__(self, entry: Entry, reader: ArrayBatchReader, import_id: int, batch_size: int,
                 done: list[int], spill_dir: Path):
        assert entry.path is not None
        self._entry, self._reader, self._import_id, self._batch_size = entry, reader, import_id, batch_size
        self._done = done
        self._spill_dir = spill_dir
        self._spills: list[Path] = []
        self._pool: ProcessPoolExecutor | None = None

    def __iter__(self) -> Iterator[Part]:
        path = self._entry.path
        ranges = array_segments(path, SEGMENT_BYTES)
        if ranges is None:
            raise Unparsed()
        n = workers()
        # spawn, not fork: the parent has DuckDB's and maybe Qt's threads running
        self._pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_exit_with_parent)
        pending: deque[tuple[Path, Future]] = deque()
        todo = iter(enumerate(ranges))

        self._spill_dir.mkdir(parents=True, exist_ok=True)
        tag = f"parallel-{os.getpid()}-{uuid.uuid4().hex}"

        def submit() -> None:
            nxt = next(todo, None)
            if nxt is not None:
                i, (start, end) = nxt
                out = self._spill_dir / f"{tag}-{i}.parquet"
                self._spills.append(out)
                pending.append((out, self._pool.submit(
                    read_segment, path, start, end, i == len(ranges) - 1, self._reader, self._entry.context,
                    self._import_id, self._entry.name, self._batch_size, str(out))))

        for _ in range(n + 1):  # a range ahead per worker, and one ready for the writer
            submit()
        before = 0
        while pending:
            out, future = pending.popleft()
            seg: Segment = future.result()
            submit()
            if not seg.ok:
                raise Unparsed()
            issues = [ImportIssue(shift_locator(i.locator, before), i.reason, i.kept) for i in seg.issues]
            # one append for the range: the writer's cost per append is the same for 2k rows or 20k
            part = Part(issues, seg.rows, out if seg.rows else None, before)
            before += seg.items
            self._done[0] += seg.bytes
            yield part

    def close(self) -> None:
        """Stop the workers (a range being read finishes first, at most a second or
        so) and remove the rows of ranges never appended."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        for spill in self._spills:
            spill.unlink(missing_ok=True)
