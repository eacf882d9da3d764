"""A model build killed midway never leaves a half-written model that gets used:
each build writes its files, then its manifest (atomically), then points
``current.json`` at it; a build without a manifest, or whose model file is not
the size its manifest records, is not used, and the next build makes it again."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from models import manifest
from tests.reliability.contract import TALLY
from tests.reliability.crash import KilledJob, run_child

PART_BYTES = 24 << 20
PARTS = 4


@pytest.fixture(scope="module")
def parts(tmp_path_factory) -> tuple[Path, str, int]:
    """Four parts of a stand-in GGUF (random bytes), with the joined file's hash and size."""
    folder = tmp_path_factory.mktemp("parts")
    digest = hashlib.sha256()
    rng = __import__("random").Random(44)
    for i in range(PARTS):
        data = rng.randbytes(PART_BYTES)
        (folder / f"part{i:02d}.bin").write_bytes(data)
        digest.update(data)
    return folder, digest.hexdigest(), PARTS * PART_BYTES


# The planner's real build step, run on the parts above: only where the parts come
# from and what the joined file must hash to are swapped (in the child process).
PLANNER_BUILD = """
from models import build, gguf
parts = sorted(export.glob("part*.bin"))
gguf.part_paths = lambda count=gguf.PLANNER_PARTS: parts
gguf.PLANNER_SHA256, gguf.PLANNER_SIZE = {sha!r}, {size}
print("phase start", flush=True)
build.build_all(roles=("planner",), cache=data, force=True)
print("phase done", flush=True)
"""


def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_a_killed_planner_build_is_never_used_and_the_next_build_makes_it(seed, parts, tmp_path):
    import random

    folder, sha, size = parts
    cache = tmp_path / "cache"
    job = KilledJob("planner build", PLANNER_BUILD.format(sha=sha, size=size), lambda c: None)
    code, phases, _ = run_child(job, cache, folder, kill_after=random.Random(seed).uniform(0, 1.5))
    m = manifest.current(cache, "planner")  # what a model user would find right after the kill
    if m is not None:
        assert _file_sha(Path(m.path)) == sha, "a half-written planner is in use"
    landed = "after it finished" if code == 0 else f"during {phases[-1]}, " + (
        "the whole model in use" if m is not None else "no model in use")
    run_child(job, cache, folder)  # the next build
    m = manifest.current(cache, "planner")
    assert m is not None and Path(m.path).stat().st_size == size and _file_sha(Path(m.path)) == sha
    assert not list(cache.rglob("*.partial")), "a partial model file was left behind"
    TALLY[("kill -9", "planner build")][landed] += 1


def test_what_a_killed_build_leaves_is_not_used(tmp_path):
    """Each point a kill can stop a build at, laid out by hand: files without a
    manifest, a manifest beside a cut-short file, a new build not yet current."""
    cache = tmp_path / "cache"
    old = manifest.build_dir(cache, "planner", "old")
    old.mkdir(parents=True)
    (old / "m.gguf").write_bytes(b"x" * 100)
    manifest.save(cache, manifest.Manifest("planner", "old", str(old / "m.gguf"), 100, "0" * 64, "test",
                                           "now", "quick"))
    new = manifest.build_dir(cache, "planner", "new")
    new.mkdir(parents=True)
    (new / "m.gguf.partial").write_bytes(b"y" * 10)  # killed while joining: no manifest yet
    assert manifest.current(cache, "planner").key == "old"
    assert manifest.stored(cache, "planner", "new") is None
    (new / "m.gguf").write_bytes(b"y" * 50)  # a manifest that promises more than the file holds
    (new / "manifest.json").write_text(json.dumps(manifest.Manifest(
        "planner", "new", str(new / "m.gguf"), 100, "0" * 64, "test", "now", "quick").to_json()))
    assert manifest.stored(cache, "planner", "new") is None
    (old / "m.gguf").write_bytes(b"x" * 60)  # the current one cut short later (a full disk)
    assert manifest.current(cache, "planner") is None
