"""A hostile filesystem: a full disk, a read-only data folder, a store another process
holds, a damaged store or index. Each gives a message naming the file and what to
do, nothing already stored is lost, ``hindsight doctor`` finds the damage and
``hindsight doctor --repair`` rebuilds what is derived from the events; a schema
migration is preceded by a backup of the store."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from engine.store import EventStore, store_path
from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from app.cli import main; main()"]


def _env(tmp_path: Path) -> dict:
    return os.environ | {"PYTHONPATH": str(ROOT), "HINDSIGHT_CACHE_DIR": str(tmp_path / "no-models"),
                         "HOME": str(tmp_path / "home")}


def _cli(tmp_path: Path, data: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + ["--data-dir", str(data), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=_env(tmp_path))


def _events(data: Path) -> list[tuple]:
    con = duckdb.connect(str(store_path(data)), read_only=True)
    try:
        return con.execute("SELECT id, title, text, start FROM events ORDER BY id").fetchall()
    finally:
        con.close()


def _big_spotify(path: Path, plays: int) -> Path:
    """An extended streaming history of ``plays`` distinct plays."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"ts": f"2023-{1 + i // 40000 % 12:02d}-{1 + i // 1400 % 28:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00Z",
             "ms_played": 1000 + i, "master_metadata_track_name": f"Track {i} " + "la " * 20,
             "master_metadata_album_artist_name": f"Artist {i % 500}", "master_metadata_album_album_name": "Album",
             "spotify_track_uri": f"spotify:track:{i:022d}", "platform": "linux", "conn_country": "DE",
             "reason_start": "trackdone", "reason_end": "trackdone", "shuffle": False, "skipped": False}
            for i in range(plays)]
    path.write_text(json.dumps(rows))
    return path


@pytest.fixture
def imported(tmp_path) -> Path:
    data = tmp_path / "data"
    out = _cli(tmp_path, data, "import", str(FIXTURES / "spotify"), str(FIXTURES / "netflix" / "ViewingActivity.csv"))
    assert out.returncode == 0, out.stderr
    return data


# ---- a schema migration backs the store up first -------------------------------------
def test_a_migration_backs_the_store_up_first(tmp_path):
    from engine import store as store_mod

    path = tmp_path / "data" / "hindsight.duckdb"
    path.parent.mkdir()
    con = duckdb.connect(str(path))  # a store as schema 1 left it, with one import
    con.execute(store_mod._MIGRATIONS[0][1])
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO events (id, source, kind, title, start, import_id) "
                "VALUES ('x-1', 'spotify', 'play', 'kept', TIMESTAMP '2024-01-01 10:00', 1)")
    con.close()
    with EventStore(path) as s:
        assert s.schema_version() == store_mod.SCHEMA_VERSION
    backup = path.with_name("hindsight.duckdb.before-schema-2")
    con = duckdb.connect(str(backup), read_only=True)
    assert con.execute("SELECT value FROM meta").fetchone() == ("1",)
    assert con.execute("SELECT title FROM events").fetchall() == [("kept",)]
    con.close()
    with EventStore(path):  # already current: no new backup
        pass
    assert sorted(p.name for p in path.parent.iterdir() if "before-schema" in p.name) == [backup.name]


