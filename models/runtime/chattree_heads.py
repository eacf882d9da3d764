"""The chat-tree heads (``engine.protocols.ChatTurnHeads``) at run time: three small
MLPs over MiniLM sentence vectors and the parent chooser over the judge's scores
(``chattree_choice``), trained by ``models/training/chattree.py`` and committed beside
this module (``chattree_heads.npz`` with ``chattree_heads.json``, its manifest). They
run on numpy: no torch, no onnxruntime session for a few matrix products.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).parent
WEIGHTS = HERE / "chattree_heads.npz"
MANIFEST = HERE / "chattree_heads.json"
LABELS = ("polite", "information", "instruction")


class HeadsMismatch(RuntimeError):
    """The committed heads are not the ones their manifest names."""


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _mlp(x, w):
    import numpy as np

    h = np.maximum(x @ w[0] + w[1], 0.0)
    return h @ w[2] + w[3]


def _sigmoid(z):
    import numpy as np

    return 1.0 / (1.0 + np.exp(-z))


class NumpyChatTurnHeads:
    """``ChatTurnHeads`` from arrays: ``{label,ifqc,judge}.{w1,b1,w2,b2}`` (one hidden
    ReLU layer each) and the chooser's ``rank.{w1,b1,w2,b2,root}``. :meth:`load` reads
    the committed, verified pair of files. ``threshold`` is the least probability the
    chooser must give a turn for it to be the parent."""

    def __init__(self, arrays: dict, *, threshold: float, implicit_threshold: float, version: str):
        import numpy as np

        self._w = {name: [np.asarray(arrays[f"{name}.{k}"], dtype=np.float32) for k in ("w1", "b1", "w2", "b2")]
                   for name in ("label", "ifqc", "judge")}
        # the chooser is absent only while training builds the heads one by one
        self._rank = {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items() if k.startswith("rank.")} or None
        self.threshold = float(threshold)
        self.implicit_threshold = float(implicit_threshold)
        self.version = version
        self.manifest: dict = {}

    @classmethod
    def load(cls, weights: Path = WEIGHTS, manifest: Path = MANIFEST, *, verify: bool = True) -> "NumpyChatTurnHeads":
        import numpy as np

        if not weights.is_file() or not manifest.is_file():
            raise FileNotFoundError(f"the chat-tree heads are missing ({weights}, {manifest}); "
                                    "they ship with Hindsight: reinstall it, or train them with "
                                    "`python -m models.training.chattree`")
        info = json.loads(manifest.read_text(encoding="utf-8"))
        digest = sha256_of(weights)
        if verify and digest != info.get("sha256"):
            raise HeadsMismatch(f"{weights} has sha256 {digest[:12]}…, its manifest {manifest} names "
                                f"{str(info.get('sha256'))[:12]}…; retrain or restore the pair")
        with np.load(weights) as z:
            arrays = {k: z[k] for k in z.files}
        if "rank.root" not in arrays:
            raise HeadsMismatch(f"{weights} has no parent chooser (rank.*): heads from before #40's chooser; "
                                "retrain them with `python -m models.training.chattree`")
        heads = cls(arrays, threshold=info["threshold"], implicit_threshold=info["implicit_threshold"],
                    version=digest[:16])
        heads.manifest = info
        return heads

    def sentence_labels(self, vectors: Sequence[Sequence[float]]) -> list[str]:
        import numpy as np

        if not len(vectors):
            return []
        logits = _mlp(np.asarray(vectors, dtype=np.float32), self._w["label"])
        return [LABELS[i] for i in logits.argmax(1)]

    def implicit_follow_up(self, vectors: Sequence[Sequence[float]], word_counts: Sequence[int]) -> list[float]:
        import numpy as np

        if not len(vectors):
            return []
        x = np.concatenate([np.asarray(vectors, dtype=np.float32), length_feature(word_counts)], axis=1)
        return _sigmoid(_mlp(x, self._w["ifqc"])[:, 0]).tolist()

    def follow_up_scores(self, prompt: Sequence[float], turns: Sequence[Sequence[float]]) -> list[float]:
        if not len(turns):
            return []
        return _sigmoid(self.judge_logits(prompt, turns)).tolist()

    def judge_logits(self, prompt: Sequence[float], turns: Sequence[Sequence[float]]):
        import numpy as np

        h = np.asarray(turns, dtype=np.float32)
        p = np.broadcast_to(np.asarray(prompt, dtype=np.float32), h.shape)
        return _mlp(judge_features(h, p), self._w["judge"])[:, 0]

    def follow_up_choice(self, prompt: Sequence[float], turns: Sequence[Sequence[float]],
                         parents: Sequence[int | None]) -> list[float]:
        import numpy as np

        from models.runtime.chattree_choice import choice_features, choice_logits, softmax

        if self._rank is None:
            raise HeadsMismatch("these chat-tree heads have no parent chooser (rank.*); retrain them")
        if not len(turns):
            return [1.0]
        # the stored turn vectors are tuples: made into one array once, for the judge and the chooser
        h, p = np.asarray(turns, dtype=np.float32), np.asarray(prompt, dtype=np.float32)
        candidates, root = choice_features(self.judge_logits(p, h), p, h, parents)
        return softmax(choice_logits(candidates, root, self._rank)).tolist()

    def close(self) -> None:
        self._w, self._rank = {}, None


def length_feature(word_counts: Sequence[int]):
    """The IFQC's second input: how long the prompt is (log words, scaled to ~1)."""
    import numpy as np

    return (np.log1p(np.asarray(word_counts, dtype=np.float32)) / 4.0)[:, None]


def judge_features(h, p):
    """The judge's input, as in the paper: [h, p, h - p, h * p]."""
    import numpy as np

    return np.concatenate([h, p, h - p, h * p], axis=1)
