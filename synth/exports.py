"""Writes a simulated life as the real services' export files (see FORMATS.md):
Spotify extended history, Netflix ViewingActivity.csv, a Gmail Takeout mbox, a
Google Calendar .ics with RRULE/EXDATE/RECURRENCE-ID, Amazon Retail.OrderHistory,
Apple Health export.xml, Strava activities.csv, Markdown daily notes and a ChatGPT
conversations.json. Each writer records on every fact which file and record
express it.

Output must be byte-identical for the same life: every writer iterates in a fixed
order, draws from its own seeded RNG and never looks at the clock.
"""
from __future__ import annotations

import csv
import io
import json
import random
import uuid
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from email.header import Header
from email.utils import format_datetime, formataddr
from pathlib import Path
from xml.sax.saxutils import quoteattr
from zoneinfo import ZoneInfo

from synth import verbalize as vb
from synth.simulate import FOOTBALL_WEEKDAY, Fact, Life, hash_str
from synth.world import _b62

UTC = timezone.utc
COUNTRY_NAMES = {"DE": "Germany", "US": "United States", "FR": "France", "GB": "United Kingdom",
                 "ES": "Spain", "AU": "Australia", "PT": "Portugal", "JP": "Japan", "MX": "Mexico",
                 "IT": "Italy", "IS": "Iceland", "TH": "Thailand", "ZA": "South Africa", "CA": "Canada",
                 "GR": "Greece", "TR": "Turkey", "KR": "South Korea", "AR": "Argentina", "NL": "Netherlands",
                 "DK": "Denmark"}
SPOTIFY_CHUNK = 12_000

Writer = Callable[[Life, Path], list[Path]]


def _rng(life: Life, name: str) -> random.Random:
    return random.Random(f"{life.world.spec.seed}:{name}")


def _utc(dt: datetime) -> datetime:
    return dt.astimezone(UTC)


def _mark(fact: Fact, root: Path, path: Path, record: str) -> None:
    fact.exports.append({"file": path.relative_to(root).as_posix(), "record": record})


def _write_text(path: Path, text: str, newline: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline=newline) as f:
        f.write(text)
    return path


# --------------------------------------------------------------------------- Spotify
def write_spotify(life: Life, root: Path) -> list[Path]:
    rng = _rng(life, "spotify")
    plays = sorted((f for f in life.facts if "spotify" in f.via), key=lambda f: (f.end, f.id))
    by_year: dict[int, list[Fact]] = {}
    for f in plays:
        by_year.setdefault(_utc(f.end).year, []).append(f)
    out = []
    folder = root / "Spotify Extended Streaming History"
    for year in sorted(by_year):
        rows = by_year[year]
        for n in range(0, len(rows), SPOTIFY_CHUNK):
            path = folder / f"Streaming_History_Audio_{year}_{n // SPOTIFY_CHUNK}.json"
            records = []
            for i, f in enumerate(rows[n:n + SPOTIFY_CHUNK]):
                a = f.attrs
                music = f.kind == "music_play"
                ts = _utc(f.end).strftime("%Y-%m-%dT%H:%M:%SZ")
                skipped = bool(a.get("skipped"))
                records.append({
                    "ts": ts, "platform": a.get("platform", "iOS 16.5 (iPhone14,2)"),
                    "ms_played": a["ms_played"], "conn_country": a["country"],
                    "ip_addr": f"84.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                    "master_metadata_track_name": a["track"] if music else None,
                    "master_metadata_album_artist_name": a["artist"] if music else None,
                    "master_metadata_album_album_name": a["album"] if music else None,
                    "spotify_track_uri": a["uri"] if music else None,
                    "episode_name": None if music else a["episode"],
                    "episode_show_name": None if music else a["show"],
                    "spotify_episode_uri": None if music else f"spotify:episode:{_b62(hash_of(a['show'] + a['episode']))}",
                    "audiobook_title": None, "audiobook_uri": None, "audiobook_chapter_uri": None,
                    "audiobook_chapter_title": None,
                    "reason_start": "trackdone" if i and not skipped else rng.choice(("clickrow", "playbtn", "fwdbtn")),
                    "reason_end": "fwdbtn" if skipped else "trackdone",
                    "shuffle": rng.random() < 0.4, "skipped": skipped, "offline": False,
                    "offline_timestamp": int(_utc(f.start).timestamp() * 1000), "incognito_mode": False,
                })
                _mark(f, root, path, f"item {i + 1}")
            _write_text(path, json.dumps(records, indent=2, ensure_ascii=False))
            out.append(path)
    return out


