"""Train the extractor: a BART warm-started from all-MiniLM-L6-v2, fine-tuned on
``extract_data`` examples, converted to CTranslate2 int8, measured on dev.

Warm start (verified in shared/MODELS.md): BERT layer i -> BART encoder layer i and
decoder layer i; the decoder's cross-attention starts as a copy of the same layer's
self-attention (learns about twice as fast as a random one); token type 0 is folded
into the positions, which BART offsets by 2 rows.

torch and transformers are imported inside functions; this module is only used by
``models.build``, never at run time.
"""
from __future__ import annotations

import itertools
import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.operators.extract import answered
from models import extractor_format as fmt
from models.training import extract_data
from models.training.precision import bf16_autocast

# Part of the build's cache key: bump it when training changes in a way the
# parameters do not show (a model built by the old code must not be reused).
TRAINER_VERSION = "2: untied output layer, frozen embeddings saved"

log = logging.getLogger(__name__)


def quiet_libraries() -> None:
    """Keep transformers' load reports and progress bars out of the build's output."""
    import warnings

    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", module=r"torch\.onnx.*")
    warnings.filterwarnings("ignore", category=UserWarning, module=r"transformers.*")

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Seq2SeqParams:
    steps: int
    batch_size: int = 32
    # Chosen by learning curves on dev (GPU sweep, same code): lr 3e-4 with dropout
    # 0.1 reached 15% exact after 500 steps; 1.5e-4 without dropout 67%, 85% at 1000.
    lr: float = 1.5e-4
    warmup: int = 100
    dropout: float = 0.0
    dev_examples: int = 1500
    seed: int = 13
    # MiniLM never trained its [unusedN] rows: they are near copies of each other
    # (mean cosine 0.81), so the position markers the decoder points with were
    # indistinguishable. "distinct" gives each marker its own seeded random row.
    marker_init: str = "distinct"
    # share of training texts from simulated lives' events as the importers write them
    persona_share: float = 0.25
    persona_dev_examples: int = 600
    # bfloat16 matmuls where the CPU has them (avx512_bf16): 1.45x per step on the
    # build machine; weights and optimizer state stay float32
    bf16: bool = True
    # With N > 0, train only the encoder's top layers, the decoder and the output
    # layer: the bottom N layers and the input embeddings keep MiniLM's weights and
    # their backward pass is skipped (1.31 s per step against 2.04 with N = 3). Cheaper
    # per step, but the pointer lost its aim: in the same 19 minutes, 800 frozen steps
    # reached 46% exact on dev against 64% for 560 full ones, with spans off by a word
    # or more ("da Hänel" for "Osteria da Hänel"). Untied output layer when frozen:
    # frozen and tied, it held the model at 32% after 850 steps.
    frozen_encoder_layers: int = 0


