"""``hindsight bench extractor``: exact match of EXTRACT's answers, per kind of value.

Two sets, the same the model build reports on (``models.build``): the extractor's
dev examples, whose names, places and products never occur in training, and
examples from the dev persona's events as the importers write them. For each, the
model's raw answer and the answer EXTRACT makes of it
(:func:`engine.operators.extract.answered`: a name made whole, people as the whole
list they are named in, a category the text names; with a segmenter, the people it
finds where the model named nobody) are compared with the gold
value, and the model's throughput is timed on the first set.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence

Echo = Callable[[str], None]


def run(extractor, *, echo: Echo = lambda _: None, sets: dict[str, Sequence] | None = None,
        segmenter=None) -> dict:
    """Figures for ``extractor`` (``.extract([(text, key), ...]) -> [answer, ...]``) on
    ``sets`` (name -> examples with ``text``, ``key``, ``value`` and ``bucket``); the
    build's dev sets by default. ``segmenter`` is EXTRACT's (``Models.segmenter``)."""
    from engine.operators.extract import answered, people_named

    sets = sets if sets is not None else _dev_sets()
    figures: dict = {"sets": {}}
    for name, examples in sets.items():
        echo(f"{name}: {len(examples):,} examples")
        t0 = time.perf_counter()
        raw = extractor.extract([(e.text, e.key) for e in examples])
        seconds = time.perf_counter() - t0
        buckets: dict[str, list[int]] = {}
        for e, r in zip(examples, raw):
            made = answered(r, e.text, e.key)
            if made is None:
                made = people_named(e.text, e.key, segmenter)
            for b in (e.bucket, "all"):
                n = buckets.setdefault(b, [0, 0, 0])
                n[0] += 1
                n[1] += (r or "") == e.value
                n[2] += (made or "") == e.value
        figures["sets"][name] = {
            "examples_per_s": round(len(examples) / seconds, 1) if seconds else None,
            "buckets": {b: {"n": n, "raw": round(r / n, 4), "answered": round(a / n, 4)}
                        for b, (n, r, a) in sorted(buckets.items())}}
    return figures


def _dev_sets() -> dict[str, list]:
    from models.build import _profile_params
    from models.training import extract_data

    params = _profile_params("full")["extractor"]
    return {"dev (unseen entities)": list(itertools.islice(extract_data.examples(params.seed, "dev"),
                                                           params.dev_examples)),
            "dev persona": list(itertools.islice(extract_data.persona_examples(params.seed, "dev"),
                                                 params.persona_dev_examples))}


def table(figures: dict) -> str:
    rows = ["| set | kind of value | examples | raw exact | as EXTRACT answers |", "|---|---|---:|---:|---:|"]
    for name, s in figures["sets"].items():
        for bucket, f in s["buckets"].items():
            rows.append(f"| {name} | {bucket} | {f['n']:,} | {f['raw']:.1%} | {f['answered']:.1%} |")
    rows.append("")
    rows += [f"{name}: {s['examples_per_s']} examples/s (one call, the runtime's batching)"
             for name, s in figures["sets"].items()]
    return "\n".join(rows)
