"""Field rules: which records state which profile field, and the value each one states.

A number with its unit (`ingest.units`) states a profile field when, in this order:

1. its dimension (count, bytes, bytes/s, Hz) allows the field;
2. the words that name it mean one of the profile's quantities (`ingest.profile_fields.match_quantity`: embedding
   similarity of the label, or of the words the number is attached to in a sentence, with the document's own terms
   rewritten by its glossary, `ingest.profile_glossary`), not a look-alike;
3. its scope (per chip, per compute unit, per work-group, per sub-unit, for several chips; `scope_of`) makes that
   quantity a profile field (`ingest.profile_fields.FIELD_BY_SCOPE`). A figure per sub-unit or per partition of a
   scalable quantity (register file, L2) becomes a derived chip or compute-unit value only when the documents state
   how many of those one compute unit (or the chip) holds;
4. structural checks: bounds ("over 2.5 PFLOP/s"), defaults ("48 KB by default"), per-clock figures, field limits
   (`ingest.profile_candidate.FIELD_LIMITS`).

"N (M per X)" and "Nx M <things>" teach that M is a per-X value for that field: M is then not read as the chip value
elsewhere (a "4 MB" L2 in a product table whose other source says "32 (4 per XCD)").

Peak compute rates are read by `ingest.profile_peaks`.
"""

from __future__ import annotations

import dataclasses
import re

from ingest.profile_candidate import FIELD_LIMITS, Candidate, RuleOutput, is_bound
from ingest.profile_clock import is_bare_clock, names_clock
from ingest.profile_containment import PER_PARENT_BEFORE
from ingest.profile_fields import SCALABLE, Match, field_for, is_profile_quantity, match_quantity
from ingest.profile_glossary import Glossary
from ingest.profile_labels import (
    ENABLED_SUBSET,
    OF_TOTAL,
    PHYSICAL_TOTAL,
    TOTAL_OF_PART,
    _np_after,
    clean_label,
    labels,
    memory_parts,
    own_noun,
    own_words,
    sentence_after,
)
from ingest.profile_questions import question_labels
from ingest.profile_scope import noun_level, parens, scope_noun, scope_of
from ingest.profile_supersede import is_correcting_figure, is_old_figure
from ingest.profile_terms import term_key
from ingest.profile_text import Record
from ingest.units import TARGET_UNITS, Quantity, find_quantities

_UNKNOWN_UNIT_AFTER = re.compile(r"^\s?([KMGTP]?[A-Za-z]{0,6}(?:/s(?:ec)?|ps|B|FLOPS?|OPS|Hz))\b")
_DEFAULT_AFTER = re.compile(r"\s*(?:\(|,)?\s*(?:by default|default)\b", re.IGNORECASE)
_CACHE_LEVEL = re.compile(r"\bL([0-4])\b|\blevel[- ]([0-4]|one|two|three|four)\b|\b(first|second|third)-level\b|"
                          r"\b(last)[- ]level\b", re.IGNORECASE)
_LEVEL_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "first": 1, "second": 2, "third": 3}


# ---------------------------------------------------------------- what a number is about

#: How many of a sentence's labels (`_labels`) are the words the number is attached to; the others are the clause
#: around it, which names the number only loosely and must match more closely (`_MIN_SIMILARITY`).
_ATTACHED = 2
#: Least similarity of a label to a quantity: (quantity, source) -> cosine, source = "table", "attached" or
#: "clause"; default `ingest.profile_fields.MIN_FIELD_SIMILARITY`. A count of compute units must name them almost
#: literally (after the glossary rewrote the vendor's term); shared memory in prose must be named as such.
_MIN_SIMILARITY = {("compute_units", "table"): 0.6, ("compute_units", "attached"): 0.7,
                   ("shared_memory", "attached"): 0.55, ("shared_memory", "clause"): 0.6,
                   ("memory_bandwidth", "attached"): 0.42, ("engine_clock", "attached"): 0.42}
_DEFAULT_SIMILARITY = {"table": 0.0, "attached": 0.5, "clause": 0.55, "own": 0.5, "question": 0.6}


