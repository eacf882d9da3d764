"""The test split is for measuring only: its questions and its personas' names stay
out of the product's code and its tests (see ``synth.leakage``)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from synth import leakage
from synth.world import PERSONAS

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("engine", "models", "importers", "app", "tests")
SUFFIXES = {".py", ".json", ".jsonl", ".txt", ".md", ".gbnf", ".csv", ".ics", ".mbox", ".xml", ".html", ".gz"}


def _files():
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts:
                yield path


def test_no_test_split_question_or_name_in_the_code():
    leaks = leakage.scan(_files(), ROOT)
    listed = "\n".join(f"{x.path}:{x.line}: {x.what}: {x.text!r}" for x in leaks[:40])
    assert not leaks, f"{len(leaks)} quotes of the test split (rephrase from train/dev, or remove):\n{listed}"


def test_there_is_a_test_split_to_guard():
    assert [p.id for p in PERSONAS.values() if p.split == "test"]
    assert len(leakage.held_out_quotes()) > 50
    assert len(leakage.held_out_names()) > 1000


def _planted(tmp_path, line: str):
    f = tmp_path / "planted.py"
    f.write_text(f"x = 1\n{line}\n", encoding="utf-8")
    return leakage.scan([f], tmp_path)


@pytest.mark.parametrize("index", [0, 7, -1])
def test_the_guard_finds_a_planted_test_question(tmp_path, index):
    quote = leakage.held_out_quotes()[index]
    asked = re.sub(r"\{[^}]*\}", "2023", quote.text)
    leaks = _planted(tmp_path, f"    # asked {asked.capitalize()!r}, the planner wrote")
    assert [x.line for x in leaks] == [2]
    assert any(x.what == quote.label for x in leaks)


def test_the_guard_reads_compressed_training_data(tmp_path):
    import gzip

    quote = leakage.held_out_quotes()[3]
    f = tmp_path / "pairs.jsonl.gz"
    f.write_bytes(gzip.compress(('{"question": "' + re.sub(r"\{[^}]*\}", "2023", quote.text) + '"}\n').encode()))
    assert [x.path for x in leakage.scan([f], tmp_path)] == ["pairs.jsonl.gz"]


def test_the_guard_finds_a_fresh_eval_question(tmp_path):
    from synth import fresh

    q = next(q for q in fresh.load("eval") if len(q.question.split()) >= 6)
    leaks = _planted(tmp_path, f"QUESTIONS = [{q.question!r}]")
    assert f"fresh-eval {q.id}" in [x.what for x in leaks]


def test_the_guard_finds_a_frozen_aggregative_question(tmp_path):
    texts = leakage.aqa_fresh_questions()
    assert len(texts) >= 50
    leaks = _planted(tmp_path, f"    _ex({texts[5]!r}, 'plan')")
    assert "aqa-fresh 6" in [x.what for x in leaks]


def test_the_guard_finds_a_test_persona_name(tmp_path):
    name = next(p.name for p in PERSONAS.values() if p.split == "test")
    leaks = _planted(tmp_path, f"owner = {name!r}")
    assert [(x.line, x.what) for x in leaks] == [(2, "test-persona name")]


def test_train_and_dev_wording_is_not_a_leak(tmp_path):
    from synth.questions import templates

    text = next(t for tpl in templates("train") for t in tpl.texts if "{" not in t and len(t.split()) >= 5)
    f = tmp_path / "ok.py"
    f.write_text(f"# {text}\nname = 'Mara Lindqvist'\n", encoding="utf-8")
    assert leakage.scan([f], tmp_path) == []
