"""RETRIEVE's candidate index, kept in its own DuckDB file beside the store
(``hindsight.duckdb`` -> ``hindsight.retrieval.duckdb``; in memory for an
in-memory store).

Two indexes over one verbalised document per event: DuckDB full-text search (BM25,
the ``fts`` extension from the ``duckdb-extension-fts`` package, loaded from its
file; ``bm25s`` is the fallback if that cannot load) and the SparseEncoder's
(SPLADE) term weights, plus the Embedder's vectors (:mod:`engine.retrieval.vectors`).
The encoders read each event as texts many events share (:mod:`engine.retrieval.units`),
each distinct text once for the whole index. All are brought up to date
incrementally by :meth:`RetrievalIndex.refresh`: only events not yet indexed are
verbalised, only texts not yet encoded are encoded, deleted events are dropped. It
never writes to the event store.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa

from engine.heap import give_back_free_pages
from engine.locale_en import LANGUAGE
from engine.retrieval.sentences import SIMILARITY_CHARS
from engine.retrieval.units import event_texts, neural_pairs, text_key, view_key
from engine.retrieval.vectors import PassageVectors, append_done, create_ref_tables
from engine.retrieval.verbalise import key_values, verbalise

log = logging.getLogger(__name__)

#: DuckDB's buffer pool for the index while a refresh builds it (it spills beyond it)
INDEX_MEMORY_LIMIT = "384MB"
#: ... and while it is searched: after the scale benchmark's eight questions at a
#: million events the pool held 337 MB of the index at 384 MB and 116 MB at this,
#: with the same answers in the same time (median 2.36 s and 2.40 s)
SEARCH_MEMORY_LIMIT = "128MB"

#: a build (a refresh, the full-text index) that wrote at least this many rows opens the
#: index file again when done: DuckDB keeps memory a build used until its connection
#: closes. After a refresh of 300,000 events the open index held 124 MB it gave back
#: when closed, and the C heap 134 MB more it gave back after that.
REOPEN_AFTER_ROWS = 20_000

INDEX_SUFFIX = ".retrieval.duckdb"

#: The events of the best documents for the query ``?``, the best ``?`` of them, by
#: the FTS index's BM25 over the distinct documents (``doc_texts``), scored as its
#: ``match_bm25`` scores them (k 1.2, b 0.75, any of the terms), but only over the
#: postings of the query's terms: ``match_bm25`` called per document scored all of
#: them (0.58 s for "songs I listened to" at a million events, 0.28 s this way; the
#: same documents in the same order, tested against it).
BM25_TOP = """
WITH tokens AS (SELECT DISTINCT stem(unnest(fts_main_doc_texts.tokenize(?)), 'porter') AS t),
q AS (SELECT termid, df FROM fts_main_doc_texts.dict AS dict JOIN tokens ON dict.term = tokens.t),
tf AS (SELECT termid, docid, count_star() AS tf FROM fts_main_doc_texts.terms
       WHERE termid IN (SELECT termid FROM q) GROUP BY docid, termid),
sub AS (SELECT d.docid,
               log((((SELECT num_docs FROM fts_main_doc_texts.stats) - df) + 0.5) / (df + 0.5) + 1)
               * ((tf * (1.2 + 1))
                  / (tf + (1.2 * ((1 - 0.75) + (0.75 * (len / (SELECT avgdl FROM fts_main_doc_texts.stats)))))))
               AS s
        FROM tf JOIN fts_main_doc_texts.docs AS d USING (docid) JOIN q USING (termid)),
