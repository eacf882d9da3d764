"""The planner LLM at run time: llama-cpp-python over a GGUF file.

llama-cpp-python reuses the KV cache for the longest token prefix a prompt shares
with the previous call; ``preload(prefix)`` additionally saves the state after a
stable instruction prefix so it can be restored after an unrelated prompt (a
sub-task) has overwritten the cache. llama.cpp's own log goes into ``logging``.
"""
from __future__ import annotations

import ctypes
import logging
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger(__name__)
native_log = logging.getLogger("models.llama_cpp")

# ggml's enum ggml_log_level in the llama.cpp this wheel builds (NONE, DEBUG, INFO,
# WARN, ERROR, CONT); llama_cpp/_logger.py still documents an older order.
_LEVELS = {0: logging.INFO, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}
_CONT = 5
_log_callback = None  # the ctypes callback must outlive every call from C


def route_llama_log() -> None:
    """Send llama.cpp's log lines to the ``models.llama_cpp`` logger (once)."""
    global _log_callback
    if _log_callback is not None:
        return
    import llama_cpp

    last = [logging.DEBUG]

    @llama_cpp.llama_log_callback
    def _forward(level: int, text: bytes, _user: ctypes.c_void_p) -> None:
        lvl = _LEVELS.get(level, logging.DEBUG) if level != _CONT else last[0]
        last[0] = lvl
        message = text.decode("utf-8", "replace").rstrip()
        if message and native_log.isEnabledFor(lvl):
            native_log.log(lvl, "%s", message)

    _log_callback = _forward
    llama_cpp.llama_log_set(_forward, ctypes.c_void_p(0))


class PlannerClosed(RuntimeError):
    pass


class LlamaPlanner:
    """``engine.protocols.Planner`` over a GGUF model."""

    def __init__(self, model_path: Path, *, n_ctx: int = 4096, n_batch: int = 256, threads: int = 2,
                 max_saved_prefixes: int = 2):
        route_llama_log()
        import llama_cpp

        self.path = Path(model_path)
        # use_mmap=False: llama.cpp repacks Q4_K weights for AVX2 into its own buffers,
        # so with mmap both the touched file pages and the repacked copy stay resident
        # (measured 1.9 GB vs 1.3 GB RSS for the 1.5B planner).
        self._llm = llama_cpp.Llama(model_path=str(self.path), n_ctx=n_ctx, n_batch=n_batch, n_threads=threads,
                                    n_threads_batch=threads, seed=0, use_mmap=False, verbose=False)
        route_llama_log()  # Llama(verbose=False) may install its own callback
        self._grammars: dict[str, object] = {}
        self._saved: OrderedDict[str, tuple[list[int], object]] = OrderedDict()
        self._max_saved = max_saved_prefixes

    def _require(self):
        if self._llm is None:
            raise PlannerClosed(f"planner {self.path} is closed")
        return self._llm

    def _grammar(self, text: str):
        import llama_cpp

        if text not in self._grammars:
            self._grammars[text] = llama_cpp.LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def preload(self, prefix: str) -> None:
        """Evaluate ``prefix`` now and keep its KV state for prompts that start with it."""
        llm = self._require()
        tokens = llm.tokenize(prefix.encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(tokens)
        self._saved[prefix] = (tokens, llm.save_state())
        self._saved.move_to_end(prefix)
        while len(self._saved) > self._max_saved:
            self._saved.popitem(last=False)

    def _restore_for(self, prompt: str) -> None:
        llm = self._llm
        for prefix, (tokens, state) in reversed(self._saved.items()):
            if prompt.startswith(prefix):
                current = list(llm.input_ids[:llm.n_tokens])
                if current[:len(tokens)] != tokens:
                    llm.load_state(state)
                return

    def complete(self, prompt: str, *, grammar: str | None = None, max_tokens: int = 256,
                 stop: Sequence[str] = (), temperature: float = 0.0) -> str:
        llm = self._require()
        self._restore_for(prompt)
        out = llm.create_completion(
            prompt, max_tokens=max_tokens, temperature=temperature, stop=list(stop) or None,
            grammar=self._grammar(grammar) if grammar else None, seed=0)
        return out["choices"][0]["text"]

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None
            self._saved.clear()
