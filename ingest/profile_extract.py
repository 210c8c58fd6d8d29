"""Rule-based hardware-profile extraction from onboarded chunks; every value cited, nothing invented.

`extract_profile(chip, chunks)` reads every chunk (prose, loader-rendered table rows, raw tables, flattened PDF
tables; see `ingest.profile_text` and `ingest.profile_tables`), applies the field rules of
`ingest.profile_rules`, and resolves the candidates of each field:

1. values learned to be per sub-unit ("32 (4 per XCD)" -> 4 is per XCD) are dropped;
2. values from records that name the chip (its model token, e.g. ``n150`` for ``wormhole_n150``) win over values
   from records that name no product; records that name only other products were never candidates. Generic
   values overruled this way are listed in the report;
3. the remaining values are grouped by agreement within the precision they were written with (``5.3 TB/s`` and
   ``5.325 TB/s`` agree). One group: ``stated`` (or ``derived`` with its formula when every source needed a
   computation, e.g. a register file in KiB / 4 B). Several groups: ``conflict``, every value listed with its
   sources; the value kept is the one with the most sources, or null on a tie. Nothing is silently chosen.
4. peaks: matrix/tensor and vector figures of one data type are different quantities, not a conflict; the
   profile keeps the highest dense one (the matrix peak) and ignores unlabeled figures equal to the vector peak.

A field that no chunk states stays null. Chunks without any hardware fact give an empty profile whose notes say so.
An optional LLM (`ingest.profile_llm`) may add candidates; each must quote its chunk verbatim.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from hardware_profiles import HardwareProfile, ProfileField, Source
from hardware_profiles.schema import SCALAR_FIELDS, Alternative
from hardware_profiles.yaml_io import check_chip_name
from ingest.profile_rules import (
    DTYPES,
    Candidate,
    RuleOutput,
    compute_unit_candidates,
    peak_candidates,
    scalar_candidates,
)
from ingest.profile_tables import table_records
from ingest.profile_text import Record, chip_tokens, prose_records
from ingest.types import Chunk

_MAX_ALTERNATIVES = 8
_QUOTE_MAX = 240
_BACKENDS = {
    "rocm": r"\bROCm\b|\bHIP\b",
    "cuda": r"\bCUDA\b",
    "tenstorrent": r"\bTenstorrent\b|\bTensix\b|\bTT-Metal",
    "xpu": r"\bSYCL\b|\boneAPI\b|Level Zero",
}


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
        return text


def extract_profile(chip: str, chunks: list[Chunk]) -> HardwareProfile:
    """Typed hardware profile of `chip` read from `chunks`, every value with its quoted source.

    Args:
        chip: chip name (profile key), e.g. ``mi300x`` or ``wormhole_n150``; its model tokens (letters and digits)
            decide which products' statements apply.
        chunks: the onboarded chunks of the chip's documents (`ingest.types.Chunk`; any kind).

    Returns:
        A `HardwareProfile` with null for every field the documents do not state. See
        `extract_profile_with_report` for the report of conflicts and of values left out.

    Raises:
        BadInputError: `chip` is not a valid chip name.
    """
    return extract_profile_with_report(chip, chunks)[0]


def extract_profile_with_report(chip: str, chunks: list[Chunk],
                                extra: list[Candidate] | None = None) -> tuple[HardwareProfile, ExtractionReport]:
    """`extract_profile` plus its `ExtractionReport`; `extra` candidates (verified LLM proposals) join the rules'."""
    name = check_chip_name(chip)
    tokens = chip_tokens(name)
    report = ExtractionReport(chip=name, chunks=len(chunks),
                              documents=sorted({c.source for c in chunks}))
    out = RuleOutput()
    for record in _records(chunks, tokens):
        scalar_candidates(record, out)
        compute_unit_candidates(record, out)
        peak_candidates(record, out)
    out.candidates.extend(extra or [])
    report.candidates = len(out.candidates)
    report.problems = sorted(set(out.problems))
    fields: dict[str, ProfileField] = {}
    for field_name, unit in SCALAR_FIELDS.items():
        mine = [c for c in out.candidates if c.field == field_name]
        fields[field_name] = _resolve(field_name, unit, mine, out.learned_sub.get(field_name, []), report)
    peaks = {}
    for dtype in DTYPES:
        mine = [c for c in out.candidates if c.field == f"peak_tflops.{dtype}"]
        resolved = _resolve_peak(dtype, mine, report)
        if resolved.value is not None or resolved.kind == "conflict":
            peaks[dtype] = resolved
    unit_name, unit_source = _compute_unit_name(out.candidates)
    report.found = [n for n, f in {**fields, **{f"peak_tflops.{k}": v for k, v in peaks.items()}}.items()
                    if f.value is not None or f.kind == "conflict"]
    profile = HardwareProfile(
        chip=name, backend=_backend(chunks), compute_unit_name=unit_name, compute_unit_name_source=unit_source,
        peak_tflops=peaks, notes=_notes(report), **fields,
    )
    return profile, report


