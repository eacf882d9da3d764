"""End-to-end checks of every real model role, on the quick profile's build in a
session-scoped temporary cache (about 3 minutes on 2 idle cores, most of it the
quick training). Needs requirements-models*.txt installed. Set
HINDSIGHT_TEST_CACHE to reuse a cache across runs: a build with the same inputs is
a no-op there."""
from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

if importlib.util.find_spec("torch") is None or importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("model requirements not installed (requirements-models.txt)", allow_module_level=True)


@pytest.fixture(scope="session")
def registry(model_registry):
    return model_registry


def _cos(a, b):
    return sum(x * y for x, y in zip(a, b))


def test_embedder_orders_by_meaning(registry):
    emb = registry.embedder()
    q, near, far = emb.embed(["went jogging in the park", "a morning run outdoors", "invoice for printer paper"])
    assert len(q) == emb.dimension == 384
    assert math.isclose(_cos(q, q), 1.0, abs_tol=1e-3)
    assert _cos(q, near) > _cos(q, far) + 0.1


def test_a_texts_vector_does_not_depend_on_the_texts_beside_it(registry):
    """The registry's embedder runs each text alone (no padding to pay for), so
    RETRIEVE's cosine gate decides the same way whatever else a question embeds."""
    emb = registry.embedder()
    text = "kind: podcast_stream | show: Kathrin Talks | source: spotify"
    alone = emb.embed([text])[0]
    emb._memo.clear()  # run the model again, not the memo
    among = emb.embed(["running", text, "a much longer text " * 20, "x"])[1]
    assert alone == among


def test_the_embedder_runs_a_text_it_embedded_lately_no_more(registry):
    """One RETRIEVE embeds its query in up to 13 calls; the model runs it once."""
    emb = registry.embedder()
    runs = []
    original = emb._run
    emb._run = lambda texts: (runs.append(list(texts)), original(texts))[1]
    try:
        emb._memo.clear()
        first = emb.embed(["running", "a morning run", "running"])
        again = emb.embed(["running", "an evening swim"])
    finally:
        emb._run = original
    assert runs == [["running", "a morning run"], ["an evening swim"]]
    assert first[0] == first[2] == again[0] and first[0] is not again[0]  # equal copies, not one shared list
    emb._memo_entries, kept = 2, emb._memo_entries
    try:
        emb.embed(["x", "y", "z"])
        assert list(emb._memo) == ["y", "z"]
    finally:
        emb._memo_entries = kept


def test_sparse_encoder_weights_query_terms(registry):
    enc = registry.sparse_encoder()
    [weights] = enc.encode(["how many songs by taylor swift did I play"])
    # the retrieval index re-encodes when this changes: it names the build
    assert enc.name == f"splade-{enc.path.parent.name}-64"
    assert weights["swift"] > 0 and weights["taylor"] > 0
    assert "[CLS]" not in weights and "[SEP]" not in weights
    assert max(weights, key=weights.get) in {"swift", "taylor", "songs", "song"}


