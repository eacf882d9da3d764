"""Crash safety: SIGKILL at seeded random moments during an import of a small
multi-source export and during the search-index refresh. After a restart the store
holds exactly the events of a clean import (same count, same content hash, no
duplicates) and the next refresh leaves the index complete. ``HINDSIGHT_CRASH_TRIALS``
sets the trials per job (default 20)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import duckdb
import pytest

from tests.reliability.contract import TALLY
from tests.reliability.crash import KilledJob, kill_and_restart, run_child

TRIALS = int(os.environ.get("HINDSIGHT_CRASH_TRIALS", "20"))
REFRESH_TRIALS = max(1, TRIALS // 2)

_OPEN = """
from zoneinfo import ZoneInfo
from engine import ingest
from engine.ingest import import_paths
# files over 32 KiB get a transaction each: more commits for a kill to fall between
ingest.SMALL_FILE = 32 << 10
from engine.store import EventStore, store_path
from importers.base import ImportContext
context = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))
store = EventStore(store_path(data))
"""

IMPORT = _OPEN + """
print("phase start", flush=True)
import_paths(store, [export], context=context)
store.close()
print("phase done", flush=True)
"""

REFRESH = _OPEN + """
from engine.retrieval.index import RetrievalIndex
from tests.test_operators import FakeSparse
import_paths(store, [export], context=context)
index = RetrievalIndex(store, sparse=FakeSparse())
print("phase start", flush=True)
index.refresh()
index.close()
store.close()
print("phase done", flush=True)
"""


def content(data: Path) -> tuple[int, int, str, int]:
    """(events, distinct ids, a hash of every event's content, imports) in ``data``."""
    con = duckdb.connect(str(data / "hindsight.duckdb"), read_only=True)
    try:
        n, distinct = con.execute("SELECT count(*), count(DISTINCT id) FROM events").fetchone()
        digest = hashlib.sha256()
        for row in con.execute('SELECT id, source, kind, title, text, start, "end", tz_offset_min, attributes, '
                               'file, locator, raw FROM events ORDER BY id').fetchall():
            digest.update(repr(row).encode("utf-8", "surrogatepass"))
        imports = con.execute("SELECT count(*) FROM imports").fetchone()[0]
        orphans = con.execute("SELECT count(*) FROM events WHERE import_id NOT IN (SELECT id FROM imports)").fetchone()[0]
        assert orphans == 0, f"{orphans} events of an import that never finished (half-written)"
        return n, distinct, digest.hexdigest(), imports
    finally:
        con.close()


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    """Five weeks of a persona's life: 32 files of ten formats, 1.1 MB."""
    from synth.personas import generate

    out = tmp_path_factory.mktemp("persona")
    generate(0, out, years=0.1, with_questions=False)
    return out / "exports"


@pytest.fixture(scope="module")
def clean(export, tmp_path_factory):
    """A clean import, and how long import and refresh take (the span kills are drawn from)."""
    data = tmp_path_factory.mktemp("clean") / "data"
    import_seconds = run_child(KilledJob("import", IMPORT, lambda d: None), data, export)[2]
    refresh_seconds = run_child(KilledJob("refresh", REFRESH, lambda d: None), data, export)[2]
    return content(data), import_seconds, refresh_seconds


def _store_is_the_clean_one(reference):
    def check(data: Path) -> None:
        n, distinct, digest, imports = content(data)
        assert n == distinct, f"{n - distinct} duplicate events after a crash and a restart"
        assert (n, digest, imports) == (reference[0], reference[2], reference[3]), \
            "the store after a crash and a restart differs from a clean import"
        assert not list((data / "tmp").glob("*.parquet")), "temporary rows of the killed import were left behind"
    return check


def _index_is_complete(data: Path) -> None:
    con = duckdb.connect(str(data / "hindsight.retrieval.duckdb"), read_only=True)
    try:
        con.execute(f"ATTACH '{data / 'hindsight.duckdb'}' AS store (READ_ONLY)")
        missing = con.execute("SELECT count(*) FROM store.events WHERE id NOT IN (SELECT id FROM docs)").fetchone()[0]
        stale = con.execute("SELECT count(*) FROM docs WHERE id NOT IN (SELECT id FROM store.events)").fetchone()[0]
        unweighted = con.execute("SELECT count(*) FROM docs WHERE id NOT IN (SELECT id FROM sparse_done)").fetchone()[0]
        # a unit's term weights written twice (a finished batch encoded again)
        twice = con.execute("SELECT count(*) FROM (SELECT unit, term FROM unit_terms GROUP BY ALL "
                            "HAVING count(*) > 1)").fetchone()[0]
    finally:
        con.close()
    assert (missing, stale, unweighted, twice) == (0, 0, 0, 0), \
        f"index after a crash and a refresh: {missing} events missing, {stale} stale, " \
        f"{unweighted} without weights, {twice} terms twice"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(TRIALS))
def test_kill_during_import_then_restart_gives_the_clean_import(seed, export, clean, tmp_path):
    reference, import_seconds, _ = clean
    job = KilledJob("import", IMPORT, _store_is_the_clean_one(reference))
    landed = kill_and_restart(job, tmp_path / "data", export, seed, span=import_seconds)
    TALLY[("kill -9", "import")][landed] += 1


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(REFRESH_TRIALS))
def test_kill_during_index_refresh_then_the_next_refresh_completes_it(seed, export, clean, tmp_path):
    reference, import_seconds, refresh_seconds = clean
    data = tmp_path / "data"

    def check(d: Path) -> None:
        _store_is_the_clean_one(reference)(d)
        _index_is_complete(d)

    job = KilledJob("refresh", REFRESH, check)
    landed = kill_and_restart(job, data, export, 1000 + seed, span=refresh_seconds)
    TALLY[("kill -9", "index refresh")][landed] += 1
