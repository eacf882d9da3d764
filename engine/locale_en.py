"""The English that retrieval reads questions and events by, and EXTRACT the
extractor's answers: stop words, the suffixes of its crude stemmer, the meals, what
a question calls each kind of event, the words around names, the words that say
which number a number is, what a requested key calls an attribute, and the words,
months and currencies an answer is checked by.

Data only: no function and no import, so that the code which reads these lists
(:mod:`engine.retrieval.words`, :mod:`engine.retrieval.sentences`,
:mod:`engine.operators.retrieve`, :mod:`engine.operators.extract`) says nothing in
English itself, and another language is another module with the same names. Each
list says why it holds what it holds; a word added here changes what RETRIEVE keeps
or what EXTRACT answers.
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
#: the name particles of :data:`NAME_PARTICLES` ("Leonardo da Vinci")
NAME_JOINERS = frozenset({"of"})

#: lower-case words inside names (Osteria da Hänel, La Taberna de Sauer), which a
#: name runs on across
NAME_PARTICLES = frozenset("da de di del della der den des do dos das du van von la le y".split())

# ------------------------------------------------------------------ numbers

#: the words before a number that say which number it is ("on 2008/02/06", "for 42
#: minutes"): a sentence's number goes with them
NUMBER_PREPOSITIONS = ("on", "at", "in", "around", "about", "for", "of", "from", "until", "to")

#: the units after a number ("7.9 km", "12 eur"), which go with it (a whole word:
#: "m" is not the "m" of "meters")
NUMBER_UNITS = ("km", "k", "mi", "miles", "m", "min", "mins", "minutes", "h", "hrs", "hours", "s", "sec",
                "seconds", "kg", "kcal", "bpm", "eur", "usd", "gbp")

#: the units a measure is stated in, by what they measure: a day's note that states a
#: happening's measure in one of them records it ("Did 8.5 km in Textor Park")
MEASURE_UNITS: dict[str, tuple[str, ...]] = {
    "distance_km": ("km", "kilometers", "kilometres"),
    "distance_mi": ("mi", "miles"),
    "duration_min": ("min", "mins", "minutes"),
    "energy_kcal": ("kcal",),
    "pace_bpm": ("bpm",)}

# ------------------------------------------------------------------ extraction

#: Requested key -> attributes that usually hold it, best first (EXTRACT reads the
#: attribute instead of asking the model).
KEY_SYNONYMS: dict[str, tuple[str, ...]] = {
    "date": ("start",), "day": ("start",), "when": ("start",), "time": ("start",), "datetime": ("start",),
    "timestamp": ("start",), "start_time": ("start",), "start_date": ("start",), "begin": ("start",),
    "end_time": ("end",), "end_date": ("end",), "until": ("end",),
    "amount": ("total", "amount", "price", "cost", "value"), "price": ("price", "total", "amount", "cost"),
    "cost": ("cost", "total", "amount", "price"), "total": ("total", "amount", "price"),
    "spent": ("total", "amount", "price"), "paid": ("total", "amount", "price"),
    "artist": ("artist", "artist_name", "performer"), "singer": ("artist",), "band": ("artist",),
    "song": ("track", "song", "title"), "track": ("track", "song"), "song_title": ("track",),
    "album": ("album",), "podcast": ("show",), "show": ("show", "series"),
    "name": ("title", "name"), "type": ("kind", "type"), "category": ("category", "kind"),
    "activity": ("activity", "activity_type", "workout_type", "kind"),
    "location": ("location", "place", "city"), "place": ("place", "location"),
    "city": ("city", "location"), "country": ("country",),
    "distance": ("distance_km", "distance", "distance_m"), "subject": ("subject", "title"),
    # what a chat turn or a mail is about: its conversation's title, its subject line
    "topic": ("topic", "conversation_title", "subject"), "about": ("conversation_title", "subject"),
}

#: the extractor's answers to a yes-or-no key
YES = ("true", "yes", "1", "y")
NO = ("false", "no", "0", "n")

#: words a span is cut with at either end ("to Bangkok", "Yaowarat with"); not
#: articles: "The Pantheon" is the name
SPAN_EDGE_WORDS = frozenset("on in at to of for with from by about into onto over under after before during "
                            "and or but".split())

#: the words before a place: a "person" the Segmenter finds after one is the place
#: ("on Strava", "Flight to Pihtipudas")
WHERE_WORDS = frozenset("on in at to near via into around onto".split())

#: the words between people and the place they were at ("Heidelinde Taskinen at
#: Trattoria Heras"), where a span of people runs on past them
AT_A_PLACE = ("at", "in", "near", "on", "from")

#: titles before a name whose full stop ends no sentence ("Dr. Okafor")
TITLES = frozenset("Dr Mr Mrs Ms Mx Prof St Sr Jr".split())

#: pronouns: no one's name ("I really" is no person)
PRONOUNS = frozenset("i me my myself we us our you he him his she her they them their it".split())

#: words that are no value on their own: asked the "place" of "I did hiking on
#: 2019/04/02", the extractor answered "I" 91 times and "did" 26 times over
#: TimelineQA's diary
FUNCTION_WORDS = PRONOUNS | frozenset("""
    a an the this that these those some any and or but if so
    am is are was were be been being do does did done doing have has had having will would can could
    on in at to of for with from by about into onto over under after before during
    """.split())

#: a month's name, whole or short, as a pattern ("jan", "Sept.", "December")
MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
         r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")

#: what stands before or after an amount of money: symbols, codes and words
#: ("€12", "43.99 GBP", "20 euros")
CURRENCY_SYMBOLS = "€$£¥₹"
CURRENCY_WORDS = ("EUR", "USD", "GBP", "CHF", "SEK", "NOK", "DKK", "JPY", "PLN", "CZK", "HUF", "CAD", "AUD", "INR",
                  "CNY", "kr", "zł", "Kč", "euros", "euro", "dollars", "dollar", "pounds")

#: What a requested key says it is about, as parts of words found anywhere in the
#: key ("categor": category, categories): a weekday answers only a key about time,
#: a number inside a date only such a key, a currency or a price only a key about
#: money, a cuisine only one about food or a kind of thing.
DATE_KEY_WORDS = ("date", "day", "month", "year", "week", "time", "when")
MONEY_KEY_WORDS = ("total", "amount", "price", "cost", "spend", "spent", "paid", "pay", "money", "fee", "charge",
                   "bill", "value", "budget", "salary", "income", "expense", "eur", "usd", "gbp", "dollar", "euro",
                   "tip", "refund", "balance")
CURRENCY_KEY_WORDS = (*MONEY_KEY_WORDS, "currenc")
#: a key asking for an identifier (an order, flight, booking or seat number): its value
#: has a digit and is no date ("LH 2034", "14C", "DE05436415"), where asked the flight
#: number of "Your trip to Buenos Aires" the model answered "Buenos Aires"
IDENTIFIER_KEY_WORDS = ("_id", "number", "_no", "seat", "gate", "reference", "tracking", "invoice")
FOOD_KEY_WORDS = ("cuisine", "food", "dish", "meal", "restaurant", "dinner", "lunch", "breakfast", "eat", "cook",
                  "type", "kind", "categor", "style")

# ------------------------------------------------------------------ dates a question leaves open

#: the months by name, whole and short, for reading "the 13th of July" and "aug 16th"
#: (:mod:`engine.temporal`); "may" and "march" are words too, so a day must stand by them
MONTH_NUMBERS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12}

#: the months whose names are words too ("I may run", "march"): read as a month only
#: with a day that says it is one ("the 3rd of May", "on 3 May", "May 3rd")
MONTHS_THAT_ARE_WORDS = frozenset({"may", "march", "mar"})

#: the weekdays by name, Monday first (Python's ``date.weekday()``), for "last Sunday"
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

#: what may follow a day's number ("13th", "1st")
ORDINAL_SUFFIXES = ("st", "nd", "rd", "th")

#: what may stand between a day's number and its month ("the 13th of July")
DAY_MONTH_JOINERS = ("of",)

#: what says a number after a month is a count, not a day ("ran in march 3 times")
TIMES_WORDS = ("times", "time", "x")

#: the article a day may follow ("the 13th of July"), left out where the date is written whole
DAY_ARTICLE = "the"

#: the words before a weekday that name the latest one before today ("last Sunday")
LAST_WEEKDAY = ("last", "this past")

#: a preposition before a date already says how it is meant ("since last Sunday");
#: without one, a date read whole gets ``ON`` ("went there last Sunday" -> "on Sunday, 25 August 2024")
TIME_PREPOSITIONS = frozenset("on since before after until till from by during".split())
ON = "on"
IN = "in"

#: the words before a month alone that say it is a time ("in July", "since March"): a
#: month so said is the latest one up to today; "this July", "last July" are left alone
MONTH_PREPOSITIONS = TIME_PREPOSITIONS | frozenset("in throughout through over".split())

#: the months named relative to today's ("last month"): how many months back
RELATIVE_MONTHS: dict[str, int] = {"this month": 0, "last month": 1, "previous month": 1}

#: the weeks named relative to today's ("last week"), weeks that begin on a Monday: how
#: many weeks back
RELATIVE_WEEKS: dict[str, int] = {"this week": 0, "last week": 1, "previous week": 1, "the week before last": 2}

#: the words before a day that name a week by it: whether the week is the one the day
#: is in, Monday to Sunday ("in the week of 29 May 2023"), or the seven days from it on
#: ("the week starting Wednesday, 7 August")
WEEK_OF: dict[str, bool] = {"week of": True, "week starting": False, "week beginning": False}

#: how a week read whole is written, by its Monday ("in the week of Monday, 19 August
#: 2024"); told "between Monday, 19 August 2024 and Sunday, 25 August 2024", the tuned
#: planner subtracted one day's km from the other's, as for a comparison
WEEK_FORMAT = "the week of {first}"

#: days of the year a question names by their holiday ("before christmas 2023"), as
#: (month, day); read only after a preposition of time (``TIME_PREPOSITIONS``): "for
#: christmas" is what a gift was for, not the day it was bought. An apostrophe may be
#: left out ("new years eve")
HOLIDAYS: dict[str, tuple[int, int]] = {
    "christmas eve": (12, 24), "christmas day": (12, 25), "christmas": (12, 25), "boxing day": (12, 26),
    "new year's eve": (12, 31), "new year's day": (1, 1), "halloween": (10, 31), "valentine's day": (2, 14)}

#: how a date read whole is written back into the question the planner reads
DAY_FORMAT = "{day} {month} {year}"
WEEKDAY_DAY_FORMAT = "{weekday}, {day} {month} {year}"
MONTH_FORMAT = "{month} {year}"
MONTH_TITLES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
                "October", "November", "December")
WEEKDAY_TITLES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
