"""RETRIEVE's cross-encoders at run time: int8 ONNX models run with onnxruntime and
the MiniLM tokenizer from ``tokenizers``. No torch at run time."""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

PATTERN_LABELS = ("relevant", "irrelevant", "partial")
MAX_TOKENS = 64


class _OnnxPairModel:
    def __init__(self, model_path: Path, tokenizer_path: Path, *, threads: int = 2, batch_size: int = 64):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.enable_cpu_mem_arena = False  # small models: the arena's slack costs more RSS than it saves time
        self._session = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
        tok = Tokenizer.from_file(str(tokenizer_path))
        tok.enable_truncation(MAX_TOKENS)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tok = tok
        self._batch = batch_size
        self.path = Path(model_path)

    def _logits(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        import numpy as np

        if self._session is None:
            raise RuntimeError(f"cross-encoder {self.path} is closed")
        out: list[list[float]] = []
        for i in range(0, len(pairs), self._batch):
            chunk = list(pairs[i:i + self._batch])
            enc = self._tok.encode_batch(chunk)
            feed = {
                "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
            }
            out += self._session.run(["logits"], feed)[0].tolist()
        return out

    def close(self) -> None:
        self._session = None


class OnnxEventClassifier(_OnnxPairModel):
    """``engine.protocols.Reranker``: probability that each event text answers the query."""

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [1.0 / (1.0 + math.exp(-row[0])) for row in self._logits(pairs)]


# "irrelevant" drops a whole kind of event unseen, so it must be sure: below this
# probability the pattern is "partial" and its events go to the reranker. Chosen on
# the dev persona: at 0.8, 17 of 480 relevant-or-partial patterns are still dropped
# (38% of argmax, 114), while 245 of 420 irrelevant ones are (of 344).
IRRELEVANT_MIN = 0.8


class OnnxPatternClassifier(_OnnxPairModel):
    """``engine.protocols.PatternClassifier``: relevant / irrelevant / partial, with
    "irrelevant" only when its probability reaches ``irrelevant_min`` (recall first)."""

    def __init__(self, model_path: Path, tokenizer_path: Path, *, irrelevant_min: float = IRRELEVANT_MIN, **kw):
        super().__init__(model_path, tokenizer_path, **kw)
        self.irrelevant_min = irrelevant_min

    def classify(self, query: str, patterns: Sequence[str]) -> list[str]:
        return self.classify_pairs([(query, p) for p in patterns])

    def classify_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[str]:
        return [self._decide(row) for row in self._logits(pairs)]

    def _decide(self, logits: list[float]) -> str:
        top = max(logits)
        exp = [math.exp(x - top) for x in logits]
        probs = [e / sum(exp) for e in exp]
        label = PATTERN_LABELS[max(range(3), key=probs.__getitem__)]
        if label == "irrelevant" and probs[PATTERN_LABELS.index("irrelevant")] < self.irrelevant_min:
            return "partial"
        return label
