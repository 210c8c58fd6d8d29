"""A document's own vocabulary: which of its terms name the compute unit, the warp, the work-group, shared memory.

Vendors name things their own way (a "vector core", a "tile", a "cell", a "slice"; a "wave", a "bundle", a "strand";
"scratchpad", "tile SRAM", "group memory"). `build_glossary` reads the definitions a document gives and matches
each definiens, by embedding similarity (`ingest.profile_meaning`), to one profile concept (`CONCEPTS`). Only the
syntax of a definition is fixed here, never the words a vendor uses:

- apposition: ``T (the D ...)``, ``D (the T)``, ``D, the T:``, ``N T, each D``, ``T, a D``;
- copula: ``T is/are the D``, ``D is the T`` (which side is the term: the one the document uses as a unit
  elsewhere, in counts ``N T`` or scopes ``per T`` / ``each T``);
- naming: ``calls its D a T``, ``D is called T``, ``known as T``;
- glossary rows: a table row or definition-list item ``T | D`` / ``T: D`` whose D is a phrase of several words;
- aliases and abbreviations: ``T ('A')``, ``T (A)`` with A an abbreviation of T or a single quoted word.

It also reads containment (``each T1 has N T2``, ``N T1, each with N2 T2``, ``T1 contains N T2``, ``N T2 per T1``):
a term inside the compute unit is a sub-unit, a term that holds compute units is a partition, and per-sub-unit
figures can be scaled by the stated counts. `Glossary.rewrite` replaces a document's terms by the generic name of
their concept, so that a label such as ``Tile SRAM per dispatch`` reads as ``shared memory per thread block`` to
the field matcher, and `Glossary.level` tells the scope a term names.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ingest.profile_containment import Containment, component_lists, containments
from ingest.profile_definitions import Definition, definitions_in
from ingest.profile_meaning import ConceptSpace, prefetch
from ingest.profile_structure import CACHE_NAME as _CACHE_NAME
from ingest.profile_structure import compute_unit_from_structure, heading_scopes, only_shared_cache, scoped_count
from ingest.profile_terms import counted_terms, term_key, text_units, used_terms, written_form
from knowledge.types import Chunk

#: Concept -> its generic names (the vocabulary of CUDA, HIP, OpenCL and SYCL documentation) and plain-words
#: descriptions (what a glossary would say); a text is matched to a concept by embedding similarity (the best over
#: the concept's entries). Vendor terms are reached through the document's own definitions, not listed here.
CONCEPTS = ConceptSpace({
    "compute_unit": [
        "compute unit", "streaming multiprocessor", "processor core",
        "a processor core that runs thread blocks and has its own shared memory and registers",
        "the basic building block to which blocks of threads are assigned",
        "a self-contained processor with its own local memory",
        "the unit that a runtime schedules kernel work onto, one thread block or work-group at a time",
        "the programmable unit of the architecture", "the chip's unit of computation",
        "the core that one kernel instance is compiled for and runs on",
        # its role in the programming model (CUDA C Programming Guide, "Hardware Implementation": the blocks of a
        # grid are distributed to the multiprocessors; OpenCL 3.0 s. 3.2.2: a work-group executes on one compute
        # unit), in words that name no vendor's unit
        "the hardware unit that receives whole work-groups from the dispatcher and runs them",
        "the place where the scheduler puts each thread block to execute",
        "a unit that thread blocks are handed to, to run on it",
        "the hardware unit to which the scheduler gives thread blocks",
    ],
    "warp": [
        "warp", "wavefront",
        "the group of threads that issue one instruction together in lock step",
        "threads that a core schedules and issues together as one instruction",
        "a group of 32 or 64 threads executed together by one instruction",
    ],
    "block": [
        "thread block", "work-group",
        "a group of threads placed together on one processor that share its local memory",
        "a group of warps",
    ],
    "shared_memory": [
        "shared memory", "local data share", "LDS", "shared local memory", "SLM", "scratchpad memory",
        "software-managed on-chip memory that the threads of a block share",
        "local memory that programs manage explicitly, not a cache", "software-managed memory",
    ],
    "register_file": ["register file", "storage for the registers of the threads"],
    "sub_unit": [
        "SIMD unit", "vector pipeline", "execution unit",
        "an arithmetic unit of several lanes that executes vector instructions",
    ],
    "partition": ["die", "chiplet", "shader array", "a die or array that groups several of the chip's processors"],
    "cache": ["cache", "a hardware-managed cache memory", "a cache that keeps copies of recently used data"],
    "chip": ["chip", "accelerator", "the whole chip, processor, device or accelerator product"],
    "thread": ["thread", "lane", "work-item", "one of the parallel instances of a program"],
})
#: Concept -> the generic words a term of that concept is rewritten to.
CANONICAL = {"compute_unit": "compute unit", "warp": "warp", "block": "thread block",
             "shared_memory": "shared memory", "register_file": "register file", "sub_unit": "SIMD unit",
             "partition": "partition", "cache": "cache", "chip": "chip", "thread": "thread"}
#: Concept -> scope level (see `ingest.profile_text.level_cues`): "part" = a partition of the chip (between
#: the chip and the compute unit), "sub" = inside the compute unit.
LEVELS = {"compute_unit": "cu", "sub_unit": "sub", "partition": "part", "chip": "chip", "block": "block",
          "warp": "warp", "thread": "sub"}
#: The noun phrase that heads a definiens ("the compute unit of the ZX-40") decides when it is this similar to a
#: concept (it names the concept); otherwise the whole definiens must reach `DEFINITION_SIMILARITY`.
HEAD_SIMILARITY = 0.75
DEFINITION_SIMILARITY = 0.45
#: A term used without any definition must be (nearly) a generic name of a concept ("compute units", "SMs").
BARE_TERM_SIMILARITY = 0.9

@dataclass
class Term:
    """One of the document's terms and the concept it names.

    Attributes:
        name: the term as the document writes it (singular; e.g. ``vector core``).
        concept: a key of `CONCEPTS`.
        similarity: cosine similarity of its definition (or of the bare term) to the concept.
        quote: the sentence or row that defines it, verbatim (whitespace collapsed).
        chunk: the chunk the quote is in.
        aliases: other keys that name the same thing (abbreviations, quoted names).
        defined: True when the document defines it, False when only its name was matched.
    """

    name: str
    concept: str
    similarity: float
    quote: str
    chunk: Chunk
    aliases: set[str] = field(default_factory=set)
    defined: bool = True


@dataclass
class Glossary:
    """The vocabulary of one chip's documents (see module docstring)."""

    terms: dict[str, Term] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    contains: list[Containment] = field(default_factory=list)
    chip_counts: dict[str, tuple[int, str]] = field(default_factory=dict)
    used: Counter = field(default_factory=Counter)
    texts: list[str] = field(default_factory=list)
    chip_names: set[str] = field(default_factory=set)
    #: Groups of threads named by their size ("squads of 64 threads", "wavefronts of 64 work-items"): term key ->
    #: ``warp`` or ``block``, also for a term used only in that one phrase.
    groups: dict[str, str] = field(default_factory=dict)
    #: Cache terms that the documents define as the second-level cache ("Array cache: The second-level cache ..."),
    #: or their one chip-wide cache (`_only_shared_cache`): rewritten to "L2 cache".
    second_level: set[str] = field(default_factory=set)
    #: Qualifier words of the clock the documents' peak figures are at (`ingest.profile_clock.peak_clock_words`).
    peak_clocks: set[str] = field(default_factory=set)
    _mentions: dict[str, int] = field(default_factory=dict)

    def mentions(self, key: str) -> int:
        """How many sentences or rows mention the term `key` (singular or plural)."""
        if key not in self._mentions:
            words = [re.escape(w) for w in key.split()]
            if not words:
                return 0
            rx = re.compile(r"(?<![\w\-])" + r"\s+".join(words[:-1] + [words[-1] + r"(?:s|es)?"]) + r"(?![\w\-])")
            self._mentions[key] = sum(1 for text in self.texts if rx.search(text))
        return self._mentions[key]

    def term(self, phrase: str) -> Term | None:
        """The term `phrase` names (directly or through an alias), or None."""
        key = term_key(phrase)
        key = self.aliases.get(key, key)
        return self.terms.get(key)

    def concept(self, phrase: str) -> str | None:
        """The concept `phrase` names in these documents: a term of theirs, else a generic name
        (``warps``, ``work-items``), else None."""
        found = self.term(phrase)
        if found:
            return found.concept
        return _generic_concept(phrase) if phrase and len(phrase.split()) <= 3 else None

    def level(self, phrase: str) -> str | None:
        """Scope level of the unit `phrase` names (``cu``, ``sub``, ``part``, ``chip``, ``block``, ``warp``), from
        its concept, else from containment (inside the compute unit: ``sub``; holding compute units: ``part``)."""
        found = self.term(phrase)
        concept = found.concept if found else None
        if concept in LEVELS:
            return LEVELS[concept]
        key = self.aliases.get(term_key(phrase), term_key(phrase))
        units = self.compute_unit_keys()
        for c in self.contains:
            if c.child == key and c.parent in units:
                return "sub"
            if c.parent == key and c.child in units:
                return "part"
        return None

    def compute_unit_keys(self) -> set[str]:
        keys = {k for k, t in self.terms.items() if t.concept == "compute_unit"}
        return keys | {a for a, k in self.aliases.items() if k in keys}

    def compute_unit(self) -> Term | None:
        """The document's compute unit: a defined term first, then the most used one, then the most similar."""
        units = [t for t in self.terms.values() if t.concept == "compute_unit"]
        if not units:
            return None
        return max(units, key=lambda t: (t.defined, self.used[term_key(t.name)] > 0, t.similarity))

    def per_parent(self, child: str, parent_keys: set[str]) -> tuple[int, str] | None:
        """(how many `child` one of `parent_keys` holds, quote), when the documents say so."""
        key = self.aliases.get(term_key(child), term_key(child))
        for c in self.contains:
            if c.child == key and c.parent in parent_keys:
                return c.count, c.quote
        return None

    def rewrite(self, text: str) -> str:
        """`text` with every term of the glossary (and alias) replaced by the generic name of its concept, and a
        cache the documents define as the second-level one by "L2 cache", and an acronym that is a generic name of
        shared memory ("SLM", "LDS") by "shared memory"."""
        text = _ACRONYM.sub(_shared_memory_acronym, text)
        if not self.terms and not self.second_level:
            return text
        names: dict[str, str] = {key: "L2 cache" for key in self.second_level}
        for key, t in self.terms.items():
            for spelling in {key, term_key(t.name), *t.aliases}:
                if spelling and spelling not in _GENERIC_KEYS:
                    names[spelling] = CANONICAL[t.concept]
        for spelling in sorted(names, key=len, reverse=True):
            words = [re.escape(w) for w in spelling.split()]
            last = words[-1]
            pattern = r"(?<![\w\-])" + r"\s+".join(words[:-1] + [rf"{last}(?:s|es)?"]) + r"(?![\w\-])"
            text = re.sub(pattern, names[spelling], text, flags=re.IGNORECASE)
        return text


