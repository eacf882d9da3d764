"""Question families for the planner's training data only, beside the benchmark's
train templates: the kinds of question the templates never ask, so the planner
learns them too (#38: lookups of a value, yes/no, the first or last X before or
after Y, comparisons of two things, the last time of a named thing).

Each family is a :class:`synth.questions.Template` (phrasings, gold SQL over the
canonical facts, parameters drawn from the persona's facts), instantiated by the
same code as the templates, so its gold is computed, never written. Its candidate
plans (:func:`family_sketches`) are tried by ``app.bench.plan_verify --families``
and a pair is kept only when executing a candidate gives the gold answer.

The phrasings are written for this module. None is taken from a benchmark's
questions (the fresh-phrasing set, the dev or test templates, TimelineQA); the
leakage check in CI reads this folder as it reads the engine.
"""
from __future__ import annotations

from datetime import datetime

from synth.questions import Template

from models.training.plan_sketches import q

_RUN = "kind = 'workout' AND sport = 'running'"
_MEAL = "kind = 'meal_out'"
_AMAZON = "kind = 'purchase' AND shop = 'Amazon'"


def _t(tid: str, category: str, texts: tuple[str, ...], sql: str, evidence: str, params=(), answer_type="text"
       ) -> Template:
    return Template(f"extra:{tid}", category, texts, sql, evidence, tuple(params), answer_type, "train")


def _on_day(where: str, column: str, *, single: bool = True) -> tuple[str, str, tuple]:
    """(gold SQL, evidence SQL, params) of "the <column> of the <where> event on a day",
    over days with one such event (``single``) so the answer is one value."""
    days = (f"SELECT day FROM events WHERE {where} AND {column} IS NOT NULL AND {column} <> '' "
            f"GROUP BY day HAVING count(*) = 1 ORDER BY 1" if single else
            f"SELECT DISTINCT day FROM events WHERE {where} AND {column} IS NOT NULL ORDER BY 1")
    return (f"SELECT DISTINCT {column} FROM events WHERE {where} AND day = $day ORDER BY 1",
            f"SELECT id FROM events WHERE {where} AND day = $day ORDER BY id", (("day", days),))


# A day named without its year ("on 13 July", "on July 13") is the latest one before
# today: the prompt has no date, so the plan says it relative to today(). Days are
# drawn from the last 300 days of the life, shown in either order.
_NAMED = "(strftime(day, '%-d %B') = $dayname OR strftime(day, '%B %-d') = $dayname)"
_LATEST_YEAR = "day < $today AND day >= $today - INTERVAL 365 DAY"


def _recent_days(where: str, column: str | None = None) -> str:
    """The param query of a day named without its year: days of the life's last 300
    days with one ``where`` event (that has ``column``), as "13 July" or "July 13"."""
    has = f" AND {column} IS NOT NULL AND {column} <> ''" if column else ""
    days = (f"SELECT day FROM events WHERE {where}{has} AND day >= (SELECT max(day) FROM events) - INTERVAL 300 DAY "
            "GROUP BY day HAVING count(*) = 1")
    return (f"SELECT strftime(day, '%-d %B') FROM ({days}) UNION SELECT strftime(day, '%B %-d') FROM ({days}) "
            "ORDER BY 1")


def _on_recent_day(where: str, column: str) -> tuple[str, str, tuple]:
    """(gold SQL, evidence SQL, params) of "the <column> of the <where> event on 13 July"."""
    on = f"{where} AND {_NAMED} AND {_LATEST_YEAR}"
    return (f"SELECT DISTINCT {column} FROM events WHERE {on} ORDER BY 1",
            f"SELECT id FROM events WHERE {on} ORDER BY id", (("dayname", _recent_days(where, column)),))


_ONE_TRIP = "SELECT city FROM events WHERE kind = 'trip' GROUP BY city HAVING count(*) = 1 ORDER BY 1"


