"""What EXTRACT makes of the extractor's answers: whole names, and categories the text names."""
from __future__ import annotations

import re
from datetime import datetime

import pytest

from engine.execute import execute
from engine.operators import Models
from engine.operators.categories import named_category
from engine.operators.spans import whole_name
from tests.test_operators import BERLIN, TODAY, FakeExtractor, add, ev, store  # noqa: F401 (fixture)


@pytest.mark.parametrize("answer, text, expected", [
    # a word short
    ("Osteria da", "Calendar event: Lunch: Osteria da Hänel on Thursday 26 January 2023", "Osteria da Hänel"),
    ("Taberna de", "the Spanish dinner at La Taberna de Sauer. Next time I'm paying!", "La Taberna de Sauer"),
    ("Τσαπραλής Banh", "Lunch at Τσαπραλής Banh Mi (Vietnamese) with Gabriele", "Τσαπραλής Banh Mi"),
    ("Claudius", "Ran 5 km with Claudius Reising and Jörg Böhm", "Claudius Reising"),
    ("Pantheon", "During my trip to Rome, Italy, I visited The Pantheon on 1996/07", "The Pantheon"),
    ("Hanna and", "Played Quis Fever by Hanna and the Suns (Lonely Ruby) for 3 min", "Hanna and the Suns"),
    ("Statue of", "We saw the Statue of Liberty from the ferry.", "Statue of Liberty"),
    ("Bergström &", "Had dumplings at Bergström & Sons with Marie.", "Bergström & Sons"),
    ("Bottaro s.r.l", "Receipt from Bottaro s.r.l.: 1 × notebook", "Bottaro s.r.l."),
    # a company's legal form, and a product's model number
    ("Church of St.", "went to Church of St. Aurelia with Carmelo", "Church of St. Aurelia"),  # an abbreviation
    ("Church of", "Spent the morning at Church of St. Marcelino while in Pöytyä", "Church of St. Marcelino"),
    ("Bohnbach AG", "Sold by Bohnbach AG & Co. OHG.", "Bohnbach AG & Co. OHG"),
    ("Förster Eckbauer", "Call with Giorgio (Förster Eckbauer GmbH & Co. KG) on Tuesday", "Förster Eckbauer GmbH & Co. KG"),
    ("İnönü Şti", "Order confirmation: Est lamp. Sold by İnönü Şti..", "İnönü Şti."),
    ("Urban Beneš", "Bought Blue One tripod from Urban Beneš k.s. for PLN 15.96.", "Urban Beneš k.s."),
    ("Soffici e", "Bought Falling Eco mug from Soffici e figli for CHF 526.00.", "Soffici e figli"),
    ("Soni", "Bought Grabara pillow from Soni and Sons for 17.00 SEK.", "Soni and Sons"),
    ("Laine S.A.R.L.", "Seller: Laine S.A.R.L.. Amount charged: 2997 zł.", "Laine S.A.R.L."),
    ("Beatae Pro drone", "Your order of Beatae Pro drone 696 has shipped.", "Beatae Pro drone 696"),
    ("Jeppesen Smart pillow", "Bought Jeppesen Smart pillow 554 from Pešková.", "Jeppesen Smart pillow 554"),
    ("Grabara pillow", "Bought Grabara pillow 2 weeks ago", "Grabara pillow"),  # a count, not a model
    ("Ana", "Ran with Ana as she said", "Ana"),  # no legal form in lower case
    # a kind of place "of" a name: cut before the "of", or started after it
    ("National Museum", "Sightseeing on Tue: National Museum of Quel, with Guy.", "National Museum of Quel"),
    ("Isle", "Trip to Durg with Jonathan Wohlgemut, Isle of Man.", "Isle of Man"),
    ("St.", "Visited Church of St. Emilia in New George.", "Church of St. Emilia"),
    ("Quel", "Visited the National Museum of Quel today.", "National Museum of Quel"),
    ("Ana", "Trip with Ana of Lisbon", "Ana"),  # no kind of place: no "of" crossed
    ("Museum", "a Museum of the City", "Museum"),  # no name after the "of"
    # a company whose name starts with a particle or a lower-case word; a count after a colon
    ("da Cunha", "Receipt from da Cunha Ltda.: 1 × Malewicz router, €29.02.", "da Cunha Ltda."),
    ("auch Schlauchin Hornich e.G", "Sold by auch Schlauchin Hornich e.G..", "auch Schlauchin Hornich e.G."),
    ("Luukkonen ry: 1", "Receipt from Luukkonen ry: 1 × Glass watch, 3.00 EUR.", "Luukkonen ry"),
    ("Platform: 9", "Train leaves at Platform: 9", "Platform: 9"),  # one word before the colon: a field
    ("Sweet helmet has", "Your order of Sweet helmet has shipped.", "Sweet helmet"),
    ("dumplings is amazing.", "I heard their dumplings is amazing.", "dumplings is amazing"),
    ("Cąkała – Little", "Cąkała – Little Silver. Streamed for 2 min 25 s on web player.", "Cąkała"),  # two fields
    # a bullet opens a sentence: "Met" is no name
    ("Colin at", "- Quiet day.\n- Met Colin at Jade Garden Houghton.", "Colin"),
    ("City", "Mail on E-ticket – Mexico City: Hi Oliver", "Mexico City"),
    # a word long, or the punctuation after it
    ("Hänel for", "# 2023-05-07\n\nOsteria da Hänel for dinner, Antonietta came along.", "Osteria da Hänel"),
    ("Warmer with", "Quick Italian dinner at Ristorante Warmer with Trudi and Aurora.", "Ristorante Warmer"),
    ("Sushi Perez,", "Reservation confirmed: Sushi Perez, Wednesday, 21 June at 13:13", "Sushi Perez"),
    ("Machado.", "Your order has shipped. Seller: Machado. Amount charged: 125,00 £.", "Machado"),
    ("Smith-Ingram)", "Call with Emilia Ståhl (Smith-Ingram) on Saturday 28 May.", "Smith-Ingram"),
    ("Rome,", "I ate Japanese food at Mozao on 1996/07/02 when I was in Rome, Italy.", "Rome"),
    # left as they are
    ("Gillian", "Met Gillian at Bangkok Kitchen. We had Thai.", "Gillian"),  # "Met" opens the sentence
    ("Dominic", "Italian Dinner With Dominic And Gillian", "Dominic"),  # a title in capitals
    ("Bridges desk lamp", "Bought Bridges desk lamp for 87.99 GBP", "Bridges desk lamp"),
    ("CHF 496.00", "Bought a backpack from Lévy for CHF 496.00.", "CHF 496.00"),
    ("Canyon River", "Watched Honderd Lights of Canyon River on Tuesday.", "Canyon River"),  # "of" joins two
    ("italian", "Italian dinner at Ristorante Warmer", "italian"),  # the model's own words
    ("Japanese", "I ate Japanese food at Mozao", "Japanese"),
    ("Sunday", "Dinner @ Osteria da Hänel on Sunday 05 February 2023", "Sunday"),
    ("Ana", "notes: ana garcia came by", "Ana"),  # not in the text as written
    ("Lunch One Two", "Lunch One Two Three Four Five Six Seven Eight", "Lunch One Two"),  # no name is 8 words
    (None, "anything", None),
])
def test_whole_name(answer, text, expected):
    assert whole_name(answer, text) == expected


