"""What every CLI command shares: the context object (data dir, store, settings),
the ``--json``/``--data-dir`` options, and JSON output of store rows."""
from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import click

from app import logs
from app.errors import UserError


# ---- output helpers -------------------------------------------------------------
def to_jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is None:  # the store's naive UTC
            return value.isoformat() + "Z"
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def print_json(value: Any) -> None:
    click.echo(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False))


def local_time(start: datetime, offset_min: int | None) -> datetime:
    tz = timezone(timedelta(minutes=offset_min or 0))
    return start.replace(tzinfo=timezone.utc).astimezone(tz)


def event_json(ev: dict) -> dict:
    out = {k: ev.get(k) for k in ("id", "source", "kind", "title", "text", "start", "end",
                                  "tz_offset_min", "attributes", "file", "locator", "import_id")}
    if ev.get("start") is not None:
        out["local_start"] = local_time(ev["start"], ev.get("tz_offset_min"))
    return out


# ---- shared options ----------------------------------------------------------------
class Ctx:
    def __init__(self) -> None:
        self.data_dir: Path | None = None
        self.json = False
        self.verbose = False
        self._store = None
        self.log_path: Path | None = None

    def resolve(self) -> Path:
        from engine.settings import resolve_data_dir

        d = resolve_data_dir(self.data_dir)
        if self.log_path is None:
            self.log_path = logs.setup(d, self.verbose)
        return d

    def settings(self):
        from engine.settings import Settings, SettingsError

        try:
            return Settings.load(self.resolve())
        except SettingsError as exc:
            raise UserError(str(exc)) from exc

    def store(self, read_only: bool = False):
        if self._store is None:
            from engine.store import EventStore, StoreError, store_path

            path = store_path(self.resolve())
            if read_only and not path.exists():
                raise UserError(f"no data yet in {path.parent}; import something with 'hindsight import PATH'")
            try:
                self._store = EventStore(path, read_only=read_only)
            except StoreError as exc:
                raise UserError(str(exc)) from exc
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def _set_data_dir(ctx: click.Context, _param, value):
    if value is not None:
        ctx.ensure_object(Ctx).data_dir = Path(value)
    return value


def _set_json(ctx: click.Context, _param, value):
    if value:
        ctx.ensure_object(Ctx).json = True
    return value


def common(fn):
    """--json and --data-dir on every command (they also work before the command)."""
    fn = click.option("--json", "as_json", is_flag=True, expose_value=False, callback=_set_json,
                      is_eager=True, help="Print machine-readable JSON on stdout.")(fn)
    fn = click.option("--data-dir", type=click.Path(file_okay=False), expose_value=False,
                      callback=_set_data_dir, is_eager=True,
                      help="Where the store, settings and logs live "
                           "(default: $HINDSIGHT_DATA_DIR or the platform's user data dir).")(fn)
    return fn


