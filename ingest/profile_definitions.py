"""The syntax of definitions in hardware documents: definitions and aliases (see `ingest.profile_glossary`, which
decides what the defined terms mean). Terms and text units are `ingest.profile_terms`; containment is
`ingest.profile_containment`.

Only English syntax is fixed here (determiners, copulas, apposition, relative clauses), never the words a vendor
uses for its things.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.profile_terms import NUMBER, STOP_WORDS, WORD, Unit, noun_phrase, term_key

#: The subject of a later clause's copula: a determiner or possessive and at most three more words ("the
#: cluster's TCDM"), so a clause about something else ("the rest is ...") defines nothing.
_COPULA_SUBJECT = re.compile(r"^(?:the|its|their|each|an?)\s+(?:[\w\-]+['\u2019]s\s+)?(?P<t>(?:[\w\-]+\s*){1,3})$",
                             re.IGNORECASE)


@dataclass(frozen=True)
class Definition:
    """`term` is defined by `definiens`, whose leading noun phrase `head` names what it is."""

    term: str
    definiens: str
    head: str
    unit: Unit
    explicit: bool = False
    among: tuple[str, ...] | None = None
    members: str = ""


#: Words of a definiens that are matched (the head of a definition carries its meaning; long tails only blur it).
_MAX_DEFINIENS_WORDS = 32
PAREN = re.compile(r"(?<![\w\-'*])((?:[A-Za-z*][\w\-'*]*\s+){0,3}[A-Za-z*][\w\-'*]*)\s*\(([^()]{1,120})\)")
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
_EACH_A = re.compile(rf"(?<![\w.,])(?:{NUMBER})\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){{0,2}}[A-Za-z][\w\-]*),\s+each\s+"
                     r"(?P<d>(?:a|an|one)\s+[^;.]{5,160})", re.IGNORECASE)
MEMORIES = ("shared_memory", "register_file", "cache")
#: "a lockstep set of 16 filaments, the R2's counterpart of a warp", "... a lockstep group, and it is the overlay's
#: counterpart of a warp": named by the generic thing it stands for.
_COUNTERPART = re.compile(r"(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*)(?:\s+of\s+\d+\s+[\w\-]+)?,\s+"
                          r"(?:(?:and\s+)?(?:it|this|which)\s+is\s+)?(?:the|its|our)\s+(?:[\w\-]+['\u2019]s\s+)?(?:counterpart|analogue|analog|equivalent|version)\s+(?:of|to|for)\s+"
                          r"(?:a|an|the)\s+(?P<g>(?:[A-Za-z][\w\-]*\s*){1,3})", re.IGNORECASE)
#: A definiens that names the generic thing the term stands for: "The Q-Flow equivalent of a work-group", "the
#: M2's counterpart of a warp", "an analogue of a thread block", "the F7's name for a thread block".
_EQUIVALENT_OF = re.compile(r"^\s*(?:(?:the|an?|its|our)\s+)?(?:[\w\-]+(?:['\u2019]s)?\s+)?"
                            r"(?:(?:equivalent|counterpart|analogue|analog)\s+(?:of|to|for)|(?:name|term|word)\s+for)\s+"
                            r"(?:an?\s+|the\s+)?(?P<g>(?:[A-Za-z][\w\-]*\s*){1,3})", re.IGNORECASE)
#: "A kernel group is the set of threads that run on one tile ...: the overlay's work-group.": a subject defined by a
#: closing apposition that names the generic thing in the document's own possessive.
_CLOSING_APPOSITION = re.compile(r"^\s*(?:an?|the)\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*)\s+(?:is|are)\s+"
                                 r"[^.]{3,200}[:,;]\s+(?:the|its)\s+(?:[\w\-]+['\u2019]s\s+)(?P<g>(?:[A-Za-z][\w\-]*\s*)"
                                 r"{1,3})\.?\s*$", re.IGNORECASE)
#: "A job corresponds to a work-group (OpenCL)", "a bundle maps to a warp", "tasks are equivalent to thread blocks".
_CORRESPONDS = re.compile(r"(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*)\s+(?:corresponds?|maps?|"
                          r"(?:is|are)\s+equivalent)\s+to\s+(?:an?\s+|the\s+)?(?P<g>(?:[A-Za-z][\w\-]*\s*){1,3})",
                          re.IGNORECASE)
#: "A compute slice is the unit ...; it is the FX7 equivalent of a GPU's streaming multiprocessor": a subject defined,
#: then named by the generic thing it stands for in a clause of its own.
_IT_IS_EQUIVALENT = re.compile(r"(?:^|[.;]\s+)(?:an?|the)\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*)\s+"
                               r"(?:is|are)\s+"
                               r"[^;.]{3,160}[;,]\s+(?:and\s+)?(?:it|this|they)\s+(?:is|are)\s+(?:the|its|our)\s+"
                               r"(?:[\w\-]+(?:['\u2019]s)?\s+)?(?:equivalent|counterpart|analogue|analog)\s+(?:of|to|for)\s+"
                               r"(?:an?\s+|the\s+)?(?:[\w\-]+['\u2019]s\s+)?(?P<g>(?:[A-Za-z][\w\-]*\s*){1,3})",
                               re.IGNORECASE)
#: "A kernel ported from CUDA maps a thread block to a work tile, a warp to a lane group and ...": a porting guide's
#: mapping of generic things (first) to the document's own terms (after "to"), one pair per list item.
_MAPS = re.compile(r"\bmaps?\s+(?P<pairs>(?:an?\s+|the\s+)?[A-Za-z][\w\- ]{1,40}?\s+to\s+[^.;]{2,200})", re.IGNORECASE)
_MAP_ITEMS = re.compile(r",\s+|\s+and\s+(?=(?:an?\s+|the\s+)?[A-Za-z][\w\- ]{1,40}?\s+to\s)")
_MAP_PAIR = re.compile(r"^\s*(?:and\s+)?(?:an?\s+|the\s+)?(?P<g>[A-Za-z][\w\-]*(?:\s+[A-Za-z][\w\-]*){0,2})\s+to\s+"
                       r"(?:an?\s+|the\s+)?(?P<t>[A-Za-z][\w\-]*(?:\s+[A-Za-z][\w\-]*){0,2})\s*$", re.IGNORECASE)
#: "64 KB of local store that the threads of one thread block share": a sized thing described by its relative clause.
_OF_THAT = re.compile(r"\d\s*[KMG]i?B\s+of\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*)\s+(?P<d>(?:that|which)\s"
                      r"[^;.]{5,160})", re.IGNORECASE)
_OF_A = re.compile(r"\bof\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*),\s+(?P<d>(?:a|an)\s+[^;.]{5,160})",
                   re.IGNORECASE)


def head_np(text: str) -> str:
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


#: "A kernel is compiled for one Helm core", "each work-group runs on one engine", "a codelet is placed on one
#: tile": the programming model's unit of work (kernel, program, work-group, thread block) bound to one X makes X
#: the compute unit (CUDA C Programming Guide, "Hardware Implementation": a block runs on one multiprocessor).
_RUNS_ON_ONE = re.compile(
    r"\b(?:a|an|each|every|one)\s+(?:kernel(?:\s+instance)?|program|codelet|work-?group|thread\s+block|block)\s+"
    r"(?:is\s+|are\s+)?(?:compiled|written|built|launched|dispatched|placed|scheduled|runs?|executes?|executed)\s+"
    r"(?:to\s+completion\s+)?(?:for|on|to|onto)\s+(?:one|a\s+single|exactly\s+one)\s+(?P<t>(?:[A-Za-z][\w\-]*\s*){1,3})",
    re.IGNORECASE)
#: "The PCU is the unit on which the compiler places work", "a compute slice is the unit to which the runtime
#: assigns a work tile": the processor that work is placed on, named as such.
_UNIT_OF_PLACEMENT = re.compile(
    r"(?:^|(?<=[.;:]\s))(?:a|an|the)\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}?[A-Za-z][\w\-]*)\s+is\s+the\s+(?:basic\s+)?"
    r"unit\s+(?:on|to|onto)\s+which\s+the\s+(?:compiler|runtime|scheduler|driver|hardware|firmware)\s+"
    r"(?:places|assigns|schedules|maps|dispatches|distributes)\s+(?:work|(?:an?\s+|one\s+)?[\w\-]+(?:\s+[\w\-]+)?)\b",
    re.IGNORECASE)


#: "The Atoll A3 is built from 96 matrix cores", "Kestrel accelerators are made of PE arrays": what the chip is
#: built from is its building block (the compute unit, or a partition when it holds compute units: see
#: `ingest.profile_glossary`).
#: The active form of `_RUNS_ON_ONE`: "A streaming core runs thread blocks", "each tile executes work-groups".
_RUNS_BLOCKS = re.compile(
    r"(?:^|(?<=[.;:]\s))(?:a|an|each|every|one)\s+(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}?[A-Za-z][\w\-]*)\s+"
    r"(?:runs|executes|hosts)\s+(?:one\s+or\s+more\s+|several\s+|many\s+)?"
    r"(?:thread\s+blocks|work-?groups|blocks|kernels)\b", re.IGNORECASE)
_BUILT_FROM = re.compile(rf"(?P<s>[^.;:]{{2,80}}?)\s+(?:is|are)\s+(?:built|made|composed|assembled|constructed)\s+"
                         rf"(?:up\s+)?(?:from|of|out\s+of)\s+(?:{NUMBER}\s+)?(?P<t>(?:[A-Za-z][\w\-]*\s*){{1,3}})",
                         re.IGNORECASE)
#: The subject of `_BUILT_FROM` must be the chip: a chip noun or a product model name.
_CHIP_SUBJECT = re.compile(r"\b(?:accelerators?|chips?|devices?|gpus?|npus?|processors?|coprocessors?|asics?|"
                           r"socs?|dies?)\b|\b[A-Za-z]{1,6}-?\d{1,4}[A-Za-z]{0,3}\b", re.IGNORECASE)


#: The speaker mark of a question-and-answer text ("Q: ...", "A: ...", "Question: ..."): not a term being defined.
DIALOGUE_MARK = re.compile(r"^\s*[*_]*(?:Q|A|Question|Answer)\s*[:.][*_]*\s+", re.IGNORECASE)


def definitions_in(unit: Unit, mentions) -> tuple[list[Definition], list[tuple[str, str]]]:
    """Definitions and aliases that one sentence or row states (see module docstring). Where either side of a
    definition could be the term, the term is the side the documents mention more often (`mentions`)."""
    defs: list[Definition] = []
    aliases: list[tuple[str, str]] = []

    def add(term: str, definiens: str, head: str | None = None, explicit: bool = False,
            among: tuple[str, ...] | None = None, members: str = "") -> None:
        term = _MODEL_PREFIX.sub("", term) or term  # "A VX-300 engine is ...": the term is "engine"
        term = _TRAILING_PAREN.sub("", term) or term  # "DSP core complex (DCC)": the name, its alias read apart
        equivalent = _EQUIVALENT_OF.match(definiens)
        if equivalent and noun_phrase(equivalent.group("g").split()):
            head, explicit = noun_phrase(equivalent.group("g").split()), True  # "The Q-Flow equivalent of a warp"
        if term_key(term):
            first = definiens.split("; ")[0]
            definiens = first if len(first.split()) >= 4 else definiens  # the clause that defines, not the next one
            definiens = " ".join(definiens.split()[:_MAX_DEFINIENS_WORDS])
            defs.append(Definition(term, definiens, head_np(definiens) if head is None else head, unit, explicit,
                                   among, members))

    if unit.cells:
        cells = [c for c in unit.cells if c]
        if len(cells) == 2 and len(cells[0].split()) <= 4 and len(cells[1].split()) >= 4 \
                and not _QUANTITY_FIRST.match(cells[1]):
            add(cells[0], cells[1], explicit=True)
        for cell in cells[:1]:
            aliases += aliases_in(cell)
        return defs, aliases
    text = unit.text
    aliases += aliases_in(text)
    text = DIALOGUE_MARK.sub("", text)
    if text.rstrip(" *_").endswith("?"):
        return defs, aliases  # a question defines nothing ("How big is the register file?")
    head, colon, rest = text.partition(": ")
    if colon and 1 <= len(head.split()) <= 4 and len(rest.split()) >= 4 and not _NUMBER_WORD.search(head) \
            and not re.match(r"\s*[\d.,]", rest):
        add(head, rest, explicit=True)  # a glossary line "Term: definition" (not a "Key: value" item)
    for match in PAREN.finditer(text):
        outside, inside = match.group(1), match.group(2).strip()
        if re.match(r"^(?:the|a|an|its|our)\s", inside, re.IGNORECASE):
            inner = re.sub(r"^(?:the|a|an|its|our)\s+", "", inside, flags=re.IGNORECASE)
            tail = tail_np(outside)
            if len(inner.split()) <= 3 and mentions(term_key(inner)) > mentions(term_key(tail)):
                add(inner, f"{tail}, {text}", head=tail)  # "shared scratch memory (the cell store)"
            else:
                add(tail, inside)  # "vector core (the compute unit of the ZX-40)"
    for n, clause in enumerate(re.split(r";\s+|,\s+and\s+(?=the\s)", text)):  # "..., and the X's T is the D"
        copula = _COPULA.match(clause)
        if not copula:
            continue
        left, right = tail_np(copula.group("left")), copula.group("right")
        right_np = head_np(right)
        if n > 0:  # a later clause defines only its own subject, after its possessive ("the cluster's TCDM")
            subject = _COPULA_SUBJECT.match(copula.group("left"))
            if subject:
                add(subject.group("t"), right)
        elif right_np and mentions(term_key(right_np)) > mentions(term_key(left)):
            add(right_np, f"{copula.group('left')} {right}", head=tail_np(copula.group("left")))
        elif left:
            add(left, right)
    for rx in _NAMING:
        for match in rx.finditer(text):
            add(match.group("t"), match.group("d"), head=tail_np(match.group("d")), explicit=True)
    for match in _APPOSITION_THE.finditer(text):
        add(match.group("t"), match.group("d"), head=tail_np(match.group("d")))
    for rx in (_EACH_A, _OF_A):
        for match in rx.finditer(text):
            add(match.group("t"), match.group("d"))
    for match in _BUILT_FROM.finditer(text):
        term = noun_phrase(match.group("t").split())
        if term and _CHIP_SUBJECT.search(match.group("s")):
            add(term, "the basic building block of the chip, the processor it is built from", head="",
                explicit=True, among=("compute_unit", "partition"))
    for match in _RUNS_BLOCKS.finditer(text):
        term = noun_phrase(match.group("t").split())
        if term:
            add(term, "the core that one kernel instance is compiled for and runs on", head="", explicit=True)
    for match in [*_UNIT_OF_PLACEMENT.finditer(text), *_RUNS_ON_ONE.finditer(text)]:
        term = noun_phrase(match.group("t").split())
        if term:
            add(term, "the core that one kernel instance is compiled for and runs on", head="", explicit=True)
    for match in _COUNTERPART.finditer(text):
        generic = noun_phrase(match.group("g").split())
        if generic:
            add(tail_np(match.group("t")), f"a {generic}", head=generic, explicit=True)
    closing = _CLOSING_APPOSITION.match(text)
    if closing and noun_phrase(closing.group("g").split()) and noun_phrase(closing.group("t").split()):
        generic = noun_phrase(closing.group("g").split())
        add(noun_phrase(closing.group("t").split()), f"a {generic}", head=generic, explicit=True)
    for match in _IT_IS_EQUIVALENT.finditer(text):
        generic, term = noun_phrase(match.group("g").split()), noun_phrase(match.group("t").split())
        if generic and term:
            add(term, f"a {generic}", head=generic, explicit=True)
    for generic, term in _mapped_pairs(text):
        add(term, f"a {generic}", head=generic, explicit=True)
    for match in _CORRESPONDS.finditer(text):
        generic, term = noun_phrase(match.group("g").split()), tail_np(match.group("t"))
        if generic and term:
            add(term, f"a {generic}", head=generic, explicit=True)
    for match in _OF_THAT.finditer(text):
        # "64 KB of T that ...": T is sized in bytes, so it is a memory; its relative clause says which
        add(match.group("t"), f"memory {match.group('d')}", head="", among=MEMORIES)
    for match in _GROUP_OF.finditer(text):
        count, members = match.group("n"), noun_phrase(match.group("c").split())
        if members and is_group_noun(match.group("t")):
            add(tail_np(match.group("t")), f"a group of {count} {members} executed together",
                head=f"group of {members}", explicit=True, members=members)
    return defs, aliases


def _mapped_pairs(text: str) -> list[tuple[str, str]]:
    """(generic, term) pairs of "maps a thread block to a work tile, a warp to a lane group and ... to the SLR"."""
    out = []
    for match in _MAPS.finditer(text):
        for item in _MAP_ITEMS.split(match.group("pairs")):
            pair = _MAP_PAIR.match(item)
            generic = noun_phrase(pair.group("g").split()) if pair else None
            term = noun_phrase(pair.group("t").split()) if pair else None
            if generic and term:
                out.append((generic, term))
    return out


def is_group_noun(phrase: str) -> bool:
    """Whether the last word of `phrase` can be a noun naming a group ("squads", "SIMD groups"), not a verb or a
    function word that "of" follows ("consisting of 32 lanes", "made of", "each of", "up to 4 of")."""
    words = phrase.split()
    last = words[-1].lower() if words else ""
    return bool(last) and not re.search(r"(?:ing|ed)$", last) and last not in _OF_FOLLOWS


_OF_FOLLOWS = frozenset("made consist consists composed all each one most some any many none both up out part "
                        "instead because ahead".split())
#: A parenthetical that ends a defined term (its abbreviation, a plural mark): not part of the term's name.
_TRAILING_PAREN = re.compile(r"\s*\([^()]{1,40}\)\s*$")
#: A number written alone ("PCIe 5.0: ...", "Gen 4: ..."): such a head is a key with a value, not a term; a name
#: with a digit inside a word ("L0 scratch", "HBM3") may still be a term.
_NUMBER_WORD = re.compile(r"(?<![A-Za-z\d])\d[\d.,]*(?![A-Za-z])")
#: Product-model words in front of a defined term ("VX-300 engine", "the H9 core").
_MODEL_PREFIX = re.compile(r"^(?:(?:the|a|an)\s+)?(?:[A-Za-z]{1,6}-?\d{1,4}[A-Za-z]{0,3}\s+)+(?=[A-Za-z])")
#: "strands of 32 threads", "warps of 64 work-items": the term names a group of that many members.
_GROUP_OF = re.compile(rf"(?<![\w\-])(?P<t>(?:[A-Za-z][\w\-]*\s+){{0,1}}[A-Za-z][\w\-]*)\s+of\s+(?P<n>{NUMBER})\s+"
                       r"(?P<c>[A-Za-z][\w\-]*)", re.IGNORECASE)
_QUANTITY_FIRST = re.compile(
    r"^\s*[\d.,]+\s*(?:[KMGTP]i?B|[kKMGTP]?B/s|bytes?|[kKMGT]?Hz|[KMGTP]?FLOPS?|[TPG]?OPS|TF)\b", re.IGNORECASE)


def tail_np(text: str) -> str:
    """The noun phrase that ends `text` (up to 3 words after the last function word)."""
    words = re.sub(r"[*_`]", "", text).split()
    out: list[str] = []
    for word in reversed(words):
        bare = word.strip(",.;:()'\"")
        if not bare or bare.lower() in STOP_WORDS or not re.match(WORD + "$", bare) or len(out) == 3:
            break
        out.insert(0, bare)
        if word != word.lstrip("(,;:") or word[-1:] in ",;:":
            break
    return " ".join(out)


def aliases_in(text: str) -> list[tuple[str, str]]:
    """(term, alias) pairs from ``T ('A')``, ``T (A)`` where A abbreviates T, and ``A (T)`` expansions."""
    out = []
    for match in PAREN.finditer(text):
        outside, inside = tail_np(match.group(1)), match.group(2).strip()
        quoted = re.fullmatch(r"['\"\u2018\u201c]([A-Za-z][\w\-]*(?:\s+[A-Za-z][\w\-]*){0,2})['\"\u2019\u201d]", inside)
        if quoted and outside:
            out.append((outside, quoted.group(1)))
        elif outside and is_abbreviation(inside, outside):
            out.append((outside, inside))
        elif outside and len(outside.split()) == 1 and is_abbreviation(outside, inside):
            out.append((inside, outside))
    for match in _KNOWN_AS.finditer(text):
        term = tail_np(match.group("t"))
        for alias in re.split(r",\s*|\s+or\s+", match.group("a")):
            alias = noun_phrase(alias.split())
            if term and alias:
                out.append((term, alias))
    return out


_KNOWN_AS = re.compile(r"(?<![\w\-])(?P<t>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*)(?:\]\([^)]*\))?,?\s+(?:also\s+)?"
                       r"(?:known as|referred to as|called|aka)\s+(?P<a>[\w\s,\-]{2,60}?)(?=[.;:)]|$)",
                       re.IGNORECASE)
