"""The planner's repair of plans that read an attribute nothing below extracts."""
from __future__ import annotations

import pytest

from engine.plan import parse_plan, print_plan, validate_plan
from engine.plan.repair import add_missing_extracts


@pytest.mark.parametrize("plan,expected", [
    ('SUM(l=FILTER(l=RETRIEVE(query="swimming"), filter=lambda e: year(e.start) == 2023), attr_name="distance_km")',
     'SUM(l=EXTRACT(l=FILTER(l=RETRIEVE(query="swimming"), filter=lambda e: year(e.start) == 2023), '
     'attr_names=["distance_km"], attr_types=[float]), attr_name="distance_km")'),
    ('ARGMAX(l=GROUP_BY(l=RETRIEVE(query="songs"), attr_names=["artist"]), arg_attr_name="artist", '
     'val_attr_name="count")',
     'ARGMAX(l=GROUP_BY(l=EXTRACT(l=RETRIEVE(query="songs"), attr_names=["artist"], attr_types=[str]), '
     'attr_names=["artist"]), arg_attr_name="artist", val_attr_name="count")'),
    ('APPLY(l=FILTER(l=RETRIEVE(query="runs"), filter=lambda e: e["distance_km"] > 10 and e["city"] == "Oslo"), '
     'fct=len)',
     'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="runs"), attr_names=["city", "distance_km"], '
     'attr_types=[str, float]), filter=lambda e: e["distance_km"] > 10 and e["city"] == "Oslo"), fct=len)'),
    # the FILTER reads it first, as text; the SUM above it needs a number ("how many km did i swim")
    ('SUM(l=FILTER(l=RETRIEVE(query="swimming"), filter=lambda e: e["distance_km"] is not None), '
     'attr_name="distance_km")',
     'SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="swimming"), attr_names=["distance_km"], attr_types=[float]), '
     'filter=lambda e: e["distance_km"] is not None), attr_name="distance_km")'),
])
def test_a_missing_extract_is_inserted_under_its_reader(plan, expected):
    node = parse_plan(plan)
    assert validate_plan(node)
    fixed = add_missing_extracts(node)
    assert print_plan(fixed) == print_plan(parse_plan(expected))
    assert not validate_plan(fixed)


def test_a_valid_plan_is_left_as_it_is():
    node = parse_plan('SUM(l=EXTRACT(l=RETRIEVE(query="runs"), attr_names=["km"], attr_types=[float]), '
                      'attr_name="km")')
    assert add_missing_extracts(node) is node


def test_count_without_a_group_by_is_not_invented():
    node = parse_plan('SUM(l=FILTER(l=RETRIEVE(query="yoga"), filter=lambda e: year(e.start) == 2023), '
                      'attr_name="count")')
    assert validate_plan(add_missing_extracts(node))
