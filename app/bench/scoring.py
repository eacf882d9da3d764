"""Scoring answers against gold answers, and summarising a run into figures.

Gold answers are lists of rows (the persona generator's SQL results, TimelineQA's
answer rows). A prediction is whatever a method returned as its answer value: a
number, a date or datetime string, a string, a list (of tied or listed values) or
None. Two measures, both "top-1":

* **Hit@1**: the top answer (the first element of a list), normalised, equals one of
  the gold values (the first cell of each gold row; several rows are a list or a
  tie, and matching any of them counts). Numbers match after rounding the
  prediction to the gold's decimals (2 for a float gold, at most 2 for
  a number written as text); dates match on the calendar day;
  strings match ignoring case, surrounding whitespace and punctuation.
* **Rlx-Hit@1**: numbers within ±10% of the gold; dates equal; strings compared
  without case, whitespace or punctuation, or one contained in the other when the
  shorter is longer than 3 characters; any cell of a gold row counts.

An empty gold (nothing happened) is matched only by an empty prediction.
This module is pure: no I/O, no models.
"""
from __future__ import annotations

import math
import re
import statistics
import string
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any

RELAXED_NUMBER_TOLERANCE = 0.10
MIN_CONTAINED_CHARS = 4  # "longer than 3 characters"
_MAX_EXACT_DECIMALS = 2

_BARE_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$|^[+-]?\.\d+$")
_ANY_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_PUNCT = str.maketrans("", "", string.punctuation + "“”‘’…–—")
_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d %B %Y", "%B %d, %Y", "%B %d %Y", "%d %b %Y", "%b %d, %Y",
                 "%A %d %B %Y", "%A, %d %B %Y", "%A, %B %d, %Y")


# --------------------------------------------------------------------------- values
def parse_number(value: Any) -> float | None:
    """A number, or a string that is only a number ("1,234.5", " 42 "); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return None if isinstance(value, float) and math.isnan(value) else float(value)
    if isinstance(value, str):
        s = value.strip()
        if _BARE_NUMBER.match(s):
            return float(s.replace(",", ""))
    return None


def first_number(value: Any) -> float | None:
    """The number in a value, also inside text ("55 minutes", "about 1,204 plays")."""
    n = parse_number(value)
    if n is not None or not isinstance(value, str):
        return n
    m = _ANY_NUMBER.search(value)
    return float(m.group(0).replace(",", "")) if m else None


def parse_date(value: Any) -> date | None:
    """A calendar day from a date, a datetime, an ISO string (with or without time)
    or a spelled-out date ("20 November 2024", "Wednesday 20 November 2024")."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if not isinstance(value, str):
        return None
    s = " ".join(value.strip().rstrip(".").split())
    if len(s) < 8:
        return None
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00").replace("/", "-")).date()
    except ValueError:
        pass
    m = re.match(r"^(\d{4}-\d{2}-\d{2})[T ]", s)
    if m:
        try:
            return date.fromisoformat(m.group(1))
        except ValueError:
            return None
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(s, fmt).date()
        except ValueError:
            continue
    return None


def _decimals(x: Any) -> int:
    if isinstance(x, int) and not isinstance(x, bool):
        return 0
    if not isinstance(x, str):
        # a float gold was rounded to 2 decimals when written; 10867.0 means 10867.00
        return _MAX_EXACT_DECIMALS
    text = x.strip().replace(",", "")
    if "e" in text.lower():
        return _MAX_EXACT_DECIMALS
    frac = text.split(".", 1)[1] if "." in text else ""
    frac = frac.rstrip("0")
    return min(len(frac), _MAX_EXACT_DECIMALS)


def strict_text(value: Any) -> str:
    """Case-folded, whitespace collapsed, punctuation stripped at both ends."""
    s = " ".join(str(value).casefold().split())
    return s.strip(string.punctuation + " “”‘’")


def loose_text(value: Any) -> str:
    """Case-folded, all punctuation removed, whitespace collapsed."""
    return " ".join(str(value).casefold().translate(_PUNCT).split())


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def top_answer(prediction: Any) -> Any:
    """The first value of a (nested) list; a dict's first key; else the value."""
    while isinstance(prediction, (list, tuple)):
        if not prediction:
            return None
        prediction = prediction[0]
    if isinstance(prediction, dict):
        return next(iter(prediction), None)
    if isinstance(prediction, str) and not prediction.strip():
        return None
    return prediction


def gold_values(gold: Sequence[Any], *, all_cells: bool = False) -> list[Any]:
    """The acceptable values: the first cell of each row (every cell if ``all_cells``)."""
    out: list[Any] = []
    for row in gold or ():
        cells = list(row) if isinstance(row, (list, tuple)) else [row]
        cells = [c for c in cells if c is not None and c != ""]
        if not cells:
            continue
        out.extend(cells if all_cells else cells[:1])
    return out


