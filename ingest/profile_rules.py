"""Field rules: which records state which profile field, and the value each one states.

Every rule is generic (vocabulary of hardware documents, units, levels), never a string of one document:

- a field is named by keywords in the record's key text (a table header, a row label, a caption or the
  sentence) and read as a quantity of one dimension (bytes, bytes/s, FLOP/s, Hz or a count);
- a record whose clause says the number is per sub-unit ("per XCD", "each channel", "The XCD has") or for several
  devices ("8-GPU", "two such ASICs") does not state a per-chip field; peaks per clock or per CU are not peaks;
- numbers written as bounds ("over 2.5 PFLOP/s") and values in "with sparsity" columns are not dense peaks;
- "N (M per X)" and "Nx M <things>" teach that M is a per-X value for that field: M is then not read as the chip
  value elsewhere (a "4 MB" L2 in a product table whose other source says "32 (4 per XCD)").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ingest.profile_text import CU_NOUNS, Record, classify_noun, level_cues, without_parentheticals
from ingest.units import TARGET_UNITS, Quantity, find_quantities

_CHIP_FIELDS_REJECT = frozenset({"sub", "cu", "multi", "block"})
_PER_CU_REJECT = frozenset({"sub", "multi", "block"})
_BOUND_BEFORE = re.compile(r"(?:over|more than|at least|greater than|nearly|almost|about|approximately|~|>|<)\s*$",
                           re.IGNORECASE)
_PER_UNIT = re.compile(r"/\s*(?:clock|clk|cycle|cu|sm)\b|per (?:clock|clk|cycle|cu|sm|compute unit)\b",
                       re.IGNORECASE)
_UNKNOWN_UNIT_AFTER = re.compile(r"^\s?([KMGTP]?[A-Za-z]{0,6}(?:/s(?:ec)?|ps|B|FLOPS?|OPS|Hz))\b")
_SMEM = r"(?:\bLDS\b|local data share|shared memory|scratch ?pad|shared local memory|\bSLM\b)"

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
_CU_COUNT = re.compile(
    rf"(?<![\w.,])(?P<n>\d{{1,3}}(?:,\d{{3}})+|\d+)(?P<x>x)?\s+(?:(?:active|enabled|available|total)\s+)?"
    rf"(?P<noun>{CU_NOUNS}|tiles?)\b(?P<abbr>\s*\((?:CUs?|SMs?|EUs?|WGPs?)\))?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class FieldRule:
    """How one scalar field is found: keywords (in the key text), exclusions (in the clause), dimension."""

    name: str
    dimension: str
    unit: str
    include: re.Pattern
    exclude: re.Pattern | None = None
    reject_levels: frozenset = _CHIP_FIELDS_REJECT
    require_levels: frozenset = frozenset()
    minimum: float = 0.0
    allowed: tuple[float, ...] = ()
    needs_peak_cue: bool = False


def _rx(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


SCALAR_RULES: tuple[FieldRule, ...] = (
    FieldRule("warp_size", "count", "threads",
              _rx(r"\b(?:warp|wavefront|wave)\s*(?:size|width)\b|\b(?:warp|wavefront)s? of\b|threads per warp|"
                  r"work-?items per (?:wave|wavefront)"),
              reject_levels=frozenset(), allowed=(8, 16, 32, 64, 128)),
    FieldRule("max_threads_per_block", "count", "threads",
              _rx(r"threads per (?:thread )?block|work-?items per work-?group|(?:block|work-?group) size"),
              _rx(r"multiprocessor|per SM|per CU|per compute unit"), reject_levels=frozenset(), minimum=32),
    FieldRule("smem_per_block_kb", "bytes", "KiB", _rx(_SMEM), _rx(r"\bbank|cache\b|register|instruction"),
              reject_levels=frozenset({"sub", "multi"}), require_levels=frozenset({"block"})),
    FieldRule("smem_per_compute_unit_kb", "bytes", "KiB", _rx(_SMEM),
              _rx(r"\bbank|cache\b|register|instruction|per (?:thread )?block|per work-?group|\bSRAM total"),
              reject_levels=_PER_CU_REJECT),
    FieldRule("registers_per_compute_unit", "count", "32-bit registers",
              _rx(r"register file|\bVGPRs?\b|32-bit registers|registers per (?:SM|CU|compute unit)"),
              _rx(r"\bSGPR|scalar|AccVGPR|per thread\b|per (?:thread )?block"), reject_levels=_PER_CU_REJECT,
              minimum=1024),
    FieldRule("l2_cache_mb", "bytes", "MiB", _rx(r"\bL2\b|level[- ]2 cache"),
              _rx(r"\bL[013]\b|\bLLC\b|last[- ]level|infinity cache|instruction|scalar|bandwidth|/s\b")),
    FieldRule("mem_capacity_gb", "bytes", "GiB",
              _rx(r"memory|\bHBM\w*|\bGDDR\w*|\bDRAM\b|\bVRAM\b|frame ?buffer"),
              _rx(r"cache|\bL[0-3]\b|\bLDS\b|shared memory|scratch ?pad|register|\bSRAM\b|address|\b0x[0-9a-f]|"
                  r"reserved|bandwidth|\bbus\b|interface|clock|\bpage|instruction|local data|partition"),
              minimum=2**29),
    FieldRule("mem_bw_gbps", "bytes_per_s", "GB/s", _rx(r"memory|\bHBM\w*|\bGDDR\w*|\bDRAM\b|\bVRAM\b"),
              _rx(r"cache|\bL[0-3]\b|\bLLC\b|fabric|\blinks?\b|I/O|\bIO\b|\bNoC\b|PCIe|P2P|NVLink|interconnect|"
                  r"network|ethernet|per hop|xGMI|\bhost\b|read bandwidth|write bandwidth|measured|achiev|sustain|"
                  r"effective|observed|in practice|SRAM|on-die|on-chip|scratch ?pad|\bLDS\b|shared memory"),
              needs_peak_cue=True),
    FieldRule("clock_mhz", "hz", "MHz", _rx(r"clock|frequency|boost|\bspeed\b"),
              _rx(r"memory|\bHBM|\bGDDR|\bDRAM|data rate|\bbus\b|\blink|fabric|PCIe|base clock|idle|minimum"),
              reject_levels=frozenset(), minimum=1e8),
)
RULES_BY_NAME = {rule.name: rule for rule in SCALAR_RULES}
#: Fields whose keyword must sit next to the number when a clause holds several numbers (all of them).
_NEEDS_LOCAL_KEYWORD = tuple(RULES_BY_NAME)


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


@dataclass
class RuleOutput:
    """Everything the rules read from a set of records."""

    candidates: list[Candidate] = field(default_factory=list)
    learned_sub: dict[str, list[float]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _parens(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"\([^()]{0,120}\)", text)]


def _quantity_levels(record: Record, quantity: Quantity) -> set[str]:
    """Level cues that apply to `quantity`: those of its clause (parentheticals left out), those of a
    parenthetical it sits in, and those of a number-less parenthetical right after it ("(per Vector Unit)")."""
    text = record.text
    inside = next(((a, b) for a, b in _parens(text) if a <= quantity.start < b), None)
    if inside and not record.is_table:
        return level_cues(text[inside[0] + 1:inside[1] - 1]) | set(record.levels)
    levels = set(record.levels)
    if record.is_table:
        levels |= level_cues(without_parentheticals(text))
    after = re.match(r"\s*\(([^()]{0,60})\)", text[quantity.end:])
    if after and not re.search(r"\d", after.group(1)):
        levels |= level_cues(after.group(1))
    return levels


def _is_bound(record: Record, quantity: Quantity) -> bool:
    return bool(_BOUND_BEFORE.search(record.text[max(0, quantity.start - 20):quantity.start]))


def _main_quantities(record: Record, dimension: str) -> list[Quantity]:
    """Quantities of `dimension` in the record; for a table cell, the first number only (the cell's value)."""
    found = find_quantities(record.text, record.default_unit)
    if record.is_table:
        found = found[:1]
    return [q for q in found if q.dimension == dimension]


_PER_CU_FIELDS = ("smem_per_compute_unit_kb", "registers_per_compute_unit", "smem_per_block_kb")
_NAMED_VERSION_BEFORE = re.compile(r"(?:\b[A-Z]{2,}[\w]*[™®]?|\bGen|\bZen|\bSeries|\bVersion|\bv)\s*$")


def _learn_sub_values(record: Record, rule_name: str, dimension: str, out: RuleOutput) -> None:
    """``N (M per X)``, ``M per X``, ``each M`` and ``Nx M <things>`` teach that M is a per-X value of this
    field, when X is smaller than the field's level (a sub-unit; for per-chip fields also a compute unit)."""
    if record.product == "other":
        return
    learn_from = {"sub"} if rule_name in _PER_CU_FIELDS else {"sub", "cu"}
    values: list[Quantity] = []
    for match in re.finditer(r"([\d.,]+\s*[A-Za-z]{0,4})\s+(?:per|for each)\s+((?:\d+\s+)?[A-Za-z][\w\- ]{0,30})",
                             record.text):
        if classify_noun(re.sub(r"^\d+\s+", "", match.group(2)).lower()) in learn_from:
            values += find_quantities(match.group(1), record.default_unit)
    for match in re.finditer(r"\beach\s+([\d.,]+\s*[A-Za-z]{0,4})\b", record.text):
        values += find_quantities(match.group(1), record.default_unit)
    for q in values:
        if q.dimension == dimension:
            out.learned_sub.setdefault(rule_name, []).append(q.value)
    for q in find_quantities(record.text, record.default_unit):
        if q.multiplier > 1 and q.dimension == dimension:
            out.learned_sub.setdefault(rule_name, []).append(q.value / q.multiplier)


def scalar_candidates(record: Record, out: RuleOutput) -> None:
    """Apply every scalar rule to one record."""
    for rule in SCALAR_RULES:
        key = f"{record.prev} {record.key}" if rule.name == "mem_bw_gbps" and not record.is_table else record.key
        if not rule.include.search(key):
            continue
        if rule.exclude is not None and record.is_table and rule.exclude.search(record.local):
            continue
        dimension = "bytes" if rule.name == "registers_per_compute_unit" else rule.dimension
        _learn_sub_values(record, rule.name, dimension, out)
        if rule.name == "registers_per_compute_unit":
            if not (rule.exclude is not None and rule.exclude.search(record.local)):
                _register_candidates(record, rule, out)
            continue
        every = find_quantities(record.text, record.default_unit)
        for quantity in _main_quantities(record, rule.dimension):
            segment = _segment(record.text, every, quantity)
            if len(every) > 1 and not record.is_table and rule.name in _NEEDS_LOCAL_KEYWORD \
                    and not rule.include.search(segment):
                continue
            if rule.exclude is not None and not record.is_table and (
                    rule.exclude.search(segment)
                    or (not rule.include.search(record.text) and rule.exclude.search(record.key))):
                continue
            _consider(rule, record, quantity, out)
        _report_unit_problems(rule, record, out)


def _segment(text: str, quantities: list[Quantity], quantity: Quantity) -> str:
    """Text around `quantity` in a clause, from the previous number to the next one."""
    start = max((q.end for q in quantities if q.end <= quantity.start), default=0)
    end = min((q.start for q in quantities if q.start >= quantity.end), default=len(text))
    return text[start:end]


def _consider(rule: FieldRule, record: Record, quantity: Quantity, out: RuleOutput) -> None:
    levels = _quantity_levels(record, quantity)
    if levels & rule.reject_levels or (rule.require_levels and not levels & rule.require_levels):
        return
    if quantity.per or _is_bound(record, quantity) or quantity.value < rule.minimum:
        return
    if re.match(r"\s*(?:\(|,)?\s*(?:by default|default)\b", record.text[quantity.end:], re.IGNORECASE):
        return  # "48 KB by default": a default, not the limit
    if rule.needs_peak_cue and not record.is_table and not re.search(
            r"peak|theoretical|aggregate|total|maximum|\bmax\b|up to|bandwidth", record.text, re.IGNORECASE):
        return
    if rule.needs_peak_cue and record.is_table and not re.search(r"bandwidth", record.local, re.IGNORECASE):
        return
    value = quantity.to(rule.unit)
    if rule.allowed and value not in rule.allowed:
        return
    kind, formula = "stated", None
    if quantity.multiplier > 1:
        per_item = value / quantity.multiplier
        kind, formula = "derived", f"{quantity.text} = {quantity.multiplier} x {per_item:g} {rule.unit}"
    out.candidates.append(Candidate(rule.name, value, quantity.resolution / _factor(rule.unit), record, quantity,
                                    kind=kind, formula=formula))


def _factor(unit: str) -> float:
    return TARGET_UNITS[unit][1]


def _register_candidates(record: Record, rule: FieldRule, out: RuleOutput) -> None:
    """Register file size in bytes (-> 32-bit registers, derived) or a count of 32-bit registers (stated)."""
    every = find_quantities(record.text, record.default_unit)
    for quantity in every[: 1 if record.is_table else None]:
        levels = _quantity_levels(record, quantity)
        if levels & rule.reject_levels or quantity.per:
            continue
        if not record.is_table and not re.search(
                r"register|VGPR", _segment(record.text, every, quantity), re.IGNORECASE):
            continue
        if quantity.dimension == "bytes":
            value = quantity.value / 4
            formula = f"register file {quantity.text} / 4 bytes per 32-bit register"
            if value >= rule.minimum:
                out.candidates.append(Candidate(rule.name, value, quantity.resolution / 4, record, quantity,
                                                kind="derived", formula=formula))
        elif quantity.dimension == "count" and quantity.value >= rule.minimum and (
                "32-bit" in record.text or re.search(r"registers? per", record.key, re.IGNORECASE)):
            out.candidates.append(Candidate(rule.name, quantity.value, quantity.resolution, record, quantity))


_DIMENSION_WORDS = {"flops": "a compute rate (FLOP/s)", "bytes_per_s": "a bandwidth (bytes/s)"}


def _report_unit_problems(rule: FieldRule, record: Record, out: RuleOutput) -> None:
    """Numbers that the field's keywords point at but whose unit is unknown or of another dimension."""
    for quantity in find_quantities(record.text, record.default_unit):
        if quantity.dimension == rule.dimension or quantity.per:
            continue
        if quantity.dimension == "count":
            after = _UNKNOWN_UNIT_AFTER.match(record.text[quantity.end:])
            if not after or rule.dimension == "count":
                continue
            problem = f"unknown unit {after.group(1)!r}"
        elif {quantity.dimension, rule.dimension} == {"flops", "bytes_per_s"}:
            problem = (f"{quantity.unit} measures {_DIMENSION_WORDS[quantity.dimension]}, not "
                       f"{_DIMENSION_WORDS[rule.dimension]}")
        else:
            continue
        if record.product == "other":
            continue
        out.problems.append(f"{rule.name}: not used: {quantity.text!r} next to this field's keywords in "
                            f"{record.chunk.source} ({record.locator}); {problem}")


def compute_unit_candidates(record: Record, out: RuleOutput) -> None:
    """Counts of compute units: ``304 compute units (CUs)``, ``80x Tensix tile``, a ``Compute Units`` column."""
    if record.is_table:
        match = re.search(rf"\b({CU_NOUNS})\b", record.local, re.IGNORECASE)
        if match and not re.search(r"per\b|/", record.local):
            for quantity in _main_quantities(record, "count"):
                _learn_sub_values(record, "num_compute_units", "count", out)
                _add_cu(record, quantity, match.group(1), out)
        return
    for match in _CU_COUNT.finditer(record.text):
        if _NAMED_VERSION_BEFORE.search(record.text[:match.start()]):
            continue
        quantity = next((q for q in find_quantities(record.text) if q.start == match.start("n")), None)
        if quantity is None or quantity.dimension != "count":
            continue
        _add_cu(record, quantity, match.group("noun") + (match.group("abbr") or ""), out)
    _learn_sub_values(record, "num_compute_units", "count", out)


def _add_cu(record: Record, quantity: Quantity, noun: str, out: RuleOutput) -> None:
    levels = _quantity_levels(record, quantity)
    if levels & _CHIP_FIELDS_REJECT or _is_bound(record, quantity) or quantity.value < 1:
        return
    out.candidates.append(Candidate("num_compute_units", quantity.value, quantity.resolution, record, quantity,
                                    noun=" ".join(noun.split())))


def peak_candidates(record: Record, out: RuleOutput) -> None:
    """Dense peaks per data type; the data type and matrix/vector variant come from the words next to the value."""
    if record.sparse or re.search(r"speedup|sparsity|sparse", record.local, re.IGNORECASE):
        return
    if _PER_UNIT.search(record.local):
        return
    quantities = [q for q in find_quantities(record.text, record.default_unit) if q.dimension == "flops"]
    if record.is_table:
        quantities = quantities[:1]
    for n, quantity in enumerate(quantities):
        levels = _quantity_levels(record, quantity)
        if quantity.per or _is_bound(record, quantity) or levels & {"multi", "block"}:
            continue
        per_unit = _per_unit_noun(record, quantity) if levels & {"cu", "sub"} else None
        if levels & {"cu", "sub"} and not per_unit:
            continue
        for dtype, variant in _dtypes_near(record, quantities, n):
            out.candidates.append(Candidate(f"peak_tflops.{dtype}", quantity.to("TFLOP/s"),
                                            quantity.resolution / 1e12, record, quantity, variant=variant,
                                            noun=per_unit or ""))


def _per_unit_noun(record: Record, quantity: Quantity) -> str | None:
    """The unit a per-unit peak is stated for: ``"vector unit"`` in "0.064 TFLOP/s (per Vector Unit)"."""
    after = re.match(r"\s*\(\s*per\s+([^()]{1,40})\)", record.text[quantity.end:], re.IGNORECASE)
    if after:
        return " ".join(after.group(1).lower().split())
    match = re.search(r"\bper\s+((?:[\w\-]+\s+){0,2}[\w\-]+(?:\s*\([A-Za-z]+\))?)",
                      record.key if record.is_table else record.text, re.IGNORECASE)
    return " ".join(match.group(1).lower().split()) if match else None


def _dtypes_near(record: Record, quantities: list[Quantity], n: int) -> list[tuple[str, str]]:
    """(dtype, variant) named next to quantity `n`: after it (up to the next value), else before it."""
    if record.is_table:
        windows = [record.local]
    else:
        text = record.text
        start = quantities[n - 1].end if n > 0 else 0
        end = quantities[n + 1].start if n + 1 < len(quantities) else len(text)
        windows = [text[quantities[n].end:end], text[start:quantities[n].start]]
    for window in windows:
        found = [(dtype, m) for dtype, rx in DTYPES.items() for m in rx.finditer(window)]
        if found:
            variant = "matrix" if _MATRIX.search(window) else "vector" if _VECTOR.search(window) else ""
            return sorted({(dtype, variant) for dtype, _ in found})
    return []
