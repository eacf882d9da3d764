"""Patterns RETRIEVE labels: which values split a group, their text, their SQL."""
from __future__ import annotations

from engine.retrieval.patterns import describe_pattern, group_pattern, matches, pattern_sql, value_patterns
from engine.retrieval.verbalise import key_values, pattern_items
from engine.store import EventStore


def test_value_patterns_keep_splitting_categories_only():
    g = group_pattern("strava", "workout")
    events = ([{("sport", "running"), ("commute", "false")}] * 6 + [{("sport", "cycling"), ("commute", "false")}] * 4
              + [{("sport", "yoga"), ("commute", "true")}] + [{("name", f"Run {i}")} for i in range(70)])
    pats = dict(value_patterns(g, events))
    assert pats[(("kind", "workout"), ("source", "strava"), ("sport", "running"))] == 6
    assert (("kind", "workout"), ("source", "strava"), ("sport", "cycling")) in pats
    assert not any(("sport", "yoga") in p for p in pats), "one event is too little support"
    assert not any(k == "name" for p in pats for k, _ in p), "70 distinct names are not a category"
    # a value nearly every event has says nothing the group does not
    every = [{("offline", "false")}] * 99 + [{("offline", "true")}] * 1
    assert [p for p, _ in value_patterns(g, every, min_support=1)] == [
        (("kind", "workout"), ("offline", "true"), ("source", "strava"))]


def test_pattern_text_and_sql_select_the_same_events():
    p = (("kind", "workout"), ("source", "strava"), ("sport", "running"))
    assert describe_pattern(p) == "kind: workout | source: strava | sport: running"
    where, params = pattern_sql(p)
    s = EventStore(":memory:")
    try:
        s.reader().execute("CREATE TEMP TABLE t AS SELECT 'strava' AS source, 'workout' AS kind, "
                           "'{\"sport\": \"running\", \"tags\": [\"a\", \"b\"]}'::JSON AS attributes "
                           "UNION ALL SELECT 'strava', 'workout', '{\"sport\": \"yoga\"}'::JSON")
        assert s.reader().execute(f"SELECT count(*) FROM t WHERE {where}", params).fetchone()[0] == 1
    finally:
        s.close()


def test_list_values_and_ids_are_never_pattern_items():
    pairs = key_values("mail", "mail", "Hi", "text", {"labels": ["Sent", "Opened"], "thread_id": "123",
                                                    "direction": "sent", "to": [{"name": "A"}]})
    items = pattern_items(pairs)
    assert items == {("source", "mail"), ("kind", "mail"), ("direction", "sent")}
    assert matches((("direction", "sent"), ("kind", "mail")), items)
