"""Mail in mbox files: Gmail Takeout (``Takeout/Mail/*.mbox``, whatever the folder
and file are called in the user's language), Thunderbird, mutt, Apple Mail exports
and other mboxo/mboxrd producers. One ``mail`` event per message.

The file is streamed line by line and split on "From " separator lines here (never
with :class:`mailbox.mbox`, which indexes the whole file); each message is parsed on
its own with the ``email`` package. The parser runs with the compat32 policy and
headers are decoded here (RFC 2047 words, raw 8-bit bytes as UTF-8 or Windows-1252):
policy.default's header registry made parsing about three times slower and raises on
some broken headers; every decode here falls back instead of raising. Memory stays flat in the file size: one message
at a time, each capped at :data:`MAX_MESSAGE_BYTES` (the rest of a larger message,
i.e. its attachments, is dropped; its headers and text survive).

Separators: a line starting with ``From `` that carries a time and a year, at the
start of the file or after a blank line (or in the strict asctime form anywhere).
``>From `` lines are unescaped by one ``>`` (mboxrd; also right for mboxo).

Sent or received: a message is ``sent`` when Gmail labelled it Sent (or the
localized name), or when its From address is one of the user's own addresses.
Those are ``entry.context.own_addresses`` when set; otherwise a cheap first pass
over the headers infers them: the most frequent From address among messages
labelled Sent; if nothing is labelled Sent, the most frequent Delivered-To address;
failing that, the most frequent To address. The first pass reads headers only and
keeps bounded counters.

This module must not write to the store, keep whole files in memory, or read
attachment contents beyond the message it is parsing.
"""
from __future__ import annotations

import codecs
import csv
import hashlib
import logging
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from email import policy
from email.header import decode_header, make_header
from email.message import Message
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_tz
from html.parser import HTMLParser
from typing import IO, Any

from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
MAX_LINE_BYTES = 1 << 20  # a "line" longer than this is read in pieces
_BODY_CHARS = 2000
_RAW_CHARS = 8000
_COUNTER_LIMIT = 20_000  # distinct addresses kept by the first pass

_WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# "From sender Sat Jan  3 01:05:34 1996", Gmail: "From 17...@xxx Tue Mar 12 10:00:00 +0000 2024"
_STRICT_SEP = re.compile(
    rb"^From \S+ +" + _WEEKDAY.encode() + rb" +" + _MONTH.encode()
    + rb" +\d{1,2} +\d{1,2}:\d\d(?::\d\d)?(?: +[+-]\d{4}| +[A-Z]{2,5})? +\d{4}\s*$")
_LOOSE_SEP = re.compile(rb"^From \S*.*\b\d{1,2}:\d\d.*\b\d{4}\b")
_FROM_LINE_DATE = re.compile(
    _MONTH + r" +(\d{1,2}) +(\d{1,2}):(\d\d)(?::(\d\d))?(?: +([+-]\d{4}))?(?: +[A-Z]{2,5})? +(\d{4})")
_UTC_ZONE = re.compile(r"\+0000|\b(GMT|UTC?|Z)\b", re.I)
_NO_ZONE_KNOWN = re.compile(r"-0000")
_SURROGATE = re.compile("[\udc80-\udcff]")  # raw 8-bit header bytes, as compat32 keeps them
_ESCAPED_FROM = re.compile(rb"^>+From ")
_HEADER_LINE = re.compile(rb"^[!-9;-~]+:")  # RFC 5322 field name then a colon
_SENT_LABELS = {"sent", "gesendet", "envoyés", "enviados", "enviado", "inviati", "verzonden",
                "wysłane", "отправленные", "送信済み", "已发邮件", "sent mail", "sent messages"}
_MONTHS = {m: i for i, m in enumerate(
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], start=1)}


# ---- recognising ---------------------------------------------------------------------

def _recognize(entry: Entry) -> float:
    head = entry.head.lstrip(b"\xef\xbb\xbf")
    first, _, rest = head.partition(b"\n")
    first = first.rstrip(b"\r")
    named = entry.basename.lower().endswith((".mbox", ".mbx", ".mboxrd", ".mboxo"))
    is_sep = bool(_STRICT_SEP.match(first) or _LOOSE_SEP.match(first))
    has_headers = bool(re.search(rb"^(Received|Date|From|To|Subject|Message-ID|X-GM-THRID|"
                                 rb"X-Gmail-Labels|Return-Path|Delivered-To|MIME-Version):",
                                 rest, re.I | re.M))
    if is_sep and has_headers:
        return 0.95
    if named and (is_sep or first.startswith(b"From ")):
        return 0.9
    if is_sep and not rest.strip():
        return 0.6  # a head that is all separator line: a very long first line follows
    if named:
        # Claimed so the report explains what is wrong with it instead of "unknown".
        return 0.55
    return 0.0


