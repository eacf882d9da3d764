"""No network, proven at the OS level. Each command runs inside ``unshare -n`` (a
network namespace with no interfaces: a connection could not succeed) and under
``strace -f -e trace=socket,connect``, which sees every socket the process or any of
its native libraries (DuckDB, llama.cpp, ONNX Runtime, CTranslate2) opens. The
commands must succeed there, and not one AF_INET/AF_INET6 socket may appear.
Python's audit hook (tests/test_privacy.py) cannot see native libraries; this can."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.reliability.contract import TALLY

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from app.cli import main; main()"]
_INET = re.compile(r"\b(socket|connect)\((AF_INET6?|\d+, \{sa_family=AF_INET6?)\b")


def _why_not() -> str:
    if sys.platform != "linux":
        return "unshare and strace are Linux tools"
    for tool in ("unshare", "strace"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {'util-linux' if tool == 'unshare' else 'strace'})"
    probe = subprocess.run(["unshare", "-n", "strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=socket", "-o", "/dev/null",
                            "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot run unshare -n with strace here (needs root or user namespaces): {probe.stderr.strip()[:200]}"
    return ""


WHY_NOT = _why_not()
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "ok")


def offline(tmp_path: Path, args: list[str], *, cache: Path | None = None,
            cmd: list[str] | None = None) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run a Hindsight command (or ``cmd``) in a network namespace of its own, under
    strace; returns the result and every AF_INET/AF_INET6 socket or connect call."""
    trace = tmp_path / f"strace-{len(list(tmp_path.glob('strace-*')))}.log"
    env = os.environ | {"PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home"),
                        "HINDSIGHT_CACHE_DIR": str(cache or tmp_path / "no-models")}
    # --seccomp-bpf: only the traced calls stop the process, so models load at full speed
    full = ["unshare", "-n", "strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=socket,connect", "-o", str(trace),
            *(cmd or CLI + args)]
    out = subprocess.run(full, cwd=ROOT, capture_output=True, text=True, timeout=1800, env=env)
    calls = [line for line in trace.read_text().splitlines() if _INET.search(line)]
    name = next((a for a in args[2:] if not a.startswith("-")), "") if not cmd else "probe (a C socket)"
    TALLY[("unshare -n + strace", name)][f"exit {out.returncode}, "
                                         + (f"{len(calls)} AF_INET calls" if calls else "no AF_INET")] += 1
    return out, calls


def test_the_trace_sees_a_socket_a_native_library_opens(tmp_path):
    """The check can fail: a socket opened in C (libc via ctypes, as a native library
    would), even one that cannot connect, shows up in the trace."""
    code = ("import ctypes; libc = ctypes.CDLL(None); fd = libc.socket(2, 1, 0); "
            "print('fd', fd)")
    out, calls = offline(tmp_path, [], cmd=[sys.executable, "-c", code])
    assert out.returncode == 0 and calls and "AF_INET" in calls[0], (out.stderr, calls)


def test_import_events_and_doctor_succeed_with_no_network(tmp_path):
    data = tmp_path / "data"
    dd = ["--data-dir", str(data)]
    out, calls = offline(tmp_path, dd + ["import", str(FIXTURES / "spotify"), str(FIXTURES / "mail"),
                                         str(FIXTURES / "calendar" / "Takeout")])
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert calls == [], calls
    out, calls = offline(tmp_path, dd + ["--json", "events", "--limit", "5"])
    assert out.returncode == 0 and len(json.loads(out.stdout)) == 5 and calls == []
    out, calls = offline(tmp_path, dd + ["--json", "doctor"])
    store = next(c for c in json.loads(out.stdout)["checks"] if c["name"] == "store file")
    assert store["status"] == "ok" and calls == [], (store, calls)


@pytest.mark.slow
def test_ask_with_the_real_models_succeeds_with_no_network(tmp_path, model_registry, monkeypatch):
    # ask starts the warm ask server, traced too; it exits soon after its answer, so the
    # trace (which follows it) ends
    monkeypatch.setenv("HINDSIGHT_ASK_SERVER_IDLE", "5")
    data = tmp_path / "data"
    dd = ["--data-dir", str(data)]
    cache = Path(model_registry.cache)
    out, calls = offline(tmp_path, dd + ["import", str(FIXTURES / "spotify"), str(FIXTURES / "strava")],
                         cache=cache)
    assert out.returncode == 0 and calls == [], out.stderr[-2000:]
    out, calls = offline(tmp_path, dd + ["--json", "ask", "How many songs did I listen to?", "--today",
                                         "2024-06-01"], cache=cache)
    assert calls == [], calls
    answer = json.loads(out.stdout)
    assert out.returncode in (0, 1) and answer.get("answer_text"), out.stderr[-3000:]
    out, calls = offline(tmp_path, dd + ["--json", "doctor"], cache=cache)
    checks = json.loads(out.stdout)["checks"]
    assert calls == [] and all(c["status"] != "fail" for c in checks if c["area"] == "models"), checks


@pytest.mark.slow
def test_chat_trees_and_insights_succeed_with_no_network(tmp_path, model_registry):
    """The background jobs an import of chats starts (trees, then insights), run from
    the CLI with the real models: no socket from them either."""
    data = tmp_path / "data"
    dd = ["--data-dir", str(data)]
    cache = Path(model_registry.cache)
    out, calls = offline(tmp_path, dd + ["import", "--no-index", str(FIXTURES / "chatgpt" / "export"),
                                         str(FIXTURES / "claude" / "data-2024-11-02-09-30-00-batch-0000")],
                         cache=cache)
    assert out.returncode == 0 and calls == [], out.stderr[-2000:]
    out, calls = offline(tmp_path, dd + ["--json", "chats", "build", "--force"], cache=cache)
    assert out.returncode == 0 and calls == [], out.stderr[-2000:]
    out, calls = offline(tmp_path, dd + ["--json", "chats", "turns"], cache=cache)
    turns = json.loads(out.stdout)
    assert out.returncode == 0 and calls == [] and turns, out.stderr[-2000:]
    assert any(t["parent_node_id"] is None for t in turns)  # every conversation has a root
    out, calls = offline(tmp_path, dd + ["--json", "insights", "update"], cache=cache)
    assert out.returncode == 0 and calls == [], out.stderr[-2000:]
    out, calls = offline(tmp_path, dd + ["--json", "insights", "ask", "What did I ask about most?"], cache=cache)
    assert out.returncode == 0 and calls == [], out.stderr[-2000:]
    assert json.loads(out.stdout)["answer"], out.stdout[-2000:]
