"""LoRA fine-tuning of the planner on verified (question, plan) pairs.

The base is the planner's own GGUF, loaded through transformers' GGUF support
(dequantised), so the adapter is trained on exactly the weights llama.cpp runs. The
loss counts the plan's tokens only. Checkpoints are written every ``--save-every``
steps and a run resumes from the newest one (training takes hours on 2 CPU cores;
minutes on a GPU, which this script uses when there is one, and never needs).

It imports torch, transformers and peft, and of ours only ``models.gguf`` (no model
library), so it runs on a machine that has only those, this tree and the data file.

    python -m models.training.planner_lora --gguf base/model.gguf --data pairs.jsonl --out run/

On a CPU the prompt is most of the cost (about 870 tokens before the question, 70
after it), so pairs are re-cut to a few schema texts and each batch runs its shared
prefix once, without a gradient (``--shared-prefix``, on by default there), and
``--top-layers`` adapts only the upper layers so the gradient stops below them. A run
of days goes on across sessions through ``--carry``: a folder small enough to commit
with the adapter in bf16 and the step it reached.

Then ``python -m models.training.planner_adapter convert run/adapter`` makes the
GGUF adapter llama.cpp loads (``Llama(lora_path=...)``).
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import time
from pathlib import Path

from models.gguf import sha256_file

FIT_RESERVE = 45.0  # seconds kept, with --fit-seconds, for the held-out loss and the saving
FIT_WARM_STEPS, FIT_EVERY = 5, 20  # with --fit-seconds: steps before the pace is read; steps between fittings
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def fitted_steps(total: int, step: int, seconds_a_step: float, seconds_left: float) -> int:
    """The run's step count cut to what fits in ``seconds_left`` at the measured pace,
    never below the next step and never above ``total``: a run on a lent machine whose
    time is fixed ends its schedule (the learning rate decayed) instead of being cut off
    at a high rate."""
    if seconds_a_step <= 0:
        return total
    return max(step + 1, min(total, step + int(seconds_left / seconds_a_step)))


def load_pairs(path: Path) -> list[dict]:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def family_of(template: str) -> str:
    """The question family a pair's template belongs to: ``count``, ``argmax``, ...,
    ``extra:lookup`` for a training-only family, ``hand-written``."""
    parts = template.split(":")
    return ":".join(parts[:2]) if parts[0] == "extra" else parts[0]


def balanced(pairs: list[dict], cap: int, rng: random.Random) -> tuple[list[dict], dict[str, int]]:
    """Every pair of at most ``cap`` instances per family, drawn at random: so that a
    family with many instances (counts) does not drown the rare ones (lookups, joins).
    Returns the pairs kept and, per family, how many instances were left out."""
    ids: dict[str, list[str]] = {}
    for p in pairs:
        fam = ids.setdefault(family_of(p.get("template", "")), [])
        if p["id"] not in fam:
            fam.append(p["id"])
    keep: set[str] = set()
    left: dict[str, int] = {}
    for fam in sorted(ids):
        chosen = sorted(ids[fam])
        rng.shuffle(chosen)
        keep.update(chosen[:cap])
        if len(chosen) > cap:
            left[fam] = len(chosen) - cap
    return [p for p in pairs if p["id"] in keep], left


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


# --------------------------------------------------------------------------- shared prefixes
# On a CPU the prompt is the cost: ~870 tokens before the question, ~70 after it. Every
# prompt up to its question is one of a few schema texts, so a batch of pairs that share
# one is run as that prefix once (no gradient, the adapter applied, as llama.cpp runs it)
# and the questions and plans after it with gradients. The forward values are the full
# sequence's; only the gradient through the prefix's keys and values is left out.
SOURCES, QUESTION = "Sources:\n", "\n\nQuestion: "
CANONICAL = 16        # schema texts with lines left out, besides the whole one
DROP_LINE = 0.25      # chance of leaving a line the plan does not read out (plan_data cuts its prompts so too)


def schema_of_prompt(prompt: str) -> list[str]:
    a = prompt.index(SOURCES) + len(SOURCES)
    return prompt[a:prompt.index(QUESTION, a)].split("\n")


def attrs_read(plan: str) -> set[str]:
    """The attribute names a plan reads (``e["distance_km"]``, ``attr_name="amount"``)."""
    return set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', plan))


def canonical_schemas(pairs: list[dict], rng: random.Random, k: int = CANONICAL) -> list[tuple[str, ...]]:
    """The whole schema the pairs' prompts were cut from (every prompt's lines are a
    subset of one store's), and ``k`` cuts of it."""
    order: dict[str, None] = {}
    for p in sorted(pairs, key=lambda p: -len(schema_of_prompt(p["prompt"]))):
        for line in schema_of_prompt(p["prompt"]):
            order.setdefault(line, None)
    whole = tuple(sorted(order))
    cuts = {whole}
    for _ in range(k * 4):
        if len(cuts) > k:
            break
        cuts.add(tuple(x for x in whole if rng.random() >= DROP_LINE))
    return sorted(cuts, key=lambda c: (-len(c), c))


