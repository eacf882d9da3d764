"""The fine-tuned planner: one LLM call writes the whole plan from a short prompt.

The prompt holds the plan language (operators and functions, from the spec), the
sources and attribute names the user's store has — names only, never values from
the data — and the question. Nothing else: no examples, no rules keyed to the
question's words. The model learned the language from execution-verified
(question, plan) pairs (``models.training.plan_data``); the grammar keeps every
token it writes inside the language, and the finished plan is validated, repaired
structurally (an attribute read that nothing extracts) and retried at a higher
temperature when it is not valid.

The prompt is ChatML, the instruct model's own format; everything up to the
question is the same for every question over one store, so llama.cpp keeps its KV
cache and evaluates only the question's tokens.
"""
from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from functools import cache

from engine.plan import PlanSyntaxError, parse_plan, print_plan, validate_plan
from engine.plan.grammar import build_grammar
from engine.plan.repair import add_missing_extracts
from engine.plan.spec import FUNCTIONS, OPERATORS
from engine.protocols import Planner
from engine.qud.planner import (PlanCache, PlannedQuestion, PlanningCancelled, PlanningError, _signature, bound_dates,
                               warm_up)

# One line per source and kind: "spotify/music_stream: album, artist, ...".
Schema = Sequence[tuple[str, str, Sequence[str]]]

SCHEMA_SQL = ("SELECT source, kind, list(DISTINCT k ORDER BY k) FROM "
              "(SELECT source, kind, unnest(json_keys(attributes)) AS k FROM events WHERE attributes IS NOT NULL) "
              "GROUP BY source, kind ORDER BY source, kind")
KINDS_SQL = "SELECT DISTINCT source, kind FROM events ORDER BY source, kind"


@cache
def system_text() -> str:
    """The plan language, derived from the spec (so it changes with the language)."""
    ops = "\n".join(f"- {_signature(spec, positional=False)}: {spec.doc}" for spec in OPERATORS.values())
    fns = ", ".join(f"{name}()" for name in FUNCTIONS)
    return ("You turn a question about one person's own data into a plan: one line of nested operator calls, "
            "run exactly over their events. Every event has start, end, source, kind, title and text; the "
            "sources list the other attributes each kind has.\n"
            "Operators:\n" + ops + "\n"
            "An attribute other than start, end, source, kind, title, text must be produced by EXTRACT, MAP, "
            "GROUP_BY or UNNEST before it is read; write it as e[\"name\"]. Times are local. Use today() for "
            "relative dates. Functions: " + fns + ".\n"
            "A follow-up comes as 'earlier question | follow-up' and gets a complete plan.")


def schema_lines(schema: Schema) -> str:
    return "\n".join(f"- {source}/{kind}: {', '.join(attrs) if attrs else '(no attributes)'}"
                     for source, kind, attrs in schema)


def store_schema(con) -> list[tuple[str, str, list[str]]]:
    """(source, kind, attribute names) for every kind of event in the store that the
    DuckDB connection ``con`` reads; kinds without attributes get an empty list."""
    named = {(s, k): list(attrs) for s, k, attrs in con.execute(SCHEMA_SQL).fetchall()}
    return [(s, k, named.get((s, k), [])) for s, k in con.execute(KINDS_SQL).fetchall()]


def prompt_prefix(schema_text: str) -> str:
    """Everything before the question: the same for every question over one store."""
    return (f"<|im_start|>system\n{system_text()}<|im_end|>\n<|im_start|>user\n"
            f"Sources:\n{schema_text}\n\nQuestion: ")


def render_prompt(question: str, schema_text: str) -> str:
    return f"{prompt_prefix(schema_text)}{question}<|im_end|>\n<|im_start|>assistant\n"


END = "<|im_end|>"


class TunedPlanner:
    """Questions to validated plans with a fine-tuned :class:`~engine.protocols.Planner`
    (one call per plan). ``schema`` gives the store's current schema text; it is
    asked for on every plan (the caller keeps it cheap)."""

    def __init__(self, llm: Planner, schema: Callable[[], str], *, cache: PlanCache | None = None,
                 retries: int = 2, max_tokens: int = 320):
        self.llm = llm
        self.schema = schema
        self.cache = cache if cache is not None else PlanCache()
        self.retries = retries
        self.max_tokens = max_tokens
        self.grammar = build_grammar(whole=True).to_gbnf()
        self.llm_calls = 0
        self._bound: str | None = None

    @property
    def prefix(self) -> str:
        return prompt_prefix(self.schema())

    def _bind(self, prefix: str) -> None:
        """Cached plans are only as good as the prompt (and model) they came from."""
        if prefix != self._bound:
            model = str(getattr(self.llm, "identity", "") or "")
            self.cache.bind(hashlib.sha256((prefix + "\x1f" + model).encode()).hexdigest()[:16])
            self._bound = prefix

    def warm_up(self, state_dir=None) -> None:
        """Evaluate the store's prompt prefix now (the first question otherwise pays for it)."""
        warm_up(self.llm, self.prefix, state_dir)

    def plan(self, question: str, *, previous: str | None = None,
             progress: Callable[[str], None] | None = None,
             cancel: threading.Event | None = None) -> PlannedQuestion:
        asked = f"{previous} | {question}" if previous else question
        t0 = time.perf_counter()
        schema = self.schema()
        self._bind(prompt_prefix(schema))
        cached = self.cache.get(asked)
        if cached is not None:
            try:
                node = parse_plan(cached)
                if not validate_plan(node):
                    node = bound_dates(node)  # entries cached before the repair existed
                    return PlannedQuestion(asked, node, print_plan(node), cached=True,
                                           ms=(time.perf_counter() - t0) * 1000)
            except PlanSyntaxError:
                pass
        prompt = render_prompt(asked, schema)
        failures: list[str] = []
        calls_before = self.llm_calls
        for attempt in range(self.retries + 1):
            if cancel is not None and cancel.is_set():
                raise PlanningCancelled()
            if progress:
                progress(f"Planning: {asked}" + (f" (try {attempt + 1})" if attempt else ""))
            temperature = 0.0 if attempt == 0 else 0.3 + 0.2 * attempt
            self.llm_calls += 1
            text = self.llm.complete(prompt, grammar=self.grammar, max_tokens=self.max_tokens, stop=[END, "\n"],
                                     temperature=temperature).strip()
            try:
                node = parse_plan(text)
            except PlanSyntaxError as exc:
                failures.append(f"attempt {attempt + 1}: the model wrote an unparseable plan ({exc})")
                continue
            problems = validate_plan(node)
            if problems:
                repaired = add_missing_extracts(node)
                if repaired is not node and not validate_plan(repaired):
                    node, problems = repaired, []
            if problems:
                failures.append(f"attempt {attempt + 1}: {print_plan(node)} — "
                                + "; ".join(str(p) for p in problems[:3]))
                continue
            node = bound_dates(node)
            plan_text = print_plan(node)
            self.cache.put(asked, plan_text)
            return PlannedQuestion(asked, node, plan_text, llm_calls=self.llm_calls - calls_before,
                                   steps=[(asked, text)], ms=(time.perf_counter() - t0) * 1000,
                                   attempts=attempt + 1)
        raise PlanningError(f"no valid plan after {self.retries + 1} attempts", failures)
