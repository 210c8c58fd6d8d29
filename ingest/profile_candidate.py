"""What the field rules produce: one `Candidate` per value a record states for a field, gathered in a `RuleOutput`,
and the limits (`FIELD_LIMITS`) every value of a field must meet.

`is_bound` tells a bound or an end of a range ("over 2.5 PFLOP/s", "32-64 GB depending on SKU") from one product's
value; the scalar rules (`ingest.profile_rules`) and the peak rules (`ingest.profile_peaks`) both skip those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ingest.profile_text import Record
from ingest.units import Quantity

_BOUND_BEFORE = re.compile(r"(?:over|more than|at least|greater than|nearly|almost|about|approximately|~|>|<)\s*$",
                           re.IGNORECASE)

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
    #: The old value (field unit) this value is given in place of ("Table 3 lists 96 KiB; the correct value is 64
    #: KiB"), or None (`ingest.profile_supersede.is_correcting_figure`).
    corrects: float | None = None


@dataclass
class RuleOutput:
    """Everything the rules read from a set of records."""

    candidates: list[Candidate] = field(default_factory=list)
    learned_sub: dict[str, list[float]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def is_bound(record: Record, quantity: Quantity) -> bool:
    """A bound ("over 2.5 PFLOP/s") or an end of a range ("32–64 GB depending on SKU", "96 to 128 engines"): not
    one product's value. A lower bound under a negation of its clause ("no work group can allocate more than 96
    KiB", "may not exceed ... more than 64") is not one: "not more than N" is the upper limit N itself, as "at most
    N" is (`is_negated_bound`)."""
    before = record.text[max(0, quantity.start - 20):quantity.start]
    if _BOUND_BEFORE.search(before) and is_negated_bound(record.text, quantity.start):
        return False
    return bool(_BOUND_BEFORE.search(before) or _RANGE_BEFORE.search(before)
                or _RANGE_AFTER.match(record.text[quantity.end:quantity.end + 20]))


def is_negated_bound(text: str, start: int) -> bool:
    """True when the "more than" / "over" / "greater than" right before the figure at `start` is negated in its
    clause ("No single group can allocate more than", "cannot hold more than", "never more than"): the negation
    of a lower bound is an upper limit, the figure itself a maximum. Only bounds that set a lower limit count
    ("nearly", "about" stay bounds); the negation must come before the bound in the same clause (no comma,
    semicolon or sentence end between)."""
    before = text[max(0, start - 120):start]
    bound = _LOWER_BOUND_BEFORE.search(before)
    if bound is None:
        return False
    clause = re.split(r"[,;:.!?]\s", before[:bound.start()])[-1]
    return bool(_NEGATION.search(clause))


_LOWER_BOUND_BEFORE = re.compile(r"(?:more than|over|greater than|in excess of)\s*$", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:no|not|never|cannot|can't|mustn't|may not|must not|none)\b|n't\b", re.IGNORECASE)


#: The upper end of a range: a number and a dash or "to" right before the figure; the lower end: the same after.
_RANGE_BEFORE = re.compile(r"\d\s*(?:[\-\u2013\u2014]|to)\s*$")
_RANGE_AFTER = re.compile(r"^\s*(?:[\-\u2013\u2014]|to)\s*\d")