_GROUP_SIZES = ("warp_width", "block_threads")
#: A further factor after a product ("4 x 16 lanes| x 4"): the product is part of a longer computation.
_FURTHER_FACTOR = re.compile(r"^\s*(?:[A-Za-z\-]+\s+)?[x\u00d7*]\s*\d")
#: Words after a count that make it a sum over several things ("128 lanes in all", "64 lanes together").
_AGGREGATE = re.compile(r"^\s*[A-Za-z\-]*\s*(?:in all|in total|altogether|together|combined)\b", re.IGNORECASE)
#: A label that is only a scope ("per compute unit", "each core") names no quantity inside a parenthetical.
_SCOPE_ONLY = re.compile(r"^\s*(?:per|each|every)\s+(?:[\w\-]+\s*){1,3}$", re.IGNORECASE)
_PEAK_CUE = re.compile(r"peak|theoretical|aggregate|total|maximum|\bmax\b|up to|bandwidth", re.IGNORECASE)
#: Words that make a rate the sum over the parts named with it ("Together the 8 channels move ...").
_TOGETHER = re.compile(r"\b(?:together|combined|in all|altogether|between them)\b", re.IGNORECASE)


def _cache_level(text: str) -> int | None:
    """The cache level a label names (``L2``, ``level-two``, ``second-level`` -> 2; ``last-level`` -> 9)."""
    found = None
    for match in _CACHE_LEVEL.finditer(text):
        word = next(g for g in match.groups() if g)
        level = 9 if word.lower() == "last" else int(word) if word.isdigit() else _LEVEL_WORDS[word.lower()]
        if level == 2:
            return 2
        found = level
    return found


#: A sentence that compares with, or describes, something other than the chip ("For comparison, an embedded GPU
#: typically offers ..."): its fragments do not take its subject's words.
_ASIDE_SENTENCE = re.compile(r"\b(?:for comparison|compared (?:to|with)|typical(?:ly)?|unlike|whereas|rather than|"
                             r"competitors?|previous|predecessor)\b", re.IGNORECASE)


def _takes_subject(record: Record, quantity: Quantity) -> bool:
    """Whether a figure in a verbless fragment of a sentence ("... and a combined 273 GB/s") is named by the
    sentence's subject clause: at most three words before it in its clause, a subject clause of its own, and a
    sentence that is no comparison aside."""
    return bool(record.subject) and record.subject not in record.text and \
        len(record.text[:quantity.start].split()) <= 3 and not _ASIDE_SENTENCE.search(record.quote)


def what_it_is(record: Record, quantity: Quantity, every: list[Quantity], glossary: Glossary) -> Match | None:
    """The profile quantity `quantity` states (`ingest.profile_fields`), from its labels: a table cell's label, else
    the words the number is attached to, else (not for counts) its clause. The most similar reading decides, and
    when that is a look-alike (``(1.1 GHz base)``: a base clock) the number states no profile quantity. A label
    that names a cache level decides between the L2 and other caches."""
    named = labels(record, quantity, every, glossary)
    counts_groups = quantity.dimension == "count" and not record.is_table and bool(named) and bool(named[0]) \
        and glossary.concept(named[0]) in ("warp", "block")  # "64 warps" counts warps: not the size of one
    groups = [("table", named)] if record.is_table else [("attached", named[:_ATTACHED])]
    if record.is_table and quantity.dimension == "bytes" and named:
        what = _SCOPE_TAIL.sub("", named[0]).strip()  # "Array scratchpad per task group (maximum)": what it is
        if what and what != named[0]:
            groups = [("table", [*named, what])]
    if own_noun(record, quantity, glossary):
        return None  # "two halves of 48" in a clusters row counts halves, not what the row names
    own = own_words(record, quantity)
    if own:
        groups.insert(0, ("own", [glossary.rewrite(f"{own} {quantity.unit}")]))
    if record.question:  # "Q: How many engines does the X1 have? A: The X1 has 64.": what the question asks
        groups.append(("question", [glossary.rewrite(clean_label(q)) for q in question_labels(record.question)]))
    if not record.is_table and quantity.dimension != "count":
        groups.append(("clause", named[_ATTACHED:]))  # a count names what it counts next to it, not in its clause
        if _takes_subject(record, quantity):  # "4 channels provide 32 GB and a combined 273 GB/s": the subject's
            groups.append(("clause", [glossary.rewrite(clean_label(record.subject))]))  # words name the figure
    in_parens = not record.is_table and any(a <= quantity.start < b for a, b in parens(record.text))
    for source, texts in groups:
        best: Match | None = None
        for label in filter(None, texts):
            if in_parens and _SCOPE_ONLY.match(label):
                continue  # "(512 KiB per slice)": "per compute unit" says where, not what; its clause says what
            if quantity.dimension == "bytes":
                level = _cache_level(label)
                if level == 2 and re.search(r"cache|\bL2\b|slice", label, re.IGNORECASE):
                    return Match("l2_cache", 1.0, 0.0)
                if level is not None and level != 2 and (re.search(r"cache", label, re.IGNORECASE) or (
                        re.search(r"\bL[0-4]\b", label) and "shared memory" not in label.lower())):
                    return None  # an L1 or L3 cache; "L0 scratch", shared memory by the glossary, is not one
            match = match_quantity(label, quantity.dimension, lookalikes=True)
            if match is None or match.quantity == "l2_cache":
                continue  # an L2 must say it is the level-2 cache (above), "cache" alone may be any level
            if match.quantity in _GROUP_SIZES and counts_groups:
                continue
            least = _MIN_SIMILARITY.get((match.quantity, source), _DEFAULT_SIMILARITY[source])
            if match.similarity >= least and (best is None or match.similarity > best.similarity):
                best = match
        if best is not None and source == "question" and not is_profile_quantity(best.quantity):
            continue  # a question about a look-alike ("What clock ...?") says nothing against the answer's own words
        if best is not None:
            return best if is_profile_quantity(best.quantity) else None
    return None