def test_extract_returns_the_whole_name_the_model_cut_short(store):
    t = datetime(2023, 1, 26, 12, tzinfo=BERLIN)
    add(store, [ev("journal", "note", t, 60, "Lunch", "Lunch at Osteria da Hänel with Jeremy."),
                ev("journal", "note", t.replace(day=27), 60, "Dinner", "Dinner at La Taberna de Sauer, great.")])
    # the model stops at the particle, as the real one did on the demo persona
    extractor = FakeExtractor(lambda key, text: re.search(r"at (\w+(?: \w+)? d[ae]) ", text).group(1))
    result = execute('EXTRACT(l=RETRIEVE(query="lunch dinner"), attr_names=["restaurant"], attr_types=[str])', store,
                     Models(extractor=extractor), today=TODAY)
    assert sorted(r.get("restaurant") for r in result.rows) == ["La Taberna de Sauer", "Osteria da Hänel"]


@pytest.mark.parametrize("answer, text, expected", [
    ("monday", "Call with Jean Srinivas (Supermercados del Norte S.L.) on Thu.", "thursday"),
    ("monday", "Reservation confirmed: The Sonne Table, Wałcz. Table for 2 on Tue. Guest: Anny Hornig.", "tuesday"),
    ("pln", "Amount charged: 701,71 CHF.", "chf"),
    ("sek", "Amount charged: 191,70 zł.", "pln"),
    ("italian", "Argentinian dinner with Francesca Rosell at Jespersen & Sons, Poznań.", "argentinian"),
    # what the text supports stays
    ("tuesday", "Watched it on Tue.", "tuesday"),
    ("italian", "Lunch with Jonáš at Pojazd House — we had risotto.", "italian"),  # inferred: no other named
    ("italian", "Weekly football at Lorch Park.", "italian"),  # nothing named: left to the caller
    ("sek", "Bought an umbrella for kr 38.00.", "sek"),  # kr is several currencies
    ("monday", "Flight on Tue, back on Sat.", "monday"),  # two named: no telling which
    ("Osteria da Hänel", "Italian dinner at Osteria da Hänel", "Osteria da Hänel"),  # no category
    (None, "anything", None),
])
def test_named_category(answer, text, expected):
    assert named_category(answer, text) == expected