# ---- a damaged store or index ----------------------------------------------------------
@pytest.mark.parametrize("damage", ["truncate", "overwrite"])
def test_doctor_finds_a_damaged_store_and_says_what_to_do(tmp_path, imported, damage):
    path = store_path(imported)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        if damage == "truncate":
            f.truncate(size // 2)
        else:  # garbage over every block after the file's headers
            f.seek(12288)
            f.write(os.urandom(size - 12288))
    out = _cli(tmp_path, imported, "--json", "doctor")
    assert out.returncode == 1
    check = next(c for c in json.loads(out.stdout)["checks"] if c["name"] == "store file")
    assert check["status"] == "fail" and str(path) in check["detail"] and "damaged" in check["detail"]
    assert "import your exports again" in check["fix"], check
    repair = _cli(tmp_path, imported, "doctor", "--repair")
    assert repair.returncode == 1 and str(path) in repair.stderr  # the store is not derived: no repair of it


@pytest.mark.parametrize("damage", ["truncate", "overwrite"])
def test_doctor_repair_rebuilds_a_damaged_index_from_the_events(tmp_path, imported, damage):
    index = imported / "hindsight.retrieval.duckdb"
    assert index.exists()
    events = _events(imported)
    size = index.stat().st_size
    with open(index, "r+b") as f:
        if damage == "truncate":
            f.truncate(size // 3)
        else:
            f.seek(12288)
            f.write(os.urandom(size - 12288))
    out = _cli(tmp_path, imported, "--json", "doctor")
    check = next(c for c in json.loads(out.stdout)["checks"] if c["name"] == "search_index")
    assert check["status"] == "fail" and str(index) in check["detail"]
    assert "doctor --repair" in check["fix"]
    repaired = _cli(tmp_path, imported, "--json", "doctor", "--repair")
    assert "repaired search_index: indexed" in repaired.stderr, repaired.stderr
    check = next(c for c in json.loads(repaired.stdout)["checks"] if c["name"] == "search_index")
    assert check["status"] == "ok"
    con = duckdb.connect(str(index), read_only=True)
    assert {r[0] for r in con.execute("SELECT id FROM docs").fetchall()} == {e[0] for e in events}
    con.close()
    assert _events(imported) == events  # the events were never touched


@pytest.mark.slow
def test_doctor_repair_rebuilds_lost_chat_trees_and_insights_from_the_events(tmp_path, model_registry):
    """Trees and insights are derived too: a conversation that lost them (a job killed
    before it wrote, a table cleared) is found by doctor and rebuilt by --repair."""
    data = tmp_path / "data"

    def cli(*args):
        env = _env(tmp_path) | {"HINDSIGHT_CACHE_DIR": str(model_registry.cache)}
        return subprocess.run(CLI + ["--data-dir", str(data), *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=600, env=env)

    out = cli("import", "--no-index", str(FIXTURES / "chatgpt" / "export"))
    assert out.returncode == 0, out.stderr[-2000:]

    def derived() -> tuple[dict, dict]:
        con = duckdb.connect(str(store_path(data)), read_only=True)
        try:
            return (dict(con.execute("SELECT conversation_id, content_hash FROM chat_tree_conversations").fetchall()),
                    dict(con.execute("SELECT id, summary FROM conversation_insights").fetchall()))
        finally:
            con.close()

    trees, insights = derived()
    assert len(trees) >= 2 and len(insights) >= 2
    events = _events(data)
    con = duckdb.connect(str(store_path(data)))
    lost_tree, lost_insight = sorted(trees)[0], sorted(insights)[0]
    con.execute("DELETE FROM chat_tree_turns WHERE conversation_id = ?", [lost_tree])
    con.execute("DELETE FROM chat_tree_conversations WHERE conversation_id = ?", [lost_tree])
    con.execute("DELETE FROM conversation_insights WHERE id = ?", [lost_insight])
    con.close()
    checks = {c["name"]: c for c in json.loads(cli("--json", "doctor").stdout)["checks"]}
    assert checks["chat_trees"]["status"] == "fail" and "1 of" in checks["chat_trees"]["detail"]
    assert checks["insights"]["status"] == "fail" and "1 chat conversations" in checks["insights"]["detail"]
    assert "doctor --repair" in checks["insights"]["fix"]
    repaired = cli("--json", "doctor", "--repair")
    assert "repaired chat_trees: rebuilt the trees of 1 conversations" in repaired.stderr, repaired.stderr[-2000:]
    assert "repaired insights: inferred the insights of 1 conversations" in repaired.stderr
    checks = {c["name"]: c for c in json.loads(repaired.stdout)["checks"]}
    assert checks["chat_trees"]["status"] == checks["insights"]["status"] == "ok"
    assert derived() == (trees, insights)  # made again as they were
    assert _events(data) == events  # the events were never touched


# ---- the store held by another process ----------------------------------------------------
def test_a_store_held_by_another_process_is_named_with_what_to_do(tmp_path, imported):
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from engine.store import EventStore
        s = EventStore({str(store_path(imported))!r})
        print("holding", flush=True)
        sys.stdin.readline()
    """)], cwd=ROOT, env=_env(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        before = len(os.listdir(imported))
        out = _cli(tmp_path, imported, "import", str(FIXTURES / "strava" / "activities.csv"))
        assert out.returncode == 1
        assert str(store_path(imported)) in out.stderr and "open in another Hindsight process" in out.stderr
        assert "close it" in out.stderr
        assert len(os.listdir(imported)) == before
    finally:
        holder.communicate("\n", timeout=60)


# ---- a read-only data folder and a full disk (need a mount namespace) ------------------------
def _can_mount() -> str:
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
                           capture_output=True, text=True)
    return "" if probe.returncode == 0 else f"cannot mount in a private mount namespace: {probe.stderr.strip()}"


needs_mount = pytest.mark.skipif(bool(_can_mount()), reason=_can_mount() or "ok")


def _in_namespace(tmp_path: Path, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["unshare", "-m", "bash", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=_env(tmp_path))


def _py(*args: str) -> str:
    return " ".join([sys.executable, "-c", "'from app.cli import main; main()'", *args])


@needs_mount
def test_a_read_only_data_folder_is_named_and_nothing_is_lost(tmp_path, imported):
    events = _events(imported)
    out = _in_namespace(tmp_path, f"""
        mount --bind {imported} {imported} && mount -o remount,bind,ro {imported} || exit 99
        {_py('--data-dir', str(imported), 'import', str(FIXTURES / 'strava' / 'activities.csv'))}
        echo "exit=$?"
    """)
    assert "exit=1" in out.stdout, out.stdout + out.stderr
    assert str(imported) in out.stderr and "read-only" in out.stderr.lower(), out.stderr
    assert "writable" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert _events(imported) == events


@needs_mount
def test_a_full_disk_fails_the_import_by_name_and_keeps_what_was_stored(tmp_path):
    big = _big_spotify(tmp_path / "big" / "Streaming_History_Audio_2023_0.json", 60_000)
    disk = tmp_path / "disk"
    disk.mkdir()
    data = disk / "data"
    out = _in_namespace(tmp_path, f"""
        mount -t tmpfs -o size=6m tmpfs {disk} || exit 99
        {_py('--data-dir', str(data), 'import', '--no-index', str(FIXTURES / 'spotify'))} > /dev/null || exit 98
        {_py('--data-dir', str(data), '--json', 'events', '--limit', '100000')} > {tmp_path}/before.json
        {_py('--data-dir', str(data), 'import', '--no-index', str(big))}
        echo "exit=$?"
        {_py('--data-dir', str(data), '--json', 'events', '--limit', '100000')} > {tmp_path}/after.json
        echo "events=$?"
    """)
    assert "exit=1" in out.stdout, out.stdout + out.stderr[-2000:]
    message = out.stdout + out.stderr
    assert str(big) in message and "disk is full: free some space" in message, message[-2000:]
    assert "Traceback" not in out.stderr
    assert "events=0" in out.stdout, out.stderr[-2000:]
    before = json.loads((tmp_path / "before.json").read_text())
    after = json.loads((tmp_path / "after.json").read_text())
    assert before and after == before
