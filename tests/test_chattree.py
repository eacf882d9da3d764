"""Chat trees (engine.chattree): prompt analysis, the insert rules, rebuilding the
trees of imported conversations (idempotent), the metrics, and ``hindsight chats``.

Fast tests use fakes for the three models: a segmenter that splits on sentence ends,
a hashed bag-of-words embedder that also marks a few test phrases, and heads that
read those marks (and compare bags of words for the judge)."""
from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import pytest

from engine.chattree import ChatTree, ChatTreeModels, analyse_prompt
from engine.chattree.analysis import analyse_prompts, prompt_label, simplified_prompt
from engine.chattree.insert import JUDGE_WINDOW
from engine.chattree.metrics import parent_metrics, previous_turn_baseline

FIXTURES = Path(__file__).parent / "fixtures"
DIM = 512
POLITE, INFO, IMPLICIT = DIM, DIM + 1, DIM + 2


class FakeSegmenter:
    def sentences_many(self, texts):
        return [self.sentences(t) for t in texts]

    def sentences(self, text: str) -> list[str]:
        return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]

    def entities(self, text):
        return []

    def close(self):
        pass


class FakeEmbedder:
    dimension = DIM + 3

    def __init__(self):
        self.calls = 0
        self.texts = 0

    def embed(self, texts):
        self.calls += 1
        self.texts += len(texts)
        return [self._one(t) for t in texts]

    @staticmethod
    def _one(text: str) -> list[float]:
        v = [0.0] * (DIM + 3)
        words = re.findall(r"[a-z]+", text.lower())
        for w in words:
            if len(w) > 3:
                v[int(hashlib.md5(w.encode()).hexdigest(), 16) % DIM] += 1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        v = [x / n for x in v]
        low = text.lower().strip()
        v[POLITE] = float(low in ("thanks!", "hello!", "thank you."))
        v[INFO] = float(low.startswith(("i am", "my ")))
        v[IMPLICIT] = float(low.startswith(("make it", "continue", "and in")))
        return v

    def close(self):
        pass


class FakeHeads:
    threshold = 0.3
    implicit_threshold = 0.5
    version = "fake-1"

    def sentence_labels(self, vectors):
        return ["polite" if v[POLITE] else "information" if v[INFO] else "instruction" for v in vectors]

    def implicit_follow_up(self, vectors, word_counts):
        return [1.0 if v[IMPLICIT] else 0.0 for v in vectors]

    def follow_up_scores(self, prompt, turns):
        return [sum(a * b for a, b in zip(prompt[:DIM], t[:DIM])) for t in turns]

    def follow_up_choice(self, prompt, turns, parents):
        """All on the most recent turn whose bag of words overlaps enough, else on a new root."""
        scores = self.follow_up_scores(prompt, turns)
        accepted = [i for i, s in enumerate(scores) if s >= self.threshold]
        chances = [0.0] * (len(turns) + 1)
        chances[accepted[-1] if accepted else -1] = 1.0
        return chances


@pytest.fixture
def models():
    return ChatTreeModels(FakeSegmenter(), FakeEmbedder(), FakeHeads())


def test_fakes_satisfy_the_protocols():
    from engine.protocols import ChatTurnHeads, Embedder, Segmenter

    assert isinstance(FakeHeads(), ChatTurnHeads)
    assert isinstance(FakeEmbedder(), Embedder) and isinstance(FakeSegmenter(), Segmenter)


# ---- prompt analysis ---------------------------------------------------------------------

def test_prompt_label_is_the_strongest_sentence_label():
    assert prompt_label(["polite", "information", "instruction"]) == "instruction"
    assert prompt_label(["polite", "information"]) == "information"
    assert prompt_label(["polite"]) == "polite"


def test_simplified_prompt_keeps_instructions_and_one_information_sentence():
    sentences = ("Hello!", "I am a teacher.", "My class has 20 kids.", "Write a poem about volcanoes.", "Thanks!")
    labels = ("polite", "information", "information", "instruction", "polite")
    assert simplified_prompt(sentences, labels) == "I am a teacher. Write a poem about volcanoes."
    assert simplified_prompt(("Thanks!",), ("polite",)) == "Thanks!"


