"""The Qt binding keeps Python's reference counts.

PySide6 6.12.0 drops one reference to ``True`` at every emit of a signal with a
Python slot: after a few hundred signals the interpreter aborts ("bool_dealloc:
deallocating True or False"). The app emits that many in minutes (every page a
table loads, every progress step), so a binding with this fault must not ship."""
from __future__ import annotations

import sys

import pytest

QtCore = pytest.importorskip("PySide6.QtCore")

EMITS = 300


class _Emitter(QtCore.QObject):
    plain = QtCore.Signal()
    flag = QtCore.Signal(bool)
    payload = QtCore.Signal(object)


def _counts() -> tuple[int, int, int]:
    return sys.getrefcount(True), sys.getrefcount(False), sys.getrefcount(None)


@pytest.mark.parametrize("signal", ["plain", "flag", "payload"])
def test_emitting_a_signal_to_a_python_slot_keeps_the_reference_counts(signal):
    emitter, calls = _Emitter(), []
    getattr(emitter, signal).connect(lambda *args: calls.append(len(args)))
    before = _counts()
    for i in range(EMITS):
        if signal == "plain":
            emitter.plain.emit()
        elif signal == "flag":
            emitter.flag.emit(bool(i % 2))
        else:
            emitter.payload.emit([{"kept": True, "shuffle": False, "note": None}])
    after = _counts()
    assert len(calls) == EMITS
    # a leak of a few references elsewhere in the process is noise; one per emit is the fault
    assert all(abs(a - b) < EMITS // 10 for a, b in zip(after, before)), (before, after)
