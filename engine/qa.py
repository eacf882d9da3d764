"""The question engine: QUD (plan) then OTX (execute), as one ``ask`` call.

It implements :class:`engine.answer.QuestionEngine`. What it cannot answer it says
plainly — which plans were tried, which step failed, which searches found nothing —
and never makes up a value. Models come in through the planner and
``engine.operators.Models``; building the real ones is the shells' job.
"""
from __future__ import annotations

import calendar

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from typing import Any

from engine.answer import FOLLOWS_AUTO, Answer, AskProgress, AskProgressCallback, PlanStep, jsonable
from engine.execute import ExecutionError, NodeStats, execute
from engine.operators import ExecutionCancelled, Models, RetrieveSettings
from engine.plan import expr as X
from engine.plan import parse_plan, print_plan, validate_plan
from engine.plan.ground import DAYS_AGO
from engine.plan.names_given import NameBook, give_names_back
from engine.plan.nodes import GroupBy, PlanNode
from engine.plan.repair import over_the_days_read
from engine.plan.rows import Row
from engine.plan.spec import OPERATORS, Output
from engine.qud.planner import PlannedQuestion, PlanningCancelled, PlanningError, QudPlanner
from engine.qud.store_names import store_names
from engine.temporal import read_dates

log = logging.getLogger(__name__)

_FOLLOW_UP = re.compile(r"^\s*(and|what about|how about|same for|also|but|only|just)\b", re.I)


#: A follow-up is planned with at most this many questions above it (its parent last).
CONTEXT_QUESTIONS = 3


class Cancelled(Exception):
    pass


def follow_up_chain(history: Sequence[Answer], parent: int | None) -> list[int]:
    """``parent`` and the questions it followed, root first (indices into ``history``)."""
    chain: list[int] = []
    node = parent
    while node is not None and 0 <= node < len(history) and node not in chain:
        chain.append(node)
        node = history[node].follows
    return chain[::-1]


def is_follow_up(question: str) -> bool:
    return bool(_FOLLOW_UP.match(question)) or len(question.split()) <= 3


_YES_NO = re.compile(r"^\s*(did|do|does|have|has|had|was|were|am|is)\s+(i|we|my)\b", re.I)

#: The answer's readings of the question's words, where the answer's shape comes from
#: the wording and not from the plan: "the last 3 ..." cuts the rows to the latest
#: three, "did I ..." answers yes or no, "what was my longest run" names the run's day.
#: ``HindsightEngine.readings`` holds the ones in use; ``hindsight bench rules``
#: measures what each is worth (#38: one that does not pay is to go).
READINGS = frozenset({"latest_asked", "yes_no", "which_extreme"})


def is_yes_no(question: str) -> bool:
    """"Did I go hiking on Christmas?": answered yes or no, with the entries as evidence."""
    return bool(_YES_NO.match(question.split(" | ")[-1]))


def readings_of(question: str) -> frozenset[str]:
    """The readings whose words ``question`` has (each may still not change its answer)."""
    found = {"latest_asked": _latest_asked(question) is not None, "yes_no": is_yes_no(question),
             "which_extreme": _WHICH_EXTREME.search(question) is not None}
    return frozenset(name for name, said in found.items() if said)


def _extracted(plan, rows: Sequence[Row]) -> list[tuple[Any, Row]] | None:
    """The values a plan that ends in EXTRACT asked for ("what did I eat for breakfast
    on ..." -> the food), one per row that has one (empty when none has); None when it ends elsewhere, or
    when every extracted value is one a FILTER above compares: those were extracted to
    choose rows, and the rows are the answer ("What did I eat in Rome, Italy?" was
    answered "Rome, Italy" 42 times, "What did I order that was cancelled?" would be
    "cancelled")."""
    node, fixed = plan, set()
    while node.OP == "FILTER":  # FILTER over EXTRACT still answers with the extracted values
        fixed |= _fixed_by(node.filter)
        node = node.l
    names = _asked_of(node)
    if not names or set(names) <= fixed:
        return None
    values = []
    for r in rows:
        got = [r.values.get(a) for a in names]
        got = [v for v in got if v not in (None, "")]
        if got:
            values.append((got[0] if len(got) == 1 else got, r))
    return values


def not_named_by(question: str, found: Sequence[tuple[Any, Row]]) -> tuple[list[tuple[Any, Row]], list[str]]:
    """``found`` without the text values whose every word the question says, and those
    values, once each. What a question asks is what it does not say: asked the seat
    on "the flight to Tokyo", the extractor answered "Tokyo"; the address of "Masala
    Hesse", "Masala Hesse"."""
    said = set(_WORDS.findall(question.lower()))
    kept, echoed = [], []
    for value, row in found:
        words = _WORDS.findall(value.lower()) if isinstance(value, str) else []
        if words and set(words) <= said:
            if value not in echoed:
                echoed.append(value)
        else:
            kept.append((value, row))
    return kept, echoed


_WORDS = re.compile(r"[^\W_]+")


