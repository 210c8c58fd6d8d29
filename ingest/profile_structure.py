"""What a document's structure says about its vocabulary (read by `ingest.profile_glossary.build_glossary`).

- Scope headings ("4.2.3 Per work-group", "Each die", `ingest.profile_scope.scope_heading`) use their noun as a
  unit, as "per X" in a sentence does.
- A count item under a scope heading ("Each die > Clusters: 24") is a containment; one under no scope heading, or
  under the chip's own ("Per chip > Matrix engines: 40"), counts the chip's.
- In documents that name no cache level, their one chip-wide cache is the L2 in the profile's sense.

Only the layout of headings and list items and English syntax are fixed here, never a vendor's words.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ingest.profile_definitions import Containment, Definition, Unit, scoped_terms, term_key
from knowledge.types import Chunk

if TYPE_CHECKING:
    from ingest.profile_glossary import Glossary

#: A term that names a cache or a cache level ("the L2", "Infinity Cache", "level-two"): read by the field rules.
CACHE_NAME = re.compile(r"\bcache\b|^l\d$|\blevel[- ]?(?:\d|one|two|three)\b", re.IGNORECASE)

#: Any cache level a document may name: then its shared cache is not taken for the L2 by `only_shared_cache`.
_ANY_CACHE_LEVEL = re.compile(r"\b(?:l[1-4]|llc|mall|level[- ]?(?:[1-4]|one|two|three|four)|(?:first|second|third|"
                              r"last)[- ]level|infinity cache)\b", re.IGNORECASE)
#: A cache described as the chip's one shared cache: "shared by all flow clusters", "the chip-level cache".
_CHIP_WIDE = re.compile(r"\bshared\s+by\s+all\b|\bchip[- ]level\b|\bdevice[- ]wide\b|\bin\s+front\s+of\s+(?:the\s+)?"
                        r"(?:device|main|external)\s+memory\b", re.IGNORECASE)


def only_shared_cache(glossary: Glossary, definitions: list[Definition]) -> None:
    """In documents that name no cache level at all (no L1, L2, L3, "second-level", "last-level"), the one cache
    shared by the whole chip is its L2 in the profile's sense (`HardwareProfile.l2_cache_mb`: the on-chip cache
    that all compute units share, CUDA's L2): a cache term defined as shared by all compute units or as the
    chip-level cache ("Fabric cache: The chip-level cache in front of device memory"), and the generic "shared
    cache", are rewritten to "L2 cache". Nothing changes when a document names any cache level."""
    if any(_ANY_CACHE_LEVEL.search(text) for text in glossary.texts):
        return
    wide = {term_key(d.term) for d in definitions if CACHE_NAME.search(term_key(d.term))
            and _CHIP_WIDE.search(d.definiens)}
    if len(wide) <= 1:
        glossary.second_level |= wide | {"shared cache"}


def heading_scopes(glossary: Glossary, chunks: list[tuple[Chunk, tuple[Chunk, ...]]]) -> None:
    """A heading that names a scope ("4.2.3 Per work-group", "Each die") uses its noun as a unit, as "per X" in a
    sentence does (`ingest.profile_definitions.used_terms`): once per distinct heading."""
    from ingest.profile_scope import scope_heading

    seen: set[str] = set()
    for chunk, _ in chunks:
        parts = (chunk.section or "").split(" > ")
        for n in range(2, len(parts) + 1):
            scope = scope_heading(" > ".join(parts[:n]))
            if scope and scope.lower() not in seen:
                seen.add(scope.lower())
                for phrase in scoped_terms(scope):
                    glossary.used[term_key(phrase)] += 1


#: A list item that gives a count of things: "Clusters: 24", "Dies: 2, joined by a bridge" (a plural label).
_COUNT_ITEM = re.compile(r"^(?P<t>[A-Za-z][\w\- ]{1,40}?s)\s*:\s*(?P<n>\d{1,5})(?![\d.,]\d|\s*[A-Za-z%/])")


def scoped_count(glossary: Glossary, unit: Unit) -> None:
    """A count item under a scope heading ("Each die > Clusters: 24") is a containment (each die holds 24
    clusters); one under no scope heading, or under a heading that scopes the chip itself ("Per chip > Matrix
    engines: 40"), counts the chip's. See `ingest.profile_scope.scope_heading`."""
    from ingest.profile_scope import scope_heading
    from ingest.profile_text import CHIP_NOUNS

    if unit.cells:
        return
    scope = scope_heading(unit.chunk.section or "")
    for item in re.split(r"(?:^|\s)-\s+", unit.text):  # list items run together in a chunk's text
        match = _COUNT_ITEM.match(item.strip())
        if not match:
            continue
        child, count = term_key(match.group("t")), int(match.group("n"))
        parent = term_key(re.sub(r"^\s*(?:each|every|per|one|a single)\s+", "", scope, flags=re.IGNORECASE))
        if parent and not re.fullmatch(CHIP_NOUNS, parent):
            glossary.contains.append(Containment(parent, child, count, item.strip()))
        else:
            glossary.chip_counts.setdefault(child, (count, item.strip()))