# ---- splitting the stream -------------------------------------------------------------

def _lines(f: IO[bytes]) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes, starts a line) — long lines come in bounded pieces."""
    n = 0
    at_start = True
    while True:
        piece = f.readline(MAX_LINE_BYTES)
        if not piece:
            return
        if at_start:
            n += 1
        yield n, piece, at_start
        at_start = piece.endswith(b"\n")


class _Raw:
    """One message's bytes as split from the mbox."""

    __slots__ = ("index", "line_no", "from_line", "lines", "size", "truncated")

    def __init__(self, index: int, line_no: int, from_line: bytes):
        self.index = index
        self.line_no = line_no
        self.from_line = from_line
        self.lines: list[bytes] = []
        self.size = 0
        self.truncated = False

    def add(self, line: bytes) -> None:
        if self.size + len(line) > MAX_MESSAGE_BYTES:
            self.truncated = True
            return
        self.lines.append(line)
        self.size += len(line)


def _messages(f: IO[bytes]) -> Iterator[_Raw]:
    """Messages split on separator lines; text before the first separator comes as
    message 0 (with an empty from_line) so the reader can judge it."""
    current = _Raw(0, 1, b"")
    index = 0
    prev_blank = True
    for n, line, at_start in _lines(f):
        if at_start and line.startswith(b"From "):
            stripped = line.rstrip(b"\r\n")
            if _STRICT_SEP.match(stripped) or (prev_blank and _LOOSE_SEP.match(stripped)):
                if current.lines or current.from_line:
                    yield current
                index += 1
                current = _Raw(index, n, stripped)
                prev_blank = False
                continue
        if at_start and line.startswith(b">") and _ESCAPED_FROM.match(line):
            line = line[1:]
        current.add(line)
        if at_start:
            prev_blank = line in (b"\n", b"\r\n")
    if current.lines or current.from_line:
        yield current


# ---- the first pass: whose mailbox is this? -------------------------------------------

def _addresses(value: str) -> list[tuple[str, str]]:
    try:
        pairs = getaddresses([value])
    except Exception:  # noqa: BLE001 - getaddresses can trip over odd input; no address then
        return []
    return [(name.strip(), addr.strip().lower()) for name, addr in pairs if "@" in addr]


def _labels(value: str) -> list[str]:
    if not value:
        return []
    try:
        row = next(csv.reader([value], skipinitialspace=True))
    except (csv.Error, StopIteration):
        row = value.split(",")
    return [label.strip() for label in row if label.strip()]


def _is_sent(labels: list[str]) -> bool:
    return any(label.lower() in _SENT_LABELS for label in labels)


def _bounded_count(counter: Counter, key: str) -> None:
    counter[key] += 1
    if len(counter) > _COUNTER_LIMIT:
        # Forget addresses seen once: the user's own address is never among them.
        for k in [k for k, v in counter.items() if v <= 1]:
            del counter[k]


def _header_blocks(f: IO[bytes]) -> Iterator[dict[str, str]]:
    """Only the headers the inference needs, per message; bodies are skipped."""
    wanted = {b"from", b"to", b"delivered-to", b"x-gmail-labels"}
    headers: dict[str, str] | None = None
    last: bytes | None = None
    in_headers = False
    prev_blank = True
    for _, line, at_start in _lines(f):
        if not at_start:
            continue
        if line.startswith(b"From ") and (_STRICT_SEP.match(line.rstrip(b"\r\n")) or
                                          (prev_blank and _LOOSE_SEP.match(line))):
            if headers is not None:
                yield headers
            headers, last, in_headers, prev_blank = {}, None, True, False
            continue
        prev_blank = line in (b"\n", b"\r\n")
        if not in_headers or headers is None:
            continue
        if prev_blank:
            in_headers = False
            continue
        if line[:1] in (b" ", b"\t"):
            if last is not None:
                headers[last.decode()] += " " + line.strip().decode("utf-8", "replace")
            continue
        name, sep, value = line.partition(b":")
        key = name.strip().lower()
        if sep and key in wanted and key.decode() not in headers:
            last = key
            headers[key.decode()] = value.strip().decode("utf-8", "replace")
        else:
            last = None
    if headers is not None:
        yield headers