def distinct_best_first(found: Sequence[tuple[Any, Row]], relevance: dict[str, float]) -> list[tuple[Any, int]]:
    """Each value once, with how many rows gave it: the value of the row nearest the
    question first (``relevance``: an event id's cosine with the question; a row is as
    near as its nearest event), then the rest in their order. A lookup's answer is one
    value among the rows searched ("the order number for the desk lamp" among a shop's
    orders), and the row it comes from is the one the question describes best."""
    order: dict[str, int] = {}
    best: dict[str, float] = {}
    count: dict[str, int] = {}
    first: dict[str, Any] = {}
    for n, (value, row) in enumerate(found):
        key = repr(jsonable(value))
        near = max((relevance.get(i, float("-inf")) for i in row.ids), default=float("-inf"))
        if key not in first:
            first[key], order[key], best[key], count[key] = value, n, near, 0
        count[key] += 1
        best[key] = max(best[key], near)
    ranked = sorted(first, key=lambda k: (-best[k], order[k]))
    return [(first[k], count[k]) for k in ranked]


def _below_filters(plan):
    """The node under the FILTERs at the top of ``plan``."""
    while plan.OP == "FILTER":
        plan = plan.l
    return plan


def _asked_of(node) -> tuple[str, ...]:
    """What an EXTRACT at the top of ``node`` asks for, or one on a side of a JOIN
    there ("What did I eat on the day I played football?" extracts the food of the
    meals the JOIN pairs with the games); () when there is none."""
    if node.OP == "EXTRACT":
        return node.attr_names
    if node.OP != "JOIN":
        return ()
    names: list[str] = []
    for side in (node.l1, node.l2):
        while side.OP == "FILTER":
            side = side.l
        if side.OP == "EXTRACT":
            names.extend(side.attr_names)
    return tuple(dict.fromkeys(names))


def _fixed_by(fn: X.Lambda) -> set[str]:
    """The attributes a filter keeps to given values (``e["city"] == "Rome"``,
    ``e["status"] in ["cancelled"]``), whatever else it says."""
    var = fn.params[0]
    return {attr for node in X.walk(fn.body)
            if isinstance(node, X.Compare) and len(node.ops) == 1 and node.ops[0] in ("==", "in")
            and isinstance(node.comparators[0], (X.Const, X.ListLit))
            for attr in X.attributes_read(node.left, var)}


def _fmt_number(v: float | int) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if abs(v - round(v)) < 1e-9 and abs(v) < 1e15:
        return f"{int(round(v)):,}"
    return f"{v:,.2f}"


def format_key(value: Any, name: str = "") -> str:
    """A group's key or an argmax's winner: a label, not a quantity ("2023", not
    "2,023"); the month named, for a key called month ("May", not "5")."""
    if isinstance(value, int) and not isinstance(value, bool):
        if name.lower() == "month" and 1 <= value <= 12:
            return calendar.month_name[value]
        return str(value)
    return format_value(value)


def format_keys(values: Sequence[Any], names: Sequence[str]) -> str:
    """The keys of a group of several: "August 2006" for a year and a month, else
    each key as :func:`format_key` writes it, joined by commas."""
    named = dict(zip((n.lower() for n in names), values))
    if set(named) == {"year", "month"} and isinstance(named["month"], int) and 1 <= named["month"] <= 12:
        return f"{calendar.month_name[named['month']]} {format_key(named['year'], 'year')}"
    return ", ".join(format_key(v, n) for v, n in zip(values, names))


def _key_text(value: Any, names: Sequence[str], name: str = "") -> str:
    """A group's key as :func:`format_keys` (several) or :func:`format_key` (one,
    named ``name`` or the one of ``names``) writes it."""
    if isinstance(value, list) and len(value) == len(names) > 1:
        return format_keys(value, names)
    return format_key(value, name or (names[0] if len(names) == 1 else ""))


def _key_value(plan: PlanNode, value: Any, years: set[int] = frozenset()) -> Any:
    """An argmax's winner as the answer's value, in the shape its key has: a year and
    a month as "2023-11"; a month alone as "2023-11" too when its events (``years``:
    the local years of the evidence) are of one year, else by name ("November", as
    the sentence says it, not 11); any other value as it is."""
    if plan.OP not in ("ARGMAX", "ARGMIN"):
        return value
    names = tuple(n.lower() for n in _group_names(plan)) or (plan.arg_attr_name.lower(),)
    if isinstance(value, list) and len(value) == len(names) > 1:
        named = dict(zip(names, value))
        y, m = named.get("year"), named.get("month")
        if set(named) == {"year", "month"} and isinstance(y, int) and isinstance(m, int) and 1 <= m <= 12:
            return f"{y:04d}-{m:02d}"
        return value
    if names == ("month",) and isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 12:
        return f"{next(iter(years)):04d}-{value:02d}" if len(years) == 1 else calendar.month_name[value]
    return value


def _group_names(plan: PlanNode) -> tuple[str, ...]:
    """The attribute names of the GROUP_BY an argmax reads (through FILTER and MAP)."""
    node = getattr(plan, "l", None)
    while node is not None and not isinstance(node, GroupBy):
        node = getattr(node, "l", None)
    return tuple(node.attr_names) if node is not None else ()


