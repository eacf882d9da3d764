"""EXTRACT's seq2seq model at run time: a CTranslate2 int8 BART (see
``models.extractor_format`` for the pointer format). No torch at run time."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from models import extractor_format as fmt

log = logging.getLogger(__name__)


class CT2Extractor:
    """``extract([(text, key), ...])`` -> the value of each key in its text ("" if absent)."""

    def __init__(self, model_dir: Path, tokenizer_path: Path, *, threads: int = 2, batch_size: int = 64):
        import ctranslate2

        self._translator = ctranslate2.Translator(str(model_dir), device="cpu", inter_threads=1,
                                                  intra_threads=threads)
        self._tokenizer = fmt.load_tokenizer(tokenizer_path)
        self._batch_size = batch_size
        self.path = Path(model_dir)

    def extract(self, items: Sequence[tuple[str, str]]) -> list[str]:
        return [answer for answer, _ in self.extract_scored(items)]

    def extract_scored(self, items: Sequence[tuple[str, str]]) -> list[tuple[str, float]]:
        """Each answer with its log probability under the model (greedy decoding's
        summed token log probabilities; 0 is certain)."""
        if self._translator is None:
            raise RuntimeError(f"extractor {self.path} is closed")
        items = list(items)
        if not items:
            return []
        sources = fmt.encode_sources(self._tokenizer, items)
        # similar lengths share a batch: the encoder pays for the longest one's padding
        order = sorted(range(len(items)), key=lambda i: len(sources[i].tokens))
        results = self._translator.translate_batch(
            [sources[i].tokens for i in order], max_batch_size=self._batch_size, beam_size=1,
            max_decoding_length=32, return_scores=True)
        out: list[tuple[str, float]] = [("", 0.0)] * len(items)
        for i, r in zip(order, results):
            out[i] = (fmt.decode(items[i][0], sources[i].words, r.hypotheses[0]), float(r.scores[0]))
        return out

    def close(self) -> None:
        self._translator = None
