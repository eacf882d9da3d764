"""Giving freed memory back to the system. Pure mechanism; no I/O beyond the call."""
from __future__ import annotations

import sys


def give_back_free_pages() -> None:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim``; on other
    platforms or C libraries, nothing). glibc keeps pages a large build or a model's
    load freed until then."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