def test_analyse_prompt_with_models(models):
    a = analyse_prompt("Hello! I am a gardener in Leeds. Explain composting with coffee grounds.", models)
    assert a.sentences == ("Hello!", "I am a gardener in Leeds.", "Explain composting with coffee grounds.")
    assert a.labels == ("polite", "information", "instruction")
    assert a.label == "instruction"
    assert a.simplified == "I am a gardener in Leeds. Explain composting with coffee grounds."
    assert not a.implicit_follow_up
    assert analyse_prompt("make it shorter", models).implicit_follow_up


def test_prompts_analysed_together_are_analysed_as_alone(models):
    prompts = ["Hello! I am a gardener in Leeds. Explain composting with coffee grounds.", "make it shorter",
               "", "Thanks!", "My dog is old. I am tired. Write a haiku. Then a limerick.", "   "]
    calls = models.embedder.calls
    together = analyse_prompts(prompts, models)
    assert models.embedder.calls - calls <= 2  # sentences and whole prompts, then the simplified ones
    assert together == [analyse_prompt(p, models) for p in prompts]


def test_a_turn_s_vector_needs_no_segmenter_and_equals_the_analysed_one(models):
    from engine.chattree.insert import turn_vector, turn_vectors

    prompt, response = "Hello! I am a gardener. Explain composting with coffee grounds.", "Grounds add nitrogen."
    full = turn_vectors([(analyse_prompt(prompt, models), response)], models)[0]
    bare = ChatTreeModels(None, models.embedder, models.heads)  # no segmenter at all
    assert turn_vector(prompt, response, bare) == full
    assert turn_vector(prompt, "", bare) == turn_vectors([(analyse_prompt(prompt, models), "")], models)[0]


def test_trees_built_in_groups_equal_trees_built_one_by_one(chat_store, models, monkeypatch):
    from engine.chattree import tables

    def rows():
        return chat_store.reader().execute(
            "SELECT * EXCLUDE (vec) FROM chat_tree_turns ORDER BY conversation_id, node_id").fetchall()

    grouped = tables.rebuild(chat_store, models)
    assert grouped.built > 1
    together = rows()
    monkeypatch.setattr(tables, "BUILD_TURNS", 1)
    alone = tables.rebuild(chat_store, models, force=True)
    assert alone.built == grouped.built and rows() == together


# ---- insert rules --------------------------------------------------------------------------

def test_insert_rules(models):
    tree = ChatTree(models)
    first = tree.insert("a", "Explain composting with coffee grounds in a garden.", "Coffee grounds add nitrogen.")
    assert (first.placement.parent, first.placement.reason) == (None, "first")
    other = tree.insert("b", "Recommend guitar chords for a beginner song.", "Try G, C and D.")
    assert (other.placement.parent, other.placement.reason) == (None, "new_topic")
    implicit = tree.insert("c", "make it shorter", "G, C, D.")
    assert (implicit.placement.parent, implicit.placement.reason) == ("b", "implicit")
    info = tree.insert("d", "I am left-handed.", "Then flip the strings.")
    assert (info.placement.parent, info.placement.reason) == ("c", "information")
    polite = tree.insert("e", "Thanks!", "You're welcome.")
    assert (polite.placement.parent, polite.placement.reason) == (None, "polite")
    back = tree.insert("f", "Does composting coffee grounds attract worms in the garden?", "Yes.")
    assert (back.placement.parent, back.placement.reason) == ("a", "judge")
    assert back.placement.score >= FakeHeads.threshold
    assert tree.ancestors("d") == ["b", "c"]
    assert tree.ancestors("a") == []


def test_each_turn_is_embedded_once_and_its_vector_kept(models):
    tree = ChatTree(models)
    for i in range(5):
        tree.insert(str(i), f"Explain topic number {i} about gardens.", "An answer.")
    calls = models.embedder.calls
    tree.insert("5", "Explain composting in gardens.", "An answer.")
    # the new turn: its sentences + the whole prompt in one call, then its own vector;
    # no earlier turn is embedded again
    assert models.embedder.calls - calls == 2
    assert [t.id for t in tree.turns] == [str(i) for i in range(6)]