def _infer_own_addresses(entry: Entry) -> frozenset[str]:
    sent_from: Counter = Counter()
    delivered: Counter = Counter()
    to: Counter = Counter()
    with entry.open() as f:
        for headers in _header_blocks(f):
            if _is_sent(_labels(_decode_words(headers.get("x-gmail-labels", "")))):
                for _, addr in _addresses(headers.get("from", "")):
                    _bounded_count(sent_from, addr)
            for _, addr in _addresses(headers.get("delivered-to", "")):
                _bounded_count(delivered, addr)
            for _, addr in _addresses(headers.get("to", "")):
                _bounded_count(to, addr)
    for counter in (sent_from, delivered, to):
        if counter:
            return frozenset([counter.most_common(1)[0][0]])
    return frozenset()


# ---- one message ---------------------------------------------------------------------

def _decode_words(value: str) -> str:
    """RFC 2047 encoded words decoded, never raising; unknown charsets fall back to
    UTF-8 or Windows-1252 with replacement."""
    if "=?" not in value:
        return value
    try:
        return str(make_header(decode_header(value)))
    except Exception:  # noqa: BLE001 - unknown charsets, broken encoded words
        pass
    try:
        chunks = decode_header(value)
    except Exception:  # noqa: BLE001
        return value
    out = []
    for chunk, charset in chunks:
        if isinstance(chunk, str):
            out.append(chunk)
            continue
        try:
            out.append(chunk.decode(charset or "utf-8"))
        except (LookupError, UnicodeError):
            out.append(_bytes_text(chunk))
    return "".join(out)


def _bytes_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


class _Headers:
    """The first value of each header, decoded on demand. Reads the parser's raw
    strings (compat32 keeps undecodable bytes as surrogates) instead of going through
    policy.default's header registry, which cost more than the rest of the parse
    together (measured: ~70% of the time per message)."""

    def __init__(self, msg: Message):
        self._raw: dict[str, str] = {}
        for name, value in msg.raw_items():
            self._raw.setdefault(name.lower(), value)

    def __call__(self, name: str) -> str:
        value = self._raw.get(name.lower())
        if value is None:
            return ""
        if not isinstance(value, str):
            value = str(value)
        if _SURROGATE.search(value):
            value = _bytes_text(value.encode("utf-8", "surrogateescape"))
        return " ".join(_decode_words(value).split())


def _parse_date(value: str, home) -> tuple[datetime, int | None] | None:
    """A Date/Received date and its own offset in minutes (None for -0000 / none)."""
    if not value:
        return None
    try:
        parts = parsedate_tz(value)
    except Exception:  # noqa: BLE001 - parsedate_tz raises on some garbage
        return None
    if parts is None:
        return None
    year, month, day, hh, mm, ss = parts[:6]
    if not (1970 <= year <= 2200):
        return None
    try:
        offset = parts[9]
        naive = datetime(year, month, day, hh, mm, min(ss, 59))
        if offset == 0 and not _UTC_ZONE.search(value):
            # parsedate_tz reports "-0000" (UTC, sender's zone unknown) and a missing
            # zone both as 0; only an explicit UTC zone is a real offset of 0.
            if _NO_ZONE_KNOWN.search(value):
                return naive.replace(tzinfo=UTC), None
            return naive.replace(tzinfo=home), None
        zone = timezone(timedelta(seconds=offset))
        return naive.replace(tzinfo=zone), offset // 60
    except (ValueError, OverflowError, TypeError):
        return None


def _from_line_date(from_line: bytes) -> tuple[datetime, int | None] | None:
    m = _FROM_LINE_DATE.search(from_line.decode("ascii", "replace"))
    if not m:
        return None
    month = _MONTHS[m.group(0)[:3]]
    day, hh, mm, ss, off, year = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5), m.group(6)
    try:
        naive = datetime(int(year), month, int(day), int(hh), int(mm), int(ss or 0))
    except ValueError:
        return None
    if off:
        minutes = (1 if off[0] == "+" else -1) * (int(off[1:3]) * 60 + int(off[3:5]))
        return naive.replace(tzinfo=timezone(timedelta(minutes=minutes))), minutes
    # asctime separators are in UTC by convention and say nothing about the sender's zone
    return naive.replace(tzinfo=UTC), None


