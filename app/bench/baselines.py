"""The baselines the product is compared with, on the same models: what a user
would otherwise get from the same local LLM and the same retriever.

* :class:`RagBaseline` — retrieve the top-k events for the question (the retrieval
  index's full-text and sparse candidates, re-scored by the event classifier when
  there is one), put their text in the prompt and let the planner LLM answer in a
  short form.
* :class:`CodeGenBaseline` — the LLM writes one DuckDB SELECT from the question and
  a schema description taken from the store itself; it runs on a read-only
  connection without file access, with a timeout and a row limit. Anything that is
  not a single SELECT is refused before it runs (DuckDB's own parser decides).

Both answer through ``ask(question, today=...) -> engine.answer.Answer`` like the
engine. They are benchmark shells, not product features: nothing in the app uses
them, and they never write to the store.
"""
from __future__ import annotations

import json
import logging
import re
import threading
import time
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from engine.answer import Answer, jsonable

log = logging.getLogger(__name__)

RAG_TOP_K = 20
RAG_CANDIDATES = 100
RAG_DOC_CHARS = 300
SQL_TIMEOUT_S = 20.0
SQL_ROW_LIMIT = 200
_SHORT_ANSWER_TOKENS = 40
_SQL_TOKENS = 256
_ATTR_SAMPLE = 2000
_ATTR_MIN_SHARE = 0.2
_STARTS_LIKE_QUERY = re.compile(r"^\s*(\(\s*)*(select|with|from|values)\b", re.I)


class UnsafeSQL(ValueError):
    """Generated SQL that is not exactly one read-only SELECT; the message says why."""


# --------------------------------------------------------------------------- values
def parse_short_answer(text: str) -> Any:
    """The LLM's short answer as a value: a number, an ISO date string, a list (for
    "a, b, c"), a string, or None for "unknown"."""
    s = text.strip().strip("`").strip()
    s = re.sub(r"^(answer|a)\s*:\s*", "", s, flags=re.I).strip().rstrip(".").strip()
    if not s or s.lower() in ("unknown", "none", "n/a", "i don't know", "nothing", "no answer"):
        return None
    num = s.replace(",", "")
    try:
        return int(num) if re.fullmatch(r"[+-]?\d+", num) else float(num)
    except ValueError:
        pass
    if ";" in s:
        return [p.strip() for p in s.split(";") if p.strip()]
    return s


def _decimal_as_float(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal) else value


def _plain(value: Any) -> Any:
    """A SQL result's values as the engine gives an answer's value, but a DECIMAL as
    a float and any other value as it is (json.dumps's ``default`` sees to those)."""
    return jsonable(value, _decimal_as_float)


# --------------------------------------------------------------------------- RAG
class RagBaseline:
    """Retrieve-then-read over the event store with the planner LLM."""

    def __init__(self, store, index, llm, *, reranker=None, top_k: int = RAG_TOP_K,
                 candidates: int = RAG_CANDIDATES, doc_chars: int = RAG_DOC_CHARS):
        self.store = store
        self.index = index
        self.llm = llm
        self.reranker = reranker
        self.top_k = top_k
        self.candidates = candidates
        self.doc_chars = doc_chars
        self.llm_calls = 0

    instructions = ("You answer questions about one person's own data: events from their music, TV, mail, "
                    "calendar, purchases, workouts, health data, notes and chatbot conversations. Below are the "
                    "events found for the question, one per line with its local start time. Answer with the "
                    "answer only: a number, a date as YYYY-MM-DD, or a name; several names separated by '; '. "
                    "If the events do not tell, answer 'unknown'.\n\n")

    def warm_up(self) -> None:
        preload = getattr(self.llm, "preload", None)
        if callable(preload):
            preload(self.instructions)

    def retrieve(self, question: str) -> list[tuple[str, float]]:
        """Event ids with scores, best first: fused full-text and sparse candidates,
        re-scored by the event classifier when there is one."""
        self.index.refresh()
        fts = self.index.fts_search(question, self.candidates)
        sparse = self.index.sparse_search(question, self.candidates)
        fused: dict[str, float] = {}
        for ranked in (fts, sparse):  # reciprocal-rank fusion: score scales differ
            for rank, (doc_id, _) in enumerate(ranked):
                fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (60 + rank)
        order = sorted(fused, key=lambda i: (-fused[i], i))
        if self.reranker is None or not order:
            return [(i, fused[i]) for i in order[:self.top_k]]
        docs = self.index.documents(order)
        pairs = [(question, docs.get(i, "")) for i in order]
        scores: list[float] = []
        for b in range(0, len(pairs), 64):
            scores.extend(self.reranker.score(pairs[b:b + 64]))
        ranked = sorted(zip(order, scores), key=lambda t: (-t[1], t[0]))
        return ranked[:self.top_k]

    def _context(self, ids: list[str]) -> list[str]:
        from engine.retrieval.index import read_events

        docs = self.index.documents(ids)
        when = {r[0]: r[1] + timedelta(minutes=r[2] or 0) for r in
                read_events(self.store, ids, "SELECT id, start, tz_offset_min FROM events")}
        lines = []
        for i in sorted(ids, key=lambda x: (when.get(x) or datetime.min, x)):
            start = when.get(i)
            lines.append(f"- {start:%Y-%m-%d %H:%M} | {docs.get(i, '')[:self.doc_chars]}" if start
                         else f"- {docs.get(i, '')[:self.doc_chars]}")
        return lines

    def ask(self, question: str, *, today: date | None = None, **_: Any) -> Answer:
        today = today or date.today()
        t0 = time.perf_counter()
        ranked = self.retrieve(question)
        ids = [i for i, _ in ranked]
        lines = self._context(ids)
        t_ret = time.perf_counter()
        prompt = (f"{self.instructions}Today is {today.isoformat()}.\nEvents:\n" + "\n".join(lines)
                  + f"\n\nQuestion: {question}\nAnswer:")
        self.llm_calls += 1
        text = self.llm.complete(prompt, max_tokens=_SHORT_ANSWER_TOKENS, stop=["\n"], temperature=0.0)
        t_end = time.perf_counter()
        value = parse_short_answer(text)
        timings = {"retrieval_ms": (t_ret - t0) * 1000, "reading_ms": (t_end - t_ret) * 1000,
                   "total_ms": (t_end - t0) * 1000}
        return Answer(question, value is not None, value, text.strip() or "(no answer)",
                      plan_text=f"RAG top-{len(ids)}", evidence=tuple(ids), timings=timings, llm_calls=1,
                      today=today)

    def close(self) -> None:
        if self.index is not None and hasattr(self.index, "close"):
            self.index.close()


