"""Training and dev examples for the extractor (EXTRACT's seq2seq model).

``examples(seed, split)`` yields :class:`Example` s: an event text shaped like the
ones our importers and the synthetic persona generator write (Spotify, Netflix,
workouts, purchases, mails, notes, calendar entries), a key phrased one of many
ways, and the gold value: a span copied from the text (names, titles, amounts as
written), a normalised category (cuisine, activity, weekday, currency) or nothing.

Splits are by entity (``entities.split_of``) and by template: dev texts only use
dev entities, and some templates only appear in dev (flagged ``unseen_template``).
Bump ``GENERATOR_VERSION`` whenever the output changes: the build cache keys on it.

This module must not import torch or any model library.
"""
from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from models.training.entities import EntitySource, Split

GENERATOR_VERSION = "extract-6"

# Buckets the dev figures are reported by.
BUCKET = {
    "person": "name", "artist": "name", "attendee": "name", "sender": "name",
    "city": "place", "country": "place", "restaurant": "place", "street": "place",
    "product": "product", "store": "product", "company": "product",
    "cuisine": "categorical", "activity": "categorical", "weekday": "categorical",
    "currency": "categorical", "amount": "quantity",
    "track": "title", "album": "title", "show": "title", "episode": "title",
    "duration": "quantity", "distance": "quantity", "platform": "other", "device": "other",
}

KEY_PHRASES = {
    "artist": ["artist", "singer", "band", "performer", "musician", "who performed", "artist name"],
    "track": ["track", "song", "song title", "track name", "title of the song"],
    "album": ["album", "record", "album name", "album title"],
    "duration": ["duration", "how long", "time spent", "length", "for how long"],
    "platform": ["platform", "played on", "app platform"],
    "device": ["device", "watched on", "screen"],
    "show": ["show", "series", "tv show", "programme", "title"],
    "episode": ["episode", "episode title", "episode name"],
    "activity": ["activity", "sport", "workout type", "exercise", "kind of workout", "activity type"],
    "distance": ["distance", "how far", "distance covered"],
    "city": ["city", "location", "town", "where", "place"],
    "country": ["country", "nation", "destination country"],
    "person": ["person", "who", "companion", "with whom", "friend", "contact"],
    "attendee": ["attendee", "participant", "who", "meeting with", "person"],
    "sender": ["sender", "from", "who wrote", "author"],
    "product": ["product", "item", "what was bought", "article", "purchase", "product name"],
    "store": ["store", "shop", "seller", "merchant", "retailer", "vendor"],
    "amount": ["amount", "price", "cost", "total", "how much", "money spent"],
    "currency": ["currency", "currency code", "paid in"],
    "restaurant": ["restaurant", "venue", "eatery", "restaurant name", "where did we eat"],
    "cuisine": ["cuisine", "type of food", "food style", "kind of food", "cuisine type"],
    "weekday": ["weekday", "day of week", "day of the week", "which day"],
    "company": ["company", "organisation", "organization", "employer", "firm"],
    "street": ["address", "street", "street address"],
}

CUISINES = {
    "japanese": ["sushi", "ramen", "tempura", "udon", "sashimi", "gyoza"],
    "italian": ["pizza", "pasta", "risotto", "lasagna", "tiramisu", "gnocchi"],
    "mexican": ["tacos", "burritos", "enchiladas", "quesadillas", "nachos"],
    "indian": ["curry", "biryani", "tandoori chicken", "naan", "dal", "samosas"],
    "chinese": ["dim sum", "dumplings", "peking duck", "chow mein", "kung pao chicken"],
    "thai": ["pad thai", "green curry", "tom yum", "som tam"],
    "french": ["croissants", "coq au vin", "ratatouille", "crêpes", "bouillabaisse"],
    "greek": ["gyros", "souvlaki", "moussaka", "tzatziki"],
    "american": ["burgers", "hot dogs", "barbecue ribs", "mac and cheese"],
    "korean": ["bibimbap", "kimchi stew", "bulgogi", "korean fried chicken"],
    "vietnamese": ["pho", "banh mi", "spring rolls", "bun cha"],
    "spanish": ["paella", "tapas", "churros", "patatas bravas"],
}

