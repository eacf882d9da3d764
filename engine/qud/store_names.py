"""The names the user's store holds (:class:`engine.plan.names_given.NameBook`): the
attribute values written with a capital and the mail addresses, read in one pass
over the store. Reads the store; writes nothing."""
from __future__ import annotations

from engine.plan.names_given import MAIL_ADDRESS, MOST_WORDS, NameBook

#: text attribute values (inside lists too) that start with a capital and are short
#: enough to be a name, or that hold a mail address ("Name <address>" is both)
VALUES_SQL = ("SELECT DISTINCT v FROM (SELECT t.value->>'$' AS v FROM events, json_tree(attributes) t "
              "WHERE attributes IS NOT NULL AND t.type = 'VARCHAR') "
              "WHERE length(v) <= ? AND (regexp_matches(v, '^\\p{Lu}') OR contains(v, '@'))")
SOURCES_SQL = "SELECT DISTINCT source FROM events"
#: the words the titles write in lower case, mail addresses left out ("Italian dinner
#: with Joseph": "dinner" is a plain word, whatever a title that is only "Dinner" says)
PLAIN_SQL = ("SELECT DISTINCT w FROM (SELECT unnest(regexp_extract_all(regexp_replace(title, ?, ' ', 'g'), "
             "'(?:^|[\\s(\\[\"“‘/-])(\\p{Ll}\\p{L}*)', 1)) AS w FROM events WHERE title IS NOT NULL)")
#: the most characters a value is read from: a name of MOST_WORDS words, or an address
LONGEST = 48 * MOST_WORDS


def store_names(con) -> NameBook:
    """The names the store that the DuckDB connection ``con`` reads holds (about a
    second for 40,000 events on 2 cores)."""
    values = [v for (v,) in con.execute(VALUES_SQL, [LONGEST]).fetchall()]
    sources = [s for (s,) in con.execute(SOURCES_SQL).fetchall()]
    addresses = {a for v in values if "@" in v for a in MAIL_ADDRESS.findall(v)}
    plain = [w for (w,) in con.execute(PLAIN_SQL, [MAIL_ADDRESS.pattern]).fetchall()]
    return NameBook.of((v for v in values if v[:1].isupper()), sources, addresses, plain)
