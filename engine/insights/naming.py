"""Names for the discovered topics from the local LLM: one call per topic names the
topic and each of its subtopics at once, from the titles (or summaries) of their most
typical conversations, so that the subtopics' names say what sets each apart.

Key phrases alone name a cluster badly ("response & JavaScript", "PDEng & 1e3452"):
they are what is frequent, not what the conversations are about. The model writes
the names under a GBNF grammar (short capitalised labels, one per line); its text
is parsed, never evaluated. Where there is no planner, or its answer does not parse,
or a name is already taken, the key phrase name stands. Answers are kept by prompt,
so re-clustering unchanged conversations asks the model nothing.
"""
from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from engine.insights.taxonomy import Taxonomy
from engine.protocols import Planner

log = logging.getLogger(__name__)

#: conversations shown per group, and characters per conversation
SHOWN = 5
SHOWN_CHARS = 60
#: the prompt asks for up to four words; the grammar lets a name end in its own time
#: (capped tightly, a name runs its words together: "machinelearning"); one that
#: reaches the cap is rambling and is not taken
MAX_WORDS = 6
#: groups named in one call (a topic has at most taxonomy.MAX_SUBTOPICS)
MAX_GROUPS = 8

PREFIX = """A topic of chat conversations has been split into groups. Name the whole topic, then give each group a short label of one to four words that says what sets it apart from the other groups, in plain English.

Group 1: Bread baking times | Why did my loaf not rise? | Starter feeding schedule
Group 2: Carbonara without cream | Mushroom risotto steps | Fresh pasta dough
Group 3: Vegan protein sources | Meal prep for the week
Topic: Cooking
1: Baking bread
2: Italian dishes
3: Healthy meal planning

Group 1: Fix React state bug | Center a div with grid | Component re-renders twice
Group 2: Django model migrations | REST API with authentication
Topic: Web development
1: React front end
2: Django back end

Group 1: Two days in Kyoto | Cheap flights to Osaka | Visa for Japan
Topic: Trip to Japan

"""
_WORD = r"[a-zA-Z0-9&+#'-]+"
_LABEL = rf"""[A-Z] [a-zA-Z0-9+#'-]* ( " " {_WORD} ){{0,{MAX_WORDS - 1}}}"""
_LINE = re.compile(r"^(Topic|\d+): (.+)$")


@dataclass(frozen=True, slots=True)
class Names:
    topic: str | None
    groups: tuple[str | None, ...]


def grammar(groups: int) -> str:
    """The answer's shape: the topic's name, then one label per group (none for one group)."""
    lines = ['"Topic: " label "\\n"'] + ([f'"{i + 1}: " label "\\n"' for i in range(groups)] if groups > 1 else [])
    return f"root ::= {' '.join(lines)}\nlabel ::= {_LABEL}\n"


def _shown(text: str) -> str:
    text = " ".join(text.replace("|", "/").split())
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS].rsplit(" ", 1)[0] + " …"


def prompt(groups: Sequence[Sequence[str]]) -> str:
    """The prompt for a topic whose groups hold these conversation titles (most typical first)."""
    lines = [f"Group {i + 1}: " + " | ".join(_shown(t) for t in g[:SHOWN]) for i, g in enumerate(groups)]
    return PREFIX + "\n".join(lines) + "\n"


def parse(text: str, groups: int) -> Names:
    """The names in the model's answer; a missing or malformed line gives None."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m and m.group(1) not in found:
            words = m.group(2).split()
            if 0 < len(words) < MAX_WORDS:  # one that reached the cap did not end by itself
                found[m.group(1)] = " ".join(words)
    return Names(found.get("Topic"), tuple(found.get(str(i + 1)) for i in range(groups)))


def cache_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def name_topic(planner: Planner, groups: Sequence[Sequence[str]], *,
               cached: Callable[[str], str | None] = lambda _k: None,
               keep: Callable[[str, str], None] = lambda _k, _v: None) -> Names:
    """The LLM's names for one topic and its groups; ``cached``/``keep`` read and store
    answers by prompt key."""
    groups = list(groups)[:MAX_GROUPS]
    text = prompt(groups)
    key = cache_key(text)
    answer = cached(key)
    if answer is None:
        try:
            warm_up(planner)
            answer = planner.complete(text, grammar=grammar(len(groups)),
                                      max_tokens=12 * (len(groups) + 1))
        except Exception as exc:  # noqa: BLE001 - a name is never worth failing the job for
            log.warning("topic naming: the planner failed (%s); key phrase names stand", exc)
            return Names(None, (None,) * len(groups))
        keep(key, answer)
    return parse(answer, len(groups))


def _typical(members: Sequence[int], vectors, titles: Sequence[str]) -> list[str]:
    """The titles of ``members`` nearest their mean vector first (distinct ones)."""
    import numpy as np

    x = np.asarray([vectors[i] for i in members], dtype=np.float32)
    order = np.argsort(-(x @ x.mean(axis=0)), kind="stable")
    out: list[str] = []
    seen: set[str] = set()
    for j in order:
        t = titles[members[int(j)]].strip()
        if t and t.casefold() not in seen:
            seen.add(t.casefold())
            out.append(t)
        if len(out) == SHOWN:
            break
    return out


def rename(tax: Taxonomy, vectors, titles: Sequence[str], planner: Planner | None, *,
           cached: Callable[[str], str | None] = lambda _k: None,
           keep: Callable[[str, str], None] = lambda _k, _v: None) -> Taxonomy:
    """``tax`` with its clusters named by the LLM where it gave a name not already
    taken (topics among topics, subtopics among topics and subtopics); the key
    phrase names stand elsewhere. ``titles`` are per conversation, as ``vectors``."""
    if planner is None or not tax.topics:
        return tax
    topics = list(tax.topics)
    subtopics = list(tax.subtopics)
    taken: set[str] = set()
    sub_taken: set[str] = set()  # subtopic names are unique too: a rename names one cluster
    for t, topic in enumerate(topics):
        subs = [s for s, c in enumerate(subtopics) if c.parent == t]
        groups = [_typical(subtopics[s].members, vectors, titles) for s in subs] if len(subs) > 1 else \
            [_typical(topic.members, vectors, titles)]
        names = name_topic(planner, groups, cached=cached, keep=keep)
        # a topic named like an earlier one is named by its two largest groups
        two = names.groups[:2]
        both = f"{two[0]} & {two[1]}" if len(two) == 2 and all(two) and two[0].casefold() != two[1].casefold() \
            else None
        name = next((n for n in (names.topic, both) if n and n.casefold() not in taken), topic.name)
        taken.add(name.casefold())
        topics[t] = replace(topic, name=name)
        if len(subs) > 1:
            for s, label in zip(subs, names.groups):
                own = subtopics[s].name
                chosen = next((n for n in (label, own) if n and n.casefold() not in sub_taken | taken),
                              f"{name}: {own}")
                sub_taken.add(chosen.casefold())
                subtopics[s] = replace(subtopics[s], name=chosen)
        else:
            for s in subs:
                subtopics[s] = replace(subtopics[s], name=name)
            sub_taken.add(name.casefold())
    return replace(tax, topics=tuple(topics), subtopics=tuple(subtopics))


def warm_up(planner: Planner) -> None:
    """Evaluate the fixed prefix once, where the planner can keep it."""
    preload = getattr(planner, "preload", None)
    if callable(preload):
        preload(PREFIX)
