"""Greedy decoding under a GBNF grammar that consults the grammar only when it must.

llama-cpp-python's sampler chain runs the grammar over the whole vocabulary (151,936
tokens for Qwen2.5) before every token; on 2 cores that took about as long as the
forward pass itself (~50 of ~120 ms per planner token). The model nearly always
wants a token the grammar allows, so :func:`greedy_complete` asks the grammar about
the arg-max token alone and, when that one is refused, about the next best ones in
turn (:meth:`GrammarGate.best`); the whole vocabulary is masked only when none of the
first 64 is allowed. The result is the token greedy sampling under the grammar picks:
the best-scoring allowed token is the arg-max of the allowed tokens.

Plans copy the question's words and the examples' syntax, so the tokens after a
repeated stretch of the prompt are guessed and checked in the same forward pass
(prompt-lookup decoding); a guess is kept only where greedy decoding picks it
(up to rounding; see :func:`greedy_complete`). Guesses the grammar refuses are cut
before the pass, and decoding stops without a pass once the grammar allows nothing
but the end: every plan's last pass used to score its closing parenthesis with five
guesses copied from the examples' "\n\nQ: ..." only to learn that the model ends
there (24 questions interleaved: 8% less time, 30 passes fewer, 23 plans the same).
"""
from __future__ import annotations

import ctypes
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from models.runtime.llama_threads import ThreadPacer

_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
# Tokens asked one by one, best first, before the whole vocabulary is masked (GrammarGate.best).
BEST_OF_FIRST = 64
# Sampling at a temperature (the planner's retries): llama-cpp-python's defaults, and the
# best-scoring tokens asked one by one before the whole vocabulary is masked (GrammarGate.sample).
SAMPLING = {"top_k": 40, "min_p": 0.05, "top_p": 0.95}
SAMPLE_POOL = 256


