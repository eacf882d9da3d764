"""Train RETRIEVE's cross-encoders from all-MiniLM-L6-v2: a classification head
(1 logit for the event classifier, 3 classes for the pattern classifier), exported
to ONNX and quantised to int8, measured on dev pairs (dev entities and templates).

torch and transformers are imported inside functions; only ``models.build`` uses
this module.
"""
from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from models.training.retrieval_data import PATTERN_LABELS, Pair
from models.training.precision import bf16_autocast

log = logging.getLogger(__name__)


def quiet_libraries() -> None:
    """Keep transformers' load reports and progress bars out of the build's output."""
    import warnings

    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", module=r"torch\.onnx.*")
    warnings.filterwarnings("ignore", category=UserWarning, module=r"transformers.*")

MAX_TOKENS = 64  # ORT int8 runs ~2x faster at 64 tokens than at 128 (MODELS.md)


@dataclass(frozen=True)
class CrossEncoderParams:
    steps: int
    num_labels: int
    batch_size: int = 32
    lr: float = 4e-5
    warmup: int = 30
    dev_pairs: int = 1200
    seed: int = 17
    bf16: bool = True  # bfloat16 autocast where the CPU has it (see precision.bf16_autocast)


def train_and_export(minilm_dir: Path, work_dir: Path, pairs: Iterator[Pair], params: CrossEncoderParams,
                     progress: Callable[[float, str], None]) -> Path:
    """Fine-tune, export to ONNX, quantise; return the int8 model path."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    quiet_libraries()
    torch.manual_seed(params.seed)
    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(str(minilm_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(minilm_dir), num_labels=params.num_labels)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=params.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / params.warmup) * max(0.05, 1 - s / params.steps))
    loss_fn = (torch.nn.BCEWithLogitsLoss() if params.num_labels == 1 else torch.nn.CrossEntropyLoss())
    autocast = bf16_autocast(params.bf16)
    started = time.monotonic()
    avg = None
    for step in range(params.steps):
        batch = list(itertools.islice(pairs, params.batch_size))
        enc = tok([p.query for p in batch], [p.text for p in batch], truncation=True,
                  max_length=MAX_TOKENS, padding=True, return_tensors="pt")
        with autocast():
            logits = model(**enc).logits.float()
        if params.num_labels == 1:
            loss = loss_fn(logits.squeeze(-1), torch.tensor([float(p.label) for p in batch]))
        else:
            loss = loss_fn(logits, torch.tensor([p.label for p in batch]))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        avg = loss.item() if avg is None else 0.95 * avg + 0.05 * loss.item()
        if step % 20 == 0 or step == params.steps - 1:
            rate = (step + 1) * params.batch_size / (time.monotonic() - started)
            progress((step + 1) / params.steps, f"step {step + 1}/{params.steps} loss {avg:.3f} ({rate:.0f} pairs/s)")
    return export(model, tok, work_dir)


def export(model, tok, work_dir: Path) -> Path:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model.eval()
    work_dir.mkdir(parents=True, exist_ok=True)
    fp32 = work_dir / "model.fp32.onnx"
    sample = tok(["query"], ["text"], return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "seq"} for n in names}
    axes["logits"] = {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(model, tuple(sample[n] for n in names), str(fp32), input_names=names,
                          output_names=["logits"], dynamic_axes=axes, opset_version=17, dynamo=False)
    int8 = work_dir / "model.int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    fp32.unlink()
    return int8


def evaluate_events(model_path: Path, tokenizer_path: Path, dev: list[Pair]) -> dict:
    from models.runtime.classifiers import OnnxEventClassifier

    clf = OnnxEventClassifier(model_path, tokenizer_path)
    try:
        started = time.monotonic()
        scores = clf.score([(p.query, p.text) for p in dev])
        elapsed = time.monotonic() - started
    finally:
        clf.close()
    tp = sum(1 for p, s in zip(dev, scores) if p.label == 1 and s >= 0.5)
    fp = sum(1 for p, s in zip(dev, scores) if p.label == 0 and s >= 0.5)
    fn = sum(1 for p, s in zip(dev, scores) if p.label == 1 and s < 0.5)
    return {"precision": round(tp / max(tp + fp, 1), 4), "recall": round(tp / max(tp + fn, 1), 4),
            "accuracy": round(sum((s >= 0.5) == (p.label == 1) for p, s in zip(dev, scores)) / len(dev), 4),
            "n_dev": len(dev), "pairs_per_s": round(len(dev) / elapsed, 1)}


def evaluate_patterns(model_path: Path, tokenizer_path: Path, dev: list[Pair]) -> dict:
    from models.runtime.classifiers import OnnxPatternClassifier

    clf = OnnxPatternClassifier(model_path, tokenizer_path)
    try:
        started = time.monotonic()
        preds = clf.classify_pairs([(p.query, p.text) for p in dev])
        elapsed = time.monotonic() - started
    finally:
        clf.close()
    metrics: dict = {"n_dev": len(dev), "pairs_per_s": round(len(dev) / elapsed, 1),
                     "accuracy": round(sum(PATTERN_LABELS[p.label] == y for p, y in zip(dev, preds)) / len(dev), 4)}
    for label in PATTERN_LABELS:
        tp = sum(1 for p, y in zip(dev, preds) if y == label and PATTERN_LABELS[p.label] == label)
        predicted = sum(1 for y in preds if y == label)
        actual = sum(1 for p in dev if PATTERN_LABELS[p.label] == label)
        metrics[f"precision_{label}"] = round(tp / max(predicted, 1), 4)
        metrics[f"recall_{label}"] = round(tp / max(actual, 1), 4)
    return metrics