def _run_by_trip(tid: str, texts: tuple[str, ...], *, after: bool) -> Template:
    """The day of the first run after (or the last run before) the trip to $city."""
    edge, cmp, agg, order = ("end_utc", ">", "min", "") if after else ("start_utc", "<", "max", " DESC")
    where = f"{_RUN} AND start_utc {cmp} (SELECT {edge} FROM events WHERE kind = 'trip' AND city = $city)"
    return _t(tid, "first_last", texts, f"SELECT {agg}(day) FROM events WHERE {where}",
              f"SELECT id FROM events WHERE {where} ORDER BY start_utc{order} LIMIT 1", (("city", _ONE_TRIP),), "date")


def _yes_no(where: str) -> str:
    return f"SELECT CASE WHEN count(*) > 0 THEN 'yes' ELSE 'no' END FROM events WHERE {where}"


def _families() -> list[Template]:
    out: list[Template] = []
    # ---- lookups: a value of one event -----------------------------------------------
    for tid, where, column, texts in (
        ("lookup:run_place:day", _RUN, "place",
         ("where did I run on {day}", "Where did I go running on {day}?", "which park was my run in on {day}",
          "the run on {day} - where was that?")),
        ("lookup:restaurant:day", _MEAL, "restaurant",
         ("which restaurant did I eat at on {day}", "Where did I eat out on {day}?",
          "name of the restaurant I went to on {day}", "what place did we eat at on {day}")),
        ("lookup:cuisine:day", _MEAL, "cuisine",
         ("what kind of food did I eat out on {day}", "which cuisine was the restaurant on {day}?")),
        ("lookup:mood:day", "kind = 'journal_note'", "mood",
         ("how was I feeling on {day}", "What mood was I in on {day}, going by my journal?",
          "my mood on {day} according to my diary")),
        ("lookup:amazon_product:day", _AMAZON, "product",
         ("what did I order from amazon on {day}", "Which item did I buy on Amazon on {day}?",
          "amazon purchase on {day}: what was it")),
        ("lookup:coffee_place:day", "kind = 'social' AND activity = 'coffee'", "place",
         ("where did I have coffee on {day}", "Which café did I meet a friend at on {day}?")),
        ("lookup:show:day", "kind = 'tv_view'", "show_title",
         ("what did I watch on netflix on {day}", "Which show did I watch on {day}?")),
    ):
        sql, ev, params = _on_day(where, column)
        out.append(_t(tid, "lookup", texts, sql, ev, params))
        sql, ev, params = _on_recent_day(where, column)  # the same asked without the year
        out.append(_t(tid.replace(":day", ":recent_day"), "lookup",
                      tuple(text.replace("{day}", "{dayname}") for text in texts), sql, ev, params))
    for tid, where, param, texts in (
        ("lookup:meal_people:day", _MEAL, "day",
         ("who did I eat out with on {day}", "Who joined me for the meal out on {day}?",
          "with whom did I have a meal out on {day}")),
        ("lookup:trip_people:city", "kind = 'trip'", "city",
         ("who came with me to {city}", "Who travelled with me to {city}?", "who was on the {city} trip with me")),
    ):  # the people of the one such event on a day, or of the one trip to a city
        out.append(_t(tid, "lookup", texts,
                      f"SELECT DISTINCT unnest(people) FROM events WHERE {where} AND {param} = ${param} ORDER BY 1",
                      f"SELECT id FROM events WHERE {where} AND {param} = ${param} ORDER BY id",
                      ((param, f"SELECT {param} FROM events WHERE {where} AND len(people) > 0 GROUP BY {param} "
                               "HAVING count(*) = 1 ORDER BY 1"),), "list"))
    out.append(_t("lookup:order_number:product", "lookup",
                  ("what's the order number for the {product}", "order number of my {product} order?",
                   "Which order ID did the {product} have?"),
                  "SELECT DISTINCT order_id FROM events WHERE kind = 'purchase' AND product = $product",
                  "SELECT id FROM events WHERE kind = 'purchase' AND product = $product ORDER BY id",
                  (("product", "SELECT product FROM events WHERE kind = 'purchase' AND order_id IS NOT NULL "
                               "GROUP BY product HAVING count(*) = 1 ORDER BY 1"),)))
    out.append(_t("lookup:order_price:product", "lookup",
                  ("how much did the {product} cost", "What did I pay for the {product}?"),
                  "SELECT DISTINCT amount FROM events WHERE kind = 'purchase' AND product = $product",
                  "SELECT id FROM events WHERE kind = 'purchase' AND product = $product ORDER BY id",
                  (("product", "SELECT product FROM events WHERE kind = 'purchase' AND amount IS NOT NULL "
                               "GROUP BY product HAVING count(*) = 1 ORDER BY 1"),), "number"))
    # ---- the last time of a named thing ------------------------------------------------
    for tid, where, param, values, texts in (
        ("temporal:last_at:restaurant", _MEAL + " AND restaurant = $restaurant", "restaurant",
         f"SELECT DISTINCT restaurant FROM events WHERE {_MEAL} ORDER BY 1",
         ("when did I last eat at {restaurant}", "When was I last at {restaurant}?",
          "last time I went to {restaurant}?")),
        ("temporal:last_heard:podcast", "kind = 'podcast_play' AND show_title = $podcast", "podcast",
         "SELECT DISTINCT show_title FROM events WHERE kind = 'podcast_play' ORDER BY 1",
         ("when did I last listen to {podcast}", "last time I played an episode of {podcast}?")),
        ("temporal:last_mailed:person", "kind = 'email' AND direction = 'sent' AND counterpart = $person", "person",
         "SELECT DISTINCT counterpart FROM events WHERE kind = 'email' AND direction = 'sent' ORDER BY 1",
         ("when did I last email {person}", "When did I last write to {person}?",
          "date of my last mail to {person}")),
        ("temporal:last_coffee:person", "kind = 'social' AND list_contains(people, $person)", "person",
         "SELECT DISTINCT unnest(people) FROM events WHERE kind = 'social' ORDER BY 1",
         ("when did I last have coffee with {person}", "When did I last meet {person} for coffee?")),
    ):
        out.append(_t(tid, "temporal", texts,
                      f"SELECT max(day) FROM events WHERE {where} AND start_local < $today",
                      f"SELECT id FROM events WHERE {where} AND start_local < $today ORDER BY id",
                      ((param, values),), "date"))
    # ---- yes or no --------------------------------------------------------------------
    every_day = "SELECT DISTINCT day FROM events WHERE kind = 'steps' ORDER BY 1"
    out.append(_t("yesno:run:day", "yesno", ("did I go for a run on {day}", "Did I run on {day}?",
                                             "did i go running on {day}"),
                  _yes_no(f"{_RUN} AND day = $day"), f"SELECT id FROM events WHERE {_RUN} AND day = $day",
                  (("day", every_day),)))
    out.append(_t("yesno:eat_out:day", "yesno", ("did I eat out on {day}", "Did I go to a restaurant on {day}?"),
                  _yes_no(f"{_MEAL} AND day = $day"), f"SELECT id FROM events WHERE {_MEAL} AND day = $day",
                  (("day", every_day),)))
    recent_every_day = _recent_days("kind = 'steps'")
    for tid, where, texts in (("yesno:run:recent_day", _RUN, ("did I go for a run on {dayname}",
                                                              "Did I run on {dayname}?")),
                              ("yesno:eat_out:recent_day", _MEAL, ("did I eat out on {dayname}",
                                                                   "Did I go to a restaurant on {dayname}?"))):
        on = f"{where} AND {_NAMED} AND {_LATEST_YEAR}"
        out.append(_t(tid, "yesno", texts, _yes_no(on), f"SELECT id FROM events WHERE {on}",
                      (("dayname", recent_every_day),)))
    out.append(_t("yesno:trip:city", "yesno", ("have I ever been to {city}", "Did I ever travel to {city}?",
                                               "was I in {city} on a trip"),
                  _yes_no("kind = 'trip' AND city = $city"), "SELECT id FROM events WHERE kind = 'trip' AND city = $city",
                  (("city", "SELECT DISTINCT city FROM events WHERE city IS NOT NULL AND city <> '' ORDER BY 1"),)))
    out.append(_t("yesno:cuisine:month", "yesno", ("did I eat {cuisine} food in {month}",
                                                   "Did I have {cuisine} in {month}?"),
                  _yes_no(f"{_MEAL} AND cuisine = $cuisine AND strftime(day, '%Y-%m') = $month"),
                  f"SELECT id FROM events WHERE {_MEAL} AND cuisine = $cuisine AND strftime(day, '%Y-%m') = $month",
                  (("cuisine", f"SELECT DISTINCT cuisine FROM events WHERE {_MEAL} ORDER BY 1"),
                   ("month", f"SELECT DISTINCT strftime(day, '%Y-%m') FROM events WHERE {_MEAL} ORDER BY 1"))))
    out.append(_t("yesno:shop:year", "yesno", ("did I buy anything from {shop} in {year}",
                                               "Did I order from {shop} in {year}?"),
                  _yes_no("kind = 'purchase' AND shop = $shop AND year(day) = $year"),
                  "SELECT id FROM events WHERE kind = 'purchase' AND shop = $shop AND year(day) = $year",
                  (("shop", "SELECT DISTINCT shop FROM events WHERE kind = 'purchase' ORDER BY 1"),
                   ("year", "SELECT DISTINCT year(day) FROM events WHERE kind = 'purchase' ORDER BY 1"))))
    # ---- the first or last X before or after Y -------------------------------------------
    trip_end = "(SELECT end_utc FROM events WHERE kind = 'trip' AND city = $city)"
    trip_start = "(SELECT start_utc FROM events WHERE kind = 'trip' AND city = $city)"
    out.append(_run_by_trip("first_after:run:trip", ("when was my first run after the {city} trip",
                                                     "When did I first go running after coming back from {city}?",
                                                     "first run after {city}: what date"), after=True))
    out.append(_t("first_after:restaurant:trip", "first_last",
                  ("where did I eat out first after the {city} trip", "Which restaurant did I go to first "
                   "after getting back from {city}?"),
                  f"SELECT restaurant FROM events WHERE {_MEAL} AND start_utc > {trip_end} "
                  "ORDER BY start_utc LIMIT 1",
                  f"SELECT id FROM events WHERE {_MEAL} AND start_utc > {trip_end} ORDER BY start_utc LIMIT 1",
                  (("city", _ONE_TRIP),)))
    out.append(_t("last_before:amazon:trip", "first_last",
                  ("what did I last order on amazon before the {city} trip", "Last Amazon purchase before I left "
                   "for {city}?"),
                  f"SELECT product FROM events WHERE {_AMAZON} AND start_utc < {trip_start} "
                  "ORDER BY start_utc DESC LIMIT 1",
                  f"SELECT id FROM events WHERE {_AMAZON} AND start_utc < {trip_start} "
                  "ORDER BY start_utc DESC LIMIT 1",
                  (("city", _ONE_TRIP),)))
    out.append(_run_by_trip("last_before:run:trip", ("when did I last go running before the {city} trip",
                                                     "Last run before I left for {city}: which day was it?",
                                                     "my last run before flying to {city}"), after=False))
    for tid, fn, texts in (("first_of_day:track", "ASC", ("what was the first song I played on {day}",
                                                          "First track I listened to on {day}?")),
                           ("last_of_day:track", "DESC", ("what was the last song I played on {day}",
                                                          "Which song did I listen to last on {day}?"))):
        out.append(_t(tid, "first_last", texts,
                      f"SELECT track FROM events WHERE kind = 'music_play' AND day = $day "
                      f"ORDER BY start_utc {fn} LIMIT 1",
                      f"SELECT id FROM events WHERE kind = 'music_play' AND day = $day ORDER BY start_utc {fn} LIMIT 1",
                      (("day", "SELECT DISTINCT day FROM events WHERE kind = 'music_play' ORDER BY 1"),)))
    # ---- comparisons of two things -------------------------------------------------------
    people = f"SELECT DISTINCT unnest(people) FROM events WHERE {_MEAL} ORDER BY 1"
    out.append(_t("compare:meal_people", "comparison",
                  ("did I eat out more with {person} or with {other}", "{person} or {other}: who did I have more "
                   "meals out with?", "who do I go to restaurants with more often, {person} or {other}"),
                  f"SELECT CASE WHEN a > b THEN $person WHEN b > a THEN $other ELSE 'the same' END FROM "
                  f"(SELECT (SELECT count(*) FROM events WHERE {_MEAL} AND list_contains(people, $person)) AS a, "
                  f"(SELECT count(*) FROM events WHERE {_MEAL} AND list_contains(people, $other)) AS b)",
                  f"SELECT id FROM events WHERE {_MEAL} AND (list_contains(people, $person) OR "
                  "list_contains(people, $other)) ORDER BY id",
                  (("person", people), ("other", people))))
    years = f"SELECT DISTINCT year(day) FROM events WHERE {_RUN} ORDER BY 1"
    out.append(_t("compare:runs:years", "comparison",
                  ("did I run more often in {year} or in {other_year}", "Which year had more runs, {year} or "
                   "{other_year}?"),
                  f"SELECT CASE WHEN a > b THEN $year WHEN b > a THEN $other_year ELSE NULL END FROM "
                  f"(SELECT (SELECT count(*) FROM events WHERE {_RUN} AND year(day) = $year) AS a, "
                  f"(SELECT count(*) FROM events WHERE {_RUN} AND year(day) = $other_year) AS b)",
                  f"SELECT id FROM events WHERE {_RUN} AND year(day) IN ($year, $other_year) ORDER BY id",
                  (("year", years), ("other_year", years)), "number"))
    cuisines = f"SELECT DISTINCT cuisine FROM events WHERE {_MEAL} ORDER BY 1"
    out.append(_t("compare:cuisines", "comparison",
                  ("do I eat {cuisine} or {other} food more often", "{cuisine} or {other}: which do I have more?"),
                  f"SELECT CASE WHEN a > b THEN $cuisine WHEN b > a THEN $other ELSE 'the same' END FROM "
                  f"(SELECT (SELECT count(*) FROM events WHERE {_MEAL} AND cuisine = $cuisine) AS a, "
                  f"(SELECT count(*) FROM events WHERE {_MEAL} AND cuisine = $other) AS b)",
                  f"SELECT id FROM events WHERE {_MEAL} AND cuisine IN ($cuisine, $other) ORDER BY id",
                  (("cuisine", cuisines), ("other", cuisines))))
    # ---- two sums compared, a difference, the period with the largest sum ---------------------
    run_years = f"SELECT DISTINCT year(day) FROM events WHERE {_RUN} ORDER BY 1"
    two_years = (("year", run_years), ("other_year", run_years))
    km = (f"(SELECT (SELECT coalesce(sum(distance_km), 0) FROM events WHERE {_RUN} AND year(day) = $year) AS a, "
          f"(SELECT coalesce(sum(distance_km), 0) FROM events WHERE {_RUN} AND year(day) = $other_year) AS b)")
    km_ev = f"SELECT id FROM events WHERE {_RUN} AND year(day) IN ($year, $other_year) ORDER BY id"
    out.append(_t("compare:run_km:years", "comparison",
                  ("did I run a longer total distance in {year} than in {other_year}",
                   "Was my running mileage higher in {year} than in {other_year}?",
                   "more kilometres running in {year} compared with {other_year}, yes or no?"),
                  f"SELECT CASE WHEN a > b THEN 'yes' ELSE 'no' END FROM {km}", km_ev, two_years))
    out.append(_t("difference:run_km:years", "comparison",
                  ("how many km more did I run in {year} than in {other_year}",
                   "What's the difference in running distance between {year} and {other_year}?",
                   "{year} vs {other_year}: by how many kilometres did my running differ"),
                  f"SELECT round(a - b, 1) FROM {km}", km_ev, two_years, "number"))
    out.append(_t("difference:cuisines", "comparison",
                  ("how many more {cuisine} meals than {other} meals have I eaten out",
                   "Count my {cuisine} restaurant visits minus my {other} ones",
                   "by how many meals does {cuisine} beat {other} for me"),
                  f"SELECT (SELECT count(*) FROM events WHERE {_MEAL} AND cuisine = $cuisine) - "
                  f"(SELECT count(*) FROM events WHERE {_MEAL} AND cuisine = $other)",
                  f"SELECT id FROM events WHERE {_MEAL} AND cuisine IN ($cuisine, $other) ORDER BY id",
                  (("cuisine", cuisines), ("other", cuisines)), "number"))
    for tid, where, column, texts in (
        ("top_sum:amazon_month:year", _AMAZON, "amount",
         ("in which month of {year} did I spend the most on amazon", "My most expensive Amazon month in {year}?",
          "which month in {year} had my biggest amazon bill")),
        ("top_sum:run_km_month:year", _RUN, "distance_km",
         ("in which month of {year} did I run the most kilometres", "Which month of {year} had my highest "
          "running distance?", "month with the most km run in {year}")),
    ):
        out.append(_t(tid, "argmax", texts,
                      f"SELECT strftime(start_local, '%Y-%m') FROM events WHERE {where} AND year(day) = $year "
                      f"GROUP BY 1 ORDER BY sum({column}) DESC LIMIT 1",
                      f"SELECT id FROM events WHERE {where} AND year(day) = $year ORDER BY id",
                      (("year", f"SELECT DISTINCT year(day) FROM events WHERE {where} ORDER BY 1"),)))
    return out


