"""Containment in hardware documents: what holds how many of what ("each cluster has 4 engines", "6 clusters of 4
engines", "Each Tensix tile contains: 1x L1 ... 5x RISCV cores"), read as (parent, child, count) over term keys
(`ingest.profile_terms.term_key`). `ingest.profile_glossary` decides what the terms mean.

Only English syntax is fixed here (determiners, verbs of having, "each", "per", "of"), never a vendor's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.profile_terms import NUMBER, UNIT_WORD, Unit, count_value, noun_phrase, term_key


@dataclass
class Containment:
    """``count`` of `child` in each `parent` (term keys), read from `quote`."""

    parent: str
    child: str
    count: int
    quote: str




#: A term of one to three words (lazy), the parent of a containment; `_CHILD`: the counted children's words.
_PARENT = r"(?:[A-Za-z][\w\-]*\s+){0,2}?[A-Za-z][\w\-]*"
_CHILD = r"(?:[A-Za-z][\w\-]*\s*){1,3}"
_HAS_VERBS = ("has|have|contains|holds|includes|consists of|is made of|is built from|is composed of|comprises|with|"
              "pairs|combines|groups|bundles|houses|hosts|integrates|carries|packs")
_CONTAINS_VERBS = ("contains|holds|includes|consists of|is built from|is composed of|comprises|has|pairs|combines|"
                   "groups|bundles|houses|hosts|integrates|carries|packs")
_EACH_WITH_VERBS = "with|of|has|holding|containing|housing|comprising|including|carrying"

_EACH_HAS = re.compile(rf"\b(?:each|every)\s+(?P<p>{_PARENT})\s+(?:{_HAS_VERBS})\s+(?P<n>{NUMBER})\s+(?P<c>{_CHILD})",
                       re.IGNORECASE)
_CONTAINS = re.compile(rf"\b(?:a|an|the|one)\s+(?P<p>{_PARENT})\s+(?:{_CONTAINS_VERBS})\s+(?P<n>{NUMBER})\s+"
                       rf"(?P<c>{_CHILD})", re.IGNORECASE)
_EACH_WITH = re.compile(rf"(?<![\w.,])(?P<m>{NUMBER})\s+(?P<p>{_PARENT}),?\s+each\s+(?:{_EACH_WITH_VERBS})\s+"
                        rf"(?P<n>{NUMBER})\s+(?P<c>{_CHILD})", re.IGNORECASE)
_PER_PARENT = re.compile(rf"(?<![\w.,])(?P<n>{NUMBER})\s+(?P<c>{_PARENT})\s+per\s+(?P<p>{_CHILD})", re.IGNORECASE)

#: "6 clusters of 4 engines", "8 groups of 16 lanes": N parents, each of M children (the parent's count is read as a
#: chip-level count by `counted_terms`).
_N_OF_M = re.compile(rf"(?<![\w.,])(?P<m>{NUMBER})\s+(?P<p>(?:[A-Za-z][\w\-]*\s+){{0,1}}?[A-Za-z][\w\-]*s)\s+of\s+"
                     rf"(?P<n>{NUMBER})\s+(?P<c>{_CHILD})", re.IGNORECASE)
#: "every column is a chain of 64 tiles", "each row forms a ring of 8 cores": M children in each parent.
_EVERY_IS_OF = re.compile(rf"\b(?:each|every)\s+(?P<p>{_PARENT})\s+(?:is|forms|makes up)\s+(?:a|an|one)\s+"
                          rf"[A-Za-z][\w\-]*\s+of\s+(?P<n>{NUMBER})\s+(?P<c>{_CHILD})", re.IGNORECASE)
#: The text just before a count that is a per-parent count of one of those forms ("6 clusters of |4|",
#: "every column is a chain of |64|"): not a chip-level count.
PER_PARENT_BEFORE = re.compile(rf"(?:(?<![\w.,]){NUMBER}\s+(?:[A-Za-z][\w\-]*\s+)?[A-Za-z][\w\-]*s\s+of|"
                               rf"\b(?:each|every)\s+(?:[A-Za-z][\w\-]*\s+){{1,3}}(?:is|forms|makes up)\s+"
                               rf"(?:a|an|one)\s+[A-Za-z][\w\-]*\s+of)\s+$", re.IGNORECASE)


#: "Each Tensix tile contains: 1x L1 ... 5x RISCV cores": a list of components after "each T contains:".
_EACH_CONTAINS_LIST = re.compile(r"\beach\s+(?P<p>(?:[A-Za-z][\w\-]*\s+){0,2}?[A-Za-z][\w\-]*)\s+"
                                 r"(?:contains|has|includes|consists of)\s*:", re.IGNORECASE)
_LIST_ITEM = re.compile(r"(?<![\w.])(\d+)x\s+\"?([A-Za-z][\w\-\" ]*?)\"?(?:\s*\(\w+\))?(?=[,.;:\n]|\s+-|$)")


def component_lists(text: str) -> list[Containment]:
    """Containment from a list of components after "Each T contains:" (the list items follow on their own lines:
    read over a whole chunk, not one sentence)."""
    out = []
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    for head in _EACH_CONTAINS_LIST.finditer(text):
        parent = term_key(noun_phrase(head.group("p").split()) or head.group("p"))
        quote = " ".join(text[head.start():head.end()].split())
        for match in _LIST_ITEM.finditer(text[head.end():head.end() + 1500]):
            child = term_key(match.group(2).replace('"', ""))
            if child:
                out.append(Containment(parent, child, int(match.group(1)), quote))
    return out


def containments(unit: Unit) -> list[Containment]:
    """What one sentence says holds what (see `ingest.profile_glossary`), with the count per parent."""
    out = []
    text = unit.text
    for rx in (_EACH_HAS, _CONTAINS, _EACH_WITH, _PER_PARENT, _N_OF_M, _EVERY_IS_OF):
        for match in rx.finditer(text):
            child = noun_phrase(match.group("c").split())
            parent = noun_phrase(match.group("p").split()) or match.group("p")
            if not child or UNIT_WORD.match(child.split()[0]):
                continue
            out.append(Containment(term_key(parent), term_key(child), count_value(match.group("n")), text))
    return out
