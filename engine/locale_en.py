"""The English that retrieval reads questions and events by: stop words, the
suffixes of its crude stemmer, the meals, what a question calls each kind of event,
the words around names, and the words that say which number a number is.

Data only: no function and no import, so that the code which reads these lists
(:mod:`engine.retrieval.words`, :mod:`engine.retrieval.passages`,
:mod:`engine.operators.retrieve`) says nothing in English itself, and another
language is another module with the same names. Each list says why it holds what
it holds; a word added here changes what RETRIEVE keeps.
"""
from __future__ import annotations

#: the language code of libraries that carry their own word lists (bm25s's stop words)
LANGUAGE = "en"

# ------------------------------------------------------------------ words and stems

#: words of three letters or more that say nothing of what a question is about;
#: the last four name every verbalised field ("source: spotify | kind: ...")
STOP_WORDS = frozenset("""the and did for with what which when where who how many much most often last first
    this that was were have has had not you your our are from into about all any time times ever
    source kind title text""".split())

#: the commonest two-letter words: every other one a question says counts ("tv")
SHORT_STOP_WORDS = frozenset("a an as at be by do go in is it me my no of on or so to up we".split())

#: the suffixes the crude stemmer takes off, at most one, the first that fits
STEM_SUFFIXES = ("ing", "ed", "es", "er", "s")

#: letters a stem may end in twice ("see"); any other doubled last letter is halved ("runn")
VOWELS = "aeiou"

#: the meals: a text that says one of them does not say another (a dinner is no lunch)
MEALS: tuple[tuple[str, ...], ...] = (
    ("breakfast", "breakfasts"), ("brunch", "brunches"), ("lunch", "lunches"),
    ("dinner", "dinners", "supper", "suppers"))

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

#: words that say only that someone was there: "meeting Benito Ramírez" is any time
#: with him (the embedder put his coffees far from "meeting"; 3 of 56 were lost)
BEING_WITH = ("meet meeting met see seeing saw seen visit visited hang hanging spend spending spent "
              "together company").split()

# ------------------------------------------------------------------ names

#: the word a writer names themself by: capitalised, and no name
SELF = "I"

#: the word that lists names ("Ana and Leo", "Layla and I"): it joins two names and
#: sits inside none
AND = "and"

#: the word before the people someone was with ("lunch with Jack, Olivia")
WITH = "with"

#: the possessive ending a name loses ("Ana's birthday" names Ana), as a pattern
POSSESSIVE = r"['’]s$"

#: words that only joined a question's names to the rest, left over at its end
#: when the names are taken out ("lunch with Ana and" is "lunch with")
EDGE_WORDS = frozenset("and the a an".split())

#: words that join the capitalised words of one name ("Statue of Liberty"), besides
#: the name particles of :data:`engine.operators.spans.PARTICLES` ("Leonardo da Vinci")
NAME_JOINERS = frozenset({"of"})

# ------------------------------------------------------------------ numbers

#: the words before a number that say which number it is ("on 2008/02/06", "for 42
#: minutes"): a sentence's number goes with them
NUMBER_PREPOSITIONS = ("on", "at", "in", "around", "about", "for", "of", "from", "until", "to")

#: the units after a number ("7.9 km", "12 eur"), which go with it (a whole word:
#: "m" is not the "m" of "meters")
NUMBER_UNITS = ("km", "k", "mi", "miles", "m", "min", "mins", "minutes", "h", "hrs", "hours", "s", "sec",
                "seconds", "kg", "kcal", "bpm", "eur", "usd", "gbp")