@pytest.mark.parametrize("answer, text, attr, expected", [
    # asked for a cuisine, weekday or currency, an answer outside the vocabulary is the one the text names
    ("football", "Football at Lorch Park. | Dinner at Ristorante Warmer (Italian) with Dominic.", "cuisine", "italian"),
    ("Tomorrow", "Call with Jean on Thu.", "weekday", "thursday"),
    ("street food", "I ate street food at Mozao.", "cuisine", "street food"),  # none named: as it was
    ("football", "Football, then Italian and Greek food.", "cuisine", "football"),  # two named: no telling
    ("Lorch Park", "Football at Lorch Park, Italian dinner after.", "place", "Lorch Park"),  # not a category key
    # an answer of another vocabulary is the one of the asked vocabulary the text names, or none
    ("usd", "Had risotto at Brasserie Kjeldsen with Elena Roger. Paid 1769 $.", "cuisine", None),
    ("eur", "Korean dinner at Trattoria Zorrilla. Paid €6.", "cuisine", "korean"),
    ("monday", "Paid 20 € on Mon.", "currency", "eur"),
    # a symbol several currencies share is one of them
    ("pln", "Your order of a Quaerat X2 mouse has shipped. Amount charged: 130,82 kr.", "currency", "sek"),
    ("pln", "Receipt: 1 x Redi speaker, kr 75.17.", "currency", "sek"),
    ("nok", "Receipt: 1 x Redi speaker, kr 75.17.", "currency", "nok"),
    ("eur", "Bought a lamp for 18.99 $.", "currency", "usd"),
    ("brl", "Paid R$ 40 for lunch.", "currency", "brl"),
    ("pln", "Paid 40 for lunch.", "currency", "pln"),  # nothing written: as it was
])
def test_a_category_key_takes_the_one_member_the_text_names(answer, text, attr, expected):
    assert named_category(answer, text, attr) == expected


def test_the_name_of_a_field_is_no_value():
    from engine.operators.extract import answered
    text = "source: journal | kind: note | title: 2005-01-14 | text: I did hiking on 2005/01/14."
    assert answered("text", text, "place") is None and answered("Title", text, "place") is None
    assert answered("hiking", text, "activity") == "hiking"


@pytest.mark.parametrize("answer", ["I", "did", "i did", "On the", "the"])
def test_function_words_alone_are_no_value(answer):
    from engine.operators.extract import answered
    text = "source: journal | kind: note | title: 2019-04-02 | text: I did hiking on 2019/04/02."
    assert answered(answer, text, "place") is None