def hash_of(s: str) -> int:
    return hash_str(s) * 1_000_003 + len(s)


# --------------------------------------------------------------------------- Netflix
def _hms(minutes: float) -> str:
    s = int(round(minutes * 60))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def write_netflix(life: Life, root: Path) -> list[Path]:
    rng = _rng(life, "netflix")
    views = sorted((f for f in life.facts if "netflix" in f.via), key=lambda f: (f.start, f.id), reverse=True)
    path = root / "Netflix" / "CONTENT_INTERACTION" / "ViewingActivity.csv"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["Profile Name", "Start Time", "Duration", "Attributes", "Title", "Supplemental Video Type",
                "Device Type", "Bookmark", "Latest Bookmark", "Country"])
    profile = life.world.spec.name.split(" ")[0]
    for i, f in enumerate(views):
        a = f.attrs
        title = f"{a['show']}: Season {a['season']}: {a['episode']} (Episode {a['episode_number']})"
        dur = _hms(a["duration_min"])
        w.writerow([profile, _utc(f.start).strftime("%Y-%m-%d %H:%M:%S"), dur,
                    "Autoplayed: user action: None; " if rng.random() < 0.3 else "", title, "",
                    a["device"], dur, "Not latest view" if rng.random() < 0.6 else dur,
                    f"{a['country']} ({COUNTRY_NAMES.get(a['country'], a['country'])})"])
        _mark(f, root, path, f"row {i + 2}")
    _write_text(path, buf.getvalue(), newline="")
    return [path]


# --------------------------------------------------------------------------- Mail
def _header(value: str) -> str:
    return value if value.isascii() else Header(value, "utf-8").encode()


def _when(dt: datetime) -> str:
    return f"{dt:%A}, {dt.day} {dt:%B} at {dt:%H:%M}"


def _mail_content(m: Fact, life: Life, rng: random.Random) -> tuple[str, str]:
    spec = life.world.spec
    me = spec.name.split(" ")[0]
    a = m.attrs
    about = m.about
    if about is not None:
        slots = vb.slots_for(about)
        slots.update(me=me, first=a["counterpart"].split(" ")[0], sender=me)
        if about.kind == "meal_out":
            slots["when"] = _when(about.start)
            pool = vb.MAIL["reservation" if a["topic"] == "reservation" else "restaurant"]
        elif about.kind == "purchase":
            items = [f for f in life.facts if f.kind == "purchase" and f.attrs["order_id"] == about.attrs["order_id"]]
            slots["items"] = "\n".join(f"  {f.attrs['quantity']} x {f.attrs['product']} – {f.attrs['amount']:.2f} {f.attrs['currency']}"
                                       for f in items)
            slots["total"] = f"{sum(f.attrs['amount'] for f in items):.2f}"
            pool = vb.MAIL["order"]
        else:
            slots["out"] = f"{about.start:%d %b %Y}"
            slots["back"] = f"{about.end:%d %b %Y}"
            slots["country"] = COUNTRY_NAMES.get(about.attrs["country"], about.attrs["country"])
            pool = vb.MAIL["booking"]
        subject, body = rng.choice(pool)
        return vb.render(subject, slots)[0], vb.render(body, slots)[0]
    slots = {"me": me, "first": a["counterpart"].split(" ")[0] if a["direction"] == "sent" else me,
             "sender": me if a["direction"] == "sent" else a["counterpart"].split(" ")[0]}
    subject, body = rng.choice(vb.PLAIN_MAIL[a["topic"]])
    return subject, body.format(**slots)


