"""The importer contract: what an importer sees (an :class:`Entry`), what it yields
(:class:`Event` or :class:`ImportIssue`) and how it is registered (:class:`Importer`).

This module must stay free of I/O policy: it does not walk folders, open zips or
write anything. The pipeline in ``engine.ingest`` does that.
"""
from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from typing import IO, Any
from zoneinfo import ZoneInfo

HEAD_BYTES = 1024

UTC = timezone.utc


@dataclass(slots=True)
class Event:
    """One thing that happened, as ReQAP models it: a time span plus key-value pairs.

    ``start``/``end`` are timezone-aware (any zone); the store keeps them in UTC
    together with ``tz_offset_min``, the local offset at ``start``.
    ``key`` is the source's natural identity (e.g. Spotify ts+uri+ms_played); two
    events of one source with the same key are the same event. When a source has no
    key, leave it empty and the event's content is hashed instead.
    """

    source: str
    kind: str
    start: datetime
    title: str = ""
    text: str = ""
    end: datetime | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    tz_offset_min: int | None = None
    key: str = ""
    locator: str = ""
    raw: str | None = None
    file: str = ""  # set by the pipeline: the path inside the import

    @property
    def id(self) -> str:
        return event_id(self)


def event_id(event: Event) -> str:
    """A stable id: the source's key when it has one, else a hash of the content."""
    basis = event.key
    if not basis:
        basis = json.dumps(
            [event.kind, event.start.isoformat(), event.end.isoformat() if event.end else None,
             event.title, event.text, event.attributes],
            sort_keys=True, default=str, ensure_ascii=False,
        )
    return keyed_id(event.source, basis)


def keyed_id(source: str, key: str) -> str:
    """The id of an event of ``source`` whose key (or content hash basis) is ``key``."""
    digest = hashlib.blake2b(f"{source}\x1f{key}".encode("utf-8", "surrogatepass"), digest_size=12)
    return f"{source[:4]}-{digest.hexdigest()}"


@dataclass(slots=True)
class EventBatch:
    """Events of one source as columns: row ``i`` of every list is one event.

    The fast path for exports of millions of records: the pipeline writes a batch
    without building an :class:`Event` per row. The fields mean what they mean on
    :class:`Event` (``start``/``end`` timezone-aware, any zone). :meth:`events`
    turns a batch back into Events, so an importer that builds batches serves the
    generic ``read`` with the same code.
    """

    source: str
    kind: list[str] = field(default_factory=list)
    title: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    start: list[datetime] = field(default_factory=list)
    end: list[datetime | None] = field(default_factory=list)
    tz_offset_min: list[int | None] = field(default_factory=list)
    attributes: list[dict[str, Any]] = field(default_factory=list)
    key: list[str] = field(default_factory=list)
    locator: list[str] = field(default_factory=list)
    raw: list[str | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kind)

    def columns(self) -> tuple[list, ...]:
        """The ten lists, in field order from ``kind`` to ``raw``, for appending to."""
        return (self.kind, self.title, self.text, self.start, self.end, self.tz_offset_min, self.attributes,
                self.key, self.locator, self.raw)

    def events(self) -> Iterator[Event]:
        for kind, title, text, start, end, tz, attrs, key, loc, raw in zip(
                self.kind, self.title, self.text, self.start, self.end, self.tz_offset_min,
                self.attributes, self.key, self.locator, self.raw, strict=True):
            yield Event(source=self.source, kind=kind, start=start, title=title, text=text, end=end,
                        attributes=attrs, tz_offset_min=tz, key=key, locator=loc, raw=raw)

    def ids(self) -> list[str]:
        """Each row's :func:`event_id`."""
        source = self.source
        out = []
        for i, key in enumerate(self.key):
            if key:
                out.append(keyed_id(source, key))
            else:  # no natural key: hash the content exactly as event_id does
                out.append(event_id(Event(source=source, kind=self.kind[i], start=self.start[i],
                                          title=self.title[i], text=self.text[i], end=self.end[i],
                                          attributes=self.attributes[i])))
        return out


@dataclass(frozen=True, slots=True)
class ImportIssue:
    """A record that could not be imported, and why. ``locator`` names the record
    (line, row, byte offset, id) so a user can find it in the file. ``kept=True``
    marks a warning: the record was imported, but something about it was repaired
    or may be off (a garbled charset, a time taken from its parent)."""

    locator: str
    reason: str
    kept: bool = False


@dataclass(frozen=True, slots=True)
class ImportContext:
    """User settings importers need: the home time zone for sources that give no
    offset, and the user's own mail addresses (to tell sent from received)."""

    home_tz: tzinfo = field(default_factory=lambda: local_zone())
    own_addresses: frozenset[str] = frozenset()


def local_zone() -> tzinfo:
    """The system's IANA zone when it can be found, else UTC."""
    import os

    name = os.environ.get("TZ")
    if name:
        try:
            return ZoneInfo(name.lstrip(":"))
        except Exception:  # noqa: BLE001 - an odd TZ value falls back to the system file
            pass
    try:
        link = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in link:
            return ZoneInfo(link.split("zoneinfo/", 1)[1])
    except Exception:  # noqa: BLE001
        pass
    return UTC


