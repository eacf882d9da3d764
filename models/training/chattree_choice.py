"""Train the parent chooser (``models/runtime/chattree_choice.py``) on MixMC chats made
from MultiChallenge TRAIN conversations only.

The chooser reads the follow-up judge's scores, and the judge has seen every train
conversation: its scores there are surer than on chats it never saw. So the train
conversations are cut into ``FOLDS`` folds, a judge is trained on the other folds
for each, and the chooser learns from chats of each fold scored by the judge that
left that fold out (stacking). The app's judge is the one trained on them all.

The chats: each fold's conversations interleaved in pairs under many seeds (MixMC's
own shape), and also in threes, one after another in pairs (a topic finished, then
another: real chats change topic more often than they interleave), and each
conversation alone. Placement runs the app's own :func:`engine.chattree.insert.place`.
First the tree built so far is the true one (teacher forcing); then the chats are
placed again with the first chooser's own parents, so the second chooser also learns
from the trees it will meet at run time, mistakes included (DAgger).
"""
from __future__ import annotations

import logging
import random
from dataclasses import dataclass

from models.runtime.chattree_choice import CANDIDATE_FEATURES, ROOT_FEATURES, choice_features, choice_logits, softmax

log = logging.getLogger(__name__)

SEED = 40
FOLDS = 5
#: Interleavings of each fold's conversations in pairs (pairings and orders differ
#: per seed), then those in threes and pairs one after the other.
MIX_SEEDS = 24
THREE_SEEDS = 8
AFTER_SEEDS = 8
WINDOW = 20  # engine.chattree.insert.JUDGE_WINDOW (a test keeps them equal)
HIDDEN = 16
EPOCHS = 40


@dataclass(frozen=True, slots=True)
class _Turn:
    id: str
    parent: str | None
    key: tuple[str, int]


class _ChoosingHeads:
    """Heads for :func:`place` while training: the fold's judge, the chooser under
    training (or, with none yet, the truth), and a record of what the chooser saw."""

    def __init__(self, judge, rank: dict | None, *, threshold: float, implicit_threshold: float):
        self.judge, self.rank = judge, rank
        self.threshold, self.implicit_threshold = threshold, implicit_threshold
        self.seen = None

    def follow_up_choice(self, prompt, turns, parents):
        candidates, root = choice_features(self.judge.judge_logits(prompt, turns), prompt, turns, parents)
        self.seen = (candidates, root)
        if self.rank is None:
            return [0.0] * len(turns) + [1.0]  # the caller uses the true parent
        return softmax(choice_logits(candidates, root, self.rank)).tolist()


def _weave(group: list, rng: random.Random, *, interleave: bool) -> list[_Turn]:
    """Conversations' turns in one chat, each keeping its order: randomly merged, or
    one conversation after the other."""
    slots = [i for i, turns in enumerate(group) for _ in turns]
    if interleave:
        rng.shuffle(slots)
    nxt = [0] * len(group)
    out = []
    for i in slots:
        t = group[i][nxt[i]]
        nxt[i] += 1
        out.append(_Turn(f"{t.conversation}#{t.index}", f"{t.conversation}#{t.index - 1}" if t.index else None,
                         (t.conversation, t.index)))
    return out


def _chats(convs: dict, seed: int) -> list[list[_Turn]]:
    out = []
    for size, seeds, interleave in ((2, MIX_SEEDS, True), (3, THREE_SEEDS, True), (2, AFTER_SEEDS, False)):
        for s in range(seeds):
            rng = random.Random(seed * 1000 + size * 100 + s + (0 if interleave else 50))
            ids = sorted(convs)
            rng.shuffle(ids)
            out += [_weave([convs[c] for c in ids[i:i + size]], rng, interleave=interleave)
                    for i in range(0, len(ids) - size + 1, size)]
    out += [_weave([turns], random.Random(0), interleave=False) for turns in convs.values()]
    return out


def _examples(chats, analyses: dict, turn_vec: dict, heads: _ChoosingHeads, *, teacher: bool) -> list:
    """(candidates, root, target) at every chooser call of ``chats``; target is the true
    parent's position, or the number of candidates for a new root. A true parent older
    than the window is no one's to choose: those calls are left out."""
    from engine.chattree.analysis import ChatTreeModels
    from engine.chattree.insert import TreeTurn, place

    models = ChatTreeModels(None, None, heads)
    out = []
    for chat in chats:
        history: list[TreeTurn] = []
        for t in chat:
            heads.seen = None
            placed = place(analyses[t.key], history, models)
            if heads.seen is not None:
                ids = [h.id for h in history[-WINDOW:]]
                if t.parent is None or t.parent in ids:
                    target = len(ids) if t.parent is None else ids.index(t.parent)
                    out.append((*heads.seen, target))
            history.append(TreeTurn(t.id, turn_vec[t.key], t.parent if teacher else placed.parent))
    return out


