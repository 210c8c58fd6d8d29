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
4. structural checks: bounds ("over 2.5 PFLOP/s"), defaults ("48 KB by default"), per-clock and sparse figures,
   field limits (`FIELD_LIMITS`).

"N (M per X)" and "Nx M <things>" teach that M is a per-X value for that field: M is then not read as the chip value
elsewhere (a "4 MB" L2 in a product table whose other source says "32 (4 per XCD)").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ingest.profile_definitions import PER_PARENT_BEFORE, noun_phrase, term_key
from ingest.profile_fields import SCALABLE, Match, field_for, is_profile_quantity, match_quantity
from ingest.profile_glossary import Glossary
from ingest.profile_labels import ENABLED_SUBSET, PHYSICAL_TOTAL, _np_after, labels, own_noun, own_words, sentence_after
from ingest.profile_scope import THE_NOUN_HAS, noun_level, parens, scope_noun, scope_of
from ingest.profile_supersede import is_old_figure
from ingest.profile_text import Record
from ingest.units import TARGET_UNITS, Quantity, find_quantities

_BOUND_BEFORE = re.compile(r"(?:over|more than|at least|greater than|nearly|almost|about|approximately|~|>|<)\s*$",
                           re.IGNORECASE)
_PER_UNIT = re.compile(r"/\s*(?:clock|clk|cycle|cu|sm)\b|per (?:clock|clk|cycle|cu|sm|compute unit)\b",
                       re.IGNORECASE)
_UNKNOWN_UNIT_AFTER = re.compile(r"^\s?([KMGTP]?[A-Za-z]{0,6}(?:/s(?:ec)?|ps|B|FLOPS?|OPS|Hz))\b")
_DEFAULT_AFTER = re.compile(r"\s*(?:\(|,)?\s*(?:by default|default)\b", re.IGNORECASE)
_CACHE_LEVEL = re.compile(r"\bL([0-4])\b|\blevel[- ]([0-4]|one|two|three|four)\b|\b(first|second|third)-level\b|"
                          r"\b(last)[- ]level\b", re.IGNORECASE)
_LEVEL_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "first": 1, "second": 2, "third": 3}
_STOPWORDS = frozenset("a an the of in on at to for from by with and or is are its their this that up total"
                       .split())

DTYPES: dict[str, re.Pattern] = {
    "fp64": re.compile(r"\bFP64\b|\bf64\b|double[- ]precision", re.IGNORECASE),
    "fp32": re.compile(r"\bFP32\b|\bf32\b|single[- ]precision", re.IGNORECASE),
    "tf32": re.compile(r"\bTF32\b|TensorFloat-?32", re.IGNORECASE),
    "fp16": re.compile(r"\bFP16\b|\bf16\b|half[- ]precision", re.IGNORECASE),
    "bf16": re.compile(r"\bBF16\b|bfloat-?16", re.IGNORECASE),
    "fp8": re.compile(r"\bFP8\b|8-bit (?:floating|precision)|\bE4M3\b|\bE5M2\b", re.IGNORECASE),
    "int8": re.compile(r"\bINT8\b|8-bit integer", re.IGNORECASE),
}
_MATRIX = re.compile(r"\bmatrix\b|\btensor\b|tensor core", re.IGNORECASE)
_VECTOR = re.compile(r"\bvector\b|\bSIMD\b|CUDA cores?|non-tensor", re.IGNORECASE)


@dataclass(frozen=True)
class FieldLimit:
    """What a field's value must be: the profile unit, its dimension, a minimum and (optionally) allowed values."""

    unit: str
    dimension: str
    minimum: float = 0.0
    allowed: tuple[float, ...] = ()


