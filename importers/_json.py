"""Streaming JSON helpers shared by importers: iterate the items of a top-level
array without loading the file, and turn parse failures into ImportIssues."""
from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import ijson

from importers.base import ImportIssue


def iter_array(f: IO[bytes], prefix: str = "item") -> Iterator[tuple[int, Any] | ImportIssue]:
    """Yield ``(index, item)`` for each element under ``prefix``; a syntax error
    ends the stream with one ImportIssue saying where it broke."""
    index = -1
    try:
        for index, item in enumerate(ijson.items(f, prefix, use_float=True), start=0):
            yield index, item
    except ijson.common.IncompleteJSONError as exc:
        # ``index`` is the last good item (0-based), so the broken one is index + 2 (1-based).
        where = f"after {index + 1} complete items" if index >= 0 else "at the start"
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else "unexpected end of file"
        yield ImportIssue(f"item {index + 2}", f"the JSON is broken or truncated {where}: {msg}")
    except (ijson.common.JSONError, UnicodeDecodeError, ValueError) as exc:
        yield ImportIssue(f"item {index + 2}", f"not valid JSON: {exc}")
