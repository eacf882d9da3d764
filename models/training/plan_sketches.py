"""Candidate plans attached to the question templates, for training data only.

For each template family (counting, sums, extremes, groups, first/last times, ...)
a few plans that could answer its questions, written in the plan language with the
instance's parameters filled in: several search phrasings and attribute choices,
because which of them the product answers right is for execution to decide
(``app.bench.plan_verify``), not for this module. A candidate that does not give the gold
answer is dropped; nothing here reads the gold answer or the gold SQL.

Only train templates are sketched: ``sketches`` refuses the others.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

# What a person does, as searches over their events (several: execution picks).
QUERIES: dict[str, tuple[str, ...]] = {
    "run": ("running", "went for a run"), "ride": ("cycling", "bike ride"), "swim": ("swimming",),
    "yoga": ("yoga",), "gym": ("strength training", "gym workout"), "football": ("football", "played football"),
    "workout": ("workout",), "eat_out": ("restaurant meal", "ate out at a restaurant"),
    "dinner_out": ("dinner at a restaurant",), "cuisine": ("{cuisine} restaurant", "ate {cuisine} food"),
    "restaurant": ("{restaurant}", "ate at {restaurant}"), "meal_with": ("ate out with {person}",),
    "coffee": ("coffee with a friend", "met for coffee"), "netflix": ("watched Netflix", "watched an episode"),
    "show": ("watched {show}",), "music": ("songs I listened to",), "artist": ("songs by {artist}",),
    "podcast": ("podcast episode",), "amazon_order": ("Amazon order",), "mail_sent": ("mail I sent",),
    "mail_from": ("mail from {person}",), "chat": ("ChatGPT conversation",), "trip": ("trip", "travel"),
    "meeting": ("team weekly meeting",), "dentist": ("dentist appointment",), "haircut": ("haircut",),
}
# An attribute condition that narrows a search to exactly what is asked, where the
# sources carry it (name, type, the value's parameter).
NARROW: dict[str, tuple[str, str, str]] = {
    "cuisine": ("cuisine", "str", "cuisine"), "artist": ("artist", "str", "artist"),
    "show": ("show", "str", "show"), "mail_sent": ("direction", "str", "=sent"),
    "restaurant": ("restaurant", "str", "restaurant"), "mail_received": ("direction", "str", "=received"),
}


def q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def period_filter(period: str, params: dict) -> str | None:
    """The lambda body keeping a period's events, or None for no filter."""
    if period == "year":
        return f"year(e.start) == {int(params['year'])}"
    if period == "month":
        y, m = str(params["month"]).split("-")
        return f"year(e.start) == {int(y)} and month(e.start) == {int(m)}"
    if period == "last_year":
        return "year(e.start) == year(today()) - 1"
    if period == "this_year":
        return "year(e.start) == year(today())"
    if period == "last_month":
        return "year(e.start) == year(today() - days(30)) and month(e.start) == month(today() - days(30))"
    if period == "last_90":
        return "e.start >= today() - days(90) and e.start < today()"
    if period == "weekends_year":
        return f"year(e.start) == {int(params['year'])} and weekday(e.start) >= 5"
    return None


def _and(*conds: str | None) -> str | None:
    parts = [c for c in conds if c]
    return " and ".join(parts) if parts else None


def searches(domain: str, params: dict, cond: str | None = None) -> list[str]:
    """Plans listing the domain's events (optionally under a condition): each search
    phrasing, plain and narrowed by an extracted attribute where one fits."""
    out = []
    for phrase in QUERIES.get(domain, (domain,)):
        try:
            text = phrase.format(**params)
        except KeyError:
            continue
        base = f"RETRIEVE(query={q(text)})"
        out.append(f"FILTER(l={base}, filter=lambda e: {cond})" if cond else base)
        if domain in NARROW:
            attr, typ, value = NARROW[domain]
            val = value[1:] if value.startswith("=") else str(params.get(value, ""))
            if val:
                ext = f"EXTRACT(l={base}, attr_names=[{q(attr)}], attr_types=[{typ}])"
                out.append(f"FILTER(l={ext}, filter=lambda e: {_and(f'e[{q(attr)}] == {q(val)}', cond)})")
    return out


