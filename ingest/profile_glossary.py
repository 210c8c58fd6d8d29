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

import re
from collections import Counter
from dataclasses import dataclass, field

from ingest.profile_meaning import ConceptSpace, prefetch
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
        "local memory that programs manage explicitly, not a cache",
    ],
    "register_file": ["register file", "storage for the registers of the threads"],
    "sub_unit": [
        "SIMD unit", "vector pipeline", "execution unit",
        "an arithmetic unit of several lanes that executes vector instructions",
    ],
    "partition": ["die", "chiplet", "shader array", "a die or array that groups several of the chip's processors"],
    "cache": ["cache", "a hardware-managed cache memory"],
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

WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "twelve": 12, "sixteen": 16, "thirty-two": 32, "sixty-four": 64}
_NUMBER = rf"(?:\d{{1,3}}(?:,\d{{3}})+|\d+|{'|'.join(WORD_NUMBERS)})"
#: English function words and verbs that end a noun phrase (grammar, not vocabulary of a vendor).
_STOP = frozenset("""
a an the and or of in on at to for from by with without per each every all both its their his her our your this
that these those which who whom whose is are was were be been being has have had do does did can could may might
will would shall should must run runs running execute executes executed share shares shared hold holds holding
contain contains containing include includes including provide provides deliver delivers offer offers reach
reaches issue issues issued give gives up than as into over under total together inside within while where when
since there it they them which what how why then also not only more most very such new
""".split())
_UNIT_WORD = re.compile(r"^(?:[KMGTP]i?B|[kKMGTP]?B/s|bytes?|bits?|[kKMGT]?Hz|[KMGTP]?FLOPS?|[TPG]?OPS|TF|x|%|"
                        r"[KMGT]bps|GT/s|MT/s|W|mm|nm|ns|us|ms|cycles?|clocks?)$", re.IGNORECASE)
_DETERMINER = re.compile(r"^(?:the|a|an|its|their|our|each|every|one|single|this|that)\s+", re.IGNORECASE)
_WORD = r"[A-Za-z][\w\-']*"


def singular(word: str) -> str:
    """English singular of one (last) word: ``cores`` -> ``core``, ``SPUs`` -> ``SPU``, ``memories`` ->
    ``memory``; words that are not plural stay (``glass``, ``bus``, ``SIMD``)."""
    if len(word) <= 3 and not (len(word) >= 3 and word[:-1].isupper() and word.endswith("s")):
        return word
    if re.search(r"[^aeiou]ies$", word):
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
    while _DETERMINER.match(text):
        text = _DETERMINER.sub("", text, count=1)
    words = text.split()
    if not words:
        return ""
    words[-1] = singular(words[-1])
    return " ".join(words).lower()


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
class Containment:
    """``count`` of `child` in each `parent` (term keys), read from `quote`."""

    parent: str
    child: str
    count: int
    quote: str


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
        found = self.term(phrase)
        return found.concept if found else None

    def level(self, phrase: str) -> str | None:
        """Scope level of the unit `phrase` names (``cu``, ``sub``, ``part``, ``chip``, ``block``, ``warp``), from
        its concept, else from containment (inside the compute unit: ``sub``; holding compute units: ``part``)."""
        concept = self.concept(phrase)
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
        """`text` with every term of the glossary (and alias) replaced by the generic name of its concept."""
        if not self.terms:
            return text
        names: dict[str, str] = {}
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


#: Generic names (already the canonical words): never rewritten.
_GENERIC_KEYS = frozenset(term_key(v) for v in CANONICAL.values())


# ---------------------------------------------------------------- text units of the documents

@dataclass(frozen=True)
class _Unit:
    """A sentence, a list item, or a table row (cells) of one chunk."""

    text: str
    chunk: Chunk
    cells: tuple[str, ...] = ()


