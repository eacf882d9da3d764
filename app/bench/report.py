"""Writing benchmark results: JSON + Markdown, machine info, and the diff against
the previous run of the same benchmark."""
from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

DEFAULT_RESULTS = Path("bench-results")


def machine_info() -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                timeout=5, cwd=Path(__file__).resolve().parents[2]).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, timeout=5,
                                    cwd=Path(__file__).resolve().parents[2]).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // 1024
    except OSError:
        pass
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"commit": commit, "dirty": dirty, "python": platform.python_version(), "cpu": cpu,
            "cores": os.cpu_count(), "memory_mb": mem, "platform": platform.platform(),
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def _flatten(d: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        out[prefix[:-1]] = float(d)
    return out


def save(name: str, figures: dict, table_md: str, results_dir: Path | None = None) -> tuple[Path, str]:
    """Write ``<dir>/<name>-<stamp>.json/.md`` and ``<name>-latest.json``; return the
    Markdown path and a diff against the previous latest (text)."""
    results_dir = Path(results_dir or DEFAULT_RESULTS)
    results_dir.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    payload = {"benchmark": name, "machine": info, "figures": figures}
    latest = results_dir / f"{name}-latest.json"
    diff_lines: list[str] = []
    if latest.exists():
        try:
            prev = json.loads(latest.read_text())
            old, new = _flatten(prev.get("figures", {})), _flatten(figures)
            for k in sorted(set(old) & set(new)):
                if old[k] != new[k]:
                    rel = f" ({(new[k] - old[k]) / old[k] * 100:+.1f}%)" if old[k] else ""
                    diff_lines.append(f"| {k} | {old[k]:g} | {new[k]:g}{rel} |")
            if diff_lines:
                diff_lines.insert(0, f"Changes since the previous run ({prev['machine'].get('commit')}, "
                                     f"{prev['machine'].get('at')}):\n\n| figure | before | now |\n|---|---|---|")
        except (OSError, ValueError, KeyError):
            diff_lines = ["(the previous result could not be read)"]
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    md = (f"# {name}\n\ncommit {info['commit']}{' (dirty)' if info['dirty'] else ''}, {info['cpu']}, "
          f"{info['cores']} cores, {info['memory_mb']} MB, Python {info['python']}, {info['at']}\n\n{table_md}\n")
    diff = "\n".join(diff_lines)
    if diff:
        md += "\n" + diff + "\n"
    (results_dir / f"{name}-{stamp}.json").write_text(json.dumps(payload, indent=2, default=str))
    md_path = results_dir / f"{name}-{stamp}.md"
    md_path.write_text(md)
    latest.write_text(json.dumps(payload, indent=2, default=str))
    return md_path, diff
