"""RETRIEVE's cross-encoders at run time: int8 ONNX models run with onnxruntime and
the MiniLM tokenizer from ``tokenizers``. No torch at run time."""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from models.runtime.memo import recalled
from models.runtime.onnx_graph import session

PATTERN_LABELS = ("relevant", "irrelevant", "partial")
MAX_TOKENS = 64


# Scores kept per distinct input (query and passage as the model reads them), most
# recent first. Over 39 questions on the full-size persona, 27% of the event classifier's
# pairs were read by it before in the same call: a song played many times, a passage
# that differs from another only after the 64 tokens the model reads.
MEMO_ENTRIES = 20_000


class _OnnxPairModel:
    def __init__(self, model_path: Path, tokenizer_path: Path, *, threads: int = 2, batch_size: int = 64,
                 memo_entries: int = MEMO_ENTRIES):
        from tokenizers import Tokenizer

        self._session = session(model_path, threads)
        tok = Tokenizer.from_file(str(tokenizer_path))
        tok.enable_truncation(MAX_TOKENS)
        tok.no_padding()  # each batch is padded to its own longest input (_run)
        self._tok = tok
        self._batch = batch_size
        self._memo: OrderedDict[bytes, list[float]] = OrderedDict()
        self._memo_entries = memo_entries
        self.path = Path(model_path)
        self.pairs_read = 0  # pairs asked for, and of them those the model ran on
        self.pairs_run = 0

    def _logits(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        """The model's logits for each pair. A pair whose tokens the model has read
        before (in this call or an earlier one) is not run again; the rest run in
        batches of similar length, so little of a batch is padding."""
        import numpy as np

        if self._session is None:
            raise RuntimeError(f"cross-encoder {self.path} is closed")
        enc = self._tok.encode_batch(list(pairs))
        keys = [np.asarray(e.ids, dtype=np.int32).tobytes() + b"|" + np.asarray(e.type_ids, dtype=np.int8).tobytes()
                for e in enc]
        encoded = dict(zip(keys, enc))

        def run(todo: list[bytes]) -> list[list[float]]:
            order = sorted(todo, key=lambda k: len(encoded[k].ids))
            rows: dict[bytes, list[float]] = {}
            for i in range(0, len(order), self._batch):
                chunk = order[i:i + self._batch]
                rows.update(zip(chunk, self._run([encoded[k] for k in chunk])))
            self.pairs_run += len(todo)
            return [rows[k] for k in todo]

        self.pairs_read += len(pairs)
        return recalled(self._memo, self._memo_entries, keys, run)

    def _run(self, enc: list) -> list[list[float]]:
        import numpy as np

        width = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), width), dtype=np.int64)  # [PAD] is 0
        mask = np.zeros((len(enc), width), dtype=np.int64)
        types = np.zeros((len(enc), width), dtype=np.int64)
        for n, e in enumerate(enc):
            ids[n, :len(e.ids)] = e.ids
            mask[n, :len(e.ids)] = 1
            types[n, :len(e.ids)] = e.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return self._session.run(["logits"], feed)[0].tolist()

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
