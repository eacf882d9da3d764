"""Content words of a query or an event, crudely stemmed: enough to hear "running"
in "Run" and "birthdays" in "Ana's birthday", not a linguist's stemmer.

Used where a decision must rest on the words a text shares with a query (RETRIEVE's
sentence acceptance) and by the classifiers' training data (hard negatives that share
the query's words)."""
from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[a-z]{3,}")
STOP = frozenset("""the and did for with what which when where who how many much most often last first
    this that was were have has had not you your our are from into about all any time times ever
    source kind title text""".split())  # the last four name every verbalised field


def stem(word: str) -> str:
    """A crude stem: suffixes off, a doubled last consonant halved."""
    for suffix in ("ing", "ed", "es", "er", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[:-len(suffix)]
            break
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]
    return word


def stems(text: str) -> set[str]:
    """The stems of ``text``'s words of three letters or more, stop words left out."""
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in STOP}


#: Words of which a text says one where it does not say another: a dinner is no
#: lunch. The meals, as stems.
EXCLUSIVE: tuple[frozenset[str], ...] = tuple(frozenset(stem(w) for w in ws) for ws in (
    ("breakfast", "breakfasts"), ("brunch", "brunches"), ("lunch", "lunches"),
    ("dinner", "dinners", "supper", "suppers")))


def contradicts(query: str, text: str) -> bool:
    """Whether ``text`` says another of the :data:`EXCLUSIVE` words than the one
    ``query`` says, and not that one: "I prepare fish and chips for dinner." for
    "lunch with fish and chips" (the embedder put it at 0.79 of the query)."""
    asked = _exclusive_asked(query)
    if asked is None:
        return False
    said = stems(text)
    return not asked & said and any(ws & said for ws in EXCLUSIVE if ws is not asked)


@lru_cache(maxsize=64)
def _exclusive_asked(query: str) -> frozenset[str] | None:
    """The one :data:`EXCLUSIVE` set ``query`` says a word of, or None: asked once a
    query, not once an event."""
    asked = [ws for ws in EXCLUSIVE if ws & stems(query)]
    return asked[0] if len(asked) == 1 else None


_SHORT_STOP = frozenset("a an as at be by do go in is it me my no of on or so to up we".split())


def said_words(text: str) -> set[str]:
    """The stems of ``text`` (:func:`stems`) and its two-letter words but the
    commonest: "TV episode" says "tv", which a kind of event is called by."""
    return stems(text) | {w for w in re.findall(r"\b[a-z]{2}\b", text.lower()) if w not in _SHORT_STOP}


#: What a question calls each kind of event the importers write, besides the kind's
#: own words, and what one does with it: "played a song" names Spotify's plays as
#: surely as "music stream" does. (nouns, verbs), as words before stemming.
KIND_WORDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "music_stream": (("song", "songs", "track", "tracks", "music", "tune", "tunes"),
                     ("play", "played", "listen", "listened", "stream", "streamed", "heard")),
    "podcast_stream": (("podcast", "podcasts", "episode", "episodes"),
                       ("play", "played", "listen", "listened", "stream", "streamed", "heard")),
    "audiobook_stream": (("audiobook", "audiobooks"), ("play", "played", "listen", "listened", "heard")),
    "episode_stream": (("episode", "episodes", "show", "shows", "series", "tv"),
                       ("watch", "watched", "stream", "streamed", "play", "played", "see", "saw")),
    "movie_stream": (("movie", "movies", "film", "films"),
                     ("watch", "watched", "stream", "streamed", "play", "played", "see", "saw")),
    "chat_conversation": (("conversation", "conversations", "chat", "chats"), ("have", "had", "start", "started")),
    "chat_turn": (("message", "messages", "question", "questions", "prompt", "prompts"),
                  ("ask", "asked", "send", "sent", "write", "wrote")),
    "mail": (("mail", "mails", "email", "emails", "e-mail", "e-mails"),
             ("send", "sent", "get", "got", "receive", "received", "write", "wrote")),
    "purchase": (("purchase", "purchases", "order", "orders"), ("make", "made", "place", "placed")),
    "workout": (("workout", "workouts", "exercise", "exercises"), ("do", "done", "log", "logged")),
    "note": (("note", "notes", "diary", "journal", "entry", "entries"), ("write", "wrote", "written")),
}
