"""LoRA fine-tuning of the planner on verified (question, plan) pairs.

The base is the planner's own GGUF, loaded through transformers' GGUF support
(dequantised), so the adapter is trained on exactly the weights llama.cpp runs. The
loss counts the plan's tokens only. Checkpoints are written every ``--save-every``
steps and a run resumes from the newest one (training takes hours on 2 CPU cores;
minutes on a GPU, which this script uses when there is one, and never needs).

It imports torch, transformers and peft, and of ours only ``models.gguf`` (no model
library), so it runs on a machine that has only those, this tree and the data file.

    python -m models.training.planner_lora --gguf base/model.gguf --data pairs.jsonl --out run/

Then ``python -m models.training.planner_adapter convert run/adapter`` makes the
GGUF adapter llama.cpp loads (``Llama(lora_path=...)``).
"""
from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

from models.gguf import sha256_file

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def load_pairs(path: Path) -> list[dict]:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def encode(tok, pairs: list[dict], max_len: int) -> list[tuple[list[int], int]]:
    """(token ids, length of the prompt part) per pair; too long ones are dropped."""
    out = []
    for p in pairs:
        a = tok(p["prompt"], add_special_tokens=False)["input_ids"]
        b = tok(p["completion"], add_special_tokens=False)["input_ids"]
        if len(a) + len(b) <= max_len:
            out.append((a + b, len(a)))
    return out