@pytest.mark.parametrize("answer", ["The Pantheon", "on 2019/04/02", "I Ching", "4", "The Who"])
def test_values_with_a_word_or_number_of_their_own_stay(answer):
    from engine.operators.extract import answered
    assert answered(answer, "text: We saw The Who play at The Pantheon; I Ching on 2019/04/02, 4 hours", "x") \
        is not None


@pytest.mark.parametrize("answer, expected", [
    ("to Bangkok", "Bangkok"), ("hiking on", "hiking"), ("Yaowarat with", "Yaowarat"),
    ("The Pantheon", "The Pantheon"), ("Statue of Liberty", "Statue of Liberty"), ("on", None),
])
def test_a_span_loses_the_preposition_it_was_cut_with(answer, expected):
    from engine.operators.extract import answered
    text = ("text: I did hiking on 2019/04/02. On 1999/07/11 Ana and I went to Bangkok, Thailand. "
            "I ate Indian food at Yaowarat with Ana. I visited The Pantheon and the Statue of Liberty.")
    assert answered(answer, text, "place") == expected


def test_a_span_that_runs_into_the_next_field_keeps_its_words():
    from engine.operators.extract import answered
    text = "source: spotify | kind: music_stream | title: The Stone Joness – Worry | text: Listened to Worry"
    assert answered("Worry |", text) == "Worry"
    assert answered("Face | text", text) is None and answered(" | ", text) is None


@pytest.mark.parametrize("answer, text, expected", [
    ("Emily,", "Football this evening with Emily, Susanne, Flora, Patrick, Wayne and Vincent tonight.",
     "Emily, Susanne, Flora, Patrick, Wayne and Vincent"),
    (", Patrick Bell, Wayne Atkins", "Players: Emily Murray, Susanne Delannoy, Patrick Bell, Wayne Atkins.",
     "Emily Murray, Susanne Delannoy, Patrick Bell, Wayne Atkins"),
    ("Lisandro", "Beverley, Lisandro and Eutimio and I went to Tratto.", "Beverley, Lisandro and Eutimio"),
    # the first name of the first person, cut off after a colon, like the others have theirs
    ("Murray, Susanne Delannoy", "Players: Emily Murray, Susanne Delannoy, Patrick Bell, Wayne Atkins.",
     "Emily Murray, Susanne Delannoy, Patrick Bell, Wayne Atkins"),
    ("Kim", "With Kim, Ana Lopez, Leo Park.", "Kim, Ana Lopez, Leo Park"),  # no name before it
    ("Murray, Susanne Delannoy, Patrick Bell", "Players: Emily Murray, Susanne Delannoy, Patrick Bell",
     "Emily Murray, Susanne Delannoy, Patrick Bell"),  # the answer a list already
    # two first names or two full names and a comma are people
    ("Layla", "I spent 20 talking to Everly, Layla on various topics.", "Everly, Layla"),
    ("Sarah", "I spent 24 talking to Sarah, Elizabeth on various topics.", "Sarah, Elizabeth"),
    ("Ana Ruiz", "Lunch with Ana Ruiz, Tom Hale at noon.", "Ana Ruiz, Tom Hale"),
    # one name, or a name and a place: as it was
    ("Maria", "Dinner with Maria, then home.", "Maria"),
    ("Berta Fagiani", "Trip to Pontevedra with Berta Fagiani, Thailand.", "Berta Fagiani"),
    ("Nicholas", "Coffee with Nicholas, Monday was long.", "Nicholas"),
])
def test_who_was_there_is_the_whole_list_of_names(answer, text, expected):
    from engine.operators.extract import answered
    assert answered(answer, text, "people") == expected


def test_who_was_there_is_a_name_or_no_one():
    from engine.operators.extract import answered
    text = "Run workout on Strava: 7.86 km in 35 min, average heart rate 138 bpm."
    assert answered("heart", text, "people") is None and answered("a 9.7", text, "companion") is None
    assert answered("heart", text, "organ") == "heart"  # other keys as they were