def _extracted(plan: str, attrs: Sequence[tuple[str, str]]) -> str:
    names = ", ".join(q(a) for a, _ in attrs)
    types = ", ".join(t for _, t in attrs)
    return f"EXTRACT(l={plan}, attr_names=[{names}], attr_types=[{types}])"


# --------------------------------------------------------------------------- families
SUMS: dict[str, tuple[str, tuple[tuple[str, str | None], ...]]] = {
    # name -> (domain, (attribute, MAP expression over the row or None), ...)
    "run_km": ("run", (("distance_km", None),)),
    "ride_km": ("ride", (("distance_km", None),)),
    "swim_km": ("swim", (("distance_km", None),)),
    "run_minutes": ("run", (("duration_min", None), ("minutes", "in_minutes(duration(e))"))),
    "music_minutes": ("music", (("minutes_played", None), ("minutes", "in_minutes(duration(e))"))),
    "netflix_hours": ("netflix", (("hours", "in_hours(duration(e))"), ("hours", 'e["duration_min"] / 60'))),
    "amazon_spend": ("amazon_order", (("amount", None), ("total", None))),
    "steps": ("steps", (("steps", None),)),
    "health_calories": ("workout", (("calories", None),)),
    "podcast_minutes": ("podcast", (("minutes_played", None), ("minutes", "in_minutes(duration(e))"))),
}
QUERIES.setdefault("steps", ("daily step count",))

AVGS: dict[str, tuple[str, str, tuple[tuple[str, str | None], ...]]] = {
    "run_km": ("AVG", "run", (("distance_km", None),)),
    "steps": ("AVG", "steps", (("steps", None),)),
    "episode_minutes": ("AVG", "netflix", (("duration_min", None), ("minutes", "in_minutes(duration(e))"))),
}

DISTINCTS: dict[str, tuple[str, str, bool]] = {
    # name -> (domain, attribute, a list attribute to unnest)
    "restaurants": ("eat_out", "restaurant", False), "artists": ("music", "artist", False),
    "shows": ("netflix", "show", False), "cities": ("trip", "city", False), "meal_people": ("eat_out", "people", True),
}

GROUPS: dict[str, tuple[str, str, str]] = {
    # name -> (domain, attribute or "map:<expr>", how: extract | unnest | map)
    "artist": ("music", "artist", "extract"), "track": ("music", "track", "extract"),
    "genre": ("music", "genre", "extract"), "show": ("netflix", "show", "extract"),
    "cuisine": ("eat_out", "cuisine", "extract"), "restaurant": ("eat_out", "restaurant", "extract"),
    "meal_person": ("eat_out", "people", "unnest"), "run_partner": ("run", "people", "unnest"),
    "mail_to": ("mail_sent", "to", "extract"), "mail_from": ("mail_received", "from_name", "extract"),
    "run_weekday": ("run", "weekday_name(e.start)", "map"), "music_hour": ("music", "hour(e.start)", "map"),
    "podcast": ("podcast", "show", "extract"), "chat_topic": ("chat", "topic", "extract"),
    "trip_city": ("eat_out", "city", "extract"), "sport": ("workout", "sport", "extract"),
    "run_month": ("run", "month(e.start)", "map"), "netflix_device": ("netflix", "device", "extract"),
    "amazon_category": ("amazon_order", "category", "extract"),
}
QUERIES.setdefault("mail_received", ("mail I received", "mail from"))