def batches(items: list[tuple[list[int], int]], max_tokens: int, rng: random.Random) -> list[list[int]]:
    """Index batches of similar length, at most ``max_tokens`` padded tokens each."""
    order = sorted(range(len(items)), key=lambda i: len(items[i][0]) + rng.random())
    out, cur, longest = [], [], 0
    for i in order:
        n = len(items[i][0])
        if cur and max(longest, n) * (len(cur) + 1) > max_tokens:
            out.append(cur)
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, n)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def collate(items, idx, pad_id, torch):
    n = max(len(items[i][0]) for i in idx)
    ids = torch.full((len(idx), n), pad_id, dtype=torch.long)
    labels = torch.full((len(idx), n), -100, dtype=torch.long)
    mask = torch.zeros((len(idx), n), dtype=torch.long)
    for r, i in enumerate(idx):
        seq, plen = items[i]
        ids[r, :len(seq)] = torch.tensor(seq)
        labels[r, plen:len(seq)] = torch.tensor(seq[plen:])
        mask[r, :len(seq)] = 1
    return ids, labels, mask


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--alpha", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--batch-tokens", type=int, default=16384)
    ap.add_argument("--max-len", type=int, default=1536)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (a smoke run)")
    ap.add_argument("--save-every", type=int, default=200)
    ap.add_argument("--holdout", type=float, default=0.03)
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--check", type=int, default=20, help="held-out instances decoded greedily at the end")
    ap.add_argument("--time-budget", type=float, default=0, help="seconds; stop training (and save) after this")
    args = ap.parse_args(argv)

    import torch
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t_start = time.time()
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    dtype = torch.bfloat16 if cuda else torch.float32
    args.out.mkdir(parents=True, exist_ok=True)
    folder, name = str(args.gguf.parent), args.gguf.name
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    try:  # transformers >= 5.2x keeps GGUF weights packed unless told to unpack them: train a dense model
        from transformers import GgufConfig

        dense = {"quantization_config": GgufConfig(gguf_file=name, dequantize=True)}
    except ImportError:  # older versions always unpack
        dense = {}
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=dtype, **dense)
    bad = [n for n, p in model.named_parameters() if not torch.isfinite(p).all()]
    if bad:
        raise SystemExit(f"the base has non-finite weights after loading: {bad[:3]}")
    # the base's config and tokenizer: what convert_lora_to_gguf.py needs as --base
    (args.out / "base").mkdir(exist_ok=True)
    base_config = model.config.to_dict()
    base_config.pop("quantization_config", None)
    base_config["architectures"] = base_config.get("architectures") or [type(model).__name__]
    (args.out / "base" / "config.json").write_text(json.dumps(base_config, indent=2) + "\n")
    tok.save_pretrained(args.out / "base")
    print(f"loaded {name} in {time.time() - t_start:.0f} s on {device}", flush=True)
    model.to(device)
    if not cuda:  # memory is short on a CPU machine, plentiful on the GPU (where recomputing costs time)
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    cfg = LoraConfig(r=args.rank, lora_alpha=args.alpha, lora_dropout=0.05, target_modules=list(TARGETS),
                     task_type="CAUSAL_LM")
    model = get_peft_model(model, cfg)

    pairs = load_pairs(args.data)
    ids = sorted({p.get("id", str(i)) for i, p in enumerate(pairs)})
    rng.shuffle(ids)
    held = set(ids[:max(1, int(len(ids) * args.holdout))])  # whole instances held out, all phrasings
    train = [p for i, p in enumerate(pairs) if p.get("id", str(i)) not in held]
    val = [p for i, p in enumerate(pairs) if p.get("id", str(i)) in held]
    tr_items = encode(tok, train, args.max_len)
    va_items = encode(tok, val, args.max_len)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    plan = [batches(tr_items, args.batch_tokens, random.Random(args.seed + e)) for e in range(math.ceil(args.epochs))]
    steps_per_epoch = len(plan[0])
    total = int(steps_per_epoch * args.epochs)
    if args.max_steps:
        total = min(total, args.max_steps)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.0)
    warm = max(1, total // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / max(1, total)))))
    step = 0
    ckpt = args.out / "checkpoint.pt"
    if ckpt.exists():  # resume
        state = torch.load(ckpt, map_location=device, weights_only=False)
        set_peft_model_state_dict(model, state["adapter"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
        print(f"resumed at step {step}", flush=True)
    print(f"{len(tr_items)} train / {len(va_items)} held-out examples, {steps_per_epoch} steps per epoch, "
          f"{total} steps", flush=True)

    def save_checkpoint() -> None:
        from peft import get_peft_model_state_dict

        torch.save({"adapter": get_peft_model_state_dict(model), "opt": opt.state_dict(),
                    "sched": sched.state_dict(), "step": step}, ckpt)

    def val_loss() -> float:
        model.eval()
        losses = []
        with torch.no_grad():
            for idx in batches(va_items, args.batch_tokens, random.Random(0)):
                x, y, m = (t.to(device) for t in collate(va_items, idx, pad, torch))
                losses.append(float(model(input_ids=x, attention_mask=m, labels=y).loss))
        model.train()
        return sum(losses) / max(1, len(losses))

    model.train()
    t0 = time.time()
    stopped = "done"
    skipped = 0
    losses: list[float] = []
    while step < total:
        epoch, k = divmod(step, steps_per_epoch)
        idx = plan[epoch][k]
        x, y, m = (t.to(device) for t in collate(tr_items, idx, pad, torch))
        loss = model(input_ids=x, attention_mask=m, labels=y).loss
        if not torch.isfinite(loss):
            skipped += 1
            opt.zero_grad(set_to_none=True)
            if skipped > 10:
                raise SystemExit(f"the loss was not finite {skipped} times (step {step}): stopped, nothing saved")
            step += 1
            continue
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if not torch.isfinite(norm):
            skipped += 1
            opt.zero_grad(set_to_none=True)
            step += 1
            continue
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        losses.append(float(loss))
        if step % 20 == 0 or step == total:
            print(f"step {step}/{total} loss {float(loss):.4f} lr {sched.get_last_lr()[0]:.2e} "
                  f"{time.time() - t0:.0f} s", flush=True)
        if step % args.save_every == 0:
            save_checkpoint()
        if args.time_budget and time.time() - t_start > args.time_budget:
            stopped = "time budget"
            break
    save_checkpoint()
    vl = val_loss() if va_items else None
    lora = [p for n, p in model.named_parameters() if "lora_" in n]
    if not all(torch.isfinite(p).all() for p in lora):
        raise SystemExit("the adapter has non-finite weights: not saved")
    model.save_pretrained(args.out / "adapter")
    report = {"steps": step, "stopped": stopped, "skipped_steps": skipped, "train_examples": len(tr_items),
              "heldout_examples": len(va_items), "heldout_loss": vl,
              "train_loss_last_50": sum(losses[-50:]) / max(1, len(losses[-50:])),
              "seconds": round(time.time() - t_start), "device": device, "data_sha256": sha256_file(args.data),
              "base": name, "base_sha256": sha256_file(args.gguf), "rank": args.rank, "alpha": args.alpha,
              "lr": args.lr, "epochs": args.epochs, "batch_tokens": args.batch_tokens, "seed": args.seed}
    (args.out / "adapter" / "training.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report), flush=True)

    # greedy plans for the held-out instances' first phrasing: exact-match with the verified plan
    exact, tried = 0, 0
    model.eval()
    seen_ids = set()
    with torch.no_grad():
        for p in val:
            if p.get("id") in seen_ids or tried >= args.check:
                continue
            seen_ids.add(p.get("id"))
            x = tok(p["prompt"], add_special_tokens=False, return_tensors="pt")["input_ids"].to(device)
            out = model.generate(input_ids=x, max_new_tokens=200, do_sample=False, pad_token_id=pad,
                                 eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"))
            text = tok.decode(out[0][x.shape[1]:], skip_special_tokens=True).strip()
            tried += 1
            exact += int(text == p["plan"])
    report.update(heldout_exact_plans=f"{exact}/{tried}", seconds=round(time.time() - t_start))
    (args.out / "adapter" / "training.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2), flush=True)


if __name__ == "__main__":
    main()
