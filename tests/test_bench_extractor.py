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
