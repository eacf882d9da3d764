"""The Chats tab: imported ChatGPT and Claude conversations, searchable across all
their text; a conversation opens as a tree of its topics (each root a topic, each
follow-up under the prompt it follows); clicking a prompt shows it with its reply;
"Show this branch" lists one topic's prompts in order. Edited prompts and regenerated
replies from the export are marked as alternatives, apart from the follow-up tree.

Trees are built in the background (``app.chattrees``) after an import, with progress
below the list; reading them runs on read jobs. No widget is touched by a worker.
"""
from __future__ import annotations

import html
import logging
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QHBoxLayout, QHeaderView, QLabel, QLineEdit, QListWidget, QListWidgetItem, QPushButton,
                               QSplitter, QTextBrowser, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from app.gui.workers import JobRunner

log = logging.getLogger(__name__)

LABEL_TEXT = {"instruction": "asks", "information": "adds information", "polite": "polite"}
REASON_TIP = {
    "first": "The conversation's first prompt.",
    "implicit": "An implicit follow-up (it leans on the prompt before it).",
    "information": "It adds information, so it belongs to the prompt before it.",
    "polite": "A polite remark: kept apart as its own topic.",
    "judge": "Compared with the recent prompts and their replies, it most likely follows up this one.",
    "new_topic": "Compared with the recent prompts and their replies, it follows up none of them: a new topic.",
}
NODE_ROLE = Qt.ItemDataRole.UserRole
PICK_HINT = "Click a prompt to read it with its reply. Hover it to see why it sits where it does."


def default_build(store, report, cancel):
    from app.chattrees import rebuild_chat_trees

    return rebuild_chat_trees(store, progress=lambda done, total: report((done, total)), cancel=cancel)


