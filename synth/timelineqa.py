"""The TimelineQA life in shared data (facebookresearch/TimelineQA, category sparse,
seed 0, year 2022) as a benchmark: its diary sentences written as Markdown daily
notes for the journal importer, and its 36 multi-hop and 100 atomic questions with
gold answers.

The generator's parsed multi-hop answers are partly broken (split on commas, empty
results, sqlite quirks). Each multi-hop answer is therefore recomputed by running
the generator's own SQL from ``queries.csv`` over the ``*-log.csv`` tables in
DuckDB; where that differs from the shipped answer, the recomputed one is used and
the question is marked ``recomputed``. This module reads the shared data; it never
writes anywhere but the folder it is given.
"""
from __future__ import annotations

import csv
import json
import logging
import re
from dataclasses import dataclass
from datetime import date, datetime
import os
from pathlib import Path
from typing import Any

import duckdb

log = logging.getLogger(__name__)

def _default_data_dir() -> Path:
    """$HINDSIGHT_TIMELINEQA_DIR, else ``shared/data/timelineqa`` beside the checkout."""
    env = os.environ.get("HINDSIGHT_TIMELINEQA_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "timelineqa"


DATA_DIR = _default_data_dir()
#: The generator ran for year 2022 and logged events through 2022-12-31; relative
#: questions ("how many times ... in total") are asked from the end of that year.
TODAY = date(2022, 12, 31)

# ``df1`` in queries.csv is the log with one row per element of its list column.
_EXPLODED = {"daily_chat-log.csv": "friends", "daily_meal-log.csv": "people_string",
             "weekly_bakeorcook-log.csv": "cuisine", "weekly_grocery-log.csv": "fruits",
             "weekly_hobby-log.csv": "people_string"}
_NUMERIC = ("howlong", "heart_rate")
# Fixes to the generator's SQL that no mechanical translation can make: q25 counts
# without GROUP BY (sqlite returns one arbitrary row), so "favourite hobby" was the
# first hobby scanned rather than the most frequent one.
_SQL_FIXES = {
    "q25": "select hobbies, max(num) from (select hobbies, count(date) as num from "
           "(select date, hobbies from df1 where year = '2018') group by hobbies)",
}


class TimelineQAError(ValueError):
    """The TimelineQA files are missing or not shaped as expected (names the file)."""


@dataclass(frozen=True, slots=True)
class Query:
    qid: str
    sql: str
    question: str
    datafiles: tuple[str, ...]
    answer_column: str


def _data(data_dir: Path | None) -> Path:
    d = Path(data_dir) if data_dir is not None else DATA_DIR
    if not (d / "db-sparse-0.json").is_file() or not (d / "sparse-0").is_dir():
        raise TimelineQAError(f"{d}: expected db-sparse-0.json and sparse-0/ (TimelineQA sparse-0)")
    return d


# --------------------------------------------------------------------------- notes
def write_notes(out_dir: str | Path, data_dir: str | Path | None = None) -> list[Path]:
    """One Markdown note per diary day (``YYYY-MM-DD.md``) holding that day's episode
    sentences, one paragraph each. Returns the written paths."""
    d = _data(data_dir)
    path = d / "sparse-0" / "sparse-0.json"
    with open(path, encoding="utf-8") as f:
        days = json.load(f)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for key in sorted(days):
        try:
            day = datetime.strptime(key, "%Y/%m/%d").date()
        except ValueError as exc:
            raise TimelineQAError(f"{path}: day key {key!r} is not YYYY/MM/DD") from exc
        episodes = days[key]
        if not isinstance(episodes, dict):
            raise TimelineQAError(f"{path}: day {key} is not an object of episodes")
        paragraphs = []
        for name in sorted(episodes):
            text = (episodes[name] or {}).get("text_template_based") or ""
            text = " ".join(str(text).split())
            if text:
                paragraphs.append(text)
        if not paragraphs:
            continue
        p = out / f"{day.isoformat()}.md"
        with open(p, "w", encoding="utf-8", newline="\n") as f:
            f.write(f"# {day.isoformat()}\n\n" + "\n\n".join(paragraphs) + "\n")
        written.append(p)
    return written


# --------------------------------------------------------------------------- SQL
def load_queries(data_dir: str | Path | None = None) -> list[Query]:
    path = _data(data_dir) / "sparse-0" / "queries.csv"
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or not {"q_id", "query", "question", "datafiles", "answer_column"} <= set(rows[0]):
        raise TimelineQAError(f"{path}: expected columns q_id, query, question, datafiles, answer_column")
    return [Query(r["q_id"], r["query"], r["question"], tuple(x.strip() for x in r["datafiles"].split(",")),
                  r["answer_column"]) for r in rows]


def _connect(data_dir: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.execute("SET enable_progress_bar = false")
    # sqlite's datetime() over the logs' 'YYYY/MM/DD' and 'YYYY-MM-DD HH:MM:SS' strings
    con.execute("CREATE MACRO datetime(s) AS CAST(replace(s, '/', '-') AS TIMESTAMP)")
    return con


def _table_sql(path: Path) -> str:
    """The log as queries.csv expects it: text columns, numbers where summed, and the
    year/month (unpadded, as text) the SQL filters on."""
    con = duckdb.connect(":memory:")
    cols = [r[0] for r in con.execute("SELECT * FROM read_csv(?, all_varchar=true, header=true) LIMIT 0",
                                      [str(path)]).description]
    con.close()
    select = ["* EXCLUDE (" + ", ".join(c for c in cols if c in _NUMERIC) + ")"] if any(c in _NUMERIC for c in cols) else ["*"]
    select += [f"TRY_CAST({c} AS DOUBLE) AS {c}" for c in cols if c in _NUMERIC]
    if "date" in cols:
        select += ["split_part(date, '/', 1) AS year", "CAST(TRY_CAST(split_part(date, '/', 2) AS INTEGER) AS VARCHAR) AS month"]
    if "start_date" in cols:
        select += ["CAST(year(CAST(replace(start_date, '/', '-') AS TIMESTAMP)) AS VARCHAR) AS start_year"]
    return f"SELECT {', '.join(select)} FROM read_csv('{path.as_posix()}', all_varchar=true, header=true)"


_BARE_MAX = re.compile(r"^\s*select\s+(?P<cols>[\w\s,]+?),\s*max\((?P<m>\w+)\)\s+from\s+(?P<rest>.+)$", re.I | re.S)


def translate(sql: str) -> str:
    """sqlite → DuckDB for the one construct the generator relies on: a bare column
    next to ``max(x)`` takes its value from the row holding the maximum; among ties
    sqlite keeps the first group in key order (NULL first)."""
    m = _BARE_MAX.match(sql)
    if not m:
        return sql
    rest = m.group("rest").strip()
    depth = 0
    for i, ch in enumerate(rest):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and rest[i:i + 9].lower() == " group by":
            return sql  # a real GROUP BY: DuckDB agrees with sqlite
    cols = [c.strip() for c in m.group("cols").split(",")]
    metric = m.group("m")
    order = ", ".join(f"{c} ASC NULLS FIRST" for c in cols)
    return f"SELECT {', '.join(cols)}, {metric} FROM {rest} ORDER BY {metric} DESC NULLS LAST, {order} LIMIT 1"


def run_query(q: Query, con: duckdb.DuckDBPyConnection, data_dir: Path) -> list[list[Any]]:
    """The query's answer rows, per its ``answer_column`` ("1", "1,2" or "1,:")."""
    base = data_dir / "sparse-0"
    main = base / q.datafiles[0]
    con.execute(f"CREATE OR REPLACE TEMP VIEW df AS {_table_sql(main)}")
    col = _EXPLODED.get(q.datafiles[0])
    if col:
        con.execute(f"CREATE OR REPLACE TEMP VIEW df1 AS SELECT * EXCLUDE ({col}), "
                    f"trim(unnest(coalesce(string_split({col}, ','), [NULL]))) AS {col} FROM df")
    else:
        con.execute("CREATE OR REPLACE TEMP VIEW df1 AS SELECT * FROM df")
    if len(q.datafiles) > 1:
        con.execute(f"CREATE OR REPLACE TEMP VIEW df2 AS {_table_sql(base / q.datafiles[1])}")
    sql = translate(_SQL_FIXES.get(q.qid, q.sql))
    try:
        rows = con.execute(sql).fetchall()
    except duckdb.Error as exc:
        raise TimelineQAError(f"queries.csv {q.qid}: {exc}") from exc
    # "1", "1,2": those columns; "1,:": column 1. The generator keeps every row.
    cols = [int(s) - 1 for s in q.answer_column.split(",") if s.strip().isdigit()]
    picked = [[_value(r[c]) for c in cols] for r in rows]
    return [r for r in picked if any(v not in (None, "") for v in r)]


def _value(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _same(a: list[list[Any]], b: list[list[Any]]) -> bool:
    def norm(rows: list[list[Any]]) -> list[tuple]:
        out = []
        for r in rows:
            vals = []
            for v in r:
                try:
                    vals.append(round(float(v), 6))
                except (TypeError, ValueError):
                    vals.append(str(v).strip())
            out.append(tuple(vals))
        return sorted((r for r in out if any(v != "" for v in r)), key=str)
    return norm(a) == norm(b)


def _category(sql: str) -> str:
    s = sql.lower()
    if "cross join" in s:
        return "join"
    if "date_obj" in s:
        return "temporal"
    if "limit" in s:
        return "ordering"
    if "max(num)" in s or "max(length)" in s:
        return "grouping"
    if "avg(" in s or "count(" in s:
        return "aggregation"
    return "retrieval"


def load_questions(data_dir: str | Path | None = None) -> list[dict]:
    """The 36 multi-hop and 100 atomic questions, each with ``answer`` (rows),
    ``evidence`` (log eids), ``category``, ``today`` and ``recomputed``."""
    d = _data(data_dir)
    path = d / "db-sparse-0.json"
    with open(path, encoding="utf-8") as f:
        db = json.load(f)
    multi = db.get("multihop-questions")
    atomic = db.get("atomic-questions")
    if not isinstance(multi, list) or not isinstance(atomic, list):
        raise TimelineQAError(f"{path}: expected 'multihop-questions' and 'atomic-questions' lists")
    queries = load_queries(d)
    by_text = {" ".join(q.question.split()).lower(): q for q in queries}
    con = _connect(d)
    out: list[dict] = []
    try:
        for i, item in enumerate(multi):
            text = " ".join(item["question"].split())
            q = by_text.get(text.lower())
            if q is None:
                raise TimelineQAError(f"{path}: multi-hop question {i} {text!r} has no query in queries.csv")
            shipped = item.get("answer") or []
            recomputed = run_query(q, con, d)
            broken = not _same(shipped, recomputed)
            out.append({"id": f"timelineqa:{q.qid}", "kind": "multihop", "template": q.qid,
                        "category": _category(q.sql), "question": text,
                        "answer": recomputed if broken else shipped, "generator_answer": shipped,
                        "recomputed": broken, "evidence": [e[2] for e in item.get("evidence_list") or []],
                        "sql": q.sql, "today": TODAY.isoformat()})
    finally:
        con.close()
    for i, item in enumerate(atomic):
        ev = item.get("evidence_list") or []
        kind = re.sub(r"\d+$", "", ev[0][1]) if ev else "unknown"
        out.append({"id": f"timelineqa:atomic{i + 1}", "kind": "atomic", "template": f"atomic:{kind}",
                    "category": f"atomic:{kind}", "question": " ".join(item["question"].split()),
                    "answer": item.get("answer") or [], "generator_answer": item.get("answer") or [],
                    "recomputed": False, "evidence": [e[2] for e in ev], "sql": None,
                    "today": TODAY.isoformat()})
    return out
