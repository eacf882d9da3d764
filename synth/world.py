"""Who a synthetic persona is: the fixed persona specs and the entities of their
world (people, restaurants, artists, shows, products, trip destinations), drawn with
``faker`` in several locales from one seed.

This module only builds the cast; it does not simulate days or write files.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date

from faker import Faker


class UnknownPersonaError(KeyError):
    """A persona id that is not in :data:`PERSONAS`."""


@dataclass(frozen=True, slots=True)
class PersonaSpec:
    id: str
    name: str
    email: str
    home_city: str
    home_country: str  # ISO code, as Spotify's conn_country and Netflix's Country
    home_tz: str
    locale: str
    seed: int
    start: date
    years: float
    split: str  # which benchmark split the persona belongs to
    sports: tuple[str, ...]  # regular sports, in order of importance
    cuisines: tuple[str, ...]  # favourite cuisines first
    genres: tuple[str, ...]  # favourite music genres first
    music_per_day: float  # average plays on an ordinary day
    currency: str


PERSONAS: dict[str, PersonaSpec] = {p.id: p for p in (
    PersonaSpec("p1", "Mara Lindqvist", "mara.lindqvist@gmail.com", "Berlin", "DE", "Europe/Berlin",
                "de_DE", 101, date(2022, 3, 1), 2.5, "train",
                ("running", "football", "yoga"), ("Italian", "Vietnamese", "Indian"),
                ("indie rock", "electronic", "jazz"), 34.0, "EUR"),
    PersonaSpec("p2", "Dev Okafor", "dev.okafor@gmail.com", "New York", "US", "America/New_York",
                "en_US", 202, date(2021, 9, 1), 3.0, "train",
                ("cycling", "running", "strength"), ("Mexican", "Japanese", "Italian"),
                ("hip hop", "soul", "electronic"), 30.0, "USD"),
    PersonaSpec("p3", "Camille Rousseau", "camille.rousseau@gmail.com", "Paris", "FR", "Europe/Paris",
                "fr_FR", 303, date(2022, 1, 1), 2.5, "train",
                ("swimming", "football", "running"), ("Japanese", "Lebanese", "Italian"),
                ("pop", "classical", "indie rock"), 33.0, "EUR"),
    PersonaSpec("p4", "Oliver Hughes", "oliver.hughes@gmail.com", "London", "GB", "Europe/London",
                "en_GB", 404, date(2022, 6, 1), 2.5, "dev",
                ("football", "running", "cycling"), ("Indian", "Thai", "Italian"),
                ("rock", "electronic", "folk"), 33.0, "GBP"),
    PersonaSpec("p5", "Lucía Ferrer", "lucia.ferrer@gmail.com", "Madrid", "ES", "Europe/Madrid",
                "es_ES", 505, date(2021, 11, 1), 2.75, "dev",
                ("running", "yoga", "swimming"), ("Japanese", "Italian", "Greek"),
                ("latin", "pop", "jazz"), 32.0, "EUR"),
    PersonaSpec("p6", "Sam Whitaker", "sam.whitaker@gmail.com", "Sydney", "AU", "Australia/Sydney",
                "en_AU", 606, date(2022, 2, 1), 2.5, "dev",
                ("cycling", "football", "swimming"), ("Thai", "Korean", "Italian"),
                ("electronic", "rock", "hip hop"), 33.0, "AUD"),
    # p5 and p6 were the test split until session 33, when it showed that rules,
    # comments and tests had been written from their failures: they measure what was
    # tuned on them, so they are dev now. p7 and p8 are the test split; nobody has
    # looked at their lives, and a CI check (synth.leakage) keeps their names out of
    # the code.
    PersonaSpec("p7", "Elena Marchetti", "elena.marchetti@gmail.com", "Rome", "IT", "Europe/Rome",
                "it_IT", 707, date(2021, 10, 1), 2.75, "test",
                ("cycling", "swimming", "yoga"), ("Lebanese", "Japanese", "Mexican"),
                ("classical", "jazz", "indie rock"), 31.0, "EUR"),
    PersonaSpec("p8", "Grace Kowalski", "grace.kowalski@gmail.com", "New York", "US", "America/New_York",
                "en_US", 808, date(2022, 4, 1), 2.5, "test",
                ("strength", "running", "football"), ("Korean", "Greek", "Vietnamese"),
                ("soul", "folk", "pop"), 32.0, "USD"),
)}

DEMO = PersonaSpec("demo", "Alex Morgan", "alex.morgan@gmail.com", "Berlin", "DE", "Europe/Berlin",
                   "de_DE", 7, date(2023, 1, 1), 1.0, "demo",
                   ("running", "football", "yoga"), ("Italian", "Japanese", "Indian"),
                   ("indie rock", "electronic", "jazz"), 40.0, "EUR")


def persona_spec(persona: str | int) -> PersonaSpec:
    """A spec by id ("p1"), or a fresh spec shaped like p1 for an integer seed."""
    if isinstance(persona, int):
        base = PERSONAS["p1"]
        return PersonaSpec(f"s{persona}", base.name, base.email, base.home_city, base.home_country,
                           base.home_tz, base.locale, persona, base.start, base.years, "train",
                           base.sports, base.cuisines, base.genres, base.music_per_day, base.currency)
    if persona == "demo":
        return DEMO
    try:
        return PERSONAS[persona]
    except KeyError:
        raise UnknownPersonaError(f"unknown persona {persona!r}; known: {', '.join(PERSONAS)}") from None


@dataclass(frozen=True, slots=True)
class Destination:
    city: str
    country: str  # ISO code
    tz: str
    locale: str


DESTINATIONS = (
    Destination("Lisbon", "PT", "Europe/Lisbon", "pt_PT"),
    Destination("Tokyo", "JP", "Asia/Tokyo", "ja_JP"),
    Destination("New York", "US", "America/New_York", "en_US"),
    Destination("Barcelona", "ES", "Europe/Madrid", "es_ES"),
    Destination("Mexico City", "MX", "America/Mexico_City", "es_MX"),
    Destination("Rome", "IT", "Europe/Rome", "it_IT"),
    Destination("Reykjavik", "IS", "Atlantic/Reykjavik", "en_GB"),
    Destination("Bangkok", "TH", "Asia/Bangkok", "th_TH"),
    Destination("Cape Town", "ZA", "Africa/Johannesburg", "en_GB"),
    Destination("Vancouver", "CA", "America/Vancouver", "en_CA"),
    Destination("Athens", "GR", "Europe/Athens", "el_GR"),
    Destination("Istanbul", "TR", "Europe/Istanbul", "tr_TR"),
    Destination("Seoul", "KR", "Asia/Seoul", "ko_KR"),
    Destination("Buenos Aires", "AR", "America/Argentina/Buenos_Aires", "es_AR"),
    Destination("Amsterdam", "NL", "Europe/Amsterdam", "nl_NL"),
    Destination("Copenhagen", "DK", "Europe/Copenhagen", "da_DK"),
)

CUISINES = ("Italian", "Japanese", "Indian", "Mexican", "Thai", "Vietnamese", "Greek", "Lebanese",
            "French", "Korean", "Chinese", "Spanish", "Ethiopian", "Turkish")

# Restaurant name shapes per cuisine; {n} is a surname, {c} a city-ish word.
_RESTAURANT_SHAPES = {
    "Italian": ("Trattoria {n}", "Pizzeria {n}", "Osteria da {n}", "Ristorante {n}", "{n}'s Pasta Bar"),
    "Japanese": ("Sushi {n}", "Ramen {n}", "{n} Izakaya", "Udon House {n}"),
    "Indian": ("{n}'s Tandoor", "Curry House {n}", "Spice of {c}", "Masala {n}"),
    "Mexican": ("Taquería {n}", "Casa {n}", "Cantina {n}", "El {n} Burrito"),
    "Thai": ("Thai Orchid {n}", "Bangkok Kitchen {n}", "{n} Thai Street Food"),
    "Vietnamese": ("Pho {n}", "Saigon {n}", "{n} Banh Mi"),
    "Greek": ("Taverna {n}", "{n}'s Souvlaki", "Olive {n}"),
    "Lebanese": ("Beirut {n}", "{n} Mezze", "Cedar {n}"),
    "French": ("Bistro {n}", "Brasserie {n}", "Café {n}", "Le Petit {n}"),
    "Korean": ("{n} Korean BBQ", "Seoul Kitchen {n}", "Bibimbap {n}"),
    "Chinese": ("Golden Dragon {n}", "{n} Dumpling House", "Jade Garden {n}"),
    "Spanish": ("Bodega {n}", "Tapas {n}", "La Taberna de {n}"),
    "Ethiopian": ("Addis {n}", "{n} Injera House"),
    "Turkish": ("{n} Kebap", "Anatolia {n}", "Meze {n}"),
}

_GENRE_WORDS = {
    "indie rock": ("Arctic", "Velvet", "Paper", "Glass", "Neon", "Quiet"),
    "electronic": ("Pulse", "Circuit", "Echo", "Synth", "Prism", "Vector"),
    "jazz": ("Blue", "Smoke", "Midnight", "Brass", "Velour"),
    "hip hop": ("Concrete", "Gold", "Block", "Cipher", "Crown"),
    "soul": ("Honey", "Velvet", "Sunday", "Heart"),
    "pop": ("Candy", "Summer", "Starlight", "Bubble", "Sugar"),
    "classical": ("Ensemble", "Quartet", "Philharmonic", "Chamber"),
    "rock": ("Iron", "Thunder", "Stone", "Wild", "Rust"),
    "folk": ("Willow", "Harbor", "Meadow", "Lantern"),
    "latin": ("Sol", "Fuego", "Luna", "Corazón"),
}

PRODUCT_CATEGORIES = {
    "Books": ("paperback", "hardcover novel", "cookbook", "travel guide", "field guide"),
    "Electronics": ("USB-C cable", "wireless earbuds", "power bank", "bluetooth speaker", "HDMI adapter",
                    "e-reader cover", "mechanical keyboard"),
    "Sports": ("running socks", "yoga mat", "water bottle", "headlamp", "cycling gloves", "shin guards",
               "swim goggles", "foam roller"),
    "Kitchen": ("espresso cups", "chef's knife", "cast iron pan", "pasta maker", "coffee grinder",
                "spice rack"),
    "Home": ("desk lamp", "picture frame", "throw blanket", "plant pot", "door mat", "shower curtain"),
    "Grocery": ("green tea", "coffee beans", "olive oil", "dark chocolate", "protein bars"),
    "Toys & Games": ("board game", "jigsaw puzzle", "card game"),
    "Beauty": ("sunscreen", "shampoo", "hand cream"),
}
_PRICE_RANGE = {"Books": (8, 35), "Electronics": (9, 180), "Sports": (6, 70), "Kitchen": (12, 140),
                "Home": (10, 90), "Grocery": (4, 30), "Toys & Games": (12, 60), "Beauty": (5, 30)}

SHOPS = ("Zalando", "IKEA", "Decathlon", "MediaMarkt", "Etsy", "Uniqlo", "Bookshop.org", "Thomann")


@dataclass(slots=True)
class Person:
    name: str
    email: str
    relation: str  # friend | family:<role> | partner | colleague | teammate

    @property
    def first(self) -> str:
        return self.name.split(" ")[0]


@dataclass(slots=True)
class Restaurant:
    name: str
    cuisine: str
    city: str
    street: str


@dataclass(slots=True)
class Track:
    name: str
    artist: str
    album: str
    genre: str
    ms: int
    uri: str


@dataclass(slots=True)
class Show:
    title: str
    seasons: int
    episodes: int  # per season
    episode_titles: list[str]
    minutes: int


@dataclass(slots=True)
class Product:
    name: str
    category: str
    price: float
    asin: str


@dataclass(slots=True)
class World:
    spec: PersonaSpec
    friends: list[Person]
    family: list[Person]
    partner: Person
    colleagues: list[Person]
    teammates: list[Person]
    running_buddy: Person
    restaurants: dict[str, list[Restaurant]]  # city -> restaurants
    cafes: list[str]
    artists: dict[str, list[Track]]  # artist -> tracks
    artist_genre: dict[str, str]
    workout_artists: list[str]
    shows: list[Show]
    podcasts: list[tuple[str, list[str]]]
    products: list[Product]
    destinations: list[Destination]
    parks: list[str]
    extra: dict = field(default_factory=dict)


def _fakers(locale: str, seed: int) -> Faker:
    fk = Faker(locale)
    fk.seed_instance(seed)
    return fk


def _title(words: list[str]) -> str:
    return " ".join(w.capitalize() for w in words)


def build_world(spec: PersonaSpec) -> World:
    """Everyone and everything in the persona's life, drawn from the persona's seed."""
    rng = random.Random(spec.seed)
    home = _fakers(spec.locale, spec.seed)
    en = _fakers("en_US", spec.seed + 1)
    others = [_fakers(loc, spec.seed + 2 + i) for i, loc in enumerate(("en_GB", "it_IT", "fr_FR", "es_ES"))]

    def person(fk: Faker, relation: str, surname: str | None = None) -> Person:
        first = fk.first_name()
        last = surname or fk.last_name()
        user = "".join(ch for ch in f"{first}.{last}".lower() if ch.isascii() and (ch.isalnum() or ch == "."))
        domain = rng.choice(("gmail.com", "outlook.com", "posteo.de", "icloud.com", "proton.me"))
        return Person(f"{first} {last}", f"{user or 'friend'}{rng.randint(1, 99)}@{domain}", relation)

    own_last = spec.name.split(" ")[-1]
    family = [person(home, "family:mother", own_last), person(home, "family:father", own_last),
              person(home, "family:sister", own_last), person(home, "family:brother", own_last)]
    partner = person(home, "partner")
    friends = [person(rng.choice([home, home, en] + others), "friend") for _ in range(12)]
    colleagues = [person(rng.choice([home, en]), "colleague") for _ in range(8)]
    for c in colleagues:
        c.email = c.email.split("@")[0] + "@northwind-labs.com"
    teammates = friends[:3] + [person(home, "teammate") for _ in range(5)]

    def restaurants_for(fk: Faker, city: str, n: int, cuisines: tuple[str, ...]) -> list[Restaurant]:
        out: list[Restaurant] = []
        seen: set[str] = set()
        while len(out) < n:
            cuisine = rng.choice(cuisines)
            name = rng.choice(_RESTAURANT_SHAPES[cuisine]).format(n=fk.last_name(), c=city)
            if name in seen:
                continue
            seen.add(name)
            out.append(Restaurant(name, cuisine, city, fk.street_address()))
        return out

    fav = spec.cuisines
    home_cuisines = tuple(list(fav) * 3 + [c for c in CUISINES if c not in fav])
    restaurants = {spec.home_city: restaurants_for(home, spec.home_city, 60, home_cuisines)}
    # every persona's taste must be answerable: make sure each favourite has places
    for cuisine in fav:
        if not any(r.cuisine == cuisine for r in restaurants[spec.home_city]):
            restaurants[spec.home_city].append(
                Restaurant(_RESTAURANT_SHAPES[cuisine][0].format(n=home.last_name(), c=spec.home_city),
                           cuisine, spec.home_city, home.street_address()))
    dests = [d for d in DESTINATIONS if d.city != spec.home_city]
    rng.shuffle(dests)
    dests = dests[:8]
    for i, d in enumerate(dests):
        fk = _fakers(d.locale, spec.seed + 50 + i)
        restaurants[d.city] = restaurants_for(fk, d.city, 12, tuple(CUISINES))
    cafes = [rng.choice(("Café {n}", "{n} Coffee", "Kaffeehaus {n}", "The {n} Bakery")).format(n=home.last_name())
             for _ in range(10)]
    parks = [f"{home.last_name()} Park" for _ in range(4)]

    artists: dict[str, list[Track]] = {}
    artist_genre: dict[str, str] = {}
    genres = list(spec.genres) + [g for g in _GENRE_WORDS if g not in spec.genres]
    uri_n = rng.randrange(10**15)
    for i in range(140):
        genre = genres[min(int(rng.expovariate(0.6)), len(genres) - 1)]
        fk = rng.choice([en, home] + others)
        shape = rng.random()
        if shape < 0.35:
            artist = fk.name()
        elif shape < 0.7:
            artist = f"The {rng.choice(_GENRE_WORDS[genre])} {fk.last_name()}s"
        else:
            artist = _title(en.words(2)) if rng.random() < 0.5 else f"{rng.choice(_GENRE_WORDS[genre])} {fk.first_name()}"
        if artist in artists:
            continue
        tracks = []
        for a in range(rng.randint(1, 3)):
            album = _title(en.words(rng.randint(1, 3)))
            for _t in range(rng.randint(6, 11)):
                uri_n += 7919
                tracks.append(Track(_title(en.words(rng.randint(1, 4))), artist, album, genre,
                                    rng.randint(140_000, 330_000), f"spotify:track:{_b62(uri_n)}"))
        artists[artist] = tracks
        artist_genre[artist] = genre
    names = list(artists)
    workout_artists = rng.sample([a for a in names if artist_genre[a] in ("electronic", "hip hop", "rock", "pop", "latin", "indie rock")] or names, 6)

    shows = []
    for _ in range(30):
        seasons = rng.randint(1, 5)
        per = rng.randint(6, 12)
        shows.append(Show(_title(en.words(rng.randint(1, 3))), seasons, per,
                          [_title(en.words(rng.randint(1, 4))) for _ in range(seasons * per)],
                          rng.choice((22, 25, 30, 42, 45, 50, 55, 58))))
    podcasts = []
    for _ in range(8):
        host = rng.choice([en, home]).first_name()
        podcast = rng.choice((f"The {host} Hour", f"{host} Talks", f"{_title(en.words(1))} Weekly",
                              f"Everything {_title(en.words(1))}"))
        podcasts.append((podcast, [_title(en.words(rng.randint(2, 5))) for _ in range(60)]))

    products = []
    for _ in range(220):
        cat = rng.choice(list(PRODUCT_CATEGORIES))
        lo, hi = _PRICE_RANGE[cat]
        brand = en.last_name() if rng.random() < 0.5 else en.company().split(" ")[0].strip(",")
        item = rng.choice(PRODUCT_CATEGORIES[cat])
        name = f"{brand} {item}" if cat != "Books" else f"{_title(en.words(rng.randint(2, 4)))} ({item})"
        products.append(Product(name, cat, round(round(rng.uniform(lo, hi)) - 0.01, 2),
                                f"B0{_b62(rng.randrange(62**7, 62**8)).lstrip('0').upper()[:8]}"))
    return World(spec, friends, family, partner, colleagues, teammates, friends[0], restaurants, cafes,
                 artists, artist_genre, workout_artists, shows, podcasts, products, dests, parks)


_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _b62(n: int) -> str:
    out = []
    while n:
        n, r = divmod(n, 62)
        out.append(_ALPHABET[r])
    return ("".join(reversed(out)) or "0").rjust(22, "0")