def format_value(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, (int, float)):
        return _fmt_number(value)
    if isinstance(value, datetime):
        return value.strftime("%A %d %B %Y, %H:%M").replace(" 0", " ")
    if isinstance(value, date):
        return value.strftime("%A %d %B %Y").replace(" 0", " ")
    if isinstance(value, timedelta):
        minutes = value.total_seconds() / 60
        return f"{minutes / 60:.1f} hours" if minutes >= 90 else f"{minutes:.0f} minutes"
    if isinstance(value, (list, tuple)):
        items = [format_value(v) for v in value[:5]]
        more = f" and {len(value) - 5} more" if len(value) > 5 else ""
        return ", ".join(items) + more if items else "nothing"
    return str(value)


def _row_label(row: Row) -> str:
    values = row.values
    title = values.get("title") or ""
    start = values.get("start")
    when = f"{start:%Y-%m-%d %H:%M} " if isinstance(start, datetime) else ""
    label = f"{when}{title}".strip()
    if label:
        return label
    shown = {k: v for k, v in values.items() if k not in ("group", "text")}
    return ", ".join(f"{k}: {format_value(v)}" for k, v in list(shown.items())[:4])


def _is_group(row: Row) -> bool:
    return "group" in row.values and "count" in row.values


def _group_key(row: Row) -> Any:
    """What a GROUP_BY row was grouped by: the value itself for one attribute."""
    keys = [v for k, v in row.values.items() if k not in ("group", "count")]
    return keys[0] if len(keys) == 1 else keys


def plan_tree(stats: Sequence[NodeStats]) -> PlanStep | None:
    by_path = {s.path: s for s in stats}

    def build(path: str) -> PlanStep:
        s = by_path[path]
        kids = [p for p in by_path if p.startswith(path + ".") and p.count(".") == path.count(".") + 1]
        # the node's own arguments: each input plan shows as "…" (it has its own row)
        args = s.plan
        for k in kids:
            args = args.replace(by_path[k].plan, "…", 1)
        if args.startswith(s.operator + "(") and args.endswith(")"):
            args = args[len(s.operator) + 1:-1]
        if len(args) > 160:
            args = args[:157] + "…"
        return PlanStep(s.operator, args, s.rows, s.ms, s.status, tuple(s.notes),
                        tuple(build(k) for k in kids))

    return build("0") if "0" in by_path else None


