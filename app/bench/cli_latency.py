"""``hindsight bench cli``: what ``hindsight ask`` costs on top of the answer.

Each question is asked as a user asks it, by running the CLI as a program, and its
wall time is set against the time the engine says the answer took
(``timings.total_ms``). Three ways:

* **cold**: no ask server runs for the data folder; the first ``hindsight ask``
  starts one, which loads the models, and answers through it;
* **warm**: the questions after it, answered by that server;
* **in process**: ``hindsight ask --no-server``, which loads the models itself.

The server this starts exits ``IDLE_SECONDS`` after its last question (it is given
that idle time through ``HINDSIGHT_ASK_SERVER_IDLE``). A server already running
for the folder would make the first question warm: the benchmark waits for it to
exit, and says so.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

#: how long the server started here waits for another question before it exits
IDLE_SECONDS = 20

Echo = Callable[[str], None]


def _ask(data_dir: Path, question: str, today: str | None, *, server: bool) -> dict:
    """One ``hindsight ask --json`` run: its wall time and the answer's own time."""
    command = [sys.executable, "-c", "from app.cli import main; main()", "ask", "--json",
               "--data-dir", str(data_dir), question]
    if today:
        command += ["--today", today]
    if not server:
        command.append("--no-server")
    env = {**os.environ, "HINDSIGHT_ASK_SERVER_IDLE": str(IDLE_SECONDS),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise RuntimeError(f"hindsight ask {question!r} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    answer = json.loads(done.stdout)
    answer_s = (answer.get("timings") or {}).get("total_ms", 0.0) / 1000
    return {"question": question, "wall_s": round(wall, 3), "answer_s": round(answer_s, 3),
            "overhead_s": round(wall - answer_s, 3), "answer": (answer.get("answer_text") or "")[:80]}


def _wait_for_no_server(data_dir: Path, echo: Echo, most: float) -> None:
    from app.ask_server import socket_path

    path = socket_path(data_dir)
    if not path.exists():
        return
    echo(f"  an ask server runs for {data_dir}: waiting for it to exit (at most {most:.0f} s)")
    deadline = time.monotonic() + most
    while path.exists() and time.monotonic() < deadline:
        time.sleep(1)
    if path.exists():
        raise RuntimeError(f"an ask server for {data_dir} is still running ({path}); "
                           "wait until it exits (10 idle minutes) and run this again")


def run(data_dir: Path, questions: Sequence[str], today: str | None, *, echo: Echo = print,
        wait: float = 660) -> dict:
    """Cold, warm and in-process figures for ``questions`` (at least two) over ``data_dir``."""
    if len(questions) < 2:
        raise ValueError("the benchmark needs at least two questions: one cold, the rest warm")
    _wait_for_no_server(data_dir, echo, wait)
    runs: dict[str, list[dict]] = {"cold": [], "warm": [], "in_process": []}
    for n, q in enumerate(questions):
        way = "cold" if n == 0 else "warm"
        runs[way].append(_ask(data_dir, q, today, server=True))
        r = runs[way][-1]
        echo(f"  {way:10} {r['wall_s']:5.1f} s wall, {r['answer_s']:5.1f} s answer  {q} -> {r['answer']!r}")
    for q in questions[:2]:
        runs["in_process"].append(_ask(data_dir, q, today, server=False))
        r = runs["in_process"][-1]
        echo(f"  {'in process':10} {r['wall_s']:5.1f} s wall, {r['answer_s']:5.1f} s answer  {q}")
    return {"data_dir": str(data_dir), "today": today, "runs": runs,
            "cold_overhead_s": runs["cold"][0]["overhead_s"],
            "warm_overhead_median_s": round(statistics.median(r["overhead_s"] for r in runs["warm"]), 3),
            "warm_overhead_max_s": max(r["overhead_s"] for r in runs["warm"]),
            "in_process_overhead_median_s": round(statistics.median(r["overhead_s"] for r in runs["in_process"]), 3)}


def table(figures: dict) -> str:
    rows = ["| way | questions | wall − answer, median s | max s | goal |", "|---|---:|---:|---:|---|"]
    goals = {"cold": "≤ 3 s", "warm": "≤ 0.5 s", "in_process": "–"}
    for way, runs in figures["runs"].items():
        over = [r["overhead_s"] for r in runs]
        rows.append(f"| {way.replace('_', ' ')} | {len(runs)} | {statistics.median(over):.2f} | {max(over):.2f} "
                    f"| {goals[way]} |")
    return "\n".join(rows)
