"""CRyCHIc's figures for predicted parents against true ones: accuracy (a turn's
predicted parent equals the true one, a root counting as a parent of its own), and
precision, recall and F1 over parent edges (child -> parent links; roots have none)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping


def parent_metrics(pairs: Iterable[tuple[Mapping[str, str | None], Mapping[str, str | None]]]) -> dict[str, float]:
    """``pairs``: (predicted, true) parent maps, one pair per chat, over the same turns."""
    turns = right = predicted_edges = true_edges = shared = 0
    for predicted, true in pairs:
        for turn, parent in true.items():
            guess = predicted.get(turn)
            turns += 1
            right += guess == parent
            predicted_edges += guess is not None
            true_edges += parent is not None
            shared += guess is not None and guess == parent
    precision = shared / predicted_edges if predicted_edges else 0.0
    recall = shared / true_edges if true_edges else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"turns": turns, "accuracy": right / turns if turns else 0.0, "precision": precision,
            "recall": recall, "f1": f1}


def previous_turn_baseline(order: list[str]) -> dict[str, str | None]:
    """The baseline: every turn follows the one before it."""
    return {t: (order[i - 1] if i else None) for i, t in enumerate(order)}
