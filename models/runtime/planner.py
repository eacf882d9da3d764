"""The planner LLM at run time: llama-cpp-python over a GGUF file.

llama-cpp-python reuses the KV cache for the longest token prefix a prompt shares
with the previous call; ``preload(prefix)`` additionally saves the state after a
stable instruction prefix so it can be restored after an unrelated prompt (a
sub-task) has overwritten the cache. llama.cpp's own log goes into ``logging``.
"""
from __future__ import annotations

import ctypes
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from models.runtime.greedy import DRAFT_AGREEMENT, DRAFT_AMX, DRAFT_TOKENS, GrammarGate, greedy_complete
from models.runtime.llama_threads import ThreadPacer

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


def _without_scores(state):
    """``state`` with one row of zero logits instead of llama-cpp-python's copy of its
    whole logits buffer (n_batch x n_vocab floats: 155 MB for Qwen2.5 at n_batch 256).
    Nothing here reads those logits: sampling reads the context's own, which the
    next evaluation refreshes (``load_state`` marks the state as needing one), and
    ``load_state`` broadcasts the row into its buffer."""
    import numpy as np
    from llama_cpp.llama import LlamaState

    if state.scores.shape[0] <= 1:
        return state
    return LlamaState(state.input_ids, np.zeros((1, state.scores.shape[1]), dtype=state.scores.dtype),
                      state.n_tokens, state.llama_state, state.llama_state_size, state.seed)


def _set_state(llm, state) -> None:
    """``Llama.load_state`` without its two copies: of the logits (which the planner
    never reads; see ``LlamaPlanner.__init__``) and of the KV blob, which llama.cpp
    reads from ``state.llama_state`` directly when it is a ctypes array already."""
    import llama_cpp

    blob = state.llama_state
    if not isinstance(blob, ctypes.Array):
        blob = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(blob)
    llm.input_ids = state.input_ids.copy()
    llm.n_tokens = state.n_tokens
    llm._requires_eval = True
    llm._seed = state.seed
    if llama_cpp.llama_state_set_data(llm._ctx.ctx, blob, state.llama_state_size) != state.llama_state_size:
        raise RuntimeError("llama.cpp refused the saved planner state")


def instruction_sets() -> set[str]:
    """The CPU instruction sets the installed llama.cpp build uses ("AVX2", "AVX512",
    "AVX512_VNNI", ...), as its system info lists them."""
    import re

    import llama_cpp

    from models.runtime.llama_backends import load_cpu_backend

    route_llama_log()  # ggml says which variant it loaded: into logging, not onto the doctor's output
    load_cpu_backend()  # a build with CPU variants lists none before one is loaded
    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    return set(re.findall(r"([A-Z][A-Z0-9_]*) = 1\b", info))


def draft_setting(sets: set[str]) -> tuple[int, float]:
    """(guessed tokens per pass, agreement) for a llama.cpp build using ``sets``."""
    return DRAFT_AMX if "AMX_INT8" in sets else (DRAFT_TOKENS, DRAFT_AGREEMENT)


# The planner's cache of attention keys, per token of the 5.8k-token prompt. Attention over
# it is a large part of each pass (at 5.8k tokens a pass over 4 tokens took 171 ms, at
# 1k 116 ms). Keys in q8_0 instead of f16 made passes over 1, 4 and 6 tokens 5%, 12% and
# 8% faster (2-core Xeon, AVX-512 build), but changed 12 of 55 greedy plans, several for
# the worse ("How many times did I go running in 2023?" summed distances): f16 stays.
# Flash attention, which would quantise values too, was slower here (113 / 259 ms
# against 87 / 163 for passes over 1 / 4 tokens).
KEY_CACHE = "f16"  # or "q8_0": a GGML_TYPE_* of llama_cpp


# Prefix states kept on disk (~160 MB each for the 5.8k-token prompt). Each change to the
# examples, the model or the llama.cpp build makes a new one; the least recently used
# beyond these are deleted.
KEPT_STATES = 3


def prune_states(used: Path, keep: int = KEPT_STATES) -> list[Path]:
    """Mark the state folder ``used`` as just used and delete its siblings beyond the
    ``keep`` most recently used (half-written ``.tmp`` folders of other processes are
    left alone); returns the deleted folders."""
    import os
    import shutil

    try:
        os.utime(used)
        folders = [f for f in used.parent.iterdir() if f.is_dir() and not f.name.endswith(".tmp")]
        folders.sort(key=lambda f: (f != used, -f.stat().st_mtime))
    except OSError as exc:
        log.warning("cannot list the planner's saved states in %s: %s", used.parent, exc)
        return []
    removed = []
    for old in folders[keep:]:
        shutil.rmtree(old, ignore_errors=True)
        removed.append(old)
        log.info("deleted the planner state %s (used least recently)", old)
    return removed