def test_judge_sees_only_the_most_recent_turns(models):
    tree = ChatTree(models)
    tree.insert("old", "Explain composting with coffee grounds in a garden.", "")
    for i in range(JUDGE_WINDOW):
        tree.insert(f"t{i}", f"Recommend a recipe number {i} with lentils {'x' * i}.", "")
    late = tree.place("Does composting coffee grounds attract worms in the garden?")
    assert late.parent is None and late.reason == "new_topic"


class RecordingHeads(FakeHeads):
    """Fake heads that keep what the chooser was shown and give fixed chances."""

    def __init__(self, chances=None):
        self.shown, self.chances = [], chances

    def follow_up_choice(self, prompt, turns, parents):
        self.shown.append(list(parents))
        return self.chances(len(turns)) if self.chances else super().follow_up_choice(prompt, turns, parents)


def test_the_chooser_sees_the_tree_built_so_far(models):
    """Each recent turn's parent reaches the chooser as its position in the window: None
    for a root, -1 for a parent older than the window."""
    heads = RecordingHeads(lambda n: [0.0] * n + [1.0])  # always a new root
    tree = ChatTree(ChatTreeModels(models.segmenter, models.embedder, heads))
    tree.add("r", [0.0] * (DIM + 3), None)
    tree.add("c1", [0.0] * (DIM + 3), "r")
    tree.add("c2", [0.0] * (DIM + 3), "r")
    tree.add("g", [0.0] * (DIM + 3), "c2")
    tree.place("Explain composting with coffee grounds.")
    assert heads.shown[-1] == [None, 0, 0, 2]
    for i in range(JUDGE_WINDOW - 2):
        tree.add(f"x{i}", [0.0] * (DIM + 3), None)
    tree.place("Explain composting with coffee grounds.")
    assert heads.shown[-1][:2] == [-1, 0]  # c2's root r fell out of the window; g still follows c2
    assert len(heads.shown[-1]) == JUDGE_WINDOW


@pytest.mark.parametrize("best, expected", [(0.6, "b"), (0.25, None)])
def test_the_chooser_s_best_turn_is_the_parent_only_above_the_threshold(models, best, expected):
    heads = RecordingHeads(lambda n: [0.0, best, 0.0, 1.0 - best])  # a, b, c, a new root
    tree = ChatTree(ChatTreeModels(models.segmenter, models.embedder, heads))
    for turn in ("a", "b", "c"):
        tree.add(turn, [0.0] * (DIM + 3), None)
    placed = tree.place("Recommend guitar chords for a beginner song.")
    assert placed.parent == expected and placed.score == pytest.approx(best)
    assert placed.reason == ("judge" if expected else "new_topic")


def test_choice_features_tell_a_thread_s_latest_turn_from_its_earlier_ones():
    np = pytest.importorskip("numpy")
    from models.runtime.chattree_choice import CANDIDATE_FEATURES, ROOT_FEATURES, choice_features

    rng = np.random.default_rng(0)
    turns = rng.normal(size=(4, 8))
    logits = np.array([3.0, -2.0, 2.0, -1.0])  # turns 0 and 2: one topic; 1 and 3: another
    candidates, root = choice_features(logits, rng.normal(size=8), turns, [None, None, 0, 1])
    assert candidates.shape == (4, CANDIDATE_FEATURES) and root.shape == (ROOT_FEATURES,)
    no_child, later_higher = candidates[:, 9], candidates[:, 3]
    assert no_child.tolist() == [0.0, 0.0, 1.0, 1.0]  # 0 and 1 are followed up already
    assert later_higher.tolist() == [0.0, 2 / 4, 0.0, 0.0]
    assert candidates[2, 12] == pytest.approx((3.0 - 2.0) / 4)  # its parent scores higher than it


def test_committed_chooser_gives_every_option_a_probability():
    np = pytest.importorskip("numpy")
    from models.runtime.chattree_heads import NumpyChatTurnHeads

    heads = NumpyChatTurnHeads.load()
    rng = np.random.default_rng(1)
    turns = rng.normal(size=(5, 384))
    turns /= np.linalg.norm(turns, axis=1, keepdims=True)
    chances = heads.follow_up_choice(turns[3] * 0.9 + turns[0] * 0.1, turns, [None, 0, None, 1, 3])
    assert len(chances) == 6 and sum(chances) == pytest.approx(1.0) and min(chances) >= 0.0
    assert heads.follow_up_choice(turns[0], [], []) == [1.0]


