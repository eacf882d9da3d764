"""Strava ``activities.csv`` from the bulk account export, in English, German or
French (headers and dates are localized).

The file repeats column names: a first summary block (Elapsed Time in seconds,
Distance in the athlete's display unit with a locale decimal comma, Max Heart Rate,
Relative Effort, Commute) and a second detail block in SI units (seconds, metres).
Columns are therefore read by position: the n-th occurrence of a name is its own
column, and the detail block wins where both exist. Activity Date is UTC; the home
zone gives the local offset. The GPX/FIT/TCX files under ``activities/`` belong to
the listed activities and are listed as ignored. This module only parses.
"""
from __future__ import annotations

import csv
import re
import unicodedata
from collections.abc import Iterator
from datetime import datetime, timedelta

import orjson

from importers._csv import csv_rows
from importers._workout import workout_attributes
from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes

_MAX_RAW = 4000

# canonical column <- header spellings (lower case), English, German, French, Spanish.
_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("activity id", "aktivitäts-id", "aktivitaets-id", "id de l'activité", "id de l’activité",
           "id de actividad", "id. de actividad"),
    "date": ("activity date", "aktivitätsdatum", "aktivitaetsdatum", "date de l'activité",
             "date de l’activité", "fecha de la actividad"),
    "name": ("activity name", "aktivitätsname", "name der aktivität", "nom de l'activité",
             "nom de l’activité", "nombre de la actividad"),
    "type": ("activity type", "aktivitätsart", "aktivitätstyp", "type d'activité", "type d’activité",
             "tipo de actividad"),
    "description": ("activity description", "aktivitätsbeschreibung", "beschreibung der aktivität",
                    "description de l'activité", "description de l’activité", "descripción de la actividad"),
    "elapsed_time": ("elapsed time", "verstrichene zeit", "gesamtzeit", "temps écoulé", "tiempo transcurrido"),
    "moving_time": ("moving time", "bewegungszeit", "durée de déplacement", "temps de déplacement",
                    "tiempo en movimiento"),
    "distance": ("distance", "distanz", "strecke", "distancia"),
    "max_heart_rate": ("max heart rate", "max. herzfrequenz", "maximale herzfrequenz", "max. hf",
                       "fréquence cardiaque max.", "fréquence cardiaque maximale", "frecuencia cardiaca máxima"),
    "average_heart_rate": ("average heart rate", "durchschnittliche herzfrequenz", "durchschnittliche hf",
                           "ø herzfrequenz", "fréquence cardiaque moyenne", "frecuencia cardiaca media"),
    "calories": ("calories", "kalorien", "calorías"),
    "commute": ("commute", "pendeln", "pendelfahrt", "arbeitsweg", "pendelstrecke",
                "trajet domicile-travail", "trajet quotidien", "desplazamiento"),
    "relative_effort": ("relative effort", "relativer aufwand", "effort relatif", "esfuerzo relativo"),
    "elevation_gain": ("elevation gain", "höhenzunahme", "höhenmeter", "dénivelé positif", "desnivel positivo"),
    "average_speed": ("average speed", "durchschnittliche geschwindigkeit", "ø geschwindigkeit",
                      "vitesse moyenne", "velocidad media"),
    "gear": ("activity gear", "aktivitätsausrüstung", "ausrüstung", "équipement de l'activité",
             "équipement de l’activité", "equipo de la actividad"),
    "filename": ("filename", "dateiname", "nom du fichier", "nom de fichier", "nombre de archivo"),
}
_CANONICAL = {alias: canon for canon, aliases in _ALIASES.items() for alias in aliases}

# Month names and abbreviations (accents and dots removed) in the export languages.
_MONTHS = {
    "jan": 1, "gen": 1, "ene": 1, "feb": 2, "fev": 2, "mar": 3, "mrz": 3, "mae": 3, "mrt": 3,
    "apr": 4, "avr": 4, "abr": 4, "may": 5, "mai": 5, "mag": 5, "mei": 5, "jun": 6, "giu": 6,
    "jul": 7, "lug": 7, "aug": 8, "aou": 8, "ago": 8, "sep": 9, "set": 9, "oct": 10, "okt": 10,
    "ott": 10, "out": 10, "nov": 11, "dec": 12, "dez": 12, "dic": 12,
}
_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap])?\.?\s*(m\.?)?", re.I)
_NUMERIC_DATE = re.compile(r"^(\d{1,4})[./-](\d{1,2})[./-](\d{1,4})$")


