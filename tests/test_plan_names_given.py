"""A name the question gives and the plan lost goes back into the plan's search,
where the user's data says it is a name (engine.plan.names_given)."""
from __future__ import annotations

from engine.plan import parse_plan, print_plan
from engine.plan.names_given import NameBook, give_names_back

VALUES = ["Trattoria Vellani", "Ilse Brandt <ilse.brandt77@example.org>", "Café Moravia", "The Paper Kites",
          "Osteria da Lorenzi", "Total", "Salon", "Food Last", "Morning Run", "Sent", "Lissabon", "City"]
BOOK = NameBook.of(VALUES, sources=["amazon", "mail"], addresses=["ilse.brandt77@example.org", "no-reply@shop.example"])


def test_names_are_read_from_the_data_in_any_case():
    assert BOOK.in_question("how many times have i eaten at trattoria vellani this year") == ["Trattoria Vellani"]
    assert BOOK.in_question("last time I ate at Osteria da Lorenzi?") == ["Osteria da Lorenzi"]
    assert BOOK.in_question("songs by paper kites in may") == ["Paper Kites"]
    # a name's leading stop words are no part of it: a search for "Paper Kites" finds "The Paper Kites"
    assert BOOK.in_question("how many songs by The Paper Kites") == ["Paper Kites"]


def test_a_person_is_called_by_the_first_name_an_address_spells():
    assert "ilse" in BOOK.people and "brandt" in BOOK.people
    assert BOOK.in_question("what date did i last email ilse") == ["Ilse"]
    assert "reply" not in BOOK.people  # no name of the data is spelled by it


def test_a_plain_word_is_no_name_unless_written_with_a_capital():
    # one-word values are often plain words: a song called "Total", a place called "Salon"
    assert BOOK.in_question("what's my total shopping bill") == []
    assert BOOK.in_question("when was I last at the salon") == []
    assert BOOK.in_question("when was I last at Salon") == ["Salon"]
    assert BOOK.in_question("Total minutes of yoga") == []  # a sentence's first word says nothing
    # two plain words that a song is called are not its name either
    assert BOOK.in_question("how often did I eat French food last year") == []
    assert BOOK.in_question("how many sent mails") == []


def test_capitalised_words_around_a_name_are_part_of_it():
    assert BOOK.in_question("songs I played in Lissabon City") == ["Lissabon City"]
    assert BOOK.in_question("dinner at Cafe Salon Rouge") == ["Cafe Salon Rouge"]


def test_no_source_is_a_name():
    book = NameBook.of(["Amazon", "Amazon Basics Cable"], sources=["amazon"])
    assert book.in_question("besides Amazon, which shop did I order from most") == []


def test_a_lost_name_goes_into_the_only_search():
    plan = parse_plan('APPLY(l=FILTER(l=RETRIEVE(query="restaurant meal"), filter=lambda e: year(e.start) == '
                      '2024), fct=len)')
    given, names = give_names_back(plan, "How many times have I eaten at trattoria vellani in 2024?", BOOK)
    assert names == ["Trattoria Vellani"]
    assert 'RETRIEVE(query="restaurant meal Trattoria Vellani")' in print_plan(given)
    assert "year(e.start) == 2024" in print_plan(given)


def test_a_name_the_plan_says_anywhere_is_not_given_twice():
    for text in ('APPLY(l=RETRIEVE(query="dinner at Trattoria Vellani"), fct=len)',
                 'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="restaurant meal"), attr_names=["restaurant"], '
                 'attr_types=[str]), filter=lambda e: e["restaurant"] == "Trattoria Vellani"), fct=len)',
                 'APPLY(l=RETRIEVE(query="vellani"), fct=len)'):
        plan = parse_plan(text)
        assert give_names_back(plan, "how often did I eat at trattoria vellani", BOOK) == (plan, [])


def test_with_two_searches_nothing_says_which_one_the_name_belongs_to():
    plan = parse_plan('JOIN(l1=RETRIEVE(query="run"), l2=RETRIEVE(query="trip"), '
                      'condition="i1.start > i2.end")')
    assert give_names_back(plan, "my first run after the Lissabon trip", BOOK) == (plan, [])


def test_an_address_spells_a_name_the_ascii_way():
    book = NameBook.of(["Jörg Hänel", "Sam's Apple Watch", "Benito Ramírez", "New Dog Seek", "Support Team"],
                       addresses=["joerg.haenel@example.org", "sam.whitaker@example.org", "benito.ramrez24@example.org",
                                  "news@example.org", "support@example.org"])
    assert book.people == {"jörg", "hänel", "benito", "ramírez"}
