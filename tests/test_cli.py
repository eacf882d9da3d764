"""The CLI contract: exit codes and --json shapes other tools rely on."""
from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES

SPOTIFY = FIXTURES / "spotify"


def test_import_json_shape_and_second_import(cli):
    code, out, _ = cli("import", str(SPOTIFY / "Streaming_History_Audio_2023_0.json"), "--json")
    assert code == 0
    report = json.loads(out)
    assert set(report) >= {"files", "added", "duplicates", "skipped", "unrecognized"}
    f = report["files"][0]
    assert set(f) >= {"path", "importer", "read", "added", "duplicates", "skipped", "issues"}
    assert (f["importer"], f["read"], f["added"]) == ("spotify_extended", 4, 4)
    code, out, _ = cli("--json", "import", str(SPOTIFY / "Streaming_History_Audio_2023_0.json"))
    assert code == 0 and json.loads(out)["added"] == 0


def test_import_reports_issues_with_locators(cli):
    code, out, _ = cli("import", "--json", str(SPOTIFY / "broken"))
    assert code == 0
    issues = json.loads(out)["files"][0]["issues"]
    assert {"locator": "item 2", "reason": "missing field 'ts'"} in issues


def test_events_and_show(cli, data_dir):
    cli("import", str(SPOTIFY))
    code, out, _ = cli("events", "--source", "spotify", "--kind", "podcast_stream", "--json")
    assert code == 0
    events = json.loads(out)
    assert [e["title"] for e in events] == ["Structures Weekly – Arches and Vaults", "Structures Weekly – Why Bridges Sing"]
    e = events[1]
    assert e["start"].endswith("Z") and e["local_start"].endswith("+02:00")
    code, out, _ = cli("show", e["id"], "--json")
    shown = json.loads(out)
    assert code == 0
    assert shown["provenance"]["locator"] == "item 3"
    assert shown["provenance"]["file"].endswith("Streaming_History_Audio_2023_0.json")
    assert json.loads(shown["provenance"]["original"])["episode_name"] == "Why Bridges Sing"
    code, out, _ = cli("events", "--since", "2023-07-01", "--until", "2023-08-01", "--json")
    assert len(json.loads(out)) == 1
    code, out, _ = cli("events", "--limit", "2")
    assert code == 0 and len(out.strip().splitlines()) == 2


@pytest.mark.parametrize("args, message", [
    (("import", "/no/such/file.json"), "no such file"),
    (("show", "nope-123"), "no event"),
    (("events", "--since", "last tuesday"), "not a date"),
    (("import", "--importer", "nonexistent", "x"), "no importer named"),
    (("imports", "remove", "42", "--yes"), "no import #42"),
    (("settings", "--home-timezone", "Mars/Olympus"), "unknown time zone"),
])
def test_user_errors_exit_1_with_one_line(cli, args, message):
    if args[0] in ("show", "events", "imports"):
        cli("import", str(SPOTIFY / "endsong_0.json"))
    code, out, err = cli(*args)
    assert code == 1
    assert message in (out + err)


def test_unknown_format_exits_1(cli, tmp_path):
    f = tmp_path / "notes.xyz"
    f.write_text("just some text")
    code, out, _ = cli("import", str(f), "--json")
    assert code == 1 and json.loads(out)["unrecognized"] == [str(f)]


def test_usage_error_exits_1(cli):
    code, _, err = cli("events", "--limit", "minus one")
    assert code == 1 and "error" in err


def test_internal_error_exits_2_and_names_the_log(cli, monkeypatch, data_dir):
    import engine.ingest

    def boom(*a, **k):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(engine.ingest, "import_paths", boom)
    code, _, err = cli("import", str(SPOTIFY / "endsong_0.json"))
    assert code == 2
    assert "internal error: RuntimeError: unexpected" in err
    assert str(data_dir / "logs" / "hindsight.log") in err
    assert "Traceback" in (data_dir / "logs" / "hindsight.log").read_text()


