"""The fine-tuned planner's LoRA adapter, committed with the record of how it was made.

``adapter.gguf`` is the adapter llama.cpp applies to the planner_tuned base
(``Llama(lora_path=...)``); ``manifest.json`` names its sha256, the base GGUF's, the
training data's hash and size, the training run's figures and the commands that
made it (``app.bench.plan_verify`` → ``plan_data`` → ``planner_lora`` →
``planner_adapter``). A test checks the file is the one the manifest names.
"""
from __future__ import annotations

import json
from pathlib import Path

FOLDER = Path(__file__).resolve().parent
ADAPTER = FOLDER / "adapter.gguf"
MANIFEST = FOLDER / "manifest.json"


def manifest() -> dict | None:
    try:
        return json.loads(MANIFEST.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def adapter_path() -> Path | None:
    """The committed adapter, or None where there is none (a checkout before it)."""
    return ADAPTER if ADAPTER.is_file() and manifest() is not None else None