def _units(chunks: list[tuple[Chunk, tuple[Chunk, ...]]]) -> list[_Unit]:
    from ingest.profile_text import paragraphs, sentences

    out: list[_Unit] = []
    for chunk, _ in chunks:
        if chunk.kind == "table_row":
            cells = tuple(_row_cells(chunk.text))
            out.append(_Unit(" | ".join(cells), chunk, cells))
            continue
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", chunk.text)
        for paragraph in paragraphs(text):
            for sentence in sentences(paragraph):
                out.append(_Unit(sentence, chunk))
    return out


def _row_cells(text: str) -> list[str]:
    """Cell values of a loader-rendered row ``"caption | H: v | H: v"`` (the caption and headers left out)."""
    parts = [p.strip() for p in text.split(" | ")]
    cells = []
    for n, part in enumerate(parts):
        name, sep, value = part.partition(": ")
        if not sep:
            if n == 0 and len(parts) > 1:
                continue  # caption
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
        if not bare or bare.lower() in _STOP or not re.match(_WORD + "$", bare):
            break
        out.append(bare)
        if bare != clean:
            break
    return " ".join(out)


_COUNT_OF = re.compile(rf"(?<![\w.,\-])({_NUMBER})(?:\s*[x\u00d7])?\s+((?:[A-Za-z*][\w\-'*]*[,.;:)]?\s*){{1,3}})",
                       re.IGNORECASE)
_SCOPE_OF = re.compile(r"\b(?:per|each|every|one|single)\s+((?:[A-Za-z*][\w\-'*]*[,.;:)]?\s*){1,3})", re.IGNORECASE)


def _count_value(text: str) -> int:
    return WORD_NUMBERS.get(text.lower()) or int(text.replace(",", ""))


def counted_terms(text: str) -> list[tuple[int, str, int]]:
    """(count, noun phrase, position) of every ``N <noun phrase>`` in `text` whose phrase is not a unit
    (``48 vector cores`` -> (48, "vector cores", 0); ``128 KB`` is a quantity, not a count of things)."""
    out = []
    for match in _COUNT_OF.finditer(text):
        words = match.group(2).split()
        if not words or _UNIT_WORD.match(words[0].strip("*_`,.;:")):
            continue
        phrase = noun_phrase(words)
        if phrase and not _UNIT_WORD.match(phrase.split()[0]):
            out.append((_count_value(match.group(1)), phrase, match.start()))
    return out


def scoped_terms(text: str) -> list[str]:
    """Noun phrases after ``per``/``each``/``every``/``one``/``single``."""
    out = []
    for match in _SCOPE_OF.finditer(text):
        phrase = noun_phrase(match.group(1).split())
        if phrase and not _UNIT_WORD.match(phrase.split()[0]):
            out.append(phrase)
    return out


def _used_terms(units: list[_Unit]) -> Counter:
    used: Counter = Counter()
    for unit in units:
        texts = [unit.cells[0]] if unit.cells else [unit.text]
        if unit.cells:
            texts += list(unit.cells[1:])
        for text in texts:
            for _, phrase, _ in counted_terms(text):
                used[term_key(phrase)] += 1
            for phrase in scoped_terms(text):
                used[term_key(phrase)] += 1
        if unit.cells and len(unit.cells) >= 2 and re.fullmatch(r"\s*[\d,]+\s*", unit.cells[1] or ""):
            label = re.sub(r"\s*\([^)]*\)", "", unit.cells[0])
            if noun_phrase(label.split()) == label.strip():
                used[term_key(label)] += 1  # a "Tiles | 160" row: a count of things
    return used


# ---------------------------------------------------------------- definitions

@dataclass(frozen=True)
class _Definition:
    """`term` is defined by `definiens`, whose leading noun phrase `head` names what it is."""

    term: str
    definiens: str
    head: str
    unit: _Unit
    explicit: bool = False
    among: tuple[str, ...] | None = None


