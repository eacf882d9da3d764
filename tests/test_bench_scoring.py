"""Hit@1 and Rlx-Hit@1 as a reader of the benchmark tables would check them."""
from __future__ import annotations

from datetime import date, datetime

import pytest

from app.bench import scoring


@pytest.mark.parametrize("pred, gold, hit, rlx", [
    # numbers: exact after rounding to the gold's decimals, relaxed within ±10%
    (460, [[460]], True, True),
    ("460", [[460]], True, True),
    ("1,204", [[1204]], True, True),
    (460.4, [[460]], True, True),
    (461, [[460]], False, True),
    (506, [[460]], False, True),      # +10.0%: still inside
    (507, [[460]], False, False),     # +10.2%
    (414, [[460]], False, True),      # -10.0%
    (413, [[460]], False, False),
    (12.3, [[12.3]], True, True),
    (12.301, [[12.3]], True, True),
    (12.34, [[12.3]], False, True),
    (12.4, [[12.3]], False, True),
    (10866.99, [[10867.0]], False, True),
    (30.12, [["30.119632907243528"]], True, True),
    (0.3, [["0.2962962962962963"]], True, True),   # shown to 2 decimals
    (0.29, [["0.2962962962962963"]], False, True),
    (0, [[0]], True, True),
    (1, [[0]], False, False),
    ("55", [["55 minutes"]], False, True),
    (55, [["55 minutes"]], False, True),
    ("55 minutes", [["55 minutes"]], True, True),
    ("about 460 plays", [[460]], False, True),
    (True, [[1]], False, False),      # a boolean is not the number 1
])
def test_numbers(pred, gold, hit, rlx):
    assert scoring.hit_at_1(pred, gold) is hit
    assert scoring.relaxed_hit_at_1(pred, gold) is rlx


@pytest.mark.parametrize("pred, gold, hit, rlx", [
    ("2024-11-20", [["2024-11-20"]], True, True),
    ("2024-11-20T08:15:00", [["2024-11-20"]], True, True),
    ("2024-11-20T08:15:00+01:00", [["2024-11-20"]], True, True),
    (date(2024, 11, 20), [["2024-11-20"]], True, True),
    (datetime(2024, 11, 20, 23, 59), [["2024-11-20"]], True, True),
    ("Wednesday 20 November 2024", [["2024-11-20"]], True, True),
    ("November 20, 2024", [["2024-11-20"]], True, True),
    ("2024-11-21", [["2024-11-20"]], False, False),   # a day off is wrong, also relaxed
    ("2024/11/20", [["2024-11-20"]], True, True),
    ("last Wednesday", [["2024-11-20"]], False, False),
])
def test_dates(pred, gold, hit, rlx):
    assert scoring.hit_at_1(pred, gold) is hit
    assert scoring.relaxed_hit_at_1(pred, gold) is rlx


@pytest.mark.parametrize("pred, gold, hit, rlx", [
    ("Jacob Norman", [["Jacob Norman"]], True, True),
    ("jacob  norman ", [["Jacob Norman"]], True, True),
    ("Jacob Norman.", [["Jacob Norman"]], True, True),
    ("Fords Pasta Bar", [["Ford's Pasta Bar"]], False, True),   # inner punctuation: relaxed only
    ("Ford's Pasta Bar", [["Ford's Pasta Bar"]], True, True),
    ("Pasta Bar", [["Ford's Pasta Bar"]], False, True),           # contained, > 3 chars
    ("Ford's Pasta Bar in Soho", [["Ford's Pasta Bar"]], False, True),  # gold contained in prediction
    ("Bar", [["Ford's Pasta Bar"]], False, False),                # 3 chars: too short to count
    ("Jack", [["Jack, Olivia"]], False, True),
    ("Jacob", [["Jacob Norman"]], False, True),
    ("Electronics", [["Books"]], False, False),
    ("yes", [["yes"]], True, True),
    (True, [["yes"]], True, True),
])
def test_strings(pred, gold, hit, rlx):
    assert scoring.hit_at_1(pred, gold) is hit
    assert scoring.relaxed_hit_at_1(pred, gold) is rlx


def test_ties_and_gold_lists_accept_any_gold_value():
    gold = [["December"], ["November"], ["September"]]
    assert scoring.hit_at_1("November", gold)
    assert scoring.hit_at_1("september", gold)
    assert not scoring.hit_at_1("October", gold)