EXTREMES: dict[str, tuple[str, str, str, str]] = {
    # name -> (domain, value attribute, MAX|MIN, the thing asked for: "" = the value, else an attribute)
    "longest_run": ("run", "distance_km", "MAX", ""), "shortest_run": ("run", "distance_km", "MIN", ""),
    "longest_ride": ("ride", "distance_km", "MAX", ""), "longest_swim": ("swim", "distance_km", "MAX", ""),
    "priciest_amazon": ("amazon_order", "amount", "MAX", "product"),
    "cheapest_amazon": ("amazon_order", "amount", "MIN", "product"),
    "most_steps_day": ("steps", "steps", "MAX", ""), "fewest_steps_day": ("steps", "steps", "MIN", ""),
    "longest_trip": ("trip", "nights", "MAX", "city"), "longest_workout": ("workout", "duration_min", "MAX", ""),
}

TOP3: dict[str, tuple[str, str]] = {
    "artists": ("music", "artist"), "tracks": ("music", "track"), "restaurants": ("eat_out", "restaurant"),
    "shows": ("netflix", "show"), "cuisines": ("eat_out", "cuisine"),
}

TIMEOFDAY: dict[str, tuple[str, str]] = {
    "run_before_8": ("run", "hour(e.start) < 8"), "music_late": ("music", "hour(e.start) >= 22"),
    "netflix_late": ("netflix", "hour(e.start) >= 22"), "mail_evening": ("mail_sent", "hour(e.start) >= 19"),
    "weekend_rides": ("ride", "weekday(e.start) >= 5"), "amazon_night": ("amazon_order", "hour(e.start) >= 22"),
    "lunch_out_weekday": ("eat_out", "weekday(e.start) < 5 and hour(e.start) >= 11 and hour(e.start) < 15"),
}


# Joins by time: (the asked-for side's domain, the other side's domain, how they meet).
# The asked-for side is l1: a joined row keeps l1's attributes and start.
MEET: dict[str, tuple[str, ...]] = {
    "during": ("overlaps(i1, i2)",),
    "after_same_day": ("i1.start > i2.end and same_day(i1.start, i2.start)",
                       "i1.start > i2.end and i1.start - i2.end < hours(8)"),
    "same_day": ("same_day(i1.start, i2.start)",),
    "on_trip": ("i1.start >= i2.start and i1.start <= i2.end", "overlaps(i1, i2)"),
}
ACTIVITY_OF = {"cycling": "ride", "running": "run", "football": "football"}
QUERIES.setdefault("trip_to", ("trip to {city}", "{city} trip"))
QUERIES.setdefault("steps_day", ("daily step count",))


def joined(asked: str, other: str, meet: str, params: dict, asked_cond: str | None = None) -> list[str]:
    """JOIN plans pairing the asked-for domain's events (l1, optionally filtered) with
    the other domain's, for each search phrasing and each way of saying how they meet."""
    out = []
    for a in searches(asked, params, asked_cond)[:2]:
        if a.startswith("FILTER(l=EXTRACT"):
            continue  # narrowed by an extracted attribute: the join's own EXTRACT reads it
        for b in searches(other, params):
            if b.startswith("FILTER(l=EXTRACT"):
                continue
            for cond in MEET[meet]:
                out.append(f"JOIN(l1={a}, l2={b}, condition={q(cond)})")
    return out