ACTIVITIES = {
    "running": ["Ran", "Went for a run of", "Morning run:", "Jogged", "Run:", "Easy run of"],
    "cycling": ["Cycled", "Bike ride of", "Rode", "Cycling:", "Commute by bike,"],
    "swimming": ["Swam", "Swim session:", "Pool swim of", "Open water swim,"],
    "hiking": ["Hiked", "Hike of", "Mountain hike:", "Trail hike,"],
    "walking": ["Walked", "Walk of", "Evening walk:", "Long walk,"],
    "rowing": ["Rowed", "Rowing session:", "Erg row of"],
}

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
# symbol written before or after the number, ISO code
CURRENCIES = [("€", "EUR"), ("$", "USD"), ("£", "GBP"), ("kr", "SEK"), ("CHF", "CHF"),
              ("¥", "JPY"), ("zł", "PLN")]
PLATFORMS = ["android", "ios", "windows", "macos", "web player", "linux", "cast to device"]
DEVICES = ["TV", "iPhone", "iPad", "laptop", "Chromecast", "PlayStation", "Android phone", "Fire TV"]

# Templates: {slot} names an attribute; {slot_text} forms are rendered by the
# slot's renderer. Each template lists the attributes it states.
TEMPLATES: dict[str, list[str]] = {
    "music": [
        "Listened to {track} by {artist} from the album {album} for {duration} on {platform}.",
        "Played {track} by {artist} ({album}) for {duration}.",
        "{artist} – {track}. Streamed for {duration} on {platform}.",
        "Spotify: {track} — {artist}, album {album}, played {duration}.",
        "Listened to {track} by {artist} for {duration}.",
        "On {weekday_text} I had {track} by {artist} on repeat.",
    ],
    "podcast": [
        "Listened to the podcast episode {episode} of {show} for {duration}.",
        "Podcast: {show} – {episode} ({duration}) on {platform}.",
        "Caught up on {show}: {episode}, {duration}.",
    ],
    "netflix": [
        "Watched {show}: Season {season}: {episode} on {device}.",
        "Netflix – {show} ({episode}), {duration} on {device}.",
        "Watched {episode} of {show} on {weekday_text}.",
        "Streamed {show} on the {device} for {duration}.",
    ],
    "workout": [
        "{activity_text} {distance} in {duration} in {city} on {weekday_text}.",
        "{activity_text} {distance} around {city}, took {duration}.",
        "Workout on {weekday_text}: {activity_text} {distance} ({duration}).",
        "{activity_text} {distance} with {person} near {city}.",
    ],
    "purchase": [
        "Bought {product} from {store} for {price}.",
        "Order confirmation: {product} — total {price}. Sold by {store}.",
        "Receipt from {store}: 1 × {product}, {price}.",
        "Your order of {product} has shipped. Seller: {store}. Amount charged: {price}.",
        "Paid {price} at {store} in {city} for {product}.",
    ],
    "restaurant": [
        "Dinner at {restaurant} in {city} with {person} on {weekday_text}. The {dish} was great.",
        "Note: {weekday_text} lunch with {person} at {restaurant}, {city} — we had {dish}.",
        "Reservation confirmed: {restaurant}, {city}. Table for 2 on {weekday_text}. Guest: {person}.",
        "From: {sender} <{email}>\nSubject: Dinner {weekday_text}?\n\nHey, shall we try {restaurant} in {city}? "
        "I heard their {dish} is amazing.",
        "Had {dish} at {restaurant} with {person}. Paid {price}.",
    ],
    "calendar": [
        "Meeting with {attendee} at {company}, {street}, {city} on {weekday_text}.",
        "Calendar: Project sync — {weekday_text} — location {city}. Attendee: {attendee}.",
        "Call with {attendee} ({company}) on {weekday_text}.",
        "Appointment on {weekday_text} at {street}, {city}.",
    ],
    "travel": [
        "Flight to {city}, {country} on {weekday_text}.",
        "Booked a hotel in {city} ({country}) for {price}.",
        "Trip to {city} with {person}, {country}.",
        "Train ticket to {city} on {weekday_text}, {price}.",
    ],
}

# Share of training texts whose first question is about a normalised category
# (GPU sweep at 1,000 steps: categorical exact 54% at 0, 88% at 0.5, 92% at 1).
CATEGORY_FIRST = 1.0

