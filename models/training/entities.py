"""Entity pools for synthetic training data, split by entity.

Every entity string (a person, a city, a product, ...) belongs to exactly one
split, decided by a hash of its normalised text, so a dev example never mentions an
entity any train example uses, however the examples are composed. Faker with
several locales gives the variety the extractor needs to learn to copy instead of
memorising (the verified warm start copied 0 of 161 unseen names).

This module must not decide what the texts look like; ``extract_data`` and
the seq2seq trainer do.
"""
from __future__ import annotations

import hashlib
import random
import unicodedata
from collections.abc import Callable
from typing import Literal

Split = Literal["train", "dev"]

# One in DEV_SHARE_DEN entities goes to dev.
DEV_SHARE_DEN = 6

LOCALES = ["en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "pt_BR", "sv_SE",
           "pl_PL", "tr_TR", "en_IN", "ja_JP_romanized", "da_DK", "fi_FI", "cs_CZ"]

_WORDS = ("river night golden paper silent electric velvet broken summer neon glass wild lonely "
          "crystal midnight ocean blue fire northern hidden paper lucky iron rose shadow winter "
          "honey silver echo falling stone garden city dream rain morning bright little sweet "
          "dark heart moon sun fever ghost wolf tiger highway radio lights coast island stars "
          "mirror thunder ember violet cloud desert forest harbor signal orbit canyon ruby").split()
_PRODUCT_NOUNS = ("headphones kettle backpack lamp sneakers charger keyboard mouse blender jacket "
                  "speaker watch camera tripod notebook pen mug umbrella tent bottle router drone "
                  "monitor toaster scarf wallet grinder mattress pillow stroller helmet skates").split()
_PRODUCT_ADJ = ("pro mini max ultra lite air plus classic sport eco smart compact wireless "
                "portable deluxe x2 go one neo").split()
_RESTAURANT_PATTERNS = ("{last}'s Kitchen", "Trattoria {last}", "Chez {first}", "{word} Bistro",
                        "The {word} Table", "Casa {last}", "{last} & Sons", "Café {word}",
                        "{first}'s Diner", "Osteria del {word}", "{word} House", "Brasserie {last}")
# sights a trip's notes name: museums, palaces, parks, markets, temples ...
_SIGHT_PATTERNS = ("{word} Museum", "National Museum of {word}", "{last} Palace", "{word} Park", "{word} Market",
                   "{word} Cathedral", "Church of St. {first}", "{word} Tower", "The {word} Gallery",
                   "{last} Square", "Fort {last}", "{word} Bridge", "{word} Gardens", "Temple of the {word}",
                   "{last} Castle", "Mount {last}", "{word} Beach", "{word} Fountain", "Old {word} Quarter",
                   "Wat {word}", "The {word} Arch", "{last} Memorial", "{word} Falls", "{last} Opera House")
# dishes a note says were cooked, baked or eaten, lower-case as notes write them
_INGREDIENTS = ("cherry lemon apple mushroom spinach pumpkin chicken beef pork salmon tuna shrimp tofu "
                "chickpea lentil potato tomato garlic ginger honey chocolate blueberry raspberry banana "
                "pear plum peach apricot walnut almond coconut carrot zucchini eggplant pepper onion "
                "cheese ricotta feta bacon sausage lamb cod mango lime orange cinnamon vanilla caramel "
                "pecan hazelnut leek cabbage broccoli cauliflower kale corn bean rhubarb fig date").split()
_DISH_BASES = ("cake pie tart crumble cobbler muffins bread soup stew curry salad risotto pasta "
               "lasagna casserole pancakes waffles omelette quiche sandwich burger tacos wraps "
               "skewers roast stir-fry noodles dumplings cookies brownies scones danish loaf pudding "
               "chowder gratin fritters sliders bowl").split() + ["bundt cake", "skillet cake", "fried rice"]
_DISH_ADJ = "easy spicy grilled homemade roasted baked creamy crispy slow-cooked classic vegan quick".split()