def _records(chunks: list[Chunk], tokens: set[str]) -> list[Record]:
    records: list[Record] = []
    for merged, originals in merge_windows(chunks):
        cells, prose = table_records(merged, tokens)
        found = cells + (prose_records(prose, merged, tokens) if prose.strip() else [])
        for record in found:
            record.originals = originals
        records.extend(found)
    return records


def merge_windows(chunks: list[Chunk]) -> list[tuple[Chunk, tuple[Chunk, ...]]]:
    """Re-join overlapping prose windows of one section, each with the original windows it was made of.

    The onboarding chunker cuts a section into windows of a few sentences (and long sentences into pieces); a
    sentence must be read whole, since a product named at its start scopes a number at its end. Table-row chunks
    stay as they are. The merged chunk keeps the first window's id, source, page and section; quotes are taken
    from the original windows (see `_verbatim_quote`).
    """
    ordered = sorted(chunks, key=lambda c: c.metadata.get("chunk_index", 0)) if all(
        "chunk_index" in c.metadata for c in chunks) else list(chunks)
    out: list[tuple[Chunk, tuple[Chunk, ...]]] = []
    for c in ordered:
        prev = out[-1][0] if out else None
        if prev is not None and c.kind != "table_row" and prev.kind == c.kind and \
                (prev.source, prev.page, prev.section) == (c.source, c.page, c.section):
            merged = Chunk(id=prev.id, text=_join_overlap(prev.text, c.text), chip=prev.chip, source=prev.source,
                           page=prev.page, section=prev.section, kind=prev.kind, metadata=prev.metadata)
            out[-1] = (merged, out[-1][1] + (c,))
        else:
            out.append((c, (c,)))
    return out


def _join_overlap(left: str, right: str) -> str:
    """``left + right`` without the text that `right` repeats from the end of `left` (window overlap)."""
    for k in range(min(len(left), len(right), 1200), 19, -1):
        if left.endswith(right[:k]):
            return left + right[k:]
    return f"{left} {right}"


def _source(candidate: Candidate) -> Source:
    """Citation of a candidate: its document, locator and a quote that appears verbatim (whitespace collapsed)
    in one original chunk."""
    record = candidate.record
    return Source(document=record.chunk.source, locator=record.locator or None, quote=_verbatim_quote(candidate))


def _squash(text: str) -> str:
    return " ".join(text.split())


def _verbatim_quote(candidate: Candidate) -> str:
    """The record's quote if one original chunk holds it, else the widest window of the record text around the
    value that one chunk holds (tables re-rendered from raw markup, links and tags removed, windows merged)."""
    record = candidate.record
    texts = [_squash(c.text) for c in (record.originals or (record.chunk,))]

    def held(option: str) -> bool:
        return bool(option) and any(option in t for t in texts)

    for option in ([record.quote] if len(record.quote) <= _QUOTE_MAX else []) + [record.text]:
        if held(_squash(option)):
            return _squash(option)
    text, q = record.text, candidate.quantity
    if not (0 <= q.start < q.end <= len(text)) or text[q.start:q.end].strip() != q.text:
        return q.text
    left, right = max(0, q.start - 120), min(len(text), q.end + 120)
    while left < q.start or right > q.end:
        if held(_squash(text[left:right])):
            return _squash(text[left:right])
        left, right = min(q.start, left + 4), max(q.end, right - 4)
    return q.text


def _dedupe(candidates: list[Candidate]) -> list[Candidate]:
    seen, out = set(), []
    for c in candidates:
        key = (c.record.chunk.source, c.record.locator, c.record.quote, round(c.value, 9), c.variant)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _agree(a: Candidate, b: Candidate) -> bool:
    return abs(a.value - b.value) <= max(a.resolution, b.resolution) * 1.0001 + 1e-12


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
    """Single-linkage groups of agreeing values, largest value last."""
    groups: list[list[Candidate]] = []
    for c in sorted(candidates, key=lambda c: c.value):
        if groups and any(_agree(c, g) for g in groups[-1]):
            groups[-1].append(c)
        else:
            groups.append([c])
    return groups


def _support(candidates: list[Candidate]) -> int:
    return len({(c.record.chunk.source, c.record.locator, c.record.quote) for c in candidates})


def _best_value(group: list[Candidate]) -> Candidate:
    """Most-cited value of an agreeing group (ties: the most precise); stated sources before derived ones."""
    counts = Counter(round(c.value, 9) for c in group)
    top = max(counts.values())
    best = [c for c in group if counts[round(c.value, 9)] == top]
    best.sort(key=lambda c: (c.resolution, c.kind != "stated", c.record.product != "chip"))
    return best[0]


