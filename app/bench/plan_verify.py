"""Execute candidate plans through the product's engine and keep those that give the
gold answer: the verification step of the planner's training data.

For each train persona, new instances of the **train** templates are drawn from the
persona's canonical facts (gold by SQL, as the benchmark draws them, with another
seed), each instance's candidates (``plan_sketches``) are run in order over the
persona's imported store with the real OTX models, and the first whose answer
matches the gold answer (exactly; within rounding for amounts) is kept.

With ``--families``, the training-only question families of
``models.training.plan_families`` (lookups, yes/no, first/last before or after,
comparisons) are drawn and tried instead of the templates.

Run: ``python -m app.bench.plan_verify --per-template 6`` (writes
``bench-results/plan-data/verified.jsonl``; resumable: instances already decided
are skipped).
"""
from __future__ import annotations

import argparse
import json
import logging
import random
import time
from datetime import date
from pathlib import Path

from engine.plan import parse_plan, print_plan
from engine.qud.planner import PlannedQuestion

log = logging.getLogger(__name__)

OUT = Path("bench-results") / "plan-data" / "verified.jsonl"


class FixedPlanner:
    """The planner's interface with the plan given (verification runs a known plan)."""

    llm_calls = 0

    def __init__(self) -> None:
        self.text = ""

    def plan(self, question: str, *, previous=None, progress=None, cancel=None) -> PlannedQuestion:
        node = parse_plan(self.text)
        return PlannedQuestion(question, node, print_plan(node))


def open_engine(store_path: Path, registry):
    from engine.operators import Models
    from engine.qa import HindsightEngine
    from engine.retrieval.index import RetrievalIndex
    from engine.store import EventStore

    store = EventStore(store_path, read_only=True)
    otx = Models(sparse=registry.get("sparse_encoder"), patterns=registry.get("pattern_classifier"),
                 reranker=registry.get("event_classifier"), extractor=registry.on_first_use("extractor"),
                 embedder=registry.get("embedder"), segmenter=registry.on_first_use("segmenter"))
    index = RetrievalIndex(store, sparse=otx.sparse, embedder=otx.embedder)
    index.refresh()
    planner = FixedPlanner()
    return HindsightEngine(store, planner, otx, index=index), planner, store


def _same_twice(template, params: dict) -> bool:
    """Two of the template's parameters are drawn from one query and came out equal."""
    by_query: dict[str, list] = {}
    for name, sql in template.params:
        by_query.setdefault(sql, []).append(params.get(name))
    return any(len(v) != len(set(map(str, v))) for v in by_query.values())


def instances(persona_folder: Path, per_template: int, seed: int, *, families: bool = False) -> list[dict]:
    """New instances of the train templates (or, with ``families``, of the
    training-only question families) over the persona's facts."""
    from models.training.plan_families import FAMILIES
    from synth.canonical import connect
    from synth.questions import instantiate, templates

    info = json.loads((persona_folder / "ready.json").read_text())
    today = date.fromisoformat(info["today"])
    con = connect(persona_folder / "persona" / "canonical.jsonl")
    rng = random.Random(f"plan-data:{seed}:{info['persona']}")
    out: list[dict] = []
    cache: dict = {}
    try:
        for t in (FAMILIES if families else templates("train")):
            for inst in instantiate(t, con, persona=info["persona"], today=today, rng=rng, n=per_template,
                                    cache=cache):
                if _same_twice(t, inst["params"]):
                    continue  # "more in 2022 or in 2022": two parameters of one query drawn alike
                inst["id"] = f"v{seed}n{per_template}:{inst['id']}"
                out.append(inst)
    finally:
        con.close()
    return out


def main(argv: list[str] | None = None) -> None:
    from app.bench import scoring
    from app.bench.persona import DEFAULT_WORK, prepare
    from models.registry import ModelRegistry
    from models.training.plan_data import TRAIN_PERSONAS
    from models.training.plan_data import held_out_check
    from models.training.plan_families import family_sketches
    from models.training.plan_sketches import sketches

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--personas", nargs="+", default=list(TRAIN_PERSONAS))
    ap.add_argument("--per-template", type=int, default=6)
    ap.add_argument("--max-candidates", type=int, default=6)
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only", nargs="*", default=None, help="template id prefixes")
    ap.add_argument("--families", action="store_true",
                    help="the training-only question families (plan_families) instead of the train templates")
    ap.add_argument("--good-in", type=Path, nargs="*", default=[],
                    help="only templates with a verified plan in these earlier outputs (more instances of them)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if args.out.exists():
        done = {json.loads(line)["id"] for line in args.out.read_text(encoding="utf-8").splitlines() if line.strip()}
    good = set()
    for path in args.good_in:
        good |= {r["template"] for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r.get("plan")}
    held_out = held_out_check()  # nothing that names a test persona's entity is written or trained on
    registry = ModelRegistry()
    totals = {"instances": 0, "verified": 0, "executions": 0}
    t0 = time.time()
    with open(args.out, "a", encoding="utf-8") as out:
        for pid in args.personas:
            if pid not in TRAIN_PERSONAS:
                raise SystemExit(f"{pid} is not a train persona")
            prepared = prepare(pid, DEFAULT_WORK, print)
            insts = [i for i in instances(prepared.folder, args.per_template, args.seed, families=args.families)
                     if i["id"] not in done and (not args.only or i["template"].startswith(tuple(args.only)))
                     and not held_out(json.dumps(i, ensure_ascii=False, default=str))
                     and (not args.good_in or i["template"] in good)]
            engine, planner, store = open_engine(prepared.store_path, registry)
            try:
                for n, inst in enumerate(insts, 1):
                    totals["instances"] += 1
                    kept = None
                    tried = 0
                    candidates = (family_sketches if args.families else sketches)(inst["template"], inst["params"])
                    for plan in candidates[:args.max_candidates]:
                        planner.text = plan
                        tried += 1
                        totals["executions"] += 1
                        try:
                            answer = engine.ask(inst["question"], today=date.fromisoformat(inst["today"]),
                                                follows=None)
                        except Exception as exc:  # a candidate that breaks is a candidate that fails
                            log.warning("%s: %s", plan, exc)
                            continue
                        pred = answer.answer if answer.ok else None
                        hit = scoring.hit_at_1(pred, inst["answer"]) or (
                            inst["answer_type"] == "number" and scoring.relaxed_hit_at_1(pred, inst["answer"]))
                        if hit:
                            kept = plan
                            break
                    rec = {k: inst[k] for k in ("id", "persona", "template", "category", "split", "question",
                                                "today", "params", "answer", "answer_type")}
                    rec.update(plan=kept, tried=tried)
                    out.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
                    out.flush()
                    totals["verified"] += kept is not None
                    print(f"[{pid} {n}/{len(insts)}] {'OK ' if kept else '-- '} {inst['template']} "
                          f"({tried} tried, {time.time() - t0:.0f} s)", flush=True)
            finally:
                engine.close()
                store.close()
    registry.close()
    print(json.dumps(totals))


if __name__ == "__main__":
    main()