def write_mail(life: Life, root: Path) -> list[Path]:
    rng = _rng(life, "mail")
    spec = life.world.spec
    mails = sorted((f for f in life.facts if f.kind == "email"), key=lambda f: (f.start, f.id))
    path = root / "Takeout" / "Mail" / "All mail Including Spam and Trash.mbox"
    parts: list[str] = []
    for m in mails:
        a = m.attrs
        subject, body = _mail_content(m, life, rng)
        a["subject"] = subject
        sent = a["direction"] == "sent"
        own = formataddr((spec.name, spec.email), charset="utf-8")
        other = formataddr((a["counterpart"], a["counterpart_email"]), charset="utf-8")
        labels = "Sent" if sent else rng.choice(("Inbox,Opened", "Opened,Inbox", "Archived,Opened"))
        if a["topic"] == "newsletter":
            labels = "Category Promotions,Opened"
        elif a["topic"] in ("order", "booking", "reservation"):
            labels = "Inbox,Opened,Category Updates"
        msg_id = f"<{m.id}.{rng.getrandbits(40):010x}@{'mail.gmail.com' if sent else a['counterpart_email'].split('@')[1]}>"
        thrid = str(1_700_000_000_000_000_000 + rng.getrandbits(50))
        utc = _utc(m.start)
        lines = [
            f"From {thrid}@xxx {utc:%a %b %d %H:%M:%S} +0000 {utc:%Y}",
            f"X-GM-THRID: {thrid}",
            f"X-Gmail-Labels: {labels}",
            f"Delivered-To: {spec.email}" if not sent else "MIME-Version: 1.0",
            f"Date: {format_datetime(m.start)}",
            f"Message-ID: {msg_id}",
            f"Subject: {_header(subject)}",
            f"From: {own if sent else other}",
            f"To: {other if sent else own}",
            'Content-Type: text/plain; charset="UTF-8"',
            "Content-Transfer-Encoding: 8bit",
            "",
        ]
        for line in body.split("\n"):
            # mboxo: a body line that looks like a separator gets quoted
            lines.append(">" + line if line.startswith("From ") or line.startswith(">From ") else line)
        lines.append("")
        parts.append("\n".join(lines) + "\n")
        _mark(m, root, path, msg_id)
        if m.about is not None:
            related = [m.about] if m.about.kind != "purchase" else [
                f for f in life.facts if f.kind == "purchase" and f.attrs["order_id"] == m.about.attrs["order_id"]]
            for f in related:
                _mark(f, root, path, msg_id)
    _write_text(path, "".join(parts))
    return [path]


# --------------------------------------------------------------------------- Calendar
def _ics_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,").replace("\n", "\\n")


def _fold(line: str) -> str:
    """RFC 5545: lines longer than 75 octets continue on the next line after a space."""
    raw = line.encode("utf-8")
    if len(raw) <= 75:
        return line
    out, cur, size = [], "", 0
    for ch in line:
        n = len(ch.encode("utf-8"))
        if size + n > (75 if not out else 74):
            out.append(cur)
            cur, size = "", 0
        cur += ch
        size += n
    out.append(cur)
    return "\r\n ".join(out)


def _z(dt: datetime) -> str:
    return _utc(dt).strftime("%Y%m%dT%H%M%SZ")


def _local(dt: datetime) -> str:
    return dt.strftime("%Y%m%dT%H%M%S")