FAMILIES: tuple[Template, ...] = tuple(_families())
BY_ID = {t.id: t for t in FAMILIES}


# --------------------------------------------------------------------------- candidate plans
def _day(params: dict) -> str:
    """The filter of the day asked about: a date, or a day named without its year
    (``dayname``), the latest such day before today."""
    if "dayname" in params:
        named = str(params["dayname"])
        try:
            when = datetime.strptime(named, "%d %B")
        except ValueError:
            when = datetime.strptime(named, "%B %d")
        return (f"month(e.start) == {when.month} and day(e.start) == {when.day} and e.start < today() "
                "and e.start >= today() - days(365)")
    y, m, d = (int(x) for x in str(params["day"])[:10].split("-"))
    return f"date(e.start) == date({y}, {m}, {d})"


def _month(params: dict) -> str:
    y, m = (int(x) for x in str(params["month"]).split("-"))
    return f"year(e.start) == {y} and month(e.start) == {m}"


def _filtered(query: str, cond: str | None) -> str:
    base = f"RETRIEVE(query={q(query)})"
    return f"FILTER(l={base}, filter=lambda e: {cond})" if cond else base


def _extract(plan: str, attrs: list[tuple[str, str]]) -> str:
    return (f"EXTRACT(l={plan}, attr_names=[{', '.join(q(a) for a, _ in attrs)}], "
            f"attr_types=[{', '.join(t for _, t in attrs)}])")


