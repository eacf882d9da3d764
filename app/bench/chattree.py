"""``hindsight bench chattree``: how well the chat trees find each prompt's parent.

CRyCHIc's figures (accuracy, precision, recall, F1 over parent edges; see
``engine.chattree.metrics``) beside the "every prompt follows the one before"
baseline, on

- MixMC dev: pairs of MultiChallenge dev conversations interleaved (true parents by
  construction; the thresholds were tuned here), and MixMC test (never tuned on);
- the hand-annotated real ChatGPT conversations (``chattree_annotated.json``; never
  trained or tuned on).

Also the time to insert one turn (analysis, judge, chooser and the turn's own vector), and the
time to rebuild every tree of the real ChatGPT export (192 conversations) in a fresh
store.
"""
from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from engine.chattree import ChatTree
from engine.chattree.metrics import parent_metrics, previous_turn_baseline

ANNOTATED = Path(__file__).with_name("chattree_annotated.json")
DEFAULT_SHARED = Path(__file__).resolve().parents[3] / "shared"
Echo = Callable[[str], None]

#: Paper anchors on WildChatTree (CRyCHIc, GPT-4.1 with labels, baseline), for the table.
PAPER = {"CRyCHIc (paper, WildChatTree)": (0.684, 0.566, 0.848, 0.679),
         "GPT-4.1 + labels (paper)": (0.771, 0.695, 0.847, 0.764),
         "previous-turn baseline (paper)": (0.446, 0.503, 0.797, None)}


class BenchDataMissing(FileNotFoundError):
    pass


def _chats_mixmc(shared: Path, split_name: str) -> list[list[tuple[str, str, str, str | None]]]:
    from models.training.mixmc import load_conversations, mixed_chats, multichallenge_path, split

    path = multichallenge_path(shared)
    if not path.is_file():
        raise BenchDataMissing(f"MultiChallenge is not at {path}; pass --shared FOLDER")
    return [[(t.id, t.prompt, t.response, t.parent) for t in chat]
            for chat in mixed_chats(split(load_conversations(path), split_name))]


def _chats_annotated(shared: Path) -> list[list[tuple[str, str, str, str | None]]]:
    export = shared / "data" / "chatgpt-export" / "conversations.json"
    if not export.is_file():
        raise BenchDataMissing(f"the ChatGPT export is not at {export}; pass --shared FOLDER")
    by_id = {}
    for c in json.loads(export.read_text(encoding="utf-8")):
        by_id[c.get("conversation_id") or c.get("id")] = c
    chats = []
    for ann in json.loads(ANNOTATED.read_text(encoding="utf-8"))["conversations"]:
        mapping = by_id[ann["conversation_id"]]["mapping"]
        chat = []
        for t in ann["turns"]:
            node = mapping[t["node_id"]]
            chat.append((t["node_id"], _text(node), _reply(mapping, node), t["parent_node_id"]))
        chats.append(chat)
    return chats


def _text(node: dict) -> str:
    parts = ((node.get("message") or {}).get("content") or {}).get("parts") or []
    return " ".join(p for p in parts if isinstance(p, str))


def _reply(mapping: dict, node: dict) -> str:
    for child in node.get("children") or ():
        msg = mapping.get(child, {}).get("message") or {}
        if (msg.get("author") or {}).get("role") == "assistant" and _text(mapping[child]).strip():
            return _text(mapping[child])
    return ""


def evaluate(chats, models) -> tuple[dict, dict, list[float]]:
    """(metrics, baseline metrics, ms per inserted turn) over ``chats``, each inserted
    turn by turn into its own tree."""
    pairs, base, times = [], [], []
    for chat in chats:
        tree = ChatTree(models)
        for turn_id, prompt, response, _parent in chat:
            t0 = time.perf_counter()
            tree.insert(turn_id, prompt, response)
            times.append((time.perf_counter() - t0) * 1000)
        true = {t[0]: t[3] for t in chat}
        pairs.append((dict(tree.parents), true))
        base.append((previous_turn_baseline([t[0] for t in chat]), true))
    return parent_metrics(pairs), parent_metrics(base), times