scores AS (SELECT docid, sum(s) AS score FROM sub GROUP BY docid)
SELECT e.id, score FROM scores JOIN fts_main_doc_texts.docs AS d USING (docid) JOIN docs AS e ON e.dh = d.name
ORDER BY score DESC, e.id LIMIT ?"""
#: Bump when ``engine.retrieval.verbalise`` changes what a document says, or
#: ``engine.retrieval.units`` what its units and passages are.
DOC_VERSION = "5"  # 2: sparse units and embedder texts shared by content; 3: titles and texts as templates;
# 4: a long paragraph's sentences past what the classifier reads are passages too; 5: and a sentence read in part
#: distinct neural views a refresh remembers what it made of (then it starts over)
MEMO_VIEWS = 200_000
#: events verbalised and stored per step (a refresh killed halfway keeps the steps done)
DOCUMENT_CHUNK = 5000


#: each event's document, by the key of its text (most plays of a song say the same)
DOCS_TABLE = "(id VARCHAR NOT NULL, dh BIGINT NOT NULL)"
#: each distinct document text once
DOC_TEXTS_TABLE = "(dh BIGINT NOT NULL, doc VARCHAR NOT NULL)"
#: documents done (all their sparse units encoded)
SPARSE_DONE_TABLE = "(id VARCHAR NOT NULL)"


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


def read_events(store, ids: list[str], select: str, where: str = "", params: list | None = None) -> list[tuple]:
    """``select`` (a SELECT ... FROM events) for the events with these ids (and, with
    ``where``, that condition, its ``params``), joined against a registered id list:
    list_contains per row would scan quadratically."""
    con = store.reader()
    name = f"_ids_{threading.get_ident()}"
    con.register(name, pa.table({"_id": pa.array(ids, pa.string())}))
    try:
        return con.execute(f"{select} SEMI JOIN {name} ON events.id = {name}._id" + (f" WHERE {where}" if where else ""),
                           params or []).fetchall()
    finally:
        con.unregister(name)


@dataclass(frozen=True, slots=True)
class RefreshStats:
    added: int
    removed: int
    encoded: int  # documents that got term weights (each of their units encoded now or before)
    seconds: float
    fts_backend: str
    texts_encoded: int = 0  # distinct units the sparse encoder actually read
    embedded: int = 0  # events whose passages and sentences all have Embedder vectors now


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
        # Texts per encoder call: between two calls progress is reported, a cancel is
        # seen and the work done is stored. 64 rather than 256: the encoder reads 64
        # tokens, so its length sorting within a call saves nothing more (1,024 texts:
        # 36-39 docs/s either way, on a loaded machine) while progress moves about every
        # second instead of every four, and a cancel stops that much sooner.
        self.encode_batch = encode_batch
        if path is None:
            path = ":memory:" if store.path == ":memory:" else index_path(store.path)
        self.path = str(path)
        self._lock = threading.RLock()
        # what the refresh holding the lock is doing: (stage, done, total, started), for
        # a question that waits for it (:meth:`refresh`'s ``waiting``)
        self._busy: tuple[str, int, int, float] | None = None
        # what RETRIEVE found for a search, while the documents stay the same (SearchMemo)
        self.memo = SearchMemo()
        try:
            # a bounded buffer pool, as the store's: DuckDB's default (80% of RAM) kept
            # 581 MB of the 1M-event index resident after four questions
            self._db = duckdb.connect(self.path, config={"memory_limit": SEARCH_MEMORY_LIMIT})
        except duckdb.Error as exc:
            raise RetrievalIndexError(f"cannot open the retrieval index {self.path}: {exc}; "
                              "run 'hindsight doctor --repair' to rebuild it from your events") from exc
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        self._reset_if_stale()
        # Each distinct document text once (doc_texts), events pointing at it (docs):
        # at a million events 375,000 texts for 960,000 events. Full-text search indexes
        # the distinct texts. No primary keys: a refresh adds only ids the table lacks
        # (under the index's lock, in one transaction), and a key's own index took
        # 69 MB of the file at a million events, for each of two tables.
        self._migrate_documents()
        self._db.execute(f"CREATE TABLE IF NOT EXISTS docs {DOCS_TABLE}")
        self._db.execute(f"CREATE TABLE IF NOT EXISTS doc_texts {DOC_TEXTS_TABLE}")
        # each document's sparse units (engine.retrieval.units.sparse_units), each
        # distinct unit's text once, and the term weights of those encoded
        # a bag is a distinct set of units: the plays of a song from one device share
        # one, so a search scores bags and a document is one row (doc_bags), not fifteen
        self._db.execute("CREATE TABLE IF NOT EXISTS doc_bags (id VARCHAR NOT NULL, bag BIGINT NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS bags (bag BIGINT NOT NULL, unit BIGINT NOT NULL)")
        self._db.execute("CREATE OR REPLACE VIEW doc_units AS "
                         "SELECT d.id, b.unit FROM doc_bags d JOIN bags b USING (bag)")
        self._db.execute("CREATE TABLE IF NOT EXISTS units (unit BIGINT NOT NULL, text VARCHAR NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS unit_terms (unit BIGINT NOT NULL, term VARCHAR NOT NULL, "
                         "weight FLOAT NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS units_done (id BIGINT NOT NULL)")
        # documents all of whose units are encoded
        self._db.execute(f"CREATE TABLE IF NOT EXISTS sparse_done {SPARSE_DONE_TABLE}")
        create_ref_tables(self._db)
        # with an Embedder: each passage's vector, so RETRIEVE need not embed candidates
        self.vectors = PassageVectors(self._db, embedder) if embedder is not None else None
        self._fts_backend = self._load_fts()
        self._bm25 = None  # (retriever, ids) when the fallback is in use
        # DuckDB's FTS index lives in the file: a process that finds it built over
        # the very documents it holds uses it (rebuilding took 2.3 s for 38k events,
        # paid by every session's first question)
        self._fts_dirty = not self._fts_current()
        # the store's fingerprint (_store_fingerprint) when a refresh last finished whole:
        # while it is the same, a refresh has nothing to do
        self._refreshed_at: tuple | None = None

    def _reset_if_stale(self) -> None:
        """Documents written by another verbalisation, or term weights of another
        encoder, are dropped and rebuilt rather than mixed with new ones."""
        encoder = "" if self.sparse is None else (getattr(self.sparse, "name", "") or type(self.sparse).__name__)
        meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("doc_version", DOC_VERSION) != DOC_VERSION:
            log.info("retrieval index %s: document format changed; rebuilding", self.path)
            self._db.execute("DROP VIEW IF EXISTS doc_units")
            self._db.execute("DROP SCHEMA IF EXISTS fts_main_docs CASCADE")
            self._db.execute("DROP SCHEMA IF EXISTS fts_main_doc_texts CASCADE")
            for table in ("docs", "doc_texts", "doc_bags", "bags", "units", "unit_terms", "units_done", "sparse_done",
                          "texts", "passage_refs", "sentence_refs", "text_vectors",
                          # an older layout's
                          "sparse_terms", "passage_vectors", "sentence_vectors", "vectors_done"):
                self._db.execute(f"DROP TABLE IF EXISTS {table}")
            self._db.execute("DELETE FROM meta WHERE key = 'fts_docs'")
        elif encoder and meta.get("sparse_encoder", encoder) != encoder:
            log.info("retrieval index %s: sparse encoder changed to %s; re-encoding", self.path, encoder)
            for table in ("unit_terms", "units_done", "sparse_done"):
                self._db.execute(f"DROP TABLE IF EXISTS {table}")
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('doc_version', ?)", [DOC_VERSION])
        if encoder:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('sparse_encoder', ?)", [encoder])

    def _migrate_documents(self) -> None:
        """An index an older version wrote, in this layout: documents as
        ``docs(id, doc)`` become ``docs(id, dh)`` and ``doc_texts(dh, doc)``, and the
        primary keys of ``docs`` and ``sparse_done`` go (the same rows; nothing is
        encoded again; the full-text index is built anew at the next search)."""
        columns = {r[0] for r in self._db.execute(
            "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = 'docs'").fetchall()}
        keyed = {r[0] for r in self._db.execute(
            "SELECT table_name FROM duckdb_constraints() WHERE schema_name = 'main' "
            "AND constraint_type = 'PRIMARY KEY'").fetchall()}
        if "doc" not in columns and "sparse_done" not in keyed:
            return
        log.info("retrieval index %s: documents stored once per distinct text", self.path)
        self._db.begin()
        try:
            if "doc" in columns:
                texts = [r[0] for r in self._db.execute("SELECT DISTINCT doc FROM docs").fetchall()]
                self._db.register("_doc_keys", pa.table({"dh": pa.array([text_key(t) for t in texts], pa.int64()),
                                                         "doc": pa.array(texts, pa.string())}))
                try:
                    self._db.execute(f"CREATE TABLE doc_texts {DOC_TEXTS_TABLE}")
                    self._db.execute("INSERT INTO doc_texts SELECT dh, doc FROM _doc_keys")
                    self._db.execute(f"CREATE TABLE _docs {DOCS_TABLE}")
                    self._db.execute("INSERT INTO _docs SELECT d.id, k.dh FROM docs d JOIN _doc_keys k USING (doc)")
                finally:
                    self._db.unregister("_doc_keys")
                self._db.execute("DROP TABLE docs")
                self._db.execute("ALTER TABLE _docs RENAME TO docs")
                self._db.execute("DROP SCHEMA IF EXISTS fts_main_docs CASCADE")
                self._db.execute("DELETE FROM meta WHERE key = 'fts_docs'")
            if "sparse_done" in keyed:
                self._db.execute(f"CREATE TABLE _done {SPARSE_DONE_TABLE}")
                self._db.execute("INSERT INTO _done SELECT * FROM sparse_done")
                self._db.execute("DROP TABLE sparse_done")
                self._db.execute("ALTER TABLE _done RENAME TO sparse_done")
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise

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
                progress: Callable[[str, int, int], None] | None = None,
                waiting: Callable[[str, int, int, float], None] | None = None) -> RefreshStats:
        """Index events added to the store since the last refresh; forget removed ones.

        ``progress(stage, done, total)``: stage "documents" counts events as they are
        verbalised and cut into units (:mod:`engine.retrieval.units`), "sparse" counts
        documents as their units get term weights, "vectors" counts events by the share
        of the distinct texts without a vector that the Embedder has done (with an Embedder). Another thread's refresh is
        waited for (the work is shared, never done twice), and ``waiting(stage, done,
        total, seconds)`` is told once what that refresh is doing; a ``cancel`` stops
        the wait as well as the work, keeping what was finished. Every stage stores its
        work as it goes: a refresh killed halfway loses at most one encoder batch."""
        t0 = time.perf_counter()
        if not self._acquire(cancel, waiting):
            return RefreshStats(0, 0, 0, time.perf_counter() - t0, self._fts_backend)
        try:
            seen = self._store_fingerprint()
        except BaseException:
            self._lock.release()
            raise
        if seen == self._refreshed_at:  # the store is as the last whole refresh left it
            self._lock.release()
            return RefreshStats(0, 0, 0, time.perf_counter() - t0, self._fts_backend)

        def report(stage: str, done: int, total: int) -> None:
            self._busy = (stage, done, total, t0)
            if progress:
                progress(stage, done, total)

        try:
            with self._building(read_store=True) as work:
                self._busy = ("documents", 0, 0, t0)
                added, removed = self._add_documents(cancel, report)
                work["rows"] = added + removed
                if added or removed:
                    self._fts_dirty = True
                encoded, texts = self._encode_missing(cancel, report)
                embedded = 0
                if self.vectors is not None:
                    before = self.vectors.unembedded_events()
                    # the embedder's work is counted in distinct texts; progress says it in
                    # events, as the other stages do (the share of the texts done, of them)
                    if before and self.vectors.embed_missing(cancel, lambda stage, done, total: report(
                            stage, before * done // total, before)):
                        embedded = before - self.vectors.unembedded_events()
                work["rows"] = max(added + removed, encoded, embedded)
                if added or removed or encoded or embedded:  # searches would find otherwise now
                    self.memo.clear()
                if cancel is None or not cancel.is_set():
                    self._refreshed_at = seen
                return RefreshStats(added, removed, encoded, time.perf_counter() - t0, self._fts_backend, texts,
                                    embedded)
        finally:
            self._busy = None
            self._lock.release()

    @contextmanager
    def _building(self, *, read_store: bool = False):
        """The buffer pool at :data:`INDEX_MEMORY_LIMIT` while the index is built, and
        back to :data:`SEARCH_MEMORY_LIMIT` after (DuckDB evicts what no longer fits;
        failing to shrink it only costs memory, so that is logged, not raised). The
        body says in the dict it is given how many rows it wrote (``rows``): after
        :data:`REOPEN_AFTER_ROWS` or more the file is opened again (:meth:`_reopen`),
        and with ``read_store`` (the body read the store's events) the store's buffer
        pool gives back what it cached of them (``EventStore.release_cache``)."""
        self._db.execute(f"SET memory_limit = '{INDEX_MEMORY_LIMIT}'")
        work = {"rows": 0}
        try:
            yield work
        finally:
            try:
                self._db.execute(f"SET memory_limit = '{SEARCH_MEMORY_LIMIT}'")
            except duckdb.Error as exc:
                log.warning("could not shrink the index's buffer pool: %s", exc)
            if work["rows"] >= REOPEN_AFTER_ROWS:
                if self.path != ":memory:":
                    self._reopen()
                # a refresh read the store's events: its pool keeps them otherwise
                if read_store and hasattr(self.store, "release_cache"):
                    self.store.release_cache()

    def _reopen(self) -> None:
        """Close the index file and open it again, so that DuckDB and the C heap give
        back what a large build used (see :data:`REOPEN_AFTER_ROWS`). Called with the
        lock held; nothing registered or temporary outlives a build."""
        self._db.close()
        try:
            self._db = duckdb.connect(self.path, config={"memory_limit": SEARCH_MEMORY_LIMIT})
        except duckdb.Error as exc:
            raise RetrievalIndexError(f"cannot open the retrieval index {self.path} again: {exc}; "
                                      "run 'hindsight doctor --repair' to rebuild it from your events") from exc
        self._fts_backend = self._load_fts()
        if self.vectors is not None:
            self.vectors.reconnect(self._db)
        give_back_free_pages()

    def _store_fingerprint(self) -> tuple:
        """What changes whenever events are added to or removed from the store: their
        count and two sums of their ids' hashes. At a million events it takes 52 ms,
        where finding the new and the removed ids took 0.33 s on every question."""
        return tuple(self.store.reader().execute(
            "SELECT count(*), bit_xor(hash(id)), sum(hash(id)) FROM events").fetchone())

    def _add_documents(self, cancel, report) -> tuple[int, int]:
        """Documents, units and passage references for the store's new events; those of
        removed events dropped. Returns (added, removed)."""
        store_ids = self.store.reader().execute("SELECT DISTINCT id FROM events").to_arrow_table()
        self._db.register("_store_ids", store_ids)
        try:
            removed = self._db.execute(
                "DELETE FROM docs WHERE id NOT IN (SELECT id FROM _store_ids) RETURNING id").fetchall()
            if removed:
                for table in ("doc_bags", "sparse_done", "passage_refs", "sentence_refs"):
                    self._db.execute(f"DELETE FROM {table} WHERE id NOT IN (SELECT id FROM docs)")
                self._db.execute("DELETE FROM doc_texts WHERE dh NOT IN (SELECT dh FROM docs)")
            # kept as Arrow, not as a million Python strings (see _write_documents)
            new_ids = self._db.execute(
                "SELECT id FROM _store_ids WHERE id NOT IN (SELECT id FROM docs)").to_arrow_table().column(0)
        finally:
            self._db.unregister("_store_ids")
        added = 0
        memo: dict[int, tuple] = {}  # an event's neural view (its key) -> what its texts are (their keys)
        bags: dict[tuple, int] = {}  # unit keys -> their bag
        for i in range(0, len(new_ids), DOCUMENT_CHUNK):
            if cancel is not None and cancel.is_set():
                break
            rows = read_events(self.store, new_ids[i:i + DOCUMENT_CHUNK].to_pylist(),
                               "SELECT id, source, kind, title, text, attributes FROM events")
            added += self._write_documents({r[0]: r for r in reversed(rows)}.values(), memo, bags)
            report("documents", added, len(new_ids))
        return added, len(removed)

    def _write_documents(self, rows, memo: dict, bags: dict) -> int:
        """Store the documents of ``rows`` and what they are made of.

        ``memo`` and ``bags`` live for one refresh. The memo keeps, per distinct neural
        view (:func:`engine.retrieval.units.view_key`), only the keys of what the view
        is made of: its bag of units, its passages', its sentences'. The texts
        themselves were stored by the chunk that met the view first. Kept as texts (up
        to 100,000 views of tuples of strings), the memo's small objects spread over
        ~200 MB of Python's arenas at 300,000 events, which the few objects that
        outlived the refresh then held resident."""
        ids, dhs, du_id, du_unit, b_bag, b_unit, p_id, p_n, p_h, s_id, s_h = ([] for _ in range(11))
        docs: dict[int, str] = {}
        unit_texts: dict[int, str] = {}
        texts: dict[int, str] = {}
        for event_id, source, kind, title, text, attrs in rows:
            pairs = key_values(source, kind, title, text, orjson.loads(attrs) if attrs else {})
            ids.append(event_id)
            doc = verbalise(pairs)
            dh = text_key(doc)
            docs[dh] = doc
            dhs.append(dh)
            view = neural_pairs(pairs)
            vk = view_key(view)
            made = memo.get(vk) if vk is not None else None
            if made is None:
                units, passages, said = event_texts(pairs, source, kind, title, text, view)
                unit_keys = tuple(text_key(u) for u in units)
                bag = bags.get(unit_keys)
                if bag is None:
                    if len(bags) > 100_000:
                        bags.clear()
                    bag = bags[unit_keys] = text_key(",".join(map(str, unit_keys)))
                    for u, k in zip(units, unit_keys):
                        unit_texts[k] = u
                        b_bag.append(bag); b_unit.append(k)
                passage_keys = []
                for passage in passages:
                    passage = passage[:SIMILARITY_CHARS]
                    k = text_key(passage)
                    texts[k] = passage
                    passage_keys.append(k)
                sentence_keys = []
                for sentence in said:
                    k = text_key(sentence)
                    texts[k] = sentence
                    sentence_keys.append(k)
                made = (bag, tuple(passage_keys), tuple(sentence_keys))
                if vk is not None:
                    if len(memo) > MEMO_VIEWS:
                        memo.clear()
                    memo[vk] = made
            bag, passage_keys, sentence_keys = made
            du_id.append(event_id); du_unit.append(bag)
            for n, k in enumerate(passage_keys):
                p_id.append(event_id); p_n.append(n); p_h.append(k)
            for k in sentence_keys:
                s_id.append(event_id); s_h.append(k)
        tables = {
            "_new_docs": pa.table({"id": pa.array(ids, pa.string()), "dh": pa.array(dhs, pa.int64())}),
            "_new_doc_texts": pa.table({"dh": pa.array(list(docs), pa.int64()),
                                        "doc": pa.array(list(docs.values()), pa.string())}),
            "_new_doc_bags": pa.table({"id": pa.array(du_id, pa.string()), "bag": pa.array(du_unit, pa.int64())}),
            "_new_bags": pa.table({"bag": pa.array(b_bag, pa.int64()), "unit": pa.array(b_unit, pa.int64())}),
            "_new_units": pa.table({"unit": pa.array(list(unit_texts), pa.int64()),
                                    "text": pa.array(list(unit_texts.values()), pa.string())}),
            "_new_prefs": pa.table({"id": pa.array(p_id, pa.string()), "n": pa.array(p_n, pa.int32()),
                                    "h": pa.array(p_h, pa.int64())}),
            "_new_srefs": pa.table({"id": pa.array(s_id, pa.string()), "h": pa.array(s_h, pa.int64())}),
            "_new_texts": pa.table({"h": pa.array(list(texts), pa.int64()),
                                    "text": pa.array(list(texts.values()), pa.string())}),
        }
        for name, table in tables.items():
            self._db.register(name, table)
        try:
            self._db.begin()  # a document is stored with all it is made of, or not at all
            self._db.execute("INSERT INTO docs SELECT * FROM _new_docs")
            self._db.execute("INSERT INTO doc_texts SELECT * FROM _new_doc_texts ANTI JOIN doc_texts USING (dh)")
            self._db.execute("INSERT INTO doc_bags SELECT * FROM _new_doc_bags")
            self._db.execute("INSERT INTO bags SELECT * FROM _new_bags SEMI JOIN "
                             "(SELECT DISTINCT bag FROM _new_bags ANTI JOIN bags USING (bag)) USING (bag)")
            self._db.execute("INSERT INTO units SELECT * FROM _new_units ANTI JOIN units USING (unit)")
            self._db.execute("INSERT INTO passage_refs SELECT * FROM _new_prefs")
            self._db.execute("INSERT INTO sentence_refs SELECT * FROM _new_srefs")
            self._db.execute("INSERT INTO texts SELECT * FROM _new_texts ANTI JOIN texts USING (h)")
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        finally:
            for name in tables:
                self._db.unregister(name)
        return len(ids)

    def _acquire(self, cancel: threading.Event | None, waiting=None) -> bool:
        """The index lock; False if ``cancel`` is set while another refresh holds it.
        ``waiting`` is told once what the refresh holding it does."""
        if self._lock.acquire(blocking=False):
            return True
        if waiting is not None:
            busy = self._busy
            if busy is not None:
                stage, done, total, started = busy
                waiting(stage, done, total, time.perf_counter() - started)
        if cancel is None:
            return self._lock.acquire()
        while not self._lock.acquire(timeout=0.1):
            if cancel.is_set():
                return False
        return True

    def refreshing(self) -> tuple[str, int, int, float] | None:
        """What a refresh running now does: (stage, done, total, seconds so far), or None."""
        busy = self._busy
        return None if busy is None else (busy[0], busy[1], busy[2], time.perf_counter() - busy[3])

    def _encode_missing(self, cancel, report) -> tuple[int, int]:
        """Term weights for every document without them: each of its units not encoded
        yet is encoded (once, however many documents share it). Returns (documents,
        units encoded). The missing units are encoded in the order of the first
        document (by id) that needs each; the units of each encoder batch are stored
        with the documents they complete, as soon as they are encoded.

        The work is planned set-wise, once: which units are missing, and for each
        document the position of the last of them it needs. Asking that of every
        chunk of 1,024 documents scanned the whole index each time, quadratic in the
        documents: at 300,000 events, profiled, those queries took 26 s of the
        stage's 68 s (the encoder 42 s); set-wise the stage takes 44 s unprofiled."""
        if self.sparse is None:
            return 0, 0
        db = self._db
        db.execute("CREATE OR REPLACE TEMP TABLE _sparse_todo AS SELECT id FROM docs ANTI JOIN sparse_done USING (id)")
        try:
            total = db.execute("SELECT count(*) FROM _sparse_todo").fetchone()[0]
            if not total:
                return 0, 0
            report("sparse", 0, total)
            missing = db.execute(
                "SELECT n.unit, u.text FROM (SELECT b.unit, min(t.id) AS first FROM _sparse_todo t "
                "JOIN doc_bags d USING (id) JOIN bags b USING (bag) GROUP BY b.unit) n "
                "ANTI JOIN units_done x ON x.id = n.unit JOIN units u USING (unit) ORDER BY n.first, n.unit").fetchall()
            db.register("_sparse_pos", pa.table({"unit": pa.array([u for u, _ in missing], pa.int64()),
                                                 "pos": pa.array(range(len(missing)), pa.int64())}))
            try:
                # each document's last missing unit (-1: none), documents in that order
                db.execute(
                    "CREATE OR REPLACE TEMP TABLE _sparse_last AS "
                    "WITH bag_last AS (SELECT b.bag, max(p.pos) AS last FROM bags b JOIN _sparse_pos p USING (unit) "
                    "                  GROUP BY b.bag) "
                    "SELECT t.id, coalesce(max(l.last), -1) AS last FROM _sparse_todo t "
                    "LEFT JOIN doc_bags d USING (id) LEFT JOIN bag_last l USING (bag) "
                    "GROUP BY t.id ORDER BY last, t.id")
            finally:
                db.unregister("_sparse_pos")

            def ready(lo: int, hi: int) -> pa.Table:
                return db.execute("SELECT id FROM _sparse_last WHERE last >= ? AND last < ?", [lo, hi]).to_arrow_table()

            # documents whose units were all encoded before are done now
            done = len(db.execute("INSERT INTO sparse_done SELECT id FROM _sparse_last WHERE last < 0 "
                                  "RETURNING id").fetchall())
            texts = 0
            if done:
                report("sparse", done, total)
            for j in range(0, len(missing), self.encode_batch):
                if cancel is not None and cancel.is_set():
                    break
                batch = missing[j:j + self.encode_batch]
                weights = self.sparse.encode([t for _, t in batch])
                units, terms, ws = [], [], []
                for (unit, _), vec in zip(batch, weights):
                    for term, w in vec.items():
                        if w > 0:
                            units.append(unit); terms.append(term); ws.append(float(w))
                completed = ready(j, j + len(batch))
                append_done(db, "unit_terms", pa.table({
                    "unit": pa.array(units, pa.int64()), "term": pa.array(terms, pa.string()),
                    "weight": pa.array(ws, pa.float32())}), "units_done", [u for u, _ in batch], id_type=pa.int64(),
                    more={"sparse_done": completed})
                texts += len(batch)
                done += completed.num_rows
                report("sparse", done, total)
            return done, texts
        finally:
            db.execute("DROP TABLE IF EXISTS _sparse_todo")
            db.execute("DROP TABLE IF EXISTS _sparse_last")

    def term_weights(self, ids: list[str] | None = None) -> dict[str, dict[str, float]]:
        """Each document's SPLADE term weights: the maximum over its units."""
        where = "" if ids is None else "WHERE list_contains(?, d.id)"
        out: dict[str, dict[str, float]] = {}
        for doc_id, term, w in self._db.execute(
                f"SELECT d.id, t.term, max(t.weight) FROM doc_units d JOIN unit_terms t USING (unit) {where} "
                "GROUP BY d.id, t.term", [] if ids is None else [ids]).fetchall():
            out.setdefault(doc_id, {})[term] = w
        return out

    def _docs_fingerprint(self) -> str:
        n, h = self._db.execute("SELECT count(*), coalesce(sum(hash(id, dh)), 0) FROM docs").fetchone()
        return f"{n}:{h}"

    def _fts_current(self) -> bool:
        """Whether the file holds a DuckDB FTS index built over the documents it holds now."""
        if self._fts_backend != "duckdb-fts":
            return False
        built = self._db.execute("SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'fts_main_doc_texts' "
                                 "AND table_name = 'docs'").fetchone()[0]
        stored = self._db.execute("SELECT value FROM meta WHERE key = 'fts_docs'").fetchone()
        return bool(built) and stored is not None and stored[0] == self._docs_fingerprint()

    def _ensure_fts(self) -> None:
        if not self._fts_dirty:
            return
        if self._fts_backend == "duckdb-fts":
            # DuckDB's FTS index is not incremental; rebuilding it is cheap next to encoding
            with self._building() as work:
                self._db.execute("PRAGMA create_fts_index('doc_texts', 'dh', 'doc', overwrite=1)")
                work["rows"] = self._db.execute("SELECT count(*) FROM doc_texts").fetchone()[0]
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('fts_docs', ?)", [self._docs_fingerprint()])
        else:
            try:
                import bm25s
            except ImportError as exc:
                raise RetrievalIndexError("full-text search needs the duckdb-extension-fts package (or bm25s); "
                                  "install duckdb-extension-fts==" + duckdb.__version__) from exc
            rows = self._db.execute("SELECT t.dh, t.doc, list(d.id ORDER BY d.id) FROM doc_texts t "
                                    "JOIN docs d USING (dh) GROUP BY t.dh, t.doc ORDER BY t.dh").fetchall()
            retriever = bm25s.BM25()
            retriever.index(bm25s.tokenize([d for _, d, _ in rows], stopwords=LANGUAGE, show_progress=False),
                            show_progress=False)
            self._bm25 = (retriever, [ids for _, _, ids in rows])
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
                return [(r[0], float(r[1])) for r in self._db.execute(BM25_TOP, [query, limit]).fetchall()]
            import bm25s
            retriever, ids = self._bm25
            # every document has an event: the best ``limit`` documents hold the best events
            k = min(limit, len(ids))
            docs, scores = retriever.retrieve(bm25s.tokenize([query], stopwords=LANGUAGE, show_progress=False),
                                              k=k, show_progress=False)
            hits = sorted(((i, float(s)) for d, s in zip(docs[0], scores[0]) if s > 0 for i in ids[int(d)]),
                          key=lambda hit: (-hit[1], hit[0]))
            return hits[:limit]

    def sparse_search(self, query: str, limit: int) -> list[tuple[str, float]]:
        if self.sparse is None:
            return []
        qvec = {t: float(w) for t, w in self.sparse.encode([query])[0].items() if w > 0}
        if not qvec:
            return []
        with self._lock:
            self._db.register("_q", pa.table({"term": list(qvec), "qw": list(qvec.values())}))
            try:
                # a document's weight for a term is the largest of its units' (SPLADE's own pooling)
                return [(r[0], float(r[1])) for r in self._db.execute(
                    "WITH s AS (SELECT bag, sum(best) AS score FROM (SELECT b.bag, t.term, "
                    "max(t.weight) * any_value(q.qw) AS best FROM unit_terms t JOIN _q q USING (term) "
                    "JOIN bags b USING (unit) GROUP BY b.bag, t.term) GROUP BY bag) "
                    "SELECT d.id, s.score FROM doc_bags d JOIN s USING (bag) ORDER BY s.score DESC, d.id LIMIT ?",
                    [limit]).fetchall()]
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
            return dict(self._db.execute("SELECT d.id, t.doc FROM docs d JOIN doc_texts t USING (dh) "
                                         "WHERE list_contains(?, d.id)", [ids]).fetchall())
