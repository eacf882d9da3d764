"""The run-time models' memo: what a model computed for an input lately is not
computed again (the embedder's query vectors, the cross-encoders' scores)."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any


def recalled(memo: OrderedDict, limit: int, keys: Sequence[Hashable],
             run: Callable[[list], Sequence[Any]]) -> list[Any]:
    """The value of each of ``keys``: from ``memo`` where it holds one (marked as used
    just now), else from one call of ``run`` with the distinct keys it lacks, in the
    order they first come; those are kept, and ``memo`` is cut to its ``limit`` most
    recently used entries."""
    found: dict = {}
    todo: list = []
    for key in dict.fromkeys(keys):
        if key in memo:
            memo.move_to_end(key)
            found[key] = memo[key]
        else:
            todo.append(key)
    if todo:
        for key, value in zip(todo, run(todo)):
            found[key] = memo[key] = value
    while len(memo) > limit:
        memo.popitem(last=False)
    return [found[key] for key in keys]
