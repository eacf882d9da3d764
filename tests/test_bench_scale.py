"""bench scale's plan of generated lives and its table; bench index's generator."""
from __future__ import annotations

import json

import pytest

from app.bench import scale, scale_mix


def test_lives_add_personas_of_at_most_twelve_years_until_the_size_is_reached():
    assert scale_mix.lives_for(100_000) == [("p1", 7.14)]
    lives = scale_mix.lives_for(1_000_000)
    assert [p for p, _ in lives] == ["p1", "p2", "p3", "p4", "p5", "p6"]
    assert all(y <= scale_mix.MAX_YEARS for _, y in lives)
    assert sum(y for _, y in lives) * scale_mix.EVENTS_PER_YEAR >= 1_000_000
    with pytest.raises(ValueError, match="personas"):
        scale_mix.lives_for(5_000_000)


def test_the_table_shows_each_size_and_the_growth_per_ten_times_the_events():
    def row(events, index_s, lat, rss):
        return scale_mix._figures({"size": events, "events": events, "import_seconds": events / 50_000,
                                   "index_seconds": index_s, "store_bytes": 300 * events,
                                   "index_bytes": 500 * events, "latencies": lat, "peak_rss_mb": rss,
                                   "index_peak_rss_mb": rss / 2})
    figures = {"sizes": {"100000": row(100_000, 50, [1.0, 2.0, 3.0, 9.0], 1500.0),
                         "1000000": row(1_000_000, 600, [1.5, 2.5, 3.0, 12.0], 2000.0)}}
    r = figures["sizes"]["100000"]
    assert (r["index_events_per_s"], r["bytes_per_event"], r["ask_median_s"], r["ask_p95_s"]) == (2000, 800, 2.5, 9.0)
    lines = scale_mix.table(figures).splitlines()
    assert lines[2].startswith("| 100,000 | 50,000 | 2,000 | 50 | 800 (300 + 500) | 2.5 | 9.0 | 1,500 (750) |")


def test_one_listeners_plays_follow_a_zipfian_catalogue(tmp_path):
    path = scale.write_spotify_extended(tmp_path / "Streaming_History_Audio_2019.json", 5000, tracks=123)
    plays = json.loads(path.read_text())
    counts: dict[str, int] = {}
    for p in plays:
        counts[p["master_metadata_track_name"]] = counts.get(p["master_metadata_track_name"], 0) + 1
    ranked = sorted(counts.values(), reverse=True)
    assert len(counts) <= 123 and len({p["platform"] for p in plays}) == 2
    assert ranked[0] > 5 * ranked[len(ranked) // 2]  # the favourite far ahead of the median song
