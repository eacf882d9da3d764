"""What the test split must never leak into: the product's code and its tests.

The test split (its question templates and its personas) is for measuring only. A
rule, an example, a training item or a test written from a test question measures
itself, not the product. This module finds such leaks so CI can refuse them:

* a test-split template's text, its placeholders matching any filling, quoted
  anywhere in the scanned files (a train or dev template with the same wording
  does not count: that wording is allowed through its own split), a question of
  the fresh-phrasing set's frozen eval part (``synth.fresh``), or one of the
  hand-written frozen aggregative questions (``app/bench/aqa_fresh.py``, read as text);
* an entity name that only the test personas' worlds have (a person, restaurant,
  café, park, artist, track, show, podcast or product of p5/p6), never one that a
  train, dev or demo persona has too.

It reads files as text and imports nothing from the product.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from synth.questions import templates
from synth.world import DEMO, PERSONAS, build_world

# Names shorter than this are words, not names ("Oak", "Lina"): too many false alarms.
MIN_NAME_CHARS = 8


@dataclass(frozen=True, slots=True)
class Leak:
    path: str
    line: int
    what: str  # "template <id>", "fresh-eval <id>", "aqa-fresh <n>" or "test-persona name"
    text: str


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass(frozen=True, slots=True)
class _Quote:
    """One template text as a regex (each ``{slot}`` a short filling) and its longest
    literal part, which a line must contain before the regex is tried."""
    label: str  # "template <id>" or "fresh-eval <id>"
    text: str
    anchor: str
    pattern: re.Pattern[str]


def _quote(label: str, text: str) -> _Quote | None:
    """None for a text too generic to be a quote (fewer than five literal words)."""
    parts = [p.strip() for p in re.split(r"\{[^}]*\}", _norm(text))]
    if sum(len(p.split()) for p in parts) < 5:
        return None
    body = r"[^\n\"']{1,40}?".join(re.escape(p) for p in parts)
    body = re.sub(r"(\\ )+", r"\\s+", body)
    return _Quote(label, _norm(text), max(parts, key=len), re.compile(body))


@functools.cache
def held_out_quotes() -> tuple[_Quote, ...]:
    """Each test-split text whose wording no train or dev template shares, and each
    question of the fresh-phrasing set's eval part."""
    allowed = {_norm(t) for tpl in templates() if tpl.split != "test" for t in tpl.texts}
    out = []
    for tpl in templates("test"):
        for text in tpl.texts:
            if _norm(text) in allowed:
                continue
            quote = _quote(f"template {tpl.id}", text)
            if quote is not None:
                out.append(quote)
    from synth import fresh

    for q in fresh.load("eval"):
        quote = _quote(f"fresh-eval {q.id}", q.question)
        if quote is not None:
            out.append(quote)
    for n, text in enumerate(aqa_fresh_questions(), 1):
        quote = _quote(f"aqa-fresh {n}", text)
        if quote is not None:
            out.append(quote)
    return tuple(out)


#: the hand-written frozen aggregative questions (``hindsight bench aqa --split fresh``)
AQA_FRESH = Path(__file__).resolve().parents[1] / "app" / "bench" / "aqa_fresh.py"


def aqa_fresh_questions(path: Path = AQA_FRESH) -> list[str]:
    """The question texts of ``FRESH`` in ``path``, read as source text (not imported):
    each entry's first string."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id == "FRESH" and isinstance(node.value, ast.Tuple):
            return [e.elts[0].value for e in node.value.elts
                    if isinstance(e, ast.Tuple) and e.elts and isinstance(e.elts[0], ast.Constant)
                    and isinstance(e.elts[0].value, str)]
    return []


def _strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _strings(getattr(value, f.name))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _strings(v)


def _world_names(spec) -> set[str]:
    world = build_world(spec)
    names = set()
    for s in _strings(dataclasses.replace(world, spec=None)):
        s = s.strip()
        # names: capitalised, not an e-mail, not a sentence
        if (len(s) >= MIN_NAME_CHARS and s[:1].isupper() and len(s.split()) <= 6
                and not any(ch in s for ch in "@/")):
            names.add(s)
    names.add(spec.name)
    return names


@functools.cache
def held_out_names() -> frozenset[str]:
    test_specs = [p for p in PERSONAS.values() if p.split == "test"]
    other_specs = [p for p in PERSONAS.values() if p.split != "test"] + [DEMO]
    seen_elsewhere: set[str] = set()
    for spec in other_specs:
        seen_elsewhere |= _world_names(spec)
    only_test: set[str] = set()
    for spec in test_specs:
        only_test |= _world_names(spec)
    return frozenset(only_test - seen_elsewhere)


def quoted(text: str) -> list[str]:
    """The held-out quotes (test templates, fresh eval questions) that ``text`` says,
    by label: a generator of training data drops such a text, whatever template it
    came from (sibling templates of two splits can share a phrasing)."""
    window = _norm(text)
    return [q.label for q in held_out_quotes() if q.anchor in window and q.pattern.search(window)]


def scan(files: Iterable[Path], root: Path) -> list[Leak]:
    """Every leak in ``files``, by file and line."""
    quotes = held_out_quotes()
    names = sorted(held_out_names(), key=len, reverse=True)
    name_rx = re.compile("|".join(re.escape(n) for n in names)) if names else None
    leaks: list[Leak] = []
    for path in files:
        if path.resolve() == AQA_FRESH:  # where those questions are kept
            continue
        try:
            if path.suffix == ".gz":  # training data is committed compressed
                import gzip
                import zlib

                try:
                    text = gzip.decompress(path.read_bytes()).decode("utf-8")
                except (gzip.BadGzipFile, zlib.error, EOFError):
                    continue  # a broken archive among the importers' fixtures
            else:
                text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        rel = str(path.relative_to(root))
        lines = text.splitlines()
        for i, raw in enumerate(lines, 1):
            # a quote may wrap: read each line with the next one joined on
            window = _norm(raw + " " + (lines[i] if i < len(lines) else "").strip(" #\"'"))
            for quote in quotes:
                if quote.anchor not in window:
                    continue
                m = quote.pattern.search(window)
                if m and m.start() < len(_norm(raw)):
                    leaks.append(Leak(rel, i, quote.label, m.group(0)))
            if name_rx is not None:
                for m in name_rx.finditer(raw):
                    leaks.append(Leak(rel, i, "test-persona name", m.group(0)))
    return leaks
