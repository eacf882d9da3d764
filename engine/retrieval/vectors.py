"""Embedder vectors of every event's passages and sentences, kept in RETRIEVE's
index file.

RETRIEVE keeps what its reranker passes only when the passage that made it pass
is near the query in the Embedder's space (cosine >= ``min_similarity``). The
vectors do not depend on the query, so they are computed once, when the index is
refreshed, instead of during every question. Then RETRIEVE can also skip, before
reranking, every candidate none of whose passages is near the query: such a
candidate can never pass. On the demo data that is 3/4 of the reranker's work for
"Amazon purchase" and 9/10 for "running".

What the Embedder reads of a passage is :func:`engine.retrieval.units.embedder_passages`
(the passage in its neural view, without numbers) cut to ``SIMILARITY_CHARS``.
Vectors are L2-normalised, so a cosine is an inner product.

Each event's sentences (:func:`engine.retrieval.sentences.sentences`: its text one
sentence at a time, without numbers) get vectors too: RETRIEVE takes an event whose
sentence is as near the question as the nearest events' are without asking the
reranker, and finds such events beyond the search's hits (see
:func:`engine.operators.retrieve.retrieve`).

Vectors are kept per distinct text (``text_vectors``, keyed by
:func:`engine.retrieval.units.text_key`), and events point at them
(``passage_refs``, ``sentence_refs``, written with the event's document by
:meth:`engine.retrieval.index.RetrievalIndex.refresh`): a song played a thousand
times is embedded once, its vector stored once. A refresh embeds the texts
without a vector and stores each batch as it is done, so a refresh killed halfway
loses at most one batch.

This module writes only the index's own tables, through the connection the
:class:`engine.retrieval.index.RetrievalIndex` owns and locks.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import duckdb
import pyarrow as pa

log = logging.getLogger(__name__)

#: Bump when the vectors of the same texts would differ: every text is embedded again.
#: (What is embedded of an event is the documents' format: ``engine.retrieval.index.DOC_VERSION``.)
VECTORS_VERSION = "4"  # 4: one vector per distinct text


def append_done(db: duckdb.DuckDBPyConnection, table: str, rows: pa.Table, done_table: str,
                done_ids: list, *, more: dict[str, pa.Table] | None = None, id_type=pa.string()) -> None:
    """Append ``rows`` to ``table`` (and each of ``more``'s tables to the table it
    names) and ``done_ids`` to ``done_table`` in one transaction: work is never stored
    without its 'done' mark, or the next refresh would add it a second time."""
    tables = {table: rows, **(more or {})}
    names = {t: f"_append_rows_{n}" for n, t in enumerate(tables)}
    for t, r in tables.items():
        db.register(names[t], r)
    db.register("_append_done", pa.table({"id": pa.array(done_ids, id_type)}))
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


def create_ref_tables(db: duckdb.DuckDBPyConnection) -> None:
    """The tables the index writes with each document: which texts its passages and
    sentences are, and the texts themselves (each once)."""
    db.execute("CREATE TABLE IF NOT EXISTS texts (h BIGINT NOT NULL, text VARCHAR NOT NULL)")
    db.execute("CREATE TABLE IF NOT EXISTS passage_refs (id VARCHAR NOT NULL, n INTEGER NOT NULL, h BIGINT NOT NULL)")
    db.execute("CREATE TABLE IF NOT EXISTS sentence_refs (id VARCHAR NOT NULL, h BIGINT NOT NULL)")


class PassageVectors:
    """The ``text_vectors`` table of one index, and the searches over it."""

    def __init__(self, db: duckdb.DuckDBPyConnection, embedder, *, batch: int = 64):
        self._db = db
        self.embedder = embedder
        self.batch = batch
        create_ref_tables(db)
        db.execute("CREATE TABLE IF NOT EXISTS text_vectors (h BIGINT NOT NULL, vec FLOAT[] NOT NULL)")
        name = embedder_name(embedder)
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'vectors_version')").fetchall())
        if meta.get("embedder", name) != name:
            log.info("retrieval index: embedder changed to %s; embedding again", name)
            self.clear()
        elif meta.get("vectors_version") != VECTORS_VERSION:
            log.info("retrieval index: vectors of another kind; embedding again")
            self.clear()
        db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", [name])
        db.execute("INSERT OR REPLACE INTO meta VALUES ('vectors_version', ?)", [VECTORS_VERSION])

    def reconnect(self, db: duckdb.DuckDBPyConnection) -> None:
        """The index's connection, opened again (:meth:`engine.retrieval.index.RetrievalIndex._reopen`)."""
        self._db = db

    def clear(self) -> None:
        self._db.execute("DELETE FROM text_vectors")
        for table in ("passage_vectors", "sentence_vectors", "vectors_done"):  # an older layout's
            self._db.execute(f"DROP TABLE IF EXISTS {table}")

    def unembedded_events(self) -> int:
        """Events with a passage or sentence whose text has no vector yet."""
        return self._db.execute(
            "SELECT count(DISTINCT id) FROM (SELECT id, h FROM passage_refs UNION ALL SELECT id, h FROM sentence_refs) "
            "ANTI JOIN text_vectors USING (h)").fetchone()[0]

    def embed_missing(self, cancel: threading.Event | None,
                      progress: Callable[[str, int, int], None] | None) -> int:
        """A vector for every text without one; returns how many texts were embedded.
        Each batch is stored as soon as it is embedded."""
        # shortest first: each embedder call then gets texts of about one length, which
        # it batches without padding (models.runtime.encoders.OnnxEmbedder)
        todo = self._db.execute("SELECT h, text FROM texts ANTI JOIN text_vectors USING (h) "
                                "ORDER BY length(text), h").fetchall()
        if not todo:
            return 0
        if progress:
            progress("vectors", 0, len(todo))
        done = 0
        for i in range(0, len(todo), self.batch):
            if cancel is not None and cancel.is_set():
                break
            batch = todo[i:i + self.batch]
            vectors = self.embedder.embed([t for _, t in batch])
            self._db.register("_new_vectors", pa.table({
                "h": pa.array([h for h, _ in batch], pa.int64()),
                "vec": pa.array(vectors, pa.list_(pa.float32()))}))
            try:
                self._db.execute("INSERT INTO text_vectors SELECT * FROM _new_vectors")
            finally:
                self._db.unregister("_new_vectors")
            done += len(batch)
            if progress:
                progress("vectors", done, len(todo))
        return done

    def nearest_sentences(self, query_vector: list[float], floor: float) -> dict[str, float]:
        """Every event with a sentence within cosine ``floor`` of the query: its
        nearest sentence's cosine. Each distinct sentence is compared once."""
        return dict(self._db.execute(
            "SELECT r.id, max(c.cos) FROM sentence_refs r JOIN "
            "(SELECT h, cos FROM (SELECT h, list_inner_product(vec, ?::DOUBLE[]::FLOAT[]) AS cos FROM text_vectors "
            " SEMI JOIN sentence_refs USING (h)) WHERE cos >= ?) c USING (h) GROUP BY r.id",
            [vector_literal(query_vector), floor]).fetchall())

    def similarities(self, query_vector: list[float], ids: list[str]) -> dict[str, list[float]]:
        """For each of ``ids`` whose passages all have vectors: the cosine of each of
        its passages with the query, in passage order. Other ids are left out."""
        if not ids:
            return {}
        self._db.register("_want", pa.table({"id": pa.array(ids, pa.string())}))
        try:
            rows = self._db.execute(
                "SELECT r.id, list(list_inner_product(v.vec, ?::DOUBLE[]::FLOAT[]) ORDER BY r.n) FROM passage_refs r "
                "SEMI JOIN _want USING (id) LEFT JOIN text_vectors v USING (h) GROUP BY r.id "
                "HAVING count(v.h) = count(*)", [vector_literal(query_vector)]).fetchall()
        finally:
            self._db.unregister("_want")
        return {r[0]: list(r[1]) for r in rows}