#: Words of a definiens that are matched (the head of a definition carries its meaning; long tails only blur it).
_MAX_DEFINIENS_WORDS = 32
_PAREN = re.compile(r"((?:[A-Za-z*][\w\-'*]*\s+){0,3}[A-Za-z*][\w\-'*]*)\s*\(([^()]{1,120})\)")
_DET = r"(?:the|a|an|its|our|their|one|\d+|[A-Z][\w\-]*'s)"
_COPULA = re.compile(r"^(?P<left>.{2,80}?)\s+(?:is|are)\s+(?P<right>" + _DET + r"\b.*)$", re.IGNORECASE)
_NAMING = [
    re.compile(r"\bcalls?\s+(?:its|their|the|our)\s+(?P<d>[\w\s\-]{3,40}?)\s+(?:a|an|the)?\s*"
               r"(?P<t>[*_\"']?[A-Za-z][\w\-]*(?:\s+[A-Za-z][\w\-]*)?[*_\"']?)\s*(?=[.,;:]|$)", re.IGNORECASE),
    re.compile(r"(?P<d>[\w\s\-]{3,60}?)\s+(?:is|are)\s+(?:called|named|known as)\s+(?:a|an|the)?\s*"
               r"(?P<t>[*_\"']?[A-Za-z][\w\-]*(?:\s+[A-Za-z][\w\-]*)?)(?=\s*(?:[.;:)]|,\s+(?![A-Z*_\"'])|$))",
               re.IGNORECASE),
]
_APPOSITION_THE = re.compile(r"(?P<d>[\w\s\-]{3,60}?),\s+the\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*)"
                             r"\s*(?=[:;,.(]|$)", re.IGNORECASE)
_EACH_A = re.compile(rf"(?<![\w.,])(?:{_NUMBER})\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){{0,2}}[A-Za-z][\w\-]*),\s+each\s+"
                     r"(?P<d>(?:a|an|one)\s+[^;.]{5,160})", re.IGNORECASE)
_MEMORIES = ("shared_memory", "register_file", "cache")
#: "64 KB of local store that the threads of one thread block share": a sized thing described by its relative clause.
_OF_THAT = re.compile(r"\d\s*[KMG]i?B\s+of\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*)\s+(?P<d>(?:that|which)\s"
                      r"[^;.]{5,160})", re.IGNORECASE)
_OF_A = re.compile(r"\bof\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*),\s+(?P<d>(?:a|an)\s+[^;.]{5,160})",
                   re.IGNORECASE)


def _head(text: str) -> str:
    """Leading noun phrase of a definiens, determiners and possessives dropped (``the Q7's compute unit: ...`` ->
    ``compute unit``; ``A SIMD unit of 8 lanes`` -> ``SIMD unit``)."""
    text = re.sub(r"[*_`]", "", text).strip()
    while True:
        stripped = re.sub(r"^(?:the|a|an|its|our|their|one|same|[A-Z][\w\-]*'s)\s+", "", text, flags=re.IGNORECASE)
        if stripped == text:
            break
        text = stripped
    return noun_phrase(text.split())


def is_abbreviation(short: str, long: str) -> bool:
    """``SPUs`` abbreviates ``stream processing units``; ``SC`` abbreviates ``stream cluster``."""
    letters = re.sub(r"s$", "", short.strip("'\"\u2018\u2019"))
    if not (1 < len(letters) <= 6 and letters.isupper()):
        return False
    initials = "".join(w[0] for w in re.split(r"[\s\-]+", long) if w).upper()
    return initials.endswith(letters) or initials == letters


