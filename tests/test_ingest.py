"""The import pipeline: walking folders and zips, reporting what it could not use,
and surviving a SIGKILL in the middle of a file."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from engine.ingest import import_paths
from engine.store import EventStore
from tests.conftest import FIXTURES

SPOTIFY = FIXTURES / "spotify"


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_folder_zip_and_nested_zip(store, berlin, tmp_path):
    extended = (SPOTIFY / "Streaming_History_Audio_2023_0.json").read_bytes()
    basic = (SPOTIFY / "StreamingHistory_music_0.json").read_bytes()
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as zf:
        zf.writestr("StreamingHistory_music_0.json", basic)
    z = _zip(tmp_path / "export.zip", {
        "Spotify/Streaming_History_Audio_2023_0.json": extended,
        "Spotify/inner.zip": inner.getvalue(),
        "Spotify/.DS_Store": b"\0\0\0\1Bud1",
        "__MACOSX/Spotify/._x": b"junk",
        "Spotify/Userdata.json": b'{"username": "x"}',
        "Spotify/mystery.bin": b"\x89PNG....",
        "Spotify/empty.json": b"",
    })
    r = import_paths(store, [z], context=berlin)
    by_path = {f.path: f for f in r.files}
    assert by_path[f"{z}/Spotify/Streaming_History_Audio_2023_0.json"].added == 4
    assert by_path[f"{z}/Spotify/inner.zip/StreamingHistory_music_0.json"].added == 2
    assert by_path[f"{z}/Spotify/empty.json"].status == "empty"
    assert r.unrecognized == [f"{z}/Spotify/mystery.bin"]
    ignored = {i["path"]: i["reason"] for i in r.ignored}
    assert ignored[f"{z}/Spotify/.DS_Store"] == "system file"
    assert "Spotify" in ignored[f"{z}/Spotify/Userdata.json"]
    # provenance names the member inside the archive
    ev = store.events(limit=1)[0]
    assert ev["file"].startswith(str(z) + "/")

    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "endsong_0.json").write_bytes((SPOTIFY / "endsong_0.json").read_bytes())
    r2 = import_paths(store, [folder], context=berlin)
    assert r2.files[0].path == f"{folder}/sub/endsong_0.json" and r2.added == 1


def test_truncated_zip_and_missing_path_are_reported(store, tmp_path):
    good = _zip(tmp_path / "good.zip", {"a/Streaming_History_Audio_2023_0.json":
                                        (SPOTIFY / "Streaming_History_Audio_2023_0.json").read_bytes() * 1})
    data = good.read_bytes()
    bad = tmp_path / "truncated.zip"
    bad.write_bytes(data[: len(data) // 2])
    r = import_paths(store, [bad, tmp_path / "nope.json", good])
    assert r.missing == [str(tmp_path / "nope.json")]
    statuses = {f.path: (f.status, f.message) for f in r.files}
    assert statuses[f"{good}/a/Streaming_History_Audio_2023_0.json"][0] == "imported"
    # a cut zip either fails as a whole with a message, or is not a zip at all
    assert str(bad) in r.unrecognized or any(s == "failed" and "truncated.zip" in m for s, m in statuses.values())


def test_progress_reports_every_file(store, berlin):
    seen = []
    import_paths(store, [SPOTIFY / "endsong_0.json", SPOTIFY / "StreamingHistory_music_0.json"],
                 context=berlin, progress=seen.append)
    done = [p for p in seen if p.stage == "file_done"]
    assert [p.file_index for p in done] == [1, 2] and all(p.files_total == 2 for p in done)
    assert done[0].bytes_done == done[0].bytes_total == (SPOTIFY / "endsong_0.json").stat().st_size


_CHILD = """
import sys
from pathlib import Path
from app.bench.scale import write_spotify_extended
from engine.ingest import import_paths
from engine.store import EventStore
store = EventStore(sys.argv[1])
if len(sys.argv) > 3:  # read in worker processes, in many small ranges
    from engine import parallel_read
    parallel_read.MIN_BYTES, parallel_read.SEGMENT_BYTES = 0, 256 << 10
def progress(p):
    if p.stage == "file_progress":
        print("progress", p.events, flush=True)
import_paths(store, [sys.argv[2]], progress=progress, batch_size=2000)
print("finished", flush=True)
"""


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.parametrize("parallel", [False, True])
def test_sigkill_mid_file_leaves_the_store_as_before_and_retry_completes(tmp_path, parallel):
    from app.bench.scale import write_spotify_extended

    big = write_spotify_extended(tmp_path / "Streaming_History_Audio_2020_0.json", 60_000)
    small = SPOTIFY / "endsong_0.json"
    db = tmp_path / "kill.duckdb"
    with EventStore(db) as s:
        assert import_paths(s, [small]).added == 1
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(db), str(big), *(["parallel"] if parallel else [])],
                             stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    line = child.stdout.readline()
    assert line.startswith("progress"), line
    workers = _children(child.pid) if parallel and Path("/proc").is_dir() else []
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    # worker processes do not outlive the import that started them
    deadline = time.monotonic() + 30
    while workers and time.monotonic() < deadline:
        workers = [w for w in workers if Path(f"/proc/{w}").exists()
                   and Path(f"/proc/{w}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
        time.sleep(0.2)
    assert not workers
    with EventStore(db) as s:
        assert s.count() == 1, "a killed import must leave nothing of its file"
        assert not list(s.spill_dir().glob("*.parquet")), "nor its temporary rows, once the store is opened"
        assert len(s.imports()) == 1
        r = import_paths(s, [big])
        assert r.files[0].status == "imported" and r.added == 60_000
        assert s.count() == 60_001


def test_a_warning_is_listed_but_the_record_counts_as_imported(store, tmp_path):
    from datetime import datetime, timezone

    from importers.base import Event, Importer, ImportIssue
    from importers.registry import Registry

    def read(entry):
        yield ImportIssue("message 1", "imported, but the body text may be garbled", kept=True)
        yield Event(source="mail", kind="mail", start=datetime(2024, 1, 1, tzinfo=timezone.utc), key="m1")
        yield ImportIssue("message 2", "no Date header")

    f = tmp_path / "x.mbox"
    f.write_text("x")
    r = import_paths(store, [f], registry=Registry([Importer("fake", "Fake", "1", lambda e: 1.0, read)]))
    fr = r.files[0]
    assert (fr.read, fr.added, fr.skipped) == (2, 1, 1)
    assert fr.issues[0] == {"locator": "message 1", "reason": "imported, but the body text may be garbled",
                            "kept": True}