def rebuild_export(shared: Path, models, echo: Echo) -> dict:
    """Import the real ChatGPT export into a fresh store, then time building every tree."""
    from engine.chattree import tables
    from engine.ingest import import_paths
    from engine.store import EventStore
    from importers.base import ImportContext

    export = shared / "data" / "chatgpt-export" / "conversations.json"
    with tempfile.TemporaryDirectory(prefix="hindsight-chattree-") as tmp:
        with EventStore(Path(tmp) / "store.duckdb") as store:
            import_paths(store, [str(export)], context=ImportContext())
            stats = tables.rebuild(store, models,
                                   progress=lambda d, n: echo(f"chattree: rebuilt {d}/{n}") if d % 50 == 0 else None)
            again = tables.rebuild(store, models)
    return {"conversations": stats.built, "prompts": stats.turns, "seconds": round(stats.seconds, 2),
            "ms_per_prompt": round(stats.ms_per_turn, 1), "reimport_seconds": round(again.seconds, 3),
            "reimport_rebuilt": again.built}


def run(models, *, shared: Path = DEFAULT_SHARED, echo: Echo = lambda _: None, rebuild: bool = True) -> dict:
    figures: dict = {"heads": getattr(models.heads, "version", ""),
                     "threshold": models.heads.threshold, "implicit_threshold": models.heads.implicit_threshold}
    all_times: list[float] = []
    for name, chats in (("mixmc_dev", _chats_mixmc(shared, "dev")), ("mixmc_test", _chats_mixmc(shared, "test")),
                        ("annotated_real", _chats_annotated(shared))):
        echo(f"chattree: {name}: {len(chats)} chats, {sum(len(c) for c in chats)} prompts")
        m, b, times = evaluate(chats, models)
        all_times += times
        figures[name] = {**{k: round(v, 4) for k, v in m.items()}, "baseline": {k: round(v, 4) for k, v in b.items()}}
    figures["ms_per_inserted_turn"] = {"mean": round(statistics.fmean(all_times), 1),
                                       "median": round(statistics.median(all_times), 1),
                                       "p95": round(sorted(all_times)[int(len(all_times) * 0.95)], 1)}
    if rebuild:
        figures["rebuild_chatgpt_export"] = rebuild_export(shared, models, echo)
    return figures


def table(figures: dict) -> str:
    rows = ["| set | method | turns | accuracy | precision | recall | F1 |", "|---|---|---|---|---|---|---|"]
    for name in ("mixmc_dev", "mixmc_test", "annotated_real"):
        f = figures.get(name)
        if not f:
            continue
        for method, m in (("chat tree", f), ("previous-turn baseline", f["baseline"])):
            rows.append(f"| {name} | {method} | {m['turns']} | {m['accuracy']:.3f} | {m['precision']:.3f} | "
                        f"{m['recall']:.3f} | {m['f1']:.3f} |")
    for method, (a, p, r, f1) in PAPER.items():
        rows.append(f"| WildChatTree | {method} | | {a:.3f} | {p:.3f} | {r:.3f} | {'' if f1 is None else f'{f1:.3f}'} |")
    t = figures["ms_per_inserted_turn"]
    rows.append("")
    rows.append(f"Insert one turn (analysis, judge and chooser, its vector): mean {t['mean']} ms, "
                f"median {t['median']} ms, p95 {t['p95']} ms. Thresholds: parent chooser {figures['threshold']}, "
                f"IFQC {figures['implicit_threshold']}.")
    r = figures.get("rebuild_chatgpt_export")
    if r:
        rows.append(f"Rebuild the real ChatGPT export's trees: {r['conversations']} conversations, {r['prompts']} "
                    f"prompts in {r['seconds']} s ({r['ms_per_prompt']} ms a prompt); again after re-import: "
                    f"{r['reimport_rebuilt']} rebuilt in {r['reimport_seconds']} s.")
    return "\n".join(rows)
