"""Resolving a field's candidate values into one `ProfileField`, and quoting each value verbatim.

See `ingest.profile_extract` for the rules (learned sub-unit values dropped, chip-specific before generic,
agreement within written precision, conflicts listed with every source, matrix peaks over vector ones).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field

from hardware_profiles import ProfileField, Source
from hardware_profiles.schema import Alternative
from ingest.decimal_marks import DECIMAL_COMMA, original_span, to_point_decimals
from ingest.number_words import verbatim_span
from ingest.profile_candidate import Candidate
from ingest.profile_supersede import supersede
from ingest.profile_text import Record, classify_noun

_MAX_ALTERNATIVES = 8
_QUOTE_MAX = 240


@dataclass
class ExtractionReport:
    """What extraction saw and decided, for the onboarding report and the evaluation script."""

    chip: str
    chunks: int = 0
    documents: list[str] = field(default_factory=list)
    candidates: int = 0
    found: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    merge_messages: list[str] = field(default_factory=list)
    product: str | None = None
    products: list[str] = field(default_factory=list)
    ambiguity: str = ""

    def summary(self) -> str:
        """One paragraph: counts, conflicts, problems."""
        if not self.found:
            return (f"no hardware facts found for {self.chip} in {self.chunks} chunks of "
                    f"{len(self.documents)} document(s): the profile is empty")
        text = (f"{len(self.found)} field(s) found for {self.chip} from {self.candidates} candidate value(s) in "
                f"{self.chunks} chunks of {len(self.documents)} document(s)")
        if self.conflicts:
            text += f"; conflicts: {', '.join(self.conflicts)}"
        if self.problems:
            text += f"; {len(self.problems)} value(s) left out for their unit"
        if self.ambiguity:
            text += f"; {self.ambiguity}"
        return text


def source_of(candidate: Candidate) -> Source:
    """Citation of a candidate: its document, locator and a quote that appears verbatim (whitespace collapsed)
    in one original chunk."""
    record = candidate.record
    return Source(document=record.chunk.source, locator=record.locator or None, quote=_verbatim_quote(candidate))


def _squash(text: str) -> str:
    return " ".join(text.split())


def source_of_record(record: Record) -> Source:
    """Citation of a whole record (a statement with no one number, e.g. a yes/no feature): its document, locator
    and its quote (or text) as one original chunk holds it, else its quote as the extractor read it."""
    quote = _whole_record_quote(record, _holder(record)) or _squash(record.quote)
    return Source(document=record.chunk.source, locator=record.locator or None, quote=quote)


def _holder(record: Record):
    """`held(option)`: the document's own words for `option` of the text the rules read, if one chunk holds them."""
    texts = [_squash(c.text) for c in (record.originals or (record.chunk,))]
    comma = bool(record.chunk.metadata.get(DECIMAL_COMMA))
    pairs = [(to_point_decimals(t) if comma else t, t) for t in texts]  # (text the rules read, the document's)
    return lambda option: next((found for read, own in pairs if option and
                                (found := original_span(option, read, own))), None)


def _whole_record_quote(record: Record, held) -> str | None:
    texts = [_squash(c.text) for c in (record.originals or (record.chunk,))]
    for option in ([record.quote] if len(record.quote) <= _QUOTE_MAX else []) + [record.text]:
        found = held(_squash(option))
        if found:
            return found
        spelled = next((s for t in texts if (s := verbatim_span(option, t))), None)  # figures written in words
        if spelled:
            return spelled
    return None


def _verbatim_quote(candidate: Candidate) -> str:
    """The record's quote if one original chunk holds it, else the widest window of the record text around the
    value that one chunk holds (tables re-rendered from raw markup, links and tags removed, windows merged)."""
    record = candidate.record
    held = _holder(record)
    whole = _whole_record_quote(record, held)
    if whole:
        return whole
    text, q = record.text, candidate.quantity
    if not (0 <= q.start < q.end <= len(text)) or text[q.start:q.end].strip() != q.text:
        return held(q.text) or q.text
    left, right = max(0, q.start - 120), min(len(text), q.end + 120)
    while left < q.start or right > q.end:
        found = held(_squash(text[left:right]))
        if found:
            return found
        left, right = min(q.start, left + 4), max(q.end, right - 4)
    return held(q.text) or q.text


def statement_key(candidate: Candidate) -> tuple[str, str]:
    """Identity of the statement a candidate was read from: the document without its format (``zx40.md`` and
    ``zx40.pdf`` are one document) and the quote's letters and digits (the same sentence or row, whatever the
    format did to its spaces, hyphens and punctuation); a table cell also by its row label and column header (the
    same ``Wavefront Size: 64`` in the rows of two products are two statements)."""
    record = candidate.record
    text = f"{record.label}|{record.header}|{record.quote}" if record.is_table else record.quote
    return document_family(record.chunk.source), re.sub(r"[^a-z0-9|]", "", text.lower())