def _people(plan: str, name: str = "people") -> str:
    return (f"GROUP_BY(l=UNNEST(l={_extract(plan, [(name, 'str')])}, nested_attr_name={q(name)}, "
            f"unnested_attr_name=\"person\"), attr_names=[\"person\"])")


def _more_often(rows: str, attr: str, among: str | None) -> str:
    """The value of ``attr`` (one of ``among``, a list literal, if given) that the most rows have."""
    if among:
        rows = f"FILTER(l={rows}, filter=lambda e: e[{q(attr)}] in {among})"
    return (f"ARGMAX(l=GROUP_BY(l={rows}, attr_names=[{q(attr)}]), arg_attr_name={q(attr)}, "
            "val_attr_name=\"count\")")


#: What each lookup's events are searched as, and the attribute names a store may use
#: for the value (execution picks).
LOOKUP: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "run_place": (("running", "went for a run"), ("place", "location")),
    "restaurant": (("restaurant meal", "ate out at a restaurant"), ("restaurant",)),
    "cuisine": (("restaurant meal", "ate out at a restaurant"), ("cuisine",)),
    "mood": (("journal note", "diary entry"), ("mood",)),
    "amazon_product": (("Amazon order",), ("product",)),
    "coffee_place": (("coffee with a friend", "met for coffee"), ("place", "cafe")),
    "show": (("watched Netflix", "watched an episode"), ("show", "title")),
}


