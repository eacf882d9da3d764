"""User settings and where Hindsight keeps its data.

The data directory holds the store, ``settings.json`` and ``logs/``. It is
``--data-dir``, else ``$HINDSIGHT_DATA_DIR``, else the platform's user data dir.
Settings are plain JSON so a user can read and fix them by hand.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from importers.base import ImportContext, local_zone

log = logging.getLogger(__name__)

SETTINGS_FILENAME = "settings.json"


class SettingsError(ValueError):
    pass


def default_data_dir() -> Path:
    env = os.environ.get("HINDSIGHT_DATA_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("Hindsight", appauthor=False))


def resolve_data_dir(data_dir: str | Path | None) -> Path:
    return Path(data_dir).expanduser() if data_dir else default_data_dir()


@dataclass
class Settings:
    #: IANA zone for sources that give no local offset; None = the system's zone
    home_timezone: str | None = None
    #: the user's own mail addresses (tell sent from received); empty = infer
    own_addresses: list[str] = field(default_factory=list)
    #: a GGUF file to use as the planner instead of the built one; None = default
    planner_model: str | None = None

    def home_tz(self):
        if not self.home_timezone:
            return local_zone()
        try:
            return ZoneInfo(self.home_timezone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise SettingsError(f"unknown time zone {self.home_timezone!r} in settings") from exc

    def import_context(self) -> ImportContext:
        return ImportContext(home_tz=self.home_tz(),
                             own_addresses=frozenset(a.strip().lower() for a in self.own_addresses if a.strip()))

    @classmethod
    def load(cls, data_dir: Path) -> "Settings":
        path = Path(data_dir) / SETTINGS_FILENAME
        if not path.exists():
            return cls()
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise SettingsError(f"cannot read {path}: {exc}") from exc
        if not isinstance(raw, dict):
            raise SettingsError(f"{path}: expected a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = set(raw) - known
        if unknown:
            log.warning("%s: ignoring unknown settings %s", path, ", ".join(sorted(unknown)))
        settings = cls(**{k: v for k, v in raw.items() if k in known})
        settings.home_tz()  # validate now, not in the middle of an import
        return settings

    def save(self, data_dir: Path) -> None:
        path = Path(data_dir) / SETTINGS_FILENAME
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")
        os.replace(tmp, path)