def document_family(source: str) -> str:
    """A document's name without folder and format suffix: the same datasheet as .md, .pdf or .html."""
    name = source.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return re.sub(r"\.(?:md|markdown|pdf|rst|rest|html?|txt|text)$", "", name)


def _dedupe(candidates: list[Candidate]) -> list[Candidate]:
    """One candidate per (statement, value, variant): a statement read through two formats of one document is one
    source, not two votes."""
    seen, out = set(), []
    for c in candidates:
        key = (*statement_key(c), round(c.value, 9), c.variant)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _binary_reading(c: Candidate) -> float | None:
    """A decimal capacity's binary reading in the field's unit (``192 GB`` -> 192 GiB), else None."""
    q = c.quantity
    if q.binary_value is None or not q.value:
        return None
    return c.value * q.binary_value / q.value


def _agree(a: Candidate, b: Candidate) -> bool:
    """Equal within the precision each was written with; a decimal capacity also agrees with a binary one of the
    same figure (``192 GB`` and ``192 GiB``: one capacity, see `ingest.units`)."""
    tolerance = max(a.resolution, b.resolution) * 1.0001 + 1e-12
    if abs(a.value - b.value) <= tolerance:
        return True
    for x, y in ((a, b), (b, a)):
        binary = _binary_reading(x)
        if binary is not None and _binary_reading(y) is None \
                and abs(binary - y.value) <= max(y.resolution, x.resolution * binary / x.value) * 1.0001:
            return True
    return False


def _scoped(candidates: list[Candidate], field_name: str, report: ExtractionReport) -> list[Candidate]:
    """Chip-naming candidates if any, else the product-neutral ones (never those naming other products)."""
    chip = [c for c in candidates if c.record.product == "chip"]
    neutral = [c for c in candidates if c.record.product == "neutral"]
    if chip:
        overruled = [c for c in neutral if not any(_agree(c, k) for k in chip)]
        for c in overruled[:3]:
            report.superseded.append(
                f"{field_name}: {c.value:g} ({c.record.chunk.source}: {c.record.quote[:80]!r}) overruled by "
                f"statements that name the chip")
        return chip
    return neutral


def _groups(candidates: list[Candidate]) -> list[list[Candidate]]:
    """Single-linkage groups of agreeing values, largest value last.

    In value order, `c` agrees with an earlier member `g` (``c - g <= max(resolutions) * 1.0001 + 1e-12``) iff
    ``c <= g + g's tolerance`` for some member or ``c - c's tolerance <= `` the largest member; the group's reach
    (largest ``g + tolerance``) and largest value decide that in constant time (linear in the candidates).
    """
    groups: list[list[Candidate]] = []
    reach = last = 0.0
    for c in sorted(candidates, key=lambda c: c.value):
        if groups and (c.value <= reach or c.value - _tolerance(c) <= last):
            groups[-1].append(c)
            reach = max(reach, c.value + _tolerance(c))
        else:
            groups.append([c])
            reach = c.value + _tolerance(c)
        last = c.value
    return _join_binary_readings(groups)


def _join_binary_readings(groups: list[list[Candidate]]) -> list[list[Candidate]]:
    """`groups` with each group that holds a decimal capacity joined to the groups that hold its binary figure
    (``192 GB`` and ``192 GiB`` agree, `_agree`, though they differ by 7 %); largest value last. Only the few
    decimal capacities are compared with the others."""
    readers = [(i, c) for i, group in enumerate(groups) for c in group if _binary_reading(c) is not None]
    if not readers:
        return groups
    root = list(range(len(groups)))

    def find(i: int) -> int:
        while root[i] != i:
            i = root[i]
        return i

    for i, c in readers:
        for j, group in enumerate(groups):
            if find(i) != find(j) and any(_agree(c, g) for g in group):
                root[find(j)] = find(i)
    joined: dict[int, list[Candidate]] = {}
    for i, group in enumerate(groups):
        joined.setdefault(find(i), []).extend(group)
    return sorted((sorted(g, key=lambda c: c.value) for g in joined.values()), key=lambda g: g[-1].value)


def _tolerance(c: Candidate) -> float:
    return c.resolution * 1.0001 + 1e-12


def _support(candidates: list[Candidate]) -> int:
    """Independent statements among `candidates` (see `statement_key`)."""
    return len({statement_key(c) for c in candidates})


