"""Whole names out of the extractor's spans.

The extractor copies a span of the text it reads, and for names it often cuts the
span a word short or runs a word long: "Osteria da" for Osteria da Hänel, "Hänel
for" out of "Osteria da Hänel for dinner", "Warmer with" for Ristorante Warmer,
"Sushi Perez," with the comma. Asked for a user's favourite restaurant, the demo
answered "Osteria da". :func:`whole_name` finds the span in the text and makes it
the whole run of capitalised words it sits in.

Only answers written like a name are touched (the first letter a capital) and only
where the text holds them as written; a category the model wrote in its own words
("italian") or a number comes back as it was.
"""
from __future__ import annotations

import re

from engine.locale_en import NAME_PARTICLES

# Lower-case words inside names (Osteria da Hänel, La Taberna de Sauer), which a
# name runs on across.
PARTICLES = NAME_PARTICLES
# Words that join two names as often as they sit inside one ("Pilot of Breaking
# Bad", "Ana and Leo"): a span runs on across one only where the model's own answer
# ends in it ("Statue of" -> "Statue of Liberty", "Hanna and" -> "Hanna and the Suns").
_LINKS = PARTICLES | {"of", "the", "and", "&"}
# Words that, capitalised in a title ("Dinner With Ana And Leo") or a sentence, still
# end a name; also the names of days and months, which follow names ("Sushi Perez
# Wednesday").
_BREAKS = frozenset((
    "i with and or for at in on to from by my our your his her their me we you he she they it is was has have had "
    "but so then when while after before near via per a an this that these those "
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june "
    "july august september october november december").split())
MAX_WORDS = 6
# abbreviations a name runs on past ("Church of St. Aurelia", "Dr. Okafor")
_ABBREVIATIONS = frozenset("St Mt Ft Dr Mr Mrs Ms Prof Sr Jr Ste".split())
_SPACES = re.compile(r"[ \t]+")
_DOTTED = re.compile(r"[^\W\d]\.[^\W\d]+\.?$")  # s.r.l. S.A. Sp.j: the full stop is a part of them


def _name_word(w: str) -> bool:
    return bool(w) and w[0].isupper() and w.lower() not in _BREAKS


def _sentence_start(text: str, at: int) -> bool:
    """Whether the word starting at ``at`` is the first of its sentence, line or field."""
    before = text[:at].rstrip(" \t")
    # ... and after a list's bullet: "- Met Colin at ..."
    return not before or before[-1] in ".!?:;\n|#\"'([" or (
        before[-1] in "-*•" and (len(before) == 1 or before[-2] == "\n"))


def _word_after(text: str, pos: int) -> tuple[str, int, bool] | None:
    """The word after ``pos`` on the same line (spaces only between), where it ends,
    and whether punctuation follows it directly."""
    m = _SPACES.match(text, pos)
    if not m:
        return None
    end = m.end()
    while end < len(text) and not text[end].isspace():
        end += 1
    token = text[m.end():end]
    word = token.rstrip(".,;:!?)]\"'")
    if not word:
        return None
    return word, m.end() + len(word), len(word) < len(token)


def _word_before(text: str, pos: int) -> tuple[str, int] | None:
    """The word before ``pos`` on the same line, and where it starts; None where
    punctuation ends it ("Lunch: Osteria")."""
    head = text[:pos]
    stripped = head.rstrip(" \t")
    if len(stripped) == len(head):
        return None
    start = len(stripped)
    while start > 0 and not stripped[start - 1].isspace():
        start -= 1
    word = stripped[start:]
    if not word or not (word[-1].isalnum() or word == "&"):
        return None
    return word, start


def _extend_right(text: str, end: int, crossing: frozenset[str]) -> int:
    """Where the name ending at ``end`` ends: later name words, and the ``crossing``
    words between them, are taken in (``crossing`` only for the first step)."""
    while True:
        nxt = _word_after(text, end)
        if nxt is None:
            return end
        word, word_end, punct = nxt
        while word in crossing and not punct:
            nxt = _word_after(text, word_end)
            if nxt is None:
                return end
            word, word_end, punct = nxt
        if not _name_word(word):
            return end
        end = word_end
        if punct and word in _ABBREVIATIONS and text[end:end + 1] == ".":
            end += 1  # "Church of St. Aurelia" runs on past "St."
        elif punct:
            return end
        crossing = PARTICLES


