"""The parent chooser of the chat trees (#40): which of the recent turns a prompt
follows up, or none, as one choice among them all instead of a yes/no per turn.

The follow-up judge scores each turn alone and cannot tell the latest turn of a
topic from the older turns of the same topic, nor from the latest turn of another
topic that scores a little above its threshold. The chooser sees every candidate
beside the others: its judge score, how far back it is, whether a later turn scores
higher, whether a later turn already follows it up in the tree built so far, and how
its own parent scores. One small MLP scores each candidate, a linear layer scores
"a new root", and a softmax over them all gives each option's probability.

numpy only; trained by ``models/training/chattree_choice.py``, the features shared
with it from here so that training and run time cannot drift apart.
"""
from __future__ import annotations

from collections.abc import Sequence

#: A judge logit is clipped to this (a probability of 1e-5 or 1 - 1e-5).
LOGIT_CLIP = 12.0
CANDIDATE_FEATURES = 14
ROOT_FEATURES = 6


def choice_features(logits, prompt, turns, parents: Sequence[int | None]):
    """``(candidates, root)``: one row of features per turn (``turns`` oldest first,
    each a stored turn vector; ``logits`` the judge's for the prompt against each),
    and the "new root" option's features. ``parents[i]`` is the window position of
    turn i's parent, ``None`` for a root, -1 for a parent older than the window."""
    import numpy as np

    z = np.clip(np.asarray(logits, dtype=np.float32), -LOGIT_CLIP, LOGIT_CLIP)
    h = np.asarray(turns, dtype=np.float32)
    p = np.asarray(prompt, dtype=np.float32)
    n = len(z)
    pos = np.arange(n)
    distance = (n - pos).astype(np.float32)
    norms = np.linalg.norm(h, axis=1)
    cos_prompt = h @ p / np.maximum(norms * np.linalg.norm(p), 1e-6)
    hn = h / np.maximum(norms[:, None], 1e-6)
    later = np.triu(np.ones((n, n), dtype=bool), 1)  # later[j, k]: turn k comes after turn j
    sim = np.where(later, hn @ hn.T, -1.0)
    later_sim = np.maximum(sim.max(1), 0.0)
    later_z = np.where(later, z[None, :], -LOGIT_CLIP).max(1)
    later_higher = np.where(later, z[None, :] > z[:, None], False).sum(1)
    children = np.zeros(n, dtype=np.float32)
    parent_z = z.copy()
    is_root = np.zeros(n, dtype=np.float32)
    for i, parent in enumerate(parents):
        if parent is None:
            is_root[i] = 1.0
        elif parent >= 0:
            children[parent] += 1.0
            parent_z[i] = z[parent]
    top = z.max()
    candidates = np.stack([
        z / 4, (z - top) / 4, np.maximum(later_z - z, 0.0) / 4, later_higher / 4.0,
        np.log(distance) / 3, (distance == 1).astype(np.float32), (distance == 2).astype(np.float32),
        cos_prompt, later_sim, (children == 0).astype(np.float32), np.minimum(children, 3.0) / 3,
        is_root, (parent_z - z) / 4, np.asarray([p_ is not None and p_ >= 0 for p_ in parents], dtype=np.float32),
    ], axis=1).astype(np.float32)
    second = np.sort(z)[-2] if n > 1 else -LOGIT_CLIP
    root = np.array([1.0, top / 4, second / 4, np.log(n) / 3, cos_prompt.max(),
                     float((children == 0).sum()) / n], dtype=np.float32)
    return candidates, root


def choice_logits(candidates, root, w: dict):
    """Each candidate's logit (the MLP ``rank.w1 .. rank.b2``), then the root's
    (``rank.root``, linear)."""
    import numpy as np

    hidden = np.maximum(candidates @ w["rank.w1"] + w["rank.b1"], 0.0)
    scores = (hidden @ w["rank.w2"] + w["rank.b2"])[:, 0]
    return np.concatenate([scores, [float(root @ w["rank.root"])]])


def softmax(x):
    import numpy as np

    e = np.exp(x - np.max(x))
    return e / e.sum()