# EXTRACT sends the extractor an event as ``engine.retrieval.verbalise`` writes it
# ("source: journal | kind: note | title: ... | text: ..."): about half the texts are
# wrapped that way, with the (source, kind) pairs our importers write for each kind.
WRAP_SHARE = 0.5
WRAPPERS = {
    "music": [("spotify", "music_stream", "text"), ("journal", "note", "text")],
    "podcast": [("spotify", "podcast_stream", "text"), ("journal", "note", "text")],
    "netflix": [("netflix", "episode_stream", "text"), ("journal", "note", "text")],
    "workout": [("strava", "workout", "description"), ("health", "workout", "text"), ("journal", "note", "text")],
    "purchase": [("mail", "mail", "body"), ("amazon", "purchase", "text"), ("journal", "note", "text")],
    "restaurant": [("journal", "note", "text"), ("mail", "mail", "body"), ("calendar", "calendar_event", "description")],
    "calendar": [("calendar", "calendar_event", "description"), ("mail", "mail", "body")],
    "travel": [("mail", "mail", "body"), ("calendar", "calendar_event", "description"), ("journal", "note", "text")],
}
TITLES = ["Dinner", "Order update", "Note", "Workout", "Trip", "Meeting", "Receipt", "Re: plans", "Weekend"]


def wrap(rng: random.Random, kind: str, text: str) -> tuple[str, int]:
    """``text`` verbalised as one event's key-value pairs, and the shift of its spans."""
    source, event_kind, field_name = rng.choice(WRAPPERS[kind])
    head = f"source: {source} | kind: {event_kind} | "
    if kind not in ("music", "podcast", "netflix") and rng.random() < 0.6:  # "title" asks for the show there
        head += f"title: {rng.choice(TITLES)} | "
    head += f"{field_name}: "
    return head + text.replace("\n", " "), len(head)


# Templates only dev uses: the last one of each event kind.
DEV_TEMPLATES = {(kind, len(ts) - 1) for kind, ts in TEMPLATES.items()}

_SLOT = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True, slots=True)
class Example:
    """One extractor example. ``span`` is the gold (start, end) character span when
    the value is copied from the text, ``None`` for a normalised or absent value."""

    text: str
    key: str
    value: str  # "" when the text does not state the key
    attribute: str
    span: tuple[int, int] | None
    template: str
    unseen_template: bool = False
    entities: tuple[str, ...] = field(default=())

    @property
    def bucket(self) -> str:
        return BUCKET.get(self.attribute, "other") if self.value else "absent"


class EventRenderer:
    """Fills one template: draws each slot's surface text and the attribute values
    it implies (a copied span or a normalised category)."""

    def __init__(self, rng: random.Random, ents: EntitySource):
        self.rng = rng
        self.ents = ents
        self.last_entities: tuple[str, ...] = ()  # what the last render drew from ``ents``

    def _duration(self) -> str:
        r = self.rng
        return r.choice([f"{r.randrange(1, 59)} min", f"{r.randrange(1, 9)} min {r.randrange(0, 60)} s",
                         f"{r.randrange(1, 3)} h {r.randrange(0, 60)} min", f"{r.randrange(5, 59)} minutes",
                         f"{r.randrange(1, 4)}:{r.randrange(0, 60):02d}:{r.randrange(0, 60):02d}"])

    def _weekday(self) -> tuple[str, str]:
        r = self.rng
        day = r.randrange(7)
        name = WEEKDAYS[day].capitalize()
        month = r.choice(MONTHS)
        text = r.choice([name, name[:3], f"{name} {r.randrange(1, 29)} {month}",
                         f"{name[:3]}, {r.randrange(1, 29):02d} {month[:3]} {r.randrange(2015, 2026)}",
                         f"{name.lower()}", f"{name}, {month} {r.randrange(1, 29)}"])
        return text, WEEKDAYS[day]

    def _price(self) -> tuple[str, str, str]:
        r = self.rng
        symbol, code = r.choice(CURRENCIES)
        whole = r.choice([r.randrange(1, 20), r.randrange(1, 200), r.randrange(100, 3000)])
        cents = r.choice([0, r.randrange(0, 100)])
        number = f"{whole}.{cents:02d}"
        style = r.randrange(5)
        if style == 0:
            text = f"{symbol}{number}" if len(symbol) == 1 else f"{symbol} {number}"
        elif style == 1:
            text = f"{whole},{cents:02d} {symbol}"
        elif style == 2:
            text = f"{code} {number}"
        elif style == 3:
            text = f"{number} {code}"
        else:
            text = f"{whole} {symbol}" if cents == 0 else f"{number} {symbol}"
        return text, f"{number} {code.lower()}", code.lower()

    def render(self, kind: str, template: str) -> tuple[str, dict[str, tuple[str, tuple[int, int] | None]]]:
        """Return the text and attribute -> (value, span or None)."""
        r, e = self.rng, self.ents
        pieces: list[str] = []
        attrs: dict[str, tuple[str, tuple[int, int] | None]] = {}
        pos = 0
        last = 0
        drawn: list[str] = []
        for m in _SLOT.finditer(template):
            lit = template[last:m.start()]
            pieces.append(lit)
            pos += len(lit)
            slot = m.group(1)
            normalised: list[tuple[str, str]] = []
            copied_as: str | None = slot
            if slot in ("track", "album", "show", "episode", "artist", "person", "attendee", "sender",
                        "city", "country", "restaurant", "street", "product", "store", "company"):
                source_kind = {"attendee": "person", "sender": "person"}.get(slot, slot)
                value = e.draw(source_kind)
                drawn.append(value)
            elif slot == "email":
                value, copied_as = e.draw("email"), None
                drawn.append(value)
            elif slot == "duration":
                value = self._duration()
            elif slot == "distance":
                value = r.choice([f"{r.randrange(1, 40)}.{r.randrange(10)} km", f"{r.randrange(1, 20)} km",
                                  f"{r.randrange(1, 25)}.{r.randrange(10)} miles", f"{r.randrange(200, 3000)} m"])
            elif slot == "platform":
                value = r.choice(PLATFORMS)
            elif slot == "device":
                value = r.choice(DEVICES)
            elif slot == "season":
                value, copied_as = str(r.randrange(1, 9)), None
            elif slot == "weekday_text":
                value, day = self._weekday()
                copied_as = None
                normalised.append(("weekday", day))
            elif slot == "activity_text":
                activity = r.choice(sorted(ACTIVITIES))
                value, copied_as = r.choice(ACTIVITIES[activity]), None
                normalised.append(("activity", activity))
            elif slot == "dish":
                cuisine = r.choice(sorted(CUISINES))
                value, copied_as = r.choice(CUISINES[cuisine]), None
                normalised.append(("cuisine", cuisine))
            elif slot == "price":
                # the amount is copied as written ("12,50 €"); EXTRACT's float coercion
                # reads the number, so the model needs no arithmetic on digits
                value, _, code = self._price()
                copied_as = "amount"
                normalised.append(("currency", code))
            else:
                raise KeyError(f"template {template!r}: unknown slot {slot!r}")
            pieces.append(value)
            if copied_as is not None and copied_as not in attrs:
                attrs[copied_as] = (value, (pos, pos + len(value)))
            for name, norm in normalised:
                attrs.setdefault(name, (norm, None))
            pos += len(value)
            last = m.end()
        pieces.append(template[last:])
        self.last_entities = tuple(drawn)
        return "".join(pieces), attrs