def _line_attrs(line: str) -> set[str]:
    return {a.strip() for a in line.split(":", 1)[1].split(",")} if ":" in line else set()


def regroup(pairs: list[dict], rng: random.Random, k: int = CANONICAL) -> list[dict]:
    """Each pair's prompt re-cut to one of a few schema texts that keeps every line whose
    attributes its plan reads (the rule plan_data cut them by), chosen at random among
    those; ``prefix`` is the prompt up to the question."""
    cuts = [(c, set(c)) for c in canonical_schemas(pairs, rng, k)]
    out = []
    for p in pairs:
        used = attrs_read(p["completion"])
        need = {line for line in schema_of_prompt(p["prompt"]) if used & _line_attrs(line)}
        fit = [c for c, lines in cuts if need <= lines]
        cut = rng.choice(fit)
        head = p["prompt"][:p["prompt"].index(SOURCES) + len(SOURCES)]
        tail = p["prompt"][p["prompt"].index(QUESTION):]
        prompt = head + "\n".join(cut) + tail
        out.append({**p, "prompt": prompt, "prefix": prompt[:prompt.index(QUESTION) + len(QUESTION) - 1]})
    return out


def encode_shared(tok, pairs: list[dict], max_len: int) -> tuple[list[list[int]], list[tuple[int, list[int], int]]]:
    """(prefix token ids per distinct prefix, [(prefix index, suffix ids, prompt part of
    the suffix)]). The whole text is tokenised at once, as llama.cpp does, and split
    where the prefix's own tokens end; a pair whose tokens do not split there is dropped."""
    prefixes: dict[str, int] = {}
    pre_ids: list[list[int]] = []
    items = []
    for p in pairs:
        if p["prefix"] not in prefixes:
            prefixes[p["prefix"]] = len(pre_ids)
            pre_ids.append(tok(p["prefix"], add_special_tokens=False)["input_ids"])
        j = prefixes[p["prefix"]]
        head = pre_ids[j]
        a = tok(p["prompt"], add_special_tokens=False)["input_ids"]
        b = tok(p["completion"], add_special_tokens=False)["input_ids"]
        if a[:len(head)] != head or len(a) + len(b) > max_len:
            continue
        items.append((j, a[len(head):] + b, len(a) - len(head)))
    return pre_ids, items


def shared_batches(items: list[tuple[int, list[int], int]], per_batch: int, rng: random.Random) -> list[list[int]]:
    """Batches of up to ``per_batch`` items that share one prefix, in random order."""
    by_prefix: dict[int, list[int]] = {}
    for i, (j, _, _) in enumerate(items):
        by_prefix.setdefault(j, []).append(i)
    out = []
    for idx in by_prefix.values():
        rng.shuffle(idx)
        out += [idx[k:k + per_batch] for k in range(0, len(idx), per_batch)]
    rng.shuffle(out)
    return out


