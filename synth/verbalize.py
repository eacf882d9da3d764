"""Sentences that express canonical facts, PerQA-style: many phrasings per fact type
so a fact that lives only in a journal note, a mail or a calendar description reads
like a person wrote it.

Every template names the slots it fills, so the same rendering yields extraction
examples: (text, key, value) triples for training an extractor. This module only
renders text; it decides nothing about which facts get verbalized.
"""
from __future__ import annotations

import random
import string
from collections.abc import Iterable, Iterator
from typing import Any

from synth.simulate import Fact

# Journal sentences per fact type. {people} is a natural list ("Anna and Tom").
JOURNAL: dict[str, tuple[str, ...]] = {
    "meal_out": (
        "Had {meal} at {restaurant} with {people}. {cuisine}, as always.",
        "{people} and I went to {restaurant} for {meal} – {cuisine} food, really good.",
        "Went out for {cuisine} at {restaurant} with {people}.",
        "{Meal} at {restaurant} ({cuisine}) with {people}; we stayed way too long.",
        "Tried {restaurant} tonight with {people}. Solid {cuisine} place.",
        "Ended up at {restaurant} with {people} for {meal}, some {cuisine} place.",
        "{restaurant} for {meal}, {people} came along. The {cuisine} food was great.",
        "Met {people} at {restaurant}. We had {cuisine}.",
        "Quick {cuisine} {meal} at {restaurant} with {people}.",
        "Craving {cuisine}, so {people} and I went to {restaurant}.",
        "Ate {cuisine} at {restaurant} in {city} with {people}.",
        "We had {meal} at {restaurant} – {people} picked it, {cuisine}.",
    ),
    "social": (
        "Coffee with {people} at {place}.",
        "Met {people} for a coffee at {place}.",
        "{people} and I caught up over coffee at {place}.",
        "Spent the afternoon at {place} with {people}, just talking.",
        "Grabbed a coffee with {people} at {place}.",
        "Saw {people} today, we sat at {place} for ages.",
        "Long chat with {people} at {place}.",
        "Went to {place} with {people} for coffee and cake.",
    ),
    "workout:running": (
        "Ran {distance_km} km in {place} this morning.",
        "Went for a {distance_km} km run around {place}.",
        "Morning run, {distance_km} km, legs felt heavy.",
        "Did {distance_km} km in {place} with {people}.",
        "Running: {distance_km} km, {duration_min} minutes.",
        "Got my run in – {distance_km} km.",
    ),
    "workout:cycling": (
        "Rode {distance_km} km on the bike today.",
        "Bike ride through {place}, about {distance_km} km.",
        "Cycled {distance_km} km, windy but fun.",
        "{distance_km} km on the bike with {people}.",
    ),
    "workout:football": (
        "Football with {people} tonight.",
        "Played football at {place} – {people} were there.",
        "Five-a-side with {people}, we won for once.",
        "Football this evening with {people}. Sore knees.",
        "Kicked a ball around at {place} with {people}.",
        "Thursday football: {people}.",
    ),
    "workout:swimming": ("Swam {distance_km} km at the {place}.", "Pool session, {distance_km} km."),
    "workout:yoga": ("Yoga class at the {place}.", "{duration_min} minutes of yoga, much needed."),
    "workout:strength": ("Gym session, {duration_min} minutes.", "Lifted at the {place} after work."),
}

FILLER: tuple[str, ...] = (
    "Feeling {mood} today.", "Mood: {mood}.", "Weather was grey all day.", "Slept badly.",
    "Work was busy, lots of meetings.", "Read a few chapters before bed.", "Quiet day overall.",
    "Need to call mum this week.", "Finally cleaned the flat.", "Long day, {mood} though.",
    "Spent the evening on the sofa.", "Sun came out in the afternoon, nice walk.",
)

