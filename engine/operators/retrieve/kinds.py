"""The kinds of event a query names: "calendar event", "played a song", "ChatGPT
conversation" ask for all of one kind and for no other, whatever the pattern
classifier says; and of a source's kinds, the one whose own word the query says.

Words only (:data:`engine.locale_en.KIND_WORDS`, the kinds' and sources' names):
no model, no store.
"""
from __future__ import annotations

from engine.locale_en import KIND_WORDS
from engine.operators.context import OperatorContext
from engine.operators.retrieve.labels import Label
from engine.plan.rows import Row
from engine.retrieval.words import said_words, stems

_KIND_NOUNS = {k: said_words(" ".join(nouns)) for k, (nouns, _) in KIND_WORDS.items()}


def names_the_kind(query: str, source: str, kind: str) -> bool:
    """The query says every word of the kind, or a word a question calls it by
    (:data:`KIND_WORDS`: "song" for a music stream), and no word but those, the
    source's and what one does with such events: "calendar event", "workout",
    "journal note", "played a song". The classifier called the calendar's events
    partial for "calendar event", and a count of them kept 139 of 437; for "played a
    song" it called Spotify's plays partial, the reranker passed none of them, and
    "How many times did I play a song in May 2022?" had no answer. The source and
    what one does with its events name the kind too: "watched Netflix" (where the
    podcast "Author Weekly", named like a Netflix show, had come along: 352 for 245)."""
    said, words = said_words(query), stems(kind.replace("_", " "))
    nouns, verbs = _KIND_NOUNS.get(kind, set()), said_words(" ".join(KIND_WORDS.get(kind, ((), ()))[1]))
    own = stems(source.replace("_", " "))
    if said & own and said & verbs and said <= verbs | own:
        return True
    if not (words and words <= said) and not (said & nouns):
        return False
    return said <= words | nouns | verbs | own


def _kind_words(kind: str) -> set[str]:
    """The words of ``kind`` and those a question calls it by ("chat" of "chat_conversation")."""
    return stems(kind.replace("_", " ")) | _KIND_NOUNS.get(kind, set())


def _says_a_word_of_the_kind(query: str, kind: str) -> bool:
    """The query says a word of ``kind`` or one a question calls it by."""
    return bool(said_words(query) & _kind_words(kind))


def _half_names_the_kind(query: str, kind: str) -> bool:
    """The query says a word a question calls ``kind`` by, and another such word
    that is not its: "podcast episode" of Netflix's episodes."""
    said, own = said_words(query), _KIND_NOUNS.get(kind, set())
    return bool(said & own) and any(said & (n - own) for n in _KIND_NOUNS.values())


def with_kinds_named(query: str, groups: list[tuple[str, str, int]], labels: list[Label]) -> list[Label]:
    """``labels`` of the groups, with the kind a query names in full
    (:func:`names_the_kind`) relevant whatever the classifier said, as a query that
    says a kind of event and nothing more asks for all of it; a kind the classifier
    calls relevant whole beside a kind the query names is judged event by event
    instead (for "watched a TV episode" the classifier called Spotify's song plays
    relevant, and at a million events last month's 74 episodes were counted as
    1,741; for "watching TV" it kept the podcasts whole: 352 for 245), as a concert in
    the calendar may still be "music"; and irrelevant:

    * a kind the query says only part of ("podcast episode": not Netflix's episodes);
    * another source's kinds, where it names the kind's source too: for "ChatGPT
      conversation" a calendar's "Just chatting" evenings came within the embedder's
      reach of the query, and 2023's 192 conversations were counted as 233;
    * the other kinds of the source of the kind it names, where it says no word of
      theirs: "listened to a song" is not about Spotify's podcasts, which the
      classifier called relevant (a count of May's songs came out 333, not 326);
      "chat" is about a chat log's conversations as much as its turns."""
    named = [names_the_kind(query, s, k) for s, k, _ in groups]
    sourced = {s for (s, _, _), n in zip(groups, named) if n and stems(s.replace("_", " ")) & said_words(query)}
    naming = {s for (s, _, _), n in zip(groups, named) if n}
    out = []
    for (s, k, _), label, n in zip(groups, labels, named):
        if n:
            label = Label.KIND_NAMED
        elif ((sourced and s not in sourced) or (s in naming and not _says_a_word_of_the_kind(query, k))
              or (any(named) and _half_names_the_kind(query, k))):
            label = Label.OTHER_KIND_NAMED
        elif naming and label is Label.RELEVANT:
            label = Label.ANOTHER_KIND_NAMED
        out.append(label)
    return out


def only_the_kinds_named(rows: list[Row], named: set[tuple[str, str]], ctx: OperatorContext) -> list[Row]:
    """``rows`` of the kinds ``named`` (each a (source, kind) whose group the query
    names in full, :attr:`Label.KIND_NAMED`), and of the other kinds only those whose
    title or text says the kind by a word of its own or one a question calls it by: a
    query that says a kind of event and nothing more asks for that kind. For "podcast
    episode" the reranker passed 129 "Team weekly" calendar entries ("Weekly sync:
    status, blockers, plans"), and 315 podcast plays were counted as 444; a diary
    note of "a podcast episode about sleep", a calendar entry "Movie night: TV series
    marathon" for "watched a TV episode" still say it. The named kinds' sources keep
    their other kinds (:func:`of_the_kind_named` decides between siblings: "chat" is
    about a chat log's turns as much as its conversations). No kind named: all stay."""
    if not named:
        return rows
    words = set().union(*(_kind_words(k) for _, k in named))
    sources = {s for s, _ in named}
    kept = [r for r in rows if (r.get("source") or "") in sources
            or said_words(f"{r.get('title') or ''} {r.get('text') or ''}") & words]
    if len(kept) < len(rows):
        ctx.note(f"kept the kinds the query names: dropped {len(rows) - len(kept)} events of other kinds "
                 "that do not say them")
    return kept


def of_the_kind_named(query: str, rows: list[Row], ctx: OperatorContext) -> list[Row]:
    """``rows`` without the other kinds of a source when the query names one of its
    kinds by a word the others lack: for "ChatGPT conversation" the conversations
    and not their 754 turns (a count of conversations came out 920, not 166), for
    "podcast episode" the podcast plays and not the songs. Kinds the query names
    none of, or several of, stay."""
    said = stems(query)
    kinds: dict[str, set[str]] = {}
    for r in rows:
        kinds.setdefault(r.get("source") or "", set()).add(r.get("kind") or "")
    dropped: set[tuple[str, str]] = set()
    for source, present in kinds.items():
        words = {k: stems(k.replace("_", " ")) for k in present}
        named = [k for k in present if (words[k] - set().union(*(words[o] for o in present if o != k))) & said]
        if len(present) > 1 and len(named) == 1:
            dropped |= {(source, k) for k in present if k != named[0]}
    if not dropped:
        return rows
    kept = [r for r in rows if (r.get("source") or "", r.get("kind") or "") not in dropped]
    ctx.note(f"kept the kind of event the query names: dropped {len(rows) - len(kept)} "
             + ", ".join(sorted(f"{s} {k}" for s, k in dropped)))
    return kept