def _best_first(logits: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """``tokens`` by score, best first; ties by id, as np.argmax breaks them."""
    return tokens[np.lexsort((tokens, -logits[tokens]))]


class GrammarGate:
    """One llama.cpp grammar sampler, used to test single tokens or mask all of them."""

    def __init__(self, vocab, n_vocab: int, grammar: str, root: str = "root"):
        import llama_cpp

        self._lib = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), root.encode("utf-8"))
        if not self._sampler:
            raise ValueError("llama.cpp could not parse the grammar")
        assert _TOKEN_DATA.itemsize == ctypes.sizeof(llama_cpp.llama_token_data)
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_view = llama_cpp.llama_token_data_array(self._one, 1, -1, False)
        self._all = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._all["id"] = np.arange(n_vocab, dtype=np.int32)
        self._all_view = llama_cpp.llama_token_data_array(
            self._all.ctypes.data_as(llama_cpp.llama_token_data_p), n_vocab, -1, False)

    def reset(self) -> None:
        self._lib.llama_sampler_reset(self._sampler)

    def allows(self, token: int, sampler=None) -> bool:
        """Whether the grammar (or ``sampler``, a copy of it) allows ``token`` now."""
        self._one[0].id = token
        self._one[0].logit = 0.0
        self._one_view.size, self._one_view.selected, self._one_view.sorted = 1, -1, False
        self._lib.llama_sampler_apply(sampler or self._sampler, ctypes.byref(self._one_view))
        return not math.isinf(self._one[0].logit)

    def best(self, logits: np.ndarray, *, first: int = BEST_OF_FIRST) -> int | None:
        """The highest-scoring token the grammar allows now; None when it allows none.

        The ``first`` best-scoring tokens are asked one by one, best first; the first
        allowed one is the answer when it scores above every token not asked (a tie
        with the last one asked is settled by the full mask, as is "none allowed").
        Masking all 151,936 tokens costs ~50 ms on 2 cores; asking a few, well under 1."""
        if 0 < first < len(logits):
            top = _best_first(logits, np.argpartition(logits, -first)[-first:])
            floor = logits[top[-1]]
            for token in top:
                if logits[token] <= floor:
                    break
                if self.allows(int(token)):
                    return int(token)
        return self._best_of_all(logits)

    def _mask_all(self, logits) -> np.ndarray:
        """``logits`` (an array, or one value for every token) with -inf where the
        grammar refuses the token."""
        self._all["logit"] = logits
        self._all_view.size, self._all_view.selected, self._all_view.sorted = len(self._all), -1, False
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(self._all_view))
        return self._all["logit"]

    def _best_of_all(self, logits: np.ndarray) -> int | None:
        masked = self._mask_all(logits)
        token = int(np.argmax(masked))
        return None if math.isinf(masked[token]) and masked[token] < 0 else token

    def sample(self, logits: np.ndarray, rng: np.random.Generator, temperature: float) -> int | None:
        """A token drawn at ``temperature`` from the tokens the grammar allows now, as
        llama.cpp's default chain draws (:data:`SAMPLING`): the ``top_k`` best, those
        within ``min_p`` of the best one's probability, the most probable of them up to
        ``top_p`` together. None when the grammar allows no token.

        The best-scoring tokens are asked one by one, best first, until ``top_k`` are
        allowed or the rest score too low for ``min_p``; the whole vocabulary is masked
        only where the ``SAMPLE_POOL`` best leave that open."""
        top_k, min_p, top_p = SAMPLING["top_k"], SAMPLING["min_p"], SAMPLING["top_p"]
        cutoff = math.log(min_p)
        pool = _best_first(logits, np.argpartition(logits, -SAMPLE_POOL)[-SAMPLE_POOL:])
        allowed: list[int] = []
        settled = False
        for token in pool:
            if allowed and logits[token] < logits[allowed[0]] + cutoff:
                settled = True
                break
            if self.allows(int(token)):
                allowed.append(int(token))
                if len(allowed) == top_k:
                    settled = True
                    break
        if not settled:
            masked = self._mask_all(logits)
            ok = np.flatnonzero(~np.isinf(masked))
            if not len(ok):
                return None
            allowed = [int(t) for t in _best_first(logits, ok)[:top_k]]
            allowed = [t for t in allowed if logits[t] >= logits[allowed[0]] + cutoff]
        scores = logits[allowed].astype(np.float64)
        p = np.exp(scores - scores[0])
        p /= p.sum()
        kept = int(np.searchsorted(np.cumsum(p), top_p)) + 1
        q = np.exp((scores[:kept] - scores[0]) / temperature)
        return allowed[int(rng.choice(kept, p=q / q.sum()))]

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._sampler, token)

    def allowed_run(self, tokens: Sequence[int]) -> int:
        """How many of ``tokens``, from the first, the grammar would accept one after
        another from here (tried on a copy: this gate's state stays)."""
        if not tokens:
            return 0
        copy = self._lib.llama_sampler_clone(self._sampler)
        try:
            for n, token in enumerate(tokens):
                if not self.allows(token, copy):
                    return n
                self._lib.llama_sampler_accept(copy, token)
            return len(tokens)
        finally:
            self._lib.llama_sampler_free(copy)

    def only_end(self, vocab) -> bool:
        """Whether the grammar allows nothing now but end-of-generation tokens (which it
        allows only once the text it describes is complete): then greedy decoding ends
        here whatever the model would score, and the forward pass that scores it is
        saved. Asks about the end-of-sequence token first (well under 1 ms), the whole
        vocabulary (~50 ms) only when that one is allowed."""
        lib = self._lib
        eos = lib.llama_vocab_eos(vocab)
        if eos < 0 or not self.allows(eos):
            return False
        allowed = np.flatnonzero(~np.isinf(self._mask_all(0.0)))
        return all(lib.llama_vocab_is_eog(vocab, int(t)) for t in allowed)

    def close(self) -> None:
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None

    def __del__(self):
        self.close()


# Guessed tokens per forward pass. A pass over more tokens costs more (on 2 cores compute
# bounds it: at a 5.8k-token context one token took 87 ms, four 163 ms, eight 282 ms), so
# a guess pays only where it is likely kept. Guesses therefore go on only while the
# earlier occurrences of the tail agree on what follows (DRAFT_AGREEMENT). Replayed over
# 88 questions' greedy plans (the planner benchmark's 12, the persona test split's 40,
# TimelineQA's 36) with those pass costs, seconds of forward passes:
#   no guesses 406; the latest occurrence of a 1-3 token tail, 3 guesses 278 (the old
#   default), 2 guesses 275; longest tail up to 16, most frequent continuation,
#   agreement 0.75: 3 guesses 254, 4 guesses 252, 5 guesses 248, 6 guesses 252 (0.7);
#   agreement 0.6, 5 guesses 251; 0.8, 248.
DRAFT_TOKENS = 5
DRAFT_TAIL = 16  # the longest tail looked up
DRAFT_AGREEMENT = 0.75
# With llama.cpp's AMX kernels (built where the CPU has AMX: packaging/llama_wheel.py)
# each further token of a pass costs less (at a 5.8k-token context: one token 95 ms,
# four 162, eight 217, twelve 255), so longer guesses pay. Replayed over the same 88
# plans with those costs: 5 / 0.75 210 s, 11 / 0.6 188 s, 15 / 0.6 187 s, 11 / 0.4
# 191 s. Measured: forward passes took 223 s with 5 / 0.75 and 205 s with 11 / 0.6,
# and all 88 plans stayed the same.
DRAFT_AMX = (11, 0.6)