class Entry:
    """One file to import: a plain file or a member of a zip.

    ``name`` is the path shown to the user (``export.zip/Spotify/endsong_0.json``);
    ``head`` is the first KiB, all that ``recognize`` may look at.
    """

    def __init__(self, name: str, opener: Callable[[], IO[bytes]], size: int | None = None,
                 context: ImportContext | None = None, path: str | None = None):
        self.name = name
        self._opener = opener
        self.size = size
        self.context = context or ImportContext()
        #: the file on disk when the entry is a plain file (not an archive member)
        self.path = path
        self._head: bytes | None = None

    @classmethod
    def from_bytes(cls, name: str, data: bytes, context: ImportContext | None = None) -> "Entry":
        return cls(name, lambda: io.BytesIO(data), len(data), context)

    @classmethod
    def from_path(cls, path: str, name: str | None = None,
                  context: ImportContext | None = None) -> "Entry":
        import os

        return cls(name or path, lambda: open(path, "rb"), os.path.getsize(path), context, path)

    @property
    def basename(self) -> str:
        return self.name.replace("\\", "/").rsplit("/", 1)[-1]

    @property
    def head(self) -> bytes:
        if self._head is None:
            with self._opener() as f:
                self._head = f.read(HEAD_BYTES)
        return self._head

    def open(self) -> IO[bytes]:
        return self._opener()

    def open_text(self, encoding: str = "utf-8-sig", errors: str = "strict") -> IO[str]:
        return io.TextIOWrapper(self.open(), encoding=encoding, errors=errors, newline="")

    def __repr__(self) -> str:
        return f"Entry({self.name!r})"


Recognizer = Callable[[Entry], float]
Reader = Callable[[Entry], Iterator["Event | ImportIssue"]]
BatchReader = Callable[[Entry, int], Iterator["EventBatch | ImportIssue"]]
ArrayBatchReader = Callable[[Iterable["tuple[str, dict] | ImportIssue"], "ImportContext", int],
                            Iterator["EventBatch | ImportIssue"]]


@dataclass(frozen=True, slots=True)
class Importer:
    """A registered export format.

    ``recognize(entry) -> confidence`` in [0, 1] is cheap: it looks at ``entry.name``
    and ``entry.head`` only. ``read(entry)`` streams events and issues and never
    touches the store. Bump ``version`` when the events it produces change.

    ``read_batches(entry, size)``, optional, is the fast path for large exports: it
    yields the same events as ``read`` (in batches of about ``size``) and the same
    issues, and the pipeline prefers it. ``read`` must work on its own.

    ``read_array_batches(items, context, size)``, optional, is ``read_batches`` for a
    format that is one top-level JSON array of objects, given those objects as
    :func:`importers._json.iter_objects` yields them. It lets the pipeline read
    parts of a large file in several processes at once.
    """

    name: str
    title: str
    version: str
    recognize: Recognizer
    read: Reader
    source: str = ""
    description: str = ""
    #: file names inside archives this importer deliberately ignores (listed in reports)
    ignores: tuple[str, ...] = ()
    read_batches: BatchReader | None = None
    read_array_batches: ArrayBatchReader | None = None


def to_utc_naive(dt: datetime) -> datetime:
    """UTC wall time without tzinfo, as the store keeps it."""
    tz = dt.tzinfo
    if tz is UTC:  # the common case; skip the conversion (hot path of every import)
        return dt.replace(tzinfo=None)
    if tz is None:
        raise ValueError("naive datetime: importers must attach a zone")
    return dt.astimezone(UTC).replace(tzinfo=None)


class LocalOffsets:
    """``offset_minutes`` for one zone, memoised per hour of UTC time, because
    imports ask millions of times. An hour whose first and last second have the
    same offset holds no transition (zones never change twice within an hour);
    times in an hour that holds one are computed one by one."""

    __slots__ = ("zone", "_cache")

    def __init__(self, zone: tzinfo):
        self.zone = zone
        self._cache: dict[int, int | None] = {}

    def __call__(self, dt: datetime) -> int:
        hour = int(dt.timestamp() // 3600)
        off = self._cache.get(hour, _UNKNOWN)
        if off is _UNKNOWN:
            if len(self._cache) > 100_000:
                self._cache.clear()
            off = self._cache[hour] = self._hour_offset(hour)
        if off is None:
            return offset_minutes(dt, self.zone)
        return off  # type: ignore[return-value]

    def _hour_offset(self, hour: int) -> int | None:
        """The offset throughout ``hour``, or None when it changes inside it."""
        try:
            first = datetime.fromtimestamp(hour * 3600, UTC)
            last = first + timedelta(seconds=3599)
        except (OverflowError, OSError, ValueError):  # the first or last hour of the calendar
            return None
        off = offset_minutes(first, self.zone)
        return off if offset_minutes(last, self.zone) == off else None


_UNKNOWN = object()


def offset_minutes(dt: datetime, zone: tzinfo | None = None) -> int:
    """The local UTC offset in minutes at ``dt`` (in ``zone`` if given), DST-correct."""
    local = dt.astimezone(zone) if zone is not None else dt
    off = local.utcoffset() or timedelta(0)
    return int(off.total_seconds() // 60)