def write_calendar(life: Life, root: Path) -> list[Path]:
    rng = _rng(life, "calendar")
    spec = life.world.spec
    home = spec.home_tz
    path = root / "Takeout" / "Calendar" / f"{spec.email}.ics"
    stamp = datetime.combine(life.end, datetime.min.time(), tzinfo=UTC)
    until = _z(datetime.combine(life.end, datetime.min.time(), tzinfo=ZoneInfo(home)))
    lines = ["BEGIN:VCALENDAR", "PRODID:-//Google Inc//Google Calendar 70.9054//EN", "VERSION:2.0",
             "CALSCALE:GREGORIAN", "METHOD:PUBLISH", f"X-WR-CALNAME:{spec.email}", f"X-WR-TIMEZONE:{home}"]

    def event(uid: str, props: list[str]) -> None:
        lines.extend(["BEGIN:VEVENT", *props, f"DTSTAMP:{_z(stamp)}", f"UID:{uid}", "STATUS:CONFIRMED",
                      "END:VEVENT"])

    def uid_for(label: str) -> str:
        return f"{uuid.UUID(int=rng.getrandbits(128)).hex[:26]}{label}@google.com"

    # Recurring series: football (if the persona plays) and the weekly team meeting.
    series = [("football", "Football", FOOTBALL_WEEKDAY, 19, 0, 90, life.football_skips, life.football_moves),
              ("meeting", "Team weekly", 0, 10, 0, 60, life.meeting_skips, {})]
    for label, summary, weekday, hour, minute, mins, skips, moves in series:
        if label == "football" and "football" not in spec.sports:
            continue
        instances = sorted((f for f in life.facts if "calendar" in f.via and
                            (f.kind == "meeting" if label == "meeting" else f.attrs.get("sport") == "football")),
                           key=lambda f: f.start)
        if not instances:
            continue
        first = life.start + timedelta(days=(weekday - life.start.weekday()) % 7)
        dtstart = datetime(first.year, first.month, first.day, hour, minute, tzinfo=ZoneInfo(home))
        uid = uid_for(label)
        props = [f"DTSTART;TZID={home}:{_local(dtstart)}",
                 f"DTEND;TZID={home}:{_local(dtstart + timedelta(minutes=mins))}",
                 f"RRULE:FREQ=WEEKLY;WKST=MO;UNTIL={until};BYDAY={('MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU')[weekday]}"]
        for d in sorted(skips):
            props.append(f"EXDATE;TZID={home}:{d:%Y%m%d}T{hour:02d}{minute:02d}00")
        if label == "football":
            roster = instances[0].attrs["people"]
            desc = rng.choice(vb.CALENDAR_FOOTBALL).format(place=life.world.parks[0]) + \
                "\nPlayers: " + ", ".join(roster)
            props += [f"SUMMARY:{_ics_escape(summary)}", f"DESCRIPTION:{_ics_escape(desc)}",
                      f"LOCATION:{_ics_escape(life.world.parks[0])}"]
        else:
            props += [f"SUMMARY:{summary}", "DESCRIPTION:Weekly sync: status\\, blockers\\, plans.",
                      f"ORGANIZER;CN={_ics_escape(life.world.colleagues[0].name)}:mailto:{life.world.colleagues[0].email}"]
            props += [f"ATTENDEE;CN={_ics_escape(p.name)};PARTSTAT=ACCEPTED:mailto:{p.email}"
                      for p in life.world.colleagues[:5]]
        props.append(f"CREATED:{_z(dtstart - timedelta(days=3))}")
        event(uid, props)
        for f in instances:
            moved_from = next((d for d, t in moves.items() if t == f.start), None)
            rid = _local(datetime(moved_from.year, moved_from.month, moved_from.day, hour, minute)) if moved_from \
                else _local(f.start.astimezone(ZoneInfo(home)))
            _mark(f, root, path, f"{uid} {rid}")
            if moved_from is not None:
                event(uid, [f"RECURRENCE-ID;TZID={home}:{rid}", f"DTSTART;TZID={home}:{_local(f.start)}",
                            f"DTEND;TZID={home}:{_local(f.end)}", f"SUMMARY:{summary} (moved)",
                            f"DESCRIPTION:Pitch was booked\\, moved to {f.start:%A}."])

    # Birthdays: yearly all-day series, bounded to the life so every instance is a fact.
    by_person: dict[str, list[Fact]] = {}
    for f in life.facts:
        if f.kind == "birthday":
            by_person.setdefault(f.attrs["person"], []).append(f)
    for person, facts in by_person.items():
        facts.sort(key=lambda f: f.start)
        uid = uid_for("bday")
        d0 = facts[0].start.date()
        event(uid, [f"DTSTART;VALUE=DATE:{d0:%Y%m%d}", f"DTEND;VALUE=DATE:{d0 + timedelta(days=1):%Y%m%d}",
                    f"RRULE:FREQ=YEARLY;UNTIL={life.end:%Y%m%d}",
                    f"SUMMARY:{_ics_escape(person)}'s birthday", "TRANSP:TRANSPARENT"])
        for f in facts:
            _mark(f, root, path, f"{uid} {f.start:%Y%m%d}")

    # Single events.
    for f in sorted((f for f in life.facts if "calendar" in f.via and f.kind in ("meal_out", "appointment", "trip")),
                    key=lambda f: (f.start, f.id)):
        uid = uid_for("")
        a = f.attrs
        if f.kind == "trip":
            props = [f"DTSTART;VALUE=DATE:{f.start:%Y%m%d}",
                     f"DTEND;VALUE=DATE:{f.end.date() + timedelta(days=1):%Y%m%d}",
                     f"SUMMARY:{_ics_escape(rng.choice(('Trip to ', '✈ ', 'Holiday: ')) + a['city'])}",
                     f"DESCRIPTION:{_ics_escape('With ' + vb.natural_list(a['people']))}",
                     f"LOCATION:{_ics_escape(a['city'] + ', ' + COUNTRY_NAMES.get(a['country'], a['country']))}",
                     "TRANSP:TRANSPARENT"]
        elif f.kind == "meal_out":
            summary, desc = rng.choice(vb.CALENDAR_MEAL)
            slots = vb.slots_for(f)
            props = [f"DTSTART:{_z(f.start)}", f"DTEND:{_z(f.end)}",
                     f"SUMMARY:{_ics_escape(vb.render(summary, slots)[0])}",
                     f"DESCRIPTION:{_ics_escape(vb.render(desc, slots)[0])}",
                     f"LOCATION:{_ics_escape(a['restaurant'] + ', ' + a['address'] + ', ' + a['city'])}"]
        else:
            props = [f"DTSTART:{_z(f.start)}", f"DTEND:{_z(f.end)}", f"SUMMARY:{_ics_escape(a['title'])}",
                     f"LOCATION:{_ics_escape(a['place'])}"]
        event(uid, props)
        _mark(f, root, path, uid)
    lines.append("END:VCALENDAR")
    _write_text(path, "\r\n".join(_fold(line) for line in lines) + "\r\n", newline="")
    return [path]


