"""Google Takeout "My Activity" in JSON: ``My Activity/<Product>/MyActivity.json`` and its
localized twins (``Meine Aktivitäten/…/MeineAktivitäten.json``, ``Mon activité/…``). The
folder and file names change with the account language, so the file is recognized by
its content: a JSON array of objects with ``header``, ``title``, ``time``, ``products``.

Each item becomes one event:

* searches ("Searched for X", "Gesucht nach: X", "Vous avez recherché X"...) -> ``search``
  with the ``query``;
* YouTube watches ("Watched X", "Angesehen: X", "Vous avez regardé X"...) -> ``video_watch``
  with the ``video`` and the ``channel`` (from ``subtitles``);
* everything else (visits, app use, Maps views, Google Ads impressions) -> ``web_activity``
  with the ``product``.

Times are UTC; the local offset comes from the user's home zone. The dedup key is
time + title + products, as the issue names it.

The HTML variant (``MyActivity.html``, Takeout's default) and ``archive_browser.html``
are listed in ``ignores``; this module must not try to scrape HTML. Calendar ``.ics`` and
Mail ``.mbox`` files are other importers' business.
"""
from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterator
from datetime import datetime
from urllib.parse import parse_qs, urlsplit

import orjson

from importers._json import iter_objects
from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes

log = logging.getLogger(__name__)

SOURCE = "takeout"
_RAW_LIMIT = 4000

# Title prefixes seen in real exports, per language. Order matters: longer first.
_SEARCH_PREFIXES = (
    "Searched for ",                       # en
    "Gesucht nach: ", "Gesucht nach ",     # de
    "Vous avez recherché ", "Recherche effectuée : ", "Recherche effectuée: ", "Recherche : ",  # fr
    "Has buscado ",                        # es
)
_WATCH_PREFIXES = (
    "Watched ",                            # en
    "Angesehen: ", "Angesehen ",           # de
    "Vous avez regardé ", "A regardé ",    # fr
    "Has visto ",                          # es
)
_WATCH_SUFFIXES = (" angesehen",)          # de, older phrasing: "<video> angesehen"
_VISIT_PREFIXES = (
    "Visited ", "Besucht: ", "Vous avez consulté ", "Has visitado ",
)
_ADS_MARKERS = ("from google ads", "aus google ads", "von google ads", "provenant de google ads",
                "de google ads")
_NAME_RE = re.compile(r"^(my ?activity|meine ?aktivit(ä|ae)ten|mon ?activit(é|e)|mi ?actividad"
                      r"|la mia attivit(à|a)|mijn activiteit)\.json$", re.I)


class MyActivityTimeError(ValueError):
    pass


def _recognize(entry: Entry) -> float:
    head = entry.head.lstrip(b"\xef\xbb\xbf \t\r\n")
    name_match = bool(_NAME_RE.match(unicodedata.normalize("NFC", entry.basename)))
    if not head.startswith(b"["):
        return 0.0
    has_header = b'"header"' in head and b'"title"' in head
    has_more = any(k in head for k in (b'"products"', b'"time"', b'"titleUrl"', b'"activityControls"'))
    if has_header and has_more:
        return 0.9
    if name_match:
        return 0.85 if has_header or head.rstrip() in (b"[", b"[]") or len(head) < 8 else 0.55
    return 0.0


def parse_time(value) -> datetime:
    """Takeout's ISO time ('2023-03-26T08:15:30.123Z'), nanoseconds trimmed."""
    if not isinstance(value, str) or not value:
        raise MyActivityTimeError(f"missing or non-text time {value!r}")
    text = value.strip()
    try:
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:  # maybe nanoseconds, which Python does not parse: trim to micro
            dt = datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", text))
    except ValueError:
        raise MyActivityTimeError(f"not an ISO time: {value!r}") from None
    dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt
    if not 1990 <= dt.year <= 2100:  # far-off years are broken values and overflow in UTC
        raise MyActivityTimeError(f"implausible time {value!r}")
    return dt


def _strip_prefix(title: str, prefixes: tuple[str, ...]) -> str | None:
    for p in prefixes:
        if title.startswith(p):
            return title[len(p):].strip()
    return None


