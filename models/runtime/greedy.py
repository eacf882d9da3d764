"""Greedy decoding under a GBNF grammar that consults the grammar only when it must.

llama-cpp-python's sampler chain runs the grammar over the whole vocabulary (151,936
tokens for Qwen2.5) before every token; on 2 cores that took about as long as the
forward pass itself (~50 of ~120 ms per planner token). The model nearly always
wants a token the grammar allows, so :func:`greedy_complete` asks the grammar about
the arg-max token alone and masks the whole vocabulary only when that one is
refused. The result is the token greedy sampling under the grammar picks: the
unconstrained arg-max, when allowed, is also the arg-max of the allowed tokens.
"""
from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence

import numpy as np

_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


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

    def allows(self, token: int) -> bool:
        self._one[0].id = token
        self._one[0].logit = 0.0
        self._one_view.size, self._one_view.selected, self._one_view.sorted = 1, -1, False
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(self._one_view))
        return not math.isinf(self._one[0].logit)

    def best(self, logits: np.ndarray) -> int | None:
        """The highest-scoring token the grammar allows now; None when it allows none."""
        self._all["logit"] = logits
        self._all_view.size, self._all_view.selected, self._all_view.sorted = len(self._all), -1, False
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(self._all_view))
        masked = self._all["logit"]
        token = int(np.argmax(masked))
        return None if math.isinf(masked[token]) and masked[token] < 0 else token

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None

    def __del__(self):
        self.close()


def greedy_complete(llm, prompt: str, gate: GrammarGate, *, max_tokens: int, stop: Sequence[str] = ()) -> str:
    """Continue ``prompt`` greedily under ``gate``'s grammar on a ``llama_cpp.Llama``,
    reusing the KV cache for the token prefix it already holds (as ``create_completion`` does)."""
    import llama_cpp

    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    held = llm.input_ids[:llm.n_tokens]
    n = min(len(held), len(tokens) - 1)  # the last prompt token is evaluated anyway, for its logits
    same = held[:n] == np.asarray(tokens[:n], dtype=held.dtype)
    common = n if same.all() else int(np.argmin(same))
    llm.n_tokens = common  # llm.eval() then drops the KV entries from here on
    llm.eval(tokens[common:])

    gate.reset()
    vocab = llm._model.vocab
    n_vocab = llm.n_vocab()
    out: list[int] = []
    text = ""
    while len(out) < max_tokens:
        logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(n_vocab,))
        token = int(np.argmax(logits))
        if not gate.allows(token):
            best = gate.best(logits)
            if best is None:
                break
            token = best
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            break
        gate.accept(token)
        out.append(token)
        text = llm.detokenize(out).decode("utf-8", errors="ignore")
        cut = min((text.find(s) for s in stop if s in text), default=-1)
        if cut >= 0:
            return text[:cut]
        llm.eval([token])
    return text
