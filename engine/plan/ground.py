"""Drop filters the question never asked for, and repair plans it shows are wrong.

The 1.5B planner copies time windows from its in-context examples: "Who did I run
with most often" came back filtered to ``year(e.start) == 2023``, and "When did I
last go running?" to the past seven days. Such a filter silently changes the answer.
A conjunct of a FILTER is dropped when it is one of these shapes and the question
gives it no ground:

* a year constant (``year(e.start) == 2023``; any four digits, for asked "How many
  times did I visit Liberty Bell?" it wrote ``e.start == date(1776, 7, 4)``) whose
  digits the question does not contain;
* a comparison with ``today()`` when the question names no relative time ("last
  week", "this year", "ago", "recently" ... — "last" alone is not one: "when did I
  last go running");
* a month constant (``month(e.start) == 6``) when the question names no month,
  season, holiday or birthday and no relative time ("last month"): asked "Which
  month did I ask ChatGPT the most questions?", it kept to March-May;
* a name (a string constant with a capital letter) the question does not say:
  asked "which cuisine do i eat most after playing football", it kept the meals
  whose cuisine was ``"Italian"``. Values written in lower case (``e["role"] ==
  "user"``, ``e["direction"] == "sent"``) are the sources' own and stay;
* when an event ended (``date(e.end) > date(e.start)``) when the question says
  nothing of how long or until when: copied from "How many nights did I stay out
  past midnight", it kept "When did I last go get groceries with Chloe?" to
  shopping that ran past midnight;
* who spoke in a chat (``e["role"] == "user"``) when the question says nothing of
  the user asking, writing or sending: "When was my first conversation with
  ChatGPT?" kept the conversations whose role was "user", and conversations have
  no role, only their turns.

Everything else is kept as written. A FILTER left with no condition is removed.

The other rules repair a plan rather than trim it, each where the question shows
the planner's shape is wrong (a count written as a sum, a list where the question
counts, two activities searched for in one phrase ...); each docstring gives the
question that showed it.

This module rewrites plan trees only; it must not execute anything.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace

from engine.plan import expr as X
from engine.plan import nodes as N
from engine.plan.parse import parse_expression
from engine.plan.printer import print_expr, print_plan
from engine.plan.repair import with_children
from engine.plan.spec import EVENT_ATTRIBUTES, PEOPLE_KEYS
from engine.plan.validate import text_attributes
from engine.retrieval.words import stems

_COUNTING = re.compile(r"\b(how many|how often|number of|count)\b", re.I)

# a window relative to today: "last year", "this week", "the past 30 days", "3 days ago";
# a unit alone is none ("which year", "each day", "per month")
_RELATIVE = re.compile(
    r"\b(today|tonight|yesterday|tomorrow|ago|recent|recently|lately|since|so far|currently|nowadays|"
    r"these days|(last|this|next|past|previous|current|coming)\s+(\d+\s+|few\s+|couple( of)?\s+)?"
    r"(day|days|week|weeks|weekend|weekends|month|months|year|years|quarter|decade|morning|evening|night|"
    r"spring|summer|autumn|fall|winter))\b", re.I)
_MONTHS = re.compile(
    r"\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(t|tember)?|oct(ober)?|"
    r"nov(ember)?|dec(ember)?|spring|summer|autumn|fall|winter|christmas|easter|birthday|anniversary|quarter)\b",
    re.I)


def drop_ungrounded_filters(plan: N.PlanNode, question: str) -> N.PlanNode:
    """``plan`` without the conditions ``question`` does not ground (see the
    module docstring); the same object when nothing was dropped."""
    def trim(node: N.Filter) -> N.PlanNode:
        parts = X.conjuncts(node.filter.body)
        kept = [c for c in parts if _grounded(c, question)]
        if len(kept) == len(parts):
            return node
        return replace(node, filter=X.Lambda(node.filter.params, X.conjoin(kept))) if kept else node.l
    return _each_filter(plan, trim)


def _each_filter(plan: N.PlanNode, fn: Callable[[N.Filter], N.PlanNode]) -> N.PlanNode:
    """``plan`` with ``fn`` applied to each FILTER, bottom-up; the same object when
    ``fn`` changed nothing."""
    if isinstance(plan, (N.Qud, N.Retrieve)):
        return plan
    node = with_children(plan, lambda child: _each_filter(child, fn))
    return fn(node) if isinstance(node, N.Filter) else node


def _grounded(conjunct: X.Expr, question: str) -> bool:
    calls = {n.func for n in X.walk(conjunct) if isinstance(n, X.Call)}
    calls |= {n.name for n in X.walk(conjunct) if isinstance(n, X.GetAttr)}  # e.start.hour
    ints = [n.value for n in X.walk(conjunct)
            if isinstance(n, X.Const) and isinstance(n.value, int) and not isinstance(n.value, bool)]
    if "today" in calls:
        # "when did I most recently ..." orders; it names no window
        return bool(_RELATIVE.search(_ORDERING.sub(" ", question)))
    if calls & {"year", "date", "datetime"}:
        years = [v for v in ints if 1000 <= v <= 2999]  # "visit Liberty Bell": date(1776, 7, 4)
        if years and not all(str(y) in question for y in years):
            return False
    if "month" in calls and "year" not in calls and ints and not (
            _MONTHS.search(question) or _RELATIVE.search(question)):
        return False
    if calls & {"hour", "minute"} and not _TIME_OF_DAY.search(question):
        return False
    if calls & {"weekday", "weekday_name"} and not _WEEKDAYS.search(question):
        return False
    if "day" in calls and not (calls & {"year", "month", "date", "datetime"}):
        days = [v for v in ints if 1 <= v <= 31]
        if days and not _DATED_DAYS.search(question) \
                and not all(re.search(rf"\b{d}(st|nd|rd|th)?\b", question) for d in days):
            return False
    read = X.attributes_read(conjunct, "e")
    if "role" in read and not _USER_SPOKE.search(question):
        return False
    if "end" in read and not _SPANS.search(question):
        return False
    names = [v for v in _texts(conjunct) if v.lower() != v]
    return all(_words_of(name, question) for name in names)


def _words_of(value: str, text: str) -> bool:
    """Whether ``text`` says ``value``: as written, or each of its words (a plural
    for a singular too), ignoring case."""
    if value.lower() in text.lower():
        return True
    words = set(re.findall(r"\w+", text.lower()))
    wanted = re.findall(r"\w+", value.lower())
    return bool(wanted) and all(w in words or w + "s" in words or w + "es" in words for w in wanted)


# what the user said to a chatbot: "questions I asked", "messages I sent", "my prompts"
_USER_SPOKE = re.compile(r"\b(ask|asks|asked|asking|question|questions|wrote|write|writes|written|sent|send|sends|"
                         r"message|messages|prompt|prompts|prompted|typed|type|said|say|told|tell|request|requests|"
                         r"requested|want(ed)? to know)\b", re.I)
# what a condition on when an event ended answers: "nights out past midnight", "trips of
# more than a week", "meetings that ran until 6"
_SPANS = re.compile(r"\b(midnight|overnight|nights?|multi-?day|days? long|weeks? long|longer|shorter|lasted|lasting|"
                    r"ended|ending|ends?|until|till|stay(ed|s)?|spanned|spanning|more than|less than|over)\b", re.I)
_DATED_DAYS = re.compile(r"\b(birthday|anniversary|christmas|easter|new year'?s?|halloween|valentine'?s?)\b", re.I)
_ORDERING = re.compile(r"\bmost recent(ly)?\b|\bthe (first|last|latest) time\b", re.I)
_TIME_OF_DAY = re.compile(
    r"\b(morning|mornings|afternoon|afternoons|evening|evenings|night|nights|nightly|tonight|noon|midday|midnight|"
    r"lunch|lunchtime|dinner|breakfast|o'?clock|hour|hours|a\.?m\.?|p\.?m\.?|late|early|dawn|dusk|sunrise|sunset|"
    r"work ?day|office hours|\d{1,2}(:\d\d)?\s*(am|pm|h))\b|\b(after|before|until|by|at|past)\s+\d", re.I)
_WEEKDAYS = re.compile(
    r"\b(mon|tues?|wed(nes)?|thu(rs)?|fri|sat(ur)?|sun)(day)?s?\b|\bweek ?(day|end)s?\b", re.I)


def count_instead_of_adding_text(plan: N.PlanNode, question: str) -> N.PlanNode:
    """A top SUM that a counting question does not ask for becomes
    ``APPLY(l=..., fct=len)``; the summed attribute's EXTRACT goes too when nothing
    else reads it. Otherwise ``plan`` itself. A SUM is not asked for when

    * the question asks how many or how often and the attribute is extracted as text, or
    * it asks "how often", "how many times", or "how many <things>" where the things
      are no unit of measure and not the attribute itself: "How many songs did I
      listen to in 2023?" came back as ``SUM(EXTRACT(..., ["total"], [float]), "total")``,
      which asked the extractor for a "total" of 3,098 plays (60 s) and added up
      8,395. "How many km did I run" and "how many steps" keep their SUM."""
    if not (isinstance(plan, N.Sum) and _COUNTING.search(question)):
        return plan
    if plan.attr_name in text_attributes(plan.l) or _counts_things(question, plan.attr_name):
        return N.Apply(_without_extract(plan.l, plan.attr_name), "len")
    return plan


_TIMES = re.compile(r"\bhow (often|many times)\b", re.I)
_THINGS = re.compile(r"\b(?:how many|number of)\s+(?:(?:my|the|different|distinct|separate)\s+)?([a-z]+)", re.I)
# what "how many ..." adds up rather than counts
_UNITS = frozenset("""
    km kms kilometer kilometers kilometre kilometres mile miles meter meters metre metres
    hour hours hr hrs minute minutes min mins second seconds sec secs day days week weeks
    calorie calories kcal cal step steps floor floors
    euro euros eur dollar dollars usd pound pounds gbp buck bucks franc francs yen cent cents
    page pages word words liter liters litre litres kg kilo kilos gram grams lb lbs gb mb