class HindsightEngine:
    """``QuestionEngine`` over an event store with a QUD planner and OTX models."""

    def __init__(self, store, planner: QudPlanner, models: Models, *, index=None,
                 retrieve_settings: RetrieveSettings | None = None, chat_models=None,
                 fallback: Callable[[], QudPlanner] | None = None):
        """``chat_models`` (``engine.chattree.ChatTreeModels``) places each question in
        the Ask history's chat tree, so a follow-up is planned with the questions it
        follows; without them, a question that reads like a follow-up (a short one,
        or one that starts "and ...") follows the one before.

        ``fallback`` makes a second planner, on the first question that needs it: a
        question whose plan from ``planner`` gives no answer (no valid plan, a plan
        that fails to run, searches that find nothing, an aggregate with no value) is
        planned again by it, and its answer is kept when it has one. What decides is
        the outcome of running the plan, never the question's words."""
        self.store = store
        self.planner = planner
        self._make_fallback = fallback
        self._fallback: QudPlanner | None = None
        self._fallback_lock = threading.Lock()
        self.models = models
        self.index = index
        self.retrieve_settings = retrieve_settings or RetrieveSettings()
        self.chat_models = chat_models
        self._offered: dict[str, str] = {}  # question offered after a failure -> its plan
        self._candidates: tuple[int, list] = (-1, [])  # (store count, suggestions for it)
        self.readings: frozenset[str] = READINGS
        #: give a plan the names the question gives that it lost (engine.plan.names_given),
        #: and let a search whose query starts with one of the store's names hold to it
        self.give_names = True
        self._names: tuple[int, Future[NameBook]] | None = None  # (store count, its names)
        self._names_lock = threading.Lock()

    def close(self) -> None:
        if self.index is not None and hasattr(self.index, "close"):
            self.index.close()
        with self._names_lock:
            reading = self._names[1] if self._names is not None else None
        if reading is not None and not reading.done():  # the store closes next: never under a running read
            if (con := getattr(reading, "con", None)) is not None:
                con.interrupt()
            reading.exception()

    def ask(self, question: str, *, today: date | None = None, history: Sequence[Answer] = (),
            progress: AskProgressCallback | None = None, cancel: threading.Event | None = None,
            follows: int | None | str = FOLLOWS_AUTO) -> Answer:
        """Answer ``question``. ``follows``: which earlier answer in ``history`` it
        follows up (None: a new question); by default the chat tree decides."""
        question = question.strip()
        if follows == FOLLOWS_AUTO:
            parent, reason = self.follow_up_parent(question, history)
        else:
            if follows is not None and not (isinstance(follows, int) and 0 <= follows < len(history)):
                raise ValueError(f"follows={follows!r} is not an index into the {len(history)} earlier answers")
            parent, reason = follows, "chosen"
        chain = follow_up_chain(history, parent)
        previous = " | ".join(history[i].question for i in chain[-CONTEXT_QUESTIONS:]) if chain else None
        answer = self._ask(question, today=today, previous=previous, progress=progress, cancel=cancel)
        answer.follows, answer.follow_reason = parent, reason
        if self.chat_models is not None and question:
            from engine.chattree.insert import turn_vector

            answer.turn_vector = tuple(turn_vector(question, answer.answer_text, self.chat_models))
        return answer

    def follow_up_parent(self, question: str, history: Sequence[Answer]) -> tuple[int | None, str]:
        """Which earlier question ``question`` follows (an index into ``history``), and why."""
        if not history:
            return None, "first"
        if self.chat_models is None:
            return (len(history) - 1, "reads as a follow-up") if is_follow_up(question) else (None, "new_topic")
        from engine.chattree import TreeTurn, analyse_prompt, place

        turns = [TreeTurn(str(i), a.turn_vector, None if a.follows is None else str(a.follows))
                 for i, a in enumerate(history) if a.turn_vector]
        if not turns:
            return None, "new_topic"
        placement = place(analyse_prompt(question, self.chat_models), turns, self.chat_models)
        return (None if placement.parent is None else int(placement.parent)), placement.reason

    def _ask(self, question: str, *, today: date | None, previous: str | None,
             progress: AskProgressCallback | None, cancel: threading.Event | None) -> Answer:
        today = today or datetime.now().astimezone().date()
        t0 = time.perf_counter()
        say = progress or (lambda p: None)
        if not question:
            return Answer(question, False, None, "Ask a question about your data, e.g. "
                          "“How often did I go running last month?”", today=today)
        if self.store.count() == 0:  # nothing to plan over: say what to do instead of "found nothing"
            return Answer(question, False, None,
                          "Nothing has been imported yet, so there is nothing to answer from. Import an export "
                          "first: in the app, File ▸ Import files… (or drop the files on the window); on the "
                          "command line, hindsight import FILE.", today=today)
        offered = self._offered_plan(question)
        fallback = self._make_fallback is not None and offered is None
        # the days it names without a year or as "last Sunday", written whole for the planner
        plan_as, readings = read_dates(question, today)
        read_as = "; ".join(map(str, readings))
        previous = read_dates(previous, today)[0] if previous else previous
        given = NamesGiven()
        spans = [(r.day, r.last) for r in readings if r.last is not None]
        answer = self._answer(self.planner, question, today=today, previous=previous, progress=progress,
                              cancel=cancel, t0=t0, offered=offered, suggest=not fallback, plan_as=plan_as,
                              given=given, spans=spans)
        answer.read_as = _read_as(read_as, given.names)
        if given.names and _nothing_of(answer) and _kept_nothing(answer.plan) \
                and not (cancel is not None and cancel.is_set()):
            answer = self._without_the_names(answer, question, given, read_as, today=today, progress=progress,
                                             cancel=cancel, t0=t0, suggest=not fallback, plan_as=plan_as)
        if not fallback or not _gave_nothing(answer) or (cancel is not None and cancel.is_set()):
            return answer
        say(AskProgress("planning", "No answer from that plan; planning it again with the few-shot planner"))
        try:
            second_planner = self._second_planner()
        except Exception as exc:  # noqa: BLE001 - a planner that cannot load leaves the first answer standing
            log.warning("the fallback planner could not be loaded: %s", exc)
            return self._with_suggestions(answer, question)
        second = self._answer(second_planner, question, today=today, previous=previous, progress=progress,
                              cancel=cancel, t0=t0, offered=None, suggest=False, plan_as=plan_as,
                              given=(given := NamesGiven()), spans=spans)
        second.read_as = _read_as(read_as, given.names)
        second.llm_calls += answer.llm_calls
        if not _gave_nothing(second):
            first = answer.answer_text if len(answer.answer_text) <= 200 else answer.answer_text[:199] + "…"
            second.fallback = f"planned by the second planner: the first plan gave no answer ({first})"
            return second
        answer.llm_calls = second.llm_calls
        answer.timings["total_ms"] = (time.perf_counter() - t0) * 1000
        return self._with_suggestions(answer, question)

    def _without_the_names(self, answer: Answer, question: str, given: NamesGiven, read_as: str, *,
                           today: date, progress: AskProgressCallback | None, cancel: threading.Event | None,
                           t0: float, suggest: bool, plan_as: str | None) -> Answer:
        """The answer of the plan as the planner wrote it, where the one given the
        question's names (:meth:`_with_names_given`) kept nothing: no event there says
        the name ("where did Tyler and I run on 6 January": the day's one run names
        no one). It says so first; ``answer`` stands when that plan has no answer either.
        The outcome decides, never the question's words; a count or a yes/no of the
        named events (0, "no") is an answer and keeps the names."""
        (progress or (lambda p: None))(AskProgress(
            "planning", "Nothing found with " + _quoted(given.names) + "; running the plan without the name"))
        bare = self._answer(self.planner, question, today=today, previous=None, progress=progress, cancel=cancel,
                            t0=t0, offered=given.plan_text, suggest=suggest, plan_as=plan_as)
        if _nothing_of(bare):
            return answer
        bare.answer_text = (f"Nothing that matched says {_quoted(given.names)}, so this is the answer without "
                            f"{'that name' if len(given.names) == 1 else 'those names'}: {bare.answer_text}")
        bare.read_as = read_as
        bare.llm_calls = answer.llm_calls
        return bare

    def _second_planner(self) -> QudPlanner:
        with self._fallback_lock:
            if self._fallback is None:
                self._fallback = self._make_fallback()
            return self._fallback

    def _with_suggestions(self, answer: Answer, question: str) -> Answer:
        if not answer.ok and not answer.suggestions:
            answer.suggestions = self._suggest(question)
        return answer

    def _answer(self, planner: QudPlanner, question: str, *, today: date, previous: str | None,
                progress: AskProgressCallback | None, cancel: threading.Event | None, t0: float,
                offered: str | None, suggest: bool, plan_as: str | None = None,
                given: NamesGiven | None = None, spans: Sequence[tuple[date, date]] = ()) -> Answer:
        """Plan ``question`` with ``planner`` (or run the ``offered`` plan), execute it and
        word the answer. ``suggest``: offer answerable questions when there is none.
        ``plan_as``: the question as the planner reads it (its dates written whole).
        ``given``: receives the names given back to the plan's search, and the plan
        as the planner wrote it (with the days of ``spans``, the spans of days the
        question was read to name, made whole: :func:`_over_the_days_read`)."""
        say = progress or (lambda p: None)
        offer = self._suggest if suggest else (lambda q: ())
        calls_before = planner.llm_calls
        try:
            if offered is not None:  # a question offered after a failure: its own plan
                node = parse_plan(offered)
                planned = PlannedQuestion(question, node, print_plan(node))
            else:
                planned = planner.plan(plan_as or question, previous=previous, cancel=cancel,
                                       progress=lambda m: say(AskProgress("planning", m)))
                planned = self._with_names_given(_over_the_days_read(planned, spans), plan_as or question, given)
        except PlanningCancelled:
            return self._cancelled(question, today, t0)
        except PlanningError as exc:
            tried = "; ".join(exc.attempts[:3])
            return Answer(question, False, None,
                          "I couldn't turn this question into a plan I can run over your data "
                          f"({exc}). What was tried: {tried}. Try rephrasing it, e.g. naming the "
                          "activity and the time span.",
                          timings={"planning_ms": (time.perf_counter() - t0) * 1000},
                          llm_calls=planner.llm_calls - calls_before, today=today, suggestions=offer(question))
        t_plan = time.perf_counter()
        say(AskProgress("planning", "Plan: " + planned.plan_text, len(planned.steps)))

        def on_node(st: NodeStats) -> None:
            if st.status == "running":
                say(AskProgress("executing", f"{st.operator}: {st.detail} …" if st.detail else f"{st.operator} …"))
            elif st.status == "done":
                detail = f" — {st.notes[0]}" if st.operator == "RETRIEVE" and st.notes else ""
                say(AskProgress("executing", f"{st.operator}: {st.rows:,} rows in {st.ms:.0f} ms{detail}"))

        try:
            result = execute(planned.plan, self.store, self.models, today=today, progress=on_node,
                             cancel=cancel, index=self.index, retrieve_settings=self.retrieve_settings,
                             names=self._names_if_read())
        except ExecutionCancelled:
            return self._cancelled(question, today, t0)
        except ExecutionError as exc:
            offered = offer(question)
            return Answer(question, False, None,
                          f"The plan could not be run: {exc}. Nothing was made up; the plan was "
                          f"{planned.plan_text}.", plan_text=planned.plan_text,
                          timings=self._timings(t0, t_plan, None), llm_calls=planned.llm_calls, today=today,
                          suggestions=offered)
        tree = plan_tree(result.nodes)
        timings = self._timings(t0, t_plan, result)
        empty = [s for s in result.nodes if s.operator == "RETRIEVE" and s.rows == 0]
        if empty and len(empty) == sum(1 for s in result.nodes if s.operator == "RETRIEVE"):
            queries = ", ".join(f"“{_query_of(s.plan)}”" for s in empty)
            offered = offer(question)
            return Answer(question, False, None,
                          f"I found nothing in your data for {queries}, so I can't answer this. "
                          "I answer questions about what you imported: music, shows, mail, calendar, "
                          "purchases, workouts, places, notes and chats.",
                          plan_text=planned.plan_text, plan=tree, timings=timings,
                          llm_calls=planned.llm_calls, today=today, suggestions=offered)
        value = result.value
        evidence = result.evidence
        order = "largest first"
        rows = result.rows
        if rows and "latest_asked" in self.readings and (recent := _latest_asked(question)) is not None \
                and (latest := _latest(rows, *recent)) is not None:
            rows = latest
            evidence = tuple(sorted(frozenset().union(*(r.ids for r in latest))))
            order = "latest first" if recent[1] else "earliest first"
        answer_value: Any
        if rows is not None and rows and all(_is_group(r) for r in rows):
            keys = [_group_key(r) for r in rows[:50]]
            names = [k for k in rows[0].values if k not in ("group", "count")]
            shown = [f"{_key_text(k, names)} ({r.values['count']:,})" for k, r in zip(keys, rows)]
            text = (f"{len(rows):,} " + ("group" if len(rows) == 1 else f"groups, {order}")
                    + ": " + "; ".join(shown[:5]) + (" …" if len(shown) > 5 else ""))
            answer_value = keys
        elif rows is not None and "yes_no" in self.readings and is_yes_no(question):
            labels = [_row_label(r) for r in rows[:5]]
            answer_value = "yes" if rows else "no"
            text = (f"Yes: {len(rows):,} matching " + ("entry" if len(rows) == 1 else "entries")
                    + ": " + "; ".join(labels) + (" …" if len(rows) > 5 else "")
                    if rows else "No: nothing in your data matched.")
        elif rows and (found := _extracted(planned.plan, rows)) is not None:
            found, echoed = not_named_by(plan_as or question, found)
            ranked = distinct_best_first(found, self._relevance(plan_as or question, found))
            values = [v for v, _ in ranked]
            if values:
                shown = [format_value(v) + (f" ({n}×)" if n > 1 else "") for v, n in ranked[:5]]
                text = (f"{len(values):,} " + ("value" if len(values) == 1 else "values, nearest the question first")
                        + ": " + "; ".join(shown) + (" …" if len(values) > 5 else ""))
            else:
                # what was asked is what is answered: the entries are where it was looked for
                labels = [_row_label(r) for r in rows[:5]]
                asked = " or ".join(n.replace("_", " ") for n in _asked_of(_below_filters(planned.plan)))
                text = (f"Not found: none of the {len(rows):,} matching "
                        + ("entry" if len(rows) == 1 else "entries") + f" says the {asked} ("
                        + "; ".join(labels) + (" …" if len(rows) > 5 else "") + ")."
                        + (" What was read instead is what the question itself names: "
                           + "; ".join(echoed[:3]) + "." if echoed else ""))
            answer_value = values
        elif rows is not None:
            labels = [_row_label(r) for r in rows[:50]]
            text = (f"{len(rows):,} matching " + ("entry" if len(rows) == 1 else "entries")
                    + (": " + "; ".join(labels[:5]) + (" …" if len(labels) > 5 else "") if labels else "."))
            answer_value = labels
        else:
            answer_value = _key_value(planned.plan, value, self._years_of(evidence))
            when = self._day_of_the_extreme(planned.plan, value, evidence, question)
            text = _sentence(planned.plan, value, len(evidence), result.note, when, result.ties, today=today)
            if when is not None:
                answer_value = [when, value]
        say(AskProgress("done", text))
        return Answer(question, True, jsonable(answer_value), text, plan_text=planned.plan_text, plan=tree,
                      evidence=evidence, timings=timings, llm_calls=planned.llm_calls, today=today)

    def _with_names_given(self, planned: PlannedQuestion, question: str,
                          given: NamesGiven | None = None) -> PlannedQuestion:
        """``planned`` with the names ``question`` gives that its plan lost given back to
        its search (:mod:`engine.plan.names_given`; the store says what is a name);
        ``given`` receives those names and ``planned``'s plan."""
        if not self.give_names:
            return planned
        try:
            node, names = give_names_back(planned.plan, question, self._name_book())
        except Exception:  # noqa: BLE001 - the plan then runs as the planner wrote it
            log.exception("could not read the store's names")
            return planned
        rewritten = _rewritten(planned, node if names else planned.plan, "names given back")
        if rewritten is not planned and given is not None:
            given.names += names
            given.plan_text = planned.plan_text
        return rewritten

    def prepare_names(self) -> None:
        """Start reading the store's names (:mod:`engine.qud.store_names`; about a second
        per 40,000 events) in the background, so the first question need not wait."""
        self._names_read()

    def _name_book(self) -> NameBook:
        return self._names_read().result()

    def _names_if_read(self) -> NameBook | None:
        """The store's names for the searches (:mod:`engine.operators.retrieve.names`);
        None where they are not wanted or could not be read (the searches then take a
        query's first word for no name)."""
        if not self.give_names:
            return None
        try:
            return self._name_book()
        except Exception:  # noqa: BLE001 - the searches run without them
            log.exception("could not read the store's names")
            return None

    def _names_read(self) -> Future[NameBook]:
        """The store's names as they are now: read again when the store changed."""
        n = self.store.count()
        with self._names_lock:
            if self._names is None or self._names[0] != n:
                read: Future[NameBook] = Future()

                def run() -> None:
                    try:
                        read.con = self.store.reader()  # type: ignore[attr-defined]
                        read.set_result(store_names(read.con))  # type: ignore[attr-defined]
                    except BaseException as exc:  # noqa: BLE001 - the asking thread raises it
                        read.set_exception(exc)

                threading.Thread(target=run, name="store-names", daemon=True).start()
                self._names = (n, read)
            return self._names[1]

    def _relevance(self, question: str, found: Sequence[tuple[Any, Row]]) -> dict[str, float]:
        """Each event's nearest passage to ``question`` (embedder cosine, from the
        index's stored vectors); empty without an embedder or vectors, or for one value."""
        ids = list({i for _, r in found for i in r.ids})
        if (len(found) < 2 or self.models.embedder is None or self.index is None
                or getattr(self.index, "vectors", None) is None):
            return {}
        try:
            vector = self.models.embedder.embed([question])[0]
            return {i: max(sims) for i, sims in self.index.passage_similarities(vector, ids).items() if sims}
        except Exception:  # noqa: BLE001 - the values then stay in their rows' order
            log.exception("could not rank the extracted values by the question")
            return {}

    def _offered_plan(self, question: str) -> str | None:
        """The plan of ``question`` when it is, word for word, one this store's refusals
        offer (by this engine, or by another process's: the CLI asks each question anew)."""
        if question in self._offered:
            return self._offered[question]
        try:  # the store's candidates are read once per store state (a sample: ms)
            return {s.question: s.plan for s in self._all_candidates()}.get(question)
        except Exception:  # the planner answers it then, as any question
            log.exception("could not read the store's offered questions")
            return None

    def _all_candidates(self) -> list:
        from engine.qud import suggest

        n = self.store.count()
        if self._candidates[0] != n:
            self._candidates = (n, suggest.candidates(suggest.profile(self.store.reader())))
        return self._candidates[1]

    def _suggest(self, question: str) -> tuple[str, ...]:
        """The closest questions this store can answer (``engine.qud.suggest``); each is
        remembered with its plan, so asking it next runs that plan."""
        from engine.qud import suggest

        try:
            offered = self._all_candidates()
            found = suggest.closest(question, offered, self.models.embedder) \
                if self.models.embedder is not None else offered[:suggest.OFFERED]
        except Exception:  # an offer must never turn a clear refusal into a crash
            log.exception("no questions to offer for %r", question)
            return ()
        for s in found:
            self._offered[s.question] = s.plan
        return tuple(s.question for s in found)

    def _day_of_the_extreme(self, plan: PlanNode, value: Any, evidence: Sequence[str], question: str) -> date | None:
        """The local day of the event a "what was my longest run" question is about:
        the plan finds the distance (MIN/MAX), the question asks for the run, and the
        run is the day it happened and its distance. None for other questions, or when
        the events that hold the value are of several days."""
        if plan.OP not in ("MIN", "MAX") or isinstance(value, (date, datetime)) or not evidence \
                or len(evidence) > 3 or "which_extreme" not in self.readings \
                or not _WHICH_EXTREME.search(question):
            return None
        days = set()
        for event_id in evidence:
            e = self.store.event(event_id)
            if e is None or not isinstance(e.get("start"), datetime):
                return None
            days.add((e["start"] + timedelta(minutes=e.get("tz_offset_min") or 0)).date())
        return days.pop() if len(days) == 1 else None

    def _years_of(self, evidence: Sequence[str], most: int = 400) -> set[int]:
        """The local years of the evidence events (empty for more than ``most``)."""
        years: set[int] = set()
        for event_id in () if len(evidence) > most else evidence:
            e = self.store.event(event_id)
            if e is not None and isinstance(e.get("start"), datetime):
                years.add((e["start"] + timedelta(minutes=e.get("tz_offset_min") or 0)).year)
        return years

    def _cancelled(self, question: str, today: date, t0: float) -> Answer:
        return Answer(question, False, None, "Cancelled.", timings={"total_ms": (time.perf_counter() - t0) * 1000},
                      today=today)

    @staticmethod
    def _timings(t0: float, t_plan: float, result) -> dict[str, float]:
        now = time.perf_counter()
        out = {"planning_ms": (t_plan - t0) * 1000, "execution_ms": (now - t_plan) * 1000,
               "total_ms": (now - t0) * 1000}
        if result is not None:
            for s in result.nodes:
                if s.ms is not None:
                    key = f"op_{s.operator.lower()}_ms"
                    out[key] = out.get(key, 0.0) + s.ms
        return out


