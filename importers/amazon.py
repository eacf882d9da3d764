"""Amazon order history from the "Request your data" download:
``Retail.OrderHistory.N/Retail.OrderHistory.N.csv`` (one row per item shipment), the
newer ``Your Amazon Orders/Order History.csv`` (Original Quantity, Payment Method
Type, Total Amount) and the retired ``Items.csv`` report, all read by column name.

Money becomes numbers with a ``currency`` attribute; Amazon's literal "Not Available"
and "Not Applicable" become missing values. A cancelled row keeps its listed price in
``listed_total`` but its ``total``/``amount`` is 0, so sums over purchases count only
what was paid. Amazon order times are UTC; the home zone gives the local offset.
This module only parses; it never writes the store.
"""
from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from datetime import datetime

import orjson

from importers._csv import csv_rows
from importers.base import UTC, Entry, Event, Importer, ImportIssue, offset_minutes

_NAME = re.compile(r"^(retail\.orderhistory\.\d+|order history|items)\.csv$", re.I)
_MAX_RAW = 3000
_MISSING = {"", "not available", "not applicable", "n/a", "na", "none", "null", "-"}

# Our attribute <- the column names that carry it, newest first.
_COLUMNS: dict[str, tuple[str, ...]] = {
    "order_id": ("Order ID",),
    "order_date": ("Order Date",),
    "website": ("Website",),
    "currency": ("Currency",),
    "unit_price": ("Unit Price", "Purchase Price Per Unit"),
    "unit_price_tax": ("Unit Price Tax",),
    "shipping_charge": ("Shipping Charge",),
    "discounts": ("Total Discounts",),
    "total_owed": ("Total Owed", "Total Amount", "Item Total"),
    "subtotal": ("Shipment Item Subtotal", "Item Subtotal"),
    "subtotal_tax": ("Shipment Item Subtotal Tax", "Item Subtotal Tax"),
    "asin": ("ASIN", "ASIN/ISBN"),
    "condition": ("Product Condition", "Condition"),
    "quantity": ("Quantity", "Original Quantity"),
    "payment": ("Payment Instrument Type", "Payment Method Type"),
    "order_status": ("Order Status",),
    "shipment_status": ("Shipment Status",),
    "ship_date": ("Ship Date", "Shipment Date"),
    "shipping_option": ("Shipping Option",),
    "carrier": ("Carrier Name & Tracking Number",),
    "product": ("Product Name", "Title"),
    "category": ("Category",),
    "seller": ("Seller",),
}
_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR"}


class AmazonFormatError(ValueError):
    """An Amazon field that does not have the shape Amazon writes."""


def _header_cells(head: bytes) -> list[str]:
    line = head.decode("utf-8", errors="replace").lstrip("\ufeff").split("\n", 1)[0]
    try:
        return [c.strip() for c in next(csv.reader([line]))]
    except (csv.Error, StopIteration):
        return []


def _recognize(entry: Entry) -> float:
    cells = set(_header_cells(entry.head))
    has_order = "Order ID" in cells and "Order Date" in cells
    has_item = bool(cells & {"Product Name", "ASIN", "ASIN/ISBN"})
    has_money = bool(cells & {"Total Owed", "Total Amount", "Item Total", "Unit Price",
                              "Purchase Price Per Unit"})
    if has_order and has_item and has_money:
        return 0.95
    if _NAME.match(entry.basename) and not entry.head.strip():
        return 0.55
    return 0.0