def _field(unit: str, group: list[Candidate]) -> ProfileField:
    best = _best_value(group)
    stated = [c for c in group if c.kind == "stated" and abs(c.value - best.value) < 1e-9]
    if stated:
        return ProfileField(value=best.value, unit=unit, kind="stated", source=_source(stated[0]))
    return ProfileField(value=best.value, unit=unit, kind="derived", source=_source(best), formula=best.formula)


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
            alternatives.append(Alternative(value=c.value, source=_source(c)))
    alternatives = alternatives[:_MAX_ALTERNATIVES]
    support = [(_support([c for c in support_pool if any(_agree(c, g) for g in group)]), group) for group in groups]
    support.sort(key=lambda s: -s[0])
    report.conflicts.append(field_name)
    if len(support) > 1 and support[0][0] == support[1][0]:
        return ProfileField(value=None, unit=unit, kind="conflict", alternatives=tuple(alternatives))
    best = _best_value(support[0][1])
    return ProfileField(value=best.value, unit=unit, kind="conflict", source=_source(best),
                        alternatives=tuple(alternatives))


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


def _resolve(field_name: str, unit: str, candidates: list[Candidate], learned: list[float],
             report: ExtractionReport) -> ProfileField:
    candidates = _scoped(_drop_learned_sub(_dedupe(candidates), learned), field_name, report)
    if not candidates:
        return ProfileField(unit=unit)
    groups = _groups(candidates)
    if len(groups) == 1:
        return _field(unit, groups[0])
    return _conflict(field_name, unit, groups, candidates, report)


def _resolve_peak(dtype: str, candidates: list[Candidate], report: ExtractionReport) -> ProfileField:
    unit = "TFLOP/s"
    candidates = _scoped(_dedupe(candidates), f"peak_tflops.{dtype}", report)
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


def _compute_unit_name(candidates: list[Candidate]) -> tuple[str | None, Source | None]:
    """Vendor term for the compute unit, from the nouns next to compute-unit counts (``Compute Unit (CU)``)."""
    nouns = [(c.noun, c) for c in candidates if c.field == "num_compute_units" and c.noun]
    if not nouns:
        return None, None
    abbreviations = {"cu": "compute unit", "sm": "streaming multiprocessor", "eu": "execution unit",
                     "wgp": "workgroup processor"}
    heads: Counter = Counter()
    phrases: dict[str, list[tuple[str, Candidate]]] = {}
    seen_abbr: set[str] = set()
    for noun, c in nouns:
        base = re.sub(r"\s*\(.*\)$", "", noun).strip()
        if re.search(r"\((CUs?|SMs?|EUs?|WGPs?)\)", noun):
            seen_abbr.add(re.search(r"\((\w+?)s?\)", noun).group(1).lower())
        singular = re.sub(r"(?<=[a-z])s$", "", base.lower())
        if singular in abbreviations:
            seen_abbr.add(singular)
            singular = abbreviations[singular]
        heads[singular.split()[-1]] += 1
        phrases.setdefault(singular.split()[-1], []).append((singular, c))
    head = heads.most_common(1)[0][0]
    phrase, source_candidate = max(phrases[head], key=lambda p: len(p[0].split()))
    name = phrase.title() if phrase in abbreviations.values() else _restore_case(phrase, source_candidate)
    abbr = next((a for a, full in abbreviations.items() if full == phrase and a in seen_abbr), None)
    if abbr:
        name = f"{name} ({abbr.upper()})"
    return name, _source(source_candidate)


def _restore_case(phrase: str, candidate: Candidate) -> str:
    match = re.search(re.escape(phrase).replace(r"\ ", r"\s+") + "s?", candidate.record.text, re.IGNORECASE)
    text = match.group(0) if match else phrase
    return re.sub(r"s$", "", text) if text.lower().rstrip("s") == phrase.rstrip("s") and text.endswith("s") else text


def _backend(chunks: list[Chunk]) -> str:
    """Software stack the documents are written for, by mentions (``ROCm``/``HIP``, ``CUDA``, ...), else unknown."""
    text = " ".join(c.text for c in chunks)
    counts = {name: len(re.findall(rx, text)) for name, rx in _BACKENDS.items()}
    name, count = max(counts.items(), key=lambda kv: kv[1])
    return name if count >= 2 else "unknown"


def _notes(report: ExtractionReport) -> str:
    parts = [f"Extracted by rules from {len(report.documents)} document(s). {report.summary()}."]
    parts += report.superseded[:5]
    parts += report.problems[:5]
    return " ".join(parts)