# ---- metrics -------------------------------------------------------------------------------

def test_parent_metrics_and_baseline():
    true = {"a": None, "b": "a", "c": None, "d": "c"}
    baseline = previous_turn_baseline(["a", "b", "c", "d"])
    m = parent_metrics([(baseline, true)])
    assert m["accuracy"] == 0.75  # a, b, d right; c is a root the baseline attaches
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == 1.0
    assert m["f1"] == pytest.approx(0.8)
    assert parent_metrics([(true, true)])["accuracy"] == 1.0


# ---- imported conversations ----------------------------------------------------------------

def _import(store, path):
    from zoneinfo import ZoneInfo

    from engine.ingest import import_paths
    from importers.base import ImportContext

    return import_paths(store, [str(path)], context=ImportContext(home_tz=ZoneInfo("Europe/Berlin")))


@pytest.fixture(scope="module")
def imported_chatgpt(tmp_path_factory) -> Path:
    """The fixture ChatGPT export imported once into a store file; tests copy it."""
    from engine.store import EventStore

    path = tmp_path_factory.mktemp("chatgpt-store") / "hindsight.duckdb"
    with EventStore(path) as s:
        _import(s, FIXTURES / "chatgpt/export")
    return path


@pytest.fixture
def chat_store(tmp_path, imported_chatgpt):
    import shutil

    from engine.store import EventStore

    target = tmp_path / "chat-store" / "hindsight.duckdb"
    target.parent.mkdir()
    shutil.copyfile(imported_chatgpt, target)
    s = EventStore(target)
    yield s
    s.close()


def _user_turns(store):
    rows = store.reader().execute(
        "SELECT json_extract_string(attributes, '$.conversation_id'), json_extract_string(attributes, '$.node_id'), "
        "json_extract_string(attributes, '$.content_type') FROM events WHERE kind = 'chat_turn' "
        "AND json_extract_string(attributes, '$.role') = 'user'").fetchall()
    return {(c, n) for c, n, ct in rows if ct != "user_editable_context"}


@pytest.mark.parametrize("export", ["chatgpt/export", "claude/data-2024-11-02-09-30-00-batch-0000"])
def test_every_imported_prompt_gets_a_parent_or_a_root_and_reimport_is_idempotent(store, models, export):
    from engine.chattree import queries, tables

    _import(store, FIXTURES / export)
    first = tables.rebuild(store, models)
    assert first.built == first.conversations > 0
    nodes = queries.turns(store.reader())
    placed = {(n.conversation_id, n.node_id) for n in nodes}
    assert placed and placed <= _user_turns(store)
    by_key = {(n.conversation_id, n.node_id): n for n in nodes}
    for n in nodes:
        if n.parent_node_id is not None:  # a parent is an earlier prompt of the same conversation and branch
            assert (n.conversation_id, n.parent_node_id) in by_key
            assert by_key[(n.conversation_id, n.parent_node_id)].position < n.position
    before = [(n.conversation_id, n.node_id, n.parent_node_id, n.label) for n in nodes]

    calls = models.embedder.calls
    _import(store, FIXTURES / export)  # the same export again
    again = tables.rebuild(store, models)
    assert (again.built, again.unchanged) == (0, first.conversations)
    assert models.embedder.calls == calls
    assert [(n.conversation_id, n.node_id, n.parent_node_id, n.label)
            for n in queries.turns(store.reader())] == before

    forced = tables.rebuild(store, models, force=True)
    assert forced.built == first.conversations
    assert [(n.conversation_id, n.node_id, n.parent_node_id, n.label)
            for n in queries.turns(store.reader())] == before


def test_removed_import_drops_its_trees(chat_store, models):
    from engine.chattree import queries, tables

    tables.rebuild(chat_store, models)
    assert queries.conversations(chat_store.reader())
    chat_store.remove_import(chat_store.imports()[0]["id"])
    stats = tables.rebuild(chat_store, models)
    assert stats.removed > 0 and queries.conversations(chat_store.reader()) == []