def test_imports_list_and_remove(cli):
    cli("import", str(SPOTIFY / "endsong_0.json"), str(SPOTIFY / "StreamingHistory_music_0.json"))
    code, out, _ = cli("imports", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["added"] for r in rows] == [1, 2]
    code, out, _ = cli("imports", "remove", str(rows[1]["id"]), "--json")
    assert code == 0 and json.loads(out)["removed"] == [{"import_id": rows[1]["id"], "events": 2}]
    code, out, _ = cli("events", "--json")
    assert len(json.loads(out)) == 1


def test_remove_asks_for_confirmation(cli):
    cli("import", str(SPOTIFY / "endsong_0.json"))
    code, out, err = cli("imports", "remove", "1", input="n\n")
    assert code == 1
    code, out, _ = cli("events", "--json")
    assert len(json.loads(out)) == 1


def test_settings_round_trip(cli):
    code, out, _ = cli("settings", "--home-timezone", "America/New_York", "--own-address", "me@example.org", "--json")
    assert code == 0
    assert json.loads(out)["own_addresses"] == ["me@example.org"]
    code, out, _ = cli("settings", "--json")
    assert json.loads(out)["home_timezone"] == "America/New_York"


def test_data_dir_option(cli, tmp_path):
    other = tmp_path / "elsewhere"
    code, _, _ = cli("import", "--data-dir", str(other), str(SPOTIFY / "endsong_0.json"))
    assert code == 0 and (other / "hindsight.duckdb").exists()


def test_doctor_json(cli):
    code, out, _ = cli("doctor", "--json")
    report = json.loads(out)
    assert {"ok", "checks"} <= set(report)
    names = {(c["area"], c["name"]) for c in report["checks"]}
    assert ("importers", "spotify_extended") in names and ("packages", "duckdb") in names
    assert all(c["fix"] for c in report["checks"] if c["status"] == "fail")
    assert code == (0 if report["ok"] else 1)


@pytest.mark.parametrize("kind, unused", [("fewshot", "planner_tuned"), ("tuned-only", "planner"), ("tuned", None)])
def test_doctor_says_which_planner_answers(cli, monkeypatch, kind, unused):
    monkeypatch.setenv("HINDSIGHT_PLANNER", kind)
    _, out, _ = cli("doctor", "--json")
    checks = {(c["area"], c["name"]): c for c in json.loads(out)["checks"]}
    from app.cli_doctor import PLANNER_IN_USE

    assert checks[("models", "planner in use")]["detail"] == PLANNER_IN_USE[kind]
    if unused:
        assert checks[("models", unused)]["detail"] == f"not used: {PLANNER_IN_USE[kind]}"


def test_doctor_says_when_llama_cpp_leaves_the_cpus_avx512_or_amx_unused():
    from app.cli_doctor import planner_runtime_check

    portable = planner_runtime_check({"SSE3", "AVX", "AVX2", "FMA", "F16C", "OPENMP"}, {"avx2", "avx512f"})
    assert portable.status == "warn" and "AVX-512" in portable.detail and "make setup" in portable.fix
    tuned = planner_runtime_check({"AVX2", "AVX512", "AVX512_VNNI", "FMA"}, {"avx2", "avx512f"})
    assert tuned.status == "ok" and "AVX512_VNNI" in tuned.detail
    # a CPU without AVX-512 has nothing left unused
    assert planner_runtime_check({"AVX2", "FMA"}, {"avx2"}).status == "ok"
    sapphire = {"avx2", "avx512f", "avx512_vnni", "amx_tile", "amx_int8"}
    no_amx = planner_runtime_check({"AVX2", "AVX512", "AVX512_VNNI", "FMA"}, sapphire)
    assert no_amx.status == "warn" and "AMX" in no_amx.detail and "make setup" in no_amx.fix
    assert planner_runtime_check({"AVX2", "AVX512", "AVX512_VNNI", "AMX_INT8"}, sapphire).status == "ok"


def test_import_updates_the_search_index(cli, data_dir):
    import duckdb

    code, _, err = cli("import", str(SPOTIFY / "Streaming_History_Audio_2023_0.json"))
    assert code == 0 and "Indexed 4 new events for search" in err and "full-text only" in err
    con = duckdb.connect(str(data_dir / "hindsight.retrieval.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM docs").fetchone()[0] == 4
    con.close()
    code, _, err = cli("import", "--no-index", str(SPOTIFY / "endsong_0.json"))
    assert code == 0 and "indexed" not in err
