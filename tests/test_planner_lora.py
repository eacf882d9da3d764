"""CPU training of the planner's adapter with shared prompt prefixes: the loss it
trains on is the full sequence's, the prompts it re-cuts keep every source the plan
reads, and every pair lands in a batch whose items share one prefix."""
from __future__ import annotations

import random

import pytest

from engine.qud.tuned import render_prompt, schema_lines
from models.training import planner_lora as pl

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SCHEMA = [("health", "workout", ["activity", "distance_km"]), ("mail", "mail", ["from", "subject"]),
          ("netflix", "episode_stream", ["show", "season"]), ("spotify", "music_stream", ["artist", "track"]),
          ("strava", "workout", ["distance_km", "sport"])]


def _tiny_model():
    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    return transformers.Qwen2ForCausalLM(cfg)


def _full_loss(model, prefix, suffixes):
    """Each whole sequence run on its own: the plan tokens' mean cross-entropy."""
    total, count = 0.0, 0
    for seq, plen in suffixes:
        ids = torch.tensor([prefix + seq])
        logits = model(input_ids=ids).logits[0, :-1]
        target = torch.full((ids.shape[1] - 1,), -100)
        start = len(prefix) + plen
        target[start - 1:] = ids[0, start:]
        total += float(torch.nn.functional.cross_entropy(logits, target, ignore_index=-100, reduction="sum"))
        count += int((target != -100).sum())
    return total / count


def test_a_shared_prefix_gives_the_loss_of_the_whole_sequences():
    model = _tiny_model().eval()
    rng = random.Random(1)
    prefix = [rng.randrange(97) for _ in range(23)]
    suffixes = [([rng.randrange(97) for _ in range(n)], q) for n, q in ((9, 3), (5, 2), (14, 6))]
    with torch.no_grad():
        shared = float(pl.shared_prefix_forward(model, prefix, suffixes, 0, torch).loss)
        whole = _full_loss(model, prefix, suffixes)
    assert shared == pytest.approx(whole, rel=1e-5)


def test_training_on_a_shared_prefix_lowers_the_loss_and_leaves_the_prefix_without_gradient():
    model = _tiny_model().train()
    rng = random.Random(2)
    prefix = [rng.randrange(97) for _ in range(15)]
    suffixes = [([rng.randrange(97) for _ in range(8)], 3) for _ in range(4)]
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    first = None
    for _ in range(30):
        loss = pl.shared_prefix_forward(model, prefix, suffixes, 0, torch).loss
        first = float(loss.detach()) if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert model.training
    assert float(pl.shared_prefix_forward(model, prefix, suffixes, 0, torch).loss) < first * 0.5


def _pair(question: str, plan: str, rows) -> dict:
    return {"id": question, "question": question, "prompt": render_prompt(question, schema_lines(rows)),
            "completion": plan + "<|im_end|>", "plan": plan}


def test_recut_prompts_keep_what_the_plan_reads_and_share_few_prefixes():
    rng = random.Random(3)
    pairs = []
    for i in range(60):
        rows = [r for r in SCHEMA if r[0] == "strava" or rng.random() > 0.3]
        pairs.append(_pair(f"how far did I run {i}", 'SUM(l=RETRIEVE(query="run"), attr_name="distance_km")'
                           if i % 2 else 'APPLY(l=RETRIEVE(query="run"), fct=len)', rows))
    cut = pl.regroup(pairs, random.Random(0), k=4)
    assert len({p["prefix"] for p in cut}) <= 5
    for before, after in zip(pairs, cut):
        assert after["prompt"].startswith(after["prefix"]) and after["prefix"].endswith("Question:")
        assert after["prompt"].endswith(before["prompt"][before["prompt"].index("\n\nQuestion: "):])
        lines = pl.schema_of_prompt(after["prompt"])
        if "distance_km" in after["completion"]:  # both sources with distance_km were in the original
            assert {ln for ln in pl.schema_of_prompt(before["prompt"]) if "distance_km" in ln} <= set(lines)


def test_batches_hold_one_prefix_each_and_cover_every_item():
    items = [(i % 3, [1, 2, 3], 1) for i in range(40)]
    groups = pl.shared_batches(items, 6, random.Random(0))
    assert sorted(i for g in groups for i in g) == list(range(40))
    assert all(len({items[i][0] for i in g}) == 1 and len(g) <= 6 for g in groups)


def test_a_run_carried_to_the_next_session_goes_on_with_its_adapter_and_step(tmp_path):
    settings = {"data_sha256": "d" * 64, "rank": 4, "total_steps": 50}
    gen = torch.Generator().manual_seed(0)
    adapter = {f"base_model.model.layers.{i}.self_attn.q_proj.lora_{ab}.weight": torch.rand((4, 32), generator=gen) - .5
               for i in range(2) for ab in "AB"}

    def schedule():
        opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1e-3)
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - s / 50)

    pl.save_carry(tmp_path, settings, adapter, 17, 3600.0, torch)
    assert sorted(f.name for f in tmp_path.iterdir()) == [pl.CARRY_WEIGHTS, pl.CARRY_STATE]
    sched = schedule()
    weights, step, seconds = pl.load_carry(tmp_path, settings, sched, torch)
    assert (step, seconds) == (17, 3600.0)
    assert sched.get_last_lr()[0] == pytest.approx(1e-3 * (1 - 17 / 50))
    assert weights.keys() == adapter.keys()
    for k in adapter:  # bf16 on disk: about 3 significant digits
        assert weights[k].dtype == torch.float32
        assert torch.allclose(weights[k], adapter[k], rtol=1e-2, atol=1e-3), k
        assert not torch.equal(weights[k], torch.zeros_like(weights[k]))

    with pytest.raises(SystemExit, match="rank"):
        pl.load_carry(tmp_path, {**settings, "rank": 8}, schedule(), torch)
    (tmp_path / pl.CARRY_WEIGHTS).write_bytes(b"changed")
    with pytest.raises(SystemExit, match="not the file"):
        pl.load_carry(tmp_path, settings, schedule(), torch)


def test_a_new_run_on_other_data_starts_from_an_earlier_adapter_of_the_same_shape(tmp_path):
    old = {"data_sha256": "a" * 64, "base_sha256": "b" * 64, "rank": 4, "alpha": 8, "top_layers": 2,
           "total_steps": 240}
    new = {**old, "data_sha256": "c" * 64, "total_steps": 500}
    adapter = {"base_model.model.layers.1.mlp.up_proj.lora_A.weight": torch.full((4, 32), 0.25)}
    pl.save_carry(tmp_path / "old", old, adapter, 240, 9000.0, torch)

    assert pl.carried_matches(tmp_path / "old", old) and not pl.carried_matches(tmp_path / "old", new)
    weights, lineage = pl.init_weights(tmp_path / "old", new, torch)
    assert torch.equal(weights["base_model.model.layers.1.mlp.up_proj.lora_A.weight"], torch.full((4, 32), 0.25))
    assert lineage["data_sha256"] == "a" * 64 and lineage["step"] == 240
    # the new run's carry says where it began, and a later session resumes it as its own
    pl.save_carry(tmp_path / "new", new, adapter, 5, 60.0, torch, lineage)
    assert pl.carried_matches(tmp_path / "new", new)
    state = __import__("json").loads((tmp_path / "new" / pl.CARRY_STATE).read_text())
    assert state["init_from"]["weights_sha256"] == lineage["weights_sha256"] and state["step"] == 5
    # another shape cannot start it
    with pytest.raises(SystemExit, match="another shape.*rank"):
        pl.init_weights(tmp_path / "old", {**new, "rank": 8}, torch)
