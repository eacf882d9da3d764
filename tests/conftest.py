"""Shared fixtures: a tmp store, an isolated data dir, the CLI runner, and a guard
that fails any test whose code tries to reach the network."""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[1].parent / "shared"

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class NetworkAttempt(AssertionError):
    pass


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Privacy is a feature: any attempt to open a network connection fails the test."""
    real_connect = socket.socket.connect

    def guarded(self, address, *a, **kw):
        if self.family == getattr(socket, "AF_UNIX", object()):
            return real_connect(self, address, *a, **kw)
        raise NetworkAttempt(f"network connection attempted to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(socket, "create_connection",
                        lambda address, *a, **kw: (_ for _ in ()).throw(NetworkAttempt(f"connection to {address!r}")))
    yield


@pytest.fixture
def berlin():
    from importers.base import ImportContext

    return ImportContext(home_tz=ZoneInfo("Europe/Berlin"))


@pytest.fixture
def store(tmp_path):
    from engine.store import EventStore

    s = EventStore(tmp_path / "store" / "hindsight.duckdb")
    yield s
    s.close()


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    d = tmp_path / "data"
    monkeypatch.setenv("HINDSIGHT_DATA_DIR", str(d))
    # CLI tests must not depend on (or load) models built on this machine
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(tmp_path / "model-cache"))
    (d).mkdir()
    (d / "settings.json").write_text(json.dumps({"home_timezone": "Europe/Berlin"}))
    return d


@pytest.fixture
def cli(data_dir):
    """Run the CLI in-process; returns (exit_code, stdout, stderr)."""
    from click.testing import CliRunner

    from app.cli import main

    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        result = runner.invoke(main, list(args), input=input, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return run


@pytest.fixture(scope="session")
def model_registry(tmp_path_factory):
    """Every real model role, from the quick profile's build in a session cache
    (about 3 minutes on 2 idle cores). HINDSIGHT_TEST_CACHE reuses a cache across
    runs: a build with the same inputs is a no-op there."""
    import importlib.util

    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("model requirements not installed (requirements-models.txt)")
    from models.build import build_all
    from models.registry import ModelRegistry

    reuse = os.environ.get("HINDSIGHT_TEST_CACHE")
    cache = Path(reuse) if reuse else tmp_path_factory.mktemp("hindsight-cache")
    build_all("quick", cache=cache)
    reg = ModelRegistry(cache)
    yield reg
    reg.close()


def pytest_collection_modifyitems(config, items):
    """Real-model tests get a longer time limit: the first of them also pays for the
    session's quick model build and the planner's prompt prefix (minutes on 2 cores)."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(2400))
