"""Public entry points of the persona generator: ``list_personas()``,
``generate(persona, out_dir) -> Manifest`` and ``write_demo(out_dir) -> Manifest``.

A generated persona folder holds ``exports/`` (the files a user would drop in),
``canonical.jsonl`` (one row per fact), ``questions.jsonl`` (questions with gold
answers and evidence) and ``manifest.json``. Nothing here imports into a store.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from synth import exports as ex
from synth.canonical import CANONICAL_FILE, write_canonical
from synth.simulate import simulate
from synth.world import DEMO, PERSONAS, build_world, persona_spec

log = logging.getLogger(__name__)

QUESTIONS_FILE = "questions.jsonl"
MANIFEST_FILE = "manifest.json"
DEMO_SOURCES = ("spotify", "calendar", "strava", "journal", "amazon", "mail")
# Sample questions the demo prints answers to: (template id, question variant).
DEMO_TEMPLATES = ("count:run:month", "sum:amazon_spend:year", "argmax:artist:year", "join:artist_while_running",
                  "join:cuisine_after_football", "argmax:restaurant:all", "temporal:last:run",
                  "argmax:run_partner:all")


@dataclass(slots=True)
class Manifest:
    persona: str
    split: str
    seed: int
    out_dir: str
    start: str
    today: str
    exports: dict[str, list[str]]  # source -> paths relative to exports_dir
    exports_dir: str
    canonical: str
    questions: str
    facts: int
    facts_per_kind: dict[str, int]
    records_per_source: dict[str, int]  # distinct export records (rows, mails, files, plays)
    facts_per_source: dict[str, int]  # canonical facts each source expresses
    questions_count: int = 0
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def load(cls, out_dir: str | Path) -> "Manifest":
        with open(Path(out_dir) / MANIFEST_FILE, encoding="utf-8") as f:
            data = json.load(f)
        data.pop("out_dir", None)
        return cls(out_dir=str(out_dir), **data)


def list_personas() -> list[dict]:
    """The persona ids with their split, home and span."""
    return [{"id": p.id, "name": p.name, "split": p.split, "home": p.home_city, "tz": p.home_tz,
             "start": p.start.isoformat(), "years": p.years, "sports": list(p.sports)} for p in PERSONAS.values()]


def generate(persona: str | int, out_dir: str | Path, *, years: float | None = None, scale: float = 1.0,
             sources: tuple[str, ...] | None = None, questions_per_template: int = 3,
             with_questions: bool = True) -> Manifest:
    """Simulate ``persona`` (an id from :func:`list_personas` or an integer seed) and
    write its exports, canonical facts and questions under ``out_dir``.

    ``years`` overrides the persona's span; ``scale`` < 1 thins music, mail and TV
    (for tests and the demo); ``sources`` limits which exports are written.
    """
    t0 = time.perf_counter()
    spec = persona_spec(persona)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    world = build_world(spec)
    life = simulate(world, years=years, scale=scale)
    # Stable ids in time order, so ids read like a timeline.
    life.facts.sort(key=lambda f: (f.start.timestamp(), f.kind, json.dumps(f.attrs, sort_keys=True, default=str)))
    for i, f in enumerate(life.facts):
        f.id = f"{spec.id}-{i:06d}"
    exports_dir = out / "exports"
    paths = ex.write_all(life, exports_dir, sources)
    # A fact no written export expresses is not knowable: leave it out.
    facts = [f for f in life.facts if f.exports]
    n = write_canonical(facts, out / CANONICAL_FILE)
    per_kind: dict[str, int] = {}
    per_source: dict[str, int] = {}
    records: dict[str, set[tuple[str, str]]] = {}
    for f in facts:
        per_kind[f.kind] = per_kind.get(f.kind, 0) + 1
        for name in sorted({_source_of(e["file"]) for e in f.exports}):
            per_source[name] = per_source.get(name, 0) + 1
        for e in f.exports:
            records.setdefault(_source_of(e["file"]), set()).add((e["file"], e["record"]))
    manifest = Manifest(
        persona=spec.id, split=spec.split, seed=spec.seed, out_dir=str(out), start=life.start.isoformat(),
        today=life.end.isoformat(), exports=paths, exports_dir="exports", canonical=CANONICAL_FILE,
        questions=QUESTIONS_FILE if with_questions else "", facts=n, facts_per_kind=dict(sorted(per_kind.items())),
        records_per_source={k: len(v) for k, v in sorted(records.items())},
        facts_per_source=dict(sorted(per_source.items())))
    if with_questions:
        from synth.questions import write_questions

        manifest.questions_count = write_questions(out / CANONICAL_FILE, out / QUESTIONS_FILE, persona=spec.id,
                                                   today=life.end, seed=spec.seed,
                                                   per_template=questions_per_template)
    manifest.seconds = round(time.perf_counter() - t0, 2)
    _write_manifest(manifest)
    log.info("persona %s: %d facts in %.1f s", spec.id, n, manifest.seconds)
    return manifest


def _write_manifest(manifest: Manifest) -> None:
    with open(Path(manifest.out_dir) / MANIFEST_FILE, "w", encoding="utf-8", newline="\n") as f:
        # seconds and the folder vary run to run; keep them out so the file stays byte-identical
        body = manifest.to_json()
        body.pop("seconds")
        body.pop("out_dir")
        json.dump(body, f, indent=2, ensure_ascii=False, sort_keys=True)
        f.write("\n")


def _source_of(path: str) -> str:
    p = path.lower()
    for key, name in (("spotify", "spotify"), ("netflix", "netflix"), (".mbox", "mail"), (".ics", "calendar"),
                      ("orderhistory", "amazon"), ("export.xml", "health"), ("strava", "strava"),
                      ("journal/", "journal"), ("conversations", "chatgpt")):
        if key in p:
            return name
    return "other"


def write_demo(out_dir: str | Path) -> Manifest:
    """The small bundled demo: one year, a few thousand events, six sources, and
    about eight sample questions with gold answers in ``questions.jsonl``."""
    from synth.questions import demo_questions

    m = generate(DEMO.id, out_dir, years=1.0, scale=0.15, sources=DEMO_SOURCES, with_questions=False)
    sample = demo_questions(Path(out_dir) / CANONICAL_FILE, DEMO_TEMPLATES, today=m.today, seed=DEMO.seed)
    with open(Path(out_dir) / QUESTIONS_FILE, "w", encoding="utf-8", newline="\n") as f:
        for q in sample:
            f.write(json.dumps(q, ensure_ascii=False, sort_keys=True) + "\n")
    m.questions = QUESTIONS_FILE
    m.questions_count = len(sample)
    _write_manifest(m)
    return m
