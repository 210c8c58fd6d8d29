"""Cardinal numbers written in English words, as digits: ``one hundred and twelve tiles`` -> ``112 tiles``.

Datasheets written as prose spell their figures out ("sixty-four lanes", "one point eight gigahertz"). The rules of
`ingest.profile_rules` read digits, so the text they read has each spelled-out cardinal (up to the thousands, with
an optional decimal part read digit by digit after ``point``) replaced by its digits when a word follows it (the
unit or the counted noun it quantifies). A lone ``one``, ``a`` or ``an`` is left as written: it is an article or a
pronoun far more often than a figure. A count that opens the definition of a definition-list item
(``- **Ring**: eight nodes and a switch``) is left as written too: it is what one instance of the term holds (the
glossary, `ingest.profile_glossary`, reads it as containment), not a figure of the chip. `verbatim_span` maps a span of the normalised text back to the document's
own words, so citations quote the document.

Source of the grammar: English cardinal number names (units, teens, tens joined by a hyphen or a space, ``hundred``
and ``thousand`` multipliers, an optional ``and`` after ``hundred``/``thousand``).
"""

from __future__ import annotations

import re
from bisect import bisect_right

_UNITS = {w: n for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_TENS = {w: 10 * n for n, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)}
_SCALES = {"hundred": 100, "thousand": 1000}
_WORD = "|".join(sorted([*_UNITS, *_TENS, *_SCALES, "and", "point"], key=len, reverse=True))
#: A run of number words (joined by spaces or hyphens), then the word it quantifies.
#: The text before a definition-list item's definition (``- **Ring**: ``), at a line start or after a list marker
#: (the chunker joins list items on one line).
_DEFINITION_OPENING = re.compile(r"(?:(?:^|\n)[ \t]*(?:[-*+\u2022][ \t]+)?|\s[-*+\u2022][ \t]+)"
                                 r"\*{0,2}[A-Za-z][\w\- ]{0,40}\*{0,2}[ \t]*:\*{0,2}[ \t]*$")
_RUN = re.compile(rf"(?<![\w\-])((?:{_WORD})(?:[\s\-]+(?:{_WORD}))*)(?![\w\-])(?=[\s\-]+[A-Za-z])", re.IGNORECASE)


def _below_thousand(words: list[str]) -> int | None:
    """Value of a cardinal below 1000 (``one hundred and ninety two``), None when the words are not one."""
    total, i = 0, 0
    if len(words) >= 2 and words[0] in _UNITS and 0 < _UNITS[words[0]] < 10 and words[1] == "hundred":
        total, i = 100 * _UNITS[words[0]], 2
        if i < len(words) and words[i] == "and":
            i += 1
            if i == len(words):
                return None
    rest = words[i:]
    if not rest:
        return total
    if len(rest) == 1 and rest[0] in _UNITS:
        return total + _UNITS[rest[0]] if not (total and rest[0] == "zero") else None
    if rest[0] in _TENS and len(rest) <= 2:
        if len(rest) == 2 and not (rest[1] in _UNITS and 0 < _UNITS[rest[1]] < 10):
            return None
        return total + _TENS[rest[0]] + (_UNITS[rest[1]] if len(rest) == 2 else 0)
    return None


def _cardinal(words: list[str]) -> int | None:
    """Value of a cardinal below one million written as `words` (lower case, no hyphens), else None."""
    if "thousand" in words:
        at = words.index("thousand")
        high = _below_thousand(words[:at])
        rest = words[at + 1:]
        if rest and rest[0] == "and":
            rest = rest[1:]
            if not rest:
                return None
        low = _below_thousand(rest) if rest else 0
        return None if high in (None, 0) or low is None or "thousand" in rest else high * 1000 + low
    return _below_thousand(words)


def _value(words: list[str]) -> str | None:
    """Digits of a cardinal with an optional ``point`` and digit words (``one point eight`` -> ``1.8``)."""
    if "point" in words:
        at = words.index("point")
        whole, digits = _cardinal(words[:at]), words[at + 1:]
        if whole is None or not digits or any(d not in _UNITS or _UNITS[d] > 9 for d in digits):
            return None
        return f"{whole}.{''.join(str(_UNITS[d]) for d in digits)}"
    number = _cardinal(words)
    return None if number is None else str(number)


def _longest_number(words: list[str]) -> tuple[int, str] | None:
    """(word count, digits) of the longest leading run of `words` that is one number."""
    for n in range(len(words), 0, -1):
        if words[n - 1] in ("and", "point"):
            continue
        value = _value(words[:n])
        if value is not None:
            return n, value
    return None


def digits_for_number_words(text: str) -> tuple[str, list[tuple[int, int, int, int]]]:
    """`text` with spelled-out cardinals that quantify a following word written as digits.

    Returns:
        (normalised text, spans): each span is (start, end) in the normalised text and (start, end) in `text` of
        one replacement, in order. Text outside the spans is unchanged.
    """
    out: list[str] = []
    spans: list[tuple[int, int, int, int]] = []
    position, length = 0, 0
    for match in _RUN.finditer(text):
        pieces = list(re.finditer(r"[A-Za-z]+", match.group(1)))
        start = 0
        while start < len(pieces):
            found = _longest_number([p.group(0).lower() for p in pieces[start:]])
            if found is None:
                start += 1
                continue
            count, value = found
            first, last = pieces[start], pieces[start + count - 1]
            begin, end = match.start(1) + first.start(), match.start(1) + last.end()
            start += count
            if count == 1 and first.group(0).lower() in ("one", "zero"):
                continue  # an article or pronoun far more often than a figure
            if _DEFINITION_OPENING.search(text, max(0, begin - 60), begin):
                continue  # the count of what one instance of a defined term holds
            out.append(text[position:begin])
            length += begin - position
            spans.append((length, length + len(value), begin, end))
            out.append(value)
            length += len(value)
            position = end
    out.append(text[position:])
    return "".join(out), spans


def to_original(index: int, spans: list[tuple[int, int, int, int]], at_end: bool = False) -> int:
    """Offset in the original text of offset `index` of the normalised text (`spans` from
    `digits_for_number_words`); an offset inside a replacement maps to the replaced words' start, or their end when
    `at_end`."""
    k = bisect_right([s[0] for s in spans], index) - 1
    if k < 0:
        return index
    new_start, new_end, old_start, old_end = spans[k]
    if index >= new_end:
        return old_end + (index - new_end)
    if index == new_start:
        return old_start
    return old_end if at_end else old_start


def verbatim_span(normalised: str, original: str) -> str | None:
    """The words of `original` that read as `normalised` once number words are digits, None when it holds none.

    Both texts are compared whitespace-collapsed; the answer is whitespace-collapsed too.
    """
    squashed = " ".join(original.split())
    wanted = " ".join(normalised.split())
    text, spans = digits_for_number_words(squashed)
    at = text.find(wanted)
    if at < 0 or not spans:
        return None
    return squashed[to_original(at, spans):to_original(at + len(wanted), spans, at_end=True)]