def test_sparse_encoder_gives_splade_weights_for_texts_padded_in_one_batch(registry):
    """The ONNX graph pools inside (max first, then log1p(relu)); the weights must
    be SPLADE's own, max over real tokens of log1p(relu(logits)), padding or not."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from models import paths as mpaths

    texts = ["a run", "dinner with Anna at Osteria da Hänel on a rainy Tuesday evening in Berlin"]
    got = registry.sparse_encoder().encode(texts)
    src = mpaths.splade_dir()
    tok, mlm = AutoTokenizer.from_pretrained(str(src)), AutoModelForMaskedLM.from_pretrained(str(src)).eval()
    for text, weights in zip(texts, got):
        with torch.no_grad():
            logits = mlm(**tok([text], return_tensors="pt")).logits[0]
        ref = torch.log1p(torch.relu(logits)).max(dim=0).values
        vocab = {i: t for t, i in tok.get_vocab().items()}
        expected = {vocab[i]: ref[i].item() for i in torch.nonzero(ref).flatten().tolist()
                    if vocab[i] not in ("[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")}
        assert set(weights) == set(expected)
        assert max(abs(weights[t] - expected[t]) for t in expected) < 1e-3


def test_segmenter_sentences_and_entities(registry):
    seg = registry.segmenter()
    assert seg.sentences("I flew to Berlin on Monday. Then I met Anna Schmidt. It rained.") == [
        "I flew to Berlin on Monday.", "Then I met Anna Schmidt.", "It rained."]
    ents = dict(seg.entities("I flew to Berlin on Monday and met Anna Schmidt."))
    assert ents.get("Berlin") == "GPE"


def test_planner_follows_a_grammar(registry):
    planner = registry.planner()
    grammar = 'root ::= "count(" [a-z_]+ ")"'
    prompt = ("<|im_start|>user\nWrite the plan step that counts the songs, as count(name).<|im_end|>\n"
              "<|im_start|>assistant\n")
    out = planner.complete(prompt, grammar=grammar, max_tokens=12)
    assert out.startswith("count(") and out.endswith(")")
    # the same prompt again reuses the KV cache and stays deterministic
    assert planner.complete(prompt, grammar=grammar, max_tokens=12) == out


def test_greedy_decoding_asks_the_grammar_only_about_the_chosen_token_and_picks_what_the_chain_picks(registry):
    """The planner's greedy path tests the arg-max token against the grammar and masks
    the vocabulary only when it is refused, and checks tokens guessed from the prompt
    in the same forward pass; llama-cpp-python's sampler chain masks before every
    token and evaluates one at a time. Both must write the same text: here the model
    follows the grammar on its own (plan syntax) and is forced off what it wants (a greeting)."""
    import difflib

    from engine.plan.grammar import plan_grammar
    from engine.qud.planner import instructions

    planner = registry.planner()
    llm = planner._llm
    plan = plan_grammar().replace("root ::= plan", 'root ::= " "? plan', 1)
    cases = [
        (instructions() + 'Q: How many songs did I play?\nP: APPLY(l=RETRIEVE(query="song I played"), fct="len")\n\n'
         "Q: How many runs did I do in 2023?\nP:", plan, 80),
        ("<|im_start|>user\nSay hello to Anna.<|im_end|>\n<|im_start|>assistant\n",
         'root ::= "count(" [a-z_]+ ")"', 12),
    ]
    def chain_text(prompt, grammar, max_tokens):
        llm.reset()  # both start from the prompt evaluated afresh: a reused KV cache rounds differently
        return llm.create_completion(prompt, grammar=planner._grammar(grammar), max_tokens=max_tokens,
                                     temperature=0.0, stop=["\n"], seed=0)["choices"][0]["text"]

    def fast_text(prompt, grammar, max_tokens):
        llm.reset()
        return planner.complete(prompt, grammar=grammar, max_tokens=max_tokens, stop=["\n"])

    drafting = planner.draft_tokens
    planner.decode_stats = {}
    for prompt, grammar, max_tokens in cases:
        chain = chain_text(prompt, grammar, max_tokens)
        planner.draft_tokens = 0  # one token a pass, as the chain: the very same text
        try:
            assert fast_text(prompt, grammar, max_tokens) == chain
        finally:
            planner.draft_tokens = drafting
        # with guessed tokens checked in the same pass, the text is the chain's up to rounding: a
        # pass over several tokens rounds differently and can flip a near tie (the first prompt's
        # plan is a string of made-up numbers: the AVX-512 build wrote "== 1" for "== 12" there)
        fast = fast_text(prompt, grammar, max_tokens)
        assert difflib.SequenceMatcher(None, fast, chain).ratio() >= 0.9, (fast, chain)
        assert planner.complete(prompt, grammar=grammar, max_tokens=max_tokens, stop=["\n"]) == fast
    assert fast.startswith("count(") and fast.endswith(")")
    # tokens guessed from the prompt (prompt lookup) were kept
    assert planner.draft_tokens > 0 and planner.decode_stats["accepted"] > 0
    assert "RETRIEVE(" in planner.complete(cases[0][0], grammar=plan, max_tokens=80)
    assert len(llm.tokenize(planner.complete(cases[0][0], grammar=plan, max_tokens=5).encode(), add_bos=False)) <= 5


def test_a_plan_is_the_same_text_written_with_one_thread_or_two(registry):
    """The planner drops to one thread while another program holds a core
    (models/runtime/llama_threads.py): the plan it writes must not depend on that."""
    from engine.plan.grammar import plan_grammar
    from engine.qud.planner import instructions

    planner = registry.planner()
    plan = plan_grammar().replace("root ::= plan", 'root ::= " "? plan', 1)
    prompt = (instructions() + 'Q: How many songs did I play?\nP: APPLY(l=RETRIEVE(query="song I played"), '
              'fct="len")\n\nQ: Which artist did I listen to most in May?\nP:')

    class Fixed:
        def __init__(self, n):
            self.current = n
            self.counts = set()

        def threads(self):
            return self.current

        def record(self, threads, _seconds):
            self.counts.add(threads)

    texts, pacer = {}, planner.pacer
    try:
        for n in (1, 2):
            planner.pacer = fixed = Fixed(n)
            planner._llm.reset()
            texts[n] = planner.complete(prompt, grammar=plan, max_tokens=100, stop=["\n"])
            assert fixed.counts == {n}
    finally:
        planner.pacer = pacer
    assert "RETRIEVE(" in texts[2] and texts[1] == texts[2]


def test_a_plan_drawn_at_a_temperature_follows_the_grammar_and_is_drawn_alike_again(registry):
    """The planner's retries draw at a temperature through the same loop as greedy
    decoding (guesses checked in the pass), not llama-cpp-python's sampler chain."""
    from engine.plan import parse_plan
    from engine.plan.grammar import plan_grammar
    from engine.qud.planner import instructions

    planner = registry.planner()
    grammar = plan_grammar().replace("root ::= plan", 'root ::= " "? plan', 1)
    prompt = (instructions() + 'Q: How many songs did I play?\nP: APPLY(l=RETRIEVE(query="song I played"), fct=len)\n\n'
              "Q: How many runs did I do in 2023?\nP:")
    planner.decode_stats = {}
    drawn = planner.complete(prompt, grammar=grammar, max_tokens=80, stop=["\n"], temperature=0.8)
    assert parse_plan(drawn.strip()) is not None
    assert planner.decode_stats["passes"] > 0  # the loop's passes, not the chain's
    assert planner.complete(prompt, grammar=grammar, max_tokens=80, stop=["\n"], temperature=0.8) == drawn