class StravaFormatError(ValueError):
    """A Strava field that does not have the shape Strava writes."""


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()


def _canonical(header: str) -> str | None:
    h = header.strip().lstrip("\ufeff").strip().lower()
    return _CANONICAL.get(h)


def _header_cells(head: bytes) -> list[str]:
    raw = head.split(b"\n", 1)[0].removeprefix(b"\xef\xbb\xbf")
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A character cut at the 1 KiB boundary is fine; anything else is Excel's cp1252.
        line = raw[:exc.start].decode("utf-8") if exc.start >= len(raw) - 3 else raw.decode("cp1252", "replace")
    try:
        return next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return []


def _recognize(entry: Entry) -> float:
    canon = {_canonical(c) for c in _header_cells(entry.head)}
    if {"id", "date", "type"} <= canon and ({"name", "elapsed_time", "distance"} & canon):
        return 0.95
    if entry.basename.lower() == "activities.csv" and not entry.head.strip():
        return 0.55
    return 0.0


def column_positions(header: list[str]) -> dict[str, int]:
    """Canonical name -> index; a repeated name's second occurrence is ``name#2``."""
    seen: dict[str, int] = {}
    out: dict[str, int] = {}
    for i, cell in enumerate(header):
        canon = _canonical(cell)
        if canon is None:
            continue
        seen[canon] = seen.get(canon, 0) + 1
        out[canon if seen[canon] == 1 else f"{canon}#{seen[canon]}"] = i
    return out


def parse_activity_date(value: str) -> datetime:
    """A Strava Activity Date in any of its locale shapes, as UTC:
    ``Sep 12, 2018, 3:02:23 PM``, ``12 Sep 2018, 15:02:23``, ``12.09.2018, 15:02:23``,
    ``12 sept. 2018, 15:02:23``, ``2018-09-12 15:02:23``."""
    v = (value or "").strip()
    if not v:
        raise StravaFormatError("the Activity Date is empty")
    try:
        dt = datetime.fromisoformat(v)
        return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    except ValueError:
        pass
    m = _TIME.search(v)
    if not m:
        raise StravaFormatError(f"Activity Date {value!r} has no time of day")
    hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if m.group(4):
        if hour > 12:
            raise StravaFormatError(f"Activity Date {value!r} has an hour above 12 with AM/PM")
        hour = hour % 12 + (12 if m.group(4).lower() == "p" else 0)
    date_part = v[:m.start()].strip().rstrip(",").strip()
    day = month = year = None
    numeric = _NUMERIC_DATE.match(date_part.replace(" ", ""))
    if numeric:
        a, b, c = numeric.groups()
        if len(a) == 4:
            year, month, day = int(a), int(b), int(c)
        else:
            year = int(c) + (2000 if len(c) <= 2 else 0)
            # Dotted dates are day first; slashed ones too unless the clock is AM/PM (US).
            if "/" in date_part and m.group(4):
                month, day = int(a), int(b)
            else:
                day, month = int(a), int(b)
    else:
        words = re.findall(r"[^\W\d_]+", _fold(date_part))
        numbers = [int(n) for n in re.findall(r"\d+", date_part)]
        for w in words:
            if w.startswith("juin"):
                month = 6
            elif w.startswith("juil"):
                month = 7
            else:
                month = _MONTHS.get(w[:3])
            if month:
                break
        years = [n for n in numbers if n > 31]
        days = [n for n in numbers if n <= 31]
        if month and years and days:
            year, day = years[0], days[0]
    if not (day and month and year):
        raise StravaFormatError(f"Activity Date {value!r} is not a date Strava writes")
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as exc:
        raise StravaFormatError(f"Activity Date {value!r} is not a valid date: {exc}") from None