# ---------------------------------------------------------------- candidates

def _holds_compute_units(record: Record, quantity: Quantity, glossary: Glossary) -> bool:
    """Whether the thing `quantity` counts holds compute units in these documents (`Glossary.contains`)."""
    key = term_key(_np_after(record.text[quantity.end:]) if not record.is_table else record.label)
    key = glossary.aliases.get(key, key)
    units = glossary.compute_unit_keys()
    return bool(key) and key not in units and any(glossary.aliases.get(c.parent, c.parent) == key
                                                  and glossary.aliases.get(c.child, c.child) in units
                                                  for c in glossary.contains)


#: Quantities that belong to one compute unit: stated with no scope they are per unit, unless the chip itself is
#: the subject that has them (a chip total of every unit's memory).
_PER_UNIT_QUANTITIES = ("shared_memory", "register_file", "register_count")


def _chip_is_subject(record: Record, quantity: Quantity) -> bool:
    """Whether a sentence names the chip as what holds `quantity`: its clause names the chip's product before the
    figure ("the T12 therefore has 150 MiB of SRAM"); a table cell never does."""
    from ingest.profile_text import products_in

    return not record.is_table and record.product == "chip" and bool(products_in(record.text[:quantity.start]))


#: A size label's scope and qualifiers ("per task group (maximum)", "(each)"): a memory is the same memory at any
#: scope, so the label is also matched without them (the scope is read apart, `ingest.profile_scope`).
_SCOPE_TAIL = re.compile(r"\s*\([^()]*\)\s*$|\s+(?:per|each|for\s+each|for\s+one)\s+.*$", re.IGNORECASE)
#: A label in which the compute unit's generic name modifies a plural noun ("compute unit clusters", rewritten
#: from "PE clusters"): the row counts those, not compute units.
_CU_MODIFIER = re.compile(r"\bcompute units?\s+(?!per\b|counts?\b|numbers?\b|totals?\b|in\b|on\b|of\b)"
                          r"[a-z][\w\-]*[a-z]s\s*$", re.IGNORECASE)
#: A count whose noun is counted per clock ("2,048 operations per clock", "1,024 FLOP/cycle"): a rate.
_COUNT_PER_CLOCK = re.compile(r"\s*(?:[A-Za-z][\w\-]*\s*){1,2}?(?:\s+per\s+|\s*/\s*|\s+each\s+|\s+a\s+)"
                              r"(?:clock|clk|cycle)s?\b", re.IGNORECASE)


def _per_time(quantity: Quantity) -> bool:
    """A rate per clock, cycle or pin (``2KBytes/clock``, ``18 Gbps per pin``) is not a chip figure; a size per
    unit (``128 KiB per core``) is, at that unit's scope."""
    return quantity.per in ("clock", "clk", "cycle", "pin")




