"""Recursive question decomposition (ReQAP's QUD stage) with a local LLM.

Each LLM call writes one step for one (sub-)question: an operator call whose plan
arguments are either complete operators or ``QUD("sub-question")``, which is then
decomposed by another call, until no QUD remains (bounded by ``max_steps``). The
grammar from ``engine.plan.grammar`` makes every step well-formed; the finished
plan is validated (every attribute read is produced below) and retried at a higher
temperature when it is not.

Prompts share one stable prefix (instructions + every example), so llama.cpp keeps
its KV cache between calls and only the question's few tokens are evaluated per
step. Plans for the same normalised question are cached.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from engine.plan import PlanSyntaxError, parse_plan, print_plan, validate_plan
from engine.plan.grammar import plan_grammar
from engine.plan.nodes import PlanNode, Qud
from engine.plan.ground import (count_instead_of_adding_text, count_listed_rows, count_orders, days_since_the_last_time,
                                drop_ungrounded_filters, first_or_last_time, keep_to_the_year_asked,
                                last_month_as_said, search_the_service_named)
from engine.plan.repair import add_missing_extracts, bind_relative_dates
from engine.plan.spec import FUNCTIONS, OPERATORS, ParamKind
from engine.protocols import Planner
from engine.qud.examples import EXAMPLES, Example

log = logging.getLogger(__name__)


class PlanningError(RuntimeError):
    """No valid plan could be made; ``attempts`` lists what was tried and why it failed."""

    def __init__(self, message: str, attempts: Sequence[str] = ()):
        super().__init__(message)
        self.attempts = list(attempts)


class PlanningCancelled(Exception):
    pass


@dataclass(slots=True)
class PlannedQuestion:
    question: str
    plan: PlanNode
    plan_text: str
    llm_calls: int = 0
    steps: list[tuple[str, str]] = field(default_factory=list)  # (sub-question, step text)
    cached: bool = False
    ms: float = 0.0
    attempts: int = 1


def normalise(question: str) -> str:
    q = re.sub(r"\s+", " ", question.strip().lower())
    return q.rstrip("?.! ")


class PlanCache:
    """Normalised question -> plan text, kept in a JSON file (or in memory).

    A plan is only as good as the prompt it came from: the planner binds the cache
    to a fingerprint of its instructions and examples (:meth:`bind`), and plans
    stored under another fingerprint, or before fingerprints existed, are dropped."""

    def __init__(self, path: Path | None = None, max_entries: int = 5000):
        self.path = Path(path) if path else None
        self.max_entries = max_entries
        self._plans: dict[str, str] = {}
        self._library: str | None = None  # None: nothing stored yet says which prompt
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        if self.path and self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                if isinstance(data, dict) and isinstance(data.get("plans"), dict):
                    self._plans = {str(k): str(v) for k, v in data["plans"].items()}
                    self._library = str(data.get("library") or "")
                elif isinstance(data, dict):  # the first format: plans only, from an unknown prompt
                    self._plans = {str(k): str(v) for k, v in data.items()}
                    self._library = ""
            except (OSError, ValueError) as exc:
                log.warning("ignoring unreadable plan cache %s: %s", self.path, exc)

    def bind(self, library: str) -> None:
        """Serve only plans made with the prompt whose fingerprint is ``library``."""
        with self._lock:
            if self._library is not None and self._library != library and self._plans:
                log.info("plan cache: dropping %d plans made with other examples", len(self._plans))
                self._plans = {}
            self._library = library

    def get(self, question: str) -> str | None:
        with self._lock:
            plan = self._plans.get(normalise(question))
            if plan is None:
                self.misses += 1
            else:
                self.hits += 1
            return plan

    def put(self, question: str, plan_text: str) -> None:
        with self._lock:
            self._plans[normalise(question)] = plan_text
            while len(self._plans) > self.max_entries:
                self._plans.pop(next(iter(self._plans)))
            if self.path:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps({"library": self._library or "", "plans": self._plans}, indent=0,
                                          ensure_ascii=False), encoding="utf-8")
                os.replace(tmp, self.path)

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


def _signature(spec, positional: bool) -> str:
    """``FILTER(l=, filter=)``; positionally ``FILTER(l, filter=)``."""
    names = [p.name + ("" if positional and i < spec.unnamed else "=") for i, p in enumerate(spec.params)]
    return f"{spec.name}({', '.join(names)})"


def instructions(positional: bool = False) -> str:
    ops = "\n".join(f"- {_signature(spec, positional)}: {spec.doc}" for spec in OPERATORS.values())
    fns = ", ".join(f"{name}()" for name in FUNCTIONS)
    return (
        "You write plans that answer questions about one person's own data. The data is a list of events "
        "(songs played, shows watched, mails, calendar entries, purchases, workouts, health summaries, places, "
        "journal notes, chatbot conversations), each with start, end, source, kind, title, text and more "
        "attributes.\n"
        "A plan is one line of nested operator calls:\n" + ops + "\n"
        "QUD(\"sub-question\") stands for a part to be planned later.\n"
        "Rules: an attribute other than start, end, source, kind, title, text must be produced by EXTRACT, "
        "MAP, GROUP_BY or UNNEST before it is read; e.start etc. are local time; write other attributes as "
        "e[\"name\"]; use today() for relative dates (\"last year\" is year(today()) - 1). "
        "GROUP_BY adds group and count. Functions: " + fns + ".\n"
        "A follow-up is written as 'previous question | follow-up' and gets a complete plan.\n\n")


def render_example(ex: Example, positional: bool = False) -> str:
    plan = print_plan(parse_plan(ex.plan), positional=True) if positional else ex.plan
    return f"Q: {ex.question}\nP: {plan}\n\n"


def warm_up(llm, prefix: str, state_dir=None) -> None:
    """Have ``llm`` evaluate ``prefix`` now; one that can keep the prefix's state on
    disk keeps it in ``state_dir``."""
    preload = getattr(llm, "preload", None)
    if callable(preload):
        if state_dir is not None:
            preload(prefix, state_dir)
        else:
            preload(prefix)


def _grounded(node: PlanNode, question: str, rules: Sequence[Callable[[PlanNode, str], PlanNode]] | None = None
              ) -> PlanNode:
    """``node`` without time filters the question does not ask for, kept to the year a
    question names that it says nowhere, and to last month's year and month where "last
    month" got a year alone, counting where it adds up text, lists what a counting
    question means to count or counts an order's items, taking the first or last start
    where a "when" question got a list or the other one, the days since where a "how
    many days ago" one did, and searching the service a question names; each where the
    rewritten plan is valid (``rules``: these, unless given)."""
    for rule in GROUND_RULES if rules is None else rules:
        grounded = rule(node, question)
        if grounded is not node and not validate_plan(grounded):
            log.info("%s for %r: %s -> %s", rule.__name__, question, print_plan(node), print_plan(grounded))
            node = grounded
    return bound_dates(node)


#: The rules that rewrite a plan by the question's words, in the order they run. #38
#: wants each gone whose removal does not lower the figures; ``hindsight bench rules``
#: measures each, and the 19 of 28 whose removal lost no right answer on the fresh
#: train part, the dev personas and a train persona are gone.
GROUND_RULES: tuple[Callable[[PlanNode, str], PlanNode], ...] = (
    drop_ungrounded_filters, keep_to_the_year_asked, last_month_as_said,
    count_instead_of_adding_text, count_listed_rows, count_orders,
    first_or_last_time, days_since_the_last_time, search_the_service_named)


def bound_dates(node: PlanNode) -> PlanNode:
    """``node`` with a relative date's month compared together with its year
    (:func:`engine.plan.repair.bind_relative_dates`), where the result is valid: a
    repair of the plan's own meaning, whatever the question said."""
    bound = bind_relative_dates(node)
    if bound is not node and not validate_plan(bound):
        log.info("bound relative dates: %s -> %s", print_plan(node), print_plan(bound))
        return bound
    return node