#: An upper-case acronym of 2-5 letters standing alone.
_ACRONYM = re.compile(r"(?<![\w\-])[A-Z]{2,5}(?![\w\-])")


def _shared_memory_acronym(match: re.Match) -> str:
    """``shared memory`` for an acronym that names it generically (`_generic_concept`: "SLM", "LDS"), else the
    acronym as written."""
    return CANONICAL["shared_memory"] if _names_shared_memory(match.group(0)) else match.group(0)


@functools.lru_cache(maxsize=4096)
def _names_shared_memory(acronym: str) -> bool:
    return _generic_concept(acronym) == "shared_memory"


#: Generic names (already the canonical words): never rewritten.
_GENERIC_KEYS = frozenset(term_key(v) for v in CANONICAL.values())



# ---------------------------------------------------------------- building

def build_glossary(chunks: list[tuple[Chunk, tuple[Chunk, ...]]]) -> Glossary:
    """The glossary of one chip's documents: terms and their concepts, aliases, containment and chip-level counts.

    Args:
        chunks: merged chunks (see `ingest.profile_extract.merge_windows`) of the chip's documents.

    Raises:
        StoreError: the embedding model cannot be loaded.
    """
    units = text_units(chunks)
    glossary = Glossary(used=used_terms(units), texts=[u.text.lower() for u in units])
    heading_scopes(glossary, chunks)
    definitions: list[Definition] = []
    for unit in units:
        defs, aliases = definitions_in(unit, glossary.mentions)
        definitions += defs
        for term, alias in aliases:
            a, t = term_key(alias), term_key(term)
            if a and t and a != t:
                glossary.aliases.setdefault(a, t)
        glossary.contains += containments(unit)
        for count, phrase, _ in counted_terms(unit.text):
            glossary.chip_counts.setdefault(term_key(phrase), (count, unit.text))
        scoped_count(glossary, unit)
    for chunk, _ in chunks:
        if chunk.kind != "table_row":
            glossary.contains += component_lists(chunk.text)
    definitions = [d for d in definitions if (d.unit.cells or d.explicit or _in_use(glossary, _key_of(glossary, d),
                                                                                    True))
                   and (not d.members or _generic_concept(d.members) == "thread")]
    prefetch(term_key(d.term) for d in definitions)
    _classify_bare_terms(glossary)  # generic names first, so definitions read with them ("work-groups")
    _classify_definitions(glossary, definitions)
    _classify_bare_terms(glossary)
    found = glossary.compute_unit()
    if found is None or not found.defined:  # none, or only a generic name used in passing ("120 compute units")
        compute_unit_from_structure(glossary, units)
    _shortened_references(glossary)
    _partitions_from_containment(glossary)
    only_shared_cache(glossary, definitions)
    return glossary