""".split())


# "how many different artists"; places are counted once however often visited: "how
# many restaurants did I try", "how many places did I visit in Rome", "in how many cities"
_DISTINCT = re.compile(r"\bhow many (?:different|distinct|unique) ([a-z]+)|"
                       r"\bhow many (places|cities|countries|restaurants|museums|destinations|venues|cafes|bars) "
                       r"(?:did|have|had|was|were) (?:i|we)\b", re.I)


def count_distinct_things(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "how many different artists", the planner counted the plays
    (``APPLY(l=..., fct=len)`` with no GROUP_BY): the rows are grouped by the thing
    first (``artists`` -> ``artist``), so the count is of distinct values. So are
    places: "How many places did I visit in Rome, Italy?" counted 30 diary notes
    of 5 places.
    Otherwise ``plan`` itself."""
    m = _DISTINCT.search(question)
    if not (m and isinstance(plan, N.Apply) and plan.fct == "len"
            and not any(isinstance(n, (N.GroupBy, N.Unnest)) for _, n in N.iter_nodes(plan.l))):
        return plan
    thing = (m.group(1) or m.group(2)).lower()
    attr = _singular(thing)
    return N.Apply(N.GroupBy(N.Extract(plan.l, (attr,), ("str",)), (attr,)), "len")


def _singular(noun: str) -> str:
    if noun.endswith("ies"):
        return noun[:-3] + "y"      # cities, countries
    if noun.endswith("s") and not noun.endswith("ss"):
        return noun[:-1]
    return noun


# "how many times did I travel to Rome", "how many trips to Rome": trips, not days
_TRIPS = re.compile(r"\bhow (?:many times|often) (?:did|do|have|had) (?:I|we) (?:travel(?:l?ed)?|"
                    r"(?:been|gone|go|went) on (?:a |an )?(?:trip|vacation|holiday|journey)s?)\b|"
                    r"\bhow many (?:trips|vacations|holidays|journeys)\b|\bnumber of (?:trips|vacations|holidays)\b",
                    re.I)