class _HTMLText(HTMLParser):
    """Readable text from HTML mail: block elements become line breaks, scripts and
    styles vanish, entities are decoded."""

    _BLOCKS = {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table",
               "blockquote", "pre", "hr", "section", "article", "header", "footer", "ul", "ol"}
    _SKIP = {"script", "style", "head", "title", "noscript"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self._SKIP:
            self._skip += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n- " if tag == "li" else "\n")

    def handle_endtag(self, tag):
        if tag in self._SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self.parts).splitlines())
        return "\n".join(line for line in lines if line)


def html_to_text(html: str) -> str:
    parser = _HTMLText()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # noqa: BLE001 - html.parser is lenient; anything else keeps what was read
        pass
    return parser.text()


def _part_text(part: Any) -> tuple[str, str | None]:
    """A text part's content and a complaint when its charset is unknown and the bytes
    were not readable as UTF-8 either."""
    try:
        payload = part.get_payload(decode=True)
    except Exception:  # noqa: BLE001 - broken transfer encodings
        payload = None
    if payload is None:
        raw = part.get_payload()
        return (raw if isinstance(raw, str) else ""), None
    try:
        charset = part.get_content_charset() or "us-ascii"
    except Exception:  # noqa: BLE001
        charset = "us-ascii"
    try:
        codecs.lookup(charset)
        return payload.decode(charset, errors="replace"), None
    except (LookupError, ValueError, UnicodeError, TypeError):
        pass
    try:
        return payload.decode("utf-8"), None
    except UnicodeDecodeError:
        return payload.decode("cp1252", errors="replace"), (
            f"unknown charset {charset[:40]!r} and the text is not UTF-8; "
            "decoded as Windows-1252, some characters may be wrong")


def _is_attachment(part: Message) -> bool:
    try:
        return part.get_content_disposition() == "attachment" or bool(part.get_filename())
    except Exception:  # noqa: BLE001 - broken RFC 2231 parameters
        return False


def _body(msg: Message) -> tuple[str, str | None]:
    """The first inline text/plain part, else the first inline text/html part."""
    plain = html = None
    for part in msg.walk():
        if part.is_multipart() or part.get_content_maintype() != "text" or _is_attachment(part):
            continue
        sub = part.get_content_subtype()
        if sub == "plain":
            plain = part
            break
        if sub == "html" and html is None:
            html = part
    part = plain or html
    if part is None:
        return "", None
    text, problem = _part_text(part)
    if part is html:
        text = html_to_text(text)
    return text, problem


def _attachments(msg: Message) -> list[str]:
    names: list[str] = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        try:
            filename = part.get_filename()
            disposition = part.get_content_disposition()
        except Exception:  # noqa: BLE001 - broken RFC 2231 parameters
            filename, disposition = None, None
        if filename or disposition == "attachment":
            names.append(" ".join(str(filename).split()) if filename else f"(unnamed {part.get_content_type()})")
    return names


def _who(pairs: list[tuple[str, str]], limit: int = 3) -> str:
    shown = [name or addr for name, addr in pairs[:limit]]
    text = ", ".join(shown)
    if len(pairs) > limit:
        text += f" and {len(pairs) - limit} others"
    return text