def _partitions_from_containment(glossary: Glossary) -> None:
    """A term that holds compute units is a partition of the chip ("8 shader arrays, each with 10 SPUs"), whatever
    its definition said; a term inside the compute unit is a sub-unit. A term taken for a compute unit that holds
    several of another compute-unit term ("6 clusters of 4 engines", both read as processors) is the partition:
    the unit of computation is the innermost one that the document counts (the CUDA/OpenCL sense of a compute
    unit: the processor that runs one block, never a group of them)."""
    units = glossary.compute_unit_keys()
    for c in glossary.contains:
        child = glossary.aliases.get(c.child, c.child)
        parent = glossary.aliases.get(c.parent, c.parent)
        if child in units and parent != child and c.count >= 2:
            term = glossary.terms.get(parent)
            if term is not None and term.concept != "partition":
                term.concept = "partition"


def _classify_definitions(glossary: Glossary, definitions: list[Definition]) -> None:
    """Match each definition to a concept: by its head noun phrase when that names a concept, else by the whole
    definiens. Two passes: the second reads each definiens with the terms found in the first rewritten to generic
    words (``A group of bundles placed on one tile`` -> ``A group of warps placed on one compute unit``); the
    generic names already in the glossary (`_classify_bare_terms`) are rewritten in both passes."""
    bare = dict(glossary.terms)
    for _ in range(2):
        found: dict[str, Term] = {}
        prefetch([_masked(glossary, d, d.head) for d in definitions if d.head]
                 + [_masked(glossary, d, d.definiens) for d in definitions])
        for d in definitions:
            key = glossary.aliases.get(term_key(d.term), term_key(d.term))
            if d.members and key:  # "squads of 64 threads": a group of threads, whatever else the term is
                group = _definition_concept(glossary, d)
                if group is not None and group.concept in ("warp", "block"):
                    glossary.groups[key] = group.concept
            if key and _CACHE_NAME.search(key) and _SECOND_LEVEL.search(d.definiens) and \
                    not _CACHE_LEVEL_NAME.search(key):
                glossary.second_level.add(key)  # "Array cache: The second-level cache shared by all DCCs"
            if not key or key in _GENERIC_KEYS or len(key.split()) > 4 or _generic_name(key) or _CACHE_NAME.search(key):
                continue  # caches and cache levels ("the L2", "Infinity Cache") are read by the field rules
            choice = _definition_concept(glossary, d)
            if choice is None or choice.concept in ("chip", "cache"):
                continue  # product names and caches are read by the field rules, not rewritten
            if choice.concept in LEVELS and not d.unit.cells and not _in_use(glossary, key, d.explicit):
                continue  # a unit concept needs a term the documents use as a unit ("per T", "48 T")
            best = found.get(key)
            if best is None or choice.similarity > best.similarity:
                found[key] = Term(name=written_form(d.term), concept=choice.concept, similarity=choice.similarity,
                                  quote=" ".join(d.unit.text.split()), chunk=d.unit.chunk)
        glossary.terms = {**{k: t for k, t in bare.items() if k not in found}, **found}
    for alias, key in glossary.aliases.items():
        if key in glossary.terms:
            glossary.terms[key].aliases.add(alias)


