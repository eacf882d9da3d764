"""A name the question gives that the plan lost, given back to the plan's search.

The tuned planner sometimes searches for the kind of event and drops the name that
says which of them: "How many times have I eaten at Pizzeria Niemeier this year?"
was planned as ``RETRIEVE("restaurant meal")`` and counted every meal out (152, not
23); "what date did i last email hasan" searched for mails. Whether a run of the
question's words is a name is decided by the user's own data, not by the wording:
it is a name when it is one of the names the store's attribute values hold
(:class:`NameBook`: a restaurant, a person, an artist, a city, a show), written in
any case. Such a name is given back when no string of the plan (a query, a
constant) says any of its words, the name is no source's or day's name, and the
plan has exactly one RETRIEVE: the name is added to that query as the data writes
it, and RETRIEVE keeps to the events that name it
(:mod:`engine.operators.retrieve.names`). With two searches nothing says which one
the name belongs to, and the plan stays as it is.

Plans and text only: the names come in as a :class:`NameBook` built by the caller.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace

from engine.locale_en import FUNCTION_WORDS, MONTH_NUMBERS, NAME_JOINERS, NAME_PARTICLES, STOP_WORDS, WEEKDAY_NAMES
from engine.plan import expr as X
from engine.plan import nodes as N
from engine.plan.repair import with_children
from engine.plan.spec import OPERATORS

_WORD = re.compile(r"[^\W\d_][\w'’.&-]*[\w&]|[^\W\d_]")
_POSSESSIVE = re.compile(r"['’]s?$")
_LOCAL_WORD = re.compile(r"[^\W\d_]+")
_SENTENCE_START = re.compile(r"(^|[.!?:;|\n])\W*$")
#: a mail address, wherever a value or text holds one
MAIL_ADDRESS = re.compile(r"[\w.+'’-]+@[\w-]+(?:\.[\w-]+)+")
_ADDRESSED = re.compile(r"\s*<[^<>@\s]+@[^<>\s]+>\s*$")
#: the longest name looked for, in words ("Osteria da Mosemann", "The Arctic Gallarts")
MOST_WORDS = 4
#: words that are never a name on their own, whatever a value says ("May", "Monday", "I")
_NEVER = STOP_WORDS | FUNCTION_WORDS | frozenset(MONTH_NUMBERS) | frozenset(WEEKDAY_NAMES)


def words_of(text: str) -> list[str]:
    """The words of ``text`` in lower case, each without a possessive ("Schönland's"
    "schönland")."""
    return [_POSSESSIVE.sub("", w).lower() for w in _WORD.findall(text)]


@dataclass
class NameBook:
    """The names the user's data holds: every attribute value written like a name (its
    words capitalised, but joiners such as "da" or "of"; at most :data:`MOST_WORDS`
    words), by its words in lower case, as written; and the first word of a name of
    two or more words on its own ("Hasan" of "Hasan Yilmaz": people are called by it).
    The parts of a value between commas are names of their own ("Vancouver, Canada").
    ``people``: the words of the names that a mail address spells ("Hasan Hänel" of
    hasan.haenel87@…, "Benito Ramírez" of benito.ramrez24@…; :func:`_spelled_by`): a
    person's, called by either.
    ``excluded``: words never taken for a name (the store's source names: "besides
    amazon" names no shop).
    ``plain``: one-word names that the data also writes in lower case, in a title (the
    caller reads them): plain words that begin a title ("Dinner" of "Dinner with
    Rafaela", a calendar entry called "Dinner", and "Italian dinner with Joseph")."""

    names: dict[tuple[str, ...], str] = field(default_factory=dict)
    people: frozenset[str] = frozenset()
    excluded: frozenset[str] = frozenset()
    plain: frozenset[str] = frozenset()

    @classmethod
    def of(cls, values: Iterable[str], sources: Iterable[str] = (), addresses: Iterable[str] = (),
           plain: Iterable[str] = ()) -> "NameBook":
        book: dict[tuple[str, ...], str] = {}
        firsts: dict[tuple[str, ...], str] = {}
        people: set[str] = set()
        spelled = _local_parts(addresses)
        for value in (part for v in values for part in _ADDRESSED.sub("", v).split(",")):
            written = _name_words(value)
            if not written:
                continue
            while len(written) > 1 and written[0].lower() in _NEVER:  # "At Spice of Madrid.", "The Kites"
                written = written[1:]
            key = tuple(_POSSESSIVE.sub("", w).lower() for w in written)
            bare = _ADDRESSED.sub("", value).strip().rstrip(".,;:!?")
            book.setdefault(key, bare[bare.index(written[0]):] if written[0] in bare else " ".join(written))
            if len(written) > 1:
                firsts.setdefault(key[:1], _POSSESSIVE.sub("", written[0]))
                if _spelled_by(key, spelled):
                    people.update(key)
        for key, name in firsts.items():
            book.setdefault(key, name)
        excluded = frozenset(w for s in sources for w in words_of(s))
        return cls({k: v for k, v in book.items() if not set(k) <= _NEVER | excluded},
                   frozenset(people - _NEVER), excluded, frozenset(plain) - people)

    def __len__(self) -> int:
        return len(self.names)

    def holds(self, word: str, following: Iterable[str] = ()) -> bool:
        """Whether ``word``, followed by the words ``following``, starts a name of the
        data, in any case: a one-word name ("Barcelona", "Hasan" of "Hasan Yilmaz") that
        the data never writes as a plain word (see :attr:`plain`), or the first word of
        a name of several that the following words go on with ("Pizzeria" before
        "Niemeier"). Never a source's name or a word that is no name alone ("Amazon",
        "May")."""
        key = _POSSESSIVE.sub("", word).lower()
        if key in self.excluded or (key,) not in self.names:
            return False
        run = (key, *(_POSSESSIVE.sub("", w).lower() for w in following))
        return key not in self.plain or any(run[:n] in self.names
                                            for n in range(2, min(len(run), MOST_WORDS) + 1))

    def in_question(self, question: str) -> list[str]:
        """The names ``question`` gives, as the data writes them, longest first and
        without overlaps: "how many times have i eaten at pizzeria niemeier"
        ["Pizzeria Niemeier"]. A name of one word counts where it is a person's (see
        :attr:`people`: "email hasan") or the question writes it with a capital, not
        at a sentence's start ("from IKEA"): one-word values are often plain words
        (a song called "Total", a place called "Salon")."""
        found = list(_WORD.finditer(question))
        words = [_POSSESSIVE.sub("", m.group()).lower() for m in found]
        capital = [m.group()[0].isupper() and not _SENTENCE_START.search(question[:m.start()]) for m in found]
        taken = [False] * len(words)
        at: list[tuple[int, int, str]] = []  # (first word, words, name)
        for n in range(min(MOST_WORDS, len(words)), 0, -1):
            for i in range(len(words) - n + 1):
                if any(taken[i:i + n]):
                    continue
                key = tuple(words[i:i + n])
                name = self.names.get(key)
                if name is None or set(key) & self.excluded:
                    continue
                if n == 1 and not (key[0] in self.people or capital[i]):
                    continue
                if n > 1 and len(set(key) - _NEVER) < 2 and not all(capital[i:i + n]):
                    continue  # "Food Last", a song, in "eat French food last year"
                taken[i:i + n] = [True] * n
                at.append((i, n, name))
        # a name the question writes with capitals is the whole run of capitalised words
        # it stands in, as written there ("Udon House Hoyos" where the data has "House",
        # "Mexico City" where it has "Mexico" and "City")
        out: list[str] = []
        covered = -1
        for i, n, name in sorted(at):
            if i < covered:
                continue
            if all(capital[i:i + n]):
                lo, hi = i, i + n
                while lo > 0 and capital[lo - 1] and words[lo - 1] not in self.excluded | _NEVER:
                    lo -= 1
                while hi < len(words) and capital[hi] and words[hi] not in self.excluded | _NEVER:
                    hi += 1
                if (lo, hi) != (i, i + n):
                    name = question[found[lo].start():found[hi - 1].end()]
                    name = _POSSESSIVE.sub("", name) if hi - 1 > i + n - 1 or name.endswith(("'s", "’s")) else name
                covered = hi
            else:
                covered = i + n
            out.append(name)
        return out


def _fold(word: str) -> str:
    """``word`` in lower case ASCII letters: accents dropped, as addresses write names."""
    return "".join(c for c in unicodedata.normalize("NFKD", word.lower()) if "a" <= c <= "z")


def _local_parts(addresses: Iterable[str]) -> dict[str, list[tuple[str, ...]]]:
    """The first two words of each address's local part (runs of letters, accents
    dropped: as addresses write names), where it has two of two letters or more, by
    their initials."""
    out: dict[str, list[tuple[str, ...]]] = {}
    for a in addresses:
        words = tuple(w for w in (_fold(p) for p in _LOCAL_WORD.findall(a.split("@")[0])) if w)
        if len(words) > 1 and len(words[0]) > 1 and len(words[1]) > 1:
            out.setdefault(words[0][:1] + words[1][:1], []).append(words[:2])
    return out


def _spelled_by(key: tuple[str, ...], spelled: dict[str, list[tuple[str, ...]]]) -> bool:
    """Whether an address spells the name ``key``: its local part's first word spells
    the name's first and its next the name's last, letters dropped or added where an
    address writes a letter the ASCII way (joerg.haenel@ and jrg.hnel85@ for "Jörg
    Hänel", benito.ramrez24@ for "Benito Ramírez"; not news@ for a song called "New
    Dog Seek", support@ for "Support Team", nor sam.whitaker@ for "Sam's Apple Watch")."""
    first, last = _fold(key[0]), _fold(key[-1])
    return bool(first and last) and any(_spells(words[0], first) and _spells(words[1], last)
                                        for words in spelled.get(first[:1] + last[:1], ()))


def _spells(local: str, word: str) -> bool:
    """Whether ``local`` writes ``word``: the same initial, and one is the other with
    one or two letters left out, or none."""
    short, long = sorted((local, word), key=len)
    return local[:1] == word[:1] and len(short) >= max(2, len(long) - 2) and _within(short, long)


def _within(short: str, long: str) -> bool:
    """Whether ``short`` is ``long`` with letters left out."""
    rest = iter(long)
    return all(c in rest for c in short)


def _name_words(value: str) -> list[str] | None:
    """The words of ``value`` when it is written like a name, else None; a person
    with their address ("Dorita Cabezas <dorita.cabezas87@example.com>") is their name."""
    value = _ADDRESSED.sub("", value).strip()
    if not value or not value[0].isupper() or "@" in value or "\n" in value or any(c.isdigit() for c in value):
        return None
    written = _WORD.findall(value)
    if not 0 < len(written) <= MOST_WORDS or len("".join(written)) + 3 < len(value) - value.count(" "):
        return None  # digits, punctuation or too many words: an identifier, a sentence
    if not all(w[0].isupper() or w.lower() in NAME_JOINERS | NAME_PARTICLES for w in written):
        return None
    return written


def plan_texts(plan: N.PlanNode) -> list[str]:
    """Every query and string constant of ``plan``."""
    out: list[str] = []
    if isinstance(plan, N.Retrieve):
        out.append(plan.query)
    spec = OPERATORS.get(plan.OP)
    for f in fields(plan) if spec is not None else ():
        value = getattr(plan, f.name)
        if isinstance(value, X.Expr):
            out += [n.value for n in X.walk(value) if isinstance(n, X.Const) and isinstance(n.value, str)]
    for child in plan.children():
        out += plan_texts(child)
    return out


def _retrieves(plan: N.PlanNode) -> list[N.Retrieve]:
    own = [plan] if isinstance(plan, N.Retrieve) else []
    return own + [r for child in plan.children() for r in _retrieves(child)]


def give_names_back(plan: N.PlanNode, question: str, book: NameBook) -> tuple[N.PlanNode, list[str]]:
    """``plan`` with the names ``question`` gives that no string of it says added to its
    only RETRIEVE's query (see the module), and those names; ``plan`` itself and []
    when there is none or the plan has another number of RETRIEVEs."""
    said = {w for text in plan_texts(plan) for w in words_of(text)}
    lost = [name for name in book.in_question(question) if not set(words_of(name)) & said]
    searches = _retrieves(plan)
    if not lost or len(searches) != 1:
        return plan, []
    search = searches[0]
    named = replace(search, query=" ".join([search.query.strip(), *lost]))

    def rewrite(node: N.PlanNode) -> N.PlanNode:
        return named if node is search else with_children(node, rewrite)

    return rewrite(plan), lost