def prefetch_labels(records: list[Record], glossary: Glossary) -> None:
    """Embed, in one batch, every label that `scalar_candidates` will match for `records`."""
    from ingest.profile_meaning import prefetch

    texts: list[str] = []
    for record in records:
        every = find_quantities(record.text, record.default_unit)
        for quantity in every[:1] if record.is_table else every:
            if quantity.dimension in ("count", "bytes", "bytes_per_s", "hz") and not _per_time(quantity):
                texts += labels(record, quantity, every, glossary)
    prefetch(texts)


def _first_of_each_dimension(quantities: list[Quantity]) -> list[Quantity]:
    """A table cell's values: the first of each dimension ("48 GB LPDDR5X at 820 GB/s" holds a size and a
    bandwidth; in "96 KB (2 x 48 KB)" or "1.4 GHz boost / 1.1 GHz base" the later value of a dimension qualifies
    the first)."""
    seen: set[str] = set()
    out = []
    for quantity in quantities:
        if quantity.dimension not in seen:
            seen.add(quantity.dimension)
            out.append(quantity)
    return out


def scalar_candidates(record: Record, out: RuleOutput, glossary: Glossary) -> None:
    """Every scalar field value `record` states (see module docstring)."""
    every = find_quantities(record.text, record.default_unit)
    quantities = _first_of_each_dimension(every) if record.is_table else every
    for quantity in quantities:
        if quantity.dimension == "flops" and not quantity.per:
            _report_unit_problem(record, quantity, every, glossary, out)
        if quantity.dimension not in ("count", "bytes", "bytes_per_s", "hz") or _per_time(quantity):
            continue
        if is_bound(record, quantity) or _DEFAULT_AFTER.match(record.text[quantity.end:]) or \
                is_old_figure(record.text, quantity.start, quantity.end, "" if record.is_table else record.key):
            continue  # a bound, a default, or an old figure ("now 1,800 MHz (was 1,900 MHz)")
        if quantity.dimension == "count" and _COUNT_PER_CLOCK.match(record.text[quantity.end:]):
            continue  # "2,048 operations per clock": a rate per cycle, not a count of anything
        if quantity.dimension == "count" and PHYSICAL_TOTAL.match(sentence_after(record, quantity)):
            continue  # the die's total, of which fewer are enabled in the product
        # "Table 3 lists 96 KiB ...; the correct value is 64 KiB": about what the figure it corrects is about
        basis, old, old_every = corrected_figure(record, quantity) or (record, None, every)
        match = what_it_is(basis, old or quantity, old_every, glossary)
        if match is None and quantity.dimension == "hz" and glossary.peak_clocks and \
                any(names_clock(t, glossary.peak_clocks) for t in labels(record, quantity, every, glossary)[:2]):
            match = Match("engine_clock", 1.0, 0.0)  # the clock the peaks are computed at ("Base clock")
        if match is None and quantity.dimension == "hz" and (
                is_bare_clock(record.text[:quantity.start]) if not record.is_table else
                (record.product_row or is_bare_clock(record.label)) and
                any(is_bare_clock(t) for t in labels(record, quantity, every, glossary)[:1])):
            match = Match("engine_clock", 0.5, 0.0)  # "Clock" alone: no look-alike named (profile_clock)
        if match is None:
            _report_unit_problem(record, quantity, every, glossary, out)
            continue
        if match.quantity == "memory_bandwidth" and not record.is_table and \
                not _PEAK_CUE.search(f"{record.key} {record.topic}") and not (
                    _TOGETHER.search(record.text) and memory_parts(record.prev, record.text[:quantity.start])):
            continue  # a device's memory bandwidth is written as its peak (or total, aggregate, maximum), or as
            # what all the parts of its memory move together ("on 8 channels. Together the 8 channels move ...")
        if quantity.dimension == "count" and not record.is_table and \
                PER_PARENT_BEFORE.search(record.text[max(0, quantity.start - 80):quantity.start]):
            continue  # "6 clusters of 4 engines": 4 is per cluster (the chip's count is derived, profile_derive)
        if quantity.multiplier > 1 and _FURTHER_FACTOR.match(record.text[quantity.end:]):
            continue  # "(4 x 16 lanes x 4)": a partial product of a computation, not a figure
        if match.quantity in _GROUP_SIZES and _AGGREGATE.search(record.text[quantity.end:quantity.end + 30]):
            continue  # "4 issue groups side by side, 128 lanes in all": a sum of groups, not one group's width
        if match.quantity == "compute_units" and record.is_table and any(
                _CU_MODIFIER.search(t) for t in labels(record, quantity, every, glossary)[:1]):
            continue  # "PE clusters: 12": a count of clusters of PEs (the unit's name modifies another noun)
        if match.quantity == "compute_units" and _holds_compute_units(record, quantity, glossary):
            continue  # "4 core arrays; each core array contains 20 cores": a count of partitions
        if match.quantity == "compute_units" and TOTAL_OF_PART.search(record.text[:quantity.start]):
            continue  # "enables 88 of the 96 processing clusters on the die": 96 is the die's physical total
        if match.quantity == "block_threads" and _holds_several_blocks(record, quantity, glossary):
            continue  # "a cluster of 16 blocks may hold up to 16,384 threads": several blocks' threads, not one's
        scope = scope_of(basis, old or quantity, glossary)
        if ENABLED_SUBSET.search(record.text[:quantity.start]) or (
                match.quantity == "compute_units" and OF_TOTAL.match(record.text[quantity.end:])):
            scope = "chip"  # the enabled ones are the product's
        if not scope and match.quantity in _PER_UNIT_QUANTITIES and not record.is_table and \
                _TOGETHER.search(record.text[max(0, quantity.start - 60):quantity.start]):
            scope = "chip"  # "Together the tiles hold 897 MiB": what all the units hold, not one unit's
        if not scope and match.quantity in _PER_UNIT_QUANTITIES and _chip_is_subject(record, quantity):
            scope = "chip"  # "Across the grid the T9 has 150 MiB of SRAM": the chip's total, not one unit's
        if not scope and match.quantity == "block_threads" and (record.is_table or _asks_for(record, match, glossary)):
            scope = "block"  # a label (or question) that means the work-group limit ("Max work group size: 1024")
        _learn_sub_values(record, match.quantity, quantity.dimension, glossary, out)
        name = field_for(match.quantity, scope)
        if name is None:
            _scaled_candidate(record, quantity, match, scope, glossary, out)
            continue
        _add(name, record, quantity, match, out, corrects=old)