def shared_prefix_forward(model, prefix: list[int], suffixes: list[tuple[list[int], int]], pad_id: int, torch,
                          device: str = "cpu"):
    """The loss (plan tokens only) of ``prefix + suffix`` for each (suffix ids, prompt
    part length), with the prefix run once without a gradient and its cache shared."""
    training = model.training
    model.eval()
    with torch.no_grad():
        past = model(input_ids=torch.tensor([prefix], device=device), use_cache=True,
                     logits_to_keep=1).past_key_values  # the prefix's logits are never read
    if training:
        model.train()
    past.batch_repeat_interleave(len(suffixes))
    n = max(len(s) for s, _ in suffixes)
    ids = torch.full((len(suffixes), n), pad_id, dtype=torch.long)
    labels = torch.full((len(suffixes), n), -100, dtype=torch.long)
    mask = torch.zeros((len(suffixes), len(prefix) + n), dtype=torch.long)
    mask[:, :len(prefix)] = 1
    for r, (seq, plen) in enumerate(suffixes):
        ids[r, :len(seq)] = torch.tensor(seq)
        labels[r, plen:len(seq)] = torch.tensor(seq[plen:])
        mask[r, len(prefix):len(prefix) + len(seq)] = 1
    return model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device),
                 past_key_values=past, use_cache=True)


# --------------------------------------------------------------------------- carried across sessions
CARRY_WEIGHTS, CARRY_STATE = "adapter.safetensors", "state.json"


def save_carry(folder: Path, settings: dict, adapter: dict, step: int, seconds: float, torch,
               init_from: dict | None = None) -> None:
    """The adapter in bf16 and the step reached: small enough to commit, so a CPU run
    that takes days goes on where the last session stopped. Written atomically.
    ``init_from`` names the earlier run whose adapter this run started from."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / (CARRY_WEIGHTS + ".partial")
    save_file({k: v.detach().to(torch.bfloat16).contiguous() for k, v in adapter.items()}, str(tmp))
    tmp.replace(folder / CARRY_WEIGHTS)
    state = {"settings": settings, "step": step, "weights_sha256": sha256_file(folder / CARRY_WEIGHTS),
             "train_seconds": round(seconds)}
    if init_from:
        state["init_from"] = init_from
    (folder / (CARRY_STATE + ".partial")).write_text(json.dumps(state, indent=2) + "\n")
    (folder / (CARRY_STATE + ".partial")).replace(folder / CARRY_STATE)


#: What an adapter's shape depends on: a run may start from another's adapter (trained
#: on other data, at another rate) only where these are the same.
SHAPE = ("base_sha256", "rank", "alpha", "top_layers")


def carried_matches(folder: Path, settings: dict) -> bool:
    try:
        return json.loads((folder / CARRY_STATE).read_text())["settings"] == settings
    except (OSError, ValueError, KeyError):
        return False


def init_weights(folder: Path, settings: dict, torch) -> tuple[dict, dict]:
    """An earlier run's carried adapter as the start of a new run (new data, a new
    schedule): its weights (fp32) and what names it (its weights' and data's hashes,
    its step). Its base, rank, alpha and layers must be this run's."""
    from safetensors.torch import load_file

    state = json.loads((folder / CARRY_STATE).read_text())
    diff = [k for k in SHAPE if state["settings"].get(k) != settings.get(k)]
    if diff:
        raise SystemExit(f"{folder} holds an adapter of another shape ({', '.join(diff)}): it cannot start this run")
    if sha256_file(folder / CARRY_WEIGHTS) != state["weights_sha256"]:
        raise SystemExit(f"{folder / CARRY_WEIGHTS} is not the file {CARRY_STATE} names")
    weights = {k: v.to(torch.float32) for k, v in load_file(str(folder / CARRY_WEIGHTS)).items()}
    return weights, {"weights_sha256": state["weights_sha256"], "data_sha256": state["settings"]["data_sha256"],
                     "step": state["step"], "train_seconds": state.get("train_seconds", 0)}