def test_a_prefix_evaluated_once_is_not_evaluated_again_in_the_same_process(registry, tmp_path):
    """The persona benchmark warmed the planner twice (with and without a state
    folder) and paid ~140 s for the second, identical prefix."""
    planner = registry.planner()
    prefix = "<|im_start|>system\nYou write plan steps.<|im_end|>\n"
    planner.preload(prefix, tmp_path)
    evals = []
    original = planner._llm.eval
    planner._llm.eval = lambda tokens: (evals.append(len(tokens)), original(tokens))[1]
    try:
        planner.preload(prefix)
        planner.preload(prefix, tmp_path)
    finally:
        planner._llm.eval = original
    assert evals == []
    prompt = prefix + "<|im_start|>user\nCount the songs as count(name).<|im_end|>\n<|im_start|>assistant\n"
    assert planner.complete(prompt, grammar='root ::= "count(" [a-z_]+ ")"', max_tokens=12).startswith("count(")


def test_a_saved_prefix_keeps_no_copy_of_the_logits_buffer_and_still_restores(registry, tmp_path):
    """llama-cpp-python's saved state copies its n_batch x n_vocab logits buffer
    (155 MB for the Qwen planner); the planner keeps one zero row instead, holds no
    logits buffer of that size, and keeps a state saved on disk only there."""
    planner = registry.planner()
    assert planner._llm.scores.nbytes < 1_000_000
    prefix = "<|im_start|>system\nYou write plan steps, as count(name).<|im_end|>\n"
    planner.preload(prefix, tmp_path)
    [(_, state)] = [v for k, v in planner._saved.items() if k == prefix]
    assert state.is_dir() and (state / "kv.bin").is_file()  # read again when needed, not held
    assert sum(f.stat().st_size for f in tmp_path.rglob("scores.npy")) < 1_000_000
    unsaved = "<|im_start|>system\nYou write plan steps, as sum(name).<|im_end|>\n"
    planner.preload(unsaved)  # no folder: the state stays in memory, without the logits
    [(_, kept)] = [v for k, v in planner._saved.items() if k == unsaved]
    assert kept.scores.nbytes < 1_000_000
    planner.complete(unsaved + "<|im_start|>user\nSum the runs.<|im_end|>\n<|im_start|>assistant\n",
                     grammar='root ::= "sum(" [a-z_]+ ")"', max_tokens=12)
    prompt = prefix + "<|im_start|>user\nCount the runs.<|im_end|>\n<|im_start|>assistant\n"
    grammar = 'root ::= "count(" [a-z_]+ ")"'
    first = planner.complete(prompt, grammar=grammar, max_tokens=12)
    planner.complete("<|im_start|>user\nSomething else entirely.<|im_end|>\n", grammar=grammar, max_tokens=12)
    assert planner.complete(prompt, grammar=grammar, max_tokens=12) == first  # restored from the saved state
    assert planner.complete(prompt, grammar=grammar, max_tokens=12, temperature=0.5).startswith("count(")


