"""Reading one large JSON-array export in several processes at once.

Parsing JSON and shaping events is Python work that holds the GIL: one reading
thread reads a million-record Spotify history at about 45k records/s whatever the
writer does. Here the file is cut into byte ranges of whole items
(:func:`importers._json.array_segments`); worker processes parse ranges and turn
them into Arrow rows, and the writer takes the results in file order. Only the
writer touches the store, as always.

Item numbers restart at 1 in each range; the writer-side iterator adds the items
of all earlier ranges, so locators ("item N") and issues read exactly as a serial
read gives them. When any range will not parse as whole items (the file is broken,
or a guessed cut fell inside an item), the iterator says so and the caller reads
the file serially instead, which reports the breakage as it always did.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import re
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from engine.rows import batch_to_arrow
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
    tables: list[pa.Table] = field(default_factory=list)
    issues: list[ImportIssue] = field(default_factory=list)
    bytes: int = 0


def read_segment(path: str, start: int, end: int, last: bool, reader: ArrayBatchReader,
                 context: ImportContext, import_id: int, file: str, batch_size: int) -> Segment:
    """Runs in a worker process."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    items = parse_segment(data, last)
    del data
    if items is None:
        return Segment(False)
    seg = Segment(True, len(items), bytes=end - start)
    for item in reader(objects(drain(items)), context, batch_size):
        if isinstance(item, EventBatch):
            seg.tables.append(batch_to_arrow(item, import_id, file))
        else:
            seg.issues.append(item)
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


_ITEM_NUMBER = re.compile(r"^(.*\bitem )(\d+)$")
_ITEM_PATTERN = r"^(?P<head>.*\bitem )(?P<n>\d+)$"


def shift_locator(locator: str, by: int) -> str:
    m = _ITEM_NUMBER.match(locator)
    return f"{m.group(1)}{int(m.group(2)) + by}" if m else locator


def shift_locators(table: pa.Table, by: int) -> pa.Table:
    """``table`` with every "item N" locator made "item N+by"."""
    if not by or not table.num_rows:
        return table
    col = table.column("locator")
    parts = pc.extract_regex(col, _ITEM_PATTERN)
    number = pc.add(pc.cast(pc.struct_field(parts, "n"), pa.int64()), by)
    shifted = pc.binary_join_element_wise(pc.struct_field(parts, "head"), pc.cast(number, pa.string()), "")
    fixed = pc.if_else(pc.is_valid(parts), shifted, col)
    return table.set_column(table.schema.get_field_index("locator"), "locator", fixed)


class ParallelArrayRead:
    """Iterates ``(issues, rows)`` of a file in order, read by worker processes a few
    ranges ahead; raises :class:`Unparsed` when the file must be read serially.
    ``done[0]`` counts the bytes handed over, for progress."""

    def __init__(self, entry: Entry, reader: ArrayBatchReader, import_id: int, batch_size: int,
                 done: list[int]):
        assert entry.path is not None
        self._entry, self._reader, self._import_id, self._batch_size = entry, reader, import_id, batch_size
        self._done = done
        self._pool: ProcessPoolExecutor | None = None
        self._finished = False

    def __iter__(self) -> Iterator[tuple[list[ImportIssue], pa.Table | None]]:
        path = self._entry.path
        ranges = array_segments(path, SEGMENT_BYTES)
        if ranges is None:
            raise Unparsed()
        n = workers()
        # spawn, not fork: the parent has DuckDB's and maybe Qt's threads running
        self._pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_exit_with_parent)
        pending: deque[Future] = deque()
        todo = iter(enumerate(ranges))

        def submit() -> None:
            nxt = next(todo, None)
            if nxt is not None:
                i, (start, end) = nxt
                pending.append(self._pool.submit(
                    read_segment, path, start, end, i == len(ranges) - 1, self._reader, self._entry.context,
                    self._import_id, self._entry.name, self._batch_size))

        for _ in range(n + 1):  # a range ahead per worker, and one ready for the writer
            submit()
        before = 0
        while pending:
            seg: Segment = pending.popleft().result()
            submit()
            if not seg.ok:
                raise Unparsed()
            issues = [ImportIssue(shift_locator(i.locator, before), i.reason, i.kept) for i in seg.issues]
            # one append for the range: the writer's cost per append is the same for 2k rows or 20k
            rows = shift_locators(pa.concat_tables(seg.tables), before) if seg.tables else None
            before += seg.items
            self._done[0] += seg.bytes
            del seg  # hold no more than the rows being written
            yield issues, rows
        self._finished = True

    def close(self) -> None:
        """Stop the workers: at once when the read was cut short (their current
        ranges finish unseen), else after they exit."""
        if self._pool is not None:
            self._pool.shutdown(wait=self._finished, cancel_futures=True)
            self._pool = None
