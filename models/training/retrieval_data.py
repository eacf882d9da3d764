"""Training and dev pairs for RETRIEVE's two cross-encoders, from simulated lives.

Personas of the benchmark's generator (``synth``) are written out in real
export formats and read back by the real importers, so every event looks exactly
as it does at run time: the same sources, kinds, attribute keys and verbalisation
(``engine.retrieval.verbalise``), the same pattern texts
(``engine.retrieval.patterns``). The generator records which export record
expresses which real-world fact, so relevance is known, not guessed:

* a **concept** is a query family with a predicate over facts ("running" -> workout
  facts with sport = running; "songs I listened to" -> music plays);
* an event is relevant to a concept when it expresses a fact the predicate holds
  for. An event that expresses no such fact but names the concept's value in its
  text is left out (it may well be relevant; the facts do not say);
* a pattern is relevant when (nearly) all the events it matches are, irrelevant when
  (nearly) none are, partial otherwise - ReQAP's definition.

Train pairs come from the train personas, dev pairs from the dev persona, so dev
measures another life: its people, artists and restaurants are its own (sports,
cuisines and genres recur, as they do between real people).
"""
from __future__ import annotations

import json
import logging
import random
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path, PurePosixPath

from engine.retrieval.words import stems

log = logging.getLogger(__name__)

VERSIONS = {"pattern_classifier": "patterns-2", "event_classifier": "events-6"}
PATTERN_LABELS = ("relevant", "irrelevant", "partial")
PERSONAS = {"train": ("p1", "p2", "p3"), "dev": ("p4",)}
YEARS, SCALE = 1.0, 0.3          # a year of each life, music/mail/TV thinned: ~6k events each
RELEVANT_SHARE, IRRELEVANT_SHARE = 0.9, 0.02
KIND_SHARE = 0.25                # of the event classifier's concepts, kinds of event (see event_pairs)

#: how imported events are matched to the facts they express (``link``); the
#: extractor's persona examples depend on it too. link-2: a calendar event's UID ends
#: its locator (link-1 read it only before a comma, so no one-off calendar event -
#: a restaurant booking, an appointment, a trip - was linked, and each was a negative
#: for its own concept: the event classifier scored "Dinner: Saura Izakaya" 0.08 for
#: "restaurants")
LINKING = "link-2"


def data_version(role: str) -> str:
    """The role's generator version, the linking's and a hash of the code its pairs
    come from (the persona simulator, verbalisation and patterns), so a change there
    retrains the classifier instead of reusing a stale one. A change to this module
    bumps the role's entry in ``VERSIONS`` (or ``LINKING``); importers are not hashed
    (a speed-up there must not cost a retrain): a change to what an importer writes
    bumps both entries."""
    return f"{VERSIONS[role]}:{LINKING}:{corpus_version()}"


#: the generator's modules the corpus is made with: not its question templates (the
#: corpus is written without questions) nor its benchmark tools, so a new question,
#: split or check there does not retrain the classifiers
CORPUS_MODULES = ("canonical", "exports", "personas", "simulate", "verbalize", "world")