def _extend_left(text: str, start: int) -> int:
    while True:
        prev = _word_before(text, start)
        if prev is None:
            return start
        word, word_start = prev
        via_particle = word in PARTICLES
        if via_particle:
            prev = _word_before(text, word_start)
            if prev is None:
                return start
            word, word_start = prev
        if not _name_word(word) or (_sentence_start(text, word_start) and not via_particle):
            return start
        start = word_start


def _find(words: list[str], text: str) -> re.Match | None:
    """``words`` in ``text``, as whole words written as they are, spaces between."""
    return re.search(r"(?<!\w)" + r"[ \t]+".join(map(re.escape, words)) + r"(?!\w)", text)


def whole_name(answer: str | None, text: str) -> str | None:
    """``answer`` made the whole name it is part of in ``text``; the answer as it was
    where it is no name or the text does not hold it as written (without the comma,
    colon or full stop the model may have copied after it)."""
    if not isinstance(answer, str):
        return answer
    answer = answer.strip().strip(",;:").strip()  # ", Patrick Bell": the comma before it too
    if answer.endswith(".") and not _DOTTED.search(answer):
        answer = answer[:-1].rstrip()
    for opening, closing in ("()", "[]"):
        if answer.endswith(closing) and opening not in answer:
            answer = answer[:-1].rstrip()
    # a spaced dash parts two fields ("Cąkała – Little Silver": the artist, the track);
    # the model starts on the one asked for and runs on
    answer = re.split(r"[ \t][–—][ \t]", answer, maxsplit=1)[0].strip() or answer
    # "Luukkonen ry: 1" of "Receipt from Luukkonen ry: 1 × Glass watch": the field's value after it
    if m := re.fullmatch(r"([^\W\d_][^:]*[ \t][^:]*[^\W\d_]):[ \t]+\d+", answer):  # two words or more before
        answer = m.group(1)
    words = answer.split()
    # a name may start with a particle ("da Cunha Ltda.", "auch Schlauchin Hornich e.G.")
    if not words or not (words[0][0].isupper() or words[0] in PARTICLES and len(words) > 1 and _name_word(words[1])
                         or words[0][0].islower() and len(words) > 2 and _name_word(words[1])
                         and _name_word(words[2])):
        return answer
    # a word too many: "Hänel for", "Michael at", "Lay ("; a link left hanging is
    # either continued ("Osteria da" -> "Osteria da Hänel") or dropped below. Other
    # lower-case words stay: "Bridges desk lamp" is a product.
    while len(words) > 1 and words[-1] not in _LINKS and (
            words[-1].lower() in _BREAKS or not any(c.isalnum() for c in words[-1])):
        words.pop()
    m = _find(words, text)
    if m is None:
        return answer
    end = m.end()
    if _DOTTED.search(words[-1]) and not words[-1].endswith(".") and text[end:end + 1] == ".":
        end += 1  # "Bottaro s.r.l" of "Bottaro s.r.l."
    elif words[-1] in _ABBREVIATIONS and text[end:end + 1] == ".":
        end = _extend_right(text, end + 1, PARTICLES)  # "Church of St." of "Church of St. Aurelia"
    elif text[end - 1] not in ".!?":  # a sentence ends the name
        end = _extend_right(text, end, _LINKS if words[-1] in _LINKS else PARTICLES)
    end = _across_of(text, end)
    end = _with_legal_form(text, end)
    if re.fullmatch(r"[^\W\d_]+", words[-1]) and words[-1].islower() and (n := _MODEL_NUMBER.match(text, end)):
        end = n.end()  # "Jeppesen Smart pillow 554 from Pešková"
    start = _extend_left(text, m.start())
    if (head := _HEAD_OF_BEFORE.search(text, 0, start)) and head.group(1) in _OF_HEADS:
        start = _extend_left(text, head.start(1))  # "St. Emilia" of "Visited Church of St. Emilia"
    out = text[start:end].split()
    while len(out) > 1 and out[-1] in _LINKS:
        out.pop()
    # a run longer than names are is a title written in capitals, not one name
    return " ".join(out if len(out) <= MAX_WORDS else words)


