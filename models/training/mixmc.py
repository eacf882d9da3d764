"""MixMC (CRyCHIc §3): chats made by interleaving two real MultiChallenge
conversations, keeping each one's order, so every turn's true parent is known (the
previous turn of its own conversation; its first turn is a root).

Conversations are split into train/dev/test by a hash of their id *before* mixing,
so no conversation's text is in two splits. Reads only; no model, no torch.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path

SPLITS = ("train", "dev", "test")


@dataclass(frozen=True, slots=True)
class SourceTurn:
    conversation: str  # the MultiChallenge QUESTION_ID
    index: int  # 0-based user turn within it
    prompt: str
    response: str  # "" for the conversation's last (target) question


@dataclass(frozen=True, slots=True)
class MixedTurn:
    id: str  # "<conversation>#<index>"
    prompt: str
    response: str
    parent: str | None  # the true parent's id


def multichallenge_path(shared: Path) -> Path:
    return shared / "data" / "multichallenge" / "benchmark_questions.jsonl"


def split_of(conversation_id: str) -> str:
    """70% train, 15% dev, 15% test, by a stable hash of the id."""
    bucket = int(hashlib.sha256(conversation_id.encode()).hexdigest()[:8], 16) % 100
    return "train" if bucket < 70 else "dev" if bucket < 85 else "test"


def load_conversations(path: Path) -> dict[str, list[SourceTurn]]:
    """MultiChallenge conversations as their user turns, each with the reply after it."""
    out: dict[str, list[SourceTurn]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            cid = str(row["QUESTION_ID"])
            messages = row["CONVERSATION"]
            turns: list[SourceTurn] = []
            for i, m in enumerate(messages):
                if m.get("role") != "user" or not str(m.get("content") or "").strip():
                    continue
                reply = messages[i + 1]["content"] if i + 1 < len(messages) and messages[i + 1].get("role") == "assistant" else ""
                turns.append(SourceTurn(cid, len(turns), str(m["content"]), str(reply or "")))
            if turns:
                out[cid] = turns
    return out


def split(conversations: dict[str, list[SourceTurn]], name: str) -> dict[str, list[SourceTurn]]:
    if name not in SPLITS:
        raise ValueError(f"unknown split {name!r}; known: {', '.join(SPLITS)}")
    return {cid: turns for cid, turns in conversations.items() if split_of(cid) == name}


def interleave(a: list[SourceTurn], b: list[SourceTurn], rng: random.Random) -> list[MixedTurn]:
    """One mixed chat: a random merge of ``a`` and ``b`` that keeps each one's order."""
    slots = ["a"] * len(a) + ["b"] * len(b)
    rng.shuffle(slots)
    # the chat starts with one conversation's first turn either way
    ia = ib = 0
    out: list[MixedTurn] = []
    for s in slots:
        t = a[ia] if s == "a" else b[ib]
        if s == "a":
            ia += 1
        else:
            ib += 1
        parent = f"{t.conversation}#{t.index - 1}" if t.index > 0 else None
        out.append(MixedTurn(f"{t.conversation}#{t.index}", t.prompt, t.response, parent))
    return out


def mixed_chats(conversations: dict[str, list[SourceTurn]], *, seed: int = 40) -> list[list[MixedTurn]]:
    """Pairs of conversations, each used once (a shuffled pairing; an odd one out is
    left out), interleaved."""
    rng = random.Random(seed)
    ids = sorted(conversations)
    rng.shuffle(ids)
    return [interleave(conversations[ids[i]], conversations[ids[i + 1]], rng) for i in range(0, len(ids) - 1, 2)]
