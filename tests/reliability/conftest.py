"""The reliability suite prints what its fuzz tests tried and how each damage was
reported (the figures the reliability issue asks for)."""
from __future__ import annotations


def pytest_terminal_summary(terminalreporter):
    from tests.reliability.contract import TALLY

    if not TALLY:
        return
    terminalreporter.section("bad inputs tried, by case and damage")
    for (case, damage), outcomes in sorted(TALLY.items()):
        total = sum(outcomes.values())
        parts = ", ".join(f"{n} {what}" for what, n in outcomes.most_common())
        terminalreporter.write_line(f"{case:18} {damage:18} {total:4}: {parts}")