@pytest.mark.parametrize("answer, text, expected", [
    ("Jade Canali. Paid", "Had dim sum at The Blod Table with Jade Canali. Paid 176,00 kr.", "Jade Canali"),
    ("Heidelinde Taskinen at Trattoria Heras",
     "Lunch with Heidelinde Taskinen at Trattoria Heras, West Karen.", "Heidelinde Taskinen"),
    ("Flora and Vincent picked", "Flora and Vincent picked me up.", "Flora and Vincent"),
    ("Larsson loved", "We saw Frapper Gardens. Larsson loved it.", "Larsson"),
    ("J. Smith", "Coffee with J. Smith.", "J. Smith"),  # an initial
    ("Dr. Okafor", "Check-up with Dr. Okafor at the clinic.", "Dr. Okafor"),  # a title
])
def test_who_was_there_stops_where_the_people_end(answer, text, expected):
    from engine.operators.extract import answered
    assert answered(answer, text, "with") == expected


def test_other_keys_keep_the_words_after_a_name():
    from engine.operators.extract import answered
    text = "Heidelinde Taskinen at Trattoria Heras"
    assert answered(text, f"Talk: {text}.", "title") == text


def test_a_list_is_made_whole_only_for_keys_that_ask_who():
    from engine.operators.extract import answered
    text = "Ended up at Thai Orchid with Dorothy, Neil and Michael for dinner."
    assert answered("Dorothy", text, "companion") == "Dorothy, Neil and Michael"
    assert answered("Dorothy", text, "with whom") == "Dorothy, Neil and Michael"
    assert answered("Dorothy", text, "restaurant") == "Dorothy"


def test_of_a_joined_rows_answers_one_of_the_vocabulary_the_key_asks_for_wins():
    from engine.operators.extract.asking import ask_extractor
    from engine.operators.retrieve import MERGED_TEXTS
    from engine.plan.rows import Row

    class PerText:
        def extract(self, items):
            return ["football" if "Football" in text else "italian" for text, _ in items]

    text = MERGED_TEXTS.join(["Football at Lorch Park.", "Dinner at Ristorante Warmer (Italian) with Dominic."])
    row = Row({"source": "calendar", "kind": "calendar_event", "title": "Football", "text": text}, ["a", "b"])
    assert ask_extractor(PerText(), "cuisine", [row]) == ["italian"]
    # no vocabulary: the first answer written in its text
    assert ask_extractor(PerText(), "what", [row]) == ["football"]


def test_a_category_the_text_does_not_name_is_kept_only_where_the_model_was_sure():
    from engine.operators.extract import GUESS_LOGPROB
    from engine.operators.extract.asking import ask_extractor
    from engine.plan.rows import Row

    class Scored:
        def __init__(self, logprob):
            self.logprob = logprob

        def extract(self, items):
            raise AssertionError("the scored answers are used")

        def extract_scored(self, items):
            return [("italian", self.logprob) for _ in items]

    rows = [Row({"source": "netflix", "kind": "episode_stream", "title": "Before Kitchen: Season 1",
                 "text": "Watched Before Kitchen on Netflix."}, ["n"]),
            Row({"source": "calendar", "kind": "calendar_event", "title": "Italian dinner with Ana",
                 "text": "Calendar event: Italian dinner with Ana"}, ["c"]),
            Row({"source": "journal", "kind": "note", "title": "Note", "text": "We had risotto."}, ["j"])]
    unsure, sure = Scored(GUESS_LOGPROB - 0.3), Scored(GUESS_LOGPROB + 0.3)
    # a guess is dropped; what the text names stays, however unsure the model was
    assert ask_extractor(unsure, "cuisine", rows) == [None, "italian", None]
    assert ask_extractor(sure, "cuisine", rows) == ["italian", "italian", "italian"]  # inferred, and sure of it
    # asked for no vocabulary, an unsure member of one the text does not name is a guess too
    assert ask_extractor(unsure, "dish", rows) == [None, "italian", None]
    assert ask_extractor(sure, "dish", rows) == ["italian", "italian", "italian"]