def corpus_version() -> str:
    """A hash of the code the corpus comes from (see ``data_version``)."""
    import hashlib

    import engine.retrieval
    import synth

    retrieval = Path(engine.retrieval.__file__).parent
    generator = Path(synth.__file__).parent
    files = [*(generator / f"{name}.py" for name in CORPUS_MODULES),
             retrieval / "verbalise.py", retrieval / "patterns.py"]
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------------- concepts
# (fact kind, attribute or None, query templates). {v} is the attribute's value.
_CONCEPTS: list[tuple[str, str | None, tuple[str, ...]]] = [
    ("music_play", None, ("songs I listened to", "music I played", "tracks I streamed", "listening to music",
                          "songs on Spotify", "music")),
    ("podcast_play", None, ("podcast episodes I listened to", "podcasts", "podcast listening")),
    ("tv_view", None, ("shows I watched", "TV episodes I streamed", "series I watched on Netflix", "watching TV")),
    ("workout", None, ("workouts", "exercise", "sport sessions", "training sessions", "physical activity")),
    ("meal_out", None, ("restaurant visits", "eating out", "meals at restaurants", "dinners out", "restaurants")),
    ("purchase", None, ("things I bought", "purchases", "online orders", "shopping", "orders")),
    ("meeting", None, ("meetings", "work meetings", "team meetings")),
    ("email", None, ("emails", "mails I sent or received", "messages in my inbox")),
    ("social", None, ("meeting friends", "social outings", "time with friends")),
    ("trip", None, ("trips", "travel", "journeys", "holidays abroad")),
    ("birthday", None, ("birthdays", "birthday dates")),
    ("appointment", None, ("appointments", "doctor or hairdresser appointments")),
    ("journal_note", None, ("diary entries", "journal notes", "my diary")),
    ("chat", None, ("chatbot conversations", "questions I asked ChatGPT", "AI chats")),
    ("steps", None, ("daily step counts", "steps I walked")),
    ("workout", "sport", ("{v}", "{v} sessions", "times I went {v}", "my {v} workouts", "{v} activities")),
    ("meal_out", "cuisine", ("{v} food", "{v} restaurants", "eating {v}", "{v} dinners")),
    ("meal_out", "restaurant", ("meals at {v}", "{v}", "visits to {v}")),
    ("music_play", "artist", ("songs by {v}", "{v}", "listening to {v}", "{v} tracks")),
    ("music_play", "genre", ("{v} music", "{v} songs", "listening to {v}")),
    ("podcast_play", "show", ("{v} episodes", "{v}", "listening to {v}")),
    ("tv_view", "show", ("watching {v}", "{v} episodes", "{v}")),
    ("purchase", "category", ("{v} purchases", "buying {v}", "{v} I ordered")),
    ("purchase", "shop", ("orders from {v}", "{v} orders", "what I bought at {v}")),
    ("social", "activity", ("{v} with friends", "{v}", "going for {v}")),
    ("trip", "city", ("trip to {v}", "travel to {v}", "{v}")),
    ("email", "counterpart", ("emails with {v}", "mails from {v}", "messages to {v}")),
    ("chat", "topic", ("chats about {v}", "ChatGPT conversations about {v}")),
    (None, "people", ("time with {v}", "{v}", "meeting {v}", "things I did with {v}")),
]
MIN_VALUE_FACTS = 3  # a value needs this many facts to make a concept


@dataclass(frozen=True, slots=True)
class Pair:
    query: str
    text: str
    label: int  # event: 0/1; pattern: index into PATTERN_LABELS


@dataclass(frozen=True, slots=True)
class Concept:
    query_templates: tuple[str, ...]
    kind: str | None
    attr: str | None
    value: str | None

    def holds(self, fact: dict) -> bool:
        if self.kind is not None and fact["kind"] != self.kind:
            return False
        if self.attr is None:
            return True
        v = fact["attributes"].get(self.attr)
        if isinstance(v, list):
            return self.value in v
        return v == self.value

    def query(self, rng: random.Random) -> str:
        return rng.choice(self.query_templates).format(v=self.value or "")


@dataclass(slots=True)
class CorpusEvent:
    source: str
    kind: str
    text: str                          # verbalised, as RETRIEVE's models see it
    items: frozenset                   # pattern items
    facts: list[int] = field(default_factory=list)  # indexes into Corpus.facts
    brief: str = ""                    # its prose, as EXTRACT hands it to the extractor


@dataclass(slots=True)
class Corpus:
    events: list[CorpusEvent]
    facts: list[dict]
    concepts: list[Concept]
    # Derived once: both classifiers ask relevance() for hundreds of concepts, and
    # scanning every fact and lower-casing every text each time took over a minute.
    lowered: list[str] = field(default_factory=list)
    events_of_fact: list[list[int]] = field(default_factory=list)
    groups: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # (source, kind) -> events
    facts_of_kind: dict[str, list[int]] = field(default_factory=dict)
    facts_of_value: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    _relevance: dict[Concept, list[bool | None]] = field(default_factory=dict)
    _value_patterns: dict[tuple[str, str], list[tuple[str, list[int]]]] = field(default_factory=dict)
    by_stem: dict[str, list[int]] = field(default_factory=dict)  # see word_index()

    def __post_init__(self) -> None:
        self.lowered = [e.text.lower() for e in self.events]
        self.events_of_fact = [[] for _ in self.facts]
        for i, e in enumerate(self.events):
            self.groups.setdefault((e.source, e.kind), []).append(i)
            for f in e.facts:
                self.events_of_fact[f].append(i)
        for f, fact in enumerate(self.facts):
            self.facts_of_kind.setdefault(fact["kind"], []).append(f)
            for attr, v in fact["attributes"].items():
                for x in (v if isinstance(v, list) else [v]):
                    if isinstance(x, str):
                        self.facts_of_value.setdefault((attr, x), []).append(f)

    def holding(self, concept: Concept) -> list[int]:
        """The facts ``concept`` holds for (what ``Concept.holds`` says, from the indexes)."""
        if concept.attr is None:
            pool = self.facts_of_kind.get(concept.kind, []) if concept.kind is not None else range(len(self.facts))
        else:
            pool = self.facts_of_value.get((concept.attr, concept.value), [])
        return [f for f in pool if concept.holds(self.facts[f])]


