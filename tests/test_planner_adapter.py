"""The committed planner adapter is the one its manifest names, made from the base the
build assembles, with the scripts that made it in the tree; and the app picks the
tuned planner only when it is there."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from models import gguf
from models.runtime import planner_adapter

ROOT = Path(__file__).resolve().parents[1]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_committed_adapter_matches_its_manifest():
    m = planner_adapter.manifest()
    if m is None and not planner_adapter.ADAPTER.exists():
        pytest.skip("no fine-tuned adapter is committed yet: the app uses the few-shot planner")
    assert m is not None, "adapter.gguf is committed without its manifest.json"
    assert planner_adapter.ADAPTER.is_file(), "manifest.json names an adapter that is not committed"
    assert _sha256(planner_adapter.ADAPTER) == m["adapter_sha256"]
    assert planner_adapter.ADAPTER.stat().st_size == m["adapter_bytes"]
    # trained on the base that `hindsight models build` assembles for planner_tuned
    assert m["base_sha256"] == gguf.TUNED_BASE_SHA256
    assert m["training"]["data_sha256"] == m["data_sha256"] and len(m["data_sha256"]) == 64
    for command in m["made_by"]:
        module = command.split()[2]
        assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), module
    assert planner_adapter.adapter_path() == planner_adapter.ADAPTER


def test_planner_kind_follows_the_setting(monkeypatch):
    from app.assemble import PLANNER_ENV, planner_kind
    from app.errors import UserError

    monkeypatch.setenv(PLANNER_ENV, "fewshot")
    assert planner_kind() == "fewshot"
    monkeypatch.setenv(PLANNER_ENV, "tuned")
    assert planner_kind() == "tuned"
    monkeypatch.setenv(PLANNER_ENV, "Tuned-Only")
    assert planner_kind() == "tuned-only"
    monkeypatch.setenv(PLANNER_ENV, "gpt")
    with pytest.raises(UserError, match="HINDSIGHT_PLANNER"):
        planner_kind()
    monkeypatch.delenv(PLANNER_ENV)
    monkeypatch.setattr(planner_adapter, "adapter_path", lambda: None)
    assert planner_kind() == "fewshot"  # no adapter: the few-shot planner


@pytest.mark.parametrize("kind, unused", [("tuned", set()), ("tuned-only", {"planner"}),
                                          ("fewshot", {"planner_tuned"})])
def test_an_installation_needs_the_planners_its_kind_runs(monkeypatch, kind, unused):
    from app.assemble import PLANNER_ENV, unused_roles

    monkeypatch.setenv(PLANNER_ENV, kind)
    assert unused_roles() == unused  # "tuned" falls back to the few-shot planner: it needs both


def test_a_new_adapter_of_the_same_size_is_another_planner_for_the_plan_cache(tmp_path):
    """Every run of planner_lora writes an adapter.gguf of the same size; the plan
    cache and the saved prompt states are kept per planner identity, so the identity
    must tell two adapters apart by their content, not their size."""
    import os

    from models.runtime.planner import LlamaPlanner

    base, adapter = tmp_path / "base.gguf", tmp_path / "adapter.gguf"
    base.write_bytes(b"base")
    adapter.write_bytes(b"a" * 64)
    planner = LlamaPlanner.__new__(LlamaPlanner)  # the identity reads the files, not a loaded model
    planner.path, planner.lora_path = base, adapter
    first = planner.identity
    assert planner.identity == first and "adapter.gguf" in first
    adapter.write_bytes(b"b" * 64)  # another run's adapter: same name, same size
    os.utime(adapter, ns=(1, 1))
    assert planner.identity != first
    planner.lora_path = None
    assert "adapter" not in planner.identity
