"""Streaming CSV shared by importers: ``(line, cells)`` per record, tolerant of
BOMs, Windows-1252 lines and malformed records (each reported as an ImportIssue,
and the reading goes on). It never decides what a row means."""
from __future__ import annotations

import csv
from collections.abc import Iterator

from importers.base import Entry, ImportIssue


def csv_rows(entry: Entry) -> Iterator[tuple[int, list[str]] | ImportIssue]:
    """``(line, cells)`` per CSV record, streaming. Lines that are not UTF-8 are read as
    Windows-1252 and reported; malformed records become issues."""
    bad_lines: list[int] = []

    def lines() -> Iterator[str]:
        with entry.open() as f:
            for n, raw in enumerate(f, start=1):
                if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError:
                    bad_lines.append(n)
                    yield raw.decode("cp1252", errors="replace")

    reader = csv.reader(lines())
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield ImportIssue(f"line {start}", f"malformed CSV record: {exc}")
            start = reader.line_num + 1
            continue
        if bad_lines:
            yield ImportIssue(f"line {bad_lines[0]}",
                              "text is not UTF-8; read it as Windows-1252, check accented characters")
            bad_lines.clear()
        yield start, row
        start = reader.line_num + 1
