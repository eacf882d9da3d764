"""The record ``models.build`` leaves beside each built model, and how the current
build of a role is found: ``<cache>/<role>/<key>/manifest.json`` plus
``<cache>/<role>/current.json`` naming the key in use. Pure file I/O.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROLES = ("planner", "planner_tuned", "embedder", "sparse_encoder", "segmenter", "pattern_classifier", "event_classifier",
         "extractor")


class ManifestError(ValueError):
    """A manifest file that cannot be read."""


@dataclass
class Manifest:
    role: str
    key: str
    path: str  # absolute path of the model file or folder
    bytes: int
    sha256: str
    source: str
    built_at: str
    profile: str  # "full", "quick" or "package" (used as shipped)
    metrics: dict = field(default_factory=dict)
    note: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def key_for(inputs: dict) -> str:
    """A short stable key for a build's inputs (hashes, versions, hyperparameters)."""
    blob = json.dumps(inputs, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def role_dir(cache: Path, role: str) -> Path:
    return cache / role


def build_dir(cache: Path, role: str, key: str) -> Path:
    return cache / role / key


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def read(path: Path) -> Manifest | None:
    """The manifest at ``path``; a relative model path (as in an installed build,
    which may sit anywhere) is resolved against the manifest's folder."""
    if not path.exists():
        return None
    try:
        m = Manifest(**json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as exc:
        raise ManifestError(f"{path}: unreadable manifest ({exc})") from exc
    if not Path(m.path).is_absolute():
        m.path = str(path.parent / m.path)
    return m


def stored(cache: Path, role: str, key: str) -> Manifest | None:
    """The manifest of a finished build with this key, if its files are still there.

    A build writes its manifest last (atomically), so a build killed midway has none
    and is never used. A model file whose size is not the one recorded (cut short
    later, on a full disk say) is not used either: the next build makes it again."""
    m = read(build_dir(cache, role, key) / "manifest.json")
    if m is None:
        return None
    path = Path(m.path)
    if not path.exists() or (path.is_file() and path.stat().st_size != m.bytes):
        return None
    return m


def save(cache: Path, manifest: Manifest) -> None:
    folder = build_dir(cache, manifest.role, manifest.key)
    folder.mkdir(parents=True, exist_ok=True)
    _write_json(folder / "manifest.json", manifest.to_json())
    make_current(cache, manifest.role, manifest.key)


def make_current(cache: Path, role: str, key: str) -> None:
    role_dir(cache, role).mkdir(parents=True, exist_ok=True)
    _write_json(role_dir(cache, role) / "current.json", {"key": key})


def current(cache: Path, role: str) -> Manifest | None:
    pointer = role_dir(cache, role) / "current.json"
    if not pointer.exists():
        return None
    try:
        key = json.loads(pointer.read_text(encoding="utf-8"))["key"]
    except (ValueError, KeyError) as exc:
        raise ManifestError(f"{pointer}: unreadable ({exc})") from exc
    return stored(cache, role, key)