def _holds_several_blocks(record: Record, quantity: Quantity, glossary: Glossary) -> bool:
    """Whether the clause before a thread count counts thread blocks ("a cluster of 16 blocks may hold up to 16,384
    threads"): the figure is the threads of several blocks. "8 blocks of 256 threads" (the figure right after "of")
    is one block's size and does not count."""
    clause = re.split(r"[.;:!?]\s|\n", record.text[:quantity.start])[-1]
    for match in _COUNTED_NOUN.finditer(clause):
        rest = clause[match.end():]
        nouns = match.group("n").split()
        if any(glossary.concept(" ".join(nouns[:n])) == "block" for n in (len(nouns), 1)) and int(match.group("k").replace(",", "")) > 1 and \
                not re.fullmatch(r"\s*of\s*(?:up to\s*|at most\s*)?", rest):
            return True
    return False


_COUNTED_NOUN = re.compile(r"(?<![\w.,])(?P<k>\d[\d,]*)\s+(?P<n>(?:[A-Za-z][\w\-]*\s+)?[A-Za-z][\w\-]*)")


def _asks_for(record: Record, match: Match, glossary: Glossary) -> bool:
    """Whether the question `record` answers asks for the quantity `match` names ("What is the widest work-group?"
    asks for the work-group limit)."""
    for label in question_labels(record.question) if record.question else []:
        asked = match_quantity(glossary.rewrite(clean_label(label)), "count", lookalikes=True)
        least = _DEFAULT_SIMILARITY["question"]
        if asked is not None and asked.quantity == match.quantity and asked.similarity >= least:
            return True
    return False