# Names of a kind of place "of" another name: "National Museum of Quel", "Isle of Man",
# "Church of St. Emilia". The extractor stopped before or started after the "of"; a
# name is not otherwise run on across it ("Trip to Durg with Ana of ...").
_OF_HEADS = frozenset("""Museum Isle Island Islands Church Cathedral Chapel Basilica Abbey Monastery University
    College Institute Academy School Bank Palace Castle Fort Tower Temple Shrine Gallery Hall House Garden
    Gardens Lake Mount Bay Gulf Cape Sea Republic Kingdom Duchy Principality Statue Arch Monument Memorial
    Library Theatre Theater Opera Ministry Court Valley""".split())
_HEAD_OF_BEFORE = re.compile(r"\b([^\W\d_]+)[ \t]+of[ \t]+\Z")
_OF_NAME_AFTER = re.compile(r"[ \t]+of[ \t]+(?=(?:St\.[ \t]+)?[A-Z\u00C0-\u024F])")


def _across_of(text: str, end: int) -> int:
    """``end`` past "of" and the name after it where the name ending at ``end`` is a
    kind of place (``_OF_HEADS``)."""
    before = text[:end].split()
    if not before or before[-1] not in _OF_HEADS or not (m := _OF_NAME_AFTER.match(text, end)):
        return end
    after = m.end()
    if text.startswith("St.", after):
        return _extend_right(text, after + 3, PARTICLES)
    word = re.match(r"[^\W\d_][\w'’-]*", text[after:])
    return _extend_right(text, after + word.end(), PARTICLES) if word and _name_word(word.group()) else end


# A company's legal form after its name ("Bohnbach AG & Co. OHG", "Soni and Sons",
# "Urban Beneš k.s.", "İnönü Şti."): the extractor stops at the last capitalised
# word, or before the form's full stop.
_FORMS = ("GmbH", "AG", "KG", "KGaA", "OHG", "GbR", "UG", "SE", "e.V.", "e.G.", "eG", "Ltd.", "Ltd", "Ltda.", "Ltda",
          "LLC", "LLP", "Inc.", "Inc", "Corp.", "Corp", "PLC", "plc", "S.A.", "SA", "S.A.S.", "SAS", "S.A.R.L.", "SARL",
          "S.p.A.", "SpA", "SPA", "s.r.l.", "S.r.l.", "Srl", "SRL", "S.L.", "S.Coop.", "k.s.", "v.o.s.", "s.r.o.",
          "a.s.", "A.Ş.", "Şti.", "B.V.", "BV", "N.V.", "NV", "AB", "HB", "KB", "ry", "Oy", "Oyj", "AS", "ASA", "ApS",
          "A/S", "Lda.", "Lda", "sp.j.", "Sp. z o.o.", "S.C.", "S.R.L.", "Pty Ltd", "Co.")
_JOINED_FORMS = ("& Co.", "e figli", "and Sons", "& Sons", "y asociados", "e Hijos", "e hijos", "& Partner", "and Co.")
_LEGAL_FORM = re.compile(r"[ \t]+(?:%s)(?=$|[\s,;:)!?]|\.)" % "|".join(
    re.escape(f).replace(r"\ ", r"[ \t]+") for f in sorted(_FORMS + _JOINED_FORMS, key=len, reverse=True)))
# a model number after a product ("Beatae Pro drone 696 has shipped"); not a count or
# an amount ("pillow 2 weeks ago", "mug 12 EUR")
_MODEL_NUMBER = re.compile(r"[ \t]+\d{1,5}(?=[ \t]*(?:$|[,;:)!?—–]|-[ \t]|\.(?:\s|$)|"
                           r"(?:from|for|at|has|have|had|was|is|with|and|in|on|to|by|via|sold|shipped)\b))")