def test_cancel_keeps_finished_conversations(chat_store, models, monkeypatch):
    import threading

    from engine.chattree import tables

    monkeypatch.setattr(tables, "BUILD_TURNS", 1)  # one conversation a group: a cancel can fall between two
    cancel = threading.Event()
    seen = []

    def progress(done, total):
        seen.append((done, total))
        if done == 1:
            cancel.set()

    stats = tables.rebuild(chat_store, models, progress=progress, cancel=cancel)
    assert stats.built == 1
    assert stats.cancelled == (stats.conversations > 1)
    rest = tables.rebuild(chat_store, models)
    assert rest.built == stats.conversations - 1


def test_edits_are_alternatives_not_follow_ups(chat_store, models):
    """An edited prompt and the original share the turn above them: neither is the
    other's follow-up, and both are marked as alternatives."""
    from engine.chattree import queries, tables

    tables.rebuild(chat_store, models)
    nodes = queries.turns(chat_store.reader())
    edited = [n for n in nodes if n.branch_count > 1]
    if not edited:
        pytest.skip("the fixture export has no edited prompt")
    ids = {n.node_id for n in edited}
    for n in edited:
        assert n.parent_node_id not in ids or n.parent_node_id == n.node_id


def test_search_finds_conversations_by_any_text(chat_store, models):
    from engine.chattree import queries, tables

    tables.rebuild(chat_store, models)
    everything = queries.conversations(chat_store.reader())
    word = queries.turns(chat_store.reader(), everything[0].conversation_id)[0].snippet.split()[0]
    found = queries.conversations(chat_store.reader(), search=word)
    assert everything[0].conversation_id in {r.conversation_id for r in found}
    assert queries.conversations(chat_store.reader(), search="zzqx-no-such-text") == []


# ---- CLI -------------------------------------------------------------------------------------

def _built_data_dir(data_dir, models, imported):
    import shutil

    from engine.chattree import tables
    from engine.store import EventStore, store_path

    shutil.copyfile(imported, store_path(data_dir))
    with EventStore(store_path(data_dir)) as s:
        tables.rebuild(s, models)
        return queries_all(s)


def queries_all(store):
    from engine.chattree import queries

    return queries.turns(store.reader())