def _definitions(unit: _Unit, mentions) -> tuple[list[_Definition], list[tuple[str, str]]]:
    """Definitions and aliases that one sentence or row states (see module docstring). Where either side of a
    definition could be the term, the term is the side the documents mention more often (`mentions`)."""
    defs: list[_Definition] = []
    aliases: list[tuple[str, str]] = []

    def add(term: str, definiens: str, head: str | None = None, explicit: bool = False,
            among: tuple[str, ...] | None = None) -> None:
        if term_key(term):
            definiens = " ".join(definiens.split()[:_MAX_DEFINIENS_WORDS])
            defs.append(_Definition(term, definiens, _head(definiens) if head is None else head, unit, explicit,
                                    among))

    if unit.cells:
        cells = [c for c in unit.cells if c]
        if len(cells) == 2 and len(cells[0].split()) <= 4 and len(cells[1].split()) >= 4 \
                and not _QUANTITY_FIRST.match(cells[1]):
            add(cells[0], cells[1], explicit=True)
        for cell in cells[:1]:
            aliases += _aliases(cell)
        return defs, aliases
    text = unit.text
    aliases += _aliases(text)
    head, colon, rest = text.partition(": ")
    if colon and 1 <= len(head.split()) <= 4 and len(rest.split()) >= 4 and not re.search(r"\d", head):
        add(head, rest)  # a glossary line "Term: definition"
    for match in _PAREN.finditer(text):
        outside, inside = match.group(1), match.group(2).strip()
        if re.match(r"^(?:the|a|an|its|our)\s", inside, re.IGNORECASE):
            inner = re.sub(r"^(?:the|a|an|its|our)\s+", "", inside, flags=re.IGNORECASE)
            tail = _tail_np(outside)
            if len(inner.split()) <= 3 and mentions(term_key(inner)) > mentions(term_key(tail)):
                add(inner, f"{tail}, {text}", head=tail)  # "shared scratch memory (the cell store)"
            else:
                add(tail, inside)  # "vector core (the compute unit of the ZX-40)"
    copula = _COPULA.match(text)
    if copula:
        left, right = _tail_np(copula.group("left")), copula.group("right")
        right_np = _head(right)
        if right_np and mentions(term_key(right_np)) > mentions(term_key(left)):
            add(right_np, f"{copula.group('left')} {right}", head=_tail_np(copula.group("left")))
        elif left:
            add(left, right)
    for rx in _NAMING:
        for match in rx.finditer(text):
            add(match.group("t"), match.group("d"), head=_tail_np(match.group("d")), explicit=True)
    for match in _APPOSITION_THE.finditer(text):
        add(match.group("t"), match.group("d"), head=_tail_np(match.group("d")))
    for rx in (_EACH_A, _OF_A):
        for match in rx.finditer(text):
            add(match.group("t"), match.group("d"))
    for match in _OF_THAT.finditer(text):
        # "64 KB of T that ...": T is sized in bytes, so it is a memory; its relative clause says which
        add(match.group("t"), f"memory {match.group('d')}", head="", among=_MEMORIES)
    for match in _GROUP_OF.finditer(text):
        count, members = match.group("n"), noun_phrase(match.group("c").split())
        if members and _generic_concept(members) == "thread":
            add(_tail_np(match.group("t")), f"a group of {count} {members} executed together",
                head=f"group of {members}", explicit=True)
    return defs, aliases


#: "strands of 32 threads", "warps of 64 work-items": the term names a group of that many members.
_GROUP_OF = re.compile(rf"(?P<t>(?:[A-Za-z][\w\-]*\s+){{0,1}}[A-Za-z][\w\-]*)\s+of\s+(?P<n>{_NUMBER})\s+"
                       r"(?P<c>[A-Za-z][\w\-]*)", re.IGNORECASE)
_QUANTITY_FIRST = re.compile(r"^\s*[\d.,]+\s*(?:[KMGTP]i?B|[kKMGTP]?B/s|bytes?|[kKMGT]?Hz|[KMGTP]?FLOPS?|[TPG]?OPS|TF)\b",
                             re.IGNORECASE)


def _tail_np(text: str) -> str:
    """The noun phrase that ends `text` (up to 3 words after the last function word)."""
    words = re.sub(r"[*_`]", "", text).split()
    out: list[str] = []
    for word in reversed(words):
        bare = word.strip(",.;:()'\"")
        if not bare or bare.lower() in _STOP or not re.match(_WORD + "$", bare) or len(out) == 3:
            break
        out.insert(0, bare)
        if word != word.lstrip("(,;:") or word[-1:] in ",;:":
            break
    return " ".join(out)


