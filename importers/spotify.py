"""Spotify listening history: the extended streaming history
(``Streaming_History_Audio_*.json``, ``Streaming_History_Video_*.json``, older
``endsong_N.json``) and the basic account-data history (``StreamingHistory*.json``,
``StreamingHistory_music_N.json``, ``StreamingHistory_podcast_N.json``).

Spotify's timestamps are the UTC *end* of a play; start = end - ms_played. Spotify
gives no local offset, so the user's home zone is applied per timestamp.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

import orjson

from importers._json import iter_objects
from importers.base import UTC, Entry, Event, EventBatch, ImportContext, Importer, ImportIssue, LocalOffsets

_EXTENDED_NAME = re.compile(r"^(streaming_history_(audio|video)_.*|endsong_\d+)\.json$", re.I)
_BASIC_NAME = re.compile(r"^streaminghistory(_music|_podcast)?_?\d*\.json$", re.I)

# Fields copied into attributes when present (renamed to what a person would ask about).
_EXTENDED_FIELDS = {
    "platform": "platform",
    "conn_country": "country",
    "reason_start": "reason_start",
    "reason_end": "reason_end",
    "shuffle": "shuffle",
    "skipped": "skipped",
    "offline": "offline",
    "incognito_mode": "incognito_mode",
}


def _recognize_extended(entry: Entry) -> float:
    head = entry.head
    has_fields = b'"ms_played"' in head or b'"spotify_track_uri"' in head or b'"master_metadata' in head
    if _EXTENDED_NAME.match(entry.basename):
        return 0.95 if has_fields or not head.strip() else 0.6
    return 0.85 if has_fields and head.lstrip().startswith(b"[") else 0.0


def _recognize_basic(entry: Entry) -> float:
    head = entry.head
    has_fields = b'"msPlayed"' in head and b'"endTime"' in head
    if _BASIC_NAME.match(entry.basename):
        return 0.95 if has_fields or not head.strip() else 0.6
    return 0.8 if has_fields and head.lstrip().startswith(b"[") else 0.0


def _duration_text(ms: int) -> str:
    s = max(int(ms) // 1000, 0)
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s} s"
    h, m = divmod(m, 60)
    return f"{h} h {m} min"


def read_extended(entry: Entry) -> Iterator[Event | ImportIssue]:
    for item in read_extended_batches(entry):
        if isinstance(item, ImportIssue):
            yield item
        else:
            yield from item.events()


def read_extended_batches(entry: Entry, size: int = 20_000) -> Iterator[EventBatch | ImportIssue]:
    """The extended history as batches of about ``size`` events."""
    with entry.open() as f:
        yield from extended_batches(iter_objects(f, reopen=entry.open), entry.context, size)


def extended_batches(items: Iterable[tuple[str, dict] | ImportIssue], context: ImportContext,
                     size: int = 20_000) -> Iterator[EventBatch | ImportIssue]:
    """Batches of about ``size`` events from the history's records as
    :func:`importers._json.iter_objects` yields them (the pipeline may hand over a
    part of the file at a time). This is the hot path of the largest exports people
    have (a million plays), hence the locals."""
    local_offset = LocalOffsets(context.home_tz)
    fields = tuple(_EXTENDED_FIELDS.items())
    fromisoformat, to_ms, dumps = datetime.fromisoformat, timedelta, orjson.dumps
    durations: dict[int, str] = {}  # plays repeat lengths: text per second, made once
    batch = EventBatch("spotify")
    b_kind, b_title, b_text, b_start, b_end, b_tz, b_attrs, b_key, b_loc, b_raw = batch.columns()
    try:
        for item in items:
            if isinstance(item, ImportIssue):
                yield item
                continue
            loc, rec = item
            try:
                ts = rec["ts"]
                end = fromisoformat(ts)
                ms = int(rec.get("ms_played") or 0)
            except KeyError as exc:
                yield ImportIssue(loc, f"missing field {exc.args[0]!r}")
                continue
            except (TypeError, ValueError) as exc:
                yield ImportIssue(loc, f"bad timestamp or ms_played: {exc}")
                continue
            if ms < 0:
                yield ImportIssue(loc, f"negative ms_played {ms}")
                continue
            if end.tzinfo is None:
                end = end.replace(tzinfo=UTC)
            try:
                start = end - to_ms(0, 0, 0, ms)  # positional: milliseconds
            except OverflowError:
                yield ImportIssue(loc, f"ms_played {ms} reaches before year 1")
                continue
            get = rec.get
            attrs: dict = {"ms_played": ms, "minutes_played": round(ms / 60000, 2)}
            for src, dst in fields:  # a loop, not a comprehension: no call per record
                value = get(src)
                if value is not None and value != "":
                    attrs[dst] = value
            track = get("master_metadata_track_name")
            if track:
                kind, uri = "music_stream", get("spotify_track_uri") or ""
                artist = get("master_metadata_album_artist_name") or ""
                album = get("master_metadata_album_album_name") or ""
                attrs["track"] = track
                attrs["artist"] = artist
                attrs["album"] = album
                if artist:
                    title = f"{artist} – {track}"
                    text = (f"Listened to {track} by {artist} from the album {album}" if album
                            else f"Listened to {track} by {artist}")
                else:
                    title = track
                    text = f"Listened to {track} from the album {album}" if album else f"Listened to {track}"
            else:
                episode = get("episode_name")
                audiobook = get("audiobook_title")
                if episode or get("spotify_episode_uri"):
                    kind, uri = "podcast_stream", get("spotify_episode_uri") or ""
                    show = get("episode_show_name") or ""
                    attrs.update(episode=episode or "", show=show)
                    title = f"{show} – {episode}" if show else (episode or "Podcast episode")
                    text = (f"Listened to the podcast episode {episode or 'unknown'}"
                            + (f" of {show}" if show else ""))
                elif audiobook or get("audiobook_uri"):
                    kind = "audiobook_stream"
                    uri = get("audiobook_chapter_uri") or get("audiobook_uri") or ""
                    chapter = get("audiobook_chapter_title") or ""
                    attrs.update(audiobook=audiobook or "", chapter=chapter)
                    title = f"{audiobook} – {chapter}" if chapter else (audiobook or "Audiobook")
                    text = (f"Listened to the audiobook {audiobook or 'unknown'}"
                            + (f", {chapter}" if chapter else ""))
                else:
                    # Spotify writes rows without metadata for plays of removed or local items.
                    kind, uri = "music_stream", ""
                    title, text = "Unknown track", "Listened to a track Spotify gave no name for"
            if uri:
                attrs["uri"] = uri
            duration = durations.get(ms // 1000)
            if duration is None:
                duration = durations[ms // 1000] = _duration_text(ms)
            platform = attrs.get("platform")
            if platform:
                text = f"{text} for {duration} on {platform}."
            else:
                text = f"{text} for {duration}."
            b_kind.append(kind)
            b_title.append(title)
            b_text.append(text)
            b_start.append(start)
            b_end.append(end)
            b_tz.append(local_offset(start))
            b_attrs.append(attrs)
            b_key.append(f"{ts}|{uri}|{ms}")
            b_loc.append(loc)
            b_raw.append(dumps(rec).decode())
            if len(b_kind) >= size:
                yield batch
                batch = EventBatch("spotify")
                b_kind, b_title, b_text, b_start, b_end, b_tz, b_attrs, b_key, b_loc, b_raw = batch.columns()
    except Exception:
        # count what was read before a failure the way ``read`` would: yielded first
        if len(batch):
            yield batch
        raise
    if len(batch):
        yield batch


def read_basic(entry: Entry) -> Iterator[Event | ImportIssue]:
    local_offset = LocalOffsets(entry.context.home_tz)
    with entry.open() as f:
        for item in iter_objects(f, reopen=entry.open):
            if isinstance(item, ImportIssue):
                yield item
                continue
            loc, rec = item
            try:
                end = datetime.strptime(rec["endTime"], "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
                ms = int(rec.get("msPlayed") or 0)
            except KeyError as exc:
                yield ImportIssue(loc, f"missing field {exc.args[0]!r}")
                continue
            except (TypeError, ValueError) as exc:
                yield ImportIssue(loc, f"bad endTime or msPlayed: {exc}")
                continue
            try:
                start = end - timedelta(milliseconds=max(ms, 0))
            except OverflowError:
                yield ImportIssue(loc, f"msPlayed {ms} reaches before year 1")
                continue
            attrs: dict = {"ms_played": ms, "minutes_played": round(ms / 60000, 2)}
            if rec.get("podcastName") is not None or rec.get("episodeName") is not None:
                kind = "podcast_stream"
                show, episode = rec.get("podcastName") or "", rec.get("episodeName") or ""
                attrs.update(show=show, episode=episode)
                title = f"{show} – {episode}"
                text = f"Listened to the podcast episode {episode} of {show}"
                ident = f"{show}|{episode}"
            else:
                kind = "music_stream"
                artist, track = rec.get("artistName") or "", rec.get("trackName") or ""
                attrs.update(artist=artist, track=track)
                title = f"{artist} – {track}"
                text = f"Listened to {track} by {artist}"
                ident = f"{artist}|{track}"
            yield Event(
                source="spotify", kind=kind, start=start, end=end, title=title,
                text=f"{text} for {_duration_text(ms)}.", attributes=attrs,
                tz_offset_min=local_offset(start),
                # Basic history has minute resolution and no URI: the key is all it has.
                key=f"basic|{rec['endTime']}|{ident}|{ms}", locator=loc,
                raw=orjson.dumps(rec).decode(),
            )


IMPORTERS = (
    Importer(
        name="spotify_extended", title="Spotify extended streaming history", version="1",
        source="spotify", recognize=_recognize_extended, read=read_extended,
        read_batches=read_extended_batches, read_array_batches=extended_batches,
        description="Streaming_History_Audio_*.json, Streaming_History_Video_*.json, endsong_N.json",
    ),
    Importer(
        name="spotify_basic", title="Spotify account data streaming history", version="1",
        source="spotify", recognize=_recognize_basic, read=read_basic,
        description="StreamingHistory*.json, StreamingHistory_music_N.json, StreamingHistory_podcast_N.json",
        ignores=("Userdata.json", "Identity.json", "Payments.json", "Follow.json", "Inferences.json",
                 "Marquee.json", "SearchQueries.json", "YourLibrary.json", "Read_Me_First.pdf",
                 "Playlist1.json", "Wrapped*.json"),
    ),
)
