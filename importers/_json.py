"""Streaming JSON helpers shared by importers: iterate the items of a top-level
array without loading the file, and turn parse failures into ImportIssues."""
from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import ijson
import orjson

from importers._utf8 import Utf8Repaired, not_utf8_warning
from importers.base import ImportIssue

CHUNK_BYTES = 1 << 20
# A run of items orjson will not parse after this many chunks goes to ijson: the
# file is broken there, or its items are nested deeper than the cuts can tell.
_MAX_PIECE_CHUNKS = 8
_WHITESPACE = b" \t\r\n"


def iter_array(f: IO[bytes], prefix: str = "item", *,
               reopen: Callable[[], IO[bytes]] | None = None) -> Iterator[tuple[int, Any] | ImportIssue]:
    """Yield ``(index, item)`` for each element under ``prefix``; a syntax error
    ends the stream with one ImportIssue saying where it broke.

    With ``reopen`` (a way to read the file again from its start) a top-level array
    is read a chunk at a time and each run of whole items parsed by orjson, several
    times faster than ijson. Anything orjson refuses, or might read differently
    (a broken record, a huge integer, NaN, a lone surrogate), hands the file to
    ijson from its start, which skips the items already yielded and decides the
    rest exactly as it always did."""
    if reopen is None or prefix != "item":
        yield from _ijson_items(f, prefix, reopen=reopen)
        return
    buf = f.read(CHUNK_BYTES)
    start = len(buf) - len(buf.lstrip(_WHITESPACE))
    if buf[start:start + 1] != b"[":  # not an array (or a BOM): ijson says what it is
        yield from _ijson_items(_Chained(buf, f), prefix, reopen=reopen)
        return
    start += 1
    index = 0
    eof = False
    while True:
        cut = -1 if eof else _last_item_end(buf, start, len(buf))
        if cut < 0 and not eof:
            more = f.read(CHUNK_BYTES)
            eof = not more
            buf = buf[start:] + more
            start = 0
            continue
        parsed = _parse_items(buf, start, cut)
        if parsed is None and not eof and len(buf) - start < _MAX_PIECE_CHUNKS * CHUNK_BYTES:
            # every cut may lie inside one long item: read on before giving up
            more = f.read(CHUNK_BYTES)
            eof = not more
            buf = buf[start:] + more
            start = 0
            continue
        if parsed is None:
            del buf
            with reopen() as again:
                yield from _ijson_items(again, prefix, skip=index, reopen=reopen)
            return
        items, cut = parsed
        for item in items:
            yield index, item
            index += 1
        if cut < 0:
            return
        start = cut + 1  # past the comma


def _last_item_end(buf: bytes, start: int, end: int) -> int:
    """The offset of the last comma in ``buf[start:end]`` that follows a closing
    brace (after optional whitespace), or -1: a likely end of an item. Whether it
    is one is settled by parsing everything before it."""
    while True:
        brace = buf.rfind(b"}", start, end)
        if brace < 0:
            return -1
        i = brace + 1
        while i < len(buf) and buf[i] in _WHITESPACE:
            i += 1
        if i < len(buf) and buf[i] == 0x2C:  # ","
            return i
        end = brace


_CUT_TRIES = 8
# Integers past 63 bits: orjson reads them (as floats past 64 bits), ijson refuses
# them. (Both refuse a float that overflows.) A run of 19 digits in a string looks
# the same here; that costs only speed. Mapping digits to "0" and searching is ten
# times faster than a regular expression.
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_NUMBER = b"0" * 19


def _parse_items(buf: bytes, start: int, cut: int) -> tuple[list, int] | None:
    """The items in ``buf[start:cut]`` and the cut used (all of ``buf[start:]`` when
    ``cut`` is -1, the end of the array). A cut inside an item (a nested object, a
    brace in a string) fails to parse, and a few earlier ones are tried; None when
    orjson will not have it."""
    for _ in range(_CUT_TRIES):
        piece = b"[" + buf[start:] if cut < 0 else b"[" + buf[start:cut] + b"]"
        if piece.translate(_DIGITS_AS_ZERO).find(_LONG_NUMBER) >= 0:
            return None
        try:
            return orjson.loads(piece), cut
        except orjson.JSONDecodeError:
            if cut < 0:
                return None
            cut = _last_item_end(buf, start, buf.rfind(b"}", start, cut))
            if cut < 0:
                return None
    return None


