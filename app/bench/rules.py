"""What each question-wording rule of the planner is worth (#38): for every
question of the fresh-phrasing train part, of the dev personas and of a train
persona (train templates, the demo's kind of question), the plan
the model wrote is run as it is, with every rule, and with every rule but one, and
each is scored against the gold. A rule whose removal loses no question on these
sets does not pay for itself. The answer's readings of the question's words
(``engine.qa.READINGS``: "the last 3 ...", "did I ...", "what was my longest ...") are
measured the same way: the product's plan, answered without each reading whose words
the question has. The fine-tuned planner runs no rules, so under it only the
readings vary.

The model plans each question once (the rules do not change what it writes); only
plans that differ are run again. The eval part and the test split are never used
here.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from app.bench import fresh as fresh_bench
from app.bench import persona as persona_bench
from app.bench.persona import DEFAULT_WORK, Echo
from engine.qa import READINGS, readings_of

ALL, NONE = "all rules", "no rules"


def reading_variant(reading: str) -> str:
    """The variant that answers without one of the answer's readings (``engine.qa.READINGS``)."""
    return f"reading:{reading}"


def measured() -> list[str]:
    """Every rule and reading the ablation measures, by variant name."""
    from engine.qud.planner import GROUND_RULES

    return [r.__name__ for r in GROUND_RULES] + [reading_variant(r) for r in sorted(READINGS)]


@dataclass
class _Given:
    """A planner that hands out the plan it was given (the one under test)."""

    planned: Any = None
    llm_calls: int = 0

    def plan(self, question: str, **_: Any):
        return self.planned


@dataclass
class _Ablating:
    """An asker that plans with the model once, then runs the plan under each set of
    rules and keeps every answer; it answers as the product does (every rule)."""

    owned: Any
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # question -> variant -> Answer
    plans: dict[str, dict[str, str]] = field(default_factory=dict)      # question -> variant -> plan text

    def __post_init__(self) -> None:
        from engine.qa import HindsightEngine

        engine = self.owned.inner
        self.planner = engine.planner
        self.given = _Given()
        self.runner = HindsightEngine(engine.store, self.given, engine.models, index=engine.index,
                                      retrieve_settings=engine.retrieve_settings)

    def ask(self, question: str, *, today: date | None = None):
        from engine.plan import print_plan
        from engine.qud.planner import GROUND_RULES, PlannedQuestion, PlanningError, _grounded

        ruled = hasattr(self.planner, "rules")  # the fine-tuned planner runs no rules: they are no variant
        if ruled:
            self.planner.rules = ()
        try:
            written = self.planner.plan(question)
        except PlanningError:  # no plan: the product's own answer, under every variant
            if ruled:
                self.planner.rules = GROUND_RULES
            answer = self.owned.ask(question, today=today)
            names = (NONE, ALL, *measured())
            self.answers[question] = dict.fromkeys(names, answer)
            self.plans[question] = dict.fromkeys(names, "")
            return answer
        variants = {NONE: written.plan, ALL: _grounded(written.plan, question, GROUND_RULES if ruled else ())}
        for rule in GROUND_RULES:
            variants[rule.__name__] = _grounded(written.plan, question,
                                                [r for r in GROUND_RULES if r is not rule] if ruled else ())
        by_text: dict[str, Any] = {}
        answers, plans = {}, {}
        for name, node in variants.items():
            text = print_plan(node)
            if text not in by_text:
                self.given.planned = PlannedQuestion(question, node, text, llm_calls=written.llm_calls)
                by_text[text] = self.runner.ask(question, today=today, follows=None)
            answers[name], plans[name] = by_text[text], text
        # the answer's readings of the question's words: the product's plan, answered
        # without each one whose words the question has (the others answer as the product)
        self.given.planned = PlannedQuestion(question, variants[ALL], plans[ALL], llm_calls=written.llm_calls)
        applies = readings_of(question)
        for reading in sorted(READINGS):
            answers[reading_variant(reading)], plans[reading_variant(reading)] = answers[ALL], plans[ALL]
            if reading in applies:
                self.runner.readings = READINGS - {reading}
                try:
                    answers[reading_variant(reading)] = self.runner.ask(question, today=today, follows=None)
                finally:
                    self.runner.readings = READINGS
                plans[reading_variant(reading)] = f"{plans[ALL]} (without {reading})"
        self.answers[question], self.plans[question] = answers, plans
        return answers[ALL]

    def close(self) -> None:
        self.owned.close()


