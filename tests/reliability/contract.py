"""The bad-input contract, checked through the real import pipeline:

* no exception escapes ``import_paths``;
* a damaged record either still becomes an event or comes back as an import issue
  with a locator, in the report of the file that holds it (the report names the file);
* every good record of the same file is still imported (compared with the same file
  without the damaged record);
* a file that cannot be read at all fails with a message naming it.

:data:`TALLY` counts what the fuzz tests tried, per importer and damage, and how it
was reported; the reliability suite prints it at the end of the run.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

from engine.ingest import FileReport, ImportReport, import_paths
from engine.store import EventStore
from importers.base import ImportContext

CONTEXT = ImportContext(home_tz=ZoneInfo("Europe/Berlin"), own_addresses=frozenset({"erika@example.com"}))

#: (importer case, damage) -> Counter of outcomes: "event", "issue+locator", "file failed (named)", ...
TALLY: dict[tuple[str, str], Counter] = defaultdict(Counter)


@dataclass
class Imported:
    report: ImportReport
    ids: frozenset[str]

    def file(self, name: str) -> FileReport:
        found = [f for f in self.report.files if Path(f.path).name == name]
        assert len(found) == 1, f"no single report for {name}: {self.report.to_json()}"
        return found[0]


def import_file(path: Path) -> Imported:
    with EventStore(":memory:") as store:
        report = import_paths(store, [path], context=CONTEXT)
        ids = frozenset(r[0] for r in store.reader().execute("SELECT id FROM events").fetchall())
    return Imported(report, ids)


def check_damaged_record(case: str, damage: str, path: Path, damaged: Imported, good: Imported,
                         whole: Imported) -> None:
    """Assert the contract for a file in which one record is damaged; ``good`` is the
    same file without that record, ``whole`` the file undamaged."""
    name = path.name
    assert good.file(name).status == "imported", good.report.to_json()
    fr = damaged.file(name)
    tally = TALLY[(case, damage)]
    if fr.status != "imported":
        tally["whole file failed"] += 1
        raise AssertionError(f"one damaged record ({damage}) failed the whole file {name}: {fr.message}")
    lost = good.ids - damaged.ids
    assert not lost, f"{len(lost)} good record(s) of {name} lost to one damaged record ({damage}): {fr.issues}"
    for issue in fr.issues:
        assert issue["locator"].strip(), f"{name}: an issue without a locator: {issue}"
        assert issue["reason"].strip(), f"{name}: an issue without a reason: {issue}"
    skipped = [i for i in fr.issues if not i.get("kept")]
    if damaged.ids - good.ids:
        tally["imported" + (" with a warning" if fr.issues else "")] += 1
    elif skipped:
        tally["issue with locator"] += 1
    elif fr.duplicates > good.file(name).duplicates:  # the damage made it another record's twin
        tally["imported as a duplicate"] += 1
    elif whole.ids == good.ids:  # undamaged, it gives no event either (a trip's track, say)
        tally["no event by design"] += 1
    else:
        tally["vanished"] += 1
        raise AssertionError(f"{name}: the damaged record ({damage}) neither became an event nor an issue")


def check_damaged_file(case: str, damage: str, path: Path, damaged: Imported) -> None:
    """The contract for damage to the whole file (truncation, random bytes): no
    exception (the caller got here), every issue located, a failure names the file."""
    name = path.name
    tally = TALLY[(case, damage)]
    reports = [f for f in damaged.report.files if Path(f.path).name == name]
    if not reports:  # no importer claims the bytes any more: listed as unrecognised, by name
        assert any(Path(p).name == name for p in damaged.report.unrecognized), damaged.report.to_json()
        tally["not recognised (named)"] += 1
        return
    fr = reports[0]
    for issue in fr.issues:
        assert issue["locator"].strip(), f"{name}: an issue without a locator: {issue}"
    if fr.status in ("failed", "empty"):
        assert name in fr.message, f"the failure does not name {name}: {fr.message}"
        tally["file failed (named)"] += 1
    elif fr.issues:
        tally["issue with locator"] += 1
    else:
        tally["imported"] += 1


def items_keep_the_contract(items) -> list:
    """What an importer yields for any input, however broken: events with a source and
    a zone-aware start, and issues that say where (locator) and why (reason). Returns
    the items; raises nothing but the assertion."""
    from importers.base import Event, EventBatch, ImportIssue

    out = list(items)
    for item in out:
        if isinstance(item, ImportIssue):
            assert item.locator.strip(), f"an issue without a locator: {item}"
            assert item.reason.strip(), f"an issue without a reason: {item}"
        elif isinstance(item, EventBatch):
            assert item.source and all(s.tzinfo is not None for s in item.start), item
        else:
            assert isinstance(item, Event), f"not an event or an issue: {item!r}"
            assert item.source and item.start.tzinfo is not None, item
    return out
