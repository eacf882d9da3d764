"""RETRIEVE's candidate index, kept in its own DuckDB file beside the store
(``hindsight.duckdb`` -> ``hindsight.retrieval.duckdb``; in memory for an
in-memory store).

Two indexes over one verbalised document per event: DuckDB full-text search (BM25,
the ``fts`` extension from the ``duckdb-extension-fts`` package, loaded from its
file; ``bm25s`` is the fallback if that cannot load) and the SparseEncoder's
(SPLADE) term weights. Both are brought up to date incrementally by
:meth:`RetrievalIndex.refresh`: only events not yet indexed are verbalised and
encoded, deleted events are dropped. It never writes to the event store.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa

from engine.retrieval.vectors import PassageVectors, append_done
from engine.retrieval.verbalise import key_values, verbalise

log = logging.getLogger(__name__)

INDEX_SUFFIX = ".retrieval.duckdb"
#: Bump when ``engine.retrieval.verbalise`` changes what a document says.
DOC_VERSION = "1"


class RetrievalIndexError(RuntimeError):
    """The retrieval index cannot be opened or built; the message says what to do."""


def index_path(store_path: str | Path) -> Path:
    """hindsight.duckdb -> hindsight.retrieval.duckdb, in the same folder."""
    p = Path(store_path)
    return p.with_name(p.stem + INDEX_SUFFIX)


def _fts_extension_path() -> str | None:
    try:
        import duckdb_extension_fts
    except ImportError:
        return None
    version = duckdb.__version__
    path = Path(duckdb_extension_fts.__file__).parent / "extensions" / f"v{version}" / "fts.duckdb_extension"
    return str(path) if path.exists() else None


def read_events(store, ids: list[str], select: str) -> list[tuple]:
    """``select`` (a SELECT ... FROM events) for the events with these ids, joined
    against a registered id list: list_contains per row would scan quadratically."""
    con = store.reader()
    name = f"_ids_{threading.get_ident()}"
    con.register(name, pa.table({"_id": pa.array(ids, pa.string())}))
    try:
        return con.execute(f"{select} SEMI JOIN {name} ON events.id = {name}._id").fetchall()
    finally:
        con.unregister(name)


@dataclass(frozen=True, slots=True)
class RefreshStats:
    added: int
    removed: int
    encoded: int  # documents that got term weights (encoded, or copied from an identical document)
    seconds: float
    fts_backend: str
    texts_encoded: int = 0  # distinct document texts the sparse encoder actually read
    embedded: int = 0  # events whose passages got Embedder vectors


class SearchMemo:
    """The results of the latest searches over an index, by a key of their inputs, kept
    until its documents change (:meth:`RetrievalIndex.refresh` clears it) and at most
    ``max_rows`` rows in all, the oldest dropped first. Questions come in runs about
    one thing: of the persona benchmark's 40, 7 searched for "running" and 4 for
    "songs I listened to". On its 38k events 12 of the 40 searches came from here, in
    29-40 ms against 355-880 ms searched."""

    def __init__(self, max_rows: int = 100_000):
        self.max_rows = max_rows
        self._entries: OrderedDict[Hashable, tuple[list, list[str], object]] = OrderedDict()
        self._rows = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[list, list[str]] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0], found[1]

    def put(self, key: Hashable, rows: list, notes: list[str], keep: object = None) -> None:
        """``keep``: an object whose ``id()`` is part of ``key``, held so that the id
        cannot pass to another object while the entry lives."""
        with self._lock:
            if len(rows) > self.max_rows:
                return
            old = self._entries.pop(key, None)
            if old is not None:
                self._rows -= len(old[0])
            self._entries[key] = (list(rows), list(notes), keep)
            self._rows += len(rows)
            while self._rows > self.max_rows:
                _, (dropped, _, _) = self._entries.popitem(last=False)
                self._rows -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._rows = 0


class RetrievalIndex:
    """Open (creating) the index for ``store``. ``sparse`` may be None: then only
    full-text search is used."""

    def __init__(self, store, *, sparse=None, embedder=None, path: str | Path | None = None,
                 encode_batch: int = 64):
        self.store = store
        self.sparse = sparse
        # Texts per encoder call: between two calls progress is reported and a cancel
        # is seen. 64 rather than 256: the encoder reads 64 tokens and 98% of the demo's
        # documents are longer, so its length sorting within a call saves nothing more
        # (1,024 texts: 36-39 docs/s either way, on a loaded machine) while progress
        # moves about every second instead of every four, and a cancel stops that much sooner.
        self.encode_batch = encode_batch
        if path is None:
            path = ":memory:" if store.path == ":memory:" else index_path(store.path)
        self.path = str(path)
        self._lock = threading.RLock()
        # what RETRIEVE found for a search, while the documents stay the same (SearchMemo)
        self.memo = SearchMemo()
        try:
            self._db = duckdb.connect(self.path)
        except duckdb.Error as exc:
            raise RetrievalIndexError(f"cannot open the retrieval index {self.path}: {exc}; "
                              "run 'hindsight doctor --repair' to rebuild it from your events") from exc
        self._db.execute("CREATE TABLE IF NOT EXISTS docs (id VARCHAR PRIMARY KEY, doc VARCHAR NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS sparse_terms (id VARCHAR NOT NULL, term VARCHAR NOT NULL, "
                         "weight FLOAT NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS sparse_done (id VARCHAR PRIMARY KEY)")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        self._reset_if_stale()
        # with an Embedder: each passage's vector, so RETRIEVE need not embed candidates
        self.vectors = PassageVectors(self._db, embedder) if embedder is not None else None
        self._fts_backend = self._load_fts()
        self._bm25 = None  # (retriever, ids) when the fallback is in use
        # DuckDB's FTS index lives in the file: a process that finds it built over
        # the very documents it holds uses it (rebuilding took 2.3 s for 38k events,
        # paid by every session's first question)
        self._fts_dirty = not self._fts_current()

    def _reset_if_stale(self) -> None:
        """Documents written by another verbalisation, or term weights of another
        encoder, are dropped and rebuilt rather than mixed with new ones."""
        encoder = "" if self.sparse is None else (getattr(self.sparse, "name", "") or type(self.sparse).__name__)
        meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("doc_version", DOC_VERSION) != DOC_VERSION:
            log.info("retrieval index %s: document format changed; rebuilding", self.path)
            self._db.execute("DELETE FROM docs")
            self._db.execute("DELETE FROM sparse_terms")
            self._db.execute("DELETE FROM sparse_done")
            self._db.execute("DROP TABLE IF EXISTS passage_vectors")  # passages are verbalised too
            self._db.execute("DROP TABLE IF EXISTS sentence_vectors")
            self._db.execute("DROP TABLE IF EXISTS vectors_done")
        elif encoder and meta.get("sparse_encoder", encoder) != encoder:
            log.info("retrieval index %s: sparse encoder changed to %s; re-encoding", self.path, encoder)
            self._db.execute("DELETE FROM sparse_terms")
            self._db.execute("DELETE FROM sparse_done")
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('doc_version', ?)", [DOC_VERSION])
        if encoder:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('sparse_encoder', ?)", [encoder])

    def _load_fts(self) -> str:
        ext = _fts_extension_path()
        if ext is not None:
            try:
                self._db.execute(f"LOAD '{ext}'")
                return "duckdb-fts"
            except duckdb.Error as exc:
                log.warning("cannot load the DuckDB fts extension from %s (%s); falling back to bm25s", ext, exc)
        else:
            log.warning("the duckdb-extension-fts package for duckdb %s is not installed; falling back to bm25s",
                        duckdb.__version__)
        return "bm25s"

    @property
    def fts_backend(self) -> str:
        return self._fts_backend

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ---- building ------------------------------------------------------------------
    def refresh(self, *, cancel: threading.Event | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> RefreshStats:
        """Index events added to the store since the last refresh; forget removed ones.

        ``progress(stage, done, total)`` counts documents: stage "documents" while
        events are verbalised, then "sparse" while they get term weights, then
        "vectors" while their passages get Embedder vectors (with an Embedder). Another
        thread's refresh is waited for (the work is shared, never done twice); a
        ``cancel`` stops the wait as well as the work, keeping what was finished."""
        t0 = time.perf_counter()
        if not self._acquire(cancel):
            return RefreshStats(0, 0, 0, time.perf_counter() - t0, self._fts_backend)
        try:
            store_ids = self.store.reader().execute("SELECT DISTINCT id FROM events").to_arrow_table()
            self._db.register("_store_ids", store_ids)
            try:
                removed = self._db.execute(
                    "DELETE FROM docs WHERE id NOT IN (SELECT id FROM _store_ids) RETURNING id").fetchall()
                if removed:
                    self._db.execute("DELETE FROM sparse_terms WHERE id NOT IN (SELECT id FROM docs)")
                    self._db.execute("DELETE FROM sparse_done WHERE id NOT IN (SELECT id FROM docs)")
                new_ids = [r[0] for r in self._db.execute(
                    "SELECT id FROM _store_ids WHERE id NOT IN (SELECT id FROM docs)").fetchall()]
            finally:
                self._db.unregister("_store_ids")
            added = 0
            for i in range(0, len(new_ids), 5000):
                if cancel is not None and cancel.is_set():
                    break
                rows = read_events(self.store, new_ids[i:i + 5000],
                                   "SELECT id, source, kind, title, text, attributes FROM events")
                # one document per id, even if a store ever held an id twice
                docs = list({r[0]: (r[0], verbalise(key_values(r[1], r[2], r[3], r[4],
                                                               orjson.loads(r[5]) if r[5] else {})))
                             for r in reversed(rows)}.values())
                self._db.register("_new_docs", pa.table({"id": [d[0] for d in docs], "doc": [d[1] for d in docs]}))
                try:
                    self._db.execute("INSERT INTO docs SELECT id, doc FROM _new_docs")
                finally:
                    self._db.unregister("_new_docs")
                added += len(docs)
                if progress:
                    progress("documents", added, len(new_ids))
            if added or removed:
                self._fts_dirty = True
            encoded, texts = self._encode_missing(cancel, progress)
            embedded = 0
            if self.vectors is not None:
                if removed:
                    self.vectors.forget_removed()
                embedded = self.vectors.embed_missing(self.store, read_events, cancel, progress)
            if added or removed or encoded or embedded:  # searches would find otherwise now
                self.memo.clear()
            return RefreshStats(added, len(removed), encoded, time.perf_counter() - t0, self._fts_backend, texts,
                                embedded)
        finally:
            self._lock.release()

    def _acquire(self, cancel: threading.Event | None) -> bool:
        """The index lock; False if ``cancel`` is set while another refresh holds it."""
        if cancel is None:
            return self._lock.acquire()
        while not self._lock.acquire(timeout=0.1):
            if cancel.is_set():
                return False
        return True

    def _encode_missing(self, cancel, progress) -> tuple[int, int]:
        """Term weights for every document without them; returns (documents, texts
        encoded). Byte-identical documents (a song played a hundred times) share one
        encoding: weights already stored for the same text are copied, and each other
        distinct text is encoded once."""
        if self.sparse is None:
            return 0, 0
        total = self._db.execute("SELECT count(*) FROM docs WHERE id NOT IN (SELECT id FROM sparse_done)").fetchone()[0]
        if not total:
            return 0, 0
        done = self._copy_known_weights()
        if progress:  # the slow stage starts: say so before its first batch
            progress("sparse", done, total)
        groups = self._db.execute(
            "SELECT doc, list(id ORDER BY id) FROM docs WHERE id NOT IN (SELECT id FROM sparse_done) "
            "GROUP BY doc ORDER BY min(id)").fetchall()
        texts = 0
        ids: list[str] = []
        terms: list[str] = []
        ws: list[float] = []
        finished: list[str] = []

        def flush() -> None:
            # write in large chunks: one INSERT per model batch costs more than the fake models
            append_done(self._db, "sparse_terms", pa.table({
                "id": pa.array(ids, pa.string()), "term": pa.array(terms, pa.string()),
                "weight": pa.array(ws, pa.float32())}), "sparse_done", finished)
            ids.clear(); terms.clear(); ws.clear(); finished.clear()

        for i in range(0, len(groups), self.encode_batch):
            if cancel is not None and cancel.is_set():
                break
            batch = groups[i:i + self.encode_batch]
            weights = self.sparse.encode([doc for doc, _ in batch])
            texts += len(batch)
            for (_, doc_ids), vec in zip(batch, weights):
                kept = [(term, float(w)) for term, w in vec.items() if w > 0]
                for doc_id in doc_ids:
                    for term, w in kept:
                        ids.append(doc_id); terms.append(term); ws.append(w)
                    finished.append(doc_id)
                done += len(doc_ids)
            if len(finished) >= 1024:  # keep work across an interrupted refresh
                flush()
            if progress:
                progress("sparse", done, total)
        if finished:
            flush()
        return done, texts

    def _copy_known_weights(self) -> int:
        """Give documents whose text already has weights here (from an earlier
        refresh) a copy of them; returns how many documents got weights."""
        self._db.begin()
        try:
            self._db.execute(
                "CREATE TEMP TABLE _reuse AS SELECT t.id, k.donor FROM docs t JOIN "
                "(SELECT d.doc, min(d.id) AS donor FROM docs d SEMI JOIN sparse_done s ON d.id = s.id "
                " GROUP BY d.doc) k ON t.doc = k.doc "
                "WHERE t.id NOT IN (SELECT id FROM sparse_done)")
            self._db.execute("INSERT INTO sparse_terms SELECT r.id, s.term, s.weight FROM _reuse r "
                             "JOIN sparse_terms s ON s.id = r.donor")
            n = self._db.execute("INSERT INTO sparse_done SELECT id FROM _reuse").fetchone()[0]
            self._db.execute("DROP TABLE _reuse")
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        return n

    def _docs_fingerprint(self) -> str:
        n, h = self._db.execute("SELECT count(*), coalesce(sum(hash(id, doc)), 0) FROM docs").fetchone()
        return f"{n}:{h}"

    def _fts_current(self) -> bool:
        """Whether the file holds a DuckDB FTS index built over the documents it holds now."""
        if self._fts_backend != "duckdb-fts":
            return False
        built = self._db.execute("SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'fts_main_docs' "
                                 "AND table_name = 'docs'").fetchone()[0]
        stored = self._db.execute("SELECT value FROM meta WHERE key = 'fts_docs'").fetchone()
        return bool(built) and stored is not None and stored[0] == self._docs_fingerprint()

    def _ensure_fts(self) -> None:
        if not self._fts_dirty:
            return
        if self._fts_backend == "duckdb-fts":
            # DuckDB's FTS index is not incremental; rebuilding it is cheap next to encoding
            self._db.execute("PRAGMA create_fts_index('docs', 'id', 'doc', overwrite=1)")
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('fts_docs', ?)", [self._docs_fingerprint()])
        else:
            try:
                import bm25s
            except ImportError as exc:
                raise RetrievalIndexError("full-text search needs the duckdb-extension-fts package (or bm25s); "
                                  "install duckdb-extension-fts==" + duckdb.__version__) from exc
            rows = self._db.execute("SELECT id, doc FROM docs ORDER BY id").fetchall()
            retriever = bm25s.BM25()
            retriever.index(bm25s.tokenize([d for _, d in rows], stopwords="en", show_progress=False),
                            show_progress=False)
            self._bm25 = (retriever, [i for i, _ in rows])
        self._fts_dirty = False

    # ---- searching -----------------------------------------------------------------
    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM docs").fetchone()[0]

    def fts_search(self, query: str, limit: int) -> list[tuple[str, float]]:
        with self._lock:
            if not self.count():
                return []
            self._ensure_fts()
            if self._fts_backend == "duckdb-fts":
                return [(r[0], float(r[1])) for r in self._db.execute(
                    "SELECT id, score FROM (SELECT id, fts_main_docs.match_bm25(id, ?) AS score FROM docs) "
                    "WHERE score IS NOT NULL ORDER BY score DESC, id LIMIT ?", [query, limit]).fetchall()]
            import bm25s
            retriever, ids = self._bm25
            k = min(limit, len(ids))
            docs, scores = retriever.retrieve(bm25s.tokenize([query], stopwords="en", show_progress=False),
                                              k=k, show_progress=False)
            return [(ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0]) if s > 0]

    def sparse_search(self, query: str, limit: int) -> list[tuple[str, float]]:
        if self.sparse is None:
            return []
        qvec = {t: float(w) for t, w in self.sparse.encode([query])[0].items() if w > 0}
        if not qvec:
            return []
        with self._lock:
            self._db.register("_q", pa.table({"term": list(qvec), "qw": list(qvec.values())}))
            try:
                return [(r[0], float(r[1])) for r in self._db.execute(
                    "SELECT s.id, sum(s.weight * q.qw) AS score FROM sparse_terms s JOIN _q q USING (term) "
                    "GROUP BY s.id ORDER BY score DESC, s.id LIMIT ?", [limit]).fetchall()]
            finally:
                self._db.unregister("_q")

    def passage_similarities(self, query_vector: list[float], ids: list[str]) -> dict[str, list[float]]:
        """Cosine of each passage of each of ``ids`` with the query's Embedder vector
        (:meth:`engine.retrieval.vectors.PassageVectors.similarities`); empty without
        an Embedder, and ids not embedded yet are left out."""
        if self.vectors is None:
            return {}
        with self._lock:
            return self.vectors.similarities(query_vector, ids)

    def nearest_sentences(self, query_vector: list[float], floor: float) -> dict[str, float]:
        """Events with a sentence within cosine ``floor`` of the query's Embedder
        vector, with that cosine (:meth:`engine.retrieval.vectors.PassageVectors.nearest_sentences`);
        empty without an Embedder."""
        if self.vectors is None:
            return {}
        with self._lock:
            return self.vectors.nearest_sentences(query_vector, floor)

    def documents(self, ids: list[str]) -> dict[str, str]:
        with self._lock:
            return dict(self._db.execute("SELECT id, doc FROM docs WHERE list_contains(?, id)", [ids]).fetchall())