def _read_as(dates: str, names: Sequence[str]) -> str:
    """How the question was read, for the user to check: its days (``dates``), and
    the names of their data it gives that the search was told of."""
    said = "; ".join(f"“{n}” as the name your data has" for n in names)
    return "; ".join(p for p in (dates, said) if p)


def _over_the_days_read(planned: PlannedQuestion, spans: Sequence[tuple[date, date]]) -> PlannedQuestion:
    """``planned`` with a condition that keeps the first day of a span of days the
    question was read to name keeping the span (:func:`engine.plan.repair.over_the_days_read`)."""
    return _rewritten(planned, over_the_days_read(planned.plan, spans), "span of days made whole")


def _rewritten(planned: PlannedQuestion, node: PlanNode, why: str) -> PlannedQuestion:
    """``planned`` with its plan ``node`` where that is another plan and a valid one."""
    if node is planned.plan or validate_plan(node):
        return planned
    log.info("%s: %s -> %s", why, planned.plan_text, print_plan(node))
    return replace(planned, plan=node, plan_text=print_plan(node))


@dataclass
class NamesGiven:
    """The names given back to a plan's search, and the plan as the planner wrote it."""
    names: list[str] = field(default_factory=list)
    plan_text: str = ""


def _quoted(names: Sequence[str]) -> str:
    return " or ".join(f"“{n}”" for n in names)