def _present(value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip().strip("'").strip()
    return None if v.lower() in _MISSING else v


def parse_money(value: str | None, field: str) -> tuple[float | None, str | None]:
    """``(amount, currency-from-symbol)``; missing markers give ``(None, None)``.
    Accepts ``12.99``, ``'-1.00'``, ``$1,234.56``, ``1.234,56 €``, ``EUR 12,99``."""
    v = _present(value)
    if v is None:
        return None, None
    currency = None
    for sym, code in _SYMBOLS.items():
        if sym in v:
            currency = code
            v = v.replace(sym, "")
    m = re.match(r"^\s*([A-Z]{3})\s+(.*)$", v) or re.match(r"^(.*?)\s+([A-Z]{3})\s*$", v)
    if m:
        a, b = m.groups()
        code, v = (a, b) if len(a) == 3 and a.isalpha() else (b, a)
        currency = currency or code
    v = v.replace("\u00a0", "").replace(" ", "")
    negative = v.startswith("(") and v.endswith(")")
    v = v.strip("()")
    if "," in v and "." in v:
        if v.rfind(",") > v.rfind("."):
            v = v.replace(".", "").replace(",", ".")
        else:
            v = v.replace(",", "")
    elif "," in v:
        head, _, tail = v.rpartition(",")
        v = v.replace(",", "") if len(tail) == 3 and head.lstrip("-") else head.replace(",", "") + "." + tail
    try:
        amount = float(v)
    except ValueError:
        raise AmazonFormatError(f"{field} {value!r} is not an amount of money") from None
    if amount != amount or amount in (float("inf"), float("-inf")):
        raise AmazonFormatError(f"{field} {value!r} is not a finite amount")
    return (-amount if negative else amount), currency


def parse_when(value: str | None, field: str) -> datetime | None:
    v = _present(value)
    if v is None:
        return None
    v = v.replace(" UTC", "").strip()
    try:
        dt = datetime.fromisoformat(v)
    except ValueError:
        dt = None
        for fmt in ("%m/%d/%Y %H:%M:%S", "%m/%d/%Y", "%m/%d/%y", "%d.%m.%Y", "%Y/%m/%d"):
            try:
                dt = datetime.strptime(v, fmt)
                break
            except ValueError:
                continue
        if dt is None:
            raise AmazonFormatError(f"{field} {value!r} is not a date") from None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt


def _status(value: str | None) -> str | None:
    v = _present(value)
    if v is None:
        return None
    low = v.lower()
    return "cancelled" if low in ("cancelled", "canceled") else low


def _fmt(amount: float, currency: str | None) -> str:
    return f"{amount:.2f} {currency}" if currency else f"{amount:.2f}"


def _event(rec: dict[str, str], cols: dict[str, str], loc: str, zone) -> Event:
    def get(name: str) -> str | None:
        col = cols.get(name)
        return rec.get(col) if col else None

    order_date = parse_when(get("order_date"), "Order Date")
    if order_date is None:
        raise AmazonFormatError("the Order Date is missing")
    product = _present(get("product"))
    asin = _present(get("asin"))
    if not product and not asin:
        raise AmazonFormatError("the row names no product (Product Name and ASIN are empty)")
    product = product or f"item {asin}"
    order_id = _present(get("order_id"))
    currency = _present(get("currency"))
    attrs: dict[str, object] = {"product": product}
    money: dict[str, float] = {}
    for name, label in (("unit_price", "Unit Price"), ("unit_price_tax", "Unit Price Tax"),
                        ("shipping_charge", "Shipping Charge"), ("discounts", "Total Discounts"),
                        ("total_owed", "Total"), ("subtotal", "Shipment Item Subtotal"),
                        ("subtotal_tax", "Shipment Item Subtotal Tax")):
        amount, sym_currency = parse_money(get(name), label)
        if amount is not None:
            money[name] = amount
            currency = currency or sym_currency
    qty_raw = _present(get("quantity"))
    quantity = 1
    if qty_raw is not None:
        try:
            quantity = int(float(qty_raw.replace(",", ".")))
        except ValueError:
            raise AmazonFormatError(f"Quantity {qty_raw!r} is not a number") from None
    # What was paid for this row: Total Owed includes tax, shipping and discounts;
    # older reports only have a subtotal (+ tax) or the unit price.
    if "total_owed" in money:
        listed = money["total_owed"]
    elif "subtotal" in money:
        listed = money["subtotal"] + money.get("subtotal_tax", 0.0)
    elif "unit_price" in money:
        listed = (money["unit_price"] + money.get("unit_price_tax", 0.0)) * max(quantity, 0)
    else:
        listed = None
    status = _status(get("order_status"))
    shipment_status = _status(get("shipment_status"))
    cancelled = status == "cancelled" or shipment_status == "cancelled"
    if cancelled:
        status = "cancelled"
    attrs["quantity"] = quantity
    if "unit_price" in money:
        attrs["unit_price"] = money["unit_price"]
    if listed is not None:
        total = 0.0 if cancelled else round(listed, 2)
        attrs["total"] = total
        attrs["amount"] = total
        if cancelled:
            attrs["listed_total"] = round(listed, 2)
    for name in ("shipping_charge", "discounts", "unit_price_tax"):
        if name in money:
            attrs[name] = money[name]
    if currency:
        attrs["currency"] = currency
    if order_id:
        attrs["order_id"] = order_id
    if status:
        attrs["status"] = status
    if shipment_status:
        attrs["shipment_status"] = shipment_status
    if asin:
        attrs["asin"] = asin
    for name in ("website", "payment", "condition", "shipping_option", "category", "seller"):
        v = _present(get(name))
        if v:
            attrs[name] = v
    ship_raw = _present(get("ship_date"))
    ship = None
    if ship_raw:
        try:
            ship = parse_when(ship_raw, "Ship Date")
        except AmazonFormatError:
            ship = None  # a bad ship date must not lose the purchase itself
        if ship is not None:
            attrs["ship_date"] = ship.date().isoformat()
    store = attrs.get("website") or "Amazon"
    what = f"{quantity} × {product}" if quantity != 1 else product
    if cancelled:
        price = f" (listed at {_fmt(listed, currency)})" if listed is not None else ""
        text = f"Cancelled order of {what}{price} on {store}; nothing was paid"
    else:
        price = f" for {_fmt(listed, currency)}" if listed is not None else ""
        text = f"Bought {what}{price} on {store}"
    if order_id:
        text += f" (order {order_id})"
    key = f"{order_id}|{asin or product}|{ship_raw or ''}" if order_id else ""
    return Event(
        source="amazon", kind="purchase", start=order_date, title=product, text=text + ".",
        attributes=attrs, tz_offset_min=offset_minutes(order_date, zone), key=key, locator=loc,
        raw=_raw(rec),
    )


def _raw(rec: dict) -> str:
    text = orjson.dumps(rec).decode()
    return text if len(text) <= _MAX_RAW else text[:_MAX_RAW] + "…"


def read_orders(entry: Entry) -> Iterator[Event | ImportIssue]:
    zone = entry.context.home_tz
    header: list[str] | None = None
    cols: dict[str, str] = {}
    for item in csv_rows(entry):
        if isinstance(item, ImportIssue):
            yield item
            continue
        line, row = item
        if header is None:
            header = [c.strip() for c in row]
            present = set(header)
            for attr, names in _COLUMNS.items():
                for name in names:
                    if name in present:
                        cols[attr] = name
                        break
            if "order_date" not in cols or not ({"product", "asin"} & cols.keys()):
                yield ImportIssue(f"line {line}", "not an Amazon order history header: it needs "
                                  "Order Date and Product Name or ASIN")
                return
            continue
        loc = f"line {line}"
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            yield ImportIssue(loc, f"the row has {len(row)} fields, the header {len(header)} "
                                   "(truncated or malformed row)")
            continue
        try:
            yield _event(dict(zip(header, row)), cols, loc, zone)
        except AmazonFormatError as exc:
            yield ImportIssue(loc, str(exc))


IMPORTERS = (
    Importer(
        name="amazon_orders", title="Amazon order history", version="1", source="amazon",
        recognize=_recognize, read=read_orders,
        description="Retail.OrderHistory.N.csv, Your Amazon Orders/Order History.csv, Items.csv",
        ignores=("Retail.OrdersReturned*.csv", "Retail.CustomerReturns*.csv", "Retail.CartItems*.csv",
                 "Retail.OrderHistory.*.xlsx", "Retail.OrderHistory.*.json", "Refund Details.csv",
                 "Returns.csv", "Digital Items.csv", "Digital Content Orders.csv",
                 "Retail.Search-Data*.csv", "Retail.RegionAuthority*.csv"),
    ),
)