def parse_number(value: str | None) -> float | None:
    """A number in either decimal convention; empty gives None, junk raises."""
    v = (value or "").strip().replace("\u00a0", "").replace(" ", "")
    if not v:
        return None
    if "," in v and "." in v:
        v = v.replace(".", "").replace(",", ".") if v.rfind(",") > v.rfind(".") else v.replace(",", "")
    elif "," in v:
        v = v.replace(",", ".")
    try:
        n = float(v)
    except ValueError:
        raise StravaFormatError(f"{value!r} is not a number") from None
    if n != n or n in (float("inf"), float("-inf")):
        raise StravaFormatError(f"{value!r} is not a finite number")
    return n


def sport_of(activity: str) -> str:
    """A language-neutral sport for a Strava or Garmin activity type, so questions like
    "how often did I run" work across sources and export languages."""
    a = _fold(activity).replace("_", " ")
    rules = (
        ("running", ("run", "lauf", "course", "jogging", "carrera")),
        ("cycling", ("ride", "bike", "biking", "cycl", "radfahrt", "rad", "velo", "ciclismo", "bici")),
        ("swimming", ("swim", "schwimm", "natation", "nata")),
        ("hiking", ("hike", "hiking", "wander", "randonn", "senderismo")),
        ("walking", ("walk", "spazier", "gehen", "marche", "caminata")),
        ("strength", ("weight", "strength", "kraft", "poids", "musculation", "fuerza")),
        ("yoga", ("yoga",)),
        ("skiing", ("ski",)),
        ("rowing", ("row", "rudern", "aviron", "remo")),
    )
    for sport, words in rules:
        if any(w in a for w in words):
            return sport
    return "other"


def _truthy(value: str | None) -> bool | None:
    v = (value or "").strip().lower()
    if v in ("true", "1", "1.0", "yes", "ja", "oui", "wahr", "vrai", "sí", "si"):
        return True
    if v in ("false", "0", "0.0", "no", "nein", "non", "falsch", "faux"):
        return False
    return None


def _raw(header: list[str], row: list[str]) -> str:
    # Repeated names would collide in a dict; keep pairs in file order.
    text = orjson.dumps([[h, v] for h, v in zip(header, row) if v != ""]).decode()
    return text if len(text) <= _MAX_RAW else text[:_MAX_RAW] + "…"


def _row_event(header: list[str], row: list[str], pos: dict[str, int], loc: str,
               zone) -> tuple[Event, list[ImportIssue]]:
    def cell(name: str) -> str:
        i = pos.get(name)
        return row[i].strip() if i is not None and i < len(row) else ""

    problems: list[ImportIssue] = []

    def number(*names: str) -> float | None:
        for name in names:
            raw = cell(name)
            try:
                n = parse_number(raw)
            except StravaFormatError as exc:
                problems.append(ImportIssue(loc, f"{header[pos[name]]}: {exc}; left out"))
                continue
            if n is not None:
                return n
        return None

    activity_id = cell("id")
    if not activity_id:
        raise StravaFormatError("the Activity ID is empty")
    start = parse_activity_date(cell("date"))
    activity = cell("type") or "Activity"
    name = cell("name")
    attrs: dict[str, object] = {"activity": activity, "sport": sport_of(activity), "activity_id": activity_id}
    if name:
        attrs["name"] = name
    # Detail block (SI units) first, summary block as the fallback.
    elapsed_s = number("elapsed_time#2", "elapsed_time")
    moving_s = number("moving_time")
    distance_m = number("distance#2")
    if distance_m is not None:
        distance_km = distance_m / 1000
    else:
        distance_km = number("distance")  # summary block: the athlete's unit, km by default
    max_hr = number("max_heart_rate#2", "max_heart_rate")
    avg_hr = number("average_heart_rate")
    calories = number("calories")
    effort = number("relative_effort#2", "relative_effort")
    elevation = number("elevation_gain")
    commute = _truthy(cell("commute#2")) if cell("commute#2") else _truthy(cell("commute"))
    duration_s = moving_s if moving_s is not None else elapsed_s
    attrs.update(workout_attributes(
        distance_km=distance_km, moving_min=None if duration_s is None else duration_s / 60,
        elapsed_min=None if elapsed_s is None else elapsed_s / 60, avg_hr=avg_hr, max_hr=max_hr,
        calories=calories, elevation_m=elevation))
    if effort is not None:
        attrs["relative_effort"] = round(effort)
    if commute is not None:
        attrs["commute"] = commute
    for key in ("gear", "description", "filename"):
        if cell(key):
            attrs[key] = cell(key)
    end = start + timedelta(seconds=elapsed_s) if elapsed_s and elapsed_s > 0 else None
    facts = []
    if distance_km is not None:
        facts.append(f"{distance_km:.2f} km")
    if duration_s is not None:
        facts.append(f"in {duration_s / 60:.0f} min")
    if elapsed_s is not None and moving_s is not None and abs(elapsed_s - moving_s) >= 60:
        facts.append(f"({elapsed_s / 60:.0f} min elapsed)")
    text = f"{activity} workout on Strava" + (f" \"{name}\"" if name else "")
    if facts:
        text += ": " + " ".join(facts)
    extra = []
    if avg_hr is not None:
        extra.append(f"average heart rate {avg_hr:.0f} bpm")
    if max_hr is not None:
        extra.append(f"max heart rate {max_hr:.0f} bpm")
    if calories is not None:
        extra.append(f"{calories:.0f} kcal")
    if commute:
        extra.append("a commute")
    if extra:
        text += ", " + ", ".join(extra)
    event = Event(
        source="strava", kind="workout", start=start, end=end, title=name or activity, text=text + ".",
        attributes=attrs, tz_offset_min=offset_minutes(start, zone), key=activity_id, locator=loc,
        raw=_raw(header, row),
    )
    return event, problems