#: A definiens that names the second cache level ("The second-level cache shared by all cores", "the L2 of the
#: chip"); a cache name that already names its level ("L3 cache", "level-one cache") keeps it.
_SECOND_LEVEL = re.compile(r"^\W*(?:the|a|an|its|our)?\s*(?:[\w\-]+['\u2019]s\s+)?"
                           r"(?:second[- ]level|level[- ](?:2|two)|L2)\b", re.IGNORECASE)
_CACHE_LEVEL_NAME = re.compile(r"\bl\d\b|\blevel[- ]?(?:\d|one|two|three)\b|\b(?:first|second|third|last)[- ]level\b",
                               re.IGNORECASE)


def _key_of(glossary: Glossary, d: Definition) -> str:
    key = term_key(d.term)
    return glossary.aliases.get(key, key)


def _in_use(glossary: Glossary, key: str, explicit: bool) -> bool:
    """The documents count or scope by `key` (or an alias of it), in a sentence or in a count item of the chip's
    ("processing elements: 144"); an explicit naming ("calls its compute unit a cell", "strands of 32 threads")
    needs only a second mention of the term or of an alias ("TCDM" for "tightly coupled data memory"). A term of
    several words is in use when its head noun alone is ("The compute cluster is ...", then "192 KB per cluster"),
    unless that noun is an alias or a generic name of a concept ("core", "unit")."""
    aliases = [a for a, k in glossary.aliases.items() if k == key]
    if glossary.used[key] or any(glossary.used[a] for a in aliases):
        return True
    if any(k in glossary.chip_counts for k in (key, *aliases)):
        return True  # a count item of the chip's ("processing elements: 144") uses the term as a unit
    head = key.split()[-1] if len(key.split()) > 1 else ""
    if head and glossary.used[head] and head not in glossary.aliases and not _generic_name(head):
        return True  # "The compute cluster is ...", then "per cluster", "48 clusters": its head noun alone
    return explicit and glossary.mentions(key) + sum(glossary.mentions(a) for a in aliases) >= 2