def _aliases(text: str) -> list[tuple[str, str]]:
    """(term, alias) pairs from ``T ('A')``, ``T (A)`` where A abbreviates T, and ``A (T)`` expansions."""
    out = []
    for match in _PAREN.finditer(text):
        outside, inside = _tail_np(match.group(1)), match.group(2).strip()
        quoted = re.fullmatch(r"['\"\u2018\u201c]([A-Za-z][\w\-]*)['\"\u2019\u201d]", inside)
        if quoted and outside:
            out.append((outside, quoted.group(1)))
        elif outside and is_abbreviation(inside, outside):
            out.append((outside, inside))
        elif outside and len(outside.split()) == 1 and is_abbreviation(outside, inside):
            out.append((inside, outside))
    for match in _KNOWN_AS.finditer(text):
        term = _tail_np(match.group("t"))
        for alias in re.split(r",\s*|\s+or\s+", match.group("a")):
            alias = noun_phrase(alias.split())
            if term and alias:
                out.append((term, alias))
    return out


_KNOWN_AS = re.compile(r"(?<![\w\-])(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*)(?:\]\([^)]*\))?,?\s+(?:also\s+)?"
                       r"(?:known as|referred to as|called|aka)\s+(?P<a>[\w\s,\-]{2,60}?)(?=[.;:)]|$)",
                       re.IGNORECASE)


# ---------------------------------------------------------------- containment

_EACH_HAS = re.compile(rf"\beach\s+(?P<p>(?:[A-Za-z][\w\-]*\s+){{0,2}}?[A-Za-z][\w\-]*)\s+(?:has|have|contains|"
                       rf"holds|includes|consists of|is made of|with)\s+(?P<n>{_NUMBER})\s+(?P<c>(?:[A-Za-z][\w\-]*"
                       rf"\s*){{1,3}})", re.IGNORECASE)
_CONTAINS = re.compile(rf"\b(?:a|an|the|one)\s+(?P<p>(?:[A-Za-z][\w\-]*\s+){{0,2}}?[A-Za-z][\w\-]*)\s+(?:contains|"
                       rf"holds|includes|consists of|has)\s+(?P<n>{_NUMBER})\s+(?P<c>(?:[A-Za-z][\w\-]*\s*){{1,3}})",
                       re.IGNORECASE)
_EACH_WITH = re.compile(rf"(?<![\w.,])(?P<m>{_NUMBER})\s+(?P<p>(?:[A-Za-z][\w\-]*\s+){{0,2}}?[A-Za-z][\w\-]*),?\s+"
                        rf"each\s+(?:with|of|has|holding|containing)\s+(?P<n>{_NUMBER})\s+"
                        rf"(?P<c>(?:[A-Za-z][\w\-]*\s*){{1,3}})", re.IGNORECASE)
_PER_PARENT = re.compile(rf"(?<![\w.,])(?P<n>{_NUMBER})\s+(?P<c>(?:[A-Za-z][\w\-]*\s+){{0,2}}?[A-Za-z][\w\-]*)\s+"
                         rf"per\s+(?P<p>(?:[A-Za-z][\w\-]*\s*){{1,3}})", re.IGNORECASE)


def _containments(unit: _Unit) -> list[Containment]:
    out = []
    text = unit.text
    for rx in (_EACH_HAS, _CONTAINS, _EACH_WITH, _PER_PARENT):
        for match in rx.finditer(text):
            child = noun_phrase(match.group("c").split())
            parent = noun_phrase(match.group("p").split()) or match.group("p")
            if not child or _UNIT_WORD.match(child.split()[0]):
                continue
            out.append(Containment(term_key(parent), term_key(child), _count_value(match.group("n")), text))
    return out


# ---------------------------------------------------------------- building