# ---------------------------------------------------------------------------- matching facts to events
_MSGID = re.compile(r"Message-ID (<[^>]+>)")
_UID = re.compile(r"UID ([^\s,]+)")
_ITEM = re.compile(r"^(item \d+)")
_LINE = re.compile(r"^line (\d+)")
_WORKOUT = re.compile(r"^Workout \d+ \((.+)\)$")


def _event_keys(file: str, locator: str, attrs: dict, start, offset_min: int | None) -> set[tuple[str, str]]:
    """The (file name, record) keys an imported event may carry in the generator's
    record notation (``synth.exports``)."""
    name = PurePosixPath(file.replace("\\", "/")).name
    tokens = {locator, name}
    for rx in (_MSGID, _ITEM, _WORKOUT):
        m = rx.search(locator)
        if m:
            tokens.add(m.group(1) if rx is not _WORKOUT else f"Workout {m.group(1)}")
    m = _LINE.search(locator)
    if m:
        tokens.add(f"row {m.group(1)}")
    m = _UID.search(locator)
    if m:
        uid = m.group(1)
        tokens.add(uid)
        if start is not None:
            local = start + timedelta(minutes=offset_min or 0)
            tokens.add(f"{uid} {local:%Y%m%d}")
    for key in ("activity_id", "conversation_id"):
        if attrs.get(key):
            tokens.add(str(attrs[key]))
    if attrs.get("order_id"):
        tokens.add(f"{attrs['order_id']} {attrs.get('asin', '')}")
    if locator.startswith("StepCount") or "steps" in attrs:
        if start is not None:
            tokens.add(f"StepCount {(start + timedelta(minutes=offset_min or 0)):%Y-%m-%d}")
    return {(name, t) for t in tokens}


def _fact_key(export: dict) -> tuple[str, str]:
    record = export["record"]
    if re.fullmatch(r"\S+ \d{8}T\d{6}Z?", record):  # a recurring calendar occurrence: uid + local date
        uid, when = record.split(" ")
        record = f"{uid} {when[:8]}"
    return PurePosixPath(export["file"]).name, record


def fact_index(facts: list[dict], offset: int = 0) -> dict[tuple[str, str], list[int]]:
    """(file name, record) -> indexes of the facts that export record expresses."""
    by_key: dict[tuple[str, str], list[int]] = {}
    for i, f in enumerate(facts):
        for e in f["exports"]:
            by_key.setdefault(_fact_key(e), []).append(offset + i)
    return by_key


def link(by_key: dict[tuple[str, str], list[int]], file: str, locator: str | None, attrs: dict, start,
         offset_min: int | None) -> list[int]:
    """The facts an imported event expresses (indexes, sorted)."""
    return sorted({i for k in _event_keys(file, locator or "", attrs, start, offset_min) for i in by_key.get(k, ())})


# ---------------------------------------------------------------------------- corpus
_corpora: dict[tuple[str, ...], Corpus] = {}


def corpus(split: str) -> Corpus:
    """The split's personas, simulated, exported, imported and labelled (memoised:
    the build asks for each split several times)."""
    personas = PERSONAS[split]
    if personas not in _corpora:
        _corpora[personas] = _build_corpus(personas)
    return _corpora[personas]