def test_a_saved_prefix_state_is_kept_per_key_cache_type_and_build(registry, tmp_path, monkeypatch):
    """A state saved with f16 keys does not fit a cache of q8_0 keys, nor one build's
    state another's: each gets a folder of its own."""
    from models.runtime import planner as runtime

    planner = registry.planner()
    assert planner.key_cache == runtime.KEY_CACHE == "f16"
    other = runtime.LlamaPlanner(planner.path, key_cache="q8_0", n_ctx=512)
    try:
        prefix = "<|im_start|>system\nYou write plan steps.<|im_end|>\n"
        same_ctx = runtime.LlamaPlanner.__new__(runtime.LlamaPlanner)
        same_ctx.path, same_ctx._llm, same_ctx.key_cache = other.path, other._llm, "f16"
        same_ctx.lora_path = None
        assert other._state_folder(prefix, tmp_path) != same_ctx._state_folder(prefix, tmp_path)
        before = same_ctx._state_folder(prefix, tmp_path)
        same_ctx.lora_path = tmp_path / "adapter.gguf"  # a fine-tuned adapter: its own states
        assert same_ctx._state_folder(prefix, tmp_path) != before
        same_ctx.lora_path = None
        monkeypatch.setattr(runtime, "instruction_sets", lambda: {"AVX", "AVX2"})
        assert same_ctx._state_folder(prefix, tmp_path) != before
        grammar = 'root ::= "count(" [a-z_]+ ")"'
        prompt = prefix + "<|im_start|>user\nCount the songs as count(name).<|im_end|>\n<|im_start|>assistant\n"
        assert other.complete(prompt, grammar=grammar, max_tokens=12).startswith("count(")
    finally:
        other.close()


def test_two_threads_share_one_planner_each_call_alone(registry):
    """The Ask pane and the Insights tab use one planner: calls from two threads give
    what they give one after the other (one llama.cpp context, one call at a time)."""
    from concurrent.futures import ThreadPoolExecutor

    planner = registry.planner()
    grammar = 'root ::= "count(" [a-z_]+ ")"'
    prompts = [f"<|im_start|>user\nCount the {what} as count(name).<|im_end|>\n<|im_start|>assistant\n"
               for what in ("songs", "runs", "mails", "films")]
    alone = [planner.complete(p, grammar=grammar, max_tokens=12) for p in prompts]
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda p: planner.complete(p, grammar=grammar, max_tokens=12), prompts))
    assert together == alone