def test_cli_turns_json_shape(cli, data_dir, models, imported_chatgpt):
    nodes = _built_data_dir(data_dir, models, imported_chatgpt)
    code, out, _ = cli("chats", "turns", "--json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == len(nodes)
    for row in rows:
        assert set(row) == {"conversation_id", "node_id", "parent_node_id", "label", "implicit_follow_up"}
        assert row["label"] in ("polite", "information", "instruction")
        assert isinstance(row["implicit_follow_up"], bool)
    one = rows[0]["conversation_id"]
    code, out, _ = cli("chats", "turns", "--conversation", one, "--json")
    assert code == 0 and {r["conversation_id"] for r in json.loads(out)} == {one}


def test_cli_list_and_show(cli, data_dir, models, imported_chatgpt):
    nodes = _built_data_dir(data_dir, models, imported_chatgpt)
    code, out, _ = cli("chats", "list")
    assert code == 0
    cid = nodes[0].conversation_id
    assert cid in out
    code, out, _ = cli("chats", "show", cid)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Topic 1"
    mine = [n for n in nodes if n.conversation_id == cid]
    assert sum(1 for line in lines if line.lstrip().startswith("- [")) == len(mine)
    for n in mine:  # a follow-up is indented deeper than the prompt it follows
        if n.parent_node_id:
            child = next(line for line in lines if line.endswith(f"#{n.node_id}"))
            parent = next(line for line in lines if line.endswith(f"#{n.parent_node_id}"))
            assert len(child) - len(child.lstrip()) > len(parent) - len(parent.lstrip())
    code, _out, err = cli("chats", "show", "no-such-conversation")
    assert code != 0 and "no chat tree" in err


# ---- the Ask history -------------------------------------------------------------------------

def test_ask_history_places_questions_in_its_tree(models):
    from engine.answer import Answer
    from engine.chattree.insert import turn_vector
    from engine.qa import HindsightEngine, follow_up_chain

    engine = HindsightEngine(store=None, planner=None, models=None, chat_models=models)
    history = []
    for question, follows in (("Explain composting with coffee grounds in my garden.", None),
                              ("Recommend guitar chords for a beginner song.", None),
                              ("make it shorter", 1)):
        a = Answer(question, True, 1, f"an answer about {question}", follows=follows)
        a.turn_vector = tuple(turn_vector(question, a.answer_text, models))
        history.append(a)
    assert engine.follow_up_parent("Anything", []) == (None, "first")
    assert engine.follow_up_parent("make it longer", history) == (2, "implicit")
    assert engine.follow_up_parent("Does composting coffee grounds attract worms in the garden?", history) == (0, "judge")
    assert engine.follow_up_parent("Thanks!", history) == (None, "polite")
    # a follow-up is planned with its parent and the questions that one followed
    assert follow_up_chain(history, 2) == [1, 2]
    assert follow_up_chain(history, 0) == [0]
    assert follow_up_chain(history, None) == []


# ---- the committed heads -----------------------------------------------------------------------

def test_committed_heads_are_the_ones_their_manifest_names():
    pytest.importorskip("numpy")
    from models.runtime.chattree_heads import MANIFEST, WEIGHTS, NumpyChatTurnHeads, sha256_of
    from models.training.mixmc import multichallenge_path
    from tests.conftest import SHARED

    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    assert manifest["sha256"] == sha256_of(WEIGHTS)
    assert (Path(__file__).resolve().parents[1] / manifest["script"]).is_file()
    heads = NumpyChatTurnHeads.load()
    assert heads.version == manifest["sha256"][:16]
    assert 0 < heads.threshold < 1 and 0 < heads.implicit_threshold < 1
    # the training data named is the data beside the checkout, where it is there
    data = manifest["data"]
    if multichallenge_path(SHARED).is_file():
        assert sha256_of(SHARED / data["multichallenge"]["path"]) == data["multichallenge"]["sha256"]
        assert sha256_of(SHARED / data["chatgpt_export"]["path"]) == data["chatgpt_export"]["sha256"]


def test_heads_without_a_chooser_are_refused(tmp_path):
    np = pytest.importorskip("numpy")
    from models.runtime.chattree_heads import MANIFEST, WEIGHTS, HeadsMismatch, NumpyChatTurnHeads, sha256_of

    with np.load(WEIGHTS) as z:
        old = {k: z[k] for k in z.files if not k.startswith("rank.")}
    weights = tmp_path / "heads.npz"
    np.savez(weights, **old)
    manifest = tmp_path / "heads.json"
    manifest.write_text(json.dumps({**json.loads(MANIFEST.read_text(encoding="utf-8")),
                                    "sha256": sha256_of(weights)}), encoding="utf-8")
    with pytest.raises(HeadsMismatch, match="chooser"):
        NumpyChatTurnHeads.load(weights, manifest)


def test_tampered_heads_are_refused(tmp_path):
    pytest.importorskip("numpy")
    from models.runtime.chattree_heads import MANIFEST, WEIGHTS, HeadsMismatch, NumpyChatTurnHeads

    bad = tmp_path / "heads.npz"
    bad.write_bytes(WEIGHTS.read_bytes() + b"\0")
    with pytest.raises(HeadsMismatch, match="manifest"):
        NumpyChatTurnHeads.load(bad, MANIFEST)


def test_chooser_training_chats_keep_each_conversation_s_order_and_true_parents():
    """The chooser learns from the given (train) conversations only, woven into chats in
    pairs and threes, interleaved or one after another, each keeping its own order."""
    from models.training.chattree_choice import _chats
    from models.training.mixmc import SourceTurn

    convs = {c: [SourceTurn(c, i, f"{c} prompt {i}", "") for i in range(n)]
             for c, n in (("a", 3), ("b", 4), ("c", 2), ("d", 5), ("e", 3), ("f", 1))}
    chats = _chats(convs, 7)
    sizes = set()
    after_each_other = 0
    for chat in chats:
        owners = [t.key[0] for t in chat]
        assert set(owners) <= set(convs)
        sizes.add(len(set(owners)))
        for c in set(owners):
            mine = [t for t in chat if t.key[0] == c]
            assert [t.key[1] for t in mine] == list(range(len(convs[c])))  # whole, in order
            assert [t.parent for t in mine] == [None] + [f"{c}#{i}" for i in range(len(convs[c]) - 1)]
        runs = [o for i, o in enumerate(owners) if i == 0 or owners[i - 1] != o]
        after_each_other += len(set(owners)) == 2 and len(runs) == 2
    assert sizes == {1, 2, 3} and after_each_other > 0


def test_annotated_set_is_kept_out_of_training():
    """The hand-annotated conversations (4+ user turns) are an evaluation set: the
    training script reads only conversations with fewer user turns."""
    from models.training.chattree import ANNOTATION_POOL_TURNS
    from tests.conftest import SHARED

    annotated = json.loads((Path(__file__).resolve().parents[1] / "app/bench/chattree_annotated.json")
                           .read_text(encoding="utf-8"))["conversations"]
    assert len(annotated) >= 30
    assert all(len(c["turns"]) >= ANNOTATION_POOL_TURNS for c in annotated)
    for c in annotated:
        ids = [t["node_id"] for t in c["turns"]]
        for i, t in enumerate(c["turns"]):  # a parent is an earlier prompt of the same conversation
            assert t["parent_node_id"] is None or t["parent_node_id"] in ids[:i]
    export = SHARED / "data" / "chatgpt-export" / "conversations.json"
    if export.is_file():  # every annotated conversation is one the training script leaves out
        from models.training.chattree import chatgpt_training_prompts

        trained = {tuple(" ".join(p.split())[:80] for p in prompts) for prompts in chatgpt_training_prompts(export)}
        assert not trained & {tuple(t["prompt_start"] for t in c["turns"]) for c in annotated}


# ---- the real models -----------------------------------------------------------------------------

@pytest.mark.slow
def test_real_models_place_obvious_turns(store):
    """The app's own models (spaCy, MiniLM, the committed heads) on turns whose place
    a reader does not doubt, and the fixture export's trees built end to end."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("spacy")
    from app.chattrees import real_models
    from engine.chattree import queries, tables
    from models.registry import ModelRegistry

    with ModelRegistry() as registry:
        models = real_models(registry)
        a = analyse_prompt("Hi! I'm a nurse in Leeds. Write a short poem about night shifts.", models)
        assert a.label == "instruction" and "poem" in a.simplified
        assert analyse_prompt("Thank you so much!", models).label == "polite"
        assert analyse_prompt("make it shorter", models).implicit_follow_up
        assert not analyse_prompt("Explain how vaccines train the immune system.", models).implicit_follow_up
        texts = ["Hi there. Write a poem about the sea! Make it rhyme?", "make it shorter", "One sentence only."]
        assert models.segmenter.sentences_many(texts) == [models.segmenter.sentences(t) for t in texts]
        tree = ChatTree(models)
        tree.insert("cook", "Give me a recipe for a vegetarian lasagne.", "Layer pasta, ricotta, spinach and sauce.")
        tree.insert("code", "How do I reverse a linked list in Python?", "Walk the list and flip each next pointer.")
        assert tree.insert("short", "make it shorter", "").placement.parent == "code"
        # Back to an earlier topic: the judge scores the lasagne turn far above the others,
        # and the chooser takes it over the later turns of the other topic (#40).
        back = analyse_prompt("Can I use mushrooms instead of spinach in the lasagne?", models)
        scores = models.heads.follow_up_scores(back.vector, [t.vector for t in tree.turns])
        assert max(range(len(scores)), key=scores.__getitem__) == 0 and scores[0] > 0.5 > max(scores[1:])
        assert tree.place("Can I use mushrooms instead of spinach in the lasagne?").parent == "cook"
        assert tree.place("Can you do it iteratively, without recursion?").parent in ("code", "short")

        _import(store, FIXTURES / "chatgpt/export")
        stats = tables.rebuild(store, models)
        assert stats.built == stats.conversations > 0
        assert {(n.conversation_id, n.node_id) for n in queries.turns(store.reader())} <= _user_turns(store)


def test_the_chooser_is_trained_on_the_window_placement_reads():
    from engine.chattree.insert import JUDGE_WINDOW
    from models.training.chattree_choice import WINDOW

    assert WINDOW == JUDGE_WINDOW