def _join(name: str, params: dict, period: str) -> list[str]:
    """Candidates for the train templates' joins ("which artist while running", "how
    often {cuisine} after football", "km run while in {city}", ...)."""
    pf = period_filter(period, params)
    out: list[str] = []
    for what in ("artist", "genre", "track"):
        for act in ("cycling", "running"):
            if name == f"{what}_while_{act}":
                for j in joined("music", ACTIVITY_OF[act], "during", params, pf):
                    grouped, g = _group_by(j, what, "extract")
                    out.append(f"ARGMAX(l={grouped}, arg_attr_name={q(g)}, val_attr_name=\"count\")")
    if name == "cuisine_after_football":
        for j in joined("eat_out", "football", "after_same_day", params):
            grouped, g = _group_by(j, "cuisine", "extract")
            out.append(f"ARGMAX(l={grouped}, arg_attr_name={q(g)}, val_attr_name=\"count\")")
    elif name == "cuisine_after_football_count":
        cuisine = params.get("cuisine", "")
        for j in joined("eat_out", "football", "after_same_day", params):
            ext = _extracted(j, [("cuisine", "str")])
            out.append(f"APPLY(l=FILTER(l={ext}, filter=lambda e: e[\"cuisine\"] == {q(cuisine)}), fct=len)")
        for j in joined("cuisine", "football", "after_same_day", params):
            out.append(f"APPLY(l={j}, fct=len)")
    elif name == "meals_on_football_days":
        out += _count(joined("eat_out", "football", "same_day", params))
    elif name == "netflix_on_run_days":
        out += _count(joined("netflix", "run", "same_day", params, pf))
    elif name == "steps_on_run_days":
        for j in joined("steps_day", "run", "same_day", params):
            out.append(f"AVG(l={_extracted(j, [('steps', 'int')])}, attr_name=\"steps\")")
    elif name == "km_on_trip":
        for j in joined("run", "trip_to", "on_trip", params):
            out.append(f"SUM(l={_extracted(j, [('distance_km', 'float')])}, attr_name=\"distance_km\")")
    elif name == "restaurants_on_trip":
        for j in joined("eat_out", "trip_to", "on_trip", params):
            out.append(_group_by(j, "restaurant", "extract")[0])
    return out


def _count(plans: list[str]) -> list[str]:
    return [f"APPLY(l={p}, fct=len)" for p in plans]


def _group_by(plan: str, attr: str, how: str) -> tuple[str, str]:
    """(plan grouped by the attribute, the group attribute's name)."""
    if how == "map":
        name = {"weekday_name(e.start)": "weekday", "hour(e.start)": "hour", "month(e.start)": "month"}[attr]
        return f"GROUP_BY(l=MAP(l={plan}, fct=lambda e: {attr}, res_name={q(name)}), attr_names=[{q(name)}])", name
    if how == "unnest":
        return (f"GROUP_BY(l=UNNEST(l={_extracted(plan, [(attr, 'str')])}, nested_attr_name={q(attr)}, "
                f"unnested_attr_name=\"person\"), attr_names=[\"person\"])", "person")
    return f"GROUP_BY(l={_extracted(plan, [(attr, 'str')])}, attr_names=[{q(attr)}])", attr