def test_list_prediction_is_judged_by_its_first_element():
    gold = [["Jacob Norman"]]
    assert scoring.hit_at_1(["Jacob Norman", "Stone Aurora"], gold)
    assert not scoring.hit_at_1(["Stone Aurora", "Jacob Norman"], gold)
    assert not scoring.relaxed_hit_at_1(["Stone Aurora", "Jacob Norman"], gold)
    assert scoring.hit_at_1([["Jacob Norman", 460]], gold)


def test_rows_gold_uses_the_first_cell_strictly_and_any_cell_relaxed():
    gold = [["Barcelona", 8]]
    assert scoring.hit_at_1("Barcelona", gold)
    assert not scoring.hit_at_1(8, gold)
    assert scoring.relaxed_hit_at_1(8, gold)
    workout = [["2024-05-12", "cycling", 176.4]]
    assert scoring.hit_at_1("2024-05-12T09:00:00", workout)
    assert scoring.relaxed_hit_at_1("cycling", workout)
    assert scoring.relaxed_hit_at_1(170, workout)  # minutes within 10%


@pytest.mark.parametrize("pred", [None, [], "", "   ", [[]]])
def test_none_and_empty_predictions(pred):
    assert not scoring.hit_at_1(pred, [[460]])
    assert not scoring.relaxed_hit_at_1(pred, [[460]])
    assert not scoring.relaxed_hit_at_1(pred, [["Jacob Norman"]])
    # nothing happened: only "nothing" is right
    assert scoring.hit_at_1(pred, [])
    assert scoring.relaxed_hit_at_1(pred, [[None]])


def test_empty_gold_rejects_a_value():
    assert not scoring.hit_at_1(0, [])
    assert not scoring.relaxed_hit_at_1("Electronics", [])


def test_dict_prediction_uses_its_first_key():
    assert scoring.hit_at_1({"Jacob Norman": 460, "Stone Aurora": 226}, [["Jacob Norman"]])


def test_percentile_and_summary_shape():
    assert scoring.percentile([], 50) is None
    assert scoring.percentile([5.0], 95) == 5.0
    assert scoring.percentile([1, 2, 3, 4], 50) == 2.5
    assert scoring.percentile(list(range(101)), 95) == 95.0
    records = [
        {"category": "aggregation", "hit": True, "rlx": True, "ok": True, "valid_plan": True, "llm_calls": 2,
         "timings": {"total_ms": 1000.0, "planning_ms": 800.0, "op_retrieve_ms": 150.0}},
        {"category": "aggregation", "hit": False, "rlx": True, "ok": True, "valid_plan": True, "llm_calls": 1,
         "timings": {"total_ms": 3000.0, "planning_ms": 2500.0, "op_retrieve_ms": 450.0, "op_sum_ms": 1.0}},
        {"category": "temporal", "hit": False, "rlx": False, "ok": False, "valid_plan": False, "llm_calls": 3,
         "timings": {"total_ms": 5000.0, "planning_ms": 5000.0}},
    ]
    s = scoring.summarise(records)
    assert s["questions"] == 3
    assert s["hit_at_1"] == pytest.approx(1 / 3, abs=1e-4)
    assert s["rlx_hit_at_1"] == pytest.approx(2 / 3, abs=1e-4)
    assert s["valid_plan_share"] == pytest.approx(2 / 3, abs=1e-4)
    assert s["llm_calls_per_question"] == 2.0
    assert s["latency_ms"] == {"median": 3000.0, "p95": 4800.0, "n": 3}
    assert s["operator_ms"]["RETRIEVE"]["median"] == 300.0
    assert s["operator_ms"]["SUM"]["n"] == 1
    assert s["per_category"]["aggregation"] == {"questions": 2, "hit_at_1": 0.5, "rlx_hit_at_1": 1.0}
    assert s["per_category"]["temporal"]["hit_at_1"] == 0.0


def test_summary_of_nothing():
    s = scoring.summarise([])
    assert s["questions"] == 0 and s["hit_at_1"] is None and s["latency_ms"]["median"] is None


@pytest.mark.parametrize("pred, gold, rlx", [
    (2021, [["2018"]], False),     # TimelineQA: "In what year did I buy facial wash the most?"
    ("2021", [[2018]], False),
    (2018, [["2018"]], True),
    (1050, [[1000]], True),        # an amount of 1,000 is no year: ±10% still holds
    (2050.0, [[2000.5]], True),
])
def test_a_year_is_right_or_wrong_even_relaxed(pred, gold, rlx):
    assert scoring.relaxed_hit_at_1(pred, gold) is rlx
