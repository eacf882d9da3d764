"""Amazon order history through the real pipeline: Retail.OrderHistory.N.csv and
the newer Your Amazon Orders/Order History.csv."""
from __future__ import annotations

import zipfile
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ingest import import_paths
from engine.store import EventStore
from importers import amazon
from importers.base import Entry, ImportContext
from tests.reliability.contract import items_keep_the_contract

FIX = Path(__file__).parent / "fixtures"
HERE = FIX / "amazon"
RETAIL = HERE / "Retail.OrderHistory.1" / "Retail.OrderHistory.1.csv"
CTX = ImportContext(home_tz=ZoneInfo("Europe/Berlin"))


@pytest.fixture
def store(tmp_path):
    s = EventStore(tmp_path / "h.duckdb")
    yield s
    s.close()


def _import(store, path):
    return import_paths(store, [path], context=CTX).to_json()


def test_retail_order_history(store):
    rep = _import(store, RETAIL)
    assert rep["files"][0]["importer"] == "amazon_orders"
    assert rep["added"] == 3 and rep["skipped"] == 0
    rows = {r["title"]: r for r in store.events(source="amazon", kind="purchase")}
    cable = rows["USB-C Kabel, 2 m"]["attributes"]
    assert cable == {**cable, "quantity": 2, "unit_price": 12.99, "total": 25.98, "currency": "EUR",
                     "order_id": "302-1111111-1111111", "asin": "B0TESTCAB1", "status": "closed",
                     "ship_date": "2023-03-26"}
    book = rows["Das Buch der Beispiele"]
    assert book["attributes"]["discounts"] == -5.0 and book["attributes"]["total"] == 38.89
    # a UTC order time an hour after the autumn DST change in Berlin
    assert book["start"] == datetime(2023, 10, 29, 1, 30) and book["tz_offset_min"] == 60
    assert rows["USB-C Kabel, 2 m"]["tz_offset_min"] == 60  # 25 March: still winter time
    cancelled = rows["Kopfhörer Deluxe"]
    assert cancelled["attributes"]["status"] == "cancelled"
    assert cancelled["attributes"]["total"] == 0.0 and cancelled["attributes"]["listed_total"] == 199.0
    assert "Cancelled" in cancelled["text"] and "nothing was paid" in cancelled["text"]
    # "Not Available" is a missing value, not text
    assert "shipment_status" not in cancelled["attributes"] and "ship_date" not in cancelled["attributes"]


def test_spending_sum_excludes_cancelled(store):
    _import(store, RETAIL)
    spent = sum(r["attributes"]["total"] for r in store.events(source="amazon"))
    assert spent == pytest.approx(25.98 + 38.89)


def test_newer_order_history_variant(store):
    rep = _import(store, HERE / "Your Amazon Orders" / "Order History.csv")
    assert rep["added"] == 2
    rows = {r["title"]: r for r in store.events(source="amazon")}
    lamp = rows["Desk Lamp"]["attributes"]
    assert lamp["total"] == 27.05 and lamp["currency"] == "USD" and lamp["payment"] == "Visa"
    notes = rows["Sticky Notes"]["attributes"]
    assert notes["quantity"] == 2 and notes["status"] == "cancelled" and notes["total"] == 0.0


def test_folder_zip_reimport_and_overlap(store, tmp_path):
    z = tmp_path / "Your Orders.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(RETAIL, "Retail.OrderHistory.1/Retail.OrderHistory.1.csv")
        zf.writestr("Retail.CustomerReturns.1.1/Retail.CustomerReturns.1.1.csv", "Order ID,Return Date\n")
    rep = _import(store, z)
    assert rep["added"] == 3
    assert any("CustomerReturns" in i["path"] for i in rep["ignored"])
    rep = _import(store, RETAIL.parent)
    assert rep["files"][0]["status"] == "already_imported"
    rep = _import(store, HERE / "Retail.OrderHistory.2.csv")
    assert rep["added"] == 1 and rep["duplicates"] == 2
    assert len(store.events(source="amazon")) == 4


def test_broken_rows(store):
    rep = _import(store, HERE / "broken" / "Retail.OrderHistory.9.csv")
    f = rep["files"][0]
    assert f["added"] == 2
    by_line = {i["locator"]: i["reason"] for i in f["issues"]}
    assert "Order Date" in by_line["line 3"]
    assert "amount of money" in by_line["line 4"]
    assert "truncated" in by_line["line 5"]
    assert {r["title"] for r in store.events(source="amazon")} == {"USB-C Kabel, 2 m", "Good After Bad"}


@pytest.mark.parametrize("text, expected", [
    ("12.99", (12.99, None)), ("'-1.00'", (-1.0, None)), ("$1,234.56", (1234.56, "USD")),
    ("1.234,56 €", (1234.56, "EUR")), ("EUR 12,99", (12.99, "EUR")), ("Not Available", (None, None)),
    ("Not Applicable", (None, None)), ("", (None, None)),
])
def test_parse_money(text, expected):
    assert amazon.parse_money(text, "x") == expected


def test_recognize_is_zero_for_other_fixtures():
    for path in FIX.rglob("*"):
        if path.is_file() and HERE not in path.parents:
            entry = Entry.from_path(str(path), context=CTX)
            for imp in amazon.IMPORTERS:
                assert imp.recognize(entry) == 0, (imp.name, path)


VALID = RETAIL.read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_fuzz_random_bytes(data):
    items_keep_the_contract(amazon.read_orders(Entry.from_bytes("Retail.OrderHistory.1.csv", data, CTX)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(VALID) - 1), st.binary(min_size=1, max_size=8), st.integers(0, 60))
def test_fuzz_mutated_valid_file(pos, patch, cut):
    data = VALID[:pos] + patch + VALID[pos + len(patch):len(VALID) - cut]
    items_keep_the_contract(amazon.read_orders(Entry.from_bytes("Retail.OrderHistory.1.csv", data, CTX)))
