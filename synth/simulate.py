"""Plays a persona's days into canonical facts: habits with weekday/hour patterns,
tastes that drift month by month, trips that move everything into another time
zone for a week, and the choice of which export(s) will express each fact.

It returns :class:`Fact` objects only; writing files is ``exports``' job.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from synth.world import Destination, Person, Restaurant, World

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

# (weekday, hour, minute, probability) per sport; the first sport of a persona gets a boost.
_SCHEDULES: dict[str, tuple[tuple[int, int, int, float], ...]] = {
    "running": ((1, 7, 0, 0.75), (3, 7, 15, 0.35), (5, 9, 0, 0.85)),
    "cycling": ((6, 10, 0, 0.7), (2, 18, 0, 0.4)),
    "swimming": ((0, 7, 0, 0.6), (4, 18, 30, 0.5)),
    "yoga": ((2, 19, 0, 0.65), (6, 18, 0, 0.3)),
    "strength": ((0, 18, 0, 0.6), (3, 17, 30, 0.45)),
}
FOOTBALL_WEEKDAY = 3  # Thursday evening five-a-side, a recurring calendar event


@dataclass(slots=True, eq=False)
class Fact:
    """One real-world fact. ``start``/``end`` are aware datetimes in the zone the
    persona was in; ``via`` names the exports that will express it and ``exports``
    collects (file, record) pairs as the writers do so."""

    kind: str
    start: datetime
    end: datetime | None
    attrs: dict[str, Any]
    via: tuple[str, ...]
    id: str = ""
    exports: list[dict] = field(default_factory=list)
    about: "Fact | None" = None  # for mails and notes: the fact they report

    @property
    def tz(self) -> str:
        return str(self.start.tzinfo)


@dataclass(slots=True)
class Trip:
    start: date
    end: date  # inclusive
    dest: Destination
    people: list[Person]


@dataclass(slots=True)
class Life:
    world: World
    start: date
    end: date  # exclusive: "today"
    facts: list[Fact]
    trips: list[Trip]
    football_skips: list[date]
    football_moves: dict[date, datetime]
    meeting_skips: list[date]
    journal_days: dict[date, list[Fact]]


def _at(d: date, hour: int, minute: int, zone: ZoneInfo) -> datetime:
    return datetime(d.year, d.month, d.day, hour, minute, tzinfo=zone)


def _plan_trips(rng: random.Random, world: World, start: date, end: date) -> list[Trip]:
    trips: list[Trip] = []
    companions = [[world.partner], [world.partner], [world.friends[1]], [world.friends[2], world.friends[3]]]
    y = start.year
    n = 0
    while date(y, 1, 1) < end:
        for month in sorted(rng.sample(range(1, 13), rng.choice((2, 3)))):
            d0 = date(y, month, rng.randint(1, 20))
            length = rng.randint(5, 9)
            if d0 <= start + timedelta(days=14) or d0 + timedelta(days=length) >= end - timedelta(days=2):
                continue
            if trips and d0 <= trips[-1].end + timedelta(days=20):
                continue
            trips.append(Trip(d0, d0 + timedelta(days=length - 1), world.destinations[n % len(world.destinations)],
                              rng.choice(companions)))
            n += 1
        y += 1
    return trips


def simulate(world: World, *, years: float | None = None, scale: float = 1.0) -> Life:
    """Every fact of the persona's life from ``spec.start`` for ``years`` years.

    ``scale`` thins the high-volume habits (music, mail, TV) so tests can run small
    lives; habits and tastes stay the same."""
    spec = world.spec
    rng = random.Random(spec.seed * 7 + 1)
    years = spec.years if years is None else years
    start = spec.start
    end = start + timedelta(days=max(int(round(years * 365)), 7))
    home = ZoneInfo(spec.home_tz)
    trips = _plan_trips(rng, world, start, end)
    trip_of: dict[date, Trip] = {}
    for t in trips:
        d = t.start
        while d <= t.end:
            trip_of[d] = t
            d += timedelta(days=1)

    facts: list[Fact] = []
    journal_days: dict[date, list[Fact]] = {}

    def add(kind: str, start_: datetime, end_: datetime | None, via: tuple[str, ...], **attrs: Any) -> Fact:
        f = Fact(kind, start_, end_, attrs, via)
        facts.append(f)
        if "journal" in via:
            journal_days.setdefault(start_.date(), []).append(f)
        return f

    # -- tastes --------------------------------------------------------------------
    artists = list(world.artists)
    genre_rank = {g: i for i, g in enumerate(spec.genres)}
    artists.sort(key=lambda a: (genre_rank.get(world.artist_genre[a], 9), rng.random()))
    cum: list[float] = []
    total = 0.0
    for i, _a in enumerate(artists):
        total += 1.0 / (i + 1) ** 0.9
        cum.append(total)
    months = (end.year - start.year) * 12 + end.month - start.month + 1
    obsession = [rng.choice(artists[:40]) for _ in range(months)]

    def pick_track(d: date, workout: bool):
        if workout and rng.random() < 0.8:
            artist = rng.choice(world.workout_artists)
        elif rng.random() < 0.22:
            artist = obsession[(d.year - start.year) * 12 + d.month - start.month]
        else:
            artist = rng.choices(artists, cum_weights=cum)[0]
        return rng.choice(world.artists[artist])

    def music_session(t: datetime, n: int, context: str, platform: str, country: str, until: datetime | None = None) -> None:
        n = max(int(round(n * scale)), 1 if until is not None or rng.random() < scale else 0)
        count = 0
        while count < n or (until is not None and t < until):
            tr = pick_track(t.date(), context == "workout")
            skipped = rng.random() < 0.12 and context != "workout"
            ms = rng.randint(4_000, 40_000) if skipped else tr.ms
            end_t = t + timedelta(milliseconds=ms)
            add("music_play", t, end_t, ("spotify",), artist=tr.artist, track=tr.name, album=tr.album,
                genre=tr.genre, ms_played=ms, minutes=round(ms / 60000, 2), platform=platform,
                country=country, uri=tr.uri, skipped=skipped, context=context)
            t = end_t + timedelta(seconds=rng.randint(0, 3))
            count += 1
            if until is not None and count > 60:
                break

    show_i = 0
    ep_i = 0
    podcast_ep = [0] * len(world.podcasts)
    fav_rest: dict[tuple[str, str], list[Restaurant]] = {}
    for city, rests in world.restaurants.items():
        for r in rests:
            fav_rest.setdefault((city, r.cuisine), []).append(r)
    cuisine_weights = [(c, w) for c, w in zip(spec.cuisines, (5, 3, 2))]
    other_cuisines = sorted({r.cuisine for r in world.restaurants[spec.home_city]} - set(spec.cuisines))

    def restaurant(city: str, cuisine: str | None = None) -> Restaurant:
        if cuisine is None:
            if city == spec.home_city:
                pool = cuisine_weights + [(c, 1) for c in other_cuisines]
                cuisine = rng.choices([c for c, _ in pool], weights=[w for _, w in pool])[0]
            else:
                return rng.choice(world.restaurants[city])
        options = fav_rest.get((city, cuisine)) or world.restaurants[city]
        # people go back to the places they like: the first listed place wins most often
        return options[min(int(rng.expovariate(1.2)), len(options) - 1)]

    def meal_via(force_journal: bool = False) -> tuple[str, ...]:
        via = []
        if force_journal or rng.random() < 0.55:
            via.append("journal")
        if rng.random() < 0.25:
            via.append("mail")
        if rng.random() < 0.25:
            via.append("calendar")
        return tuple(via) or ("journal",)

    football = "football" in spec.sports
    football_skips: list[date] = []
    football_moves: dict[date, datetime] = {}
    meeting_skips: list[date] = []
    last_dentist = start - timedelta(days=rng.randint(10, 150))
    last_haircut = start - timedelta(days=rng.randint(1, 40))
    order_n = rng.randrange(10**6)

    d = start
    while d < end:
        trip = trip_of.get(d)
        zone = ZoneInfo(trip.dest.tz) if trip else home
        city = trip.dest.city if trip else spec.home_city
        country = trip.dest.country if trip else spec.home_country
        wd = d.weekday()
        workday = wd < 5 and not trip
        day_workouts: list[Fact] = []

        if trip and d == trip.start:
            add("trip", _at(d, 8, 0, home), _at(trip.end, 20, 0, zone), ("calendar", "mail"),
                city=trip.dest.city, country=trip.dest.country, tz=trip.dest.tz,
                people=[p.name for p in trip.people], nights=(trip.end - trip.start).days)

        # -- music and podcasts ----------------------------------------------------
        per_day = spec.music_per_day
        if workday:
            music_session(_at(d, 7, rng.randint(20, 50), zone), int(per_day * 0.3), "commute",
                          "iOS 16.5 (iPhone14,2)", country)
            if rng.random() < 0.5:
                music_session(_at(d, rng.randint(10, 15), rng.randint(0, 59), zone), int(per_day * 0.35), "work",
                              "OS X 13.4.1 [arm 2]", country)
            music_session(_at(d, 17, rng.randint(30, 59), zone), int(per_day * 0.2), "commute",
                          "iOS 16.5 (iPhone14,2)", country)
        else:
            for _ in range(rng.randint(1, 3)):
                music_session(_at(d, rng.randint(10, 21), rng.randint(0, 59), zone), int(per_day * 0.35),
                              "home" if not trip else "travel", "iOS 16.5 (iPhone14,2)", country)
        if rng.random() < 0.35:
            music_session(_at(d, 21, rng.randint(0, 50), zone), int(per_day * 0.25), "evening",
                          "OS X 13.4.1 [arm 2]", country)
        if workday and rng.random() < 0.5 * min(1.0, scale * 3):
            pi = rng.randrange(len(world.podcasts))
            show, eps = world.podcasts[pi]
            ep = eps[podcast_ep[pi] % len(eps)]
            podcast_ep[pi] += 1
            t = _at(d, 8, rng.randint(30, 59), zone)
            ms = rng.randint(600_000, 3_000_000)
            add("podcast_play", t, t + timedelta(milliseconds=ms), ("spotify",), show=show, episode=ep,
                ms_played=ms, minutes=round(ms / 60000, 2), country=country)

        # -- sport -------------------------------------------------------------------
        for rank, sport in enumerate(spec.sports):
            if sport == "football":
                continue
            for sw, hour, minute, p in _SCHEDULES[sport]:
                if trip:
                    if sport != "running" or rank > 1 or rng.random() > 0.35 or sw != 1:
                        continue
                    hour, minute = 7, 30
                elif sw != wd:
                    continue
                elif football and wd == FOOTBALL_WEEKDAY and sport in ("running", "strength"):
                    continue
                elif rng.random() > p + (0.1 if rank == 0 else 0):
                    continue
                t = _at(d, hour, minute + rng.randint(0, 14), zone)
                people = []
                if sport == "running":
                    dist = max(3.0, min(21.1, rng.gauss(8.0 if wd != 5 else 12.0, 2.5)))
                    mins = dist * rng.gauss(5.6, 0.35)
                    if wd == 5 and rng.random() < 0.7:
                        people = [world.running_buddy.name]
                    place = rng.choice(world.parks) if not trip else trip.dest.city
                elif sport == "cycling":
                    dist = max(12.0, rng.gauss(45.0 if wd == 6 else 25.0, 12.0))
                    mins = dist / rng.gauss(25.0, 2.0) * 60
                    if wd == 6 and rng.random() < 0.4:
                        people = [world.friends[4].name]
                    place = rng.choice(world.parks)
                elif sport == "swimming":
                    dist = round(rng.uniform(1.2, 3.0), 1)
                    mins = dist * 10 * rng.gauss(2.3, 0.2)
                    place = "city pool"
                else:
                    dist = 0.0
                    mins = rng.choice((45, 50, 60, 75))
                    place = "studio" if sport == "yoga" else "gym"
                mins = round(mins, 1)
                via = ("strava", "health") if sport in ("running", "cycling") else ("health",)
                if rng.random() < 0.2:
                    via += ("journal",)
                f = add("workout", t, t + timedelta(minutes=mins), via, sport=sport,
                        distance_km=round(dist, 2), duration_min=mins,
                        calories=round(mins * rng.uniform(8.5, 12.5)), avg_hr=rng.randint(128, 162),
                        people=people, place=place, city=city)
                day_workouts.append(f)
                if sport in ("running", "cycling") and rng.random() < 0.85:
                    music_session(t + timedelta(seconds=20), 1, "workout", "iOS 16.5 (iPhone14,2)", country,
                                  until=t + timedelta(minutes=mins))
        football_game = None
        if football and wd == FOOTBALL_WEEKDAY:
            if trip or rng.random() < 0.12:
                football_skips.append(d)
            else:
                t = _at(d, 19, 0, home)
                if rng.random() < 0.04:
                    t = _at(d + timedelta(days=1), 18, 30, home)
                    football_moves[d] = t
                people = [p.name for p in world.teammates[:6]]  # the roster in the calendar series
                via = ("calendar", "journal") if rng.random() < 0.3 else ("calendar",)
                football_game = add("workout", t, t + timedelta(minutes=90), via, sport="football",
                                    distance_km=0.0, duration_min=90.0, calories=rng.randint(650, 900),
                                    avg_hr=rng.randint(140, 165), people=people, place=world.parks[0],
                                    city=spec.home_city)
        # -- meals out, coffee ---------------------------------------------------------
        meals: list[tuple[datetime, str, Restaurant, list[str]]] = []
        if football_game is not None and rng.random() < 0.5:
            r = restaurant(spec.home_city, "Italian")
            meals.append((football_game.end + timedelta(minutes=rng.randint(20, 45)), "dinner", r,
                          rng.sample(football_game.attrs["people"], 2)))
        elif trip:
            meals.append((_at(d, 13, rng.randint(0, 30), zone), "lunch", restaurant(city), [p.name for p in trip.people]))
            meals.append((_at(d, 20, rng.randint(0, 30), zone), "dinner", restaurant(city), [p.name for p in trip.people]))
        else:
            if wd >= 4 and rng.random() < 0.45 or wd < 4 and rng.random() < 0.1:
                who = rng.sample([world.partner] + world.friends + world.family, rng.randint(1, 3))
                meals.append((_at(d, 19, rng.randint(0, 59), zone), "dinner", restaurant(city), [p.name for p in who]))
            if workday and rng.random() < 0.15:
                who = rng.sample(world.colleagues, rng.randint(1, 3))
                meals.append((_at(d, 12, rng.randint(0, 45), zone), "lunch", restaurant(city), [p.name for p in who]))
        for t, meal, r, people in meals:
            add("meal_out", t, t + timedelta(minutes=rng.randint(50, 120)), meal_via(trip is not None and rng.random() < 0.5),
                restaurant=r.name, cuisine=r.cuisine, city=r.city, address=r.street, meal=meal, people=people)
        if not trip and rng.random() < 0.1:
            who = rng.choice(world.friends + world.family)
            t = _at(d, rng.choice((10, 15, 16)), rng.randint(0, 59), zone)
            add("social", t, t + timedelta(minutes=rng.randint(40, 100)), ("journal",),
                activity="coffee", place=rng.choice(world.cafes), people=[who.name], city=city)

        # -- TV --------------------------------------------------------------------------
        if rng.random() < min(0.65 * scale * 2, 0.65):
            t = _at(d, rng.choice((20, 21, 21, 22)), rng.randint(0, 59), zone)
            for _ in range(rng.choice((1, 1, 2, 3))):
                sh = world.shows[show_i % len(world.shows)]
                season, ep = divmod(ep_i, sh.episodes)
                mins = sh.minutes - rng.randint(0, 3) if rng.random() > 0.1 else rng.randint(3, sh.minutes - 5)
                add("tv_view", t, t + timedelta(minutes=mins), ("netflix",), show=sh.title, season=season + 1,
                    episode=sh.episode_titles[ep_i], episode_number=ep + 1, duration_min=mins,
                    device=rng.choice(("Samsung 2020 UHD TV", "Samsung 2020 UHD TV", "Apple iPhone 13",
                                       "Chrome PC (Cadmium)")), country=country)
                t += timedelta(minutes=mins + rng.randint(0, 4))
                ep_i += 1
                if ep_i >= sh.seasons * sh.episodes:
                    show_i += 1
                    ep_i = 0

        # -- shopping ----------------------------------------------------------------------
        if rng.random() < 0.12:
            order_n += rng.randint(1, 10**5)
            oid = f"{302 + order_n % 400:03d}-{order_n % 10**7:07d}-{(order_n * 7919) % 10**7:07d}"
            t = _at(d, rng.randint(8, 23), rng.randint(0, 59), zone)
            items = rng.sample(world.products, rng.choice((1, 1, 1, 2, 3)))
            confirm = rng.random() < 0.3
            for pr in items:
                q = 1 if rng.random() < 0.85 else 2
                add("purchase", t, None, ("amazon", "mail") if confirm else ("amazon",), shop="Amazon",
                    product=pr.name, category=pr.category, unit_price=pr.price, quantity=q,
                    amount=round(pr.price * q, 2), currency=spec.currency, order_id=oid, asin=pr.asin)
        if rng.random() < 0.03:
            pr = rng.choice(world.products)
            shop = rng.choice(("Zalando", "IKEA", "Decathlon", "Etsy", "Uniqlo", "Thomann"))
            t = _at(d, rng.randint(8, 23), rng.randint(0, 59), zone)
            order_n += 13
            add("purchase", t, None, ("mail",), shop=shop, product=pr.name, category=pr.category,
                unit_price=pr.price, quantity=1, amount=pr.price, currency=spec.currency,
                order_id=f"{shop[:2].upper()}{order_n % 10**8:08d}", asin="")

        # -- calendar-only life ------------------------------------------------------------
        if not trip and workday and (d - last_dentist).days > 180 and rng.random() < 0.1:
            last_dentist = d
            t = _at(d, rng.choice((8, 9, 14, 16)), 0, zone)
            add("appointment", t, t + timedelta(minutes=45), ("calendar",), title="Dentist",
                place=f"Dr. {world.family[0].name.split(' ')[0][0]}. {rng.choice(world.friends).name.split(' ')[-1]}")
        if not trip and wd == 5 and (d - last_haircut).days > 40 and rng.random() < 0.3:
            last_haircut = d
            t = _at(d, 11, 0, zone)
            add("appointment", t, t + timedelta(minutes=40), ("calendar",), title="Haircut", place="Salon")
        if wd == 0:
            if trip or rng.random() < 0.08:
                meeting_skips.append(d)
            else:
                t = _at(d, 10, 0, home)
                add("meeting", t, t + timedelta(minutes=60), ("calendar",), title="Team weekly",
                    people=[p.name for p in world.colleagues[:5]], recurring=True)

        # -- ChatGPT ---------------------------------------------------------------------------
        if rng.random() < 0.3:
            upcoming = next((tr for tr in trips if 0 < (tr.start - d).days < 30), None)
            if upcoming is not None and rng.random() < 0.4:
                topic, subject = "travel", upcoming.dest.city
            else:
                topic = rng.choice(("cooking", "fitness", "work", "work", "gifts", "language", "home"))
                subject = {"cooking": rng.choice(spec.cuisines), "fitness": spec.sports[0],
                           "work": rng.choice(("SQL", "Python", "spreadsheets", "a project plan")),
                           "gifts": world.family[rng.randrange(4)].first,
                           "language": rng.choice(("Spanish", "Italian", "Japanese")),
                           "home": rng.choice(("plants", "bike repair", "cleaning"))}[topic]
            t = _at(d, rng.randint(8, 23), rng.randint(0, 59), zone)
            turns = rng.randint(1, 4)
            add("chat", t, t + timedelta(minutes=2 * turns + rng.randint(0, 5)), ("chatgpt",),
                topic=topic, subject=subject, turns=turns, branched=rng.random() < 0.15)

        # -- health ----------------------------------------------------------------------------
        steps = int(rng.gauss(14000 if trip else 7500, 2200)) + sum(
            int(w.attrs["distance_km"] * 1300) for w in day_workouts if w.attrs["sport"] == "running")
        add("steps", _at(d, 0, 0, zone), _at(d, 23, 59, zone), ("health",), steps=max(steps, 800))
        d += timedelta(days=1)

    # yearly birthdays, from the recurring calendar entries
    for p in world.family + [world.partner]:
        bday = date(start.year, 1, 1) + timedelta(days=(hash_str(p.name) % 365))
        for y in range(start.year, end.year + 1):
            try:
                b = bday.replace(year=y)
            except ValueError:
                continue
            if start <= b < end:
                add("birthday", _at(b, 0, 0, home), None, ("calendar",), person=p.name,
                    relation=p.relation.split(":")[-1])
    _mail_traffic(rng, world, facts, start, end, trip_of, scale)
    _journal_notes(rng, facts, journal_days, start, end, trip_of, home)
    return Life(world, start, end, facts, trips, football_skips, football_moves, meeting_skips, journal_days)


MAIL_TOPICS = ("work", "friend", "family", "newsletter")


def _mail_traffic(rng: random.Random, world: World, facts: list[Fact], start: date, end: date,
                  trip_of: dict[date, Trip], scale: float) -> None:
    """Mails: the ones that report other facts (bookings, orders, dinners) and the
    everyday traffic around them."""
    spec = world.spec
    home = ZoneInfo(spec.home_tz)
    reported = [f for f in facts if "mail" in f.via]
    orders_done: set[str] = set()
    for f in reported:
        if f.kind == "purchase":
            oid = f.attrs["order_id"]
            if oid in orders_done:
                continue
            orders_done.add(oid)
            t = f.start + timedelta(minutes=rng.randint(1, 4))
            m = Fact("email", t, None, {"direction": "received", "counterpart": f.attrs["shop"],
                                        "counterpart_email": f"order-update@{f.attrs['shop'].lower().replace('.', '')}.com",
                                        "topic": "order"}, ("mail",), about=f)
        elif f.kind == "trip":
            t = datetime.combine(f.start.date() - timedelta(days=rng.randint(20, 50)), datetime.min.time(),
                                 tzinfo=home) + timedelta(hours=rng.randint(9, 22))
            m = Fact("email", t, None, {"direction": "received", "counterpart": "SkyHop Travel",
                                        "counterpart_email": "bookings@skyhop-travel.com", "topic": "booking"},
                     ("mail",), about=f)
        else:  # a meal out: a reservation beforehand or a note to a companion afterwards
            if rng.random() < 0.5:
                t = f.start - timedelta(hours=rng.randint(5, 50))
                m = Fact("email", t, None, {"direction": "received", "counterpart": "TableNow",
                                            "counterpart_email": "no-reply@tablenow.com", "topic": "reservation"},
                         ("mail",), about=f)
            else:
                who = next((p for p in world.friends + world.family + world.colleagues + world.teammates + [world.partner]
                            if f.attrs["people"] and p.name == f.attrs["people"][0]), world.friends[0])
                t = f.end + timedelta(hours=rng.randint(10, 30)) if f.end else f.start + timedelta(days=1)
                m = Fact("email", t, None, {"direction": "sent", "counterpart": who.name,
                                            "counterpart_email": who.email, "topic": "restaurant"},
                         ("mail",), about=f)
        m.attrs["subject"] = ""
        facts.append(m)
    people = {"work": world.colleagues, "friend": world.friends + [world.partner], "family": world.family}
    newsletters = (("Decathlon", "news@decathlon.com"), ("The Weekend Read", "hello@weekendread.com"),
                   ("IKEA Family", "newsletter@ikea.com"), ("Spotify", "no-reply@spotify.com"),
                   ("City Library", "info@citylibrary.org"))
    d = start
    while d < end:
        trip = trip_of.get(d)
        zone = ZoneInfo(trip.dest.tz) if trip else home
        workday = d.weekday() < 5 and not trip
        n = int(rng.gauss(5.0 if workday else 2.0, 1.5) * max(scale, 0.1))
        for _ in range(max(n, 0)):
            topic = rng.choices(MAIL_TOPICS, weights=(4 if workday else 0.2, 2, 1, 2))[0]
            t = datetime(d.year, d.month, d.day, rng.randint(7, 22), rng.randint(0, 59), rng.randint(0, 59), tzinfo=zone)
            if topic == "newsletter":
                name, addr = rng.choice(newsletters)
                attrs = {"direction": "received", "counterpart": name, "counterpart_email": addr}
            else:
                p = rng.choice(people[topic])
                attrs = {"direction": rng.choice(("received", "received", "sent")), "counterpart": p.name,
                         "counterpart_email": p.email}
            attrs.update(topic=topic, subject="")
            facts.append(Fact("email", t, None, attrs, ("mail",)))
        d += timedelta(days=1)


MOODS = ("great", "good", "good", "okay", "tired", "stressed", "calm", "happy")


def _journal_notes(rng: random.Random, facts: list[Fact], journal_days: dict[date, list[Fact]],
                   start: date, end: date, trip_of: dict[date, Trip], home: ZoneInfo) -> None:
    """One note per journaled day: every day that has a fact only the journal knows,
    plus about a third of the others."""
    d = start
    while d < end:
        mentioned = journal_days.get(d)
        if mentioned or rng.random() < 0.33:
            trip = trip_of.get(d)
            zone = ZoneInfo(trip.dest.tz) if trip else home
            t = datetime(d.year, d.month, d.day, 22, rng.randint(0, 45), tzinfo=zone)
            note = Fact("journal_note", t, None, {"mood": rng.choice(MOODS), "mentions": len(mentioned or ())},
                        ("journal",))
            note.attrs["city"] = trip.dest.city if trip else ""
            facts.append(note)
        d += timedelta(days=1)


def hash_str(s: str) -> int:
    """A process-independent string hash (Python's ``hash`` is salted per process)."""
    h = 2166136261
    for ch in s.encode("utf-8"):
        h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
    return h