def _generic_concept(phrase: str) -> str | None:
    """The concept of which `phrase` is a generic name (``wavefront`` -> ``warp``, ``lanes`` -> ``thread``), else
    None."""
    choice = CONCEPTS.choose(term_key(phrase), min_similarity=BARE_TERM_SIMILARITY, min_margin=0.1)
    return choice.concept if choice else None


def _generic_name(key: str) -> bool:
    """True for a generic name of a concept (``wavefront``, ``compute unit``): the documents use it, they do not
    redefine it."""
    return _generic_concept(key) is not None


#: A definiens that opens with its head noun and an "of" complement ("A block of threads that ...", "the set of lanes").
_HEAD_OF = re.compile(r"^\W*(?:(?:the|a|an|one)\s+)?(?P<h>[A-Za-z][\w\-]*)\s+of\s+(?P<c>[A-Za-z][\w\-]*)",
                      re.IGNORECASE)


def _definition_concept(glossary: Glossary, d: Definition):
    """The concept of a definition: its head noun phrase when that names one ("the compute unit of ..."), except
    that threads in the plural make a group of threads ("The filaments that a core issues together": a warp or a
    work-group, told by the rest of the definiens); else the whole definiens."""
    head = _masked(glossary, d, d.head) if d.head else ""
    if head and head != "it":
        choice = CONCEPTS.choose(head, min_similarity=HEAD_SIMILARITY, min_margin=0.1)
        of = _HEAD_OF.match(d.definiens) if choice is None else None
        if of and of.group("h").lower() == d.head.lower():  # "A block of threads that ...": the head with its "of"
            choice = CONCEPTS.choose(f"{head} of {of.group('c')}", min_similarity=HEAD_SIMILARITY, min_margin=0.1)
        if choice is not None and choice.concept == "thread" and d.head.split()[-1].lower().endswith("s"):
            return CONCEPTS.choose(_masked(glossary, d, d.definiens), among=("warp", "block"),
                                   min_similarity=DEFINITION_SIMILARITY, min_margin=0.03)
        if choice is not None:
            return choice
    choice = CONCEPTS.choose(_masked(glossary, d, d.definiens), among=d.among,
                             min_similarity=DEFINITION_SIMILARITY, min_margin=0.03)
    if choice is not None and choice.concept == "compute_unit" and _INSIDE_ANOTHER.search(d.definiens):
        return None  # "one of the four pipelines of a core, which runs its waves": a part of the unit, not it
    return choice


