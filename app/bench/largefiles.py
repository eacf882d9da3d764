"""``hindsight bench largefiles``: does a very large export import in bounded memory?

Writes a Gmail-style mbox and an Apple Health export.xml of the asked sizes
(streaming to disk: the generator itself holds one message or record at a time),
imports each into a fresh data folder in a child process, and reports the child's
peak resident memory (the kernel's ``ru_maxrss``) against the 500 MB goal.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

GOAL_MB = 500
_T0 = datetime(2015, 1, 1, tzinfo=timezone.utc)


def write_mbox(path: Path, size: int) -> int:
    """An mbox of about ``size`` bytes; returns how many messages it holds."""
    body = ("Hello,\n\nthe minutes of today's meeting are below. " + "Lorem ipsum dolor sit amet. " * 60 + "\n") * 2
    n = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        while f.tell() < size:
            when = _T0 + timedelta(minutes=17 * n)
            f.write(f"From 1{n:018d}@xxx {when:%a %b %d %H:%M:%S %Y}\n"
                    f"Message-ID: <{n}.bench@example.org>\n"
                    f"Date: {when:%a, %d %b %Y %H:%M:%S +0000}\n"
                    f"From: Colleague {n % 300} <c{n % 300}@example.org>\n"
                    f"To: Erika <erika@example.com>\n"
                    f"Subject: Minutes {n}\n"
                    f"Content-Type: text/plain; charset=utf-8\n\n{body}\n")
            n += 1
    return n


def write_health(path: Path, size: int) -> int:
    """An Apple Health export.xml of about ``size`` bytes; returns its records."""
    n = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<HealthData locale="en_US">\n'
                ' <ExportDate value="2030-01-01 09:00:00 +0000"/>\n')
        while f.tell() < size:
            start = _T0 + timedelta(minutes=5 * n)
            end = start + timedelta(minutes=4)
            f.write(f' <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Watch" unit="count" '
                    f'creationDate="{end:%Y-%m-%d %H:%M:%S} +0000" startDate="{start:%Y-%m-%d %H:%M:%S} +0000" '
                    f'endDate="{end:%Y-%m-%d %H:%M:%S} +0000" value="{n % 400 + 1}"/>\n')
            if n % 50 == 0:
                f.write(f' <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Watch" unit="count/min" '
                        f'startDate="{start:%Y-%m-%d %H:%M:%S} +0000" endDate="{start:%Y-%m-%d %H:%M:%S} +0000" '
                        f'value="{60 + n % 40}"><MetadataEntry key="HKMetadataKeyHeartRateMotionContext" '
                        'value="1"/></Record>\n')
            n += 1
        f.write("</HealthData>\n")
    return n


def import_peak_rss(path: Path, data_dir: Path) -> dict:
    """Import ``path`` with the CLI in a child process; its seconds, events and peak RSS."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2]),
                                                                  os.environ.get("PYTHONPATH", "")) if p)}
    cmd = [sys.executable, "-c", "from app.cli import main; main()", "--data-dir", str(data_dir), "--json",
           "import", "--no-index", str(path)]
    import tempfile

    t0 = time.perf_counter()
    # the child's output goes to files: through pipes nobody reads until it exits, a
    # child that says more than a pipe holds (64 KB of warnings) waits forever
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        child = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read(), err_f.read()
    seconds = time.perf_counter() - t0
    import json

    try:
        report = json.loads(out)
        events = report["added"]
    except (ValueError, KeyError):
        raise RuntimeError(f"importing {path} failed: {err.decode(errors='replace')[-2000:]}") from None
    return {"file": path.name, "bytes": path.stat().st_size, "events": events, "seconds": round(seconds, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "exit": os.waitstatus_to_exitcode(status)}


def run(mbox_bytes: int, health_bytes: int, work: Path, echo: Callable[[str], None] = print,
        keep: bool = False) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, size, writer in (("Takeout/Mail/All mail Including Spam and Trash.mbox", mbox_bytes, write_mbox),
                               ("apple_health_export/export.xml", health_bytes, write_health)):
        if size <= 0:
            continue
        path = work / "exports" / name
        echo(f"writing {path} ({size / 1e9:.2f} GB)")
        writer(path, size)
        data = work / f"data-{path.stem}"
        echo(f"importing {path.name}")
        row = import_peak_rss(path, data)
        echo(f"  {row['events']:,} events in {row['seconds']} s, peak RSS {row['peak_rss_mb']} MB")
        rows.append(row)
        if not keep:
            path.unlink()
            for p in sorted(data.rglob("*"), reverse=True):
                p.unlink() if p.is_file() else p.rmdir()
    return {"goal_mb": GOAL_MB, "files": rows,
            "within_goal": all(r["peak_rss_mb"] <= GOAL_MB for r in rows)}


def table(figures: dict) -> str:
    lines = ["| file | size | events | seconds | peak RSS | goal |", "|---|---|---|---|---|---|"]
    for r in figures["files"]:
        lines.append(f"| {r['file']} | {r['bytes'] / 1e9:.2f} GB | {r['events']:,} | {r['seconds']} | "
                     f"{r['peak_rss_mb']} MB | {'ok' if r['peak_rss_mb'] <= figures['goal_mb'] else 'OVER'} "
                     f"≤ {figures['goal_mb']} MB |")
    return "\n".join(lines)