def build_glossary(chunks: list[tuple[Chunk, tuple[Chunk, ...]]]) -> Glossary:
    """The glossary of one chip's documents: terms and their concepts, aliases, containment and chip-level counts.

    Args:
        chunks: merged chunks (see `ingest.profile_extract.merge_windows`) of the chip's documents.

    Raises:
        StoreError: the embedding model cannot be loaded.
    """
    units = _units(chunks)
    glossary = Glossary(used=_used_terms(units), texts=[u.text.lower() for u in units])
    definitions: list[_Definition] = []
    for unit in units:
        defs, aliases = _definitions(unit, glossary.mentions)
        definitions += defs
        for term, alias in aliases:
            a, t = term_key(alias), term_key(term)
            if a and t and a != t:
                glossary.aliases.setdefault(a, t)
        glossary.contains += _containments(unit)
        for count, phrase, _ in counted_terms(unit.text):
            glossary.chip_counts.setdefault(term_key(phrase), (count, unit.text))
    definitions = [d for d in definitions if d.unit.cells or _in_use(glossary, _key_of(glossary, d), True)]
    prefetch(term_key(d.term) for d in definitions)
    _classify_definitions(glossary, definitions)
    _classify_bare_terms(glossary)
    if glossary.compute_unit() is None:
        _compute_unit_from_structure(glossary, units)
    _shortened_references(glossary)
    _partitions_from_containment(glossary)
    return glossary


_OWNS_BYTES = re.compile(r"\beach\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}?[A-Za-z][\w\-]*)\s+(?:has|contains|holds|"
                         r"includes|owns)\b[^.;]{0,40}?\b\d[\d,.]*\s*(?:[KM]i?B|kilobytes?|megabytes?)\b", re.IGNORECASE)


def _compute_unit_from_structure(glossary: Glossary, units: list[_Unit]) -> None:
    """No definition names the compute unit: take the term that the chip holds most of (``80x Tensix tile``) among
    those of which each holds on-chip memory (``Each Tensix tile has 1464 KiB of scratchpad RAM``): the unit that
    owns on-chip memory is the compute unit (the profile schema's meaning of the word)."""
    owners: dict[str, str] = {}
    for unit in units:
        for match in _OWNS_BYTES.finditer(unit.text):
            key = term_key(match.group("t"))
            key = glossary.aliases.get(key, key)
            owners.setdefault(key, " ".join(unit.text.split()))
    candidates = [k for k in owners if glossary.chip_counts.get(k, (0, ""))[0] >= 2
                  and glossary.concept(k) in (None, "compute_unit")]
    counts = sorted((glossary.chip_counts[k][0], k) for k in candidates)
    if not counts or (len(counts) > 1 and counts[-1][0] == counts[-2][0]):
        return
    key = counts[-1][1]
    glossary.terms[key] = Term(name=_name_as_written(key, units), concept="compute_unit", similarity=0.0,
                               quote=owners[key], chunk=None, defined=False)  # type: ignore[arg-type]


def _name_as_written(key: str, units: list[_Unit]) -> str:
    """`key` with the capitalization the documents use (``Tensix tile``), singular."""
    words = [re.escape(w) for w in key.split()]
    rx = re.compile(r"(?<![\w\-])" + r"\s+".join(words[:-1] + [words[-1] + r"(?:s|es)?"]) + r"(?![\w\-])",
                    re.IGNORECASE)
    for unit in units:
        match = rx.search(unit.text)
        if match:
            return _written(match.group(0))
    return key


def _partitions_from_containment(glossary: Glossary) -> None:
    """A term that holds compute units is a partition of the chip ("8 shader arrays, each with 10 SPUs"), whatever
    its definition said; a term inside the compute unit is a sub-unit."""
    units = glossary.compute_unit_keys()
    for c in glossary.contains:
        child = glossary.aliases.get(c.child, c.child)
        parent = glossary.aliases.get(c.parent, c.parent)
        if child in units and parent not in units:
            term = glossary.terms.get(parent)
            if term is not None and term.concept != "partition":
                term.concept = "partition"