def count_trips(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "How many times did I travel to Rome, Italy?", the plan counted the
    diary notes of the trips, a meal on the 2nd, a museum on the 5th: 30 for 12
    trips. A count of rows for a question about how many trips (travels,
    vacations) becomes ``APPLY(l=..., fct=trips)``, which counts runs of days a few
    days apart once (see ``count_trips`` in the operators). Flights stay counted
    one by one. Conditions that extracted values are what the question says, where
    the search names one of them (``e["city"] == "Rome" and e["country"] == "Italy"``
    over RETRIEVE("travel to Rome")), become a condition that the event mentions the
    place (``contains(e.text, "Rome")``), and their EXTRACT goes: asked each day's
    note for the city and country, the extractor kept the days of 8 of the 12
    trips. Otherwise ``plan`` itself."""
    if not (isinstance(plan, N.Apply) and plan.fct == "len" and _TRIPS.search(question)):
        return plan
    dropped: set[str] = set()

    def trim(node: N.Filter) -> N.PlanNode:
        var = node.filter.params[0]
        queries = [n.query for _, n in N.iter_nodes(node.l) if isinstance(n, N.Retrieve)]
        parts = X.conjuncts(node.filter.body)
        said = [c for c in parts if _compares_extracted_with(c, var, question)]
        named = [v for c in said for v in _texts(c) if any(_words_of(v, q) for q in queries)]
        if not named:
            return node
        dropped.update(*(X.attributes_read(c, var) for c in said))
        kept = [c for c in parts if c not in said] + [X.BoolOp("or", _mentions(var, named[:1]))]
        return replace(node, filter=X.Lambda(node.filter.params, X.conjoin(kept)))
    rows = _each_filter(plan.l, trim)
    for name in sorted(dropped):
        if not any(name in X.attributes_read(n.filter.body, n.filter.params[0])
                   for _, n in N.iter_nodes(rows) if isinstance(n, N.Filter)):
            rows = _without_extract(rows, name)
    return N.Apply(rows, "trips")


def _compares_extracted_with(conjunct: X.Expr, var: str, text: str) -> bool:
    """Whether ``conjunct`` only compares extracted attributes with what ``text`` says."""
    read, values = X.attributes_read(conjunct, var), _texts(conjunct)
    return bool(read and values) and not read & set(EVENT_ATTRIBUTES) and all(_words_of(v, text) for v in values)


def _texts(expr: X.Expr) -> list[str]:
    return [n.value for n in X.walk(expr) if isinstance(n, X.Const) and isinstance(n.value, str)]


# "how often did I order something on Amazon", "how many times did i buy stuff on amazon"
_ORDERS = re.compile(r"\bhow (?:many times|often) (?:did|do|have|had) (?:I|we) (?:order|buy|purchase|shop)\b|"
                     r"\bhow many (?:orders|purchases)\b|\bnumber of (?:orders|purchases)\b|"
                     r"\b(?:order|buy|purchase|shop)\w* .*\bhow many times\b", re.I)


def count_orders(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "How often did I order something on Amazon in total", the plan counted
    the rows of the order history, one per item: 73 for 46 orders. A count of rows
    for a question about how often something was ordered or bought becomes
    ``APPLY(l=..., fct=orders)``, which counts each order number once (and each row
    without one). Otherwise ``plan`` itself."""
    if isinstance(plan, N.Apply) and plan.fct == "len" and _ORDERS.search(question):
        return replace(plan, fct="orders")
    return plan


_LISTS = (N.Retrieve, N.Filter, N.Extract, N.Join, N.Map, N.Unnest)


def count_listed_rows(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "How many times did I go to 池田 Banh Mi in 2021?", the planner wrote the
    FILTER and stopped: the answer was a list of visits. A plan that ends in a list
    of rows, for a question that counts things (not units: "how many km"), becomes
    ``APPLY(l=..., fct=len)``. So does one that ends in groups ("How many places did I
    visit in Rome, Italy?" got the five places, not 5), unless the question asks for
    a count per group ("how many songs per artist"). Otherwise ``plan`` itself."""
    listed = isinstance(plan, _LISTS) or (isinstance(plan, N.GroupBy) and not _PER_GROUP.search(question))
    if listed and _COUNTING.search(question) and _counts_things(question, ""):
        return N.Apply(plan, "len")
    return plan


_PER_GROUP = re.compile(r"\b(per|each|every|by)\b", re.I)


def years_as_said(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "How many times did I make chicken parmesan spaghetti after 2019?", the
    planner kept ``year(e.start) >= 2019``, and a dish made in May 2019 counted.
    "after 2019" is from 2020 on, and "before 2019" until 2018: a comparison of a
    year with a year the question says after "after" or "before" is made strict
    (``since`` and ``from`` keep 2019 itself). A comparison of when with a day of
    that year (asked "How many calendar events were after 2019?", it wrote
    ``e.start > date(2019, 1, 1)``) becomes the comparison of its year. Otherwise
    ``plan`` itself."""
    said = {int(m.group(2)): m.group(1).lower() for m in _AFTER_BEFORE_YEAR.finditer(question)}
    if not said:
        return plan

    def strict(c: X.Expr) -> X.Expr:
        if not (isinstance(c, X.Compare) and len(c.ops) == 1):
            return c
        right = c.comparators[0]
        if isinstance(c.left, X.Call) and c.left.func == "year" and isinstance(right, X.Const):
            word = said.get(right.value)
            op = {("after", ">="): ">", ("before", "<="): "<"}.get((word, c.ops[0]))
            return replace(c, ops=(op,)) if op else c
        when = c.left.args[0] if isinstance(c.left, X.Call) and c.left.func == "date" and len(c.left.args) == 1 \
            else c.left
        if not (isinstance(when, X.GetAttr) and when.name in ("start", "end") and isinstance(right, X.Call)
                and right.func in ("date", "datetime") and right.args and isinstance(right.args[0], X.Const)):
            return c
        word, year = said.get(right.args[0].value), right.args[0].value
        op = ">" if word == "after" and c.ops[0] in (">", ">=") else \
            "<" if word == "before" and c.ops[0] in ("<", "<=") else None
        return X.Compare(X.Call("year", (when,)), (op,), (X.Const(year),)) if op else c

    def rewrite(node: N.Filter) -> N.PlanNode:
        parts = X.conjuncts(node.filter.body)
        new = [strict(c) for c in parts]
        if new == parts:
            return node
        return replace(node, filter=X.Lambda(node.filter.params, X.conjoin(new)))
    return _each_filter(plan, rewrite)


_AFTER_BEFORE_YEAR = re.compile(r"\b(after|before)\s+(?:the\s+year\s+)?((?:19|20)\d\d)\b", re.I)


_IN_YEAR = re.compile(r"\b(?:in|during)\s+(?:(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+)?"
                      r"(?P<year>(?:19|20)\d\d)\b", re.I)
_MONTH_NUMBER = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                              "nov", "dec"), 1)}