# Calendar: (summary, description) per fact type.
CALENDAR_MEAL: tuple[tuple[str, str], ...] = (
    ("Dinner with {people}", "{restaurant} ({cuisine}), table for {n}."),
    ("{Meal} @ {restaurant}", "With {people}. {cuisine}."),
    ("{restaurant}", "{cuisine} {meal} with {people}"),
    ("{Meal}: {restaurant}", "Booked via phone, {cuisine}. {people} joining."),
    ("{cuisine} {meal} with {people}", "At {restaurant}."),
)
CALENDAR_FOOTBALL: tuple[str, ...] = (
    "Five-a-side at {place}. Bring both shirts.",
    "Football – usual pitch at {place}.",
    "Weekly football. Pitch 3, {place}. Bibs: whoever lost last week.",
)

MAIL: dict[str, tuple[tuple[str, str], ...]] = {
    "reservation": (
        ("Your reservation at {restaurant} is confirmed",
         "Hi {me},\n\nyour table for {n} at {restaurant} ({address}, {city}) is confirmed for {when}.\n\n"
         "Enjoy your {meal}!\nTableNow"),
        ("Reservation confirmed: {restaurant}, {when}",
         "Hello {me},\n\nthanks for booking with TableNow. {restaurant} expects you on {when}, party of {n}.\n"
         "Cuisine: {cuisine}.\n\nSee you soon,\nTableNow"),
        ("See you on {when} at {restaurant}",
         "Dear {me},\n\nwe look forward to welcoming you and your guests ({n} people) for {meal}.\n"
         "Address: {address}, {city}\n\n{restaurant}"),
    ),
    "restaurant": (
        ("Thanks for yesterday!", "Hey {first},\n\nthanks for coming to {restaurant} yesterday, that {cuisine} food "
                                 "was great. We should go back soon.\n\n{me}"),
        ("{restaurant}", "Hi {first},\n\nstill thinking about the {cuisine} {meal} at {restaurant}. Next time I'm paying!\n\n{me}"),
        ("last night", "{first} –\n\nwhat a nice evening at {restaurant}, best {cuisine} in ages. Send me the photos?\n\nCheers,\n{me}"),
        ("Re: {meal} plans", "Hi {first},\n\nglad we ended up at {restaurant} in the end. Best {cuisine} in {city}?\n\n{me}"),
        ("that place", "{first}, what was the name of the dessert at {restaurant}? Never had {cuisine} that good.\n\n{me}"),
    ),
    "order": (
        ("Your {shop} order {order_id}", "Hello {me},\n\nthank you for your order.\n\n{items}\n\nOrder total: {total} {currency}\n\n{shop}"),
        ("Order confirmation – {shop}", "Hi {me},\n\nwe received your order {order_id}:\n{items}\nTotal charged: {currency} {total}\n\nThanks for shopping with {shop}."),
        ("We've got your order!", "Hi {me}, your {shop} order {order_id} is being prepared.\n\nItems:\n{items}\n\nTotal: {total} {currency}"),
        ("{shop}: order {order_id} confirmed", "Dear {me},\n\nyour purchase is confirmed.\n{items}\nGrand total: {total} {currency}\n"),
    ),
    "booking": (
        ("Your trip to {city} is booked", "Hello {me},\n\nyour flights to {city} are confirmed: out on {out}, back on {back}.\n"
                                          "Travellers: {people}.\n\nSkyHop Travel"),
        ("Booking confirmation: {city}", "Dear {me},\n\nbooking confirmed for {city}, {country}.\nDeparture {out}, return {back}.\n\nSkyHop"),
        ("E-ticket – {city}", "Hi {me},\n\nattached is your e-ticket. Outbound {out}, inbound {back}. Have a great trip!\n\nSkyHop Travel"),
    ),
}
PLAIN_MAIL: dict[str, tuple[tuple[str, str], ...]] = {
    "work": (("Quarterly numbers", "Hi {first},\n\ncan you check the figures before Friday?\n\n{sender}"),
             ("Re: sprint review", "Thanks {first}, looks good to me.\n\n{sender}"),
             ("Meeting notes", "Hi all,\n\nnotes from today are in the shared folder.\n\n{sender}"),
             ("Question about the report", "Hi {first}, quick question about section 3 – got a minute?\n\n{sender}"),
             ("Re: deployment", "Done, it's live.\n\n{sender}")),
    "friend": (("this weekend?", "Hey {first}! Are you around this weekend?\n\n{sender}"),
               ("photos", "Here are the photos from last time :)\n\n{sender}"),
               ("Re: book", "Finished it, you were right, great ending.\n\n{sender}"),
               ("quick one", "Can I borrow your drill next week?\n\n{sender}")),
    "family": (("Sunday lunch", "Coming on Sunday? Bring dessert.\n\n{sender}"),
               ("Re: holidays", "We booked the cottage again for summer.\n\n{sender}"),
               ("Grandma's birthday", "Don't forget to call grandma!\n\n{sender}")),
    "newsletter": (("This week's picks", "New arrivals and this week's picks, just for you."),
                   ("Don't miss out", "Our spring sale ends on Sunday."),
                   ("Your monthly update", "Here is what happened this month.")),
}