def _ijson_items(f: IO[bytes], prefix: str, skip: int = 0, *, reopen: Callable[[], IO[bytes]] | None = None,
                 python_backend: bool = False) -> Iterator[tuple[int, Any] | ImportIssue]:
    """ijson over ``f``, leaving out the first ``skip`` items (already yielded).
    Bytes that are not UTF-8 are read as U+FFFD (ijson would stop the file there),
    and a warning at the end says where the first of them was."""
    index = -1
    repaired = Utf8Repaired(f)
    try:
        parser = ijson.get_backend("python") if python_backend else ijson
        for index, item in enumerate(parser.items(repaired, prefix, use_float=True), start=0):
            if index >= skip:
                yield index, (_floats_past_64_bits(item) if python_backend else item)
        if repaired.first_bad is not None:
            yield not_utf8_warning(repaired.first_bad)
    except ijson.common.IncompleteJSONError as exc:
        if "integer overflow" in str(exc) and not python_backend and reopen is not None:
            # yajl holds integers in 64 bits; ijson's own parser reads any size (slowly)
            with reopen() as again:
                yield from _ijson_items(again, prefix, skip=max(index + 1, skip), python_backend=True)
            return
        # ``index`` is the last good item (0-based), so the broken one is index + 2 (1-based).
        where = f"after {index + 1} complete items" if index >= 0 else "at the start"
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else "unexpected end of file"
        yield ImportIssue(f"item {index + 2}", f"the JSON is broken or truncated {where}: {msg}")
    except (ijson.common.JSONError, UnicodeDecodeError, ValueError) as exc:
        yield ImportIssue(f"item {index + 2}", f"not valid JSON: {exc}")


def _floats_past_64_bits(value: Any) -> Any:
    """Integers no 64-bit field can hold, as floats (as orjson would read them), so
    no importer meets one that orjson cannot write back."""
    if isinstance(value, int) and not isinstance(value, bool) and not -(1 << 63) <= value < (1 << 64):
        return float(value)
    if isinstance(value, dict):
        return {k: _floats_past_64_bits(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats_past_64_bits(v) for v in value]
    return value


class _Chained(io.RawIOBase):
    """``head`` followed by the rest of ``f``: hands ijson the bytes already read."""

    def __init__(self, head: bytes, f: IO[bytes]):
        self._head = memoryview(head)
        self._f = f

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._head.nbytes:
            n = self._head.nbytes if size is None or size < 0 else min(size, self._head.nbytes)
            out = bytes(self._head[:n])
            self._head = self._head[n:]
            return out
        return self._f.read(size)

    def readinto(self, b) -> int:
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)


def iter_objects(f: IO[bytes], prefix: str = "item", *, label: str = "",
                 reopen: Callable[[], IO[bytes]] | None = None) -> Iterator[tuple[str, dict] | ImportIssue]:
    """The array's objects as ``(locator, object)`` with locator ``"[label ]item N"``;
    an issue for an element that is not an object, and a last issue (then nothing
    more) when the array itself breaks."""
    yield from objects(iter_array(f, prefix, reopen=reopen), label=label)


def objects(items: Iterable[tuple[int, Any] | ImportIssue], *,
            label: str = "") -> Iterator[tuple[str, dict] | ImportIssue]:
    """``(index, item)`` pairs (from :func:`iter_array`, or :func:`drain` over
    :func:`parse_segment`) as
    :func:`iter_objects` yields them."""
    where = f"{label} " if label else ""
    for item in items:
        if isinstance(item, ImportIssue):
            yield ImportIssue(where + item.locator, item.reason, item.kept) if where else item
            return
        index, rec = item
        loc = f"{where}item {index + 1}"
        if not isinstance(rec, dict):
            yield ImportIssue(loc, f"expected an object, found {type(rec).__name__}")
            continue
        yield loc, rec


# ---- a large array in pieces, for reading in parallel -------------------------------
_ITEM_END = re.compile(rb"\}[ \t\r\n]*,")
_CUT_WINDOW = 1 << 18


def array_segments(path: str, segment_bytes: int) -> list[tuple[int, int]] | None:
    """Byte ranges ``[start, end)`` that split the top-level array in the file at
    ``path`` into runs of items of about ``segment_bytes``, without the brackets and
    the commas between runs; None when the file does not start with ``[``.

    A cut is a guess (a comma after a closing brace, which may lie inside a string
    or a nested object). The guesses are checked by parsing: a run whose start is
    an item's start parses only if its end is one too, so when every run parses,
    in order, the runs hold exactly the items :func:`iter_array` would yield."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(_CUT_WINDOW)
        begin = len(head) - len(head.lstrip(_WHITESPACE))
        if head[begin:begin + 1] != b"[":
            return None
        start = begin + 1
        ranges = []
        while size - start > segment_bytes + segment_bytes // 2:
            f.seek(start + segment_bytes)
            m = _ITEM_END.search(f.read(_CUT_WINDOW))
            if m is None:  # an item longer than the window: let one run take the rest
                break
            comma = start + segment_bytes + m.end() - 1
            ranges.append((start, comma))
            start = comma + 1
        ranges.append((start, size))
    return ranges


def parse_segment(data: bytes, last: bool) -> list | None:
    """The items of one range from :func:`array_segments`; None when orjson will
    not read it (or might read it otherwise than ijson would): the caller then reads
    the file in one piece. The last range holds the closing bracket."""
    piece = b"[" + data if last else b"[" + data + b"]"
    if piece.translate(_DIGITS_AS_ZERO).find(_LONG_NUMBER) >= 0:
        return None
    try:
        items = orjson.loads(piece)
    except orjson.JSONDecodeError:
        return None
    return items if isinstance(items, list) else None


def drain(items: list) -> Iterator[tuple[int, Any]]:
    """``enumerate(items)``, letting go of each item once it is taken, so a parsed
    range's objects are freed while its events are being built."""
    for i in range(len(items)):
        item = items[i]
        items[i] = None
        yield i, item
