"""``hindsight bench extractor``: exact match raw and as EXTRACT answers (a fake model)."""
from __future__ import annotations

from dataclasses import dataclass

from app.bench import extractor


@dataclass
class _Ex:
    text: str
    key: str
    value: str
    bucket: str


class _Cut:
    """Cuts every answer short, as the model does: "Osteria da", "Emily,"."""

    def extract(self, items):
        return ["Osteria da" if "Osteria" in text else "Emily," for text, _ in items]


def test_raw_and_answered_exact_match_per_kind_of_value():
    sets = {"dev": [_Ex("Dinner at Osteria da Hänel.", "restaurant", "Osteria da Hänel", "place"),
                    _Ex("Football with Emily, Susanne and Flora.", "people", "Emily, Susanne and Flora", "name"),
                    _Ex("Football with Emily, Susanne and Flora.", "restaurant", "", "absent")]}
    figures = extractor.run(_Cut(), sets=sets)
    b = figures["sets"]["dev"]["buckets"]
    assert b["place"] == {"n": 1, "raw": 0.0, "answered": 1.0}
    assert b["name"] == {"n": 1, "raw": 0.0, "answered": 1.0}
    assert b["absent"]["answered"] == 0.0  # a name where the text states none is wrong
    assert b["all"]["n"] == 3 and abs(b["all"]["answered"] - 2 / 3) < 1e-3
    assert "| dev | place | 1 | 0.0% | 100.0% |" in extractor.table(figures)


class _Sees:
    """Answers the gold value when the text it reads holds it; the value's key is asked."""

    def __init__(self, golds):
        self.golds = golds

    def extract(self, items):
        return [next((g for g in self.golds if g in text), "") for text, _ in items]


class _FlatEmbedder:
    dimension = 2

    def embed(self, texts):
        return [[1.0, 0.0] for _ in texts]


def test_long_mails_are_read_in_passages_and_whole():
    from models.build import _profile_params
    from models.training.extract_data import long_mail_examples

    examples = long_mail_examples(_profile_params("full")["extractor"].seed, 12)
    assert all(e.text[e.span[0]:e.span[1]] == e.value for e in examples)
    assert all(len(e.text) > 300 and e.text.startswith("Mail from ") for e in examples)
    golds = [e.value for e in examples]
    figures = extractor.long_mails(_Sees(golds), _FlatEmbedder(), n=12)
    b = figures["buckets"]
    assert b["all"]["n"] == 12
    # a model that finds what it reads: the passages hold every value, the cut text not all
    assert b["all"]["passages"] > b["all"]["whole"]
    assert "| all | 12 |" in extractor.long_mail_table(figures)