def natural_list(names: Iterable[str]) -> str:
    names = list(names)
    if not names:
        return ""
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


def _first_names(people: list[str]) -> str:
    return natural_list(p.split(" ")[0] for p in people)


def slots_for(fact: Fact) -> dict[str, Any]:
    """The values a sentence about ``fact`` may mention."""
    a = fact.attrs
    s: dict[str, Any] = {k: v for k, v in a.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
    if "people" in a:
        s["people"] = _first_names(a["people"]) if a["people"] else "the others"
        s["n"] = len(a["people"]) + 1
    if "meal" in a:
        s["Meal"] = a["meal"].capitalize()
    if "distance_km" in a:
        s["distance_km"] = f"{a['distance_km']:.1f}"
    if "duration_min" in a:
        s["duration_min"] = f"{a['duration_min']:.0f}"
    return s


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def render(template: str, slots: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """Fill ``template``; returns the text and the slots it actually used."""
    used = {f: str(slots[f]) for f in _fields(template)}
    return template.format(**used), used


def journal_sentence(fact: Fact, rng: random.Random) -> tuple[str, dict[str, str]]:
    key = fact.kind if fact.kind != "workout" else f"workout:{fact.attrs['sport']}"
    options = JOURNAL[key]
    slots = slots_for(fact)
    if not fact.attrs.get("people"):
        # "with the others" reads wrong when nobody came along
        options = tuple(o for o in options if "{people}" not in o) or options
    return render(rng.choice(options), slots)


def filler_sentence(rng: random.Random, mood: str) -> str:
    return rng.choice(FILLER).format(mood=mood)


# Which slot names count as extractable keys, and the key a model should emit.
_KEYS = {"restaurant": "restaurant", "cuisine": "cuisine", "people": "people", "place": "place",
         "distance_km": "distance_km", "duration_min": "duration_min", "meal": "meal", "Meal": "meal",
         "city": "city", "shop": "shop", "total": "amount", "order_id": "order_id", "product": "product"}


def extraction_examples(facts: Iterable[Fact], seed: int = 0) -> Iterator[tuple[str, str, str]]:
    """(text, key, value) triples: a sentence verbalizing a fact, a key a question may
    ask about, and the value the sentence states for it. Use for EXTRACT training."""
    rng = random.Random(seed)
    for fact in facts:
        if fact.kind not in ("meal_out", "social", "workout"):
            continue
        text, used = journal_sentence(fact, rng)
        seen = set()
        for slot, value in used.items():
            key = _KEYS.get(slot)
            if key and key not in seen:
                seen.add(key)
                yield text, key, value.lower() if slot == "Meal" else value
        if fact.kind == "workout":
            yield text, "sport", fact.attrs["sport"]