def family_sketches(template_id: str, params: dict) -> list[str]:
    """Candidate plans for an instance of the family ``template_id``."""
    if template_id not in BY_ID:
        raise ValueError(f"{template_id}: not a training family")
    parts = template_id.split(":")[1:]
    family, name = parts[0], parts[1]
    out: list[str] = []
    if family == "lookup" and name in LOOKUP:
        queries, attrs = LOOKUP[name]
        for query in queries:
            for attr in attrs:
                out.append(_extract(_filtered(query, _day(params)), [(attr, "str")]))
    elif family == "lookup" and name == "meal_people":
        for query in LOOKUP["restaurant"][0]:
            out.append(_people(_filtered(query, _day(params))))
            out.append(_extract(_filtered(query, _day(params)), [("people", "str")]))
    elif family == "lookup" and name == "trip_people":
        for query in (f"trip to {params['city']}", f"{params['city']} trip"):
            out.append(_people(_filtered(query, None)))
    elif family == "lookup" and name in ("order_number", "order_price"):
        attr, typ = ("order_id", "str") if name == "order_number" else ("amount", "float")
        for query in (params["product"], f"ordered {params['product']}"):
            out.append(_extract(_filtered(query, None), [(attr, typ)]))
    elif family == "temporal":
        before = "e.start < today()"
        queries = {"last_at": (params.get("restaurant", ""), f"ate at {params.get('restaurant', '')}"),
                   "last_heard": (f"{params.get('podcast', '')} podcast", f"listened to {params.get('podcast', '')}"),
                   "last_mailed": (f"mail to {params.get('person', '')}", f"mail I sent to {params.get('person', '')}"),
                   "last_coffee": (f"coffee with {params.get('person', '')}",
                                   f"met {params.get('person', '')} for coffee")}[name]
        for query in queries:
            out.append(f"MAX(l={_filtered(query, before)}, attr_name=\"start\")")
        if name == "last_mailed":  # a search for mail to someone finds their mail to me too
            for query in queries:
                sent = f"FILTER(l={_extract(_filtered(query, None), [('direction', 'str')])}, " \
                       f"filter=lambda e: e[\"direction\"] == \"sent\" and {before})"
                out.append(f"MAX(l={sent}, attr_name=\"start\")")
    elif family == "yesno":
        if name == "run":
            out += [_filtered(query, _day(params)) for query in ("running", "went for a run")]
        elif name == "eat_out":
            out += [_filtered(query, _day(params)) for query in LOOKUP["restaurant"][0]]
        elif name == "trip":
            city = params["city"]
            out += [_filtered(f"trip to {city}", None),
                    f"FILTER(l={_extract(_filtered('trip', None), [('city', 'str')])}, "
                    f"filter=lambda e: e[\"city\"] == {q(city)})"]
        elif name == "cuisine":
            c = params["cuisine"]
            out += [_filtered(f"{c} restaurant", _month(params)), _filtered(f"ate {c} food", _month(params)),
                    f"FILTER(l={_extract(_filtered('restaurant meal', _month(params)), [('cuisine', 'str')])}, "
                    f"filter=lambda e: e[\"cuisine\"] == {q(c)})"]
        elif name == "shop":
            year = f"year(e.start) == {int(params['year'])}"
            out += [_filtered(f"order from {params['shop']}", year), _filtered(f"{params['shop']} order", year)]
    elif family in ("first_after", "last_before"):
        city = params["city"]
        # the trip itself spans days; the mails and notes about it are moments before or during it
        trips = [f"FILTER(l=RETRIEVE(query={q(text)}), filter=lambda e: in_hours(duration(e)) > 24)"
                 for text in (f"trip to {city}", f"{city} trip")]
        trips += [f"RETRIEVE(query={q(f'trip to {city}')})"]
        if template_id.endswith("run:trip"):
            agg, cond = (("MAX", "i1.start < i2.start") if template_id == "extra:last_before:run:trip"
                         else ("MIN", "i1.start > i2.end"))
            for trip in trips:
                for query in ("running", "went for a run"):
                    out.append(f"{agg}(l=JOIN(l1=RETRIEVE(query={q(query)}), l2={trip}, "
                               f"condition=\"{cond}\"), attr_name=\"start\")")
        elif template_id.endswith("restaurant:trip"):
            for trip in trips:
                for query in LOOKUP["restaurant"][0]:
                    j = (f"JOIN(l1=RETRIEVE(query={q(query)}), l2={trip}, condition=\"i1.start > i2.end\")")
                    out.append(f"ARGMIN(l={_extract(j, [('restaurant', 'str')])}, arg_attr_name=\"restaurant\", "
                               "val_attr_name=\"start\")")
        elif template_id.endswith("amazon:trip"):
            for trip in trips:
                j = f"JOIN(l1=RETRIEVE(query=\"Amazon order\"), l2={trip}, condition=\"i1.start < i2.start\")"
                out.append(f"ARGMAX(l={_extract(j, [('product', 'str')])}, arg_attr_name=\"product\", "
                           "val_attr_name=\"start\")")
    elif family in ("first_of_day", "last_of_day"):
        fn = "ARGMIN" if family == "first_of_day" else "ARGMAX"
        for query in ("songs I listened to", "played a song"):
            out.append(f"{fn}(l={_extract(_filtered(query, _day(params)), [('track', 'str')])}, "
                       "arg_attr_name=\"track\", val_attr_name=\"start\")")
    elif family == "compare" and name != "run_km":
        if name == "runs":
            years = f"[{int(params['year'])}, {int(params['other_year'])}]"
            for query in ("running", "went for a run"):
                mapped = (f"MAP(l={_filtered(query, f'year(e.start) in {years}')}, fct=lambda e: year(e.start), "
                          "res_name=\"year\")")
                out.append(_more_often(mapped, "year", None))
        else:  # two people met at meals, two cuisines eaten: the one of the pair with more meals
            asked = params["person"] if name == "meal_people" else params["cuisine"]
            pair = f"[{q(asked)}, {q(params['other'])}]"
            for query in LOOKUP["restaurant"][0]:
                if name == "meal_people":
                    rows = (f"UNNEST(l={_extract(_filtered(query, None), [('people', 'str')])}, "
                            "nested_attr_name=\"people\", unnested_attr_name=\"person\")")
                    out.append(_more_often(rows, "person", pair))
                else:  # a store may write the cuisine in lower case: compare it so
                    out.append(_more_often(_extract(_filtered(query, None), [("cuisine", "str")]), "cuisine", pair))
                    low = f"[{q(asked.lower())}, {q(params['other'].lower())}]"
                    lowered = (f"MAP(l={_extract(_filtered(query, None), [('cuisine', 'str')])}, "
                               "fct=lambda e: lower(e[\"cuisine\"]), res_name=\"kind\")")
                    out.append(_more_often(lowered, "kind", low))
    elif family in ("compare", "difference") and name == "run_km":
        y1, y2 = int(params["year"]), int(params["other_year"])
        for query in ("running", "went for a run"):
            rows = _extract(_filtered(query, f"year(e.start) in [{y1}, {y2}]"), [("distance_km", "float")])
            signed = (f"MAP(l={rows}, fct=lambda e: e[\"distance_km\"] if year(e.start) == {y1} "
                      f"else -e[\"distance_km\"], res_name=\"difference\")")
            out.append(f"APPLY(l={signed}, fct=lambda l: sum(l[\"difference\"]) > 0)" if family == "compare"
                       else f"SUM(l={signed}, attr_name=\"difference\")")
    elif family == "difference" and name == "cuisines":
        c1, c2 = q(params["cuisine"].lower()), q(params["other"].lower())
        for query in LOOKUP["restaurant"][0]:
            rows = _extract(_filtered(query, None), [("cuisine", "str")])
            out.append(f"SUM(l=MAP(l={rows}, fct=lambda e: 1 if lower(e[\"cuisine\"]) == {c1} else -1 if "
                       f"lower(e[\"cuisine\"]) == {c2} else 0, res_name=\"difference\"), "
                       "attr_name=\"difference\")")
    elif family == "top_sum":
        query, attr = {"amazon_month": ("Amazon order", "amount"), "run_km_month": ("running", "distance_km")}[name]
        rows = _extract(_filtered(query, f"year(e.start) == {int(params['year'])}"), [(attr, "float")])
        months = f"MAP(l={rows}, fct=lambda e: month(e.start), res_name=\"month\")"
        totals = (f"MAP(l=GROUP_BY(l={months}, attr_names=[\"month\"]), fct=lambda e: sum(e.group[{q(attr)}]), "
                  "res_name=\"total\")")
        out.append(f"ARGMAX(l={totals}, arg_attr_name=\"month\", val_attr_name=\"total\")")
    return list(dict.fromkeys(out))
