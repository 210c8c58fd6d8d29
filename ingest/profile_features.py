"""Yes/no chip features (`hardware_profiles.schema.FEATURE_FIELDS`) read from what documents say about them.

A statement that names a copy, transfer or engine at all (`_CANDIDATE_WORDS`, a cheap first pass) is about a
feature when its words are closer in meaning to the feature's descriptions than to those of
look-alikes (matrix units, per-thread copies, caches, host copy engines...), by embedding similarity
(`ingest.profile_meaning.ConceptSpace`, MiniLM). Its value is false when the statement negates the feature in its
own clause ("there is no bulk tensor-copy engine", "lacks a tensor DMA unit", a table cell "No", "none", "not
available", "-"), true when it states it ("adds the Tensor Memory Accelerator", a cell "Yes", "supported"). A
statement that contrasts the chip with others ("unlike", "instead of", "rather than") states nothing, and one about
another product (`Record.product == "other"`) is never the chip's. Agreeing statements give a ``stated`` value
quoting the most similar one; disagreeing ones a ``conflict`` listing both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hardware_profiles.schema import FEATURE_FIELDS, Alternative, ProfileField
from ingest.profile_meaning import ConceptSpace
from ingest.profile_resolve import source_of_record
from ingest.profile_text import Record

__all__ = ["FEATURE_DESCRIPTIONS", "feature_fields"]

#: Feature field -> how documents describe it (NVIDIA's TMA is one name of it).
FEATURE_DESCRIPTIONS: dict[str, tuple[str, ...]] = {
    "tensor_memory_accelerator": (
        "a bulk tensor-copy engine that moves multi-dimensional tiles between device memory and shared memory "
        "asynchronously", "Tensor Memory Accelerator (TMA)",
        "an asynchronous copy engine for tensor tiles, programmed with a tensor descriptor",
        "a DMA engine that copies 2D or multi-dimensional blocks into on-chip memory", "bulk copy engine",
        "tensor data mover"),
}
#: What a statement may be about instead (absorbs the statements that only look like a feature's).
LOOKALIKES: dict[str, tuple[str, ...]] = {
    "matrix_units": ("tensor cores or matrix cores that multiply small matrices",
                     "matrix multiply units per compute unit", "Tensor Core peak throughput in TFLOPS for BF16 or FP8",
                     "dense and sparse tensor operations per second"),
    "thread_copies": ("per-thread asynchronous copies from global to shared memory (cp.async)",
                      "each thread loads its own elements from memory", "per-lane loads and stores"),
    "caches": ("L1 cache, L2 cache or last-level cache size", "cache hierarchy"),
    "device_memory": ("device memory capacity and bandwidth", "HBM memory bandwidth"),
    "shared_memory": ("shared memory size per compute unit", "scratchpad size"),
    "host_copies": ("DMA engines of the PCIe host link that copy between host and device memory",
                    "copy engines for host-to-device transfers"),
    "compute": ("number of compute units and cores", "clock frequency", "peak TFLOPS"),
}
#: A statement is about a feature when it is this similar (cosine) and this far ahead of every look-alike.
MIN_SIMILARITY, MIN_MARGIN = 0.5, 0.05

#: A negation of the feature in prose: a negating word before the thing it denies ("no bulk copy engine", "lacks a
#: tensor DMA unit", "does not have a TMA"; not "a mover that copies tiles without involving the lanes"), or a
#: negated predicate ("is not supported", "not available").
_DENIED_THING = re.compile(
    r"\b(?:no|not|without|lacks?|lacking|neither|nor)\b(?:\W+\w+){0,5}?\W+(?:engines?|units?|movers?|accelerators?|"
    r"dma|tma|hardware|copiers?|blocks?|support)\b", re.IGNORECASE)
_DENIED_PREDICATE = re.compile(r"\b(?:not|never)\s+(?:be\s+)?(?:supported|available|present|provided|included)\b|"
                               r"\b(?:unsupported|unavailable|absent)\b", re.IGNORECASE)
#: A table cell that denies: "No", "None", "-", "n/a", "not available".
_DENIED_CELL = re.compile(r"^\s*(?:no|none|n/?a|[-–—×✗])\s*$|\b(?:not|un)\s*(?:supported|available)\b",
                          re.IGNORECASE)
_AFFIRMATIVE_CELL = re.compile(r"^\s*(?:yes|y|supported|present|available|included|✓|✔|1|true)\b", re.IGNORECASE)
_REFERENCE = re.compile(r"\[[^\]]{0,40}\]")
_CONTRAST = re.compile(r"\b(?:unlike|instead of|rather than|compared (?:to|with)|in contrast to)\b", re.IGNORECASE)

_SPACE: ConceptSpace | None = None


def _space() -> ConceptSpace:
    global _SPACE
    if _SPACE is None:
        _SPACE = ConceptSpace({**FEATURE_DESCRIPTIONS, **LOOKALIKES})
    return _SPACE


@dataclass(frozen=True)
class _Statement:
    field: str
    value: bool
    similarity: float
    record: Record


def feature_fields(records: list[Record]) -> dict[str, ProfileField]:
    """`FEATURE_FIELDS` name -> `ProfileField` (bool, ``stated`` or ``conflict``; unknown when no statement of the
    chip or of no product in particular is about it) from the extractor's records (prose clauses and table
    cells, `ingest.profile_text.Record`)."""
    found: dict[str, list[_Statement]] = {name: [] for name in FEATURE_FIELDS}
    for record in records:
        statement = _statement(record)
        if statement is not None:
            found[statement.field].append(statement)
    return {name: _resolve(name, statements) for name, statements in found.items()}


#: Words without which a statement is not compared by meaning at all (a cheap first pass over every record, so a
#: 10 MB document embeds only the few sentences that could be about a copy engine; the embeddings then decide).
_CANDIDATE_WORDS = re.compile(r"\b(?:tma|dma|cop(?:y|ies|ier)|movers?|transfers?|bulk|tensor memory|engines?|"
                              r"accelerators?|tile loader|data movement)\b", re.IGNORECASE)


def _statement(record: Record) -> _Statement | None:
    if record.product == "other":
        return None
    text = f"{record.label} | {record.text}" if record.is_table else record.local or record.text
    if not _CANDIDATE_WORDS.search(text):
        return None
    text = _REFERENCE.sub("", text)  # "[HOPPER-TG]", "[3]": citation marks are not what a statement is about
    choice = _space().choose(text, min_similarity=MIN_SIMILARITY, min_margin=MIN_MARGIN)
    if choice is None or choice.concept not in FEATURE_DESCRIPTIONS:
        return None
    if record.is_table:
        value = False if _DENIED_CELL.search(record.text) else True if _AFFIRMATIVE_CELL.match(record.text) else None
    else:
        value = None if _CONTRAST.search(text) else not (_DENIED_THING.search(text) or _DENIED_PREDICATE.search(text))
    return None if value is None else _Statement(choice.concept, value, choice.similarity, record)


def _resolve(name: str, statements: list[_Statement]) -> ProfileField:
    unit = FEATURE_FIELDS[name]
    if not statements:
        return ProfileField(unit=unit)
    best = {value: max((s for s in statements if s.value is value), key=lambda s: s.similarity, default=None)
            for value in (True, False)}
    if best[True] is not None and best[False] is not None:
        return ProfileField(unit=unit, kind="conflict", alternatives=tuple(
            Alternative(value=value, source=source_of_record(s.record)) for value, s in best.items()))
    (value, statement), = [(v, s) for v, s in best.items() if s is not None]
    return ProfileField(value=value, unit=unit, kind="stated", source=source_of_record(statement.record))
