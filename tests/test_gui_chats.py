"""The Chats tab and the Ask pane's follow-ups, driven like a user would (offscreen,
pytest-qt): trees built in the background with progress, a conversation opened as a
tree of topics, a prompt clicked, "Show this branch", search; an answer card saying
which question it followed, and its menu asking it again as a new question."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from app.gui.ask import AnswerCard, AskPane  # noqa: E402
from app.gui.chats import ChatsPane  # noqa: E402
from app.gui.workers import JobRunner  # noqa: E402
from engine.answer import Answer  # noqa: E402
from engine.chattree import ChatTreeModels, tables  # noqa: E402
from engine.settings import Settings  # noqa: E402
from tests.test_chattree import FIXTURES, FakeEmbedder, FakeHeads, FakeSegmenter, _import  # noqa: E402

pytestmark = pytest.mark.gui
WAIT = 20_000


@pytest.fixture
def pane(qtbot, store):
    _import(store, FIXTURES / "chatgpt/export")
    models = ChatTreeModels(FakeSegmenter(), FakeEmbedder(), FakeHeads())
    runner = JobRunner()
    progress = []

    def build(s, report, cancel):
        return tables.rebuild(s, models, progress=lambda d, t: report((d, t)), cancel=cancel)

    p = ChatsPane(store, runner, build=build)
    p._build_progress = lambda x, _orig=p._build_progress: (progress.append(x), _orig(x))
    qtbot.addWidget(p, before_close_func=lambda _w: runner.wait())
    p.resize(1200, 700)
    p.show()
    qtbot.waitExposed(p)
    p.progress_seen = progress
    return p


def _prompt_items(tree):
    out = []

    def walk(item, depth):
        for i in range(item.childCount()):
            child = item.child(i)
            out.append((child, depth))
            walk(child, depth + 1)

    for i in range(tree.topLevelItemCount()):
        walk(tree.topLevelItem(i), 0)
    return out


def test_chats_tab_builds_and_shows_the_tree(qtbot, pane, store, tmp_path):
    from engine.chattree import queries

    pane.rebuild()
    qtbot.waitUntil(lambda: not pane.building and pane.conversations.count() > 0, timeout=WAIT)
    assert pane.progress_seen and pane.progress_seen[-1][0] == pane.progress_seen[-1][1]
    assert "chat trees" in pane.build_status.text().lower()
    qtbot.waitUntil(lambda: pane.tree.topLevelItemCount() > 0, timeout=WAIT)
    cid = pane.conversations.currentItem().data(Qt.ItemDataRole.UserRole)
    nodes = queries.turns(store.reader(), cid)
    items = _prompt_items(pane.tree)
    assert len(items) == len(nodes)
    assert pane.tree.topLevelItem(0).text(0) == "Topic 1"
    roots = sum(1 for n in nodes if n.parent_node_id is None)
    assert pane.tree.topLevelItemCount() == roots

    # clicking a prompt shows it with its reply, and enables "Show this branch"
    item, _depth = items[-1]
    pane.tree.setCurrentItem(item)
    assert pane.branch_button.isEnabled()
    node = next(n for n in nodes if n.node_id == item.data(0, Qt.ItemDataRole.UserRole))
    shown = pane.detail.toPlainText()
    assert "You:" in shown and node.snippet.rstrip("…")[:20] in shown
    qtbot.mouseClick(pane.branch_button, Qt.MouseButton.LeftButton)
    assert pane.detail.toPlainText().startswith("This branch:")

    out = Path(os.environ.get("HINDSIGHT_SCREENSHOTS", tmp_path)) / "chats-tab.png"
    assert pane.grab().save(str(out))

    # search narrows the list to conversations that mention the text
    pane.search.setText("zzqx-no-such-text")
    qtbot.waitUntil(lambda: pane.conversations.count() == 0, timeout=WAIT)
    assert "No chats match" in pane.title.text()


class FollowingEngine:
    """Answers by echoing, and records what each question was said to follow."""

    def __init__(self):
        self.calls = []

    def ask(self, question, *, today=None, history=(), progress=None, cancel=None, follows="auto"):
        self.calls.append((question, follows))
        parent = (len(history) - 1 if history else None) if follows == "auto" else follows
        return Answer(question=question, ok=True, answer=1, answer_text=f"Answer to {question}",
                      follows=parent, follow_reason="judge" if follows == "auto" else "chosen")

    def close(self):
        pass


def test_answer_card_says_what_it_followed_and_can_change_it(qtbot, store):
    engine = FollowingEngine()
    runner = JobRunner()
    pane = AskPane(store, Settings(home_timezone="Europe/Berlin"), runner, engine_factory=lambda s, st: engine)
    qtbot.addWidget(pane, before_close_func=lambda _w: runner.wait())
    with qtbot.waitSignal(pane.engine_ready, timeout=WAIT):
        pane.load_engine()
    pane.indexer.refresh = lambda _engine: False  # no index to prepare for this engine
    pane.indexer._stale = False
    with qtbot.waitSignal(pane.answered, timeout=WAIT):
        assert pane.ask("How many runs in March?")
    qtbot.waitUntil(lambda: not pane.busy_asking, timeout=WAIT)
    with qtbot.waitSignal(pane.answered, timeout=WAIT):
        assert pane.ask("and in April?")
    qtbot.waitUntil(lambda: not pane.busy_asking, timeout=WAIT)
    first, second = pane.cards()
    assert first.follows_button is None  # nothing before it to follow
    assert second.follows_button.text() == "Follows “How many runs in March?” ▾"
    actions = [a for a in second.follows_button.menu().actions() if a.text()]
    assert [a.text() for a in actions] == ["Follows “How many runs in March?”", "New question"]
    assert actions[0].isChecked() and not actions[0].isEnabled()

    with qtbot.waitSignal(pane.answered, timeout=WAIT):
        actions[1].trigger()  # "New question": asked again, following nothing
    assert engine.calls[-1] == ("and in April?", None)
    assert pane.answers[-1].follows is None and pane.answers[-1].follow_reason == "chosen"
    qtbot.waitUntil(lambda: len(pane.cards()) == 3, timeout=WAIT)
    assert pane.cards()[-1].follows_button.text() == "New question ▾"


def test_answer_card_without_history_has_no_follow_menu(qtbot):
    card = AnswerCard(Answer("q", True, 1, "one"), lambda _a: None, [])
    qtbot.addWidget(card)
    assert card.follows_button is None