#: Profile field -> its limits (a warp is a power of two of 8-128 threads; a work-group at least 32 threads; a
#: register file at least 1024 registers; device memory at least 512 MiB; a clock at least 100 MHz).
FIELD_LIMITS: dict[str, FieldLimit] = {
    "num_compute_units": FieldLimit("count", "count", 1),
    "warp_size": FieldLimit("threads", "count", allowed=(8, 16, 32, 64, 128)),
    "max_threads_per_block": FieldLimit("threads", "count", 32),
    "smem_per_block_kb": FieldLimit("KiB", "bytes"),
    "smem_per_compute_unit_kb": FieldLimit("KiB", "bytes"),
    "registers_per_compute_unit": FieldLimit("32-bit registers", "count", 1024),
    "l2_cache_mb": FieldLimit("MiB", "bytes"),
    "mem_capacity_gb": FieldLimit("GiB", "bytes", 2**29 / 2**30),
    "mem_bw_gbps": FieldLimit("GB/s", "bytes_per_s"),
    "clock_mhz": FieldLimit("MHz", "hz", 100),
}


@dataclass
class Candidate:
    """One value a record states for one field (value and resolution in the field's profile unit)."""

    field: str
    value: float
    resolution: float
    record: Record
    quantity: Quantity
    kind: str = "stated"
    formula: str | None = None
    variant: str = ""
    noun: str = ""
    similarity: float = 0.0