def _build_corpus(personas: tuple[str, ...]) -> Corpus:
    import orjson

    from engine.ingest import import_paths
    from engine.operators.extract import extractor_text
    from engine.retrieval.verbalise import key_values, pattern_items, verbalise
    from engine.store import EventStore
    from synth.personas import generate

    events: list[CorpusEvent] = []
    facts: list[dict] = []
    for persona in personas:
        with tempfile.TemporaryDirectory(prefix="hindsight-retrieval-") as tmp:
            m = generate(persona, tmp, years=YEARS, scale=SCALE, with_questions=False)
            own_facts = [json.loads(line) for line in open(Path(tmp) / m.canonical, encoding="utf-8")]
            by_key = fact_index(own_facts, offset=len(facts))
            facts.extend(own_facts)
            with EventStore(":memory:") as store:
                import_paths(store, [Path(tmp) / m.exports_dir])
                rows = store.reader().execute(
                    'SELECT source, kind, title, text, attributes, file, locator, start, tz_offset_min '
                    'FROM events ORDER BY start, id').fetchall()
        matched = 0
        for source, kind, title, text, attrs_json, file, locator, start, offset in rows:
            attrs = orjson.loads(attrs_json) if attrs_json else {}
            pairs = key_values(source, kind, title, text, attrs)
            linked = link(by_key, file, locator, attrs, start, offset)
            matched += bool(linked)
            events.append(CorpusEvent(source, kind, verbalise(pairs), frozenset(pattern_items(pairs)), linked,
                                      extractor_text(source, kind, title, text)))
        log.info("retrieval corpus: persona %s, %d events, %d linked to facts", persona, len(rows), matched)
    return Corpus(events, facts, _concepts(facts))


def _concepts(facts: list[dict]) -> list[Concept]:
    out: list[Concept] = []
    for kind, attr, templates in _CONCEPTS:
        if attr is None:
            if any(f["kind"] == kind for f in facts):
                out.append(Concept(templates, kind, None, None))
            continue
        counts: dict[str, int] = {}
        for f in facts:
            if kind is not None and f["kind"] != kind:
                continue
            v = f["attributes"].get(attr)
            for x in (v if isinstance(v, list) else [v]):
                if isinstance(x, str) and x and len(x) <= 60:
                    counts[x] = counts.get(x, 0) + 1
        out.extend(Concept(templates, kind, attr, v) for v, c in sorted(counts.items()) if c >= MIN_VALUE_FACTS)
    return out


def relevance(c: Corpus, concept: Concept) -> list[bool | None]:
    """Per event: True (expresses a fact the concept holds for), False, or None
    (no such fact, but the text names the value: unknown)."""
    if concept in c._relevance:
        return c._relevance[concept]
    out: list[bool | None] = [False] * len(c.events)
    needle = (concept.value or "").lower()
    if needle:
        for i, text in enumerate(c.lowered):
            if needle in text:
                out[i] = None
    for f in c.holding(concept):
        for i in c.events_of_fact[f]:
            out[i] = True
    c._relevance[concept] = out
    return out


# ---------------------------------------------------------------------------- pairs
def _label(shares: tuple[int, int], group_share: float | None = None) -> int | None:
    """ReQAP's label from (relevant events, events matched). For a value pattern
    inside a partial group (``group_share`` given), "none relevant" counts only when
    the group's share would have predicted at least 3: seven Sundays without a
    Chinese dinner say nothing about Sundays."""
    pos, n = shares
    if n == 0:
        return None
    share = pos / n
    if share >= RELEVANT_SHARE:
        return PATTERN_LABELS.index("relevant")
    if share <= IRRELEVANT_SHARE and (group_share is None or n * group_share >= 3):
        return PATTERN_LABELS.index("irrelevant")
    return PATTERN_LABELS.index("partial")


def labelled_patterns(c: Corpus, concept: Concept) -> list[tuple[str, int]]:
    """(pattern text, label) for the concept: every group pattern, and the value
    patterns of the groups that are partial for it, as RETRIEVE would ask."""
    from engine.retrieval.patterns import describe_pattern, group_pattern, matches, value_patterns

    rel = relevance(c, concept)
    out: list[tuple[str, int]] = []
    for (source, kind), members in sorted(c.groups.items()):
        known = [i for i in members if rel[i] is not None]
        g = group_pattern(source, kind)
        positives = sum(1 for i in known if rel[i])
        label = _label((positives, len(known)))
        if label is None:
            continue
        out.append((describe_pattern(g), label))
        if PATTERN_LABELS[label] != "partial":
            continue
        if (source, kind) not in c._value_patterns:  # the same for every concept
            c._value_patterns[(source, kind)] = [
                (describe_pattern(p), [i for i in members if matches(p, c.events[i].items)])
                for p, _ in value_patterns(g, (set(c.events[i].items) for i in members))]
        for text, matched in c._value_patterns[(source, kind)]:
            sel = [i for i in matched if rel[i] is not None]
            pl = _label((sum(1 for i in sel if rel[i]), len(sel)), positives / len(known))
            if pl is not None:
                out.append((text, pl))
    return out