def distinct_marker_rows(word, ids: list[int], seed: int):
    """``word`` with seeded random rows for ``ids`` (``[unused0]``, meaning no value, and
    the position markers), scaled to the mean norm of real word pieces. They are
    near-orthogonal in 384 dimensions, so the encoder tells word 7's marker from word
    8's and the tied output layer can point at either."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    rows = torch.randn((len(ids), word.shape[1]), generator=gen)
    norm = word[2000:].norm(dim=1).mean()
    out = word.clone()
    out[torch.tensor(ids)] = (rows / rows.norm(dim=1, keepdim=True) * norm).to(word.dtype)
    return out


def marker_ids(tokenizer) -> list[int]:
    """Vocabulary ids of ``[unused0]`` and every position marker (not contiguous:
    BERT puts [UNK], [CLS], [SEP] and [MASK] among them)."""
    return [tokenizer.token_to_id(t) for t in (fmt.NONE_TOKEN, *(fmt.marker(i) for i in range(fmt.MAX_MARKERS)))]


def warm_start_bart(minilm_dir: Path, out_dir: Path, marker_init: str = "distinct", seed: int = 13,
                    decoder_layers: int | None = None, dropout: float = 0.1):
    """Build and save a BartForConditionalGeneration initialised from MiniLM."""
    import torch
    from safetensors.torch import load_file
    from transformers import BartConfig, BartForConditionalGeneration, BertTokenizerFast

    bert = load_file(str(minilm_dir / "model.safetensors"))
    bert = {k.removeprefix("bert."): v for k, v in bert.items()}
    bcfg = json.loads((minilm_dir / "config.json").read_text())
    cfg = BartConfig(
        vocab_size=bcfg["vocab_size"], d_model=bcfg["hidden_size"],
        encoder_layers=bcfg["num_hidden_layers"], decoder_layers=decoder_layers or bcfg["num_hidden_layers"],
        encoder_attention_heads=bcfg["num_attention_heads"],
        decoder_attention_heads=bcfg["num_attention_heads"],
        encoder_ffn_dim=bcfg["intermediate_size"], decoder_ffn_dim=bcfg["intermediate_size"],
        activation_function="gelu", max_position_embeddings=bcfg["max_position_embeddings"],
        dropout=dropout, attention_dropout=dropout, scale_embedding=False,
        pad_token_id=0, bos_token_id=101, eos_token_id=102, decoder_start_token_id=101,
        forced_eos_token_id=None, tie_word_embeddings=True,
        normalize_before=False, normalize_embedding=True,
    )
    model = BartForConditionalGeneration(cfg)
    sd = model.state_dict()
    new: dict[str, torch.Tensor] = {}
    word = bert["embeddings.word_embeddings.weight"]
    if marker_init == "distinct":
        word = distinct_marker_rows(word, marker_ids(fmt.load_tokenizer(minilm_dir / "tokenizer.json")), seed)
    elif marker_init != "minilm":
        raise ValueError(f"marker_init {marker_init!r}: use 'distinct' or 'minilm'")
    pos = bert["embeddings.position_embeddings.weight"] + bert["embeddings.token_type_embeddings.weight"][0]
    pos = torch.cat([pos[:2], pos], dim=0)  # BART's 2-row offset
    new["model.shared.weight"] = word
    for side in ("encoder", "decoder"):
        new[f"model.{side}.embed_tokens.weight"] = word
        new[f"model.{side}.embed_positions.weight"] = pos
        new[f"model.{side}.layernorm_embedding.weight"] = bert["embeddings.LayerNorm.weight"]
        new[f"model.{side}.layernorm_embedding.bias"] = bert["embeddings.LayerNorm.bias"]
        for i in range(cfg.encoder_layers if side == "encoder" else cfg.decoder_layers):
            b = f"encoder.layer.{i}."
            t = f"model.{side}.layers.{i}."
            attn = {"q_proj": "attention.self.query", "k_proj": "attention.self.key",
                    "v_proj": "attention.self.value", "out_proj": "attention.output.dense"}
            blocks = ["self_attn"] + (["encoder_attn"] if side == "decoder" else [])
            for block in blocks:
                for ours, theirs in attn.items():
                    for p in ("weight", "bias"):
                        new[f"{t}{block}.{ours}.{p}"] = bert[f"{b}{theirs}.{p}"]
                for p in ("weight", "bias"):
                    new[f"{t}{block}_layer_norm.{p}"] = bert[f"{b}attention.output.LayerNorm.{p}"]
            for p in ("weight", "bias"):
                new[f"{t}fc1.{p}"] = bert[f"{b}intermediate.dense.{p}"]
                new[f"{t}fc2.{p}"] = bert[f"{b}output.dense.{p}"]
                new[f"{t}final_layer_norm.{p}"] = bert[f"{b}output.LayerNorm.{p}"]
    new["lm_head.weight"] = word
    missing = [k for k in sd if k not in new and k != "final_logits_bias"]
    if missing:
        raise RuntimeError(f"warm start from {minilm_dir}: no MiniLM weights for {missing[:5]}")
    model.load_state_dict(new, strict=False)
    tok = BertTokenizerFast.from_pretrained(str(minilm_dir), bos_token="[CLS]", eos_token="[SEP]")
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir))
    tok.save_pretrained(str(out_dir))
    return model


def _batch(tokenizer, exs: list[extract_data.Example]):
    import torch

    sources = fmt.encode_sources(tokenizer, [(e.text, e.key) for e in exs])
    targets = [[tokenizer.token_to_id(t) for t in fmt.target_tokens(tokenizer, e.text, e.value, e.span)]
               for e in exs]
    n = max(len(s.ids) for s in sources)
    m = max(len(t) for t in targets) + 1
    src = torch.zeros((len(exs), n), dtype=torch.long)
    mask = torch.zeros((len(exs), n), dtype=torch.long)
    dec = torch.zeros((len(exs), m), dtype=torch.long)
    labels = torch.full((len(exs), m), -100, dtype=torch.long)
    for r, (s, t) in enumerate(zip(sources, targets)):
        src[r, :len(s.ids)] = torch.tensor(s.ids)
        mask[r, :len(s.ids)] = 1
        dec[r, :len(t) + 1] = torch.tensor([101, *t])
        labels[r, :len(t) + 1] = torch.tensor([*t, 102])
    return src, mask, dec, labels


def length_batches(stream, batch_size: int, seed: int, pool: int = 8):
    """Batches of similar text length: ``pool`` batches' worth of examples sorted by
    length, cut into batches, served in a seeded random order. The encoder's cost is
    the padded length, so this trains about a third faster on the CPU."""
    rng = random.Random(f"{seed}:batches")
    while True:
        chunk = sorted(itertools.islice(stream, batch_size * pool), key=lambda e: len(e.text))
        cut = [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
        rng.shuffle(cut)
        yield from cut


def freeze_bottom(model, layers: int) -> list:
    """Freeze the word and position embeddings and the encoder's first ``layers``
    layers when ``layers`` > 0, giving the output layer its own trainable copy of
    the word embeddings; return the parameters left to train."""
    if layers > 0:
        import torch

        # Untied, transformers neither ties the encoder's and decoder's input embeddings
        # to ``shared`` on loading nor saves them while they are one tensor: each gets
        # its own (frozen) copy so the checkpoint holds all of them.
        model.config.tie_word_embeddings = False
        word = model.model.shared.weight.detach()
        model.lm_head.weight = torch.nn.Parameter(word.clone())
        model.model.shared.weight.requires_grad_(False)
        for side in (model.model.encoder, model.model.decoder):
            side.embed_tokens.weight = torch.nn.Parameter(word.clone(), requires_grad=False)
        enc = model.model.encoder
        for module in (enc.embed_positions, enc.layernorm_embedding, *enc.layers[:layers]):
            for p in module.parameters():
                p.requires_grad_(False)
    return [p for p in model.parameters() if p.requires_grad]


def train(minilm_dir: Path, work_dir: Path, params: Seq2SeqParams, progress: Progress) -> Path:
    """Fine-tune and save the HF model under ``work_dir/hf``; return that folder."""
    import torch

    quiet_libraries()
    torch.manual_seed(params.seed)
    random.seed(params.seed)
    torch.set_num_threads(2)
    hf_dir = work_dir / "hf"
    model = warm_start_bart(minilm_dir, hf_dir, params.marker_init, params.seed, dropout=params.dropout)
    tokenizer = fmt.load_tokenizer(minilm_dir / "tokenizer.json")
    model.train()
    trainable = freeze_bottom(model, params.frozen_encoder_layers)
    opt = torch.optim.AdamW(trainable, lr=params.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / params.warmup) * max(0.05, 1 - s / params.steps))
    stream = extract_data.mixed(params.seed, "train", params.persona_share)
    batches = length_batches(stream, params.batch_size, params.seed)
    autocast = bf16_autocast(params.bf16)
    started = time.monotonic()
    loss_avg = None
    for step in range(params.steps):
        exs = next(batches)
        src, mask, dec, labels = _batch(tokenizer, exs)
        with autocast():
            out = model(input_ids=src, attention_mask=mask, decoder_input_ids=dec, labels=labels)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        loss_avg = out.loss.item() if loss_avg is None else 0.95 * loss_avg + 0.05 * out.loss.item()
        if step % 20 == 0 or step == params.steps - 1:
            rate = (step + 1) * params.batch_size / (time.monotonic() - started)
            progress((step + 1) / params.steps, f"step {step + 1}/{params.steps} loss {loss_avg:.3f} "
                                                f"({rate:.0f} ex/s)")
    model.save_pretrained(str(hf_dir))
    return hf_dir


def convert(hf_dir: Path, out_dir: Path) -> Path:
    import ctranslate2

    ctranslate2.converters.TransformersConverter(str(hf_dir)).convert(
        str(out_dir), quantization="int8", force=True)
    return out_dir


def evaluate(ct2_dir: Path, tokenizer_path: Path, params: Seq2SeqParams) -> dict:
    """Exact match on dev (entities and some templates never seen in training), by
    bucket, of the answers as EXTRACT returns them (``model_exact_all``: of the
    model's own spans), plus examples/s at batch 64; and exact match on the dev persona's events
    as the importers wrote them (``persona_*``)."""
    from models.runtime.extractor import CT2Extractor

    dev = list(itertools.islice(extract_data.examples(params.seed, "dev"), params.dev_examples))
    persona = list(itertools.islice(extract_data.persona_examples(params.seed, "dev"), params.persona_dev_examples))
    ext = CT2Extractor(ct2_dir, tokenizer_path)
    try:
        started = time.monotonic()
        preds = ext.extract([(e.text, e.key) for e in dev])
        elapsed = time.monotonic() - started
        persona_preds = ext.extract([(e.text, e.key) for e in persona]) if persona else []
    finally:
        ext.close()
    # scored as the EXTRACT operator returns them (engine.operators.extract.answered:
    # whole names, categories the text names); the model's own answers too
    raw_all = _exact_by_bucket(dev, preds, "")["exact_all"]
    preds = [answered(p, e.text) or "" for p, e in zip(preds, dev)]
    persona_preds = [answered(p, e.text) or "" for p, e in zip(persona_preds, persona)]
    metrics = _exact_by_bucket(dev, preds, "")
    metrics["model_exact_all"] = raw_all
    metrics["examples_per_s_batch64"] = round(len(dev) / elapsed, 1)
    metrics.update(_exact_by_bucket(persona, persona_preds, "persona_"))
    wrong = [(e.text, e.key, e.value, p) for e, p in zip(dev, preds) if p != e.value][:8]
    wrong += [(e.text, e.key, e.value, p) for e, p in zip(persona, persona_preds) if p != e.value][:8]
    for w in wrong:
        log.info("extractor dev miss: %r key=%r gold=%r got=%r", *w)
    return metrics


def _exact_by_bucket(exs: list[extract_data.Example], preds: list[str], prefix: str) -> dict:
    buckets: dict[str, list[int]] = {}
    for e, p in zip(exs, preds):
        hit = int(p == e.value)
        names = (e.bucket, "all") if prefix else (
            e.bucket, "all", "unseen_template" if e.unseen_template else "seen_template")
        for b in names:
            buckets.setdefault(b, []).append(hit)
    metrics = {f"{prefix}exact_{b}": round(sum(v) / len(v), 4) for b, v in sorted(buckets.items())}
    metrics.update({f"{prefix}n_{b}": len(v) for b, v in sorted(buckets.items())})
    return metrics