def _best_value(group: list[Candidate]) -> Candidate:
    """Most-cited value of an agreeing group (ties: the most precise); stated sources before derived ones. Where a
    binary capacity and a decimal one of the same figure agree, the binary figure is the value."""
    exact = [c for c in group if c.quantity.dimension == "bytes" and _binary_reading(c) is None]
    if exact and any(_binary_reading(c) is not None for c in group):
        group = [c for c in group if _binary_reading(c) is None or not any(_agree(c, e) for e in exact)] or group
    counts = Counter(round(c.value, 9) for c in group)
    top = max(counts.values())
    best = [c for c in group if counts[round(c.value, 9)] == top]
    best.sort(key=lambda c: (c.resolution, c.kind != "stated", c.record.product != "chip"))
    return best[0]


def _field(unit: str, group: list[Candidate]) -> ProfileField:
    best = _best_value(group)
    stated = [c for c in group if c.kind == "stated" and abs(c.value - best.value) < 1e-9]
    if stated:
        return ProfileField(value=best.value, unit=unit, kind="stated", source=source_of(stated[0]))
    return ProfileField(value=best.value, unit=unit, kind="derived", source=source_of(best), formula=best.formula)


def _conflict(field_name: str, unit: str, groups: list[list[Candidate]], support_pool: list[Candidate],
              report: ExtractionReport) -> ProfileField:
    alternatives = []
    for group in groups:
        seen_docs = set()
        for c in group:
            key = (c.record.chunk.source, round(c.value, 9))
            if key in seen_docs:
                continue
            seen_docs.add(key)
            alternatives.append(Alternative(value=c.value, source=source_of(c)))
    alternatives = alternatives[:_MAX_ALTERNATIVES]
    pool = sorted(support_pool, key=lambda c: c.value)
    values, widest = [c.value for c in pool], max((_tolerance(c) for c in pool), default=0.0)
    support = [(_support(_agreeing(pool, values, widest, group)), group) for group in groups]
    support.sort(key=lambda s: -s[0])
    report.conflicts.append(field_name)
    if len(support) > 1 and support[0][0] == support[1][0]:
        return ProfileField(value=None, unit=unit, kind="conflict", alternatives=tuple(alternatives))
    best = _best_value(support[0][1])
    return ProfileField(value=best.value, unit=unit, kind="conflict", source=source_of(best),
                        alternatives=tuple(alternatives))


def _agreeing(pool: list[Candidate], values: list[float], widest: float, group: list[Candidate]) -> list[Candidate]:
    """The candidates of `pool` (sorted by value; `values` their values, `widest` their largest tolerance) that agree
    with some member of `group` (`_agree`); only the pool's values within the group's range, widened by the largest
    tolerances, are compared (found by bisection, so resolving a conflict of many values stays near-linear)."""
    if not pool or not group:
        return []
    reach = widest + max(_tolerance(g) for g in group)
    lo = bisect.bisect_left(values, group[0].value - reach)
    hi = bisect.bisect_right(values, group[-1].value + reach)
    return [c for c in pool[lo:hi] if any(_agree(c, g) for g in group)]


def _drop_learned_sub(candidates: list[Candidate], learned: list[float]) -> list[Candidate]:
    if not learned:
        return candidates
    return [c for c in candidates
            if not any(abs(c.value - v) <= c.resolution * 1.0001 + 1e-12 for v in _in_field_units(c, learned))]


def _in_field_units(candidate: Candidate, learned_base: list[float]) -> list[float]:
    """Learned per-sub-unit values (base units) converted like the candidate's own quantity."""
    q = candidate.quantity
    factor = candidate.value / q.value if q.value else 1.0
    return [v * factor for v in learned_base]


def _superseded(field_name: str, candidates: list[Candidate], rank, report: ExtractionReport) -> list[Candidate]:
    """`candidates` without those an errata document or a later revision corrects (`ingest.profile_supersede`);
    each one left out is noted in the report with its quote and the correcting quote. A value given in place of an
    old one (`Candidate.corrects`) supersedes every candidate of the old value, in any document."""
    def describe(c: Candidate) -> str:
        return f"{c.value:g} ({c.record.chunk.source}: {source_of(c).quote[:100]!r})"

    corrections = [c for c in candidates if c.corrects is not None]
    for fix in corrections:
        wrong = [c for c in candidates if c.corrects is None and abs(c.value - fix.corrects) <= max(
            c.resolution, abs(fix.corrects) * 1e-6) * 1.0001 and not _agree(c, fix)]
        report.superseded += [f"{field_name}: {describe(c)} superseded by {describe(fix)}" for c in wrong]
        candidates = [c for c in candidates if c not in wrong]
    if rank is None or len(candidates) < 2:
        return candidates

    kept, notes = supersede(candidates, lambda c: rank(c.record.chunk), _agree, describe)
    report.superseded += [f"{field_name}: {n}" for n in notes]
    return kept