def _message_event(raw: _Raw, own: frozenset[str], zone) -> Iterator[Event | ImportIssue]:
    data = b"".join(raw.lines)
    header_end = data.find(b"\n\n")
    crlf_end = data.find(b"\r\n\r\n")
    if crlf_end != -1 and (header_end == -1 or crlf_end < header_end):
        header_end = crlf_end
    header_bytes = data if header_end == -1 else data[:header_end]
    msg = BytesParser(policy=policy.compat32).parsebytes(data)
    _header = _Headers(msg)
    message_id = _header("Message-ID").strip().strip("<>").strip()
    locator = f"message {raw.index} (line {raw.line_no})"
    if message_id:
        locator += f", Message-ID <{message_id[:200]}>"

    parsed = _parse_date(_header("Date"), zone)
    if parsed is None:
        parsed = _from_line_date(raw.from_line)
    if parsed is None:
        received = _header("Received")
        if ";" in received:
            parsed = _parse_date(received.rsplit(";", 1)[1], zone)
    if parsed is None:
        date_value = _header("Date")
        why = f"the Date header {date_value[:60]!r} cannot be read" if date_value else "there is no Date header"
        yield ImportIssue(locator, f"{why}, and neither the separator line nor a Received header has a date; "
                                   "the message was skipped")
        return
    start, own_offset = parsed

    from_pairs = _addresses(_header("From"))
    to_pairs = _addresses(_header("To"))
    cc_pairs = _addresses(_header("Cc"))
    subject = _header("Subject")
    labels = _labels(_header("X-Gmail-Labels"))
    from_name, from_addr = from_pairs[0] if from_pairs else ("", "")
    sent = _is_sent(labels) or (from_addr in own if from_addr else False)

    body, problem = _body(msg)
    if problem:
        yield ImportIssue(locator, f"imported, but the body text may be garbled: {problem}", kept=True)
    attachments = _attachments(msg)
    in_reply_to = _header("In-Reply-To").strip().strip("<>")
    references = re.findall(r"<([^<>\s]+)>", _header("References"))

    attrs: dict[str, Any] = {
        "from": from_addr,
        "from_name": from_name,
        "to": [a for _, a in to_pairs],
        "cc": [a for _, a in cc_pairs],
        "subject": subject,
        "labels": labels,
        "direction": "sent" if sent else "received",
        "attachments": attachments,
    }
    if message_id:
        attrs["message_id"] = message_id
    thread_id = _header("X-GM-THRID")
    if thread_id:
        attrs["thread_id"] = thread_id
    if in_reply_to:
        attrs["in_reply_to"] = in_reply_to
    if references:
        attrs["references"] = references[-20:]
    if raw.truncated:
        attrs["truncated"] = True

    sender = from_name or from_addr or "an unknown sender"
    recipients = _who(to_pairs) or _who(cc_pairs) or "undisclosed recipients"
    body_flat = " ".join(body.split())
    if len(body_flat) > _BODY_CHARS:
        body_flat = body_flat[:_BODY_CHARS].rstrip() + "…"
    text = f"Mail from {sender} to {recipients} on {subject or '(no subject)'}"
    if attachments:
        text += f" (attachments: {', '.join(attachments[:5])})"
    text += f": {body_flat}" if body_flat else "."

    key = message_id or "headers:" + hashlib.blake2b(header_bytes, digest_size=16).hexdigest()
    yield Event(
        source="mail", kind="mail", start=start, title=subject or "(no subject)", text=text,
        attributes=attrs,
        tz_offset_min=own_offset if own_offset is not None else offset_minutes(start, zone),
        key=key, locator=locator,
        raw=header_bytes[: _RAW_CHARS * 2].decode("utf-8", "replace")[:_RAW_CHARS],
    )


def _looks_like_headers(raw: _Raw) -> bool:
    first = next((line for line in raw.lines if line.strip()), b"")
    return bool(_HEADER_LINE.match(first))


def _read(entry: Entry) -> Iterator[Event | ImportIssue]:
    zone = entry.context.home_tz
    own = frozenset(a.lower() for a in entry.context.own_addresses)
    try:
        if not own:
            own = _infer_own_addresses(entry)
        with entry.open() as f:
            seen_separator = False
            for raw in _messages(f):
                if raw.index == 0:
                    # Text before the first separator: a lone message without a
                    # "From " line is still a message; anything else is reported.
                    if not _looks_like_headers(raw):
                        yield ImportIssue("line 1", f"{len(raw.lines)} lines before the first 'From ' separator "
                                                    "line are not a mail message; they were skipped")
                        continue
                    seen_separator = True  # a lone message without a separator is still mail
                else:
                    seen_separator = True
                if not b"".join(raw.lines[:50]).strip():
                    yield ImportIssue(f"message {raw.index} (line {raw.line_no})",
                                      "the message is empty; it was skipped")
                    continue
                try:
                    yield from _message_event(raw, own, zone)
                except Exception as exc:  # noqa: BLE001 - the email package fails in many ways on bad mail
                    log.debug("message %s of %s failed", raw.index, entry.name, exc_info=True)
                    yield ImportIssue(f"message {raw.index} (line {raw.line_no})",
                                      f"cannot read the message: {type(exc).__name__}: {str(exc)[:200]}")
            if not seen_separator:
                yield ImportIssue("file", "no 'From ' separator line found: this does not look like an mbox file")
    except OSError as exc:
        yield ImportIssue("file", f"cannot read the file: {exc}")


IMPORTERS = (
    Importer(
        name="mbox", title="Mail (mbox)", version="1", source="mail",
        recognize=_recognize, read=_read,
        description="Gmail Takeout Mail/*.mbox, Thunderbird and other mbox files (mboxo/mboxrd)",
    ),
)