def _query_from_url(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    qs = parse_qs(parts.query)
    for k in ("q", "search_query", "query"):
        if qs.get(k):
            return qs[k][0]
    return None


def _text_list(items, key: str = "name") -> list[str]:
    if not isinstance(items, list):
        return []
    return [str(i.get(key)) for i in items if isinstance(i, dict) and i.get(key)]


def _event(rec: dict, loc: str, zone) -> Event | ImportIssue:
    title = rec.get("title")
    if not isinstance(title, str) or not title.strip():
        return ImportIssue(loc, "missing 'title'")
    try:
        start = parse_time(rec.get("time"))
    except MyActivityTimeError as exc:
        return ImportIssue(loc, str(exc))
    title = title.strip()
    products = [p for p in rec.get("products") or [] if isinstance(p, str)] \
        if isinstance(rec.get("products"), list) else []
    header = rec.get("header") if isinstance(rec.get("header"), str) else ""
    product = products[0] if products else header or "Google"
    url = rec.get("titleUrl") if isinstance(rec.get("titleUrl"), str) else ""
    details = _text_list(rec.get("details"))
    from_ads = any(d.lower().strip() in _ADS_MARKERS for d in details)
    subtitles = rec.get("subtitles") if isinstance(rec.get("subtitles"), list) else []
    attrs: dict = {"product": product}
    if header and header != product:
        attrs["header"] = header
    if url:
        attrs["url"] = url
    places = _text_list(rec.get("locationInfos"))
    if places:
        attrs["location"] = places[0]
    if details:
        attrs["details"] = details

    query = _strip_prefix(title, _SEARCH_PREFIXES)
    watched = _strip_prefix(title, _WATCH_PREFIXES)
    if watched is None:
        for suffix in _WATCH_SUFFIXES:
            if title.endswith(suffix) and len(title) > len(suffix):
                watched = title[: -len(suffix)].strip()
    visited = _strip_prefix(title, _VISIT_PREFIXES)
    if query is None and url and "search" in url and watched is None and visited is None:
        query = _query_from_url(url)  # other languages: the search URL still carries q=

    if from_ads:
        kind, activity = "web_activity", "ad"
        attrs["from_ads"] = True
        text = f"Saw a Google Ads item in {product}: {title}."
    elif query is not None:
        kind, activity = "search", "searched"
        attrs["query"] = query
        text = f'Searched {"Google" if product == "Search" else product} for "{query}".'
    elif watched is not None:
        kind, activity = "video_watch", "watched"
        attrs["video"] = watched
        sub = next((s for s in subtitles if isinstance(s, dict) and s.get("name")), None)
        if sub is not None:
            attrs["channel"] = str(sub["name"])
            if isinstance(sub.get("url"), str):
                attrs["channel_url"] = sub["url"]
        text = f'Watched the {product} video "{watched}"'
        text += f" from the channel {attrs['channel']}." if "channel" in attrs else "."
    else:
        kind = "web_activity"
        activity = "visited" if visited is not None else "used"
        if visited is not None:
            attrs["page"] = visited
            text = f'Visited the page "{visited}" (from {product}).'
        else:
            text = f"{title} ({product})."
    attrs["activity"] = activity
    raw = orjson.dumps(rec).decode()
    if len(raw) > _RAW_LIMIT:
        raw = raw[:_RAW_LIMIT] + "…"
    return Event(source=SOURCE, kind=kind, start=start, title=title, text=text, attributes=attrs,
                 tz_offset_min=offset_minutes(start, zone),
                 key=f"{rec.get('time')}|{title}|{'/'.join(products) or header}",
                 locator=loc, raw=raw)


def read(entry: Entry) -> Iterator[Event | ImportIssue]:
    zone = entry.context.home_tz
    with entry.open() as f:
        for item in iter_objects(f):
            if isinstance(item, ImportIssue):
                yield item
                continue
            loc, rec = item
            yield _event(rec, loc, zone)


IMPORTERS = (
    Importer(
        name="takeout_my_activity", title="Google Takeout My Activity (JSON)", version="1",
        source=SOURCE, recognize=_recognize, read=read,
        description="My Activity/<Product>/MyActivity.json and localized names",
        ignores=("archive_browser.html", "MyActivity.html", "My Activity.html", "MeineAktivitäten.html",
                 "MonActivité.html", "Mon activité.html", "MiActividad.html", "Mi actividad.html",
                 # YouTube's own folder: the HTML twins of watch/search history (the JSON
                 # ones have the My Activity shape and are imported), and lists, not events
                 "watch-history.html", "search-history.html", "subscriptions.csv"),
    ),
)