def _longest_tail(history: np.ndarray, max_tail: int) -> np.ndarray:
    """Where the tokens after the earlier occurrences of the longest repeated tail of
    ``history`` (at most ``max_tail`` tokens) stand; empty when its last token is new."""
    after = np.flatnonzero(history[:-1] == history[-1]) + 1
    n = 1
    while len(after) and n < max_tail:
        longer = after[after > n]
        longer = longer[history[longer - n - 1] == history[-n - 1]]
        if not len(longer):
            break
        after, n = longer, n + 1
    return after


def draft_from_context(history: np.ndarray, k: int, max_tail: int = DRAFT_TAIL,
                       agreement: float = DRAFT_AGREEMENT) -> list[int]:
    """Prompt-lookup drafting, one guess at a time: the token that most often followed
    the earlier occurrences of the longest repeated tail (the latest of equally frequent
    ones), while at least ``agreement`` of those occurrences agree on it; at most ``k``.
    A plan copies words of the question and whole stretches of the examples' syntax."""
    guesses: list[int] = []
    tail = history
    while len(guesses) < k and len(tail) > 1:
        after = _longest_tail(tail, max_tail)
        if not len(after):
            break
        following = tail[after]
        values, counts = np.unique(following, return_counts=True)
        best = counts.max()
        if best < agreement * len(after):
            break
        most = values[counts == best]
        guess = int(following[np.flatnonzero(np.isin(following, most))[-1]])
        guesses.append(guess)
        tail = np.append(tail, guess)
    return guesses


# A text whose last tokens are one stretch of at least LOOP_MIN tokens written LOOP_TIMES
# times in a row is a loop: greedy decoding does not leave one, and every further token
# costs a pass. Asked "what were the last 3 things i bought on amazon", the planner wrote
# ' and e["total"] > 0 and e["total"] < 100000000000' until the token limit (10.7 s)
# before its retry could start. No plan repeats a stretch that long three times.
LOOP_MIN = 8
LOOP_TIMES = 3


def looping(tokens: Sequence[int], shortest: int = LOOP_MIN, times: int = LOOP_TIMES) -> bool:
    """Whether ``tokens`` end in one stretch of ``shortest`` or more tokens repeated
    ``times`` times."""
    n = len(tokens)
    for size in range(shortest, n // times + 1):
        unit = tokens[n - size:]
        if all(tokens[n - k * size:n - (k - 1) * size] == unit for k in range(2, times + 1)):
            return True
    return False


def _eval_rows(llm, tokens: list[int], n_vocab: int) -> np.ndarray:
    """Evaluate ``tokens`` after what ``llm`` holds and return the logits after each
    one. Only these few rows are kept: ``Llama(logits_all=True)`` keeps n_ctx x n_vocab
    floats (5 GB here), which is why llama-cpp-python's own drafting was no option."""
    n_past = llm.n_tokens
    llm._ctx.kv_cache_seq_rm(-1, n_past, -1)
    llm._batch.set_batch(batch=tokens, n_past=n_past, logits_all=True)
    llm._ctx.decode(llm._batch)
    llm.input_ids[n_past:n_past + len(tokens)] = tokens
    llm.n_tokens = n_past + len(tokens)
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(len(tokens), n_vocab))


