"""What a document's structure says about its vocabulary (read by `ingest.profile_glossary.build_glossary`).

- Scope headings ("4.2.3 Per work-group", "Each die", `ingest.profile_scope.scope_heading`) use their noun as a
  unit, as "per X" in a sentence does.
- A count item under a scope heading ("Each die > Clusters: 24") is a containment; one under no scope heading, or
  under the chip's own ("Per chip > Matrix engines: 40"), counts the chip's.
- In documents that name no cache level, their one chip-wide cache is the L2 in the profile's sense.
- With no definition of the compute unit, it is read from structure (`compute_unit_from_structure`).

Only the layout of headings and list items and English syntax are fixed here, never a vendor's words.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ingest.profile_containment import Containment
from ingest.profile_definitions import Definition
from ingest.profile_terms import Unit, row_count, scoped_terms, term_key, written_form
from knowledge.types import Chunk

if TYPE_CHECKING:
    from ingest.profile_glossary import Glossary

#: A term that names a cache or a cache level ("the L2", "Infinity Cache", "level-two"): read by the field rules.
CACHE_NAME = re.compile(r"\bcache\b|^l\d$|\blevel[- ]?(?:\d|one|two|three)\b", re.IGNORECASE)

#: Any cache level a document may name: then its shared cache is not taken for the L2 by `only_shared_cache`.
_ANY_CACHE_LEVEL = re.compile(r"\b(?:l[1-4]|llc|mall|level[- ]?(?:[1-4]|one|two|three|four)|(?:first|second|third|"
                              r"last)[- ]level|infinity cache)\b", re.IGNORECASE)
#: A second or third cache level named as such: then a "last-level cache" may be an L3 and is not taken for the L2.
_OTHER_SHARED_LEVEL = re.compile(r"\b(?:l[23]|mall|level[- ]?(?:2|3|two|three)|(?:second|third)[- ]level|infinity "
                                 r"cache)\b", re.IGNORECASE)
#: A cache described as the chip's one shared cache: "shared by all flow clusters", "the chip-level cache".
_CHIP_WIDE = re.compile(r"\bshared\s+by\s+all\b|\bchip[- ]level\b|\bdevice[- ]wide\b|\bin\s+front\s+of\s+(?:the\s+)?"
                        r"(?:device|main|external)\s+memory\b", re.IGNORECASE)


def only_shared_cache(glossary: Glossary, definitions: list[Definition]) -> None:
    """In documents that name no cache level at all (no L1, L2, L3, "second-level", "last-level"), the one cache
    shared by the whole chip is its L2 in the profile's sense (`HardwareProfile.l2_cache_mb`: the on-chip cache
    that all compute units share, CUDA's L2): a cache term defined as shared by all compute units or as the
    chip-level cache ("Fabric cache: The chip-level cache in front of device memory"), and the generic "shared
    cache", are rewritten to "L2 cache". Nothing changes when a document names any cache level, except that a
    "last-level cache" (LLC) in documents that name no second or third level is the L2 in that sense too."""
    if any(_ANY_CACHE_LEVEL.search(text) for text in glossary.texts):
        if not any(_OTHER_SHARED_LEVEL.search(text) for text in glossary.texts):
            glossary.second_level |= {"last-level cache", "last level cache", "llc"}
        return
    wide = {term_key(d.term) for d in definitions if CACHE_NAME.search(term_key(d.term))
            and _CHIP_WIDE.search(d.definiens)}
    if len(wide) <= 1:
        glossary.second_level |= wide | {"shared cache"}


def heading_scopes(glossary: Glossary, chunks: list[tuple[Chunk, tuple[Chunk, ...]]]) -> None:
    """A heading that names a scope ("4.2.3 Per work-group", "Each die") uses its noun as a unit, as "per X" in a
    sentence does (`ingest.profile_terms.used_terms`): once per distinct heading."""
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


_OWNS_BYTES = re.compile(r"\beach\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}?[A-Za-z][\w\-]*)\s+(?:has|contains|holds|"
                         r"includes|owns)\b[^.;]{0,40}?\b\d[\d,.]*\s*(?:[KM]i?B|kilobytes?|megabytes?)\b",
                         re.IGNORECASE)


_ISSUES = re.compile(r"\beach\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}?[A-Za-z][\w\-]*)\s+(?:issues|schedules|"
                     r"dispatches)\b(?P<what>[^.;]{0,60})", re.IGNORECASE)


def _issues_warps(glossary: Glossary, what: str) -> bool:
    """Whether `what` (the words after "each T issues") names a warp: a group-of-threads instruction or a warp
    itself (``one wavefront instruction per cycle``, ``two warps per clock``)."""
    words = re.findall(r"[A-Za-z][\w\-]*", what)
    return any(glossary.concept(w) == "warp" for w in words)


def compute_unit_from_structure(glossary: Glossary, units: list[Unit]) -> None:
    """No definition names the compute unit: take the term that the chip holds most of (``80x Tensix tile``) among
    those of which each holds on-chip memory (``Each Tensix tile has 1464 KiB of scratchpad RAM``), a list of
    execution units (``Each ZX tile contains: 1x Matrix Engine, 2x Vector Engine``) or issues warps (``Each
    compute tile issues one wavefront instruction per cycle``), or for which a table gives memory per unit
    (``Scratch SRAM per DFU | 192 KiB``; a count row ``Dataflow units (DFUs) | 80`` counts the chip's): the unit
    that owns on-chip memory and execution
    units and schedules warps is the compute unit (the profile schema's meaning of the word; CUDA C++ Programming
    Guide, "Hardware Implementation": the multiprocessor creates, schedules and executes warps)."""
    owners: dict[str, str] = {}
    for unit in units:
        for match in _OWNS_BYTES.finditer(unit.text):
            key = term_key(match.group("t"))
            owners.setdefault(glossary.aliases.get(key, key), " ".join(unit.text.split()))
        for match in _ISSUES.finditer(unit.text):
            if _issues_warps(glossary, match.group("what")):
                key = term_key(match.group("t"))
                owners.setdefault(glossary.aliases.get(key, key), " ".join(unit.text.split()))
        for match in _PER_ITEM.finditer(unit.text):  # "- Scratch SRAM per compute engine: 128 KiB"
            key = term_key(match.group("t"))
            owners.setdefault(glossary.aliases.get(key, key), " ".join(unit.text.split()))
    for c in glossary.contains:
        if c.quote.lower().lstrip().startswith("each"):
            owners.setdefault(glossary.aliases.get(c.parent, c.parent), " ".join(c.quote.split()))
    rows = {}  # "Dataflow units (DFUs) | 80": a table row that counts the chip's things
    long_form: dict[str, tuple[str, str]] = {}  # "dfu" -> ("dataflow unit", "DFU")
    for unit in units:
        if not unit.cells:
            continue
        per = _PER_ROW.match(unit.cells[0])
        if per and len(unit.cells) >= 2 and (_BYTES_CELL.match(unit.cells[1]) or
                                             per.group("unit") and _BARE_NUMBER.match(unit.cells[1])):
            key = term_key(per.group("t"))  # "Scratch SRAM per DFU | 192 KiB": each DFU owns memory
            owners.setdefault(glossary.aliases.get(key, key), " ".join(unit.text.split()))
        for header, number in _HEADER_COUNT.findall(unit.chunk.text if unit.chunk.kind == "table_row" else ""):
            key = term_key(header)  # a products-as-rows table: "SKU: P8-112 | Compute engines: 112"
            if glossary.concept(key) in (None, "compute_unit"):
                rows.setdefault(glossary.aliases.get(key, key), int(number))
        count = row_count(unit)
        if count:
            key = term_key(re.sub(r"\s*\([^)]*\)", "", unit.cells[0]))
            rows.setdefault(glossary.aliases.get(key, key), count)
            short = re.search(r"\(([A-Z][A-Z\d]{1,5})s?\)", unit.cells[0])  # "Dataflow units (DFUs)"
            if short and short.group(1)[0] == key[:1].upper():
                rows.setdefault(term_key(short.group(1)), count)
                long_form.setdefault(term_key(short.group(1)), (key, short.group(1)))

    def chip_count(key: str) -> int:  # "10 tiles" counts the "ZX tile"s too; an "Execution engines" row, "engine"s
        return max(glossary.chip_counts.get(key, (0, ""))[0], glossary.chip_counts.get(key.split()[-1], (0, ""))[0],
                   rows.get(key, 0), max((n for k, n in rows.items() if k.split()[-1] == key), default=0))

    candidates = [k for k in owners if chip_count(k) >= 2 and glossary.concept(k) in (None, "compute_unit")]
    counts = sorted((chip_count(k), k) for k in candidates)
    if not counts or (len(counts) > 1 and counts[-1][0] == counts[-2][0]):
        return
    key = counts[-1][1]
    for other in [k for k, t in glossary.terms.items() if t.concept == "compute_unit" and not t.defined]:
        del glossary.terms[other]  # the document's own unit, not a generic name it uses in passing
    name = _name_as_written(key, units)
    if key in long_form:
        name = _name_as_written(long_form[key][0], units)  # "Dataflow units (DFUs) | 80": its written name
    from ingest.profile_glossary import Term

    glossary.terms[key] = Term(name=name, concept="compute_unit", similarity=0.0,
                               quote=owners[key], chunk=None, defined=False,  # type: ignore[arg-type]
                               aliases={a for a, k in glossary.aliases.items() if k == key})


#: A list item "<memory> per <T>: <size in bytes>" (the item form of a `_PER_ROW` row).
_PER_ITEM = re.compile(r"(?:^|(?<=[\n:]))\s*(?:[-*+\u2022]\s+)?[A-Za-z][\w\- ]{1,40}?\s+per\s+"
                       r"(?P<t>(?:[A-Za-z][\w\-]*\s*){1,3}?)\s*:\s*(?:up\s+to\s+|at\s+most\s+)?\d[\d,.]*\s*"
                       r"(?:[KM]i?B|kilobytes?|megabytes?)\b", re.IGNORECASE)
#: A rendered table cell "<plural noun>: <integer>" ("Compute engines: 112"), with the cell boundary before it.
_HEADER_COUNT = re.compile(r"(?:^|\|)\s*([A-Za-z][A-Za-z\- ]{1,40}?s)\s*:\s*(\d{1,5})\s*(?=\||$)")
#: A table row label "<memory> per <T>" and a cell that is a size in bytes ("192 KiB", "256 KiB (a)").
_PER_ROW = re.compile(r"^[A-Za-z][\w\- ]{1,40}?\s+per\s+(?P<t>(?:[A-Za-z][\w\-]*\s*){1,3}?)"
                      r"(?:\s*\((?P<unit>[KM]i?B)\))?$", re.IGNORECASE)
_BYTES_CELL = re.compile(r"^\s*\d[\d,.]*\s*(?:[KM]i?B|kilobytes?|megabytes?)\b", re.IGNORECASE)
#: A bare number: a size in bytes when the row label gives the unit ("Local store per engine (KB) | 128").
_BARE_NUMBER = re.compile(r"^\s*\d[\d,.]*\s*$")


def _name_as_written(key: str, units: list[Unit]) -> str:
    """`key` with the capitalization the documents use (``Tensix tile``), singular."""
    words = [re.escape(w) for w in key.split()]
    rx = re.compile(r"(?<![\w\-])" + r"\s+".join(words[:-1] + [words[-1] + r"(?:s|es)?"]) + r"(?![\w\-])",
                    re.IGNORECASE)
    for unit in units:
        match = rx.search(unit.text)
        if match:
            return written_form(match.group(0))
    return key
