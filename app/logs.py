"""Logging for the shells: a rotating file in the data dir, warnings on stderr,
and native libraries' chatter routed into logging."""
from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

LOG_NAME = "hindsight.log"


def setup(data_dir: Path, verbose: bool = False) -> Path:
    log_dir = Path(data_dir) / "logs"
    path = log_dir / LOG_NAME
    root = logging.getLogger()
    if getattr(root, "_hindsight_log", None) == str(path):
        return path
    for h in list(root.handlers):
        if getattr(h, "_hindsight", False):
            root.removeHandler(h)
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        fh = logging.handlers.RotatingFileHandler(path, maxBytes=5_000_000, backupCount=3, encoding="utf-8")
        fh.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"))
        fh.setLevel(logging.DEBUG if verbose else logging.INFO)
        fh._hindsight = True  # type: ignore[attr-defined]
        root.addHandler(fh)
    except OSError:
        pass  # a read-only data dir must not stop read commands
    if verbose:
        sh = logging.StreamHandler()
        sh.setLevel(logging.DEBUG)
        sh._hindsight = True  # type: ignore[attr-defined]
        root.addHandler(sh)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root._hindsight_log = str(path)  # type: ignore[attr-defined]
    logging.captureWarnings(True)
    return path
