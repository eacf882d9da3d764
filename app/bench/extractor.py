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


#: dev examples set in long mails (``extract_data.long_mail_examples``)
LONG_MAILS = 300


def long_mails(extractor, embedder, *, segmenter=None, n: int = LONG_MAILS, echo: Echo = lambda _: None) -> dict:
    """Exact match per kind of value on dev examples set in long mails: read as
    EXTRACT reads a long text (its passages, :func:`engine.operators.extract.asking.ask_extractor`
    with the Embedder choosing the passage) and, for comparison in the same run, as
    one text cut where the extractor stops reading; and the seconds each took."""
    from engine.operators.extract import answered, extractor_text, people_named
    from engine.operators.extract.asking import ask_extractor
    from engine.plan.rows import Row
    from models.build import _profile_params
    from models.training import extract_data

    examples = extract_data.long_mail_examples(_profile_params("full")["extractor"].seed, n)
    echo(f"long mails: {len(examples):,} examples, {sum(len(e.text) for e in examples) / len(examples):.0f} "
         "characters on average")
    titles = [e.text.split(" on ", 1)[1].split(": Hello", 1)[0] for e in examples]
    rows = [Row({"source": "mail", "kind": "mail", "title": t, "text": e.text}, [f"mail-{i}"])
            for i, (e, t) in enumerate(zip(examples, titles))]
    by_key: dict[str, list[int]] = {}
    for i, e in enumerate(examples):
        by_key.setdefault(e.key, []).append(i)
    t0 = time.perf_counter()
    read: list = [None] * len(examples)
    for key, members in by_key.items():
        for i, a in zip(members, ask_extractor(extractor, key, [rows[i] for i in members], segmenter,
                                               embedder=embedder)):
            read[i] = a
    passages_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    queries = [(extractor_text("mail", "mail", t, e.text), e.key) for e, t in zip(examples, titles)]
    whole = []
    for (text, key), a in zip(queries, extractor.extract(queries)):
        made = answered(a, text, key)
        whole.append(made if made is not None else people_named(text, key, segmenter))
    whole_s = time.perf_counter() - t0
    buckets: dict[str, list[int]] = {}
    for e, a, w in zip(examples, read, whole):
        for b in (e.bucket, "all"):
            n_ = buckets.setdefault(b, [0, 0, 0])
            n_[0] += 1
            n_[1] += (w or "") == e.value
            n_[2] += (a or "") == e.value
    return {"n": len(examples), "whole_seconds": round(whole_s, 2), "passages_seconds": round(passages_s, 2),
            "buckets": {b: {"n": k, "whole": round(w / k, 4), "passages": round(a / k, 4)}
                        for b, (k, w, a) in sorted(buckets.items())}}


def long_mail_table(figures: dict) -> str:
    rows = ["| kind of value | examples | read whole (cut) | read in passages |", "|---|---:|---:|---:|"]
    for bucket, f in figures["buckets"].items():
        rows.append(f"| {bucket} | {f['n']:,} | {f['whole']:.1%} | {f['passages']:.1%} |")
    rows += ["", f"{figures['n']} long mails: {figures['whole_seconds']} s read whole, "
                 f"{figures['passages_seconds']} s in passages (the Embedder choosing each mail's passage; "
                 "EXTRACT over an index uses its stored vectors instead)"]
    return "\n".join(rows)


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