def corrected_figure(record: Record, quantity: Quantity) -> tuple[Record, Quantity, list[Quantity]] | None:
    """The figure that `quantity` is given in place of, when it is a correcting figure
    (`ingest.profile_supersede.is_correcting_figure`): the nearest figure of the same dimension before it, in its
    clause or in the sentence's earlier clauses, that is written as old or reported; as (a record of the text it
    is read in, the figure, every figure of that text). None otherwise."""
    if record.is_table or not is_correcting_figure(record.text, quantity.start):
        return None
    at = record.key.find(record.text)
    for text in (record.text[:quantity.start], record.key[:at] if at > 0 else ""):
        every = find_quantities(text, record.default_unit)
        for q in reversed(every):
            if q.dimension == quantity.dimension and is_old_figure(text, q.start, q.end, record.key):
                return dataclasses.replace(record, text=text, local=text), q, every
    return None


def _add(name: str, record: Record, quantity: Quantity, match: Match, out: RuleOutput, kind: str = "stated",
         formula: str | None = None, factor: float = 1.0, noun: str = "", corrects: Quantity | None = None) -> None:
    limit = FIELD_LIMITS[name]
    if name == "registers_per_compute_unit" and quantity.dimension == "bytes":
        value = quantity.value / 4 * factor
        resolution = quantity.resolution / 4 * factor
        old = corrects.value / 4 * factor if corrects else None
        kind = "derived"
        formula = formula or f"register file {quantity.text} / 4 bytes per 32-bit register"
    elif quantity.dimension != limit.dimension:
        return
    else:
        value = quantity.to(limit.unit) * factor
        resolution = quantity.resolution / TARGET_UNITS[limit.unit][1] * factor
        old = corrects.to(limit.unit) * factor if corrects else None
    if value < limit.minimum or (limit.allowed and value not in limit.allowed):
        return
    if name == "num_compute_units" and (value != int(value) or quantity.dimension != "count"):
        return
    if quantity.multiplier > 1 and kind == "stated":
        kind, formula = "derived", f"{quantity.text} = {quantity.multiplier} x {value / quantity.multiplier:g} " \
                                   f"{limit.unit}"
    out.candidates.append(Candidate(name, value, resolution, record, quantity, kind=kind, formula=formula,
                                    noun=noun, similarity=match.similarity, corrects=old))


def _scaled_candidate(record: Record, quantity: Quantity, match: Match, scope: str, glossary: Glossary,
                      out: RuleOutput) -> None:
    """A register file per sub-unit, or an L2 per partition, scaled by the stated count (derived)."""
    target = SCALABLE.get(match.quantity)
    if target is None or scope not in ("sub", "part"):
        return
    noun = scope_noun(record, quantity)
    if not noun:
        return
    if target == "cu" and scope == "sub":
        found = glossary.per_parent(noun, glossary.compute_unit_keys())
        what = "compute unit"
    elif target == "chip" and scope == "part":
        key = glossary.aliases.get(term_key(noun), term_key(noun))
        found = glossary.chip_counts.get(key)
        what = "chip"
    else:
        return
    if not found:
        return
    count, source = found
    name = field_for(match.quantity, "cu" if target == "cu" else "chip")
    if name is None:
        return
    formula = f"{quantity.text} per {noun} x {count} {noun} per {what} ({' '.join(source.split())[:120]})"
    _add(name, record, quantity, match, out, kind="derived", formula=formula, factor=count)


def _learn_sub_values(record: Record, quantity_name: str, dimension: str, glossary: Glossary,
                      out: RuleOutput) -> None:
    """``N (M per X)``, ``M per X`` and ``Nx M <things>`` teach that M is a per-X value of this quantity, when X is
    smaller than the chip (a sub-unit or partition; for a per-compute-unit quantity, a sub-unit)."""
    if record.product == "other":
        return
    per_cu = quantity_name in ("shared_memory", "register_file", "register_count")
    learn_from = {"sub"} if per_cu else {"sub", "part", "cu"}
    for name in _fields_of(quantity_name):
        for match in re.finditer(r"([\d.,]+\s*[A-Za-z]{0,4})\s+(?:per|for each)\s+((?:\d+\s+)?[A-Za-z][\w\- ]{0,30})",
                                 record.text):
            if noun_level(re.sub(r"^\d+\s+", "", match.group(2)), glossary) in learn_from:
                for q in find_quantities(match.group(1), record.default_unit):
                    if q.dimension == dimension:
                        out.learned_sub.setdefault(name, []).append(q.value)
        for match in re.finditer(r"\beach\s+([\d.,]+\s*[A-Za-z]{0,4})\b", record.text):
            for q in find_quantities(match.group(1), record.default_unit):
                if q.dimension == dimension:
                    out.learned_sub.setdefault(name, []).append(q.value)  # "each 2 GiB is ..."
        for q in find_quantities(record.text, record.default_unit):
            if q.multiplier > 1 and q.dimension == dimension:
                out.learned_sub.setdefault(name, []).append(q.value / q.multiplier)
        for match in _per_part_matches(record.text):  # "4 stacks of 24 GB each": 24 GB is one stack's
            level = noun_level(match.group("parts"), glossary)
            if int(match.group("k").replace(",", "")) > 1 and level != "chip" and (not per_cu or level in learn_from):
                for q in find_quantities(match.group("m"), record.default_unit):
                    if q.dimension == dimension:
                        out.learned_sub.setdefault(name, []).append(q.value)