def test_cross_encoders_return_probabilities_and_labels(registry):
    scores = registry.event_classifier().score([
        ("How often did I listen to Zofia Wąsik?", "Listened to Blue Echo by Zofia Wąsik for 3 min."),
        ("How often did I listen to Zofia Wąsik?", "Bought Kettle Pro from Hansen AB for €30.00."),
    ])
    assert len(scores) == 2 and all(0.0 <= s <= 1.0 for s in scores)
    labels = registry.pattern_classifier().classify("How many running workouts did I do?",
                                                    ["activity: running", "source: netflix", "kind: workout"])
    assert len(labels) == 3 and set(labels) <= {"relevant", "irrelevant", "partial"}


def test_extractor_on_unseen_names(registry):
    items = [("Dinner at Trattoria Ødegård in Quixeramobim with Ngozi Abernathy-Voss on Friday.", "city"),
             ("Listened to Glass Harbor by Thandiwe Okonkwo-Lindqvist for 4 min.", "artist"),
             ("Bought Zyrtek Ultra kettle from Brönnimann GmbH for €49.90.", "currency"),
             ("Listened to Glass Harbor by Thandiwe Okonkwo-Lindqvist for 4 min.", "cuisine")]
    out = registry.extractor().extract(items)
    assert len(out) == len(items) and all(isinstance(v, str) for v in out)
    from models.status import status

    if status(registry.cache)["roles"]["extractor"]["profile"] == "full":
        # spans come back exactly as written (case, accents). The quick profile's
        # 25 steps may still spell a category where a span belongs, so only the
        # full model is held to this.
        assert out[:3] == ["Quixeramobim", "Thandiwe Okonkwo-Lindqvist", "eur"]


def test_all_roles_together_fit_in_memory_and_satisfy_the_protocols(registry):
    from engine import protocols as p

    expected = {"planner": p.Planner, "embedder": p.Embedder, "sparse_encoder": p.SparseEncoder,
                "segmenter": p.Segmenter, "pattern_classifier": p.PatternClassifier,
                "event_classifier": p.Reranker, "extractor": p.Extractor}
    for role, protocol in expected.items():
        assert isinstance(registry.get(role), protocol), role
    assert registry.get("extractor") is registry.extractor()  # one instance per role


_LOAD_ALL = """
import sys
from pathlib import Path
from models.registry import ModelRegistry
reg = ModelRegistry(Path(sys.argv[1]))
for role in ("planner", "embedder", "sparse_encoder", "segmenter", "pattern_classifier",
             "event_classifier", "extractor"):
    reg.get(role)
for line in Path("/proc/self/status").read_text().splitlines():
    if line.startswith("VmHWM:"):
        print(int(line.split()[1]) * 1024)
"""


