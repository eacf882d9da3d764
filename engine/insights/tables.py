"""The derived tables of conversation insights, created on first use through the
store's single writer (``CREATE TABLE IF NOT EXISTS``): they can be rebuilt from the
events at any time, so they live outside the store's versioned migrations.

- ``conversation_insights``: one row per ``chat_conversation`` event, what the
  models inferred (summary, key phrases, language, vectors) and its local time;
  ``content_key`` says which input and which models produced it, so a re-import
  recomputes only conversations that changed.
- ``insight_topics``: the discovered taxonomy (level 1 topics, level 2 subtopics),
  with the name inferred (by the LLM, else from key phrases).
- ``insight_name_answers``: the LLM's answers to the topic naming prompts, by
  prompt, so that clustering the same conversations again asks it nothing.
- ``insight_topic_names``: names the user gave (renames and merges) by the inferred
  name they replace, so they survive a re-clustering.
"""
from __future__ import annotations

import duckdb

DDL = """
CREATE TABLE IF NOT EXISTS conversation_insights (
    id VARCHAR PRIMARY KEY,          -- the chat_conversation event's id
    content_key VARCHAR NOT NULL,
    conversation_id VARCHAR,
    title VARCHAR,
    summary VARCHAR NOT NULL,
    phrases JSON NOT NULL,           -- [[phrase, label, count], ...] of this conversation
    keywords JSON NOT NULL,          -- the phrases that set it apart, best first (after clustering)
    language VARCHAR,
    local_date DATE NOT NULL,
    weekday INTEGER NOT NULL,        -- 0 = Monday
    hour INTEGER NOT NULL,
    month VARCHAR NOT NULL,          -- 2024-03
    season VARCHAR NOT NULL,
    vector FLOAT[] NOT NULL,         -- the summary's embedding, L2-normalised
    sparse JSON NOT NULL,            -- SPLADE term -> weight of the summary and key phrases
    topic_id INTEGER,
    subtopic_id INTEGER
);
CREATE TABLE IF NOT EXISTS insight_topics (
    id INTEGER PRIMARY KEY,
    level INTEGER NOT NULL,          -- 1 topic, 2 subtopic
    parent_id INTEGER,
    auto_name VARCHAR NOT NULL,
    keywords JSON NOT NULL,
    size INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS insight_topic_names (
    auto_name VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS insight_name_answers (
    key VARCHAR PRIMARY KEY,         -- the naming prompt's hash
    answer VARCHAR NOT NULL          -- what the LLM answered to it
);
"""


def ensure(con: duckdb.DuckDBPyConnection) -> None:
    """Create the tables if missing (call on the writer thread)."""
    con.execute(DDL)


def exists(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(con.execute("SELECT count(*) FROM information_schema.tables "
                            "WHERE table_name = 'conversation_insights'").fetchone()[0])