def _replace_quds(node: PlanNode, fn: Callable[[Qud], PlanNode]) -> PlanNode:
    """The tree with every Qud replaced by ``fn(qud)`` (frozen nodes: rebuilt)."""
    if isinstance(node, Qud):
        return fn(node)
    spec = OPERATORS.get(node.OP)
    if spec is None:
        return node
    changes = {}
    for p in spec.params:
        if p.kind is ParamKind.PLAN:
            child = getattr(node, p.name)
            new = _replace_quds(child, fn)
            if new is not child:
                changes[p.name] = new
    return replace(node, **changes) if changes else node


def _first_qud(node: PlanNode) -> Qud | None:
    if isinstance(node, Qud):
        return node
    for child in node.children():
        found = _first_qud(child)
        if found is not None:
            return found
    return None


class QudPlanner:
    """Turns questions into validated plans with a :class:`~engine.protocols.Planner`."""

    def __init__(self, llm: Planner, *, examples: Sequence[Example] = EXAMPLES, cache: PlanCache | None = None,
                 max_steps: int = 6, retries: int = 2, max_tokens: int = 220, positional: bool = False):
        self.llm = llm
        self.examples = tuple(examples)
        self.cache = cache if cache is not None else PlanCache()
        self.max_steps = max_steps
        self.retries = retries
        self.max_tokens = max_tokens
        #: the question-wording rules each plan goes through (a benchmark measures without some)
        self.rules: Sequence[Callable[[PlanNode, str], PlanNode]] = GROUND_RULES
        # positional=True: the model writes inputs and queries without their names (a
        # 5% shorter prefix). Measured, and not the default: planning took as long;
        # TimelineQA had 20 of 36 right (18 named), but the demo's "my favourite
        # restaurant" came out as a list of 13 attribute names, repeated. Writing every
        # argument without its name planned 10-15% faster and lost plans (17 of 36).
        self.positional = positional
        # Every example, every time: the prefix's KV cache is evaluated once and reused. ReQAP
        # instead chooses examples per question (BM25); measured here by leaving the other
        # examples out of the cached prefix's attention (the cheapest way to choose without
        # evaluating a new prompt): with the 20 best of 78, planning took 2.84 s instead of
        # 3.28 s (TimelineQA median) but 14 of 36 multi-hop questions were right, not 18;
        # with the best 40, 23 of 88 plans stayed the same and planning was 6% faster.
        self.prefix = instructions(positional) + "".join(render_example(e, positional) for e in self.examples)
        # Plans are tied to the prompt and to the model that wrote them: another GGUF
        # (the HINDSIGHT_PLANNER_GGUF setting) writes other plans for the same prompt.
        # The cache holds the model's plan before the question-wording rules, which run
        # again on every hit, so a rule removed or changed never lives on in the cache
        # ("raw": caches from before held plans after the rules, and are dropped).
        model = str(getattr(llm, "identity", "") or "")
        self.cache.bind(hashlib.sha256((self.prefix + ("\x1f" + model if model else "") + "\x1fraw").encode())
                        .hexdigest()[:16])
        # The prompt ends at "P:" and the model writes " APPLY(...": a prompt ending in a
        # space splits the space-prefixed token the model wants and derails it.
        self.grammar = plan_grammar(positional).replace("root ::= plan", 'root ::= " "? plan', 1)
        assert 'root ::= " "? plan' in self.grammar
        self.llm_calls = 0

    def warm_up(self, state_dir=None) -> None:
        """Evaluate the stable prefix now (the first question otherwise pays for it)."""
        warm_up(self.llm, self.prefix, state_dir)

    def _step(self, question: str, temperature: float) -> str:
        prompt = f"{self.prefix}Q: {question}\nP:"
        self.llm_calls += 1
        text = self.llm.complete(prompt, grammar=self.grammar, max_tokens=self.max_tokens, stop=["\n"],
                                 temperature=temperature)
        return text.strip()

    def plan(self, question: str, *, previous: str | None = None,
             progress: Callable[[str], None] | None = None,
             cancel: threading.Event | None = None) -> PlannedQuestion:
        asked = f"{previous} | {question}" if previous else question
        t0 = time.perf_counter()
        cached = self.cache.get(asked)
        if cached is not None:
            try:
                node = parse_plan(cached)
                if not validate_plan(node):
                    node = _grounded(node, asked, self.rules)  # the cache holds the plan before the rules
                    return PlannedQuestion(asked, node, print_plan(node), cached=True,
                                           ms=(time.perf_counter() - t0) * 1000)
            except PlanSyntaxError:
                pass  # an old cache entry the current language rejects: plan afresh
        failures: list[str] = []
        calls_before = self.llm_calls
        for attempt in range(self.retries + 1):
            temperature = 0.0 if attempt == 0 else 0.4 + 0.2 * attempt
            steps: list[tuple[str, str]] = []
            try:
                node = self._decompose(asked, temperature, steps, progress, cancel)
            except PlanSyntaxError as exc:
                failures.append(f"attempt {attempt + 1}: the model wrote an unparseable step ({exc})")
                continue
            except _TooManySteps as exc:
                failures.append(f"attempt {attempt + 1}: {exc}")
                continue
            problems = validate_plan(node)
            if problems:
                repaired = add_missing_extracts(count_instead_of_adding_text(node, asked))
                if repaired is not node and not validate_plan(repaired):
                    log.info("repaired plan for %r: %s -> %s", asked, print_plan(node), print_plan(repaired))
                    node, problems = repaired, []
            if problems:
                failures.append(f"attempt {attempt + 1}: {print_plan(node)} — "
                                + "; ".join(str(p) for p in problems[:3]))
                continue
            self.cache.put(asked, print_plan(node))
            node = _grounded(node, asked, self.rules)
            text = print_plan(node)
            return PlannedQuestion(asked, node, text, llm_calls=self.llm_calls - calls_before, steps=steps,
                                   ms=(time.perf_counter() - t0) * 1000, attempts=attempt + 1)
        raise PlanningError(f"no valid plan after {self.retries + 1} attempts", failures)

    def _decompose(self, question: str, temperature: float, steps: list[tuple[str, str]],
                   progress: Callable[[str], None] | None, cancel: threading.Event | None) -> PlanNode:
        def check() -> None:
            if cancel is not None and cancel.is_set():
                raise PlanningCancelled()

        check()
        if progress:
            progress(f"Planning step 1: {question}")
        text = self._step(question, temperature)
        steps.append((question, text))
        node = parse_plan(text)
        while (qud := _first_qud(node)) is not None:
            if len(steps) >= self.max_steps:
                raise _TooManySteps(f"still undecomposed after {self.max_steps} steps: {qud.question!r}")
            check()
            if progress:
                progress(f"Planning step {len(steps) + 1}: {qud.question}")
            sub_text = self._step(qud.question, temperature)
            steps.append((qud.question, sub_text))
            sub = parse_plan(sub_text)
            target = qud
            node = _replace_quds(node, lambda q: sub if q is target else q)
        return node


class _TooManySteps(Exception):
    pass
