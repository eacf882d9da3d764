"""What one conversation is about, from its own text: an extractive summary and the
named things in it, counted. Pure functions over what the models returned; the job
(:mod:`engine.insights.job`) batches the model calls."""
from __future__ import annotations

import re
from collections import Counter

from engine.insights.conversations import Conversation

SUMMARY_CHARS = 240
#: key phrases kept per conversation (the taxonomy picks its keywords among them)
MAX_PHRASES = 40
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
_SPACE = re.compile(r"\s+")
_URL = re.compile(r"https?://\S+")
#: a key phrase is words: letters, digits and the marks inside names (C++, C#, Node.js, R&D,
#: CI/CD, O'Reilly); anything else (=, $, quotes, brackets) is code or markup
_PHRASE = re.compile(r"^[\w][\w .+#&/'-]*$")


def _clip(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, at a sentence end where one is near, else
    at a word boundary."""
    text = _SPACE.sub(" ", _URL.sub("", text)).strip()
    if len(text) <= limit:
        return text
    out = ""
    for sentence in _SENTENCE_END.split(text):
        if len(out) + len(sentence) + 1 > limit:
            break
        out = f"{out} {sentence}".strip()
    if len(out) >= limit // 2:
        return out
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " …"


def summary(conv: Conversation, limit: int = SUMMARY_CHARS) -> str:
    """The conversation's title and the opening of what the user first asked: the
    request is what the conversation is about, the replies elaborate on it."""
    opening = conv.user_text[0] if conv.user_text else (conv.other_text[0] if conv.other_text else "")
    title = _SPACE.sub(" ", conv.title).strip()
    body = _clip(opening, max(40, limit - len(title) - 3))
    if not title:
        return body
    return f"{title}: {body}" if body else title


def count_phrases(found: list[tuple[str, str]], limit: int = MAX_PHRASES, *, foreign: bool = False) -> list[list]:
    """``[[phrase, label, count], ...]`` most frequent first: the spelling seen most
    often names each phrase, compared case-insensitively; an entity label beats
    ``NOUN`` for the same words. With ``foreign`` (a text in another language than
    the key phrase model reads, whose common words it mistakes for names) each entry
    gets a fourth item, 1: the taxonomy trusts such a phrase only where a text the
    model does read has it too."""
    counts: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    labels: dict[str, str] = {}
    for phrase, label in found:
        phrase = _SPACE.sub(" ", phrase).strip(" \t\n\"'`.,:;()[]{}")
        if len(phrase) < 2 or len(phrase) > 60 or not any(c.isalpha() for c in phrase) or not _PHRASE.match(phrase):
            continue
        key = phrase.casefold()
        counts[key] += 1
        spellings.setdefault(key, Counter())[phrase] += 1
        if labels.get(key, "NOUN") == "NOUN":
            labels[key] = label
    ranked = sorted(counts, key=lambda k: (-counts[k], labels[k] == "NOUN", k))[:limit]
    return [[spellings[k].most_common(1)[0][0], labels[k], counts[k]] + ([1] if foreign else []) for k in ranked]
