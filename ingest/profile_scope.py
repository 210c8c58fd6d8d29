"""The scope a number is stated at: for several chips, per work-group, per sub-unit, per partition of the chip, per
compute unit, per warp, or for the chip.

A scope is written as "per X", "each X", "one X", "the X has ...", "X-level", "in total", "8-GPU" (see
`ingest.profile_text.level_cues`), or as the chip's possessive ("Wormhole's standard clock"). X is looked up in
the document's glossary (`ingest.profile_glossary`: a "vector core" is the compute unit, a "quad" a sub-unit), then
by its generic words. A parenthetical belongs to its clause; a relative clause after the number ("64 KB of local
store that the threads of one block share") does not scope it; a later clause with no scope of its own takes its
sentence's subject's ("A workgroup can allocate 64 KB and holds up to 1024 work-items").
"""

from __future__ import annotations

import re

from ingest.profile_glossary import Glossary
from ingest.profile_terms import noun_phrase
from ingest.profile_text import Record, classify_noun, level_cues, products_in, without_parentheticals
from ingest.units import Quantity

_SCOPE_RANK = ("multi", "block", "sub", "part", "cu", "warp", "chip")


def scope_of(record: Record, quantity: Quantity, glossary: Glossary) -> str:
    """The scope a number is stated at: ``multi`` (several chips), ``block``, ``sub`` (inside a compute unit),
    ``part`` (a partition of the chip), ``cu``, ``warp``, ``chip`` or ``""`` (none stated). The narrowest cue
    wins; a noun after per/each/one is looked up in the glossary, then by generic words. A table cell's own
    words before its number ("resident per cluster: up to 4,096") scope it before its row label does."""
    texts = scope_texts(record, quantity)
    cues: set[str] = set()
    own = record.text[:quantity.start] if record.is_table else ""
    if re.search(r"[A-Za-z]{3}", own):
        cues = _cues(own, glossary)  # "resident per cluster: up to 4,096" in a notes cell: the cell's own scope
        texts = [] if cues else texts
    for text in texts:
        cues |= _cues(text, glossary)
    if not cues and not record.is_table and any(a <= quantity.start < b for a, b in parens(record.text)):
        cues = _cues(without_parentheticals(record.text), glossary)  # a parenthetical belongs to its clause
    if not cues and record.subject:
        cues = _cues(record.subject, glossary) - {"chip"}  # "A workgroup can allocate 64 KB and holds 1024 ..."
    if not cues:
        cues = _cues(scope_heading(record.chunk.section or ""), glossary)  # under "Each die" (nested list)
    cues |= set(record.levels) & {"multi"}
    for level in _SCOPE_RANK:
        if level in cues:
            return level
    return ""


_SCOPE_HEADING = re.compile(r"^\s*(?:each|every|per|one|a single)\s+[A-Za-z][\w\- ]{0,40}$", re.IGNORECASE)
#: A section number before a heading's title ("4.2.2.1 Per vector slice"), and a heading's closing scope
#: parenthetical ("Peak throughput (per chip)").
_SECTION_NUMBER = re.compile(r"^\s*\d{1,2}(?:\.\d{1,3}){0,5}\.?\s+")
_SCOPE_PAREN = re.compile(r"\((?P<s>(?:each|every|per|one|a single)\s+[A-Za-z][\w\- ]{0,40})\)\s*$", re.IGNORECASE)


def scope_heading(section: str) -> str:
    """The innermost heading of `section` when it only names a scope ("Title > Each die > Each cluster" -> "Each
    cluster": `ingest.loaders.markdown` puts a nested list's scope items there; "4.2.2.1 Per vector slice", a
    numbered heading of a plain-text manual, -> "Per vector slice"), or the scope parenthetical that closes it
    ("Peak throughput (per chip)" -> "per chip"); else empty. A statement with no scope of its own is at that
    scope."""
    inner = section.rsplit(" > ", 1)[-1] if " > " in section else ""
    inner = _SECTION_NUMBER.sub("", inner)
    if _SCOPE_HEADING.match(inner):
        return inner
    paren = _SCOPE_PAREN.search(inner)
    return paren.group("s") if paren else ""


_RELATIVE = re.compile(r"\s(?:that|which|who|whose|where)\s.*$", re.IGNORECASE)
_ORDINAL_LEVEL = re.compile(r"\b(?:first|second|third|last|top|lower|higher|low|high)[- ]level\b", re.IGNORECASE)


def scope_texts(record: Record, quantity: Quantity) -> list[str]:
    """Where a number's scope is written: a cell's label, header, value and row; a clause (relative clauses
    after the number left out: "64 KB of local store that the threads of one block share" is per core)."""
    text = _ORDINAL_LEVEL.sub(" ", record.text)
    if record.is_table:
        inside = next(((a, b) for a, b in parens(text) if a <= quantity.start < b), None)
        value = text[inside[0] + 1:inside[1] - 1] if inside else without_parentheticals(text)
        return [_ORDINAL_LEVEL.sub(" ", record.label), record.header if not products_in(record.header) else "",
                value, record.row]
    inside = next(((a, b) for a, b in parens(text) if a <= quantity.start < b), None)
    if inside:  # the part of the parenthetical the number is in ("(228 KB per SM; 227 KB per block)")
        return [_part_around(text, inside[0] + 1, inside[1] - 1, quantity)]
    out = [without_parentheticals(text[:quantity.end] + _RELATIVE.sub("", text[quantity.end:]))]
    after = re.match(r"\s*\(([^()]{0,60})\)", text[quantity.end:])
    if after and not re.search(r"\d", after.group(1)):
        out.append(after.group(1))
    return out