def test_an_unsure_span_is_no_guess():
    from engine.operators.extract import GUESS_LOGPROB
    from engine.operators.extract.asking import ask_extractor
    from engine.plan.rows import Row

    class Scored:
        def extract_scored(self, items):
            return [("strawberries", GUESS_LOGPROB - 1) for _ in items]

    row = Row({"source": "journal", "kind": "note", "title": "Note",
               "text": "I went grocery shopping. I bought some strawberries and tea."}, ["j"])
    assert ask_extractor(Scored(), "fruit", [row]) == ["strawberries"]


@pytest.mark.parametrize("answer", ["", " | ", None])
def test_no_answer_to_a_category_key_is_the_one_member_the_text_names(answer):
    from engine.operators.extract import answered
    assert answered(answer, "Malaysian dinner with Eric at The Northern Table.", "kind of food") == "malaysian"
    assert answered(answer, "Malaysian and Thai dishes at the fair.", "kind of food") is None  # two: no telling
    assert answered(answer, "Dinner with Eric.", "cuisine") is None
    assert answered(answer, "Malaysian dinner with Eric.", "restaurant") is None  # no vocabulary asked for


@pytest.mark.parametrize("answer", [None, "", "japanese"])
def test_the_food_of_a_text_that_says_cuisine_food_is_that_food(answer):
    from engine.operators.extract import answered
    text = "I ate Japanese food at Moolchand with Elizabeth on 1999/04/26 when I was in New Delhi, India."
    assert answered(answer, text, "food") == "Japanese food"
    assert answered(answer, text, "dish") == "Japanese food"
    # the kind of food is the cuisine, and other keys get nothing of it
    assert answered("japanese", text, "cuisine") == "japanese"
    assert answered(answer, text, "restaurant") == (None if not answer else "japanese")


def test_a_dish_the_model_found_stays_beside_cuisine_food():
    from engine.operators.extract import answered
    assert answered("sushi", "I ate Japanese food: sushi at Mozao.", "food") == "sushi"
    # two cuisines' food: no telling which, the model's answer stays
    assert answered("", "I ate Thai food and Indian food.", "food") is None


class _Entities:
    """A segmenter that reports the entities it was given, as spaCy's small English
    model did for these texts (its mistakes included)."""

    def __init__(self, found: dict[str, list[tuple[str, str]]]):
        self.found = found
        self.asked: list[str] = []

    def entities(self, text):
        self.asked.append(text)
        return next((ents for part, ents in self.found.items() if part in text), [])


@pytest.mark.parametrize("text, entities, expected", [
    ("Tried a new recipe on Monday: chowder, for Mathias Lundblad and me.",
     [("Monday", "DATE"), ("Mathias Lundblad", "PERSON")], "Mathias Lundblad"),
    ("Football this evening with Emily, Susanne, Flora and Vincent.", [("Emily", "PERSON")],
     "Emily, Susanne, Flora and Vincent"),  # made the whole list
    ("Flora and I caught up over coffee.", [("Flora", "PERSON")], "Flora"),  # a name that opens the sentence
    ("Seoul Kitchen Watkins for dinner, Hannah and Emily came along.",
     [("Kitchen Watkins", "PERSON"), ("Hannah", "PERSON")], "Hannah and Emily"),  # part of a longer name: not it
    # not people: a label, a title in quotes, an owner, places after a word for where
    ("Table for 2. Guest: Filip Montenegro", [("Guest", "PERSON"), ("Filip Montenegro", "PERSON")],
     "Filip Montenegro"),
    ('Run workout on Strava "Morning Run": 7.92 km.', [("Morning Run", "PERSON"), ("Strava", "PERSON")], None),
    ("Running workout: 59 min; recorded by Oliver’s Apple Watch.", [("Oliver’s Apple Watch", "PERSON")], None),
    ("Flight to Pihtipudas, Togo on Tue.", [("Pihtipudas", "PERSON"), ("Togo", "PERSON")], None),
    ("Lunch with Anna at noon.", [("Anna", "ORG")], None),  # no PERSON
])
def test_no_answer_to_who_is_the_people_the_segmenter_names(text, entities, expected):
    from engine.operators.extract import people_named
    seg = _Entities({text: entities})
    assert people_named(f"source: journal | kind: note | text: {text}", "companion", seg) == expected
    assert people_named(text, "restaurant", seg) is None  # only keys that ask who
    assert people_named(text, "companion", None) is None  # no segmenter, no people


