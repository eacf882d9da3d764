"""Reading numbers, dates and prices out of text, and converting a value to the
type EXTRACT was asked for ("€12.50" -> 12.5, "1996-01-07" -> a date).

A value that cannot be converted is None, never a guess. Text only: no model, no
row is chosen here. The months and currencies are :mod:`engine.locale_en`'s.
"""
from __future__ import annotations

import logging
import re
from datetime import date, datetime, timezone
from typing import Any

from dateutil import parser as dateparser

from engine.locale_en import CURRENCY_SYMBOLS, CURRENCY_WORDS, MONTH, NO, YES
from engine.operators.context import OperatorError
from engine.plan.rows import Row

log = logging.getLogger(__name__)

_AMOUNT = re.compile(r"[-+]?\d[\d.,' ]*")
ISO_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?")
DATES = re.compile(
    rf"\b\d{{4}}-\d{{1,2}}-\d{{1,2}}\b|\b\d{{1,2}}[./]\d{{1,2}}[./]\d{{2,4}}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH}(?:,?\s+\d{{4}})?\b"
    rf"|\b{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b", re.I)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")  # one number: "27, 2023" is two
CLOCK_TIMES = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?|\b\d{1,2}(?:[.:]\d{2})?\s?[ap]\.?m\b", re.I)  # 10:00, 9.30pm
_CURRENCY = rf"(?:[{re.escape(CURRENCY_SYMBOLS)}]|\b(?:{'|'.join(CURRENCY_WORDS)})\b)"
PRICES = re.compile(rf"{_CURRENCY}\s?\d[\d.,']*|\d[\d.,']*\s?{_CURRENCY}")


def parse_number(text: str) -> float | None:
    """"€12.50" -> 12.5, "1.234,50 EUR" -> 1234.5, "1,234.50" -> 1234.5, "-3" -> -3."""
    m = _AMOUNT.search(text.replace("\u2212", "-"))
    if not m:
        return None
    s = m.group(0).strip().replace(" ", "").replace("'", "")
    if "," in s and "." in s:
        # the later separator is the decimal point
        s = s.replace(".", "").replace(",", ".") if s.rfind(",") > s.rfind(".") else s.replace(",", "")
    elif "," in s:
        head, _, tail = s.rpartition(",")
        s = s.replace(",", "") if len(tail) == 3 and head else s.replace(",", ".")
    try:
        return float(s)
    except ValueError:
        return None


def coerce(value: Any, kind: str, row: Row | None = None) -> Any:
    """``value`` as ``kind``; None when it cannot be converted."""
    if value is None or value == "":
        return None
    try:
        if kind == "str":
            if isinstance(value, (date, datetime)):
                return value.isoformat()
            return value if isinstance(value, str) else str(value)
        if kind in ("int", "float"):
            if isinstance(value, bool):
                n: float | None = float(value)
            elif isinstance(value, (int, float)):
                n = float(value)
            else:
                n = parse_number(str(value))
            if n is None:
                return None
            return int(round(n)) if kind == "int" else n
        if kind == "bool":
            if isinstance(value, bool):
                return value
            s = str(value).strip().lower()
            return True if s in YES else False if s in NO else None
        if kind in ("date", "datetime"):
            if isinstance(value, datetime):
                dt = value
            elif isinstance(value, date):
                return value if kind == "date" else datetime(value.year, value.month, value.day)
            else:
                dt = dateparser.parse(str(value))
            if dt.tzinfo is None:
                # a time read from text is local time, as the row's own start is
                ref = row.get("start") if row is not None else None
                dt = dt.replace(tzinfo=ref.tzinfo if isinstance(ref, datetime) else timezone.utc)
            return dt.date() if kind == "date" else dt
    except (ValueError, OverflowError, TypeError) as exc:
        log.debug("cannot read %r as %s: %s", value, kind, exc)
        return None
    raise OperatorError("EXTRACT", f"unknown type {kind!r}")