def test_all_roles_loaded_together_stay_under_2_5_gb(registry):
    """Measured in a fresh process: this test process also holds whatever earlier
    tests loaded, which says nothing about the app's footprint."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _LOAD_ALL, str(registry.cache)], capture_output=True, text=True,
                         timeout=900, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr[-2000:]
    peak = int(out.stdout.strip().splitlines()[-1])
    assert peak < 2.5e9, f"peak RSS {peak / 1e9:.2f} GB with every role loaded"


def test_segmenter_finds_people_without_its_parser(registry):
    seg = registry.segmenter()
    ents = seg.entities("Tried a new recipe on Monday: shrimp chowder, for Mathias Lundblad and me.")
    assert ("Mathias Lundblad", "PERSON") in ents
    assert seg.sentences("One. Two.") == ["One.", "Two."]


def test_segmenter_splits_sentences_with_its_sentence_recogniser_not_its_parser(registry):
    seg = registry.segmenter()
    assert seg.sentences_many(["Make it shorter. Thanks!", "Plan a trip to Rome. Book a hotel."]) == [
        ["Make it shorter.", "Thanks!"], ["Plan a trip to Rome.", "Book a hotel."]]
    assert "parser" in seg._not_for_sentences and "senter" not in seg._not_for_sentences


def test_guesses_stop_where_the_grammar_refuses_and_no_pass_is_spent_on_a_finished_text(registry):
    """A plan's last forward pass used to score the closing parenthesis together with
    guesses copied from the examples ("\\n\\nQ: ..."), only to find that the model ends
    there. Guesses the grammar refuses are now cut before the pass, and once the
    grammar allows nothing but the end, decoding ends without one."""
    import numpy as np

    from models.runtime.greedy import GrammarGate

    planner = registry.planner()
    llm = planner._llm
    grammar = 'root ::= "count(" [a-z_]+ ")"'
    gate = GrammarGate(llm._model.vocab, llm.n_vocab(), grammar)
    try:
        tok = lambda s: llm.tokenize(s.encode(), add_bos=False, special=False)  # noqa: E731
        done, extra = tok("count(songs)"), tok("\n\nQ: and")
        assert gate.allowed_run(done) == len(done)
        assert gate.allowed_run(done + extra) == len(done)  # nothing may follow the closing parenthesis
        assert gate.allowed_run(tok("sum(")) == 0
        assert gate.allows(tok("count")[0]) and not gate.only_end(llm._model.vocab)  # the copy's steps stay its own
        for t in done:
            gate.accept(t)
        assert gate.only_end(llm._model.vocab)
        # greedy decoding ends there without scoring another token: one token a pass,
        # every token but the last was evaluated
        prompt = ("<|im_start|>user\nWrite the plan step that counts the songs, as count(name).<|im_end|>\n"
                  "<|im_start|>assistant\n")
        drafting, planner.draft_tokens, planner.decode_stats = planner.draft_tokens, 0, {}
        try:
            out = planner.complete(prompt, grammar=grammar, max_tokens=12)
        finally:
            planner.draft_tokens = drafting
        n_out = len(tok(out))
        assert out.endswith(")") and planner.decode_stats["ended"] == 1
        assert planner.decode_stats["passes"] == n_out - 1
        assert list(llm.input_ids[llm.n_tokens - n_out + 1:llm.n_tokens]) == tok(out)[:-1]
        assert np.all(llm.input_ids[:llm.n_tokens] >= 0)
    finally:
        gate.close()


def test_the_encoders_without_softmax_guards_score_exactly_as_exported(registry):
    """models.runtime.onnx_graph drops torch's NaN guards from the graphs; on padded
    batches (the short pairs' rows mask keys) every score must stay bit-identical."""
    import onnxruntime as ort

    pairs = [("How often did I listen to Zofia Wąsik?", "Listened to Blue Echo by Zofia Wąsik for 3 min."),
             ("run", "kind: workout | activity: running | distance_km: 5.2 | source: strava " * 6),
             ("coffee with Anna", "Coffee"), ("x", "y")]
    for clf in (registry.event_classifier(), registry.pattern_classifier()):
        enc = clf._tok.encode_batch(pairs)
        fast = clf._run(enc)
        rewritten, clf._session = clf._session, ort.InferenceSession(str(clf.path),
                                                                     providers=["CPUExecutionProvider"])
        try:
            assert clf._run(enc) == fast
        finally:
            clf._session = rewritten
    emb = registry.embedder()
    texts = ["went jogging in the park", "invoice for printer paper " * 10]
    fast = emb._run(texts)
    rewritten, emb._session = emb._session, ort.InferenceSession(str(emb.path), providers=["CPUExecutionProvider"])
    try:
        assert emb._run(texts) == fast
    finally:
        emb._session = rewritten


def test_the_planner_writes_the_same_after_the_cross_encoders_ran(registry):
    """onnxruntime's int8 kernels load AMX tile shapes of their own on the threads
    llama.cpp uses; llama.cpp's AMX kernels (packaging/llama_wheel.py) must load theirs
    again, or the plan after a RETRIEVE is nonsense."""
    planner = registry.planner()
    llm = planner._llm
    prompt = "<|im_start|>user\nName three fruits, comma separated.<|im_end|>\n<|im_start|>assistant\n"

    def text():
        llm.reset()  # the prompt evaluated afresh both times: the same passes, the same rounding
        return planner.complete(prompt, grammar='root ::= [a-z, ]+', max_tokens=16)

    before = text()
    registry.event_classifier().score([("went running", "Ran 5 km in the park with Anna.")] * 70)
    registry.pattern_classifier().classify("running", ["activity: running"] * 70)
    assert text() == before
