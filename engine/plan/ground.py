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

import re
from collections.abc import Callable
from dataclasses import replace

from engine.plan import expr as X
from engine.plan import nodes as N
from engine.plan.parse import parse_expression
from engine.plan.printer import print_plan
from engine.plan.repair import with_children
from engine.plan.validate import text_attributes

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


# "running with people", "went hiking with friends": who came along, as a search phrase
_COMPANY = re.compile(r"\s+(?:together\s+)?with\s+(?:(?:my|some|other|the|a)\s+)?(?:people|persons|friends?|"
                      r"someone|somebody|others|company|whom|anyone|anybody|buddies|buddy|companions?|partners?)"
                      r"\s*$", re.I)


def _activity_only(plan: N.PlanNode) -> N.PlanNode:
    if isinstance(plan, N.Filter):
        inner = _activity_only(plan.l)
        return plan if inner is plan.l else replace(plan, l=inner)
    if isinstance(plan, N.Retrieve):
        query = _COMPANY.sub("", plan.query)
        return replace(plan, query=query) if query and query != plan.query else plan
    return plan


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


# "Rome, Italy", "Miami, US": a place and the country or state it is in
_PLACE_IN = re.compile(r"^(?P<place>[^,]+),\s*[^,]+$")


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