def _split_rng(seed: int, split: str, what: str) -> random.Random:
    return random.Random(f"{seed}:{split}:{what}")


def pattern_pairs(seed: int, split: str) -> Iterator[Pair]:
    """Endless (query, pattern text, label) triples. Concepts are drawn half from
    the kinds of event ("songs I listened to") and half from values ("running",
    "Ana"): values outnumber kinds fifty to one, and a classifier fed in proportion
    never sees a relevant group. Per concept, one pattern per (level, label) seen,
    so group and value patterns each come with their contrasts."""
    c = corpus(split)
    rng = _split_rng(seed, split, "patterns")
    kinds = [i for i, x in enumerate(c.concepts) if x.attr is None]
    values = [i for i, x in enumerate(c.concepts) if x.attr is not None]
    cache: dict[int, dict[tuple[str, int], list[str]]] = {}
    while True:
        k = rng.choice(kinds if (rng.random() < 0.5 or not values) else values)
        if k not in cache:
            buckets: dict[tuple[str, int], list[str]] = {}
            for text, label in labelled_patterns(c, c.concepts[k]):
                level = "group" if text.count(" | ") == 1 else "value"
                buckets.setdefault((level, label), []).append(text)
            cache[k] = buckets
        query = c.concepts[k].query(rng)
        for key in sorted(cache[k]):
            yield Pair(query, rng.choice(cache[k][key]), key[1])


def word_index(c: Corpus) -> dict[str, list[int]]:
    """Stem -> the events whose text has it (built once per corpus)."""
    if not c.by_stem:
        for i, text in enumerate(c.lowered):
            for st in stems(text):
                c.by_stem.setdefault(st, []).append(i)
    return c.by_stem


def event_pairs(seed: int, split: str, *, negatives: int = 3) -> Iterator[Pair]:
    """Endless (query, event text, 0/1) pairs: one positive, then ``negatives``
    negatives in turn: one of the positive's source and kind, one that shares a
    word with the query (a song called "Run Away" for "running": what the search
    stage hands the classifier, and what it let through before), one at random."""
    c = corpus(split)
    index = word_index(c)
    rng = _split_rng(seed, split, "events")
    cache: dict[int, tuple[list[int], dict[tuple[str, str], list[int]], list[int]]] = {}
    lexical: dict[tuple[int, str], list[int]] = {}
    kinds = [i for i, x in enumerate(c.concepts) if x.attr is None]
    while True:
        # kinds of event ("restaurants", "meetings") are 15 concepts of ~700: drawn in
        # proportion, the classifier saw a few pairs of each and judged them by their words
        k = rng.choice(kinds) if kinds and rng.random() < KIND_SHARE else rng.randrange(len(c.concepts))
        if k not in cache:
            rel = relevance(c, c.concepts[k])
            pos = [i for i, r in enumerate(rel) if r]
            neg = [i for i, r in enumerate(rel) if r is False]
            neg_by_group = {g: kept for g, members in c.groups.items()
                            if (kept := [i for i in members if rel[i] is False])}
            cache[k] = (pos, neg_by_group, neg)
        pos, neg_by_group, neg = cache[k]
        if not pos or not neg:
            continue
        query = c.concepts[k].query(rng)
        if (k, query) not in lexical:
            rel = relevance(c, c.concepts[k])
            lexical[(k, query)] = sorted({i for st in stems(query) for i in index.get(st, ()) if rel[i] is False})
        p = c.events[rng.choice(pos)]
        yield Pair(query, p.text, 1)
        for n in range(negatives):
            same = neg_by_group.get((p.source, p.kind))
            near = lexical[(k, query)]
            pool = same if (n % 3 == 0 and same) else near if (n % 3 == 1 and near) else neg
            yield Pair(query, c.events[rng.choice(pool)].text, 0)


STREAMS: dict[str, Callable[[int, str], Iterator[Pair]]] = {
    "pattern_classifier": pattern_pairs, "event_classifier": event_pairs}