def _nothing_of(answer: Answer) -> bool:
    """No value at all: no answer, or an empty list of them (an aggregate's 0 or a
    yes/no's "no" is a value)."""
    return answer.answer is None or answer.answer == []


def _kept_nothing(step: PlanStep | None) -> bool:
    """Whether no row reached the top of the plan's list of events (below the
    aggregate, if any, that sits over it): nothing it searched for and filtered is
    left. Found rows none of which says a value asked of them are rows kept."""
    while step is not None and step.rows == 1 and step.children \
            and getattr(OPERATORS.get(step.operator), "output", None) is Output.SCALAR:
        step = step.children[0]
    return step is None or step.rows == 0


def _gave_nothing(answer: Answer) -> bool:
    """No answer came of the plan: none was valid, it failed to run, its searches found
    nothing, or it computed no value (an aggregate over no events)."""
    return not answer.ok or answer.answer is None


def _query_of(plan_text: str) -> str:
    m = re.search(r'query="((?:[^"\\]|\\.)*)"', plan_text)
    return m.group(1) if m else plan_text


# "what was my shortest run", "which was the most expensive order": an event, by its measure
# "what was my longest run", and said as a bare phrase: "longest run in 2022", "my fastest 5k"
_WHICH_EXTREME = re.compile(r"^\W*(?:(?:what|which)\s+(?:was|were|is)\s+(?:my|the)\s+|(?:my|the)\s+)?"
                            r"(?:\w+est|most\s+\w+|least\s+\w+)\s", re.I)