def _classify_definitions(glossary: Glossary, definitions: list[_Definition]) -> None:
    """Match each definition to a concept: by its head noun phrase when that names a concept, else by the whole
    definiens. Two passes: the second reads each definiens with the terms found in the first rewritten to generic
    words (``A group of bundles placed on one tile`` -> ``A group of warps placed on one compute unit``)."""
    for _ in range(2):
        found: dict[str, Term] = {}
        prefetch([glossary.rewrite(_mask(d.head, d.term)) for d in definitions if d.head]
                 + [glossary.rewrite(_mask(d.definiens, d.term)) for d in definitions])
        for d in definitions:
            key = glossary.aliases.get(term_key(d.term), term_key(d.term))
            if not key or key in _GENERIC_KEYS or len(key.split()) > 4 or _generic_name(key):
                continue
            choice = _definition_concept(glossary, d)
            if choice is None or choice.concept in ("chip", "cache"):
                continue  # product names and caches are read by the field rules, not rewritten
            if choice.concept in LEVELS and not d.unit.cells and not _in_use(glossary, key, d.explicit):
                continue  # a unit concept needs a term the documents use as a unit ("per T", "48 T")
            best = found.get(key)
            if best is None or choice.similarity > best.similarity:
                found[key] = Term(name=_written(d.term), concept=choice.concept, similarity=choice.similarity,
                                  quote=" ".join(d.unit.text.split()), chunk=d.unit.chunk)
        glossary.terms = found
    for alias, key in glossary.aliases.items():
        if key in glossary.terms:
            glossary.terms[key].aliases.add(alias)


def _key_of(glossary: Glossary, d: _Definition) -> str:
    key = term_key(d.term)
    return glossary.aliases.get(key, key)


def _in_use(glossary: Glossary, key: str, explicit: bool) -> bool:
    """The documents count or scope by `key` (or an alias of it); an explicit naming ("calls its compute unit a
    cell", "strands of 32 threads") needs only a second mention of the term."""
    if glossary.used[key] or any(glossary.used[a] for a, k in glossary.aliases.items() if k == key):
        return True
    return explicit and glossary.mentions(key) >= 2


def _generic_concept(phrase: str) -> str | None:
    """The concept of which `phrase` is a generic name (``wavefront`` -> ``warp``, ``lanes`` -> ``thread``), else
    None."""
    choice = CONCEPTS.choose(term_key(phrase), min_similarity=BARE_TERM_SIMILARITY, min_margin=0.1)
    return choice.concept if choice else None


def _generic_name(key: str) -> bool:
    """True for a generic name of a concept (``wavefront``, ``compute unit``): the documents use it, they do not
    redefine it."""
    return _generic_concept(key) is not None


def _definition_concept(glossary: Glossary, d: _Definition):
    head = glossary.rewrite(_mask(d.head, d.term)) if d.head else ""
    if head and head != "it":
        choice = CONCEPTS.choose(head, min_similarity=HEAD_SIMILARITY, min_margin=0.1)
        if choice is not None:
            return choice
    return CONCEPTS.choose(glossary.rewrite(_mask(d.definiens, d.term)), among=d.among,
                           min_similarity=DEFINITION_SIMILARITY, min_margin=0.03)


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


def _mask(text: str, term: str) -> str:
    """`text` with the defined term itself replaced by "it" (its own name must not decide what it means)."""
    words = [re.escape(w) for w in term_key(term).split()]
    if not words:
        return text
    pattern = r"(?<![\w\-])" + r"\s+".join(words[:-1] + [words[-1] + r"(?:s|es)?"]) + r"(?![\w\-])"
    return re.sub(pattern, "it", text, flags=re.IGNORECASE)


def _written(term: str) -> str:
    """The term as written, emphasis and determiners removed, last word singular (case kept)."""
    text = re.sub(r"[*_`\"\u2018\u2019\u201c\u201d]", "", term).strip(" '.,;:")
    while _DETERMINER.match(text):
        text = _DETERMINER.sub("", text, count=1)
    words = text.split()
    if words:
        words[-1] = singular(words[-1])
    return " ".join(words)
