"""Measure each loaded role: load time, resident memory added, throughput; and the
resident memory of all roles loaded together. ``python -m models.benchmark``
prints JSON. Loads the current builds from the cache; trains nothing."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from models.registry import ModelRegistry

_TEXTS = [f"Listened to Track {i} by Artist {i} from the album Album {i} for 3 min 12 s on android."
          for i in range(128)]


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _rate(fn, n: int) -> float:
    started = time.monotonic()
    fn()
    return round(n / (time.monotonic() - started), 1)


def measure(registry: ModelRegistry, echo=None) -> dict:
    out: dict = {}
    work = {
        "embedder": lambda m: _rate(lambda: m.embed(_TEXTS), len(_TEXTS)),
        "sparse_encoder": lambda m: _rate(lambda: m.encode(_TEXTS[:64]), 64),
        "segmenter": lambda m: _rate(lambda: [m.sentences(t) for t in _TEXTS[:64]], 64),
        "pattern_classifier": lambda m: _rate(lambda: m.classify("songs by artist 3", ["source: spotify"] * 64), 64),
        "event_classifier": lambda m: _rate(lambda: m.score([("songs by artist 3", t) for t in _TEXTS[:64]]), 64),
        "extractor": lambda m: _rate(lambda: m.extract([(t, "artist") for t in _TEXTS[:64]]), 64),
        "planner": lambda m: _rate(lambda: m.complete("<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n",
                                                      max_tokens=32, grammar='root ::= [a-z ]+'), 32),
    }
    units = {"planner": "tokens/s (upper bound: stops early)", "segmenter": "texts/s"}
    for role, run in work.items():
        if echo:
            echo(f"loading and timing {role}")
        before = rss_bytes()
        started = time.monotonic()
        model = registry.get(role)
        loaded = time.monotonic() - started
        out[role] = {"load_s": round(loaded, 2), "rss_added_mb": round((rss_bytes() - before) / 1e6, 1),
                     "per_s": run(model), "unit": units.get(role, "items/s at batch 64")}
    out["all_loaded_rss_mb"] = round(rss_bytes() / 1e6, 1)
    return out


def main() -> None:
    cache = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    with ModelRegistry(cache) as reg:
        print(json.dumps(measure(reg), indent=2))


if __name__ == "__main__":
    main()