# --------------------------------------------------------------------------- CodeGen
def open_read_only(store_file: str | Path) -> duckdb.DuckDBPyConnection:
    """A connection that can only read the store: read-only file, no file system or
    network access, configuration locked so generated SQL cannot undo that."""
    try:
        con = duckdb.connect(str(store_file), read_only=True,
                             config={"enable_external_access": False, "memory_limit": "1GB"})
    except duckdb.Error as exc:
        raise OSError(f"cannot open {store_file} read-only for the CodeGen baseline: {exc}") from exc
    con.execute(VIEW_SQL)
    con.execute("SET lock_configuration = true")
    return con


VIEW_NAME = "my_events"
# Local start/end as columns: the store keeps UTC plus the offset, which an LLM
# writing SQL from a schema cannot be expected to apply correctly every time.
VIEW_SQL = (f"CREATE OR REPLACE TEMP VIEW {VIEW_NAME} AS SELECT id, source, kind, title, text, "
            "start + to_minutes(coalesce(tz_offset_min, 0)) AS start_local, "
            '"end" + to_minutes(coalesce(tz_offset_min, 0)) AS end_local, attributes FROM events')


def check_select(sql: str) -> str:
    """``sql`` if it is exactly one SELECT statement, else :class:`UnsafeSQL`."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise UnsafeSQL(f"the SQL does not parse: {exc}") from exc
    if len(statements) != 1:
        raise UnsafeSQL(f"expected one statement, got {len(statements)}")
    st = statements[0]
    if st.type != duckdb.StatementType.SELECT:
        raise UnsafeSQL(f"only SELECT may run, not {st.type.name}")
    # PRAGMA and SHOW are rewritten into SELECTs by the parser; only real queries pass
    if not _STARTS_LIKE_QUERY.match(st.query):
        raise UnsafeSQL(f"only SELECT may run; this starts with {st.query.split()[0]!r}")
    return st.query.strip()


def describe_schema(con: duckdb.DuckDBPyConnection, *, sample: int = _ATTR_SAMPLE,
                    min_share: float = _ATTR_MIN_SHARE) -> str:
    """The view's columns and, per source and kind, the attribute keys most of its
    events have, with an example value — read from the store itself."""
    kinds = con.execute(f"SELECT source, kind, count(*) FROM {VIEW_NAME} GROUP BY 1, 2 ORDER BY 3 DESC").fetchall()
    lines = [f"Table {VIEW_NAME}(id VARCHAR, source VARCHAR, kind VARCHAR, title VARCHAR, text VARCHAR, "
             "start_local TIMESTAMP, end_local TIMESTAMP, attributes JSON) — one row per event; times are local. "
             "Read an attribute with attributes->>'key' (text) or CAST(attributes->>'key' AS DOUBLE).",
             "Sources and kinds (events) with their common attribute keys (example value):"]
    for source, kind, n in kinds:
        rows = con.execute(f"SELECT attributes FROM {VIEW_NAME} WHERE source = ? AND kind = ? AND attributes IS NOT NULL "
                           "LIMIT ?", [source, kind, sample]).fetchall()
        counts: dict[str, int] = {}
        examples: dict[str, str] = {}
        for (raw,) in rows:
            try:
                attrs = json.loads(raw) if isinstance(raw, str) else (raw or {})
            except ValueError:
                continue
            if not isinstance(attrs, dict):
                continue
            for k, v in attrs.items():
                if v in (None, "", [], {}):
                    continue
                counts[k] = counts.get(k, 0) + 1
                if k not in examples:
                    s = json.dumps(v, ensure_ascii=False, default=str)
                    examples[k] = s if len(s) <= 30 else s[:29] + "…"
        keys = [k for k, c in sorted(counts.items(), key=lambda t: -t[1]) if rows and c >= min_share * len(rows)]
        shown = ", ".join(f"{k} ({examples[k]})" for k in keys[:14])
        lines.append(f"- source={source!r} kind={kind!r} ({n:,}): {shown or 'no attributes'}")
    return "\n".join(lines)


class CodeGenBaseline:
    """Text-to-SQL over the store with the planner LLM."""

    def __init__(self, con: duckdb.DuckDBPyConnection, llm, *, timeout_s: float = SQL_TIMEOUT_S,
                 row_limit: int = SQL_ROW_LIMIT):
        self.con = con
        self.llm = llm
        self.timeout_s = timeout_s
        self.row_limit = row_limit
        self.llm_calls = 0
        self.schema = describe_schema(con)
        self.prefix = (
            "You write one DuckDB SQL SELECT statement that answers a question about one person's own data.\n"
            + self.schema + "\n"
            "Rules: query only " + VIEW_NAME + "; filter by source/kind and attributes; compare times with "
            "start_local; for relative dates (last year, last month) use the date on the 'Today is' line; use "
            "DuckDB functions (year(), month(), strftime(), date_trunc(), datediff()). "
            "The first column of the first row is the answer. Write the statement on one line, end it with ';'.\n"
            f"Example: Q: How many mails did I get in May 2023?\nSQL: SELECT count(*) FROM {VIEW_NAME} "
            "WHERE source = 'mail' AND strftime(start_local, '%Y-%m') = '2023-05';\n"
            f"Example: Q: Which calendar event was longest in 2021?\nSQL: SELECT title FROM {VIEW_NAME} "
            "WHERE source = 'calendar' AND year(start_local) = 2021 "
            "ORDER BY end_local - start_local DESC LIMIT 1;\n")

    def warm_up(self) -> None:
        preload = getattr(self.llm, "preload", None)
        if callable(preload):
            preload(self.prefix)

    def _run(self, sql: str) -> list[tuple]:
        # on this connection itself: a cursor would not see its temporary view
        timer = threading.Timer(self.timeout_s, self.con.interrupt)
        timer.start()
        try:
            self.con.execute(sql)
            return self.con.fetchmany(self.row_limit)
        finally:
            timer.cancel()

    def ask(self, question: str, *, today: date | None = None, **_: Any) -> Answer:
        today = today or date.today()
        t0 = time.perf_counter()
        prompt = f"{self.prefix}Today is {today.isoformat()}.\nQ: {question}\nSQL: SELECT"
        self.llm_calls += 1
        text = "SELECT" + self.llm.complete(prompt, max_tokens=_SQL_TOKENS, stop=[";", "\n\n"], temperature=0.0)
        sql = text.strip().replace("\n", " ")
        t_gen = time.perf_counter()

        def fail(message: str) -> Answer:
            now = time.perf_counter()
            return Answer(question, False, None, message, plan_text=sql, llm_calls=1, today=today,
                          timings={"generation_ms": (t_gen - t0) * 1000, "execution_ms": (now - t_gen) * 1000,
                                   "total_ms": (now - t0) * 1000})

        try:
            checked = check_select(sql)
        except UnsafeSQL as exc:
            return fail(f"refused: {exc}")
        try:
            rows = self._run(checked)
        except duckdb.InterruptException:
            return fail(f"the SQL ran longer than {self.timeout_s:.0f} s")
        except duckdb.Error as exc:
            return fail(f"the SQL failed: {str(exc).splitlines()[0]}")
        now = time.perf_counter()
        values = [_plain(r[0]) for r in rows if r and r[0] is not None]
        value: Any = values[0] if len(values) == 1 else (values or None)
        timings = {"generation_ms": (t_gen - t0) * 1000, "execution_ms": (now - t_gen) * 1000,
                   "total_ms": (now - t0) * 1000}
        return Answer(question, True, value, json.dumps(_plain([list(r) for r in rows[:5]]), default=str),
                      plan_text=checked, timings=timings, llm_calls=1, today=today)

    def close(self) -> None:
        self.con.close()
