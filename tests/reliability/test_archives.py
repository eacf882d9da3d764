"""Damaged and hostile archives: a truncated zip says it is damaged and where; a zip
bomb and endlessly nested zips are refused by name; member names that climb out of
the archive ("../../x") write nothing anywhere, and the good members still import."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import ingest
from engine.ingest import import_paths
from engine.store import EventStore
from tests.conftest import FIXTURES
from tests.reliability.contract import CONTEXT, TALLY

ROOT = Path(__file__).resolve().parents[2]
SPOTIFY = sorted((FIXTURES / "spotify").glob("*.json"))


def _export_zip(method=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for path in SPOTIFY:
            zf.write(path, f"Spotify Extended Streaming History/{path.name}")
    return buf.getvalue()


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(method=st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]), cut=st.floats(0.0005, 0.9995))
def test_a_truncated_zip_is_reported_as_damaged_with_where(tmp_path_factory, method, cut):
    data = _export_zip(method)
    path = tmp_path_factory.mktemp("zip") / "my_spotify_data.zip"
    path.write_bytes(data[:max(1, int(len(data) * cut))])
    with EventStore(":memory:") as store:
        report = import_paths(store, [path], context=CONTEXT)
        assert store.count() == 0
    assert not report.unrecognized, "a damaged zip must not be called an unknown format"
    (fr,) = report.files
    assert fr.status == "failed" and fr.path == str(path)
    assert f"{path}: this zip is damaged (truncated at byte {path.stat().st_size:,}" in fr.message, fr.message
    TALLY[("zip", "truncated")]["damaged, with where"] += 1


def test_a_truncated_zip_names_the_member_it_was_cut_in(tmp_path):
    data = _export_zip(zipfile.ZIP_STORED)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        second = zf.infolist()[1]
    path = tmp_path / "export.zip"
    path.write_bytes(data[:second.header_offset + 100])  # inside the second member's data
    with EventStore(":memory:") as store:
        (fr,) = import_paths(store, [path], context=CONTEXT).files
    assert f"inside '{second.filename}', after 1 whole member" in fr.message, fr.message


def test_the_cli_says_damaged_not_unknown(tmp_path):
    path = tmp_path / "export.zip"
    path.write_bytes(_export_zip()[:300])
    out = subprocess.run([sys.executable, "-c", "from app.cli import main; main()", "--data-dir",
                          str(tmp_path / "data"), "import", str(path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env=os.environ | {"PYTHONPATH": str(ROOT), "HINDSIGHT_CACHE_DIR": str(tmp_path / "c")})
    assert out.returncode == 1
    assert "this zip is damaged (truncated at byte 300" in out.stdout
    assert "not a format Hindsight knows" not in out.stdout + out.stderr


def test_a_zip_bomb_member_is_refused_by_name_and_the_rest_imports(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest, "ZIP_BOMB_BYTES", 1 << 20)  # the rule, at a size a test can write
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("Spotify/StreamingHistory_music_1.json", b"[" + b" " * (8 << 20) + b"]")
        for p in SPOTIFY:
            zf.write(p, f"Spotify/{p.name}")
    with EventStore(":memory:") as store:
        report = import_paths(store, [path], context=CONTEXT)
        assert store.count() > 0
    bomb = [f for f in report.files if f.path.endswith("StreamingHistory_music_1.json")]
    assert bomb and bomb[0].status == "failed" and "zip bomb" in bomb[0].message
    assert str(path) in bomb[0].message
    assert sum(f.status == "imported" for f in report.files) >= 3


def test_zips_nested_without_end_stop_at_the_limit(tmp_path):
    inner = (FIXTURES / "spotify" / "StreamingHistory_music_0.json").read_bytes()
    name = "StreamingHistory_music_0.json"
    for level in range(ingest.ZIP_DEPTH + 2):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(name, inner)
        inner, name = buf.getvalue(), f"level{level}.zip"
    path = tmp_path / "nested.zip"
    path.write_bytes(inner)
    with EventStore(":memory:") as store:
        report = import_paths(store, [path], context=CONTEXT)
    (fr,) = report.files
    assert fr.status == "failed" and "nested deeper than" in fr.message and fr.path.endswith(".zip")


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("member", ["../../escaped.json", "/tmp/hindsight-escaped.json", "..\\..\\escaped.json",
                                    "a/../../../escaped.json"])
def test_member_names_that_climb_out_write_nothing_outside_the_data_folder(tmp_path, member):
    work = tmp_path / "work" / "deep" / "er"
    work.mkdir(parents=True)
    path = work / "export.zip"
    good = (FIXTURES / "spotify" / "StreamingHistory_music_0.json").read_bytes()
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member.replace("escaped", "StreamingHistory_music_9"), good.replace(b"2023", b"2022"))
        zf.writestr("Spotify/StreamingHistory_music_0.json", good)
    before = _tree(tmp_path)
    escaped = Path("/tmp/hindsight-StreamingHistory_music_9.json")
    data = tmp_path / "data"
    out = subprocess.run([sys.executable, "-c", "from app.cli import main; main()", "--data-dir", str(data),
                          "--json", "import", "--no-index", str(path)],
                         cwd=work, capture_output=True, text=True, timeout=120,
                         env=os.environ | {"PYTHONPATH": str(ROOT), "HINDSIGHT_CACHE_DIR": str(tmp_path / "c"),
                                           "HOME": str(tmp_path / "home"), "TMPDIR": str(data / "tmp")})
    assert out.returncode == 0, out.stderr
    written = {p for p in _tree(tmp_path) - before if not p.startswith("data")}
    assert written == set(), f"written outside the data folder: {written}"
    assert not escaped.exists()
    import json

    report = json.loads(out.stdout)
    assert sum(f["added"] for f in report["files"]) >= 2