def _with_legal_form(text: str, end: int) -> int:
    """Where the name ending at ``end`` ends with the legal forms after it, and the
    full stop of the last where it abbreviates ("Şti." of "Sold by İnönü Şti..")."""
    words = text[:end].split()
    if words and words[-1] in ("e", "y", "and", "&"):  # "Soffici e" of "Soffici e figli"
        before = text[:end].rstrip()[:-len(words[-1])].rstrip(" \t")
        if _LEGAL_FORM.match(text, len(before)):
            end = len(before)
    while m := _LEGAL_FORM.match(text, end):
        end = m.end()
    last = text[:end].split()[-1] if text[:end].split() else ""
    if text[end:end + 1] == "." and not last.endswith(".") and f"{last}." in _FORMS:
        end += 1
    return end


# what stands between the names of a list: "Emily, Susanne and Flora", "Ana & Leo"
_LIST_AFTER = re.compile(r",[ \t]*(?:and[ \t]+)?|[ \t]+(?:and|&)[ \t]+")
_LIST_BEFORE = re.compile(r"(?:,[ \t]*(?:and[ \t]+)?|[ \t]+(?:and|&)[ \t]+)$")
_NAME_WORD = r"[^\W\d_][\w'’.-]*"
_NAME_AHEAD = re.compile(rf"{_NAME_WORD}(?:[ \t]+{_NAME_WORD}){{0,2}}")
_NAME_BEHIND = re.compile(rf"(?:{_NAME_WORD}[ \t]+){{0,2}}{_NAME_WORD}$")


def _names_only(span: str) -> str:
    """The leading words of ``span`` that are name words ("Vincent Humphreys" of
    "Vincent Humphreys tonight"), without a full stop after the last."""
    out = []
    for w in span.split():
        if not _name_word(w):
            break
        out.append(w)
        if w.endswith("."):
            break
    name = " ".join(out)
    return name[:-1] if name.endswith(".") and not _DOTTED.search(name) else name


def whole_list(answer: str | None, text: str) -> str | None:
    """``answer``, a name, made the whole list of names it stands in ("Emily" of
    "Football with Emily, Susanne, Flora and Vincent tonight" -> "Emily, Susanne,
    Flora and Vincent"), as the text writes it: asked who was there, the extractor
    answered one name of six, or the list's tail. The answer as it was where it is
    no name or the text does not hold it."""
    if not isinstance(answer, str) or not answer or not _name_word(answer.split()[0]):
        return answer
    m = _find(answer.split(), text)
    if m is None:
        return answer
    start, end = m.start(), m.end()
    items = 1
    while sep := _LIST_AFTER.match(text, end):
        name = _NAME_AHEAD.match(text, sep.end())
        whole = _names_only(name.group()) if name else ""
        if not whole:
            break
        end = sep.end() + len(whole)
        items += 1
    while sep := _LIST_BEFORE.search(text[:start]):
        name = _NAME_BEHIND.search(text[:sep.start()])
        words = name.group().split() if name else []
        kept: list[str] = []  # the name words the text ends in: not "Watkins for dinner"
        for w in reversed(words):
            if not (_name_word(w) or kept and w in PARTICLES):
                break
            kept.insert(0, w)
        while kept and not _name_word(kept[0]):
            kept.pop(0)
        words = kept
        if not words:
            break
        start = sep.start() - len(" ".join(words))
        items += 1
    listed = text[start:end]
    lengths = [len(part.split()) for part in re.split(r",|\s(?:and|&)\s", listed)]
    if len(lengths) >= 3 and lengths[0] < min(lengths[1:]) and text[:start].endswith((" ", "\t")):
        # the first name cut as the others are not: "Murray, Susanne Delannoy, Flora
        # Cammarata" of "Players: Emily Murray, Susanne Delannoy, ..." (a name after a
        # colon starts a sentence, where whole_name does not reach)
        head = text[:start].rstrip(" \t")
        before = head.split()[-1] if head.split() else ""
        if _name_word(before) and before[-1].isalnum():
            start, items = len(head) - len(before), max(items, len(lengths))
            listed = text[start:end]
    if items == 1:
        return answer
    if items == 2 and not re.search(r"\s(?:and|&)\s", listed):
        # two names and a comma are as often a name and a place ("with Berta Fagiani,
        # Thailand"); two first names ("talking to Sarah, Elizabeth") or two full names
        # are people
        first, second = (len(part.split()) for part in listed.split(",", 1))
        if first != second:
            return answer
    return listed
