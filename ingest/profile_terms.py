"""Terms in hardware documents: the text units a glossary is read from (sentences, list items, table rows), noun
phrases, a term's normalized key, and the terms the documents use as units of counting ("48 vector cores", "per
tile").

Only English syntax is fixed here (determiners, plural endings, function words), never the words a vendor uses for
its things. What the terms are defined as is read by `ingest.profile_definitions`; what holds what by
`ingest.profile_containment`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ingest.chunker import rendered_row_parts
from knowledge.types import Chunk

WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "twelve": 12, "sixteen": 16, "thirty-two": 32, "sixty-four": 64}
NUMBER = rf"(?:\d{{1,3}}(?:,\d{{3}})+|\d+|{'|'.join(WORD_NUMBERS)})"
#: English function words and verbs that end a noun phrase (grammar, not vocabulary of a vendor).
STOP_WORDS = frozenset("""
a an the and or of in on at to for from by with without per each every all both its their his her our your this
that these those which who whom whose is are was were be been being has have had do does did can could may might
will would shall should must run runs running execute executes executed share shares shared hold holds holding
contain contains containing include includes including provide provides deliver delivers offer offers reach
reaches issue issues issued give gives up than as into over under total together inside within while where when
since there it they them which what how why then also not only more most very such new
""".split()) | frozenset(w.lower() for w in WORD_NUMBERS)  # "ten Stream Processors (SPs)": the term has no count
UNIT_WORD = re.compile(r"^(?:[KMGTP]i?B|[kKMGTP]?B/s|bytes?|bits?|[kKMGT]?Hz|[KMGTP]?FLOPS?|[TPG]?OPS|TF|x|%|"
                        r"[KMGT]bps|GT/s|MT/s|W|mm|nm|ns|us|ms|cycles?|clocks?)$", re.IGNORECASE)
DETERMINER = re.compile(r"^(?:the|a|an|its|their|our|each|every|one|single|this|that)\s+", re.IGNORECASE)
WORD = r"[A-Za-z][\w\-']*"


def singular(word: str) -> str:
    """English singular of one (last) word: ``cores`` -> ``core``, ``SPUs`` -> ``SPU``, ``memories`` ->
    ``memory``; words that are not plural stay (``glass``, ``bus``, ``SIMD``)."""
    if len(word) <= 3 and not (len(word) >= 3 and word[:-1].isupper() and word.endswith("s")):
        return word
    if re.search(r"[^aeiou]ies$", word) and len(word) > 4:  # "memories" -> "memory"; "dies" -> "die"
        return word[:-3] + "y"
    if re.search(r"(?:ss|sh|ch|x)es$", word):
        return word[:-2]
    if word.endswith("s") and not re.search(r"(?:ss|us|is)$", word):
        return word[:-1]
    return word


def term_key(phrase: str) -> str:
    """Normalized key of a term: determiners and emphasis dropped, lower case, last word singular."""
    text = re.sub(r"[*_`\"\u2018\u2019\u201c\u201d]", "", phrase).strip(" '.,;:")
    text = re.sub(r"'s\b", "", text)
    while DETERMINER.match(text):
        text = DETERMINER.sub("", text, count=1)
    words = text.split()
    if not words:
        return ""
    words[-1] = singular(words[-1])
    return " ".join(words).lower()


def written_form(term: str) -> str:
    """The term as written, emphasis and determiners removed, last word singular (case kept)."""
    text = re.sub(r"[*_`\"\u2018\u2019\u201c\u201d]", "", term).strip(" '.,;:")
    while DETERMINER.match(text):
        text = DETERMINER.sub("", text, count=1)
    words = text.split()
    if words:
        words[-1] = singular(words[-1])
    return " ".join(words)


# ---------------------------------------------------------------- text units of the documents

@dataclass(frozen=True)
class Unit:
    """A sentence, a list item, or a table row (cells) of one chunk."""

    text: str
    chunk: Chunk
    cells: tuple[str, ...] = ()


def text_units(chunks: list[tuple[Chunk, tuple[Chunk, ...]]]) -> list[Unit]:
    """The sentences (and table rows, by cells) of merged chunks; a glossary entry ``Term: Definition.`` stays one
    unit although its colon ends a sentence for the sentence splitter, and so does a glossary list item ``- Term.
    Definition.`` (read as ``Term: Definition.``)."""
    from ingest.profile_text import paragraphs, sentences

    out: list[Unit] = []
    for chunk, _ in chunks:
        if chunk.kind == "table_row":
            cells = tuple(_row_cells(chunk))
            out.append(Unit(" | ".join(cells), chunk, cells))
            continue
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", chunk.text)
        for paragraph in paragraphs(text):
            pending = ""
            for sentence in sentences(paragraph):
                if re.fullmatch(r"[^:.;]{1,40}:", sentence):
                    pending = sentence  # "Shader tile:" + its definition, the next sentence
                    continue
                item_term = _ITEM_TERM.search(sentence)
                if item_term and (item_term.group("b") or item_term.start() == 0 and re.search(
                        r"(?:^|\s)[-*+\u2022]\s+" + re.escape(sentence), text)):  # `paragraphs` drops a line's bullet
                    before = sentence[:item_term.start()].strip()
                    if before:
                        out.append(Unit(f"{pending} {before}" if pending else before, chunk))
                    pending = f"{item_term.group('t')}:"  # "- Tile buffer." + its definition: a glossary item
                    continue
                out.append(Unit(f"{pending} {sentence}" if pending else sentence, chunk))
                pending = ""
    return out


#: A list item that is only a term and a full stop ("- Tile buffer."): a glossary entry whose definition follows.
_ITEM_TERM = re.compile(r"(?:^|(?<=\s))(?P<b>[-*+\u2022]\s+)?(?P<t>[A-Za-z][^:.;()]{0,38}[^\s:.;()])\.$")


def _row_cells(chunk: Chunk) -> list[str]:
    """Cell values of a loader-rendered row ``"caption | H: v | H: v"`` (the caption and headers left out; an
    unnamed first column's value kept)."""
    from ingest.profile_text import products_in

    caption, parts = rendered_row_parts(chunk, lambda header: bool(products_in(header)))
    cells = []
    for n, part in enumerate(parts):
        name, sep, value = part.partition(": ")
        if not sep:
            if n == 0 and len(parts) > 1 and caption is None:
                continue  # a caption, in a chunk that does not record it
            cells.append(part)
        else:
            cells.append(value.strip())
    return cells


# ---------------------------------------------------------------- terms used as units

def noun_phrase(words: list[str], limit: int = 3) -> str:
    """The leading noun phrase of `words` (up to `limit` words, ending before a function word or punctuation)."""
    out = []
    for word in words[:limit]:
        clean = word.strip("*_`")
        bare = clean.rstrip(",.;:)")
        if not bare or bare.lower() in STOP_WORDS or not re.match(WORD + "$", bare):
            break
        out.append(bare)
        if bare != clean:
            break
    return " ".join(out)


_COUNT_OF = re.compile(rf"(?<![\w.,\-])({NUMBER})(?:\s*[x\u00d7])?\s+((?:[A-Za-z*][\w\-'*]*[,.;:)]?\s*){{1,3}})",
                       re.IGNORECASE)
_SCOPE_OF = re.compile(r"\b(?:per|each|every|one|single)\s+(?=((?:[A-Za-z*][\w\-'*]*[,.;:)]?\s*){1,3}))",
                       re.IGNORECASE)


def count_value(text: str) -> int:
    """The number a count is written as: digits (``1,024``) or an English number word (``twelve``)."""
    return WORD_NUMBERS.get(text.lower()) or int(text.replace(",", ""))


def counted_terms(text: str) -> list[tuple[int, str, int]]:
    """(count, noun phrase, position) of every ``N <noun phrase>`` in `text` whose phrase is not a unit
    (``48 vector cores`` -> (48, "vector cores", 0); ``128 KB`` is a quantity, not a count of things)."""
    out = []
    for match in _COUNT_OF.finditer(text):
        words = match.group(2).split()
        if not words or UNIT_WORD.match(words[0].strip("*_`,.;:")):
            continue
        phrase = noun_phrase(words)
        if phrase and not UNIT_WORD.match(phrase.split()[0]):
            out.append((count_value(match.group(1)), phrase, match.start()))
    return out


def scoped_terms(text: str) -> list[str]:
    """Noun phrases after ``per``/``each``/``every``/``one``/``single``."""
    out = []
    for match in _SCOPE_OF.finditer(text):
        phrase = noun_phrase(match.group(1).split())
        if phrase and not UNIT_WORD.match(phrase.split()[0]):
            out.append(phrase)
    return out


_HOW_MANY = re.compile(r"\bhow\s+many\s+((?:[A-Za-z][\w\-]*\s*){1,3})", re.IGNORECASE)


def used_terms(units: list[Unit]) -> Counter:
    """How often each term key is used as a unit of counting in `units`: counted ("48 cores"), scoped ("per core"),
    asked for ("How many engines ...?") or counted by a table row ("Tiles | 160")."""
    used: Counter = Counter()
    for unit in units:
        texts = [unit.cells[0]] if unit.cells else [unit.text]
        if unit.cells:
            texts += list(unit.cells[1:]) + [unit.chunk.text]  # the row's headers too ("SRAM (per tile)")
        for text in texts:
            for _, phrase, _ in counted_terms(text):
                used[term_key(phrase)] += 1
            for phrase in scoped_terms(text):
                used[term_key(phrase)] += 1
            for match in _HOW_MANY.finditer(text):  # "How many engines does the X1 have?": engines are counted
                phrase = noun_phrase(match.group(1).split())
                if phrase:
                    used[term_key(phrase)] += 1
        if row_count(unit):
            used[term_key(re.sub(r"\s*\([^)]*\)", "", unit.cells[0]))] += 1  # a "Tiles | 160" row: a count of things
        for header in column_counts(unit):
            used[term_key(header)] += 1  # "Model: S40 | Slices: 40": a column that counts things
    return used


def column_counts(unit: Unit) -> list[str]:
    """The column headers of a rendered table row (``"Model: S40 | Slices: 40"``) whose cell is a bare count and
    that are plain noun phrases: each counts the things it names (a table with one product per row)."""
    if not unit.cells or unit.chunk.kind != "table_row":
        return []
    out = []
    for part in unit.chunk.text.split(" | "):
        name, sep, value = part.partition(": ")
        name = re.sub(r"\s*\([^)]*\)", "", name).strip()
        if sep and re.fullmatch(r"\s*[\d,]+\s*", value) and name and noun_phrase(name.split()) == name:
            out.append(name)
    return out


def row_count(unit: Unit) -> int:
    """The count a table row ``Tiles | 160`` (``Dataflow units (DFUs) | 80``) gives of the things its label names
    (a plain noun phrase, its parenthetical aside), else 0."""
    if not (unit.cells and len(unit.cells) >= 2 and re.fullmatch(r"\s*[\d,]+\s*", unit.cells[1] or "")):
        return 0
    label = re.sub(r"\s*\([^)]*\)", "", unit.cells[0])
    return int(unit.cells[1].replace(",", "")) if noun_phrase(label.split()) == label.strip() else 0
