"""``hindsight bench retrieval``: recall and precision of RETRIEVE against the
generator's facts (fast: a short persona and fake models with known behaviour)."""
from __future__ import annotations

from app.bench import retrieval


class _Patterns:
    """Knows exactly one kind: Spotify plays are music, everything else is not."""

    def classify(self, query, patterns):
        music = "music" in query or "songs" in query or "tracks" in query
        return [("relevant" if music else "irrelevant") if "music_stream" in p else "irrelevant" for p in patterns]

    def close(self):
        pass


class _Registry:
    def sparse_encoder(self):
        return None

    def pattern_classifier(self):
        return _Patterns()

    def event_classifier(self):
        return None

    def embedder(self):
        return None


def test_recall_and_precision_follow_the_classifier(tmp_path):
    figures = retrieval.run(persona="p5", concepts=4, work_dir=tmp_path, scale=0.05, years=0.2,
                            models=_Registry())
    rows = {c["query"]: c for c in figures["concepts"]}
    assert len(rows) == 4 and figures["events"] > 0
    music = next(c for q, c in rows.items() if "song" in q or "music" in q or "tracks" in q)
    assert music["recall"] == 1.0 and music["precision"] == 1.0  # every play, nothing else
    others = [c for c in rows.values() if c is not music and c["truth"]]
    # the fake knows nothing else; RETRIEVE itself knows a kind by its name ("watching TV")
    from engine.operators.retrieve import names_the_kind
    from engine.retrieval.words import KIND_WORDS
    named = [c for c in others if any(names_the_kind(c["query"], "", k) for k in KIND_WORDS)]
    assert others and all(c["recall"] == 0.0 for c in others if c not in named)
    assert all(c["recall"] == 1.0 for c in named)
    assert 0 < figures["overall"]["recall_macro"] < 1
    # per source: Spotify holds the music query's truth, all found and nothing else retrieved there
    spotify = figures["by_source"]["spotify"]
    assert spotify["found"] >= music["truth"] and spotify["precision"] == 1.0
    assert sum(s["truth"] for s in figures["by_source"].values()) == sum(c["truth"] for c in rows.values())
    # and per concept: the music query's truth is all Spotify's, and the per-source tallies add up
    assert music["by_source"]["spotify"] == {"truth": music["truth"], "found": music["truth"],
                                             "retrieved": music["retrieved"]}
    for c in rows.values():
        assert sum(t["truth"] for t in c["by_source"].values()) == c["truth"]
        assert sum(t["retrieved"] for t in c["by_source"].values()) == c["retrieved"]
    text = retrieval.table(figures)
    assert "| kind |" in text and music["query"] in text and "| spotify |" in text
    assert f"spotify {music['truth']}/{music['truth']} of {music['retrieved']}" in text
