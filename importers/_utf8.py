"""Reading a file that should be UTF-8 but holds a few bytes that are not: they are
read as U+FFFD and the first one's offset is kept for a warning, so one damaged
record neither stops a streaming parser (yajl, expat) nor loses the records after it.
"""
from __future__ import annotations

import io
from typing import IO

from importers.base import ImportIssue

CHUNK_BYTES = 1 << 20


def not_utf8_warning(offset: int) -> ImportIssue:
    """The warning for a file whose first byte that is not UTF-8 is at ``offset``."""
    return ImportIssue(f"byte {offset:,}", "bytes that are not UTF-8 (the first of them here) were read as "
                                          "U+FFFD; the records holding them were imported with that character",
                       kept=True)


class Utf8Repaired(io.RawIOBase):
    """``f`` with every byte sequence that is not UTF-8 replaced by U+FFFD's bytes;
    ``first_bad`` is the offset in ``f`` of the first such byte. Valid input passes
    through unchanged, at the cost of one C-speed check per chunk."""

    def __init__(self, f: IO[bytes]):
        self._f = f
        self._offset = 0  # bytes of ``f`` read so far
        self._carry = b""  # an incomplete character at the end of the last chunk
        self._out = b""
        self.first_bad: int | None = None

    def readable(self) -> bool:
        return True

    def _repair(self, chunk: bytes) -> bytes:
        data = self._carry + chunk
        base = self._offset - len(self._carry)
        self._carry = b""
        if chunk:  # hold back a character the next chunk completes
            for back in range(1, min(4, len(data)) + 1):
                byte = data[-back]
                if byte & 0xC0 != 0x80:  # not a continuation byte
                    need = 1 if byte < 0xC0 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
                    if need > back:
                        data, self._carry = data[:-back], data[-back:]
                    break
        try:
            data.decode("utf-8")
            return data
        except UnicodeDecodeError as exc:
            if self.first_bad is None:
                self.first_bad = base + exc.start
            return data.decode("utf-8", "replace").encode("utf-8")

    def read(self, size: int = -1) -> bytes:
        while not self._out:
            chunk = self._f.read(size if size and size > 0 else CHUNK_BYTES)
            self._out = self._repair(chunk)
            self._offset += len(chunk)
            if not chunk:
                break
        n = len(self._out) if size is None or size < 0 else size
        out, self._out = self._out[:n], self._out[n:]
        return out

    def readinto(self, b) -> int:
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)