def _fit(examples, *, seed: int = SEED) -> dict:
    """The chooser by softmax cross-entropy over each call's candidates and its root."""
    import numpy as np
    import torch

    torch.manual_seed(seed)
    n = len(examples)
    cand = np.zeros((n, WINDOW, CANDIDATE_FEATURES), np.float32)
    mask = np.zeros((n, WINDOW), bool)
    roots = np.zeros((n, ROOT_FEATURES), np.float32)
    target = np.zeros(n, np.int64)
    for i, (c, r, t) in enumerate(examples):
        cand[i, :len(c)], mask[i, :len(c)], roots[i] = c, True, r
        target[i] = WINDOW if t == len(c) else t
    cand_t, mask_t, roots_t, target_t = map(torch.tensor, (cand, mask, roots, target))
    mlp = torch.nn.Sequential(torch.nn.Linear(CANDIDATE_FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 1))
    root = torch.nn.Linear(ROOT_FEATURES, 1, bias=False)  # its first feature is 1: the bias
    opt = torch.optim.AdamW(list(mlp.parameters()) + list(root.parameters()), lr=3e-3, weight_decay=1e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(EPOCHS):
        for idx in torch.randperm(n, generator=gen).split(256):
            scores = mlp(cand_t[idx])[..., 0].masked_fill(~mask_t[idx], -1e9)
            logits = torch.cat([scores, root(roots_t[idx])], dim=1)
            loss = torch.nn.functional.cross_entropy(logits, target_t[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {"rank.w1": mlp[0].weight.detach().numpy().T.copy(), "rank.b1": mlp[0].bias.detach().numpy().copy(),
            "rank.w2": mlp[2].weight.detach().numpy().T.copy(), "rank.b2": mlp[2].bias.detach().numpy().copy(),
            "rank.root": root.weight.detach().numpy()[0].copy()}


def _chosen_right(examples, rank: dict) -> float:
    right = 0
    for c, r, t in examples:
        right += int(choice_logits(c, r, rank).argmax()) == t
    return right / max(1, len(examples))


def train_chooser(train_c: dict, analyses: dict, prompt_vec: dict, turn_vec: dict, generated, partial: dict,
                  *, seed: int = SEED) -> tuple[dict, dict]:
    """The chooser's arrays (``rank.*``) and what to log of its training. ``partial``:
    the label and IFQC heads' arrays (the analyses were made with them)."""
    from models.runtime.chattree_heads import NumpyChatTurnHeads
    from models.training.chattree import train_judge

    ids = sorted(train_c)
    random.Random(seed).shuffle(ids)
    folds = [ids[f::FOLDS] for f in range(FOLDS)]
    per_fold = []
    for f, fold in enumerate(folds):
        left_out = set(fold)
        rest = {cid: train_c[cid] for cid in ids if cid not in left_out}
        judge_w = train_judge(rest, prompt_vec, turn_vec, generated, seed=seed + f)
        judge = NumpyChatTurnHeads({**partial, **{f"judge.{k}": v for k, v in judge_w.items()}},
                                   threshold=0.5, implicit_threshold=0.5, version="fold")
        per_fold.append((judge, _chats({cid: train_c[cid] for cid in fold}, seed + f)))
    first = []
    for judge, chats in per_fold:
        first += _examples(chats, analyses, turn_vec, _ChoosingHeads(judge, None, threshold=0.5, implicit_threshold=0.5),
                           teacher=True)
    rank = _fit(first, seed=seed)
    again = []
    for judge, chats in per_fold:
        again += _examples(chats, analyses, turn_vec, _ChoosingHeads(judge, rank, threshold=0.5, implicit_threshold=0.5),
                           teacher=False)
    final = _fit(first + again, seed=seed)
    info = {"calls_teacher_forced": len(first), "calls_own_trees": len(again),
            "chosen_right_on_train_own_trees": round(_chosen_right(again, final), 4)}
    log.info("parent chooser: %s", info)
    return {k: v.astype("float32") for k, v in final.items()}, info