def _opener(keep: list[_Ablating], echo: Echo) -> Callable[[str, Path], _Ablating]:
    def open_asker(method: str, store_path: Path) -> _Ablating:
        asker = _Ablating(persona_bench.open_method(method, store_path, echo=echo))
        keep.append(asker)
        return asker
    return open_asker


def _scored(records_file: Path, askers: Sequence[_Ablating], score: Callable[[dict], bool], set_name: str
            ) -> list[dict]:
    """Per question of the run: the score of each variant, and which variants changed its plan."""
    answers = {q: a for asker in askers for q, a in asker.answers.items()}
    plans = {q: p for asker in askers for q, p in asker.plans.items()}
    out = []
    for line in records_file.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        q = rec["question"]
        if q not in answers:
            continue
        item = {"id": rec["id"], "category": rec.get("category"), "question": q, "today": rec.get("today"),
                "answer": rec["gold"]}
        scores = {name: score(persona_bench.score_answer(item, ans, "reqap", rec["gold"]))
                  for name, ans in answers[q].items()}
        changed = sorted(n for n, t in plans[q].items() if n not in (ALL, NONE) and t != plans[q][ALL])
        out.append({"set": set_name, "id": rec["id"], "question": q, "scores": scores, "changed": changed,
                    "plans": plans[q]})
    return out


def run(*, limit: int | None = 40, personas: Sequence[str] = ("p5", "p6"), train_personas: Sequence[str] = ("p1",),
        work_dir: Path = DEFAULT_WORK, results_dir: Path = Path("bench-results"), echo: Echo = lambda _: None) -> dict:
    """Ablate every rule over the fresh train part, the dev personas and the train
    personas' train-template questions (``limit`` questions each); the figures and a
    per-question JSON-lines file."""
    items: list[dict] = []
    keep: list[_Ablating] = []
    figures = fresh_bench.run("reqap", part="train", work_dir=work_dir, results_dir=results_dir, echo=echo,
                              open_asker=_opener(keep, echo))
    items += _scored(Path(figures["records_file"]), keep, fresh_bench.headline, "fresh-train")
    for split, pid in [("dev", p) for p in personas] + [("train", p) for p in train_personas]:
        keep = []
        figures = persona_bench.run("reqap", split=split, persona=pid, limit=limit, work_dir=work_dir,
                                    results_dir=results_dir, echo=echo, open_asker=_opener(keep, echo))
        items += _scored(Path(figures["records_file"]), keep, lambda r: bool(r["hit"]), f"{split}-{pid}")
    out = Path(results_dir) / "rules-ablation-items.jsonl"
    with open(out, "w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False, default=str) + "\n")
    return summarise(items, measured()) | {"records_file": str(out)}


def summarise(items: Sequence[dict], rules: Sequence[str]) -> dict:
    sets = sorted({it["set"] for it in items})

    def hits(name: str, where: str | None = None) -> int:
        return sum(bool(it["scores"][name]) for it in items if where is None or it["set"] == where)

    per_rule = []
    for rule in rules:
        changed = [it for it in items if rule in it["changed"]]
        per_rule.append({"rule": rule, "questions_changed": len(changed),
                         "gain": hits(ALL) - hits(rule),  # what removing it loses (negative: removing it helps)
                         "gain_per_set": {s: hits(ALL, s) - hits(rule, s) for s in sets}})
    return {"questions": len(items), "sets": {s: sum(it["set"] == s for it in items) for s in sets},
            "hits_all_rules": hits(ALL), "hits_no_rules": hits(NONE),
            "hits_per_set": {s: {"all": hits(ALL, s), "none": hits(NONE, s)} for s in sets}, "rules": per_rule}


def table(figures: dict) -> str:
    n = figures["questions"]
    lines = [f"Question-wording rules and answer readings, ablated on {n} questions ("
             + ", ".join(f"{s}: {k}" for s, k in figures["sets"].items()) + ")", "",
             "| plans | " + " | ".join(figures["sets"]) + " | all |", "|---|" + "---:|" * (len(figures["sets"]) + 1)]
    for key, label in (("all", "with every rule"), ("none", "as the model wrote them")):
        total = figures["hits_all_rules"] if key == "all" else figures["hits_no_rules"]
        lines.append(f"| {label} | " + " | ".join(str(v[key]) for v in figures["hits_per_set"].values())
                     + f" | {total} of {n} |")
    lines += ["", "| rule or reading | questions it changes | right answers it adds (removing it loses) |", "|---|---:|---:|"]
    for r in sorted(figures["rules"], key=lambda r: (-r["gain"], -r["questions_changed"], r["rule"])):
        lines.append(f"| {r['rule']} | {r['questions_changed']} | {r['gain']:+d} |")
    return "\n".join(lines)