class ChatsPane(QWidget):
    status_message = Signal(str)

    def __init__(self, store, runner: JobRunner, *, build: Callable | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.store, self.runner = store, runner
        self._build = build or default_build
        self._build_job = None
        self._again = False
        self._nodes: list = []
        self._conversation: str | None = None
        self._texts: dict[str, tuple[str, str]] = {}  # node id -> (prompt, reply)

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search all chats…")
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip("Finds conversations whose title, prompts or replies contain the text")
        self._search_timer = QTimer(self, singleShot=True, interval=250)
        self._search_timer.timeout.connect(self.refresh)
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.conversations = QListWidget()
        self.conversations.setSpacing(3)
        self.conversations.setWordWrap(True)
        self.conversations.currentItemChanged.connect(self._conversation_chosen)
        self.build_status = QLabel()
        self.build_status.setObjectName("muted")
        self.build_status.setWordWrap(True)
        self.build_button = QPushButton("Rebuild trees")
        self.build_button.setToolTip("Build the trees of new or changed conversations (imports do this by themselves)")
        self.build_button.clicked.connect(self.rebuild)
        left = QVBoxLayout()
        left.addWidget(self.search)
        left.addWidget(self.conversations, 1)
        row = QHBoxLayout()
        row.addWidget(self.build_status, 1)
        row.addWidget(self.build_button)
        left.addLayout(row)
        left_w = QWidget()
        left_w.setLayout(left)

        self.title = QLabel("Choose a conversation")
        self.title.setObjectName("paneTitle")
        self.title.setWordWrap(True)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Prompt", "Kind", "Alternatives"])
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        # a long chain of follow-ups nests a level a prompt: narrow steps leave its words room
        self.tree.setIndentation(12)
        self.tree.setToolTip("Hover a prompt to see why it sits where it does")
        self.tree.currentItemChanged.connect(self._node_chosen)
        self.legend = QLabel("Each topic starts at the left; a prompt that follows up another sits under it.")
        self.legend.setObjectName("muted")
        self.legend.setWordWrap(True)
        middle = QVBoxLayout()
        middle.addWidget(self.title)
        middle.addWidget(self.tree, 1)
        middle.addWidget(self.legend)
        middle_w = QWidget()
        middle_w.setLayout(middle)

        self.detail = QTextBrowser()
        self.detail.setOpenExternalLinks(False)
        self.branch_button = QPushButton("Show this branch")
        self.branch_button.setToolTip("Only this prompt's topic: from its first prompt down to every follow-up, in order")
        self.branch_button.setEnabled(False)
        self.branch_button.clicked.connect(self.show_branch)
        right = QVBoxLayout()
        right.addWidget(self.detail, 1)
        right.addWidget(self.branch_button, 0, Qt.AlignmentFlag.AlignRight)
        right_w = QWidget()
        right_w.setLayout(right)

        split = QSplitter()
        for w in (left_w, middle_w, right_w):
            split.addWidget(w)
        split.setSizes([300, 480, 400])
        layout = QVBoxLayout(self)
        layout.addWidget(split)

    # ---- building ---------------------------------------------------------------------------
    @property
    def building(self) -> bool:
        return self._build_job is not None

    def rebuild(self) -> None:
        """Build the trees of new or changed conversations in the background."""
        if self._build_job is not None:
            self._again = True
            return
        store, build = self.store, self._build
        self.build_status.setText("Building chat trees…")
        self.build_button.setEnabled(False)
        self._build_job = self.runner.start("chat trees", lambda report, cancel: build(store, report, cancel),
                                            background=True, on_progress=self._build_progress, on_success=self._built,
                                            on_failure=self._build_failed, on_cancel=self._build_cancelled,
                                            on_finish=self._build_finished)

    def cancel(self) -> bool:
        if self._build_job is None:
            return False
        self._again = False
        self._build_job.cancel()
        return True

    def _build_progress(self, p) -> None:
        done, total = p
        if total:
            self.build_status.setText(f"Building chat trees: {done:,} of {total:,} conversations")

    def _built(self, stats) -> None:
        self.build_status.setText(stats.summary().capitalize() + "." if stats.built or stats.removed else "")
        if stats.built or stats.removed:
            self.status_message.emit(stats.summary().capitalize() + ".")
        self.refresh()

    def _build_failed(self, message: str) -> None:
        self.build_status.setText(f"The chat trees could not be built: {message}")

    def _build_cancelled(self) -> None:
        self.build_status.setText("Building chat trees stopped; what was built is kept.")
        self.refresh()

    def _build_finished(self) -> None:
        self._build_job = None
        self.build_button.setEnabled(True)
        if self._again:
            self._again = False
            self.rebuild()

    # ---- reading ----------------------------------------------------------------------------
    def refresh(self) -> None:
        """Reload the conversation list (with the search applied)."""
        from engine.chattree import queries

        store, text = self.store, self.search.text()
        self.runner.start("chat list", lambda _r, _c: queries.conversations(store.reader(), search=text),
                          long=False, on_success=self._listed,
                          on_failure=lambda m: self.build_status.setText(f"Cannot read the chats: {m}"))

    def _listed(self, rows) -> None:
        keep = self._conversation
        self.conversations.blockSignals(True)
        self.conversations.clear()
        chosen = None
        for r in rows:
            when = f"{r.start:%d %b %Y}" if r.start else ""
            item = QListWidgetItem(f"{r.title}\n{when} · {r.source} · {_count(r.prompts, 'prompt')} · "
                                   f"{_count(r.topics, 'topic')}")
            item.setData(NODE_ROLE, r.conversation_id)
            item.setToolTip(r.conversation_id)
            self.conversations.addItem(item)
            if r.conversation_id == keep:
                chosen = item
        self.conversations.blockSignals(False)
        if not rows:
            self.title.setText("No chats match your search." if self.search.text().strip()
                               else "No chats yet: import a ChatGPT or Claude export.")
        if chosen is not None:
            self.conversations.setCurrentItem(chosen)
        elif rows and keep is None:
            self.conversations.setCurrentRow(0)

    def _conversation_chosen(self, item, _previous=None) -> None:
        if item is None:
            return
        self.open_conversation(item.data(NODE_ROLE), item.text().split("\n")[0])

    def open_conversation(self, conversation_id: str, title: str = "") -> None:
        from engine.chattree import queries

        self._conversation = conversation_id
        self.title.setText(title or conversation_id)
        store = self.store

        def load(_r, _c):
            nodes = queries.turns(store.reader(), conversation_id)
            ids = [n.event_id for n in nodes] + [n.response_event_id for n in nodes if n.response_event_id]
            texts = {e["id"]: e.get("text") or "" for e in store.events(ids=ids)}
            return nodes, texts

        self.runner.start("chat tree", load, long=False, on_success=self._show_tree,
                          on_failure=lambda m: self.title.setText(f"Cannot read this conversation: {m}"))

    def _show_tree(self, loaded) -> None:
        from engine.chattree import queries
        from engine.chattree.conversations import turn_body

        nodes, texts = loaded
        self._nodes = nodes
        title = self.title.text()
        self._texts = {n.node_id: (turn_body(texts.get(n.event_id, ""), title),
                                   turn_body(texts.get(n.response_event_id or "", ""), title)) for n in nodes}
        self.tree.clear()
        self.detail.setHtml(f"<p style='color:#59636e'>{PICK_HINT}</p>")
        self.branch_button.setEnabled(False)

        def add(parent_item, node) -> None:
            item = QTreeWidgetItem([node.snippet, LABEL_TEXT.get(node.label, node.label), self._alternatives(node)])
            item.setData(0, NODE_ROLE, node.node_id)
            item.setToolTip(0, REASON_TIP.get(node.reason, node.reason))
            if not node.on_current_path:
                item.setForeground(0, Qt.GlobalColor.gray)
            parent_item.addChild(item)
            for child in node.children:
                add(item, child)

        for i, root in enumerate(queries.forest(nodes), start=1):
            top = QTreeWidgetItem([f"Topic {i}", "", ""])
            top.setFirstColumnSpanned(False)
            font = top.font(0)
            font.setBold(True)
            top.setFont(0, font)
            self.tree.addTopLevelItem(top)
            add(top, root)
        self.tree.expandAll()

    @staticmethod
    def _alternatives(node) -> str:
        notes = []
        if node.branch_count > 1:
            notes.append(f"edit {node.branch_index} of {node.branch_count}")
        if node.response_count > 1:
            notes.append(f"{node.response_count} replies")
        return ", ".join(notes)

    def _node_chosen(self, item, _previous=None) -> None:
        node_id = item.data(0, NODE_ROLE) if item is not None else None
        self.branch_button.setEnabled(node_id is not None)
        if node_id is None:
            return
        node = next(n for n in self._nodes if n.node_id == node_id)
        self.detail.setHtml(self._turn_html(node, full=True))

    def _turn_html(self, node, *, full: bool) -> str:
        prompt, reply = self._texts.get(node.node_id, ("", ""))
        follows = next((n.snippet for n in self._nodes if n.node_id == node.parent_node_id), None)
        meta = [LABEL_TEXT.get(node.label, node.label)]
        if follows:
            meta.append(f"follows “{html.escape(follows)}”")
        elif node.reason in ("first", "new_topic", "polite"):
            meta.append("starts a topic")
        if node.implicit_follow_up:
            meta.append("implicit follow-up")
        alt = self._alternatives(node)
        if alt:
            meta.append(f"alternatives: {alt}")
        cut = None if full else 600
        body = (f"<p style='color:#59636e'>{' · '.join(meta)}</p>"
                f"<p><b>You:</b> {_para(prompt[:cut])}</p>")
        if reply:
            body += f"<p><b>Reply:</b> {_para(reply[:cut] + ('…' if cut and len(reply) > cut else ''))}</p>"
        return body

    def show_branch(self) -> None:
        """Only the chosen prompt's topic, from its root down, in order."""
        from engine.chattree import queries

        item = self.tree.currentItem()
        node_id = item.data(0, NODE_ROLE) if item is not None else None
        if node_id is None:
            return
        turns = queries.branch(self._nodes, node_id)
        self.detail.setHtml(f"<h3>This branch: {len(turns)} prompts</h3>"
                            + "<hr>".join(self._turn_html(n, full=False) for n in turns))


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _para(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")
