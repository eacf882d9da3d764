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


def test_bench_cli_asks_the_first_question_cold_the_rest_warm_and_two_in_process(tmp_path, monkeypatch):
    from app.bench import cli_latency

    asked: list[tuple[str, bool]] = []

    def fake_ask(data_dir, question, today, *, server):
        asked.append((question, server))
        wall = {"q1": 5.0, "q2": 2.3, "q3": 2.2}[question] + (0 if server else 3.0)
        return {"question": question, "wall_s": wall, "answer_s": 2.0, "overhead_s": round(wall - 2.0, 3),
                "answer": "42"}

    monkeypatch.setattr(cli_latency, "_ask", fake_ask)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # no server's socket there
    figures = cli_latency.run(tmp_path, ["q1", "q2", "q3"], None, echo=lambda _: None)
    assert asked == [("q1", True), ("q2", True), ("q3", True), ("q1", False), ("q2", False)]
    assert (figures["cold_overhead_s"], figures["warm_overhead_median_s"], figures["warm_overhead_max_s"]) == \
        (3.0, 0.25, 0.3)
    assert figures["in_process_overhead_median_s"] == 4.65  # (6.0 + 3.3) / 2
    table = cli_latency.table(figures)
    assert "| cold | 1 | 3.00 | 3.00 | ≤ 3 s |" in table and "| warm | 2 | 0.25 | 0.30 | ≤ 0.5 s |" in table
    with pytest.raises(ValueError, match="two questions"):
        cli_latency.run(tmp_path, ["q1"], None, echo=lambda _: None)


def test_bench_cli_waits_for_a_running_server_and_says_so(tmp_path, monkeypatch):
    from app import ask_server
    from app.bench import cli_latency

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    path = ask_server.socket_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.touch()  # a server's socket that does not go away
    said: list[str] = []
    with pytest.raises(RuntimeError, match="still running"):
        cli_latency.run(tmp_path, ["q1", "q2"], None, echo=said.append, wait=0.5)
    assert said and "waiting for it to exit" in said[0]