#: "K parts of/with/at M each": M is one part's figure (a postpositive "each" after a count of parts).
_PARTS_EACH = re.compile(r"(?<![\w.,])(?P<k>\d[\d,]*)\s+(?P<parts>(?:[A-Za-z][\w\-]*\s+){0,2}?[A-Za-z][\w\-]*)\s+"
                         r"(?:of|with|at|holding|having)\s+(?P<m>[\d.,]+\s*[A-Za-z]{0,5}(?:/s)?)\s+each\b",
                         re.IGNORECASE)

#: "K parts of M" (no "each": "6 stacks of 16 GB") and "K x M parts" ("4 x 16 GB stacks"): M is one part's figure.
_PARTS_OF = re.compile(r"(?<![\w.,])(?P<k>\d[\d,]*)\s+(?P<parts>(?:[A-Za-z][\w\-]*\s+){0,2}?[A-Za-z][\w\-]*)\s+"
                       r"of\s+(?P<m>[\d.,]+\s*[A-Za-z]{1,5}(?:/s)?)(?![\w/])", re.IGNORECASE)
_TIMES_PARTS = re.compile(r"(?<![\w.,])(?P<k>\d[\d,]*)\s*[x\u00d7]\s*(?P<m>[\d.,]+\s*[A-Za-z]{1,5}(?:/s)?)\s+"
                          r"(?P<parts>(?:[A-Za-z][\w\-]*\s+){0,1}?[A-Za-z][\w\-]*)", re.IGNORECASE)


def _per_part_matches(text: str) -> list[re.Match]:
    """Matches with groups ``k`` (a count of parts), ``parts`` (their noun) and ``m`` (one part's figure)."""
    return [*_PARTS_EACH.finditer(text), *_PARTS_OF.finditer(text), *_TIMES_PARTS.finditer(text)]


def _fields_of(quantity_name: str) -> set[str]:
    from ingest.profile_fields import FIELD_BY_SCOPE

    return {f for (q, _), f in FIELD_BY_SCOPE.items() if q == quantity_name}


_DIMENSION_WORDS = {"flops": "a compute rate (FLOP/s)", "bytes_per_s": "a bandwidth (bytes/s)",
                    "bytes": "a size (bytes)", "hz": "a frequency (Hz)", "count": "a count"}


def _report_unit_problem(record: Record, quantity: Quantity, every: list[Quantity], glossary: Glossary,
                         out: RuleOutput) -> None:
    """A rate whose words name the memory bandwidth but whose unit is a compute rate (``4.0 TFLOPS ... memory
    bandwidth``), or a number with a unit that is not known, is reported, not used."""
    if record.product == "other":
        return
    unknown = _UNKNOWN_UNIT_AFTER.match(record.text[quantity.end:]) if quantity.dimension == "count" else None
    if quantity.dimension != "flops" and not unknown:
        return
    for label in labels(record, quantity, every, glossary)[:2]:
        match = match_quantity(label, "bytes_per_s") if label else None
        if match is not None and match.similarity >= 0.6:
            problem = (f"unknown unit {unknown.group(1)!r}" if unknown else
                       f"{quantity.unit} measures {_DIMENSION_WORDS['flops']}, not {_DIMENSION_WORDS['bytes_per_s']}")
            out.problems.append(f"{field_for(match.quantity, '')}: not used: {quantity.text!r} next to its words in "
                                f"{record.chunk.source} ({record.locator}); {problem}")
            return