def _dish(rng: random.Random) -> str:
    a, b = rng.sample(_INGREDIENTS, 2)
    base = rng.choice(_DISH_BASES)
    pattern = rng.randrange(6)
    if pattern == 0:
        return f"{a} {base}"
    if pattern == 1:
        return f"{rng.choice(_DISH_ADJ)} {a} {base}"
    if pattern == 2:
        return f"{a}-{b} {base}"
    if pattern == 3:
        return f"{base} with {a}"
    if pattern == 4:
        return f"{a} and {b} {base}"
    return f"{rng.choice(_DISH_ADJ)} {base}"


# hotels and venues a booking, ticket or newsletter mail names, in several languages' styles
_HOTEL_PATTERNS = ("Hotel {word}", "{word} Hotel", "Hotel {last}", "The {word} Inn", "{last} Grand Hotel",
                   "Hotel am {word}", "{word} Suites", "Hotel {word} {city}", "{word} Lodge", "Pension {last}",
                   "{last} Boutique Hotel", "Hôtel {word}", "{word} Hostel", "Hotel {last} & Spa",
                   "{city} {word} Hotel", "Residence {last}", "Albergo {word}", "{word} Resort & Spa")
_VENUE_PATTERNS = ("{word} Arena", "{last} Hall", "{city} Stadium", "Club {word}", "The {word} Theatre",
                   "{word}halle", "{last} Concert Hall", "{word} Ballroom", "Olympia {word}", "{word} Lounge",
                   "Stadthalle {city}", "{word} Amphitheatre", "The {word} Room", "{last} Auditorium",
                   "{word} Jazz Club", "Teatro {last}")
_CODE_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"


def _booking_code(rng: random.Random) -> str:
    """A booking, order or confirmation number as mails write them."""
    letters = lambda n: "".join(rng.choice(_CODE_LETTERS) for _ in range(n))  # noqa: E731
    digits = lambda n: "".join(rng.choice("0123456789") for _ in range(n))  # noqa: E731
    pattern = rng.randrange(6)
    if pattern == 0:
        return f"{letters(2)}-{digits(rng.randrange(4, 8))}"
    if pattern == 1:
        return "".join(rng.choice(_CODE_LETTERS + "23456789") for _ in range(6))
    if pattern == 2:
        return f"{digits(3)}-{digits(7)}-{digits(7)}"
    if pattern == 3:
        return digits(rng.randrange(6, 11))
    if pattern == 4:
        return f"#{digits(rng.randrange(4, 7))}"
    return f"{letters(3)}{digits(4)}{letters(1)}"


def _flight(rng: random.Random) -> str:
    """A flight number: an airline's two-character code and one to four digits, with
    or without a space ("LH 2034", "U24567")."""
    code = rng.choice(_CODE_LETTERS) + rng.choice(_CODE_LETTERS + "0123456789")
    return f"{code}{rng.choice(('', ' '))}{rng.randrange(1, 9999)}"


_BAND_PATTERNS = ("The {word}s", "{word} {word2}", "{first} {last}", "{first} and the {word}s",
                  "DJ {first}", "{last}", "{word} Club", "{first} {last} Trio")