# --------------------------------------------------------------------------- matching
def exact_match(pred: Any, gold: Any) -> bool:
    """One predicted value against one gold value, the Hit@1 way."""
    g_num, p_num = parse_number(gold), parse_number(pred)
    if g_num is not None and p_num is not None:
        d = _decimals(gold)
        return round(p_num, d) == round(g_num, d)
    g_date = parse_date(gold)
    if g_date is not None:
        return parse_date(pred) == g_date
    if isinstance(gold, bool) or isinstance(pred, bool):
        return strict_text(_as_text(pred)) == strict_text(_as_text(gold))
    return strict_text(pred) == strict_text(gold) if pred is not None else False


def _looks_like_year(gold: Any) -> bool:
    text = str(gold).strip()
    return not isinstance(gold, (bool, float)) and text.isdigit() and len(text) == 4 and 1900 <= int(text) <= 2100


def relaxed_match(pred: Any, gold: Any) -> bool:
    """One predicted value against one gold value, the Rlx-Hit@1 way."""
    if pred is None:
        return False
    if exact_match(pred, gold):
        return True
    g_date = parse_date(gold)
    if g_date is not None and parse_date(pred) is not None:
        return parse_date(pred) == g_date
    g_num = parse_number(gold)
    if g_num is None and isinstance(gold, str) and parse_date(gold) is None:
        g_num = first_number(gold) if _ANY_NUMBER.fullmatch(gold.split()[0] if gold.split() else "") else None
    p_num = first_number(pred) if not isinstance(pred, bool) else None
    if g_num is not None and p_num is not None:
        if g_num == 0:
            return p_num == 0
        if _looks_like_year(gold):  # "2021" for "2018" is 0.15% off, and wrong
            return p_num == g_num
        return abs(p_num - g_num) <= RELAXED_NUMBER_TOLERANCE * abs(g_num) + 1e-9
    if g_num is not None:
        return False
    p, g = loose_text(_as_text(pred)), loose_text(_as_text(gold))
    if not p or not g:
        return False
    if p == g:
        return True
    shorter = min(len(p), len(g))
    return shorter >= MIN_CONTAINED_CHARS and (p in g or g in p)


def hit_at_1(prediction: Any, gold: Sequence[Any]) -> bool:
    top = top_answer(prediction)
    values = gold_values(gold)
    if not values:
        return top is None
    return top is not None and any(exact_match(top, g) for g in values)


def relaxed_hit_at_1(prediction: Any, gold: Sequence[Any]) -> bool:
    top = top_answer(prediction)
    values = gold_values(gold, all_cells=True)
    if not values:
        return top is None
    return top is not None and any(relaxed_match(top, g) for g in values)


# --------------------------------------------------------------------------- figures
def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100); None for no values."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    if len(xs) == 1:
        return float(xs[0])
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))


def _share(flags: Iterable[bool]) -> float | None:
    flags = list(flags)
    return round(sum(flags) / len(flags), 4) if flags else None


def _ms(values: Sequence[float]) -> dict:
    med, p95 = percentile(values, 50), percentile(values, 95)
    return {"median": None if med is None else round(med, 1), "p95": None if p95 is None else round(p95, 1),
            "n": len(values)}


def summarise(records: Sequence[dict]) -> dict:
    """Figures from per-question records (each with ``category``, ``hit``, ``rlx``,
    ``valid_plan``, ``llm_calls``, ``timings``)."""
    cats: dict[str, list[dict]] = {}
    for r in records:
        cats.setdefault(r.get("category") or "?", []).append(r)
    ops: dict[str, list[float]] = {}
    for r in records:
        for k, v in (r.get("timings") or {}).items():
            if k.startswith("op_") and k.endswith("_ms") and v is not None:
                ops.setdefault(k[3:-3].upper(), []).append(float(v))
    totals = [float(r["timings"]["total_ms"]) for r in records if (r.get("timings") or {}).get("total_ms") is not None]
    planning = [float(r["timings"]["planning_ms"]) for r in records
                if (r.get("timings") or {}).get("planning_ms") is not None]
    calls = [r.get("llm_calls") or 0 for r in records]
    return {
        "questions": len(records),
        "hit_at_1": _share(r["hit"] for r in records),
        "rlx_hit_at_1": _share(r["rlx"] for r in records),
        "valid_plan_share": _share(bool(r.get("valid_plan")) for r in records),
        "answered_share": _share(bool(r.get("ok")) for r in records),
        "llm_calls_per_question": round(statistics.fmean(calls), 3) if calls else None,
        "second_planner_share": _share(bool(r.get("second_planner")) for r in records),
        "latency_ms": _ms(totals),
        "planning_ms": _ms(planning),
        "operator_ms": {op: _ms(v) for op, v in sorted(ops.items())},
        "per_category": {c: {"questions": len(rs), "hit_at_1": _share(r["hit"] for r in rs),
                             "rlx_hit_at_1": _share(r["rlx"] for r in rs)} for c, rs in sorted(cats.items())},
    }