def test_a_title_names_no_one_the_segmenter_is_asked_about():
    from engine.operators.extract import people_named
    seg = _Entities({"Got my run": [("Morning Run", "PERSON")]})
    # a run merged with a diary day: the run's title heads the day's text
    text = "source: journal | kind: note | title: Morning Run | text: # 2023-02-25\n\nGot my run in at Day Park."
    assert people_named(text, "people", seg) is None
    assert seg.asked == ["# 2023-02-25\n\nGot my run in at Day Park."]


def test_the_segmenter_reads_only_texts_that_could_name_someone():
    from engine.operators.extract import people_named
    seg = _Entities({})
    assert people_named("I had breakfast. I ate pancakes.", "people", seg) is None
    assert people_named("# 2023-05-30\n\n- Went for a run.", "people", seg) is None
    assert seg.asked == []


def test_extract_asks_the_segmenter_who_where_the_model_answered_nobody(store):
    t = datetime(2023, 1, 26, 12, tzinfo=BERLIN)
    add(store, [ev("journal", "note", t, 60, "Recipe", "Tried a new recipe: chowder, for Mathias Lundblad and me."),
                ev("journal", "note", t.replace(day=27), 60, "Lunch", "Lunch with Ana Ruiz, Tom Hale at noon.")])
    extractor = FakeExtractor(lambda key, text: "a new" if "recipe" in text else "Ana Ruiz")
    seg = _Entities({"Mathias": [("Mathias Lundblad", "PERSON")], "Ana Ruiz": [("Tom Hale", "PERSON")]})
    result = execute('EXTRACT(l=RETRIEVE(query="recipe lunch"), attr_names=["people"], attr_types=[str])', store,
                     Models(extractor=extractor, segmenter=seg), today=TODAY)
    assert sorted(r.get("people") for r in result.rows) == ["Ana Ruiz, Tom Hale", "Mathias Lundblad"]
    assert len(seg.asked) == 1  # only where the model answered nobody


def test_who_before_a_list_is_the_names_it_ends_in():
    from engine.operators.extract import answered
    text = "Seoul Kitchen Watkins for dinner, Hannah and Emily came along."
    assert answered("Emily", text, "people") == "Hannah and Emily"
    assert answered("Emily", "Football with Ana de Souza, Emily and Flora.", "people") == "Ana de Souza, Emily and Flora"


def test_a_pronoun_is_nobody():
    from engine.operators.extract import answered
    assert answered("I caught", "Nicholas and I caught up over coffee.", "companion") is None


def test_a_title_that_is_only_a_date_is_not_shown_to_the_extractor_asked_for_a_number(store):
    t = datetime(1996, 2, 16, tzinfo=BERLIN)
    add(store, [ev("journal", "note", t, 24 * 60, "1996-02-16", "I spent 45 minutes on news today."),
                ev("journal", "note", t.replace(day=17), 24 * 60, "News", "I spent 33 minutes on news today.")])
    seen: list[str] = []

    def answer(key, text):
        seen.append(text)
        # as the model did: asked for a duration, it copied the date in the title
        return "1996-02-16 |" if "title: 1996" in text else text.split("spent ")[1].split(" on")[0]
    result = execute('EXTRACT(l=RETRIEVE(query="news"), attr_names=["duration"], attr_types=[float])', store,
                     Models(extractor=FakeExtractor(answer)), today=TODAY)
    assert sorted(r.get("duration") for r in result.rows) == [33.0, 45.0]
    assert any("title: News" in s for s in seen)  # a title that says something stays
    seen.clear()  # ... and for a key that is no number, the date too: the change is kept to where it was wrong
    execute('EXTRACT(l=RETRIEVE(query="news"), attr_names=["topic"], attr_types=[str])', store,
            Models(extractor=FakeExtractor(answer)), today=TODAY)
    assert any("title: 1996-02-16" in s for s in seen)
