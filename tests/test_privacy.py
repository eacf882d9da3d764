"""Privacy is a feature: Hindsight makes no network connection. A Python audit
hook in a child process records every socket connect and DNS lookup while the
main commands run on real data."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[1]

_HOOKED = """
import sys, json
attempts = []
def hook(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "urllib.Request", "http.client.connect"):
        attempts.append([event, repr(args)[:200]])
sys.addaudithook(hook)
from app.cli import main
codes = []
for args in json.loads(sys.argv[1]):
    codes.append(main.main(args=args, standalone_mode=False))
print(json.dumps({"attempts": attempts, "codes": codes}))
"""


def test_main_commands_make_no_network_connection(tmp_path):
    data = tmp_path / "data"
    spotify = FIXTURES / "spotify"
    commands = [
        ["--data-dir", str(data), "import", str(spotify)],
        ["--data-dir", str(data), "events", "--json"],
        ["--data-dir", str(data), "doctor", "--json"],
        ["--data-dir", str(data), "imports"],
    ]
    out = subprocess.run([sys.executable, "-c", _HOOKED, json.dumps(commands)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                                      "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["codes"][:2] == [0, 0]
    assert result["attempts"] == []


def test_the_audit_hook_would_catch_a_connection(tmp_path):
    """The check above can fail: a connect attempt is seen by the same hook."""
    code = _HOOKED.replace("from app.cli import main", "import socket\n"
                           "s = socket.socket()\ntry:\n    s.connect(('127.0.0.1', 9))\nexcept OSError:\n    pass\n"
                           "from app.cli import main")
    out = subprocess.run([sys.executable, "-c", code, "[]"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1])["attempts"][0][0] == "socket.connect"