_COUNT_WORDS = {w: n for n, w in enumerate("one two three four five six seven eight nine ten eleven twelve".split(), 1)}
_COUNT = r"\d{1,3}|" + "|".join(_COUNT_WORDS)
_LATEST = r"last|latest|most\s+recent|newest|final"
_EARLIEST = r"first|earliest|oldest"
# "the last 3 restaurants I went to", "my five most recent orders", "the first two songs
# I played"; not "the last 3 months" (a time span, for the plan's FILTER)
_LATEST_ASKED = re.compile(
    rf"\b(?:(?P<w1>{_LATEST}|{_EARLIEST})\s+(?P<n1>{_COUNT})|(?P<n2>{_COUNT})\s+(?P<w2>{_LATEST}|{_EARLIEST}))\b"
    r"(?!\s+(?:\w+\s+)?(?:seconds?|minutes?|hours?|days?|nights?|weeks?|weekends?|months?|years?|quarters?|"
    r"mornings?|evenings?|times)\b)", re.I)


def _latest_asked(question: str) -> tuple[int, bool] | None:
    """How many of the latest (True) or earliest (False) rows a question asks for:
    the plan language has no ordering, so the answer's rows are cut to them here."""
    m = _LATEST_ASKED.search(question)
    if m is None:
        return None
    count, word = (m.group("n1"), m.group("w1")) if m.group("n1") else (m.group("n2"), m.group("w2"))
    n = int(count) if count.isdigit() else _COUNT_WORDS[count.lower()]
    return (n, re.fullmatch(_EARLIEST, word, re.I) is None) if n > 0 else None