def read_activities(entry: Entry) -> Iterator[Event | ImportIssue]:
    zone = entry.context.home_tz
    header: list[str] | None = None
    pos: dict[str, int] = {}
    for item in csv_rows(entry):
        if isinstance(item, ImportIssue):
            yield item
            continue
        line, row = item
        if header is None:
            header = [c.strip() for c in row]
            pos = column_positions(header)
            missing = [c for c in ("id", "date") if c not in pos]
            if missing:
                yield ImportIssue(f"line {line}", "not a Strava activities.csv header: no "
                                  + " or ".join({"id": "Activity ID", "date": "Activity Date"}[c] for c in missing)
                                  + " column (in English, German or French)")
                return
            continue
        loc = f"line {line}"
        if not any(c.strip() for c in row):
            continue
        if len(row) < len(header):
            yield ImportIssue(loc, f"the row has {len(row)} fields, the header {len(header)} "
                                   "(truncated or malformed row)")
            continue
        try:
            event, problems = _row_event(header, row, pos, loc, zone)
        except StravaFormatError as exc:
            yield ImportIssue(loc, str(exc))
            continue
        yield from problems
        yield event


IMPORTERS = (
    Importer(
        name="strava_activities", title="Strava activities", version="1", source="strava",
        recognize=_recognize, read=read_activities,
        description="activities.csv from the Strava bulk export (English, German, French headers)",
        # Activity files are named by their activity id ("1234567890.fit.gz").
        ignores=("[0-9]*.gpx", "[0-9]*.gpx.gz", "[0-9]*.fit", "[0-9]*.fit.gz", "[0-9]*.tcx", "[0-9]*.tcx.gz",
                 "profile.csv",
                 "bikes.csv", "shoes.csv", "components.csv", "media.csv", "comments.csv", "clubs.csv",
                 "followers.csv", "following.csv", "goals.csv", "global_challenges.csv",
                 "group_challenges.csv", "logins.csv", "contacts.csv", "connected_apps.csv",
                 "routes.csv", "segments.csv", "starred_routes.csv", "starred_segments.csv",
                 "reactions.csv", "email_preferences.csv", "general_preferences.csv",
                 "privacy_zones.csv", "memberships.csv", "local_legend_segments.csv",
                 "support_tickets.csv", "blocks.csv", "orders.csv", "partner_opt_outs.csv"),
    ),
)