def load_carry(folder: Path, settings: dict, sched, torch) -> tuple[dict, int, float]:
    """A carried adapter made with the same settings: its weights (fp32), its step and
    the seconds trained so far; ``sched`` is moved on to that step."""
    import warnings

    from safetensors.torch import load_file

    state = json.loads((folder / CARRY_STATE).read_text())
    if state["settings"] != settings:
        diff = sorted(k for k in settings if state["settings"].get(k) != settings[k])
        raise SystemExit(f"{folder} was made with other settings ({', '.join(diff)}): "
                         "run with the same ones, or without --carry")
    if sha256_file(folder / CARRY_WEIGHTS) != state["weights_sha256"]:
        raise SystemExit(f"{folder / CARRY_WEIGHTS} is not the file {CARRY_STATE} names")
    weights = {k: v.to(torch.float32) for k, v in load_file(str(folder / CARRY_WEIGHTS)).items()}
    with warnings.catch_warnings():  # the schedule goes on where it was; no optimiser step is missed
        warnings.simplefilter("ignore")
        for _ in range(state["step"]):
            sched.step()
    return weights, int(state["step"]), float(state.get("train_seconds", 0))


def compare_paths(model, tok, pairs: list[dict], args, pad: int, torch, device: str) -> None:
    """One training step's forward and backward over the same pairs, each sequence run
    whole and with the shared prefix run once: seconds, and the ratio."""
    cut = regroup(pairs, random.Random(args.seed))
    first = cut[0]["prefix"]
    chosen = [p for p in cut if p["prefix"] == first][:args.compare]
    pre_ids, shared_items = encode_shared(tok, chosen, args.max_len)
    whole_items = encode(tok, chosen, args.max_len)
    model.train()
    figures = {}
    for name in ("whole", "shared prefix"):
        t = time.perf_counter()
        if name == "whole":
            x, y, m = (v.to(device) for v in collate(whole_items, list(range(len(whole_items))), pad, torch))
            loss = model(input_ids=x, attention_mask=m, labels=y).loss
        else:
            loss = shared_prefix_forward(model, pre_ids[0], [it[1:] for it in shared_items], pad, torch, device).loss
        loss.backward()
        model.zero_grad(set_to_none=True)
        figures[name] = (time.perf_counter() - t, float(loss.detach()))
    tokens = sum(len(s) for s, _ in whole_items)
    print(f"{len(chosen)} pairs, {tokens} tokens whole, prefix {len(pre_ids[0])} + "
          f"{sum(len(s) for _, s, _ in shared_items)} tokens after it", flush=True)
    for name, (seconds, loss) in figures.items():
        print(f"{name:>14}: {seconds:6.1f} s for the step, {seconds / len(chosen):5.2f} s per pair, loss {loss:.4f}",
              flush=True)
    print(f"ratio: the shared prefix is {figures['whole'][0] / figures['shared prefix'][0]:.1f}x faster", flush=True)


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
    ap.add_argument("--max-steps", type=int, default=0,
                    help="at most this many steps: the run and its schedule (a smoke run, or a CPU run over sessions)")
    ap.add_argument("--save-every", type=int, default=200)
    ap.add_argument("--holdout", type=float, default=0.03)
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--check", type=int, default=20, help="held-out instances decoded greedily at the end")
    ap.add_argument("--time-budget", type=float, default=0, help="seconds; stop training (and save) after this")
    ap.add_argument("--fit-seconds", type=float, default=0,
                    help="seconds from the start for the whole run: after its first steps, the schedule is cut "
                         "to the steps that fit (the rest of --epochs is dropped), so it ends decayed")
    ap.add_argument("--shared-prefix", choices=("auto", "on", "off"), default="auto",
                    help="run each batch's shared prompt prefix once, without a gradient (auto: on a CPU)")
    ap.add_argument("--pairs-per-batch", type=int, default=16, help="with --shared-prefix")
    ap.add_argument("--compare", type=int, default=0, metavar="N",
                    help="time one step over N pairs that share a prefix, run whole and with the shared prefix; "
                         "print both and stop")
    ap.add_argument("--carry", type=Path, default=None,
                    help="a folder to commit: the run's adapter (bf16) and step, read when --out has no "
                         "checkpoint and written at every save, so a run goes on in the next session")
    ap.add_argument("--init-from", type=Path, default=None,
                    help="a carry folder of an earlier run (other data or schedule): a run with no checkpoint and "
                         "no carried state of its own settings starts from that adapter (it may be the --carry "
                         "folder itself, which the new run then overwrites)")
    ap.add_argument("--balance", type=int, default=0, metavar="N",
                    help="train on at most N instances per question family (0: all), so rare kinds weigh as much "
                         "as common ones")
    ap.add_argument("--top-layers", type=int, default=0,
                    help="adapt only the top N layers (0: all); the gradient then stops below them")
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
    shared = args.shared_prefix == "on" or (args.shared_prefix == "auto" and not cuda)
    if not cuda and not shared:  # memory is short on a CPU machine, plentiful on the GPU
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    n_layers = model.config.num_hidden_layers
    layers = list(range(n_layers - args.top_layers, n_layers)) if 0 < args.top_layers < n_layers else None
    cfg = LoraConfig(r=args.rank, lora_alpha=args.alpha, lora_dropout=0.05, target_modules=list(TARGETS),
                     layers_to_transform=layers, task_type="CAUSAL_LM")
    model = get_peft_model(model, cfg)

    pairs = load_pairs(args.data)
    ids = sorted({p.get("id", str(i)) for i, p in enumerate(pairs)})
    rng.shuffle(ids)
    held = set(ids[:max(1, int(len(ids) * args.holdout))])  # whole instances held out, all phrasings
    train = [p for i, p in enumerate(pairs) if p.get("id", str(i)) not in held]
    val = [p for i, p in enumerate(pairs) if p.get("id", str(i)) in held]
    if args.balance:
        train, left = balanced(train, args.balance, random.Random(args.seed))
        print(f"balanced to at most {args.balance} instances a family; left out: {left}", flush=True)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    if shared:
        cut_rng = random.Random(args.seed)
        pre_ids, tr_items = encode_shared(tok, regroup(train, cut_rng), args.max_len)
        va_pre, va_items = encode_shared(tok, regroup(val, cut_rng), args.max_len)
        plan = [shared_batches(tr_items, args.pairs_per_batch, random.Random(args.seed + e))
                for e in range(math.ceil(args.epochs))]
        print(f"shared prefixes: {len(pre_ids)} of {sum(map(len, pre_ids)) // max(1, len(pre_ids))} tokens; "
              f"{sum(len(s) for _, s, _ in tr_items) // max(1, len(tr_items))} tokens after each", flush=True)
    else:
        tr_items = encode(tok, train, args.max_len)
        va_items = encode(tok, val, args.max_len)
        plan = [batches(tr_items, args.batch_tokens, random.Random(args.seed + e))
                for e in range(math.ceil(args.epochs))]

    def batch_loss(items, prefixes, idx):
        if shared:
            return shared_prefix_forward(model, prefixes[items[idx[0]][0]], [items[i][1:] for i in idx], pad,
                                         torch, device).loss
        x, y, m = (t.to(device) for t in collate(items, idx, pad, torch))
        return model(input_ids=x, attention_mask=m, labels=y).loss
    steps_per_epoch = len(plan[0])
    total = int(steps_per_epoch * args.epochs)
    if args.max_steps:
        total = min(total, args.max_steps)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.0)
    warm = max(1, total // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / max(1, total)))))
    step, carried_seconds = 0, 0.0
    init_from: dict | None = None
    ckpt = args.out / "checkpoint.pt"
    settings = {"data_sha256": sha256_file(args.data), "base_sha256": sha256_file(args.gguf), "rank": args.rank,
                "alpha": args.alpha, "lr": args.lr, "seed": args.seed, "total_steps": total,
                "shared_prefix": shared, "pairs_per_batch": args.pairs_per_batch, "top_layers": args.top_layers,
                "batch_tokens": args.batch_tokens, "max_len": args.max_len, "holdout": args.holdout,
                **({"balance": args.balance} if args.balance else {})}
    if ckpt.exists():  # resume
        state = torch.load(ckpt, map_location=device, weights_only=False)
        set_peft_model_state_dict(model, state["adapter"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        step = state["step"]
        init_from = state.get("init_from")
        print(f"resumed at step {step}", flush=True)
    elif args.carry is not None and (args.carry / CARRY_STATE).exists() \
            and (args.init_from is None or carried_matches(args.carry, settings)):
        weights, step, carried_seconds = load_carry(args.carry, settings, sched, torch)
        init_from = json.loads((args.carry / CARRY_STATE).read_text()).get("init_from")
        set_peft_model_state_dict(model, weights)
        print(f"resumed at step {step} from {args.carry} (the optimiser's moments start again)", flush=True)
    elif args.init_from is not None:
        weights, init_from = init_weights(args.init_from, settings, torch)
        set_peft_model_state_dict(model, weights)
        print(f"started from the adapter of {args.init_from} (step {init_from['step']} on data "
              f"{init_from['data_sha256'][:12]})", flush=True)
    print(f"{len(tr_items)} train / {len(va_items)} held-out examples, {steps_per_epoch} steps per epoch, "
          f"{total} steps", flush=True)
    if args.compare:
        compare_paths(model, tok, train, args, pad, torch, device)
        return

    def save_checkpoint() -> None:
        from peft import get_peft_model_state_dict

        adapter = get_peft_model_state_dict(model)
        torch.save({"adapter": adapter, "opt": opt.state_dict(), "sched": sched.state_dict(), "step": step,
                    "init_from": init_from}, ckpt)
        if args.carry is not None:
            save_carry(args.carry, settings, adapter, step, carried_seconds + time.time() - t0, torch, init_from)

    def val_loss() -> float:
        model.eval()
        losses = []
        with torch.no_grad():
            groups = (shared_batches(va_items, args.pairs_per_batch, random.Random(0)) if shared
                      else batches(va_items, args.batch_tokens, random.Random(0)))
            for idx in groups:
                losses.append(float(batch_loss(va_items, va_pre if shared else None, idx)))
        model.train()
        return sum(losses) / max(1, len(losses))

    model.train()
    t0 = time.time()
    stopped = "done"
    skipped = 0
    losses: list[float] = []
    first_step, paced_from, planned = step, None, total
    while step < total:
        done = step - first_step
        if args.fit_seconds and done == FIT_WARM_STEPS:
            paced_from = time.time()  # the first steps warm the kernels and the allocator up: paced after them
        elif args.fit_seconds and paced_from is not None and done > FIT_WARM_STEPS and done % FIT_EVERY == 0:
            # fitted again as the pace firms up: a first reading taken among slow early steps
            # had a GPU run stop at an eighth of what its time allowed
            pace = (time.time() - paced_from) / (done - FIT_WARM_STEPS)
            fitted = fitted_steps(planned, step, pace, args.fit_seconds - (time.time() - t_start) - FIT_RESERVE)
            if fitted != total:
                print(f"{pace:.2f} s a step: {fitted} of {planned} steps fit in {args.fit_seconds:.0f} s",
                      flush=True)
                total = fitted
                warm = max(1, total // 20)  # total <= planned: never longer than the first warm-up
                settings["total_steps"] = total
        epoch, k = divmod(step, steps_per_epoch)
        idx = plan[epoch][k]
        loss = batch_loss(tr_items, pre_ids if shared else None, idx)
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
        losses.append(float(loss.detach()))
        if step % 20 == 0 or step == total:
            print(f"step {step}/{total} loss {losses[-1]:.4f} lr {sched.get_last_lr()[0]:.2e} "
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
              "lr": args.lr, "epochs": args.epochs, "batch_tokens": args.batch_tokens, "seed": args.seed,
              "shared_prefix": shared, "pairs_per_batch": args.pairs_per_batch if shared else None,
              "top_layers": args.top_layers or n_layers, "init_from": init_from}
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