def greedy_complete(llm, prompt: str, gate: GrammarGate, *, max_tokens: int, stop: Sequence[str] = (),
                    draft_tokens: int = DRAFT_TOKENS, draft_agreement: float = DRAFT_AGREEMENT,
                    stats: dict | None = None, temperature: float = 0.0, seed: int = 0,
                    pacer: ThreadPacer | None = None) -> str:
    """Continue ``prompt`` greedily under ``gate``'s grammar on a ``llama_cpp.Llama``,
    reusing the KV cache for the token prefix it already holds (as ``create_completion`` does).

    Each chosen token is evaluated together with up to ``draft_tokens`` guessed to
    follow it (:func:`draft_from_context`, while ``draft_agreement`` of the earlier
    occurrences of the tail agree); the guesses are kept as far as greedy
    decoding would have chosen them itself. That is token-by-token decoding's text up
    to rounding: llama.cpp rounds a pass over several tokens differently, so where two
    tokens score within that of each other the pick can change. Of 17 plans compared,
    one did: "run with people" became "running with friends" (`hindsight bench
    planner` counts the plans that differ). ``stats`` (optional) counts passes and
    accepted guesses. ``pacer`` (optional) chooses each pass's thread count from the
    times of the passes before (:class:`models.runtime.llama_threads.ThreadPacer`).

    With a ``temperature`` each token is drawn instead (:meth:`GrammarGate.sample`,
    from a generator seeded with ``seed``), and a guess is kept where the token drawn
    at its place is the guess; where it is not, the drawn token is the next one. That
    draws each token from the same distribution as decoding one token a pass does:
    the planner's retries took ~120 ms a token in llama-cpp-python's sampler chain
    (the whole vocabulary masked before each) and no guesses."""
    import llama_cpp

    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    held = llm.input_ids[:llm.n_tokens]
    n = min(len(held), len(tokens) - 1)  # the last prompt token is evaluated anyway, for its logits
    same = held[:n] == np.asarray(tokens[:n], dtype=held.dtype)
    common = n if same.all() else int(np.argmin(same))
    llm.n_tokens = common  # llm.eval() then drops the KV entries from here on
    applied = [0]

    def use_threads(n: int) -> None:
        if n != applied[0]:
            llm._ctx.set_n_threads(n, n)
            applied[0] = n

    if pacer is not None:
        use_threads(pacer.current)
    llm.eval(tokens[common:])

    gate.reset()
    vocab = llm._model.vocab
    n_vocab = llm.n_vocab()
    history = np.asarray(tokens, dtype=np.int64)
    out: list[int] = []
    stats = stats if stats is not None else {}
    stats.setdefault("passes", 0)
    stats.setdefault("drafted", 0)
    stats.setdefault("accepted", 0)
    stats.setdefault("refused", 0)  # picks whose arg-max the grammar refused

    rng = np.random.default_rng(seed)

    def pick(logits: np.ndarray) -> int | None:
        if temperature > 0:
            return gate.sample(logits, rng, temperature)
        token = int(np.argmax(logits))
        if gate.allows(token):
            return token
        stats["refused"] += 1
        return gate.best(logits)

    def take(token: int) -> str | None:
        """Accept ``token``; the finished text when a stop string ends it, or when the
        text has become a loop (returned as far as it got: an unfinished plan)."""
        gate.accept(token)
        out.append(token)
        text = llm.detokenize(out).decode("utf-8", errors="ignore")
        cut = min((text.find(s) for s in stop if s in text), default=-1)
        if cut < 0 and looping(out):
            stats["looped"] = stats.get("looped", 0) + 1
            return text
        return text[:cut] if cut >= 0 else None

    logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(n_vocab,))
    picked: list[int | None] = []  # the token chosen where a guess was refused: the next one
    while len(out) < max_tokens:
        token = picked.pop() if picked else pick(logits)
        if token is None or llama_cpp.llama_vocab_is_eog(vocab, token):
            break
        if (done := take(token)) is not None:
            return done
        if len(out) >= max_tokens:
            break
        if gate.only_end(vocab):  # the text is complete: no pass to find out the model would end it
            stats["ended"] = stats.get("ended", 0) + 1
            break
        draft = draft_from_context(np.concatenate([history, np.asarray(out, dtype=np.int64)]),
                                   min(draft_tokens, max_tokens - len(out)),
                                   agreement=draft_agreement) if draft_tokens else []
        draft = draft[:gate.allowed_run(draft)]  # a guess the grammar refuses is never kept
        if pacer is None:
            rows = _eval_rows(llm, [token, *draft], n_vocab)
        else:
            threads = pacer.threads()
            use_threads(threads)
            started = time.perf_counter()
            rows = _eval_rows(llm, [token, *draft], n_vocab)
            pacer.record(threads, (time.perf_counter() - started) / (1 + len(draft)))
            if threads == 1:
                stats["one_thread_passes"] = stats.get("one_thread_passes", 0) + 1
        stats["passes"] += 1
        stats["drafted"] += len(draft)
        logits = rows[0]
        for j, guess in enumerate(draft):
            chosen = pick(logits)
            if chosen != guess or llama_cpp.llama_vocab_is_eog(vocab, guess):
                llm.n_tokens -= len(draft) - j  # the next pass overwrites the guesses' KV entries
                picked.append(chosen)
                break
            stats["accepted"] += 1
            if (done := take(guess)) is not None:
                return done
            logits = rows[j + 1]
    return llm.detokenize(out).decode("utf-8", errors="ignore")