def keep_to_the_year_asked(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "longest run in 2023", the planner wrote
    ``MAX(EXTRACT(RETRIEVE("running"), ...), "distance_km")`` and answered the
    longest run of all years. Where the question names one year ("in 2023",
    "during May 2022") and the plan says that year nowhere, the plan's one search
    is kept to it (and to the month named with it) by a FILTER on when the events
    started. Otherwise ``plan`` itself."""
    found = list(_IN_YEAR.finditer(question))
    if len(found) != 1 or _AFTER_BEFORE_YEAR.search(question):
        return plan
    year = found[0].group("year")
    if year in print_plan(plan):
        return plan
    search = _the_one_search(plan)
    if search is None:
        return plan
    when = X.GetAttr(X.Var("e"), "start")
    conds: list[X.Expr] = [X.Compare(X.Call("year", (when,)), ("==",), (X.Const(int(year)),))]
    if found[0].group("month"):
        month = _MONTH_NUMBER[found[0].group("month").lower()]
        conds.append(X.Compare(X.Call("month", (when,)), ("==",), (X.Const(month),)))
    return _replace_node(plan, search, N.Filter(search, X.Lambda(("e",), X.conjoin(conds))))


_LAST_MONTH = re.compile(r"\b(?:last|previous|past) month\b(?!\s+of\b)", re.I)
# the last day of the month before today's: "today() - days(30)" is still this month on the 31st
_MONTH_AGO = "today() - days(day(today()))"


def last_month_as_said(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "how often did i order something on amazon last month?", the planner
    kept ``year(e.start) == year(today() - days(30))``, and the orders of the whole
    year counted. Where the question says "last month" and the plan reads no month,
    such a comparison of the year with a year relative to today becomes the year and
    the month of last month; a plan that says nothing relative to today has its one
    search kept to last month. Otherwise ``plan`` itself."""
    written = print_plan(plan)
    if not _LAST_MONTH.search(question) or "month(" in written:
        return plan
    month_ago = parse_expression(_MONTH_AGO, ())

    def last_month(when: X.Expr) -> list[X.Expr]:
        return [X.Compare(X.Call(unit, (when,)), ("==",), (X.Call(unit, (month_ago,)),)) for unit in ("year", "month")]

    def relative_year(c: X.Expr) -> bool:
        return (isinstance(c, X.Compare) and c.ops == ("==",) and isinstance(c.left, X.Call)
                and c.left.func == "year" and len(c.left.args) == 1 and isinstance(c.comparators[0], X.Call)
                and c.comparators[0].func == "year"
                and any(isinstance(x, X.Call) and x.func == "today" for x in X.walk(c.comparators[0])))

    def rewrite(node: N.Filter) -> N.PlanNode:
        parts = X.conjuncts(node.filter.body)
        if not any(relative_year(c) for c in parts):
            return node
        new = [d for c in parts for d in (last_month(c.left.args[0]) if relative_year(c) else [c])]
        return replace(node, filter=X.Lambda(node.filter.params, X.conjoin(new)))

    grounded = _each_filter(plan, rewrite)
    if grounded is not plan or "today()" in written:
        return grounded
    search = _the_one_search(plan)
    if search is None:
        return plan
    when = X.GetAttr(X.Var("e"), "start")
    return _replace_node(plan, search, N.Filter(search, X.Lambda(("e",), X.conjoin(last_month(when)))))


_WHEN = re.compile(r"^\W*(when|what (day|date|time))\b", re.I)
_FIRST = re.compile(r"\b(first|earliest)\b", re.I)
_LAST = re.compile(r"\b(last|latest|most recent(ly)?)\b", re.I)


def first_or_last_time(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "When did I eat out with Patrick Perry for the first time?", the planner
    wrote a FILTER and stopped: the answer was every such dinner. A plan that ends in
    a list of rows, for a "when ... first/earliest" question, becomes
    ``MIN(l=..., attr_name="start")``, and for "when ... last/latest/most recently"
    ``MAX(...)``; so does an ARGMIN (ARGMAX) by start, which answers with another
    attribute of that row ("When was my first conversation with ChatGPT?" got the
    ``role`` of the earliest), and a MIN (MAX) of the start the wrong way round
    ("When did I last listen to Lauren Davis?" got the earliest play). Otherwise
    ``plan`` itself."""
    if not _WHEN.search(question):
        return plan
    if isinstance(plan, (N.ArgMin, N.ArgMax)) and plan.val_attr_name == "start":
        rows = _without_extract(plan.l, plan.arg_attr_name)  # answered with that row's start instead
    elif isinstance(plan, (N.Min, N.Max)) and plan.attr_name == "start":
        rows = plan.l
    elif isinstance(plan, _LISTS):
        rows = plan
    else:
        return plan
    first, last = bool(_FIRST.search(question)), bool(_LAST.search(question))
    if first == last or isinstance(plan, N.Min if first else N.Max):
        return plan
    return N.Min(rows, "start") if first else N.Max(rows, "start")


# "how many minutes did I spend running", "total workout time in hours"
_TIME_ASKED = re.compile(r"\bhow many (?P<a>minutes|hours)\b|\bin (?P<b>minutes|hours)\b|\bhow much time\b", re.I)
_TIME_ATTRIBUTE = re.compile(r"min|hour|hr|time|duration|sec|long|length", re.I)


def add_up_the_time_asked_for(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "how many minutes did i spend running in Nov 2021", the planner added up
    the runs' extracted ``distance_km``: 82.69 for 478 minutes. A SUM or AVG of an
    extracted attribute that is no time, for a question that asks for minutes or
    hours, adds up the events' durations in that unit instead
    (``MAP(l=..., fct=lambda e: in_minutes(duration(e)), res_name="minutes")``); a
    time in no unit is extracted in the unit asked for (:func:`_in_the_unit_asked`).
    Otherwise ``plan`` itself."""
    m = _TIME_ASKED.search(question)
    if not (m and isinstance(plan, (N.Sum, N.Avg)) and plan.attr_name in _extracted(plan.l)):
        return plan
    unit = (m.group("a") or m.group("b") or "minutes").lower()
    if _TIME_ATTRIBUTE.search(plan.attr_name):
        return _in_the_unit_asked(plan, m.group("a") or m.group("b"))
    rows = _without_extract(plan.l, plan.attr_name)
    if rows is plan.l:
        return plan
    spent = parse_expression(f"in_{unit}(duration(e))", ("e",))
    return type(plan)(N.Map(rows, X.Lambda(("e",), spent), unit), unit)


_IN_A_UNIT = re.compile(r"(?:^|_)(?:s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?)$", re.I)


def _in_the_unit_asked(plan: N.Sum | N.Avg, unit: str | None) -> N.PlanNode:
    """Asked "how many hours did i spend on sports in total", the planner added up an
    extracted ``duration`` in no unit: the model found none in "Running workout: 48
    min, ..." or read the calories off it (17,474 for 192.9). A time extracted without a unit in its
    name is extracted in the unit the question asks for (``duration_hours``), which
    EXTRACT reads off an attribute in any unit (``duration_min``) or the event's
    span. Otherwise ``plan`` itself."""
    name = plan.attr_name
    if unit is None or _IN_A_UNIT.search(name):
        return plan
    timed = f"{name}_{unit.lower()}"
    rows = _renamed_extract(plan.l, name, timed)
    return plan if rows is plan.l else type(plan)(rows, timed)


def _renamed_extract(plan: N.PlanNode, name: str, new: str) -> N.PlanNode:
    """``plan`` with ``name`` extracted as ``new`` (see :func:`_at_the_extract`)."""
    return _at_the_extract(plan, name, lambda node: replace(
        node, attr_names=tuple(new if n == name else n for n in node.attr_names)))


def _extracted(plan: N.PlanNode) -> set[str]:
    return {name for _, n in N.iter_nodes(plan) if isinstance(n, N.Extract) for name in n.attr_names}


_DAYS_AGO = re.compile(r"\bhow (?:many days|long) (?:ago|since)\b", re.I)
DAYS_AGO = "days_ago"


def days_since_the_last_time(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "how many days ago did i last travel", the planner found the latest
    start (``MAX(l=..., attr_name="start")``) and the answer was a date. A
    question that asks how many days ago (how long since), answered by the latest
    start, a list of rows, or anything else over one search (its FILTERs kept),
    gets the fewest days between an event's day and today: ``MIN(l=MAP(l=..., fct=lambda e: (today() - date(e.start)).days,
    res_name="days_ago"), attr_name="days_ago")``. Otherwise ``plan`` itself."""
    if not _DAYS_AGO.search(question):
        return plan
    if isinstance(plan, N.Max) and plan.attr_name == "start":
        rows = plan.l
    elif isinstance(plan, _LISTS):
        rows = plan
    elif (searched := _the_one_search(plan)) is not None:
        rows = searched  # "how many days ago did I last talk to ChatGPT" got an argmax of extracted "days"
    else:
        return plan
    since = parse_expression("(today() - date(e.start)).days", ("e",))
    return N.Min(N.Map(rows, X.Lambda(("e",), since), DAYS_AGO), DAYS_AGO)


def _the_only_retrieve(plan: N.PlanNode) -> N.Retrieve | None:
    """The plan's only RETRIEVE, where it has one and no JOIN; else None."""
    nodes = [n for _, n in N.iter_nodes(plan)]
    searches = [n for n in nodes if isinstance(n, N.Retrieve)]
    if len(searches) != 1 or any(isinstance(n, (N.Join, N.Qud)) for n in nodes):
        return None
    return searches[0]


def _the_one_search(plan: N.PlanNode) -> N.PlanNode | None:
    """The plan's only RETRIEVE with the FILTERs right above it, where it has one
    and no JOIN; else None."""
    found: N.PlanNode | None = _the_only_retrieve(plan)
    if found is None:
        return None
    nodes = [n for _, n in N.iter_nodes(plan)]
    while (above := next((n for n in nodes if isinstance(n, N.Filter) and n.l is found), None)) is not None:
        found = above
    return found


_ASKS_UNIT = re.compile(r"^\W*(?:in |during )?(?:which|what) (year|month)\b(?! of| and)", re.I)


def group_by_the_time_asked_for(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "In which year have I watched the most number of a tv series?", the
    planner grouped the shows (``ARGMAX(GROUP_BY(EXTRACT(..., ["show"]), ["show"]),
    "show", "count")``) and answered a show. A question that asks which year (month)
    something happened most or least, answered by an argmax of counts over groups of
    another key, gets its groups by the year (month) of the events' start instead.
    Otherwise ``plan`` itself."""
    m = _ASKS_UNIT.search(question)
    if not (m and isinstance(plan, (N.ArgMax, N.ArgMin)) and plan.val_attr_name == "count"
            and isinstance(plan.l, N.GroupBy) and len(plan.l.attr_names) == 1):
        return plan
    unit, key = m.group(1).lower(), plan.l.attr_names[0]
    if key == unit or plan.arg_attr_name != key:
        return plan
    rows = plan.l.l
    if isinstance(rows, N.Map) and rows.res_name == key:
        return plan  # the planner's own time unit ("quarter", "season")
    when = N.Map(_without_extract(rows, key), X.Lambda(("e",), X.Call(unit, (X.GetAttr(X.Var("e"), "start"),))), unit)
    return replace(plan, l=N.GroupBy(when, (unit,)), arg_attr_name=unit)


_ASKS_MONTH_OF_YEAR = re.compile(r"^\W*(?:in |during )?(?:which|what) (?:month of (?:which|what|the) year|"
                                 r"month and year|year and month)\b", re.I)
_MOST_OR_LEAST = re.compile(r"\b(most|least)\b", re.I)


def group_by_month_of_year(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "Which month of which year did I swim the most?", the planner grouped
    by an extracted month name and year, or by month and each event's start (every
    swim its own group). A question that asks which month of which year something
    happened most or least, answered by groups (with or without their argmax), gets
    its groups by the year and month of the events' start, and the group with the
    most (least) events. Otherwise ``plan`` itself."""
    if not _ASKS_MONTH_OF_YEAR.search(question):
        return plan
    if isinstance(plan, (N.ArgMax, N.ArgMin)) and plan.val_attr_name == "count" and isinstance(plan.l, N.GroupBy):
        pick, groups = type(plan), plan.l
    elif isinstance(plan, N.GroupBy) and (m := _MOST_OR_LEAST.search(question)):
        pick, groups = (N.ArgMax if m.group(1).lower() == "most" else N.ArgMin), plan
    else:
        return plan
    rows = groups.l
    if set(groups.attr_names) == {"year", "month"} and isinstance(rows, N.Map) and rows.res_name in groups.attr_names:
        return plan  # grouped by the planner's own year and month of the events
    for key in groups.attr_names:
        rows = _without_extract(rows, key)
    start = X.GetAttr(X.Var("e"), "start")
    for unit in ("year", "month"):
        rows = N.Map(rows, X.Lambda(("e",), X.Call(unit, (start,))), unit)
    return pick(N.GroupBy(rows, ("year", "month")), "month", "count")


# "which cuisine do i eat most ...", "who did I call least": one thing asked for, by count
_ONE_MOST = re.compile(r"^\W*(?:(?:in|at|with|on)\s+)?(?:(?:which|what)\s+(?P<thing>[a-z]+)\s+|who\s+|whom\s+|what\s+)"
                       r"(?:do|does|did|have|has|had|was|is)\b.*?\b(?P<which>most|least)\b", re.I)


def one_answer_for_which_most(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "which cuisine do i eat most after playing football", the planner
    grouped the meals and stopped: the answer was "2 groups, largest first: italian
    (7); thai (1)". A plan that ends in a GROUP_BY of one key, for a question that
    asks which one thing (not "which 5 podcasts", not "what are the most common
    foods") happened most or least, takes the group with the most (least) rows.
    Otherwise ``plan`` itself."""
    m = _ONE_MOST.search(question)
    thing = m and (m.group("thing") or "").lower()
    if m is None or not isinstance(plan, N.GroupBy) or len(plan.attr_names) != 1 \
            or (thing.endswith("s") and not thing.endswith("ss")):
        return plan
    pick = N.ArgMax if m.group("which").lower() == "most" else N.ArgMin
    return pick(plan, plan.attr_names[0], "count")


# "running with people", "went hiking with friends": who came along, as a search phrase
_COMPANY = re.compile(r"\s+(?:together\s+)?with\s+(?:(?:my|some|other|the|a)\s+)?(?:people|persons|friends?|"
                      r"someone|somebody|others|company|whom|anyone|anybody|buddies|buddy|companions?|partners?)"
                      r"\s*$", re.I)


# a question whose answer is who: "Who did I run with", "how many different people"
_ASKS_WHO = re.compile(r"\bwho(m)?\b|\bhow many (different |distinct )?(people|persons|friends)\b", re.I)


def retrieve_the_activity_not_the_company(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "Who did I run with most often", the planner retrieved "running with
    people": the reranker passed 0 of the runs and the answer came from one diary
    note. Where the question asks who, that is what the EXTRACT of people above the
    RETRIEVE finds out, so its query loses a trailing "with people/friends/someone".
    "How often did I meet someone for coffee" keeps "coffee with people": there the
    company is what is counted. Otherwise ``plan`` itself."""
    if not _ASKS_WHO.search(question):
        return plan

    def rewrite(node: N.PlanNode) -> N.PlanNode:
        node = with_children(node, rewrite)
        if isinstance(node, N.Extract) and any(PEOPLE_KEYS.search(k) for k in node.attr_names):
            inner = _activity_only(node.l)
            return node if inner is node.l else replace(node, l=inner)
        return node
    return plan if isinstance(plan, N.Qud) else rewrite(plan)


def _activity_only(plan: N.PlanNode) -> N.PlanNode:
    if isinstance(plan, N.Filter):
        inner = _activity_only(plan.l)
        return plan if inner is plan.l else replace(plan, l=inner)
    if isinstance(plan, N.Retrieve):
        query = _COMPANY.sub("", plan.query)
        return replace(plan, query=query) if query and query != plan.query else plan
    return plan


# "online purchase of a book": a search phrase and what it is of or about ("meal at a
# restaurant", "dinner with friends" say where and with whom: the planner's paraphrase)
_QUALIFIED = re.compile(r"^(?P<head>.+?)\s+(?:of|about)\s+(?P<tail>.+)$", re.I)


def retrieve_what_the_question_says(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "What did I spend online last year?", the planner searched for "online
    purchase of a book", the book copied from a follow-up among its examples. A
    RETRIEVE query's "of ..." or "about ..." none of whose words the question says is
    dropped, and the search is for the rest.
    Otherwise ``plan`` itself."""
    said = stems(question)

    def rewrite(node: N.PlanNode) -> N.PlanNode:
        if isinstance(node, N.Retrieve):
            m = _QUALIFIED.match(node.query.strip())
            if m and (words := stems(m.group("tail"))) and not words & said and stems(m.group("head")):
                return replace(node, query=m.group("head"))
            return node
        return node if isinstance(node, N.Qud) else with_children(node, rewrite)
    return rewrite(plan)



_MAIL = re.compile(r"\b(?:e-?mails?|mails?|messages?|letters?|inbox)\b", re.I)
_RECEIVED = re.compile(r"\b(?:from|get|gets|got|getting|receive|receives|received|receiving)\b", re.I)
_MAIL_SENT = re.compile(r"\b(?:send|sends|sent|sending|wrote|write|writes|emailed|mailed|replied|reply)\b", re.I)


def mail_from_is_received(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "How many times did I get an email from Astrid Lacroix in total?", the
    planner copied "Who did I email most often?" and kept the mails whose direction
    was "sent" and whose "to" was her: 18 of the 54 she sent. Where the question
    speaks of mail received or from someone, and nothing of sending, a filter's
    ``e["direction"] == "sent"`` reads "received", and the mail's "to" read or
    extracted beside it becomes its "from". Otherwise ``plan`` itself."""
    if not (_MAIL.search(question) and _RECEIVED.search(question)) or _MAIL_SENT.search(question):
        return plan

    def rewrite(node: N.Filter) -> N.PlanNode:
        var = node.filter.params[0]
        sent = X.Compare(X.GetAttr(X.Var(var), "direction"), ("==",), (X.Const("sent"),))
        parts = X.conjuncts(node.filter.body)
        if sent not in parts:
            return node
        new = [replace(sent, comparators=(X.Const("received"),)) if c == sent
               else parse_expression(print_expr(c).replace(f'{var}["to"]', f'{var}["from"]'), (var,))
               for c in parts]
        inner = node.l
        if any("to" in X.attributes_read(c, var) for c in parts):
            inner = _renamed_extract(inner, "to", "from")
        return replace(node, l=inner, filter=X.Lambda(node.filter.params, X.conjoin(new)))

    return _each_filter(plan, rewrite)


# Services whose exports Hindsight imports, as people call them in questions.
_SERVICES = re.compile(r"\b(chatgpt|spotify|netflix|amazon|strava|garmin|gmail|outlook)\b", re.I)


def search_the_service_named(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "When did I last talk to ChatGPT?" over a real export, the planner
    searched for "chatbot conversation", and a calendar's weekly "Just chatting"
    came out as the last talk. Where the question names one service and the plan's
    one search names none, the search says it too ("ChatGPT chatbot conversation"),
    and RETRIEVE keeps to the kind of event it names. Otherwise ``plan`` itself."""
    named = {m.group(1).lower() for m in _SERVICES.finditer(question)}
    search = _the_only_retrieve(plan)
    if len(named) != 1 or search is None or _SERVICES.search(search.query):
        return plan
    service = named.pop()
    service = "ChatGPT" if service == "chatgpt" else service.capitalize()
    return _replace_node(plan, search, replace(search, query=f"{service} {search.query.strip()}"))


def search_without_the_time(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "how many minutes did i spend running in Nov 2021", the planner searched
    "running in Nov 2021" under a FILTER on November 2021; no run says "Nov 2021",
    and the search found none. A RETRIEVE right under a FILTER that reads the times
    searches without a trailing time ("in Nov 2021", "last year", "on Mondays"): the
    FILTER keeps to it. Otherwise ``plan`` itself."""
    def rewrite(node: N.Filter) -> N.PlanNode:
        below = node.l
        if not isinstance(below, N.Retrieve) or not X.attributes_read(node.filter.body, node.filter.params[0]) \
                & {"start", "end"}:
            return node
        m = _TRAILING_TIME.search(below.query)
        head = below.query[:m.start()].strip() if m else ""
        if not stems(head):
            return node
        return replace(node, l=replace(below, query=head))
    return _each_filter(plan, rewrite)


_TRAILING_TIME = re.compile(
    r"\s+(?:in|on|during|since|from|last|this|over)\s+(?:the\s+)?(?:(?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|"
    r"oct|nov|dec)[a-z]*\.?|spring|summer|autumn|fall|winter|year|month|week|weekend|weekends|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?|morning|mornings|evening|evenings)\s*)?(?:(?:19|20)\d\d)?\s*$",
    re.I)


# "Rome, Italy", "Miami, US": a place and the country or state it is in
_PLACE_IN = re.compile(r"^(?P<place>[^,]+),\s*[^,]+$")


def places_as_extracted(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "How many places did I visit in Rome, Italy?", the planner kept the rows
    whose extracted city was "Rome, Italy"; the extractor reads "Rome" off "We visited
    the Colosseum in Rome": 0 of 5. An extracted attribute compared with a place
    and the country it is in (``e["city"] == "Rome, Italy"``) is compared with either
    (``e["city"] in ["Rome, Italy", "Rome"]``). Otherwise ``plan`` itself."""
    def place(c: X.Expr, var: str) -> X.Expr:
        if not (isinstance(c, X.Compare) and c.ops == ("==",) and isinstance(c.left, X.GetAttr)
                and isinstance(c.left.obj, X.Var) and c.left.obj.name == var and c.left.name not in EVENT_ATTRIBUTES
                and isinstance(k := c.comparators[0], X.Const) and isinstance(k.value, str)
                and (m := _PLACE_IN.match(k.value.strip()))):
            return c
        return X.Compare(c.left, ("in",), (X.ListLit((k, X.Const(m.group("place").strip()))),))

    def rewrite(node: N.Filter) -> N.PlanNode:
        parts = X.conjuncts(node.filter.body)
        new = [place(c, node.filter.params[0]) for c in parts]
        if all(a is b for a, b in zip(new, parts)):
            return node
        return replace(node, filter=X.Lambda(node.filter.params, X.conjoin(new)))
    return _each_filter(plan, rewrite)


# extracted attributes that hold a place or someone's name (a mail's "to" and "from" as well)
_PLACE_KEYS = re.compile(r"^(city|cities|town|country|countries|place|places|location|destination|region|"
                         r"venue|restaurant|sight|landmark|attraction)$", re.I)
_ADDRESS_KEYS = re.compile(r"^(to|from|cc|bcc|author|organi[sz]er)$", re.I)


def names_as_mentioned(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "Which places in Bangkok, Thailand did I visit with Valentina?", the
    planner kept the rows whose extracted place was Bangkok and whose extracted
    person was "Valentina": 0 of 19 diary days of that trip, which say "I visited
    Grand Palace ... with Elizabeth, Valentina, Emery" (the place is the palace, the
    people are three). A condition that an extracted place or person is a name the
    question says (``e["person"] == "Valentina"``, ``e["city"] in ["Rome, Italy",
    "Rome"]``) also holds where the event mentions the name (``... or
    contains(e.text, "Valentina")``; "Rome" for "Rome, Italy"). The extracted value
    still counts where the text does not say it (a workout's city kept as an
    attribute). So does a mail's extracted "to" or "from": asked "How many times did
    I receive mail from Patrick Perry?", the plan compared ``e["to"]`` (addresses) with
    his name: 0 for 8. Otherwise ``plan`` itself."""
    def widen(node: N.Filter) -> N.PlanNode:
        var = node.filter.params[0]
        extracted = _extracted(node.l)
        parts = X.conjuncts(node.filter.body)
        new = [_or_mentioned(c, var, extracted, question) for c in parts]
        if all(a is b for a, b in zip(new, parts)):
            return node
        return replace(node, filter=X.Lambda(node.filter.params, X.conjoin(new)))
    return _each_filter(plan, widen)


def _or_mentioned(c: X.Expr, var: str, extracted: set[str], question: str) -> X.Expr:
    """``c`` or a mention of the names it compares with (see ``names_as_mentioned``);
    ``c`` itself where it is no such comparison."""
    asks = (isinstance(c, X.Compare) and c.ops in (("==",), ("in",))) or (
        isinstance(c, X.Call) and c.func == "contains")
    read, names = X.attributes_read(c, var), _texts(c)
    if not (asks and read and names and read <= extracted and all(_named_key(a) for a in read)
            and all(v != v.lower() and _words_of(v, question) for v in names)):
        return c
    return X.BoolOp("or", (c, *_mentions(var, names)))


def _mentions(var: str, names: list[str]) -> tuple[X.Expr, ...]:
    """That the event's title or text mentions one of ``names`` ("Rome" for "Rome,
    Italy"), as the parts of an ``or``."""
    said = dict.fromkeys((m.group("place") if (m := _PLACE_IN.match(v)) else v).strip() for v in names)
    return tuple(parse_expression(f"contains({var}.{field}, {json.dumps(n)})", (var,))
                 for n in said for field in ("title", "text"))


# "places did I visit in Rome, Italy", "places in Bangkok, Thailand", "sights in Paris"
_PLACES_IN = re.compile(r"\b(?:places|sights|landmarks|attractions)\b[^?.!]*?\bin\s+"
                        r"(?P<place>[A-Z][\w'-]*(?:(?:\s+|,\s*)[A-Z][\w'-]*)*)")
_SIGHT_KEYS = re.compile(r"^(place|places|sight|sights|landmark|landmarks|attraction|attractions)$", re.I)


def places_in_a_place_are_not_it(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "How many places did I visit in Rome, Italy?", the plan extracted the
    place of each note that mentions Rome, and the notes "I visited Rome, Italy for 4
    days" gave "Rome": 6 places for 5. The place a question asks for places in is
    none of them: above an EXTRACT of places, a FILTER keeps the rows whose place is
    not (a part of) it, ``not contains("Rome, Italy", e["place"])``. Otherwise
    ``plan`` itself."""
    m = _PLACES_IN.search(question)
    if m is None:
        return plan
    around = json.dumps(m.group("place"))

    def kept(node: N.Extract) -> X.Lambda | None:
        keys = [k for k in node.attr_names if _SIGHT_KEYS.match(k)]
        if not keys:
            return None
        return X.Lambda(("e",), parse_expression(
            " and ".join(f"not contains({around}, e[{json.dumps(k)}])" for k in keys), ("e",)))

    def rewrite(node: N.PlanNode) -> N.PlanNode:
        if isinstance(node, N.Qud):
            return node
        if isinstance(node, N.Filter) and isinstance(node.l, N.Extract) and node.filter == kept(node.l):
            return replace(node, l=with_children(node.l, rewrite))  # a plan grounded before (the plan cache)
        node = with_children(node, rewrite)
        condition = kept(node) if isinstance(node, N.Extract) else None
        return node if condition is None else N.Filter(node, condition)
    return rewrite(plan)


def _named_key(attr: str) -> bool:
    return bool(_PLACE_KEYS.match(attr) or PEOPLE_KEYS.match(attr) or _ADDRESS_KEYS.match(attr))


# "food I ate after playing football": two activities in one search phrase
_RELATED = re.compile(r"^(?P<a>.+?)\s+(?P<rel>after|while|during)\s+(?P<b>.+)$", re.I)
# what follows "after" that is a time, not an activity ("after 6pm", "after work", "after June")
_NO_ACTIVITY = re.compile(r"\d|^(work|school|midnight|noon|dark|sunset|sunrise|that|then|this|it)\b", re.I)
_AFTER = "i2.start > i1.end and i2.start - i1.end < hours(6)"
_WHILE = "overlaps(i1, i2)"


def join_what_the_query_relates(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "which cuisine do i eat most after playing football", the planner
    retrieved "food I ate after playing football": one search for two kinds of
    event, which found the matches and few meals after them. A RETRIEVE whose query
    says "A after B" becomes a JOIN of B's events with A's that start within six
    hours after each ends, and "A while/during B" a JOIN of A's events with the B
    they overlap, as the example library writes them. Otherwise ``plan`` itself."""
    def rewrite(node: N.PlanNode) -> N.PlanNode:
        if isinstance(node, N.Retrieve):
            return _joined(node)
        return node if isinstance(node, N.Qud) else with_children(node, rewrite)
    return rewrite(plan)


def _joined(node: N.Retrieve) -> N.PlanNode:
    m = _RELATED.match(node.query.strip())
    if m is None or not _is_activity(m.group("b")):
        return node
    return _related(N.Retrieve(m.group("a")), m.group("rel"), m.group("b"))


def _is_activity(phrase: str) -> bool:
    return not (_NO_ACTIVITY.search(phrase) or _MONTHS.search(phrase) or _WEEKDAYS.search(phrase)
                or _TIME_OF_DAY.search(phrase))


def _related(rows: N.PlanNode, rel: str, activity: str) -> N.Join:
    """``rows`` that start within six hours after an ``activity`` ends ("after"),
    or that overlap one ("while", "during"), as a JOIN with its events."""
    other = N.Retrieve(activity)
    if rel.lower() == "after":
        return N.Join(other, rows, parse_expression(_AFTER, ("i1", "i2")))
    return N.Join(rows, other, parse_expression(_WHILE, ("i1", "i2")))


# "... after playing football?": the activity the asked-about events follow, up to a
# time ("in 2023", "last year") or the end of the clause
_CLAUSE = re.compile(r"\b(?P<rel>after|while|during)\s+(?P<b>[^?.!,;|]+)", re.I)
_CLAUSE_END = re.compile(r"\s+(in|on|at|last|this|since|before|from|between|the most|most|least)\b.*$", re.I)


def join_what_the_filter_relates(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "which cuisine do i eat most after playing football", the planner had the
    extractor read a "sport" off each restaurant meal and kept the meals whose sport
    was "football": none. Where the question relates its events to an activity
    ("after playing football", "while cycling") and the plan has no JOIN, a FILTER
    condition that compares a row's attribute or text with words of that activity is
    replaced by a JOIN of the search below it with the activity's events (as
    :func:`join_what_the_query_relates` writes it), and the EXTRACT of that
    attribute goes. Otherwise ``plan`` itself."""
    m = _CLAUSE.search(question)
    if m is None or isinstance(plan, N.Qud) or any(isinstance(n, N.Join) for _, n in N.iter_nodes(plan)):
        return plan
    activity = _CLAUSE_END.sub("", m.group("b").strip())
    if not activity or not _is_activity(activity):
        return plan

    def rewrite(node: N.Filter) -> N.PlanNode:
        var = node.filter.params[0]
        parts = X.conjuncts(node.filter.body)
        relating = [c for c in parts if _compares_with(c, var, activity)]
        searches = [n for _, n in N.iter_nodes(node.l) if isinstance(n, N.Retrieve)]
        if not relating or len(searches) != 1:
            return node
        rows = node.l
        for name in set().union(*(X.attributes_read(c, var) for c in relating)) - {"text", "title"}:
            rows = _without_extract(rows, name)
        rows = _replace_node(rows, searches[0], _related(searches[0], m.group("rel"), activity))
        kept = [c for c in parts if c not in relating]
        return replace(node, l=rows, filter=X.Lambda(node.filter.params, X.conjoin(kept))) if kept else rows
    return _each_filter(plan, rewrite)


def join_the_day_the_question_names(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "what did I eat on the day that I visited Qutub Minar?", the planner
    searched "ate food in Qutub Minar": meals that name the tower, of which there are
    none. Where the question asks about "the day (that/when) I <activity>", the plan
    has one search and no JOIN, and that search says more than the activity, it
    becomes a JOIN of the activity's events with the search's on the same day, the
    search without the activity's names ("ate food"). Where the search is the
    activity's alone, the one thing the plan extracts is searched for that day
    (asked what was eaten on the day of a football game, the "food" of the game was
    its title, "Football"). Otherwise ``plan`` itself."""
    m = _THE_DAY.search(question)
    if m is None or isinstance(plan, N.Qud) or any(isinstance(n, N.Join) for _, n in N.iter_nodes(plan)):
        return plan
    activity = _CLAUSE_END.sub("", m.group("b").strip())
    searches = [n for _, n in N.iter_nodes(plan) if isinstance(n, N.Retrieve)]
    if not activity or len(searches) != 1:
        return plan
    rest = _without_names(searches[0].query, activity)
    if not rest or stems(rest) <= stems(activity):
        # the search is the activity's: what the plan extracts is what to search for
        # that day ("food" of "What did I eat on the day I played football?")
        asked = [a for _, n in N.iter_nodes(plan) if isinstance(n, N.Extract) for a in n.attr_names]
        rest = asked[0].replace("_", " ") if len(asked) == 1 and _a_thing(asked[0]) else ""
        if not rest or stems(rest) <= stems(activity):
            return plan
    day = N.Join(N.Retrieve(activity), N.Retrieve(rest), parse_expression(_SAME_DAY, ("i1", "i2")))
    return _replace_node(plan, searches[0], day)


def extract_what_the_question_asks(plan: N.PlanNode, question: str) -> N.PlanNode:
    """Asked "what did I eat on the day that I visited Qutub Minar?", the planner
    joined the visits with the meals of their days and answered with the joined
    events: dates, not food. A question that asks what was eaten, drunk, cooked or
    read, answered by a plan that extracts nothing and ends in events
    (RETRIEVE, FILTER or JOIN), gets the thing extracted at the top
    (:func:`extract_on_its_side` then asks it of the side of a JOIN that searched
    for it). Otherwise ``plan`` itself."""
    m = _WHAT_DID_I.search(question)
    if m is None or not isinstance(plan, (N.Retrieve, N.Filter, N.Join)) \
            or any(isinstance(n, (N.Extract, N.Qud, N.GroupBy, N.Map, N.Unnest)) for _, n in N.iter_nodes(plan)):
        return plan
    verb = m.group("verb").lower()
    key = next(k for pattern, k in _ASKED_THINGS if re.fullmatch(pattern, verb))
    return N.Extract(plan, (key,), ("str",))


_WHAT_DID_I = re.compile(
    r"^\W*what (?:did|do|have) i (?:usually |often |ever )?(?P<verb>eat|ate|have for (?:breakfast|lunch|dinner)|"
    r"drink|drank|cook|bake|make for (?:breakfast|lunch|dinner)|read)\b", re.I)
# not what was bought or ordered: an order's title is what was bought ("What did I
# order online in the week before my vacation?" lists the orders)
_ASKED_THINGS = ((r"eat|ate|have for .*", "food"), (r"drink|drank", "drink"), (r"cook|bake|make for .*", "dish"),
                 (r"read", "book"))


def extract_on_its_side(plan: N.PlanNode, question: str = "") -> N.PlanNode:
    """Asked "What did I eat on the day I played football?", the plan was
    ``EXTRACT(JOIN(RETRIEVE("played football"), RETRIEVE("food"), ...), ["food"])``:
    the extractor read the "food" of each joined pair, of the game as well as of
    the meal, and the game's title "Football" was the food. An EXTRACT right over a
    JOIN asks each key that names a thing (not a time, amount or person) of the one
    side whose search says it ("food" of the side that searched "food" or "ate
    food"), under the JOIN; keys that neither side's search says, or both, stay
    above it. Otherwise ``plan`` itself."""
    def rewrite(node: N.PlanNode) -> N.PlanNode:
        if isinstance(node, (N.Qud, N.Retrieve)):
            return node
        node = with_children(node, rewrite)
        if not (isinstance(node, N.Extract) and isinstance(node.l, N.Join)):
            return node
        join = node.l
        sides: dict[str, list[tuple[str, str]]] = {"l1": [], "l2": []}
        kept: list[tuple[str, str]] = []
        for key, kind in zip(node.attr_names, node.attr_types):
            said = [side for side in ("l1", "l2") if _a_thing(key) and _searched(getattr(join, side), key)]
            (sides[said[0]] if len(said) == 1 else kept).append((key, kind))
        if not sides["l1"] and not sides["l2"]:
            return node
        for side, keys in sides.items():
            if keys:
                join = replace(join, **{side: N.Extract(getattr(join, side), tuple(k for k, _ in keys),
                                                        tuple(t for _, t in keys))})
        if not kept:
            return join
        return replace(node, l=join, attr_names=tuple(k for k, _ in kept), attr_types=tuple(t for _, t in kept))
    return rewrite(plan)


def _searched(side: N.PlanNode, key: str) -> bool:
    """Whether a search of ``side`` (not of a JOIN within it) says a word of ``key``."""
    words = stems(key.replace("_", " "))
    while isinstance(side, (N.Filter, N.Extract)):
        side = side.l
    return isinstance(side, N.Retrieve) and bool(words & stems(side.query))


def _a_thing(attr: str) -> bool:
    """Whether ``attr`` names a thing one can search for, not a time, amount or person."""
    return attr not in EVENT_ATTRIBUTES and not PEOPLE_KEYS.match(attr) and not re.search(
        r"date|day|time|hour|month|year|duration|minutes|count|amount|total|price|distance", attr)


_THE_DAY = re.compile(r"\bon the (?:same )?day (?:that |when )?I (?P<b>[^?.!,;|]+)", re.I)
_SAME_DAY = "same_day(i1.start, i2.start)"


def _without_names(query: str, activity: str) -> str:
    """``query`` without the capitalised words ``activity`` says, nor a preposition
    left before them: "ate food in Qutub Minar" less "visited Qutub Minar" is "ate food"."""
    names = {w for w in re.findall(r"[\w'’-]+", activity) if w[:1].isupper()}
    words = query.split()
    kept = [w for w in words if w.strip(",.") not in names]
    while kept and kept[-1].lower() in _PREPOSITIONS:
        kept.pop()
    return " ".join(kept)


_PREPOSITIONS = {"in", "at", "near", "on", "to", "from", "by", "around", "of"}


def _compares_with(conjunct: X.Expr, var: str, activity: str) -> bool:
    """``conjunct`` is ``e["k"] == "words"`` or ``contains(e.k, "words")`` with words
    the activity says."""
    if isinstance(conjunct, X.Compare) and conjunct.ops == ("==",):
        sides = (conjunct.left, *conjunct.comparators)
    elif isinstance(conjunct, X.Call) and conjunct.func == "contains":
        sides = conjunct.args
    else:
        return False
    reads_row = any(X.attributes_read(side, var) for side in sides)
    words = [side.value for side in sides if isinstance(side, X.Const) and isinstance(side.value, str)]
    return reads_row and len(words) == 1 and _words_of(words[0], activity)


def _replace_node(plan: N.PlanNode, old: N.PlanNode, new: N.PlanNode) -> N.PlanNode:
    if plan is old:
        return new
    if isinstance(plan, N.Qud):
        return plan
    return with_children(plan, lambda child: _replace_node(child, old, new))


def _counts_things(question: str, attr_name: str) -> bool:
    if _TIMES.search(question):
        return True
    m = _THINGS.search(question)
    if m is None:
        return False
    thing = m.group(1).lower()
    stem = thing[:-1] if thing.endswith("s") else thing
    return thing not in _UNITS and (not attr_name or stem not in attr_name.lower())


def _without_extract(plan: N.PlanNode, name: str) -> N.PlanNode:
    """``plan`` without ``name`` in the EXTRACT that gives it (see :func:`_at_the_extract`)."""
    def drop(node: N.Extract) -> N.PlanNode:
        kept = [(n, t) for n, t in zip(node.attr_names, node.attr_types) if n != name]
        if not kept:
            return node.l
        return replace(node, attr_names=tuple(n for n, _ in kept), attr_types=tuple(t for _, t in kept))
    return _at_the_extract(plan, name, drop)


def _at_the_extract(plan: N.PlanNode, name: str, change: Callable[[N.Extract], N.PlanNode]) -> N.PlanNode:
    """``plan`` with ``change`` made to the EXTRACT that gives ``name``, looking down
    through FILTERs that do not read it; unchanged when anything else is in the way."""
    if isinstance(plan, N.Filter) and name not in X.attributes_read(plan.filter.body, plan.filter.params[0]):
        inner = _at_the_extract(plan.l, name, change)
        return plan if inner is plan.l else replace(plan, l=inner)
    if isinstance(plan, N.Extract) and name in plan.attr_names:
        return change(plan)
    return plan