@dataclass
class RuleOutput:
    """Everything the rules read from a set of records."""

    candidates: list[Candidate] = field(default_factory=list)
    learned_sub: dict[str, list[float]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


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
_DEFAULT_SIMILARITY = {"table": 0.0, "attached": 0.5, "clause": 0.55, "own": 0.5}


_GROUP_SIZES = ("warp_width", "block_threads")
#: A further factor after a product ("4 x 16 lanes| x 4"): the product is part of a longer computation.
_FURTHER_FACTOR = re.compile(r"^\s*(?:[A-Za-z\-]+\s+)?[x\u00d7*]\s*\d")
#: Words after a count that make it a sum over several things ("128 lanes in all", "64 lanes together").
_AGGREGATE = re.compile(r"^\s*[A-Za-z\-]*\s*(?:in all|in total|altogether|together|combined)\b", re.IGNORECASE)
#: A label that is only a scope ("per compute unit", "each core") names no quantity inside a parenthetical.
_SCOPE_ONLY = re.compile(r"^\s*(?:per|each|every)\s+(?:[\w\-]+\s*){1,3}$", re.IGNORECASE)
_PEAK_CUE = re.compile(r"peak|theoretical|aggregate|total|maximum|\bmax\b|up to|bandwidth", re.IGNORECASE)


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


def what_it_is(record: Record, quantity: Quantity, every: list[Quantity], glossary: Glossary) -> Match | None:
    """The profile quantity `quantity` states (`ingest.profile_fields`), from its labels: a table cell's label, else
    the words the number is attached to, else (not for counts) its clause. The most similar reading decides, and
    when that is a look-alike (``(1.1 GHz base)``: a base clock) the number states no profile quantity. A label
    that names a cache level decides between the L2 and other caches."""
    named = labels(record, quantity, every, glossary)
    counts_groups = quantity.dimension == "count" and not record.is_table and bool(named) and bool(named[0]) \
        and glossary.concept(named[0]) in ("warp", "block")  # "64 warps" counts warps: not the size of one
    groups = [("table", named)] if record.is_table else [("attached", named[:_ATTACHED])]
    if own_noun(record, quantity, glossary):
        return None  # "two halves of 48" in a clusters row counts halves, not what the row names
    own = own_words(record, quantity)
    if own:
        groups.insert(0, ("own", [glossary.rewrite(f"{own} {quantity.unit}")]))
    if not record.is_table and quantity.dimension != "count":
        groups.append(("clause", named[_ATTACHED:]))  # a count names what it counts next to it, not in its clause
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


def _per_time(quantity: Quantity) -> bool:
    """A rate per clock, cycle or pin (``2KBytes/clock``, ``18 Gbps per pin``) is not a chip figure; a size per
    unit (``128 KiB per core``) is, at that unit's scope."""
    return quantity.per in ("clock", "clk", "cycle", "pin")


def _is_bound(record: Record, quantity: Quantity) -> bool:
    """A bound ("over 2.5 PFLOP/s") or an end of a range ("32–64 GB depending on SKU", "96 to 128 engines"): not
    one product's value."""
    before = record.text[max(0, quantity.start - 20):quantity.start]
    return bool(_BOUND_BEFORE.search(before) or _RANGE_BEFORE.search(before)
                or _RANGE_AFTER.match(record.text[quantity.end:quantity.end + 20]))


#: The upper end of a range: a number and a dash or "to" right before the figure; the lower end: the same after.
_RANGE_BEFORE = re.compile(r"\d\s*(?:[\-\u2013\u2014]|to)\s*$")
_RANGE_AFTER = re.compile(r"^\s*(?:[\-\u2013\u2014]|to)\s*\d")


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


def scalar_candidates(record: Record, out: RuleOutput, glossary: Glossary) -> None:
    """Every scalar field value `record` states (see module docstring)."""
    every = find_quantities(record.text, record.default_unit)
    quantities = every[:1] if record.is_table else every
    for quantity in quantities:
        if quantity.dimension == "flops" and not quantity.per:
            _report_unit_problem(record, quantity, every, glossary, out)
        if quantity.dimension not in ("count", "bytes", "bytes_per_s", "hz") or _per_time(quantity):
            continue
        if _is_bound(record, quantity) or _DEFAULT_AFTER.match(record.text[quantity.end:]) or \
                is_old_figure(record.text, quantity.start, quantity.end, "" if record.is_table else record.key):
            continue  # a bound, a default, or an old figure ("now 1,800 MHz (was 1,900 MHz)")
        if quantity.dimension == "count" and PHYSICAL_TOTAL.match(sentence_after(record, quantity)):
            continue  # the die's total, of which fewer are enabled in the product
        match = what_it_is(record, quantity, every, glossary)
        if match is None:
            _report_unit_problem(record, quantity, every, glossary, out)
            continue
        if match.quantity == "memory_bandwidth" and not record.is_table and not _PEAK_CUE.search(f"{record.key} {record.topic}"):
            continue  # a device's memory bandwidth is written as its peak (or total, aggregate, maximum)
        if quantity.dimension == "count" and not record.is_table and \
                PER_PARENT_BEFORE.search(record.text[max(0, quantity.start - 80):quantity.start]):
            continue  # "6 clusters of 4 engines": 4 is per cluster (the chip's count is derived, profile_derive)
        if quantity.multiplier > 1 and _FURTHER_FACTOR.match(record.text[quantity.end:]):
            continue  # "(4 x 16 lanes x 4)": a partial product of a computation, not a figure
        if match.quantity in _GROUP_SIZES and _AGGREGATE.search(record.text[quantity.end:quantity.end + 30]):
            continue  # "4 issue groups side by side, 128 lanes in all": a sum of groups, not one group's width
        if match.quantity == "compute_units" and _holds_compute_units(record, quantity, glossary):
            continue  # "4 core arrays; each core array contains 20 cores": a count of partitions
        scope = scope_of(record, quantity, glossary)
        if ENABLED_SUBSET.search(record.text[:quantity.start]):
            scope = "chip"  # the enabled ones are the product's
        if not scope and match.quantity in _PER_UNIT_QUANTITIES and _chip_is_subject(record, quantity):
            scope = "chip"  # "Across the grid the T9 has 150 MiB of SRAM": the chip's total, not one unit's
        if not scope and match.quantity == "block_threads" and record.is_table:
            scope = "block"  # a label that means the work-group limit ("Max work group size: 1024") is at its scope
        _learn_sub_values(record, match.quantity, quantity.dimension, glossary, out)
        name = field_for(match.quantity, scope)
        if name is None:
            _scaled_candidate(record, quantity, match, scope, glossary, out)
            continue
        _add(name, record, quantity, match, out)


def _add(name: str, record: Record, quantity: Quantity, match: Match, out: RuleOutput, kind: str = "stated",
         formula: str | None = None, factor: float = 1.0, noun: str = "") -> None:
    limit = FIELD_LIMITS[name]
    if name == "registers_per_compute_unit" and quantity.dimension == "bytes":
        value = quantity.value / 4 * factor
        resolution = quantity.resolution / 4 * factor
        kind = "derived"
        formula = formula or f"register file {quantity.text} / 4 bytes per 32-bit register"
    elif quantity.dimension != limit.dimension:
        return
    else:
        value = quantity.to(limit.unit) * factor
        resolution = quantity.resolution / TARGET_UNITS[limit.unit][1] * factor
    if value < limit.minimum or (limit.allowed and value not in limit.allowed):
        return
    if name == "num_compute_units" and (value != int(value) or quantity.dimension != "count"):
        return
    if quantity.multiplier > 1 and kind == "stated":
        kind, formula = "derived", f"{quantity.text} = {quantity.multiplier} x {value / quantity.multiplier:g} " \
                                   f"{limit.unit}"
    out.candidates.append(Candidate(name, value, resolution, record, quantity, kind=kind, formula=formula,
                                    noun=noun, similarity=match.similarity))


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


# ---------------------------------------------------------------- peaks

def peak_candidates(record: Record, out: RuleOutput, glossary: Glossary) -> None:
    """Dense peaks per data type; the data type and matrix/vector variant come from the words next to the value."""
    if record.sparse or (record.is_table and re.search(r"speedup|sparsity|sparse", record.local, re.IGNORECASE)):
        return
    if _PER_UNIT.search(record.local):
        return
    quantities = [q for q in find_quantities(record.text, record.default_unit) if q.dimension == "flops"]
    if record.is_table:
        quantities = quantities[:1]
    for n, quantity in enumerate(quantities):
        if quantity.per or _is_bound(record, quantity) or \
                is_old_figure(record.text, quantity.start, quantity.end, "" if record.is_table else record.key):
            continue
        if not record.is_table and _sparse_figure(record.text, quantities, n):
            continue
        scope = scope_of(record, quantity, glossary)
        if scope in ("multi", "block"):
            continue
        per_unit = _per_unit_noun(record, quantity) if scope in ("cu", "sub", "part") else None
        if scope in ("cu", "sub", "part") and not per_unit:
            continue
        for dtype, variant in _dtypes_near(record, quantities, n):
            out.candidates.append(Candidate(f"peak_tflops.{dtype}", quantity.to("TFLOP/s"),
                                            quantity.resolution / 1e12, record, quantity, variant=variant,
                                            noun=per_unit or ""))
        out.candidates.extend(_relative_peaks(record, quantity, per_unit or ""))


_SPARSE = re.compile(r"speedup|sparsity|sparse", re.IGNORECASE)
_DENSE = re.compile(r"\bdense\b", re.IGNORECASE)


def _sparse_figure(text: str, quantities: list[Quantity], n: int) -> bool:
    """Whether prose figure `n` is a sparse (or speedup) figure: the words after it, up to the next figure or the
    end of its parenthetical, say so ("550.5 TFLOPS with 2:4 sparsity"), or the words before it since the last
    figure do and the words after it do not say "dense" ("sparse FP8 at 1.6 PFLOPS"). A dense figure beside a
    sparse one in its parenthetical ("275.3 TFLOPS dense (550.5 TFLOPS with sparsity)") is dense."""
    q = quantities[n]
    end = quantities[n + 1].start if n + 1 < len(quantities) else len(text)
    after = text[q.end:end]
    after = after[:after.find("(")] if "(" in after else after  # the next figure's parenthetical is its own
    after = after[:after.find(")") + 1] if ")" in after else after
    start = quantities[n - 1].end if n else 0
    before = text[start:q.start]
    before = before[before.rfind(")") + 1:] if ")" in before else before
    if _SPARSE.search(after):
        return True
    return bool(_SPARSE.search(before)) and not _DENSE.search(after)


def _per_unit_noun(record: Record, quantity: Quantity) -> str | None:
    """The unit a per-unit peak is stated for: ``"vector unit"`` in "0.064 TFLOP/s (per Vector Unit)"."""
    after = re.match(r"\s*\(\s*per\s+([^()]{1,40})\)", record.text[quantity.end:], re.IGNORECASE)
    if after:
        return " ".join(after.group(1).lower().split())
    texts = [f"{record.label} {record.header}"] if record.is_table else [record.text, record.subject]
    for text in texts:
        match = re.search(r"\b(?:per|each)\s+((?:[\w\-]+\s+){0,2}[\w\-]+(?:\s*\([A-Za-z]+\))?)", text, re.IGNORECASE)
        if match:
            return " ".join(noun_phrase(match.group(1).split()).lower().split()) or None
        match = THE_NOUN_HAS.search(text)
        if match:
            return " ".join(noun_phrase(match.group(1).split()).lower().split()) or None
    return None


#: A figure stated relative to the one before it: "twice that in FP8", "half that for FP32", "4 times that",
#: "twice as much in INT8" (English comparatives of a multiple). Its data type is not the earlier figure's.
_RELATIVE_FIGURE = re.compile(r"\b(?:(?P<word>twice|double|half|thrice|triple)|(?P<n>\d+(?:\.\d+)?)\s*(?:x|times))\s+"
                              r"(?:that|this|the\s+(?:figure|rate|number)|as\s+(?:much|many|fast|high))\b",
                              re.IGNORECASE)
_RELATIVE_FACTORS = {"twice": 2.0, "double": 2.0, "half": 0.5, "thrice": 3.0, "triple": 3.0}


def _before_relative(window: str) -> str:
    """`window` up to its first relative figure ("..., twice that in FP8"): what follows is about another figure."""
    match = _RELATIVE_FIGURE.search(window)
    return window[:match.start()] if match else window


def _sentence_rest(record: Record, quantity: Quantity) -> str:
    """The text of `quantity`'s sentence after it (prose), up to the next FLOP/s figure."""
    at = record.key.find(record.text)
    rest = record.key[at + quantity.end:] if at >= 0 else record.text[quantity.end:]
    following = [q for q in find_quantities(rest) if q.dimension == "flops"]
    return rest[:following[0].start] if following else rest


def _relative_peaks(record: Record, quantity: Quantity, noun: str) -> list[Candidate]:
    """Peaks stated as a multiple of `quantity` right after it ("413 TFLOPS of BF16, twice that in FP8" -> FP8
    826 TFLOPS): ``derived``, the factor times the figure, with the sentence that states both as the quote. A
    relative figure whose data type is not named is left out."""
    if record.is_table:
        return []
    rest = _sentence_rest(record, quantity)
    match = _RELATIVE_FIGURE.search(rest)
    if match is None:
        return []
    factor = _RELATIVE_FACTORS[match.group("word").lower()] if match.group("word") else float(match.group("n"))
    scope = re.split(r"[,;]\s|\s(?:and|while|but)\s", rest[match.end():], maxsplit=1)[0]
    scope = _before_relative(scope)
    out = []
    for dtype, rx in DTYPES.items():
        if rx.search(scope):
            variant = "matrix" if _MATRIX.search(scope) else "vector" if _VECTOR.search(scope) else ""
            formula = f"{factor:g} x {quantity.text} ('{match.group(0)}')"
            out.append(Candidate(f"peak_tflops.{dtype}", quantity.to("TFLOP/s") * factor,
                                 quantity.resolution / 1e12 * factor, record, quantity, kind="derived",
                                 formula=formula, variant=variant, noun=noun))
    return out


def _dtypes_near(record: Record, quantities: list[Quantity], n: int) -> list[tuple[str, str]]:
    """(dtype, variant) named next to quantity `n`: after it (up to the next value), else before it."""
    if record.is_table:
        windows = [record.local]
    else:
        text = record.text
        start = quantities[n - 1].end if n > 0 else 0
        end = quantities[n + 1].start if n + 1 < len(quantities) else len(text)
        windows = [text[quantities[n].end:end], text[start:quantities[n].start]]
        at = record.key.find(text) if n + 1 == len(quantities) else -1
        rest = record.key[at + quantities[n].end:] if at >= 0 else ""
        if re.match(r"\s*(?:for|of|in|on|with)\b", rest):
            # the clause's last figure: its own phrase may go on in the sentence ("for BF16 and FP16"), but not
            # into the next figure's clause ("0.8 PFLOPS and dense FP8 at 1.6 PFLOPS")
            following = [q for q in find_quantities(rest) if q.dimension == "flops"]
            windows[0] = rest[:following[0].start] if following else rest
        windows[0] = _before_relative(windows[0])
    for window in windows:
        found = [(dtype, m) for dtype, rx in DTYPES.items() for m in rx.finditer(window)]
        if found:
            variant = "matrix" if _MATRIX.search(window) else "vector" if _VECTOR.search(window) else ""
            return sorted({(dtype, variant) for dtype, _ in found})
    return []
