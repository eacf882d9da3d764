"""Embedder vectors of every event's passages, kept in RETRIEVE's index file.

RETRIEVE keeps what its reranker passes only when the passage that made it pass
is near the query in the Embedder's space (cosine >= ``min_similarity``). The
vectors do not depend on the query, so they are computed once, when the index is
refreshed, instead of during every question. Then RETRIEVE can also skip, before
reranking, every candidate none of whose passages is near the query: such a
candidate can never pass. On the demo data that is 3/4 of the reranker's work for
"Amazon purchase" and 9/10 for "running".

A passage is what :func:`engine.retrieval.passages.passages` gives, cut to
``SIMILARITY_CHARS``, exactly what RETRIEVE embedded before. Vectors are L2-
normalised, so a cosine is an inner product. Byte-identical passages (a song
played a hundred times) are embedded once per refresh.

Each event's sentences (:func:`engine.retrieval.passages.sentences`: its text one
sentence at a time, without numbers) get vectors too, in ``sentence_vectors``:
RETRIEVE takes an event whose sentence is as near the question as the nearest
events' are without asking the reranker, and finds such events beyond the search's
hits (see :func:`engine.operators.retrieve.retrieve`).

This module writes only the index's own tables, through the connection the
:class:`engine.retrieval.index.RetrievalIndex` owns and locks.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import duckdb
import orjson
import pyarrow as pa

from engine.retrieval.passages import SIMILARITY_CHARS, passages, sentences
from engine.retrieval.verbalise import key_values

log = logging.getLogger(__name__)

#: ids read from the store per step (their passages are embedded, then stored)
CHUNK_IDS = 512
#: Bump when what is embedded of an event changes: every event is embedded again.
VECTORS_VERSION = "3"  # 2: sentence vectors beside the passages'; 3: sentences without companions


def append_done(db: duckdb.DuckDBPyConnection, table: str, rows: pa.Table, done_table: str,
                done_ids: list[str], *, more: dict[str, pa.Table] | None = None) -> None:
    """Append ``rows`` to ``table`` (and each of ``more``'s tables to the table it
    names) and ``done_ids`` to ``done_table`` in one transaction: work is never stored
    without its 'done' mark, or the next refresh would add it a second time."""
    tables = {table: rows, **(more or {})}
    names = {t: f"_append_rows_{n}" for n, t in enumerate(tables)}
    for t, r in tables.items():
        db.register(names[t], r)
    db.register("_append_done", pa.table({"id": pa.array(done_ids, pa.string())}))
    try:
        db.begin()
        for t in tables:
            db.execute(f"INSERT INTO {t} SELECT * FROM {names[t]}")
        db.execute(f"INSERT INTO {done_table} SELECT id FROM _append_done")
        db.commit()
    except BaseException:
        db.rollback()
        raise
    finally:
        for name in names.values():
            db.unregister(name)
        db.unregister("_append_done")


def embedder_name(embedder) -> str:
    return getattr(embedder, "name", "") or type(embedder).__name__


def vector_literal(vector) -> str:
    """A query vector as one text parameter (cast in SQL with ``::DOUBLE[]::FLOAT[]``,
    the same values as a list of floats). DuckDB binds a list parameter element by
    element, and tries to import pandas for each: 770 tries for 384 floats, each a
    search of ``sys.path`` where pandas is not installed (~25 ms a query vector)."""
    return "[" + ", ".join(repr(float(x)) for x in vector) + "]"

class PassageVectors:
    """The ``passage_vectors`` and ``vectors_done`` tables of one index."""

    def __init__(self, db: duckdb.DuckDBPyConnection, embedder, *, batch: int = 64):
        self._db = db
        self.embedder = embedder
        self.batch = batch
        db.execute("CREATE TABLE IF NOT EXISTS passage_vectors (id VARCHAR NOT NULL, n INTEGER NOT NULL, "
                   "vec FLOAT[] NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS sentence_vectors (id VARCHAR NOT NULL, vec FLOAT[] NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS vectors_done (id VARCHAR PRIMARY KEY)")
        name = embedder_name(embedder)
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'vectors_version')").fetchall())
        if meta.get("embedder", name) != name:
            log.info("retrieval index: embedder changed to %s; re-embedding passages", name)
            self.clear()
        elif meta.get("vectors_version") != VECTORS_VERSION:
            log.info("retrieval index: vectors of another kind; embedding again")
            self.clear()
        db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", [name])
        db.execute("INSERT OR REPLACE INTO meta VALUES ('vectors_version', ?)", [VECTORS_VERSION])

    def clear(self) -> None:
        for table in ("passage_vectors", "sentence_vectors", "vectors_done"):
            self._db.execute(f"DELETE FROM {table}")

    def forget_removed(self) -> None:
        """Drop the vectors of events no longer among the index's documents."""
        for table in ("passage_vectors", "sentence_vectors", "vectors_done"):
            self._db.execute(f"DELETE FROM {table} WHERE id NOT IN (SELECT id FROM docs)")

    def embed_missing(self, store, read_events, cancel: threading.Event | None,
                      progress: Callable[[str, int, int], None] | None) -> int:
        """Vectors for every document without them; returns how many events got them.
        Work is stored per chunk, so an interrupted refresh keeps what it finished."""
        todo = [r[0] for r in self._db.execute(
            "SELECT id FROM docs WHERE id NOT IN (SELECT id FROM vectors_done) ORDER BY id").fetchall()]
        if not todo:
            return 0
        if progress:
            progress("vectors", 0, len(todo))
        done = 0
        for i in range(0, len(todo), CHUNK_IDS):
            if cancel is not None and cancel.is_set():
                break
            rows = read_events(store, todo[i:i + CHUNK_IDS], "SELECT id, source, kind, title, text, attributes FROM events")
            texts: dict[str, int] = {}  # passage text -> its slot in the embedder's input
            owners: list[tuple[str, int, int]] = []  # (event id, passage number, slot)
            said: list[tuple[str, int]] = []  # (event id, slot) of each sentence
            for event_id, source, kind, title, text, attrs in {r[0]: r for r in rows}.values():
                pairs = key_values(source, kind, title, text, orjson.loads(attrs) if attrs else {})
                for n, passage in enumerate(passages(pairs, source, kind, title, text)):
                    owners.append((event_id, n, texts.setdefault(passage[:SIMILARITY_CHARS], len(texts))))
                said += [(event_id, texts.setdefault(s, len(texts))) for s in sentences(text, title)]
            unique = list(texts)
            vectors: list[list[float]] = []
            for j in range(0, len(unique), self.batch):
                if cancel is not None and cancel.is_set():
                    return done
                vectors += self.embedder.embed(unique[j:j + self.batch])
            self._store([e for e, _, _ in owners], [n for _, n, _ in owners], [vectors[s] for _, _, s in owners],
                        sorted({e for e, _, _ in owners}), [e for e, _ in said], [vectors[s] for _, s in said])
            done += len({e for e, _, _ in owners})
            if progress:
                progress("vectors", min(i + CHUNK_IDS, len(todo)), len(todo))
        return done

    def _store(self, ids: list[str], ns: list[int], vecs: list[list[float]], finished: list[str],
               sentence_ids: list[str], sentence_vecs: list[list[float]]) -> None:
        append_done(self._db, "passage_vectors", pa.table({
            "id": pa.array(ids, pa.string()), "n": pa.array(ns, pa.int32()),
            "vec": pa.array(vecs, pa.list_(pa.float32()))}), "vectors_done", finished,
            more={"sentence_vectors": pa.table({"id": pa.array(sentence_ids, pa.string()),
                                                "vec": pa.array(sentence_vecs, pa.list_(pa.float32()))})})

    def nearest_sentences(self, query_vector: list[float], floor: float) -> dict[str, float]:
        """Every event with a sentence within cosine ``floor`` of the query: its
        nearest sentence's cosine."""
        return dict(self._db.execute(
            "SELECT id, max(list_inner_product(vec, ?::DOUBLE[]::FLOAT[])) AS cos FROM sentence_vectors "
            "GROUP BY id HAVING cos >= ?", [vector_literal(query_vector), floor]).fetchall())

    def similarities(self, query_vector: list[float], ids: list[str]) -> dict[str, list[float]]:
        """For each of ``ids`` that has vectors: the cosine of each of its passages
        with the query, in passage order. Ids without vectors are left out."""
        if not ids:
            return {}
        self._db.register("_want", pa.table({"id": pa.array(ids, pa.string())}))
        try:
            rows = self._db.execute(
                "SELECT id, list(list_inner_product(vec, ?::DOUBLE[]::FLOAT[]) ORDER BY n) FROM passage_vectors "
                "SEMI JOIN _want USING (id) GROUP BY id", [vector_literal(query_vector)]).fetchall()
        finally:
            self._db.unregister("_want")
        return {r[0]: list(r[1]) for r in rows}
