"""(question, plan) pairs for the fine-tuned planner, each verified by execution.

A pair is kept only when running its plan over the persona's store, through the
product's own engine, gives the gold answer (exact, or relaxed for amounts). Plans
come from candidates, never from the gold SQL:

1. candidate plans attached to the **train** templates (``plan_sketches``) and to the
   training-only question families (``plan_families``: lookups, yes/no, first/last
   before or after, comparisons), run by ``app.bench.plan_verify`` over new instances
   drawn from the **train** personas' facts;
2. what the few-shot planner (``engine.qud.QudPlanner``) wrote for the train
   templates' questions — the records ``hindsight bench persona --split train``
   writes (plan, prediction, hit);
3. the few-shot planner's hand-written examples, which have no gold answer to run
   against: they are counted apart in the manifest.

Each verified (instance, plan) is then asked in every phrasing the template has, and
in surface variants people type (lower case, no question mark, a typo, "can you tell
me ..."). Dev and test templates, dev and test personas, and the fresh-phrasing set's
eval part are never read. The prompt is ``engine.qud.tuned``'s: the store's sources
and attribute names (a few lines dropped at random, so the model reads them rather
than assuming every source exists) and the question.

Run: ``python -m models.training.plan_data build [--records bench-results/persona-reqap-*.jsonl]``
(reads ``app.bench.plan_verify``'s verified.jsonl; writes ``bench-results/plan-data/pairs.jsonl.gz`` and its manifest).
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import logging
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from engine.plan import parse_plan, print_plan
from engine.qud.tuned import END, render_prompt, schema_lines
from models.training.planner_lora import DROP_LINE, attrs_read, family_of

log = logging.getLogger(__name__)

OUT_DIR = Path("bench-results") / "plan-data"
SEED = 38
VARIANTS = 2          # surface variants per phrasing, besides the phrasing itself
DROP_SOURCE = DROP_LINE  # chance of leaving an unrelated source line out of the prompt
TRAIN_PERSONAS = ("p1", "p2", "p3")


# --------------------------------------------------------------------------- surface variants
PREFIXES = ("hey, ", "quick question: ", "can you tell me ", "do you know ", "tell me ", "i wonder ",
            "please check: ", "hindsight, ", "so ", "ok, ")
SUFFIXES = ("", "", "", " please", " thanks", " ?", "??")


def _typo(text: str, rng: random.Random, keep: Sequence[str]) -> str:
    """One slip of the fingers in one longer word that is not a parameter value."""
    words = text.split(" ")
    kept = " ".join(keep).lower()
    cands = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha() and w.lower() not in kept]
    if not cands:
        return text
    i = rng.choice(cands)
    w = words[i]
    j = rng.randrange(1, len(w) - 2)
    kind = rng.random()
    if kind < 0.5:
        w = w[:j] + w[j + 1] + w[j] + w[j + 2:]    # swapped letters
    elif kind < 0.8:
        w = w[:j] + w[j + 1:]                      # a letter left out
    else:
        w = w[:j] + w[j] + w[j:]                   # a letter twice
    words[i] = w
    return " ".join(words)


def surface_variants(text: str, rng: random.Random, n: int, keep: Sequence[str] = ()) -> list[str]:
    """``n`` other ways of typing ``text`` (same meaning, same parameter values)."""
    out: list[str] = []
    for _ in range(n * 3):
        if len(out) >= n:
            break
        t = text
        if rng.random() < 0.5:
            t = t.lower()
        if rng.random() < 0.5:
            t = t.rstrip("?").rstrip()
        if rng.random() < 0.35:
            t = rng.choice(PREFIXES) + (t[0].lower() + t[1:] if t[:2] != "I " else t)
        if rng.random() < 0.35:
            t = _typo(t, rng, keep)
        if rng.random() < 0.2:
            t = t.rstrip("?") + rng.choice(SUFFIXES)
        t = " ".join(t.split())
        if t != text and t not in out:
            out.append(t)
    return out


# --------------------------------------------------------------------------- instances
@dataclass(frozen=True, slots=True)
class Instance:
    id: str
    persona: str
    template: str
    split: str
    params: dict
    today: str
    answer: list
    answer_type: str
    question: str


def load_instances(questions_path: Path) -> dict[str, Instance]:
    out = {}
    with open(questions_path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                q = json.loads(line)
                out[q["id"]] = Instance(q["id"], q["persona"], q["template"], q["split"], q["params"], q["today"],
                                        q["answer"], q["answer_type"], q["question"])
    return out


def phrasings(inst: Instance, rng: random.Random) -> list[str]:
    """Every text of the instance's template, with its parameters shown as people
    write them (a month as "May 2023" or "may 2023", a day in three forms)."""
    from synth.questions import _display

    t = train_template(inst.template)
    values = dict(inst.params)
    if "day" in values:
        values["day"] = date.fromisoformat(str(values["day"]))
    out = [inst.question]
    for text in t.texts:
        shown = {k: _display(k, v, rng) for k, v in values.items()}
        try:
            q = text.format(**shown) if shown else text
        except (KeyError, IndexError):
            continue
        if q not in out:
            out.append(q)
    return out


def train_template(template_id: str):
    """The template of a training instance: a benchmark template or a training-only
    family (``plan_families``)."""
    from models.training.plan_families import BY_ID
    from synth.questions import templates

    found = BY_ID.get(template_id) or next((x for x in templates() if x.id == template_id), None)
    if found is None:
        raise KeyError(f"{template_id}: no such template or training family")
    return found


def held_out_check():
    """A test: does a text quote a test template or a fresh eval question, or name an
    entity only the test personas have? Such text never enters the training data."""
    from synth.leakage import held_out_names, quoted

    names = sorted(held_out_names(), key=len, reverse=True)
    name_rx = re.compile("|".join(re.escape(n) for n in names)) if names else None

    def held_out(text: str) -> bool:
        return bool(quoted(text)) or bool(name_rx and name_rx.search(text))
    return held_out


def kept(record: dict, inst: Instance) -> bool:
    """A candidate's execution gave the gold answer: exactly, or within rounding for
    amounts (Rlx)."""
    if not record.get("ok") or not record.get("plan_text"):
        return False
    return bool(record.get("hit") or (inst.answer_type == "number" and record.get("rlx")))


# --------------------------------------------------------------------------- prompts
def schema_of(store_path: Path) -> list[tuple[str, str, list[str]]]:
    import duckdb

    from engine.qud.tuned import store_schema

    con = duckdb.connect(str(store_path), read_only=True)
    try:
        return store_schema(con)
    finally:
        con.close()


def schema_for(schema: Sequence[tuple[str, str, Sequence[str]]], plan_text: str, rng: random.Random) -> str:
    """The store's schema with a few lines left out: never one whose attributes the
    plan reads."""
    used = attrs_read(plan_text)
    lines = [row for row in schema if used & set(row[2]) or rng.random() >= DROP_SOURCE]
    return schema_lines(lines)


def example(question: str, plan_text: str, schema_text: str) -> dict:
    return {"prompt": render_prompt(question, schema_text), "completion": plan_text + END}


# --------------------------------------------------------------------------- build
def from_bench_records(records_files: Iterable[Path], instances: dict[str, Instance]) -> list[dict]:
    """Verified records out of ``hindsight bench persona`` runs: the few-shot planner's
    plans that gave the gold answer."""
    out = []
    for path in records_files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                rec = json.loads(line)
                inst = instances.get(rec["id"])
                if inst is not None and kept(rec, inst):
                    out.append(dict(id=inst.id, persona=inst.persona, template=inst.template, params=inst.params,
                                    today=inst.today, answer=inst.answer, answer_type=inst.answer_type,
                                    question=inst.question, split=inst.split, plan=rec["plan_text"],
                                    origin="few-shot planner"))
    return out


def hand_written() -> list[tuple[str, str]]:
    """The few-shot planner's own examples (written by the team for Hindsight's
    sources, checked against the test split by a test): operators and forms the
    templates never ask for (joins, follow-ups, dates, lists). Not executed: they
    have no gold answer, and the manifest counts them apart."""
    from engine.qud.examples import EXAMPLES

    return [(e.question, e.plan) for e in EXAMPLES]


def build(verified_records: Sequence[dict], work_dir: Path, out_dir: Path = OUT_DIR, *, seed: int = SEED,
          hand_written_copies: int = 3, base_pairs: Path | None = None) -> dict:
    """Training pairs from verified instance records (dicts with the instance's fields
    and ``plan``) -> ``out_dir/pairs.jsonl.gz`` + manifest. With ``base_pairs`` (an
    earlier build's pairs and, beside it, its manifest), the new instances' pairs are
    added to those: the earlier pairs are kept as they are (the hand-written examples
    with them), and an instance already there is not added again."""
    import gzip

    from models.training.plan_families import FAMILIES
    from synth.questions import templates

    split_of = {t.id: t.split for t in (*templates(), *FAMILIES)}
    rng = random.Random(seed)
    base: list[dict] = []
    if base_pairs is not None:
        with gzip.open(base_pairs, "rt", encoding="utf-8") as f:
            base = [json.loads(line) for line in f if line.strip()]
    had = {p["id"] for p in base}
    chosen: dict[str, dict] = {}
    for rec in verified_records:
        if not rec.get("plan") or rec.get("persona") not in TRAIN_PERSONAS \
                or split_of.get(rec.get("template")) != "train" or rec["id"] in had:
            continue  # only train templates of train personas, only verified plans, each once
        chosen.setdefault(rec["id"], rec)
    needed = TRAIN_PERSONAS if not base else sorted({r["persona"] for r in chosen.values()})
    schemas = {pid: schema_of(_persona_folder(work_dir, pid) / "hindsight.duckdb") for pid in needed}
    held_out = held_out_check()

    pairs: list[dict] = []
    dropped = 0
    by_op: Counter = Counter()
    by_family: Counter = Counter()
    by_origin: Counter = Counter()
    for iid in sorted(chosen):
        rec = chosen[iid]
        inst = Instance(rec["id"], rec["persona"], rec["template"], rec.get("split", "train"), rec["params"],
                        rec["today"], rec["answer"], rec["answer_type"], rec["question"])
        plan_text = print_plan(parse_plan(rec["plan"]))
        keep = [str(v) for v in inst.params.values()]
        for text0 in phrasings(inst, rng):
            for text in [text0, *surface_variants(text0, rng, VARIANTS, keep)]:
                if held_out(text) or held_out(plan_text):  # says a test template's or fresh eval question's words
                    dropped += 1
                    continue
                ex = example(text, plan_text, schema_for(schemas[inst.persona], plan_text, rng))
                ex.update(id=iid, template=inst.template, question=text, plan=plan_text)
                pairs.append(ex)
        for op in set(re.findall(r"\b([A-Z_]{3,})\(", plan_text)):
            by_op[op] += 1
        by_family[family_of(inst.template)] += 1  # extra:lookup, count, ...
        by_origin[rec.get("origin", "template sketch")] += 1
    hand = hand_written() if not base else []  # an earlier build's pairs hold them already
    for i, (question, plan) in enumerate(hand):
        plan_text = print_plan(parse_plan(plan))
        for c in range(hand_written_copies):
            pid = TRAIN_PERSONAS[c % len(TRAIN_PERSONAS)]
            text = question if c == 0 else (surface_variants(question, rng, 1) or [question])[0]
            ex = example(text, plan_text, schema_for(schemas[pid], plan_text, rng))
            ex.update(id=f"hand:{i}", template="hand-written", question=text, plan=plan_text)
            pairs.append(ex)
    added = len(pairs)
    pairs = base + pairs
    rng.shuffle(pairs)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = out_dir / "pairs.jsonl.gz"
    with gzip.GzipFile(data, "wb", mtime=0) as raw:
        for p in pairs:
            raw.write((json.dumps(p, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    instances, hand_count, earlier = len(chosen), len(hand), {}
    if base_pairs is not None:  # the counts are the earlier build's and this one's together
        before = json.loads(base_pairs.with_name(base_pairs.name.replace(".jsonl.gz", ".manifest.json"))
                            .read_text(encoding="utf-8"))
        earlier = {"added_to": {"sha256": before["sha256"], "pairs": len(base)}, "pairs_added": added}
        by_origin.update(before.get("instances_per_origin", {}))
        by_op.update(before.get("instances_per_operator", {}))
        by_family.update(before.get("instances_per_family", {}))
        instances += before.get("verified_instances", 0)
        hand_count = before.get("hand_written_examples", 0)
        dropped += before.get("dropped_as_held_out", 0)
    manifest = {"pairs": len(pairs), "verified_instances": instances, "hand_written_examples": hand_count,
                "dropped_as_held_out": dropped,
                "sha256": digest, "seed": seed, "personas": list(TRAIN_PERSONAS),
                "instances_per_origin": dict(by_origin),
                "instances_per_operator": dict(sorted(by_op.items())),
                "instances_per_family": dict(sorted(by_family.items())), **earlier}
    (out_dir / "pairs.manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _persona_folder(work_dir: Path, pid: str) -> Path:
    hits = sorted(Path(work_dir).glob(f"*/{pid}/ready.json"), key=lambda p: p.stat().st_mtime)
    if not hits:
        raise SystemExit(f"persona {pid} is not prepared under {work_dir}: run hindsight bench persona --split train")
    return hits[-1].parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="training pairs from verified plans")
    b.add_argument("--verified", type=Path, nargs="*", default=[Path("bench-results/plan-data/verified.jsonl")],
                   help="plan_verify's JSON-lines")
    b.add_argument("--records", nargs="*", default=[], help="bench persona JSON-lines files (globs allowed)")
    b.add_argument("--work-dir", type=Path, default=Path("bench-results") / "work")
    b.add_argument("--out", type=Path, default=OUT_DIR)
    b.add_argument("--base-pairs", type=Path, default=None,
                   help="an earlier build's pairs.jsonl.gz (its manifest beside it): add the new pairs to those")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    verified: list[dict[str, Any]] = []
    for path in args.verified:
        verified += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    files = [Path(p) for pat in args.records for p in sorted(glob.glob(pat))]
    if files:
        instances: dict[str, Instance] = {}
        for pid in TRAIN_PERSONAS:
            instances.update(load_instances(_persona_folder(args.work_dir, pid) / "persona" / "questions.jsonl"))
        verified += from_bench_records(files, instances)
    print(json.dumps(build(verified, args.work_dir, args.out, base_pairs=args.base_pairs), indent=2))


if __name__ == "__main__":
    main()
