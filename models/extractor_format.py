"""The extractor's input and output format, shared by training and run time.

The source is ``[CLS] key [SEP] ⟨1⟩ word ⟨2⟩ word ... [SEP]``: every word of the
text is preceded by a position marker, BERT's ``[unusedN]`` vocabulary entries. A
value copied from the text is written as two markers (first and last word), so the
decoder points at a span instead of spelling it: names, places and products it has
never seen come back exactly as written, accents and case included. A value that
is not a span (a normalised category such as a cuisine or an amount) is spelled in
word pieces; ``[unused0]`` means the text does not state the key.

Only the ``tokenizers`` library is used here (no torch, no transformers).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# A word: letters/digits, with inner apostrophes, dots, commas, colons, slashes and
# hyphens ("O'Brien", "12.50", "3:35:18"); any other non-space character alone.
WORD = re.compile(r"\w+(?:['’.,:/-]\w+)*|[^\w\s]")
NONE_TOKEN = "[unused0]"
MAX_MARKERS = 900  # BERT's vocabulary has [unused0] .. [unused993]
MAX_SOURCE_TOKENS = 256


def load_tokenizer(path) -> "Tokenizer":
    """The MiniLM WordPiece tokenizer with its file's padding and truncation removed
    (the shipped tokenizer.json pads everything to 128)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.no_truncation()
    return tok


def marker(index: int) -> str:
    return f"[unused{index + 1}]"


_MARKER = re.compile(r"^\[unused(\d+)\]$")


@dataclass(frozen=True, slots=True)
class Source:
    tokens: list[str]
    ids: list[int]
    words: list[tuple[int, int]]  # character span of each marked word


def words_of(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in WORD.finditer(text)]


def encode_sources(tokenizer: "Tokenizer", items: list[tuple[str, str]]) -> list[Source]:
    """Encode (text, key) pairs. Words past ``MAX_SOURCE_TOKENS`` are dropped: a value
    beyond them cannot be pointed at (long mails should be split into sentences)."""
    out: list[Source] = []
    all_words = [words_of(text)[:MAX_MARKERS] for text, _ in items]
    keys = tokenizer.encode_batch([key for _, key in items], add_special_tokens=False)
    flat = [text[a:b] for (text, _), spans in zip(items, all_words) for a, b in spans]
    encoded = tokenizer.encode_batch(flat, add_special_tokens=False) if flat else []
    k = 0
    for (text, _), spans, key_enc in zip(items, all_words, keys):
        tokens = ["[CLS]", *key_enc.tokens, "[SEP]"]
        ids = [tokenizer.token_to_id("[CLS]"), *key_enc.ids, tokenizer.token_to_id("[SEP]")]
        kept: list[tuple[int, int]] = []
        for i, span in enumerate(spans):
            enc = encoded[k + i]
            if len(tokens) + 1 + len(enc.tokens) + 1 > MAX_SOURCE_TOKENS:
                break
            tokens.append(marker(i))
            ids.append(tokenizer.token_to_id(marker(i)))
            tokens += enc.tokens
            ids += enc.ids
            kept.append(span)
        k += len(spans)
        tokens.append("[SEP]")
        ids.append(tokenizer.token_to_id("[SEP]"))
        out.append(Source(tokens, ids, kept))
    return out


def target_tokens(tokenizer: "Tokenizer", text: str, value: str,
                  span: tuple[int, int] | None) -> list[str]:
    """The decoder's target (without start and end tokens) for one example."""
    if not value:
        return [NONE_TOKEN]
    if span is not None:
        words = words_of(text)
        first = next((i for i, (a, b) in enumerate(words) if a <= span[0] < b), None)
        last = next((i for i, (a, b) in enumerate(words) if a < span[1] <= b), None)
        if first is not None and last is not None and last < MAX_MARKERS:
            return [marker(first), marker(last)]
    return tokenizer.encode(value, add_special_tokens=False).tokens


def detokenize(pieces: list[str]) -> str:
    text = " ".join(pieces).replace(" ##", "")
    # Word pieces split "12.50" into "12 . 50"; join digits around . , :
    text = re.sub(r"(\d) ([.,:]) (\d)", r"\1\2\3", text)
    return text.strip()


def decode(text: str, words: list[tuple[int, int]], output: list[str]) -> str:
    """Turn the decoder's tokens back into a value: a span of ``text`` or a string."""
    if not output or output[0] == NONE_TOKEN:
        return ""
    first = _MARKER.match(output[0])
    if first:
        i = int(first.group(1)) - 1
        last = _MARKER.match(output[1]) if len(output) > 1 else None
        j = int(last.group(1)) - 1 if last else i
        if not 0 <= i < len(words):
            return ""
        j = min(max(j, i), len(words) - 1)
        return text[words[i][0]:words[j][1]]
    return detokenize([t for t in output if not _MARKER.match(t)])