#: A definiens that places the term inside another unit ("one of the 4 SIMD pipelines of a core", "the lane group
#: inside each core", "a part of the tile"): whatever it runs, it is a part of the compute unit.
_INSIDE_ANOTHER = re.compile(r"\bone\s+of\s+(?:the\s+|its\s+)?(?:\w+\s+){0,3}?[\w\-]+\s+(?:of|in)\s+"
                             r"(?:a|an|each|every|the)\b|\b(?:inside|within|part\s+of)\s+(?:a|an|each|every|the|one)\b",
                             re.IGNORECASE)


def _shortened_references(glossary: Glossary) -> None:
    """A used term that is the last words of exactly one defined term refers to it (``engine`` after ``compute
    engines``, ``cluster`` after ``processing clusters``)."""
    for key in list(glossary.used):
        if key in glossary.terms or key in glossary.aliases:
            continue
        longer = [k for k in glossary.terms if k.endswith(" " + key)]
        if len(longer) == 1:
            glossary.aliases[key] = longer[0]
            glossary.terms[longer[0]].aliases.add(key)


def _classify_bare_terms(glossary: Glossary) -> None:
    """Terms the documents use as units (counted, or after per/each) but never define: only a generic name of a
    concept (``compute units``, ``streaming multiprocessors``, ``wavefront``) is matched on its name alone."""
    prefetch([k for k, _ in glossary.used.most_common(60)])
    for key, _ in glossary.used.most_common(60):
        key = glossary.aliases.get(key, key)
        if key in glossary.terms or not key or len(key.split()) > 3:
            continue
        choice = CONCEPTS.choose(key, min_similarity=BARE_TERM_SIMILARITY, min_margin=0.1)
        if choice is None:
            continue
        quote = next((q for k, (_, q) in glossary.chip_counts.items() if k == key), "")
        glossary.terms[key] = Term(name=key, concept=choice.concept, similarity=choice.similarity, quote=quote,
                                   chunk=None, defined=False)  # type: ignore[arg-type]


def _mask(text: str, term: str, aliases: Iterable[str] = ()) -> str:
    """`text` with the defined term itself and its `aliases` (``VP`` for "vector processor (VP)") replaced by "it":
    its own names must not decide what it means."""
    for name in sorted({term_key(term), *aliases}, key=len, reverse=True):
        words = [re.escape(w) for w in name.split()]
        if words:
            pattern = r"(?<![\w\-])" + r"\s+".join(words[:-1] + [words[-1] + r"(?:s|es)?"]) + r"(?![\w\-])"
            text = re.sub(pattern, "it", text, flags=re.IGNORECASE)
    return text


def _masked(glossary: Glossary, d: Definition, text: str) -> str:
    """`text` of definition `d` with its term and the term's aliases masked (`_mask`), then rewritten to generic
    words."""
    key = glossary.aliases.get(term_key(d.term), term_key(d.term))
    return glossary.rewrite(_mask(text, d.term, [a for a, k in glossary.aliases.items() if k == key] + [key]))