#: How much closer one row label of a table must name a field than another row of the same table for
#: the other row's different value to be left out (cosine similarity, `Candidate.similarity`).
ROW_MARGIN = 0.05


def _strongest_rows(candidates: list[Candidate], field_name: str, report: ExtractionReport) -> list[Candidate]:
    """`candidates` without a table row whose label names the field clearly less closely (`ROW_MARGIN`) than another
    row of the same table (document section) that states a different value ("SBUF, per core | 24 MiB" over "PSUM,
    per core | 2 MiB" for shared memory): a table names each field in one row; each row left out is noted."""
    def table(c: Candidate) -> tuple:
        r = c.record
        return (r.chunk.source, r.chunk.section)

    rows = [c for c in candidates if c.record.is_table and c.kind == "stated"]
    weaker = [c for c in rows if any(table(d) == table(c) and d.record.label != c.record.label
                                     and d.similarity - c.similarity >= ROW_MARGIN and not _agree(c, d)
                                     for d in rows)]
    report.superseded += [f"{field_name}: {c.value:g} ({c.record.chunk.source}: row {c.record.label!r}) left out: "
                          "another row of its table names the field more closely" for c in weaker]
    return [c for c in candidates if c not in weaker]


def resolve_field(field_name: str, unit: str, candidates: list[Candidate], learned: list[float],
                  report: ExtractionReport, rank=None) -> ProfileField:
    """One field's value from its candidates (see `ingest.profile_extract`); `rank`: chunk -> `Precedence`
    (`ingest.profile_supersede.precedence_of`), when corrections may supersede earlier statements."""
    candidates = _superseded(field_name, _drop_learned_sub(_dedupe(candidates), learned), rank, report)
    candidates = _strongest_rows(_scoped(candidates, field_name, report), field_name, report)
    if not candidates:
        return ProfileField(unit=unit)
    groups = _groups(candidates)
    if len(groups) == 1:
        return _field(unit, groups[0])
    return _conflict(field_name, unit, groups, candidates, report)


def resolve_peak(dtype: str, candidates: list[Candidate], report: ExtractionReport, rank=None) -> ProfileField:
    """The dense peak of `dtype` (matrix over vector figures, see `ingest.profile_extract`); `rank` as for
    `resolve_field`."""
    unit = "TFLOP/s"
    candidates = _superseded(f"peak_tflops.{dtype}", _dedupe(candidates), rank, report)
    candidates = _scoped(candidates, f"peak_tflops.{dtype}", report)
    matrix = [c for c in candidates if c.variant == "matrix"]
    vector = [c for c in candidates if c.variant == "vector"]
    plain = [c for c in candidates if not c.variant and not any(_agree(c, v) for v in vector)]
    if matrix:
        top = max(c.value for c in matrix)
        plain = [c for c in plain if c.value > top or any(_agree(c, m) for m in matrix)]
        pool = matrix + plain
    else:
        pool = (vector or []) + plain
    if not pool:
        return ProfileField(unit=unit)
    groups = _groups(pool)
    if len(groups) == 1:
        return _field(unit, groups[0])
    return _conflict(f"peak_tflops.{dtype}", unit, groups, candidates, report)


def chip_peaks_from_per_unit(candidates: list[Candidate], units: ProfileField, glossary) -> list[Candidate]:
    """Per-unit peaks scaled to the chip: value x (components per compute unit) x compute units, as derived
    candidates with their formula. The unit a peak is stated per is looked up in the glossary
    (`ingest.profile_glossary`): the compute unit itself, or a component the documents say each compute unit
    holds N of ("Each tile contains: 2x Vector Engine"); a peak per a unit whose count is unknown is dropped."""
    if units.value is None:
        return []
    out = []
    for c in candidates:
        noun = re.sub(r"\s*\(.*\)$", "", c.noun)
        level = glossary.level(noun)
        if level == "cu" or (level is None and classify_noun(c.noun) == "cu"):
            per_cu, what = 1, "compute unit"
        else:
            found = glossary.per_parent(noun, glossary.compute_unit_keys())
            per_cu = found[0] if found else None
            what = f"{per_cu} {noun} per compute unit" if per_cu else ""
        if not per_cu:
            continue
        value = float(f"{c.value * per_cu * units.value:.12g}")
        formula = (f"{c.quantity.text} per {c.noun} x {what} x {units.value:g} compute units"
                   if what != "compute unit" else f"{c.quantity.text} per {c.noun} x {units.value:g} compute units")
        out.append(Candidate(c.field, value, c.resolution * per_cu * units.value, c.record, c.quantity,
                             kind="derived", formula=formula, variant=c.variant))
    return out
