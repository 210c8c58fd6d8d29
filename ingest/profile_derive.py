"""The chip's compute-unit count from its hierarchy, when no sentence or row states it.

Documents of hierarchical chips often give the count only level by level: "The chip holds 8 shader clusters;
each shader cluster contains 12 vector processors", "six compute clusters, each housing ten Stream Processors".
The glossary (`ingest.profile_glossary`) reads those containments; the chip's count is then the product of the
partition's count on the chip and the compute units per partition (a ``derived`` field with its formula and the
sentence it comes from). A hierarchy stated for another product (a predecessor, a competitor) is never used: the
sentence must name the chip or no product.
"""

from __future__ import annotations

import re

from hardware_profiles import ProfileField, Source
from ingest.profile_glossary import Glossary
from ingest.profile_terms import term_key
from ingest.profile_text import Record


def compute_units_from_hierarchy(glossary: Glossary, records: list[Record]) -> ProfileField | None:
    """``num_compute_units`` = (partitions on the chip) x (compute units per partition), or None.

    Both counts must come from sentences (or list items: "Dies: 2" and, under "Each die", "Clusters: 24") about the chip or about no named product (`Record.product`),
    and exactly one product value must result (two hierarchies that disagree give None: unknown, not guessed).

    Args:
        glossary: the documents' glossary, with its containments and chip-level counts.
        records: the records of the same documents (for the citation and the product of each sentence).
    """
    units = glossary.compute_unit_keys()
    about_chip = {_statement(r): r for r in records if r.product != "other"}
    found: dict[int, tuple[str, Record]] = {}
    for inner in glossary.contains:
        if glossary.aliases.get(inner.child, inner.child) not in units or inner.parent in units:
            continue
        parent = glossary.aliases.get(inner.parent, inner.parent)
        outer = _chip_count(glossary, parent)
        if outer is None:
            continue
        count, quote = outer
        record = about_chip.get(" ".join(inner.quote.split()))
        if record is None or not _count_about_chip(records, quote, count):
            continue
        formula = f"{count} {parent} x {inner.count} {inner.child} per {parent}"
        found.setdefault(count * inner.count, (formula, record))
    if len(found) != 1:
        return None
    (value, (formula, record)), = found.items()
    source = Source(document=record.chunk.source, locator=record.locator or None, quote=" ".join(record.key.split()))
    return ProfileField(value=float(value), unit="count", kind="derived", source=source, formula=formula)


def _count_about_chip(records: list[Record], quote: str, count: int) -> bool:
    """True when a clause of sentence `quote` that states `count` is about the chip or no named product (not the
    predecessor of "Compared with the previous X2 (40 WGPs), the X3 ...")."""
    key = " ".join(quote.split())
    return any(_statement(r) == key and r.product != "other"
               and re.search(rf"(?<![\d.,]){count}(?![\d]|[.,]\d)", r.text) for r in records)


def _statement(record: Record) -> str:
    """The text a containment or a count was read from: a sentence, or a list item or row as quoted."""
    return " ".join((record.quote if record.is_table else record.key).split())


def _chip_count(glossary: Glossary, parent: str) -> tuple[int, str] | None:
    """How many `parent` the chip holds, with the sentence: a containment by the chip, else a chip-level count."""
    for c in glossary.contains:
        if glossary.aliases.get(c.child, c.child) == parent and term_key(c.parent) in ("chip", "device", "die"):
            return c.count, c.quote
    found = glossary.chip_counts.get(parent)
    return (found[0], found[1]) if found and found[0] >= 2 else None