def _content_hash(path: Path) -> str:
    """The first 16 hex digits of the file's sha256, computed once per file, size and
    modification time (an adapter is ~12 MB: ~30 ms)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        _HASHES[key] = h.hexdigest()[:16]
    return _HASHES[key]


_HASHES: dict[tuple[str, int, int], str] = {}


class PlannerClosed(RuntimeError):
    pass


class LlamaPlanner:
    """``engine.protocols.Planner`` over a GGUF model."""

    def __init__(self, model_path: Path, *, n_ctx: int = 8192, n_batch: int = 256, threads: int = 2,
                 max_saved_prefixes: int = 2, key_cache: str = KEY_CACHE, lora_path: Path | None = None):
        route_llama_log()
        import llama_cpp

        from models.runtime.llama_backends import load_cpu_backend

        load_cpu_backend()  # the desktop bundle's llama.cpp: the CPU variant that suits this CPU
        self.path = Path(model_path)
        self.lora_path = Path(lora_path) if lora_path else None
        # use_mmap=False: llama.cpp repacks Q4_K weights for AVX2 into its own buffers,
        # so with mmap both the touched file pages and the repacked copy stay resident
        # (measured 1.9 GB vs 1.3 GB RSS for the 1.5B planner).
        self.key_cache = key_cache
        self._llm = llama_cpp.Llama(model_path=str(self.path), n_ctx=n_ctx, n_batch=n_batch, n_threads=threads,
                                    n_threads_batch=threads, seed=0, use_mmap=False, verbose=False,
                                    type_k=getattr(llama_cpp, f"GGML_TYPE_{key_cache.upper()}"),
                                    lora_path=str(self.lora_path) if self.lora_path else None)
        route_llama_log()  # Llama(verbose=False) may install its own callback
        # llama-cpp-python allocates n_batch x n_vocab floats of logits (155 MB for
        # Qwen2.5 at n_batch 256) for logprobs and stopping criteria, which the planner
        # never asks for: without logits_all no evaluation writes them, and only
        # load_state touched every page (broadcasting a saved row). One row is all it reads.
        if not self._llm._logits_all:
            import numpy as np

            self._llm.scores = np.zeros((1, self._llm.n_vocab()), dtype=np.single)
        self._grammars: dict[str, object] = {}
        self._gates: dict[str, GrammarGate] = {}
        # one llama.cpp context: the Ask pane's engine and the Insights tab share this
        # planner (one 2 GB model, not two), each call runs alone
        self._busy = threading.RLock()
        # per preloaded prefix: its tokens and its state, in memory, or the folder it
        # is saved in (read again when needed: 165 MB for the planner's instructions)
        self._saved: OrderedDict[str, tuple[list[int], object]] = OrderedDict()
        self._max_saved = max_saved_prefixes
        # guessed tokens checked per forward pass (0: none), while this share of the
        # tail's earlier occurrences agree; more where AMX makes a longer pass cheap
        self.draft_tokens, self.draft_agreement = draft_setting(instruction_sets())
        self.decode_stats: dict[str, int] = {}  # forward passes, guessed and accepted tokens, summed
        # fewer threads while another program holds a core (see llama_threads)
        self.pacer = ThreadPacer(threads)

    @property
    def identity(self) -> str:
        """Which model writes the plans: the GGUF's name and size, and the adapter's name
        and content hash (the plan cache keeps plans per model). Every adapter a run of
        ``planner_lora`` makes has the same name and size (11,746,784 bytes at rank 16):
        by size alone, a new adapter would be served the old one's cached plans."""
        adapter = ""
        if self.lora_path is not None:
            try:
                adapter = f"+{self.lora_path.name}:{_content_hash(self.lora_path)}"
            except OSError:
                adapter = f"+{self.lora_path.name}"
        try:
            return f"{self.path.name}:{self.path.stat().st_size}{adapter}"
        except OSError:
            return self.path.name + adapter

    def _require(self):
        if self._llm is None:
            raise PlannerClosed(f"planner {self.path} is closed")
        return self._llm

    def _grammar(self, text: str):
        import llama_cpp

        if text not in self._grammars:
            self._grammars[text] = llama_cpp.LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def preload(self, prefix: str, state_dir: Path | None = None) -> None:
        with self._busy:
            self._preload(prefix, state_dir)

    def _preload(self, prefix: str, state_dir: Path | None = None) -> None:
        """Evaluate ``prefix`` now and keep its KV state for prompts that start with it.
        With ``state_dir`` the state is also kept on disk, keyed by model, prefix and
        context size, so the next process loads it in a second instead of evaluating
        thousands of tokens again."""
        llm = self._require()
        if prefix in self._saved:  # evaluated (or loaded) by this process already: complete() restores it
            self._saved.move_to_end(prefix)
            return
        tokens = llm.tokenize(prefix.encode("utf-8"), add_bos=True, special=True)
        folder = self._state_folder(prefix, state_dir) if state_dir is not None else None
        state = self._load_state_files(folder) if folder is not None else None
        if state is not None and list(state.input_ids[:state.n_tokens]) == list(tokens):
            _set_state(llm, state)
            log.info("planner prefix state loaded from %s", folder)
        else:
            llm.reset()
            llm.eval(tokens)
            state = _without_scores(llm.save_state())
            if folder is not None:
                self._save_state_files(folder, state)
        if folder is not None:
            prune_states(folder)
        # kept on disk where it was saved there: held in memory it was 165 MB more resident
        self._saved[prefix] = (tokens, folder if folder is not None else state)  # (without its logits, above)
        del state
        self._saved.move_to_end(prefix)
        while len(self._saved) > self._max_saved:
            self._saved.popitem(last=False)

    def _state_folder(self, prefix: str, state_dir: Path) -> Path:
        import hashlib

        import llama_cpp

        st = self.path.stat()
        key = hashlib.sha256("\x1f".join([str(self.path.resolve()), str(st.st_size), str(int(st.st_mtime)),
                                          self.identity,
                                          str(self._llm.n_ctx()), llama_cpp.__version__, self.key_cache,
                                          *sorted(instruction_sets()), prefix])
                             .encode("utf-8")).hexdigest()[:20]
        return Path(state_dir) / key

    @staticmethod
    def _save_state_files(folder: Path, state) -> None:
        """Plain arrays and bytes (no pickle): input ids, scores, the KV blob, metadata."""
        import json
        import os

        import numpy as np

        tmp = folder.with_name(folder.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        np.save(tmp / "input_ids.npy", state.input_ids, allow_pickle=False)
        np.save(tmp / "scores.npy", state.scores, allow_pickle=False)
        (tmp / "kv.bin").write_bytes(bytes(state.llama_state))
        (tmp / "meta.json").write_text(json.dumps({"n_tokens": state.n_tokens, "size": state.llama_state_size,
                                                   "seed": state.seed}))
        if folder.exists():
            import shutil

            shutil.rmtree(folder)
        os.replace(tmp, folder)

    @staticmethod
    def _load_state_files(folder: Path):
        import json

        import numpy as np
        from llama_cpp.llama import LlamaState

        try:
            meta = json.loads((folder / "meta.json").read_text())
            size = int(meta["size"])
            kv = (ctypes.c_uint8 * size)()  # read straight into what llama.cpp takes: no second copy
            with open(folder / "kv.bin", "rb") as f:
                if f.readinto(kv) != size or f.read(1):
                    return None
            return LlamaState(np.load(folder / "input_ids.npy", allow_pickle=False),
                              np.load(folder / "scores.npy", allow_pickle=False),
                              int(meta["n_tokens"]), kv, int(meta["size"]), int(meta["seed"]))
        except (OSError, ValueError, KeyError):
            return None

    def _restore_for(self, prompt: str) -> None:
        llm = self._llm
        for prefix, (tokens, state) in reversed(self._saved.items()):
            if prompt.startswith(prefix):
                current = list(llm.input_ids[:llm.n_tokens])
                if current[:len(tokens)] != tokens:
                    if isinstance(state, Path):
                        state = self._load_state_files(state)
                        if state is None:  # the saved files went: the prompt is evaluated whole
                            del self._saved[prefix]
                            return
                    _set_state(llm, state)
                return

    def complete(self, prompt: str, *, grammar: str | None = None, max_tokens: int = 256,
                 stop: Sequence[str] = (), temperature: float = 0.0) -> str:
        with self._busy:
            return self._complete(prompt, grammar=grammar, max_tokens=max_tokens, stop=stop,
                                  temperature=temperature)

    def _complete(self, prompt: str, *, grammar: str | None = None, max_tokens: int = 256,
                  stop: Sequence[str] = (), temperature: float = 0.0) -> str:
        llm = self._require()
        self._restore_for(prompt)
        if grammar:
            # under the grammar, asking it about the chosen token only (create_completion
            # masks the whole vocabulary before every token), greedy or at a temperature
            gate = self._gates.get(grammar)
            if gate is None:
                gate = self._gates[grammar] = GrammarGate(llm._model.vocab, llm.n_vocab(), grammar)
            return greedy_complete(llm, prompt, gate, max_tokens=max_tokens, stop=stop,
                                   draft_tokens=self.draft_tokens, draft_agreement=self.draft_agreement,
                                   stats=self.decode_stats, temperature=temperature, seed=0, pacer=self.pacer)
        out = llm.create_completion(
            prompt, max_tokens=max_tokens, temperature=temperature, stop=list(stop) or None,
            grammar=self._grammar(grammar) if grammar else None, seed=0)
        return out["choices"][0]["text"]

    def close(self) -> None:
        with self._busy:
            self._close()

    def _close(self) -> None:
        if self._llm is not None:
            for gate in self._gates.values():
                gate.close()
            self._gates.clear()
            self._llm.close()
            self._llm = None
            self._saved.clear()