PER_NOUN = re.compile(r"\b(?:per|each|every|one|a single|single)\s+((?:[\w\-]+\s+){0,2}[\w\-]+)", re.IGNORECASE)
THE_NOUN_HAS = re.compile(r"^\s*(?:the|a|an|its)\s+((?:[\w\-]+\s+){0,2}?[\w\-]+)\s+(?:has|have|holds|contains|"
                           r"is|offers|provides|delivers)\b", re.IGNORECASE)


#: A clause whose subject is one thing of a kind, singular and indefinite ("A WGP pairs ...", "An engine groups
#: ..."), followed by its verb (third person singular) and a figure: the figure is inside one such thing (English
#: syntax: the indefinite article names any one of several, never the chip a datasheet is about by name).
ONE_NOUN_VERBS = re.compile(r"^\s*(?:a|an)\s+((?:[\w\-]+\s+){0,2}?[\w\-]*[^\Ws])\s+(?!is\b|was\b|has\b)[a-z]+s\s+"
                            r"(?:up\s+to\s+|at\s+most\s+)?\d", re.IGNORECASE)


def _cues(text: str, glossary: Glossary) -> set[str]:
    if not text:
        return set()
    cues: set[str] = set()
    if glossary.chip_names and re.search(r"\b(?:" + "|".join(map(re.escape, sorted(glossary.chip_names))) +
                                         r")['\u2019]s\b", text, re.IGNORECASE):
        cues.add("chip")  # "Wormhole's standard 1 GHz clock": the chip's own
    for match in PER_NOUN.finditer(text):
        level = noun_level(match.group(1), glossary)
        if level:
            cues.add(level)
    for match in THE_NOUN_HAS.finditer(text):  # a subject names a scope only when it is a known unit
        level = noun_level(match.group(1), glossary, unknown=None)
        if level:
            cues.add(level)
    for match in ONE_NOUN_VERBS.finditer(text):  # "A WGP pairs 2 compute units": a count inside one X
        level = noun_level(match.group(1), glossary)
        if level and level != "chip":
            cues.add(level)
    generic = level_cues(glossary.rewrite(text))
    cues |= {c for c in generic if c in ("multi", "block", "chip")}
    if not cues:
        cues |= {"part" if c == "sub" else c for c in generic}
    return cues


def noun_level(words: str, glossary: Glossary, unknown: str | None = "sub") -> str | None:
    """Level of the noun phrase after per/each (first words that form a known term); a phrase of nouns neither the
    glossary nor the generic vocabulary knows is `unknown` (a sub-unit, the cautious reading of "per X")."""
    if products_in(words) or any(w.replace("-", "").lower() in glossary.chip_names for w in words.split()):
        return "chip"  # "The C3 has", "each AS-4", "the V5 has": a product is a whole chip (whose, is the product
        # scope's business); the chip's own model token counts even where it is shaped like a version
    tokens = words.split()
    for n in range(len(tokens), 0, -1):
        phrase = " ".join(tokens[:n])
        level = glossary.level(phrase)
        if level == "sub" and _means_work_group(phrase):
            return "block"  # "one task group per PE array" holds it in a unit, but its words say work-group
        if level:
            return level
    rewritten = glossary.rewrite(words).lower()
    if re.match(r"(?:clock|clk|cycle|second|sec|s(?![\w\-])|hour|instruction|op|operation|call|direction|pin|lane)",
                rewritten):
        return None
    level = classify_noun(rewritten)
    if level == "sub" and not re.match(r"[a-z]", rewritten):
        return None
    if level == "sub":
        if _is_partition_word(rewritten):
            return "part"
        return "block" if _means_work_group(rewritten) else unknown
    return level


#: A noun phrase no glossary entry or generic word knows is a work-group when its bare words mean one this clearly
#: (cosine to the work-group concept of `ingest.profile_glossary.CONCEPTS`, and ahead of every other concept).
WORK_GROUP_SIMILARITY = 0.6
WORK_GROUP_MARGIN = 0.15


def _means_work_group(words: str) -> bool:
    """Whether an unknown scope noun means a work-group by its words alone ("per task group", "per cooperative
    group"): all-MiniLM-L6-v2 similarity to the work-group concept (`WORK_GROUP_SIMILARITY`, `WORK_GROUP_MARGIN`).
    Only the work-group is read so: a group of threads is named by its own words, while units and sub-units
    ("island", "slice") are not, and stay unknown (the cautious reading)."""
    from ingest.profile_glossary import CONCEPTS

    phrase = noun_phrase(words.split()) or words
    choice = CONCEPTS.choose(phrase, min_similarity=WORK_GROUP_SIMILARITY, min_margin=WORK_GROUP_MARGIN)
    return choice is not None and choice.concept == "block"


def _is_partition_word(words: str) -> bool:
    return bool(re.match(r"(?:partition|die|chiplet|xcd|gcd|quadrant|array|cluster)", words))



def _part_around(text: str, start: int, end: int, quantity: Quantity) -> str:
    """The ``;``- or ``,``-separated part of ``text[start:end]`` that holds `quantity`."""
    left = max([start] + [m.end() for m in re.finditer(r"[;,]\s", text[:quantity.start]) if m.end() > start])
    right = min([end] + [start + m.start() for m in re.finditer(r"[;,]\s", text[start:end])
                         if start + m.start() >= quantity.end])
    return text[left:right]


def parens(text: str) -> list[tuple[int, int]]:
    """Spans of the short parentheticals of `text`."""
    return [m.span() for m in re.finditer(r"\([^()]{0,120}\)", text)]


def scope_noun(record: Record, quantity: Quantity) -> str:
    for text in scope_texts(record, quantity):
        match = PER_NOUN.search(text or "") or THE_NOUN_HAS.search(text or "")
        if match:
            return noun_phrase(match.group(1).split())
    return ""
