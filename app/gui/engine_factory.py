"""Where the desktop app gets its ``QuestionEngine``: ``make_engine(store, settings)``.

The engine and the model layer are imported lazily, here and only here, so the app
starts (and shows a clear first-run screen) when either is missing. This module
never answers a question itself and never substitutes a fake engine: when no real
engine can be built it raises :class:`EngineUnavailable`, whose ``kind`` tells the
Ask pane which screen to show. Call it from a worker thread: building an engine
loads models.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from engine.answer import QuestionEngine

log = logging.getLogger(__name__)

ENGINE_MISSING = "engine_missing"  # engine.qa is not part of this installation
MODEL_LAYER_MISSING = "model_layer_missing"  # the models package cannot be imported
MODELS_MISSING = "models_missing"  # some model roles are not built or located
FAILED = "failed"  # building the engine raised


@dataclass
class EngineUnavailable(Exception):
    """No engine can be made now; ``message`` says why and what to do."""

    message: str
    kind: str
    roles: dict[str, dict] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message

    @property
    def missing_roles(self) -> list[str]:
        return [r for r, info in self.roles.items() if not info.get("ready")]


def apply_planner_setting(settings) -> None:
    """A planner GGUF chosen in Settings overrides the built one, the same way the
    model layer's environment variable does (the model layer reads only that)."""
    if not getattr(settings, "planner_model", None):
        return
    try:
        from models.paths import PLANNER_GGUF_ENV
    except ImportError:
        return
    os.environ[PLANNER_GGUF_ENV] = str(settings.planner_model)


def model_status() -> dict[str, dict]:
    """``{role: {"ready": bool, "reason": str, ...}}`` from the model layer."""
    try:
        from models.status import status
    except ImportError as exc:
        raise EngineUnavailable(
            f"The model layer is not installed ({exc}). Reinstall Hindsight with its model "
            "packages (make setup), then restart the app.", MODEL_LAYER_MISSING) from exc
    try:
        roles = dict(status()["roles"])
    except (OSError, KeyError, ValueError) as exc:
        raise EngineUnavailable(f"Cannot read the model status: {exc}", FAILED) from exc
    try:
        from app.assemble import unused_roles
    except ImportError:  # the engine is not installed: make_engine says so
        return roles
    return {role: info for role, info in roles.items() if role not in unused_roles()}


def build_models(profile: str, progress) -> None:
    """Build or locate every model role; ``progress(role, stage, fraction, message)``."""
    try:
        from models.build import build_all
    except ImportError as exc:
        raise EngineUnavailable(f"The model layer is not installed ({exc}); cannot build models.",
                                MODEL_LAYER_MISSING) from exc
    build_all(profile=profile, progress=progress)


def _roles_if_known() -> dict[str, dict]:
    try:
        return model_status()
    except EngineUnavailable:
        return {}


def make_engine(store, settings) -> QuestionEngine:
    """The real engine over ``store`` (the same one the CLI's ``ask`` uses)."""
    from pathlib import Path

    from app.errors import UserError

    apply_planner_setting(settings)
    roles = model_status()
    missing = [r for r, info in roles.items() if not info.get("ready")]
    if missing:
        raise EngineUnavailable(
            f"{len(missing)} of {len(roles)} models are not ready ({', '.join(missing)}). "
            "Build them below (once, a few minutes) or choose a planner GGUF in Settings.",
            MODELS_MISSING, roles)
    try:
        from app.assemble import build_engine
    except ImportError as exc:
        raise EngineUnavailable(f"The question engine cannot load: {exc}. Run 'hindsight doctor' to see "
                                "what to install.", ENGINE_MISSING, roles) from exc
    data_dir = Path(store.path).parent if getattr(store, "path", ":memory:") != ":memory:" else None
    try:
        return build_engine(store, settings, data_dir)
    except (UserError, LookupError) as exc:  # a model role missing after all
        raise EngineUnavailable(str(exc), MODELS_MISSING, roles) from exc
    except Exception as exc:  # noqa: BLE001 - the edge: becomes the Ask pane's message
        log.exception("building the question engine failed")
        raise EngineUnavailable(f"The question engine could not start: {type(exc).__name__}: {exc}",
                                FAILED, roles) from exc