def _latest(rows: Sequence[Row], n: int, latest: bool) -> list[Row] | None:
    """The ``n`` rows that happened last (``latest``) or first, in that order; a group
    happened when its latest (earliest) event did. None when a row has no time."""
    times = []
    for row in rows:
        members = row.values.get("group") if _is_group(row) else None
        starts = [s for r in (members if isinstance(members, list) else [row])
                  if isinstance(s := r.get("start"), datetime)]
        if not starts:
            return None
        times.append(max(starts) if latest else min(starts))
    ranked = sorted(range(len(rows)), key=lambda i: times[i], reverse=latest)
    return [rows[i] for i in ranked[:n]]


_TIES_SHOWN = 4  # an argmax's other winners named beside the first


def _counted(n: int | float, noun: str) -> str:
    """"12 trips", "1 trip": a number written as the answer writes it, and its noun."""
    return f"{format_value(n)} {noun}{'s' if n != 1 else ''}"


def _sentence(plan: PlanNode, value: Any, n_evidence: int, note: str, when: date | None = None,
              ties: Sequence[Any] = (), *, today: date | None = None) -> str:
    op = plan.OP
    shown = format_value(value) + (f", on {format_value(when)}" if when is not None else "")
    src = f" (from {_counted(n_evidence, 'source event')})" if n_evidence else ""
    if value is None:
        return f"There is no value: no matching events had it{('; ' + note) if note else ''}."
    if op == "APPLY" and isinstance(value, (int, float)) and not isinstance(value, bool):
        if plan.fct in ("trips", "orders"):  # rows were counted as trips or orders: say so
            return f"{_counted(value, plan.fct[:-1])}{src}."
        return f"{shown}{src}."
    if op == "MIN" and plan.attr_name == DAYS_AGO and isinstance(value, int):  # how many days ago, and the day
        on = f", on {format_value(today - timedelta(days=value))}" if today is not None else ""
        return f"{_counted(value, 'day')} ago{on}{src}."
    if op in ("SUM", "AVG", "MIN", "MAX"):
        word = {"SUM": "In total", "AVG": "On average", "MIN": "The smallest is", "MAX": "The largest is"}[op]
        if op in ("MIN", "MAX") and isinstance(value, (date, datetime)):  # "when did I first ...": a time
            word = "The earliest is" if op == "MIN" else "The latest is"
        return f"{word}: {shown}{src}."
    if op in ("ARGMAX", "ARGMIN"):
        names = _group_names(plan)
        # a tie is said: "August 2006" alone would hide the months that did as well
        tied = ""
        if ties:
            more = f" and {len(ties) - _TIES_SHOWN:,} more" if len(ties) > _TIES_SHOWN else ""
            tied = f"; tied with {', '.join(_key_text(v, names, plan.arg_attr_name) for v in ties[:_TIES_SHOWN])}{more}"
        return f"{_key_text(value, names, plan.arg_attr_name)}{src}{tied}."
    return f"{shown}{src}."