def examples(seed: int, split: Split, *, keys_per_text: int = 2,
             absent_share: float = 0.1) -> Iterator[Example]:
    """An endless, deterministic stream of extractor examples for ``split``.

    Each text yields ``keys_per_text`` examples (different attributes), plus now and
    then one asking for an attribute the text does not state (gold value "").
    """
    rng = random.Random(f"{seed}:{split}:extract")
    renderer = EventRenderer(rng, EntitySource(seed, split))
    kinds = sorted(TEMPLATES)
    while True:
        kind = rng.choice(kinds)
        choices = [i for i in range(len(TEMPLATES[kind]))
                   if (split == "dev") or (kind, i) not in DEV_TEMPLATES]
        index = rng.choice(choices)
        unseen = (kind, index) in DEV_TEMPLATES
        text, attrs = renderer.render(kind, TEMPLATES[kind][index])
        if rng.random() < WRAP_SHARE:
            text, shift = wrap(rng, kind, text)
            attrs = {n: (v, None if sp is None else (sp[0] + shift, sp[1] + shift)) for n, (v, sp) in attrs.items()}
        entities = renderer.last_entities
        names = sorted(attrs)
        rng.shuffle(names)
        if split == "train" and rng.random() < CATEGORY_FIRST:
            # normalised categories are a small share of the attributes and the
            # slowest to learn (a mapping, not a copy): ask for one more often
            normalised = [n for n in names if attrs[n][1] is None]
            if normalised:
                names.remove(normalised[0])
                names.insert(0, normalised[0])
        tag = f"{kind}/{index}"
        for name in names[:keys_per_text]:
            value, span = attrs[name]
            yield Example(text, rng.choice(KEY_PHRASES[name]), value, name, span, tag, unseen, entities)
        if rng.random() < absent_share:
            stated_keys = {p for n in attrs for p in KEY_PHRASES[n]}
            missing = [n for n in sorted(KEY_PHRASES) if n not in attrs
                       and not stated_keys.intersection(KEY_PHRASES[n])]
            name = rng.choice(missing)
            yield Example(text, rng.choice(KEY_PHRASES[name]), "", name, None, tag, unseen, entities)