def sketches(template_id: str, params: dict) -> list[str]:
    """Candidate plans for an instance of the train template ``template_id``."""
    from synth.questions import templates

    split = {t.id: t.split for t in templates()}.get(template_id)
    if split != "train":
        raise ValueError(f"{template_id}: only train templates are sketched (this one is {split})")
    parts = template_id.split(":")
    family, name = parts[0], parts[1] if len(parts) > 1 else ""
    period = parts[2] if len(parts) > 2 else "all"
    pf = period_filter(period, params)
    out: list[str] = []
    if family == "count":
        if name == "amazon_order":
            for p in searches(name, params, pf):
                out.append(f"APPLY(l=GROUP_BY(l={_extracted(p, [('order_id', 'str')])}, attr_names=[\"order_id\"]), "
                           "fct=len)")
        out += _count(searches(name, params, pf))
    elif family == "timeofday":
        domain, cond = TIMEOFDAY[name]
        out += _count(searches(domain, params, _and(cond, pf)))
    elif family == "sum":
        domain, attrs = SUMS[name]
        for p in searches(domain, params, pf):
            for attr, expr in attrs:
                inner = (f"MAP(l={p}, fct=lambda e: {expr}, res_name={q(attr)})" if expr and "e[" not in expr else
                         f"MAP(l={_extracted(p, [('duration_min', 'float')])}, fct=lambda e: {expr}, res_name={q(attr)})"
                         if expr else _extracted(p, [(attr, "float")]))
                out.append(f"SUM(l={inner}, attr_name={q(attr)})")
    elif family == "avg":
        if name in AVGS:
            fn, domain, attrs = AVGS[name]
            for p in searches(domain, params, pf):
                for attr, expr in attrs:
                    inner = (f"MAP(l={p}, fct=lambda e: {expr}, res_name={q(attr)})" if expr
                             else _extracted(p, [(attr, "float")]))
                    out.append(f"{fn}(l={inner}, attr_name={q(attr)})")
        elif name == "amazon_order":
            pass  # a ratio of two aggregates: no single-plan form in the language
        elif name == "run_pace":
            pass
    elif family == "distinct":
        domain, attr, nested = DISTINCTS[name]
        for p in searches(domain, params, pf):
            grouped, _ = _group_by(p, attr, "unnest" if nested else "extract")
            out.append(f"APPLY(l={grouped}, fct=len)")
    elif family == "argmax":
        domain, attr, how = GROUPS[name]
        for p in searches(domain, params, pf):
            grouped, g = _group_by(p, attr, how)
            out.append(f"ARGMAX(l={grouped}, arg_attr_name={q(g)}, val_attr_name=\"count\")")
        if name == "amazon_category":
            for p in searches(domain, params, pf):
                out.append(f"ARGMAX(l={_extracted(p, [('category', 'str'), ('amount', 'float')])}, "
                           "arg_attr_name=\"category\", val_attr_name=\"amount\")")
    elif family == "top3":
        domain, attr = TOP3[name]
        for p in searches(domain, params, pf):
            out.append(_group_by(p, attr, "extract")[0])
    elif family == "order":
        domain, attr, fn, asked = EXTREMES[name]
        for p in searches(domain, params, pf):
            if asked:
                out.append(f"ARG{fn}(l={_extracted(p, [(asked, 'str'), (attr, 'float')])}, "
                           f"arg_attr_name={q(asked)}, val_attr_name={q(attr)})")
            out.append(f"{fn}(l={_extracted(p, [(attr, 'float')])}, attr_name={q(attr)})")
    elif family == "temporal":
        kind = name
        dom = parts[2] if len(parts) > 2 else ""
        if kind in ("last", "first", "days_since"):
            fn = "MIN" if kind == "first" else "MAX"
            before = "e.start < today()" if kind != "first" else None
            for p in searches(dom, params, before):
                out.append(f"{fn}(l={p}, attr_name=\"start\")")
    elif family == "multi":
        if name == "see_person":
            cond = pf
            for text in (f"met {params.get('person', '')}", f"with {params.get('person', '')}"):
                base = f"RETRIEVE(query={q(text)})"
                out.append(f"APPLY(l={f'FILTER(l={base}, filter=lambda e: {cond})' if cond else base}, fct=len)")
        elif name == "most_seen":
            for phrase in ("met a friend", "restaurant meal with friends"):
                base = f"RETRIEVE(query={q(phrase)})"
                p = f"FILTER(l={base}, filter=lambda e: {pf})" if pf else base
                grouped, g = _group_by(p, "people", "unnest")
                out.append(f"ARGMAX(l={grouped}, arg_attr_name={q(g)}, val_attr_name=\"count\")")
        elif name == "non_amazon_shops":
            for phrase in ("online order", "online purchase"):
                base = f"RETRIEVE(query={q(phrase)})"
                p = f"FILTER(l={base}, filter=lambda e: {pf})" if pf else base
                ext = _extracted(p, [("shop", "str")])
                out.append(f"GROUP_BY(l=FILTER(l={ext}, filter=lambda e: e[\"shop\"] != \"Amazon\"), "
                           "attr_names=[\"shop\"])")
        elif name == "online_spend":
            for phrase in ("online purchase", "online order"):
                base = f"RETRIEVE(query={q(phrase)})"
                p = f"FILTER(l={base}, filter=lambda e: {pf})" if pf else base
                for attr in ("amount", "total"):
                    out.append(f"SUM(l={_extracted(p, [(attr, 'float')])}, attr_name={q(attr)})")
    elif family == "join":
        out += _join(name, params, period)
    elif family == "recent" and name == "trips":
        out.append('GROUP_BY(l=EXTRACT(l=RETRIEVE(query="trip"), attr_names=["city"], attr_types=[str]), '
                   'attr_names=["city"])')
    return list(dict.fromkeys(out))