def fold(text: str) -> str:
    """Lower-case, accent-free, single-spaced: how two mentions of one entity compare."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(bare.lower().split())


def split_of(entity: str) -> Split:
    """The split an entity belongs to; stable across runs and machines."""
    digest = hashlib.blake2b(fold(entity).encode("utf-8"), digest_size=8).digest()
    return "dev" if int.from_bytes(digest, "big") % DEV_SHARE_DEN == 0 else "train"


def _fix_set_ordered_lists(fk) -> None:
    """Some faker locales build a word list from a set (it_IT's cities), so its order,
    and every draw after it, changed with each process's string hashing: the build's
    examples were not the same twice. Sort those lists."""
    for provider in fk.providers:
        cities = getattr(provider, "cities", None)
        if isinstance(cities, list) and type(provider).__module__.endswith("it_IT"):
            provider.cities = sorted(cities)


class EntitySource:
    """Draws entities of one split. ``draw("person")`` retries until the hash puts
    the entity in this source's split, so both splits see every entity type."""

    def __init__(self, seed: int, split: Split):
        from faker import Faker  # faker is a build-time dependency only

        self.split = split
        self.rng = random.Random(f"{seed}:{split}:entities")
        self._fakers = []
        for loc in LOCALES:
            try:
                f = Faker(loc)
            except AttributeError:  # a locale this faker release lacks
                continue
            f.seed_instance(self.rng.randrange(1 << 30))
            _fix_set_ordered_lists(f)
            self._fakers.append(f)
        self._kinds: dict[str, Callable[[], str]] = {
            "person": lambda: f"{self._fk().first_name()} {self._fk().last_name()}",
            "first_name": lambda: self._fk().first_name(),
            "city": lambda: self._fk().city(),
            "country": lambda: self._fk().country(),
            "company": lambda: self._fk().company(),
            "street": lambda: self._fk().street_address(),
            "product": self._product,
            "artist": self._artist,
            "track": self._title_words,
            "album": self._title_words,
            "show": self._title_words,
            "episode": self._title_words,
            "restaurant": self._restaurant,
            "sight": self._sight,
            "dish": lambda: _dish(self.rng),
            "store": lambda: self._fk().company().split(",")[0],
            "email": lambda: self._fk().email(),
            "hotel": lambda: self._place_named(_HOTEL_PATTERNS),
            "venue": lambda: self._place_named(_VENUE_PATTERNS),
            "booking": lambda: _booking_code(self.rng),
            "flight": lambda: _flight(self.rng),
        }

    def _fk(self):
        return self.rng.choice(self._fakers)

    def _word(self) -> str:
        # Half invented words from faker's lorem (any locale), half from a fixed list.
        if self.rng.random() < 0.5:
            return self._fk().word().capitalize()
        return self.rng.choice(_WORDS).capitalize()

    def _title_words(self) -> str:
        n = self.rng.choice((1, 2, 2, 3, 3, 4))
        words = [self._word() for _ in range(n)]
        if self.rng.random() < 0.2:
            words.insert(self.rng.randrange(len(words) + 1), self._fk().last_name())
        return " ".join(words)

    def _artist(self) -> str:
        pattern = self.rng.choice(_BAND_PATTERNS)
        fk = self._fk()
        return pattern.format(word=self._word(), word2=self._word(), first=fk.first_name(),
                              last=fk.last_name())

    def _restaurant(self) -> str:
        pattern = self.rng.choice(_RESTAURANT_PATTERNS)
        fk = self._fk()
        return pattern.format(word=self._word(), first=fk.first_name(), last=fk.last_name())

    def _sight(self) -> str:
        pattern = self.rng.choice(_SIGHT_PATTERNS)
        fk = self._fk()
        return pattern.format(word=self._word(), first=fk.first_name(), last=fk.last_name())

    def _place_named(self, patterns: tuple[str, ...]) -> str:
        fk = self._fk()
        return self.rng.choice(patterns).format(word=self._word(), last=fk.last_name(), city=fk.city())

    def _product(self) -> str:
        brand = self._fk().last_name() if self.rng.random() < 0.5 else self._word()
        parts = [brand, self.rng.choice(_PRODUCT_NOUNS)]
        if self.rng.random() < 0.6:
            parts.insert(1, self.rng.choice(_PRODUCT_ADJ).capitalize())
        if self.rng.random() < 0.3:
            parts.append(str(self.rng.randrange(2, 900)))
        return " ".join(parts)

    def draw(self, kind: str) -> str:
        make = self._kinds[kind]
        for _ in range(200):
            value = " ".join(make().split())
            if value and split_of(value) == self.split:
                return value
        raise RuntimeError(f"entity kind {kind!r}: no {self.split} entity in 200 draws")