# --------------------------------------------------------------------------- Amazon
AMAZON_COLUMNS = ["Website", "Order ID", "Order Date", "Purchase Order Number", "Currency", "Unit Price",
                  "Unit Price Tax", "Shipping Charge", "Total Discounts", "Total Owed", "Shipment Item Subtotal",
                  "Shipment Item Subtotal Tax", "ASIN", "Product Condition", "Quantity", "Payment Instrument Type",
                  "Order Status", "Shipment Status", "Ship Date", "Shipping Option", "Shipping Address",
                  "Billing Address", "Carrier Name & Tracking Number", "Product Name", "Gift Message",
                  "Gift Sender Name", "Gift Recipient Contact Details", "Item Serial Number"]
_AMAZON_SITE = {"EUR": "Amazon.de", "USD": "Amazon.com", "GBP": "Amazon.co.uk", "AUD": "Amazon.com.au"}
_VAT = {"EUR": 0.19, "USD": 0.0, "GBP": 0.2, "AUD": 0.1}


def write_amazon(life: Life, root: Path) -> list[Path]:
    rng = _rng(life, "amazon")
    spec = life.world.spec
    rows = sorted((f for f in life.facts if "amazon" in f.via), key=lambda f: (f.start, f.id), reverse=True)
    path = root / "Retail.OrderHistory.1" / "Retail.OrderHistory.1.csv"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
    w.writerow(AMAZON_COLUMNS)
    address = f"{spec.name} {life.world.restaurants[spec.home_city][0].street} {spec.home_city}"
    vat = _VAT.get(spec.currency, 0.0)
    for i, f in enumerate(rows):
        a = f.attrs
        net = round(a["unit_price"] / (1 + vat), 2)
        tax = round(a["unit_price"] - net, 2)
        utc = _utc(f.start)
        w.writerow([_AMAZON_SITE.get(spec.currency, "Amazon.com"), a["order_id"], utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "Not Applicable", spec.currency, f"{net:.2f}", f"{tax:.2f}", "0", "0", f"{a['amount']:.2f}",
                    f"{net * a['quantity']:.2f}", f"{tax * a['quantity']:.2f}", a["asin"], "New", str(a["quantity"]),
                    "Visa - 4242", "Closed", "Shipped", (utc + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "std-de-dom" if spec.currency == "EUR" else "standard", address, address,
                    f"DHL({rng.randrange(10**11, 10**12)})", a["product"], "Not Available", "Not Available",
                    "Not Available", "Not Available"])
        _mark(f, root, path, f"{a['order_id']} {a['asin']}")
    _write_text(path, "\ufeff" + buf.getvalue(), newline="")
    return [path]


# --------------------------------------------------------------------------- Apple Health
_HK_WORKOUT = {"running": "Running", "cycling": "Cycling", "swimming": "Swimming", "yoga": "Yoga",
               "strength": "TraditionalStrengthTraining", "football": "Soccer"}
_HK_DISTANCE = {"running": "DistanceWalkingRunning", "cycling": "DistanceCycling", "swimming": "DistanceSwimming"}


def _hk_date(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S %z")


def write_health(life: Life, root: Path) -> list[Path]:
    spec = life.world.spec
    first = spec.name.split(" ")[0]
    path = root / "apple_health_export" / "export.xml"
    phone = f"{first}’s iPhone"
    watch = f"{first}’s Apple Watch"
    device = quoteattr("<<HKDevice: 0x283f8a120>, name:Apple Watch, manufacturer:Apple Inc., model:Watch, "
                       "hardware:Watch6,2, software:9.5>")
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           "<!DOCTYPE HealthData [", "<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord)*)>",
           "<!ATTLIST HealthData locale CDATA #REQUIRED>", "]>",
           f'<HealthData locale="{spec.locale}">',
           f' <ExportDate value="{life.end:%Y-%m-%d} 09:00:00 +0000"/>',
           ' <Me HKCharacteristicTypeIdentifierDateOfBirth="1990-05-17" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexNotSet" '
           'HKCharacteristicTypeIdentifierBloodType="HKBloodTypeNotSet" HKCharacteristicTypeIdentifierFitzpatrickSkinType="HKFitzpatrickSkinTypeNotSet" '
           'HKCharacteristicTypeIdentifierCardioFitnessMedicationsUse="None"/>']
    facts = sorted((f for f in life.facts if "health" in f.via), key=lambda f: (f.kind != "steps", f.start, f.id))
    for f in facts:
        a = f.attrs
        if f.kind == "steps":
            created = _hk_date(f.end + timedelta(minutes=1))
            out.append(f' <Record type="HKQuantityTypeIdentifierStepCount" sourceName={quoteattr(phone)} sourceVersion="16.5" '
                       f'unit="count" creationDate="{created}" startDate="{_hk_date(f.start)}" endDate="{_hk_date(f.end)}" '
                       f'value="{a["steps"]}"/>')
            _mark(f, root, path, f"StepCount {f.start:%Y-%m-%d}")
            continue
        s, e = _hk_date(f.start), _hk_date(f.end)
        out.append(f' <Workout workoutActivityType="HKWorkoutActivityType{_HK_WORKOUT[a["sport"]]}" duration="{a["duration_min"]:.4f}" '
                   f'durationUnit="min" sourceName={quoteattr(watch)} sourceVersion="9.5" device={device} '
                   f'creationDate="{e}" startDate="{s}" endDate="{e}">')
        out.append(f'  <MetadataEntry key="HKIndoorWorkout" value="{1 if a["sport"] in ("yoga", "strength", "swimming") else 0}"/>')
        out.append(f'  <MetadataEntry key="HKTimeZone" value="{f.tz}"/>')
        out.append(f'  <WorkoutStatistics type="HKQuantityTypeIdentifierActiveEnergyBurned" startDate="{s}" endDate="{e}" '
                   f'sum="{a["calories"]}" unit="kcal"/>')
        if a["sport"] in _HK_DISTANCE:
            out.append(f'  <WorkoutStatistics type="HKQuantityTypeIdentifier{_HK_DISTANCE[a["sport"]]}" startDate="{s}" '
                       f'endDate="{e}" sum="{a["distance_km"]:.2f}" unit="km"/>')
        out.append(f'  <WorkoutStatistics type="HKQuantityTypeIdentifierHeartRate" startDate="{s}" endDate="{e}" '
                   f'average="{a["avg_hr"]}" minimum="{a["avg_hr"] - 35}" maximum="{a["avg_hr"] + 22}" unit="count/min"/>')
        out.append(" </Workout>")
        _mark(f, root, path, f"Workout {s}")
    out.append("</HealthData>")
    _write_text(path, "\n".join(out) + "\n")
    return [path]


# --------------------------------------------------------------------------- Strava
STRAVA_COLUMNS = ["Activity ID", "Activity Date", "Activity Name", "Activity Type", "Activity Description",
                  "Elapsed Time", "Distance", "Max Heart Rate", "Relative Effort", "Commute",
                  "Activity Private Note", "Activity Gear", "Filename", "Athlete Weight", "Bike Weight",
                  "Elapsed Time", "Moving Time", "Distance", "Max Speed", "Average Speed", "Elevation Gain",
                  "Elevation Loss", "Elevation Low", "Elevation High", "Max Grade", "Average Grade",
                  "Max Cadence", "Average Cadence", "Max Heart Rate", "Average Heart Rate", "Max Watts",
                  "Average Watts", "Calories", "Max Temperature", "Average Temperature", "Relative Effort",
                  "Total Work", "Perceived Exertion", "Weather Observation Time", "Weather Condition",
                  "Weather Temperature", "Apparent Temperature", "Humidity", "Wind Speed"]
_STRAVA_TYPE = {"running": ("Run", "Run"), "cycling": ("Ride", "Ride"), "swimming": ("Swim", "Swim")}


def _strava_date(dt: datetime) -> str:
    u = _utc(dt)
    return f"{u:%b} {u.day}, {u.year}, {u.hour % 12 or 12}:{u:%M:%S} {'AM' if u.hour < 12 else 'PM'}"


def write_strava(life: Life, root: Path) -> list[Path]:
    rng = _rng(life, "strava")
    rows = sorted((f for f in life.facts if "strava" in f.via), key=lambda f: (f.start, f.id))
    path = root / "Strava" / "activities.csv"
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(STRAVA_COLUMNS)
    act_id = 4_000_000_000 + rng.randrange(10**8)
    for f in rows:
        a = f.attrs
        act_id += rng.randint(1000, 90000)
        kind, word = _STRAVA_TYPE[a["sport"]]
        h = f.start.hour
        part = "Morning" if h < 12 else "Afternoon" if h < 17 else "Evening"
        secs = int(round(a["duration_min"] * 60))
        moving = int(secs * rng.uniform(0.9, 0.99))
        dist_m = a["distance_km"] * 1000
        max_hr = a["avg_hr"] + rng.randint(12, 25)
        effort = int(secs / 60 * 0.9)
        name = rng.choice((f"{part} {word}", f"{part} {word}", f"{word} with {a['people'][0].split(' ')[0]}" if a["people"] else f"{part} {word}"))
        w.writerow([act_id, _strava_date(f.start), name, kind, "", secs, f"{a['distance_km']:.2f}", f"{max_hr}.0",
                    effort, "false", "", "", "", "", "", f"{secs}.0", f"{moving}.0", f"{dist_m:.1f}",
                    f"{dist_m / moving * 1.6:.3f}", f"{dist_m / moving:.3f}", f"{rng.uniform(10, 300):.1f}",
                    f"{rng.uniform(10, 300):.1f}", "", "", "", "", "", "", f"{max_hr}.0", f"{a['avg_hr']}.0",
                    "", "", f"{a['calories']}.0", "", "", f"{effort}.0", "", "", "", "", "", "", "", ""])
        _mark(f, root, path, str(act_id))
    _write_text(path, buf.getvalue(), newline="")
    return [path]


# --------------------------------------------------------------------------- Journal
def write_journal(life: Life, root: Path) -> list[Path]:
    rng = _rng(life, "journal")
    notes = sorted((f for f in life.facts if f.kind == "journal_note"), key=lambda f: f.start)
    out = []
    for note in notes:
        day = note.start.date()
        path = root / "journal" / f"{day.isoformat()}.md"
        mentioned = sorted(life.journal_days.get(day, []), key=lambda f: f.start)
        sentences = []
        if note.attrs.get("city"):
            sentences.append(rng.choice((f"Still in {note.attrs['city']}.", f"Day in {note.attrs['city']}.",
                                         f"{note.attrs['city']} again today.")))
        for f in mentioned:
            sentences.append(vb.journal_sentence(f, rng)[0])
            _mark(f, root, path, path.name)
        for _ in range(rng.randint(0 if mentioned else 1, 2)):
            sentences.insert(rng.randint(0, len(sentences)), vb.filler_sentence(rng, note.attrs["mood"]))
        heading = rng.choice((f"# {day:%A}, {day.day} {day:%B} {day.year}", f"# {day.isoformat()}", ""))
        body = " ".join(sentences)
        if rng.random() < 0.3 and len(sentences) > 2:
            body = "\n".join(f"- {s}" for s in sentences)
        _write_text(path, (heading + "\n\n" if heading else "") + body + "\n")
        _mark(note, root, path, path.name)
        out.append(path)
    return out


# --------------------------------------------------------------------------- ChatGPT
_CHAT = {
    "travel": (("Trip to {s}: 5 day itinerary", "I'm going to {s} soon. Can you suggest a 5 day itinerary?"),
               ("{s} food tips", "What should I eat in {s}? Local dishes please."),
               ("Packing list {s}", "What should I pack for a week in {s}?")),
    "cooking": (("{s} recipe ideas", "Give me an easy {s} recipe for a weeknight."),
                ("Homemade {s} dinner", "How do I cook a {s} dinner for four people?")),
    "fitness": (("{s} training plan", "Can you make me a 6 week {s} plan?"),
                ("Sore after {s}", "My legs hurt after {s}, what helps?")),
    "work": (("Help with {s}", "I'm stuck with {s}. How do I group rows by month?"),
             ("{s} question", "Explain {s} like I'm new to it.")),
    "gifts": (("Gift for {s}", "Birthday gift ideas for {s}? Budget about 50."),),
    "language": (("Learning {s}", "What are the 20 most useful {s} phrases?"),),
    "home": (("{s} help", "Any tips about {s}?"),),
}


def write_chatgpt(life: Life, root: Path) -> list[Path]:
    rng = _rng(life, "chatgpt")
    chats = sorted((f for f in life.facts if "chatgpt" in f.via), key=lambda f: (f.start, f.id), reverse=True)
    path = root / "ChatGPT" / "conversations.json"

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    convs = []
    for f in chats:
        a = f.attrs
        title, prompt = rng.choice(_CHAT[a["topic"]])
        title, prompt = title.format(s=a["subject"]), prompt.format(s=a["subject"])
        a["title"] = title
        t = _utc(f.start).timestamp()
        mapping: dict[str, dict] = {}
        root_id = "client-created-root"
        mapping[root_id] = {"id": root_id, "message": None, "parent": None, "children": []}

        def node(parent: str, role: str, text: str, when: float | None) -> str:
            nid = new_id()
            mapping[nid] = {"id": nid, "message": {
                "id": nid, "author": {"role": role, "name": None, "metadata": {}}, "create_time": when,
                "update_time": None, "content": {"content_type": "text", "parts": [text]},
                "status": "finished_successfully", "end_turn": role == "assistant" or None, "weight": 1.0,
                "metadata": {"is_visually_hidden_from_conversation": True} if role == "system" else
                {"model_slug": "gpt-4o"} if role == "assistant" else {},
                "recipient": "all", "channel": None}, "parent": parent, "children": []}
            mapping[parent]["children"].append(nid)
            return nid

        cur = node(root_id, "system", "", None)
        when = t
        for turn in range(a["turns"]):
            ask = prompt if turn == 0 else rng.choice(("Can you make it shorter?", "Thanks! And a cheaper option?",
                                                       "What about on a rainy day?", "Can you explain step 2?"))
            cur = node(cur, "user", ask, when)
            when += rng.uniform(5, 40)
            if a["branched"] and turn == a["turns"] - 1:
                node(cur, "assistant", f"Here are some ideas about {a['subject']} (first draft).", when)
                when += rng.uniform(5, 40)
            cur = node(cur, "assistant", f"Sure – here is what I would suggest about {a['subject']}: start small, "
                                         f"then build on it. Step 1 … Step 2 … Step 3 …", when)
            when += rng.uniform(30, 120)
        convs.append({"title": title, "create_time": t, "update_time": when, "mapping": mapping,
                      "moderation_results": [], "current_node": cur, "plugin_ids": None,
                      "conversation_id": (cid := new_id()), "conversation_template_id": None, "gizmo_id": None,
                      "is_archived": False, "safe_urls": [], "default_model_slug": "gpt-4o", "id": cid})
        _mark(f, root, path, cid)
    _write_text(path, json.dumps(convs, ensure_ascii=False))
    return [path]


WRITERS: dict[str, Writer] = {
    "spotify": write_spotify, "netflix": write_netflix, "mail": write_mail, "calendar": write_calendar,
    "amazon": write_amazon, "health": write_health, "strava": write_strava, "journal": write_journal,
    "chatgpt": write_chatgpt,
}


def write_all(life: Life, root: Path, sources: tuple[str, ...] | None = None) -> dict[str, list[str]]:
    """Write every export (or only ``sources``); returns source -> relative paths."""
    out: dict[str, list[str]] = {}
    for name, writer in WRITERS.items():
        if sources is not None and name not in sources:
            continue
        out[name] = [p.relative_to(root).as_posix() for p in writer(life, root)]
    return out
