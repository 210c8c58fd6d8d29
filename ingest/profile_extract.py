"""Rule-based hardware-profile extraction from onboarded chunks; every value cited, nothing invented.

`extract_profile(chip, chunks)` reads every chunk (prose, `key: value` list items, loader-rendered table rows, raw
tables, flattened PDF tables; see `ingest.profile_text` and `ingest.profile_tables`), applies the field rules of
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

import dataclasses
import re
from pathlib import Path

from hardware_profiles import HardwareProfile, ProfileField, Source, known_chips, load_profile, save_profile
from hardware_profiles.merge import merge_profiles
from hardware_profiles.schema import SCALAR_FIELDS
from hardware_profiles.yaml_io import check_chip_name
from ingest.bilingual import english_chunks
from ingest.decimal_marks import DECIMAL_COMMA, to_point_decimals, uses_decimal_comma
from ingest.number_words import digits_for_number_words
from ingest.profile_candidate import Candidate, RuleOutput
from ingest.profile_clock import peak_clock_words, prefer_named_clock, prefer_sustained_clock
from ingest.profile_columns import choose_columns, described_phrases
from ingest.profile_definitions import is_abbreviation as _is_abbreviation
from ingest.profile_derive import compute_units_from_hierarchy
from ingest.profile_features import feature_fields
from ingest.profile_glossary import Glossary, build_glossary
from ingest.profile_items import list_item_records
from ingest.profile_llm import ProposalModel, propose_candidates
from ingest.profile_peaks import DTYPES, peak_candidates
from ingest.profile_resolve import (  # noqa: F401  ExtractionReport is part of this module's API
    ExtractionReport,
    chip_peaks_from_per_unit,
    document_family,
    resolve_field,
    resolve_peak,
    source_of,
)
from ingest.profile_rules import prefetch_labels, scalar_candidates
from ingest.profile_supersede import precedence_of
from ingest.profile_tables import prefer_exact_product_rows, table_records
from ingest.profile_terms import singular, term_key
from ingest.profile_text import ChipTokens, Record, brands_of, chip_tokens, families_of, products_in, prose_records
from knowledge.types import Chunk

_BACKENDS = {
    "rocm": r"\bROCm\b|\bHIP\b",
    "cuda": r"\bCUDA\b",
    "tenstorrent": r"\bTenstorrent\b|\bTensix\b|\bTT-Metal",
    "xpu": r"\bSYCL\b|\boneAPI\b|Level Zero",
}


def extract_profile(chip: str, chunks: list[Chunk], llm: ProposalModel | None = None) -> HardwareProfile:
    """Typed hardware profile of `chip` read from `chunks`, every value with its quoted source.

    Args:
        chip: chip name (profile key), e.g. ``mi300x`` or ``wormhole_n150``; its model tokens (letters and digits)
            decide which products' statements apply.
        chunks: the onboarded chunks of the chip's documents (`knowledge.types.Chunk`; any kind).
        llm: optional proposal model (`ingest.profile_llm.default_model()` when an endpoint is configured); its
            proposals join the rules' candidates only when their quote is verbatim in the cited chunk.

    Returns:
        A `HardwareProfile` with null for every field the documents do not state. See
        `extract_profile_with_report` for the report of conflicts and of values left out.

    Raises:
        BadInputError: `chip` is not a valid chip name.
        ChiploreError: `llm` is given and its endpoint fails.
    """
    extra: list[Candidate] = []
    rejected: list[str] = []
    if llm is not None:
        extra, rejected = propose_candidates(check_chip_name(chip), chunks, llm)
    profile, report = extract_profile_with_report(chip, chunks, extra=extra)
    if rejected:
        note = f" LLM proposals rejected (quote not verbatim or value not in it): {len(rejected)}."
        profile = profile.model_copy(update={"notes": profile.notes + note})
    return profile


def update_profile_from_documents(chip: str, chunks: list[Chunk], llm: ProposalModel | None = None,
                                  save: bool = True, product: str | None = None
                                  ) -> tuple[HardwareProfile, ExtractionReport, Path | None]:
    """Extract `chip`'s profile from its onboarded `chunks` and merge it into the profile on record.

    The base is the chip's current profile (user file, else packaged, else empty); every extracted value is merged
    with `hardware_profiles.merge.merge_profiles` (unknowns filled, agreeing values kept, disagreements recorded as
    conflicts). Re-running on the same chunks changes nothing. This is what `chiplore onboard` calls.

    `product` names the chip's product in the documents when the chip name does not (``--product AS-4`` for chip
    ``aster``); it is kept as the profile's ``display_name`` and used again when a later call gives none.

    Returns:
        (merged profile, extraction report, path written or None when nothing was found or `save` is False).

    Raises:
        BadInputError: invalid chip name, or the user's profile file fails to load or cannot be written.
        ChiploreError: `llm` is given and its endpoint fails.
    """
    name = check_chip_name(chip)
    extra: list[Candidate] = []
    if llm is not None:
        extra, _ = propose_candidates(name, chunks, llm)
    base = load_profile(name) if name in known_chips() else HardwareProfile(chip=name)
    extracted, report = extract_profile_with_report(name, chunks, extra=extra, product=product or base.display_name
                                                    or None)
    if product:
        extracted = extracted.model_copy(update={"display_name": product})
    merged, messages = merge_profiles(base, extracted)
    notes = re.sub(r"\s*Extracted by rules from .*$", "", base.notes, flags=re.S).strip()
    merged = merged.model_copy(update={"notes": f"{notes} {extracted.notes}".strip()})
    report.merge_messages = messages
    if not report.found or not save:
        return merged, report, None
    return merged, report, save_profile(merged)


def extract_profile_with_report(chip: str, chunks: list[Chunk], extra: list[Candidate] | None = None,
                                product: str | None = None) -> tuple[HardwareProfile, ExtractionReport]:
    """`extract_profile` plus its `ExtractionReport`; `extra` candidates (verified LLM proposals) join the rules'.
    `product`: the name the documents give the chip's product when the chip name is not it (``AS-4``); its model
    token joins the chip name's."""
    name = check_chip_name(chip)
    product = product or title_product(chunks, chip_tokens(name))
    tokens = chip_tokens(name) | (chip_tokens(product) if product else set())
    report = ExtractionReport(chip=name, chunks=len(chunks),
                              documents=sorted({c.source for c in chunks}))
    out = RuleOutput()
    merged = english_chunks([(_digits_for_words(c), originals) for c, originals in merge_windows(chunks)])
    merged = _point_decimals(merged)
    texts = [c.text for c, _ in merged]
    tokens = ChipTokens(tokens, brands_of(tokens, texts), families_of(texts))
    glossary = build_glossary(merged)
    glossary.chip_names = {w for w in re.split(r"[_\-\s]+", (product or name).lower())
                           if len(w) >= 3 and w.isalpha()} | {b.lower() for b in tokens.brands} | set(tokens)
    glossary.peak_clocks = peak_clock_words(texts)
    records = _records(merged, tokens)
    report.product = product
    report.products, report.ambiguity = _products_named(records, name, product)
    prefetch_labels(records, glossary)
    for record in records:
        scalar_candidates(record, out, glossary)
        peak_candidates(record, out, glossary)
    out.candidates.extend(extra or [])
    out.candidates = choose_columns(out.candidates, product or name.replace("_", " "), described_phrases(texts))
    report.candidates = len(out.candidates)
    report.problems = sorted(set(out.problems))
    rank = precedence_of(chunks, document_family)
    fields: dict[str, ProfileField] = {}
    for field_name, unit in SCALAR_FIELDS.items():
        mine = [c for c in out.candidates if c.field == field_name]
        if field_name == "clock_mhz":
            mine = prefer_sustained_clock(prefer_named_clock(mine), glossary.peak_clocks)
        fields[field_name] = resolve_field(field_name, unit, mine, out.learned_sub.get(field_name, []), report, rank)
    if fields["num_compute_units"].value is None and fields["num_compute_units"].kind != "conflict":
        fields["num_compute_units"] = compute_units_from_hierarchy(glossary, records) or fields["num_compute_units"]
    peaks = {}
    for dtype in DTYPES:
        mine = [c for c in out.candidates if c.field == f"peak_tflops.{dtype}"]
        resolved = resolve_peak(dtype, [c for c in mine if not c.noun], report, rank)
        if resolved.value is None and resolved.kind != "conflict":
            derived = chip_peaks_from_per_unit([c for c in mine if c.noun], fields["num_compute_units"], glossary)
            resolved = resolve_peak(dtype, derived, report) if derived else resolved
        if resolved.value is not None or resolved.kind == "conflict":
            peaks[dtype] = resolved
    fields.update(feature_fields(records))
    unit_name, unit_source = _compute_unit_name(glossary, merged)
    report.found = [n for n, f in {**fields, **{f"peak_tflops.{k}": v for k, v in peaks.items()}}.items()
                    if f.value is not None or f.kind == "conflict"]
    profile = HardwareProfile(
        chip=name, backend=_backend(chunks), compute_unit_name=unit_name, compute_unit_name_source=unit_source,
        peak_tflops=peaks, notes=_notes(report), **fields,
    )
    return profile, report


def _digits_for_words(chunk: Chunk) -> Chunk:
    """`chunk` with spelled-out cardinals written as digits (`ingest.number_words`) in the text the rules read;
    quotes are still taken verbatim from the original windows."""
    text, spans = digits_for_number_words(chunk.text)
    return dataclasses.replace(chunk, text=text) if spans else chunk


def title_product(chunks: list[Chunk], tokens: set[str]) -> str | None:
    """The product the documents' titles name, when the chip name names none of the products the documents write
    ("Sallow S40 accelerator" over a table of the S20, S40 and S80, onboarded as ``sallow``): the one product model
    of the documents' title lines (the document title and its top heading), as written; None when the chip name is
    written in the documents, or the titles name no product or several."""
    words = {w.replace("-", "").lower() for c in chunks for w in _WORD.findall(c.text)}
    if set(tokens) & (words | {t for c in chunks for t in products_in(c.text)}):
        return None
    written: dict[str, str] = {}
    for chunk in chunks:
        context = str(chunk.metadata.get("context", "")).split(" > ")
        for title in [chunk.section.split(" > ")[0] if chunk.section else "", *context[:2]]:
            for token in products_in(title):
                match = next((m.group(1) for m in _PRODUCT_WRITTEN.finditer(title)
                              if m.group(1).replace("-", "").lower() == token), token)
                written.setdefault(token, match)
    return next(iter(written.values())) if len(written) == 1 else None


def _point_decimals(merged: list[tuple[Chunk, tuple[Chunk, ...]]]) -> list[tuple[Chunk, tuple[Chunk, ...]]]:
    """The chunks of each document that writes decimal commas (`ingest.decimal_marks.uses_decimal_comma`) with its
    figures written the English way, marked `DECIMAL_COMMA` in their metadata so that quotes are taken from the
    document's own text (`ingest.profile_resolve`)."""
    comma = {source for source in {c.source for c, _ in merged}
             if uses_decimal_comma([c.text for c, _ in merged if c.source == source])}
    return [(dataclasses.replace(c, text=to_point_decimals(c.text), metadata={**c.metadata, DECIMAL_COMMA: True})
             if c.source in comma else c, originals) for c, originals in merged]


def _records(merged_chunks: list[tuple[Chunk, tuple[Chunk, ...]]], tokens: set[str]) -> list[Record]:
    records: list[Record] = []
    for merged, originals in merged_chunks:
        cells, prose = table_records(merged, tokens)
        items, prose = list_item_records(prose, merged, tokens)
        found = cells + items + (prose_records(prose, merged, tokens) if prose.strip() else [])
        for record in found:
            record.originals = originals
        records.extend(found)
    prefer_exact_product_rows(records, tokens)
    return records


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-]*")
_PRODUCT_WRITTEN = re.compile(r"(?<![\w\-])([A-Za-z]{1,6}-?\d{1,4}[A-Za-z]{0,3})(?![\w\-])")


def _products_named(records: list[Record], chip: str, product: str | None) -> tuple[list[str], str]:
    """Products whose figures the documents state in tables (as written), and a note when the chip name (or
    `product`) names none of them while several are tabulated: their figures were left out, and ``--product``
    chooses one."""
    written: dict[str, str] = {}
    chip_seen = False
    for record in records:
        if record.product == "chip":
            chip_seen = True
        if not record.is_table or record.product != "other":
            continue
        for text in (record.header, record.label):
            for token in products_in(text):
                match = next((m.group(1) for m in _PRODUCT_WRITTEN.finditer(text)
                              if m.group(1).replace("-", "").lower() == token), token)
                written.setdefault(token, match)
    names = sorted(written.values())
    if chip_seen or len(names) < 2:
        return names, ""
    given = f"--product {product}" if product else f"the chip name {chip!r}"
    return names, (f"{given} names none of the products these documents tabulate ({', '.join(names)}): their "
                   f"figures were left out; choose one with --product NAME")


def merge_windows(chunks: list[Chunk]) -> list[tuple[Chunk, tuple[Chunk, ...]]]:
    """Re-join overlapping prose windows of one section, each with the original windows it was made of.

    The onboarding chunker cuts a section into windows of a few sentences (and long sentences into pieces); a
    sentence must be read whole, since a product named at its start scopes a number at its end. Table-row chunks
    stay as they are. The merged chunk keeps the first window's id, source, page and section; quotes are taken
    from the original windows (see `_verbatim_quote`).
    """
    ordered = sorted(chunks, key=lambda c: (c.source, c.metadata.get("chunk_index", 0))) if all(
        "chunk_index" in c.metadata for c in chunks) else list(chunks)
    groups: list[tuple[Chunk, list[Chunk], list[str]]] = []  # first window, its windows, pieces of the text
    tail = ""  # the last `_OVERLAP_MAX` characters of the current group's text
    for c in ordered:
        prev = groups[-1][0] if groups else None
        if prev is not None and c.kind != "table_row" and prev.kind == c.kind and \
                (prev.source, prev.page, prev.section) == (c.source, c.page, c.section):
            if len(groups[-1][1]) >= MAX_MERGED_WINDOWS:  # go on in a new group that starts with the last window
                last = groups[-1][1][-1]
                groups.append((last, [last], [last.text]))
                tail = last.text[-_OVERLAP_MAX:]
            rest = _overlap_rest(tail, c.text)
            groups[-1][2].append(rest)
            groups[-1][1].append(c)
            tail = (tail + rest)[-_OVERLAP_MAX:]
        else:
            groups.append((c, [c], [c.text]))
            tail = c.text[-_OVERLAP_MAX:]
    return [(Chunk(id=first.id, text="".join(pieces), chip=first.chip, source=first.source, page=first.page,
                   section=first.section, kind=first.kind, metadata=first.metadata) if len(windows) > 1 else first,
             tuple(windows)) for first, windows, pieces in groups]


_OVERLAP_MAX = 1200
#: Most windows merged into one text (a work bound: each record is quoted from its merged text's windows). Sections
#: up to about 13,000 characters are merged whole; a longer one is read as overlapping runs of this many windows
#: (each run starts with the previous run's last window, so a sentence cut between two windows stays whole in one).
MAX_MERGED_WINDOWS = 48


def _overlap_rest(left_tail: str, right: str) -> str:
    """What joining `right` after a text ending in `left_tail` adds: `right` without the text it repeats from the
    end of the left text (window overlap, at most `_OVERLAP_MAX` characters), else a space and `right`. Joining
    pieces instead of growing one string keeps merging linear in the section's length."""
    for k in range(min(len(left_tail), len(right), _OVERLAP_MAX), 19, -1):
        if left_tail.endswith(right[:k]):
            return right[k:]
    return f" {right}"


def _compute_unit_name(glossary: Glossary, merged: list[tuple[Chunk, tuple[Chunk, ...]]]
                       ) -> tuple[str | None, Source | None]:
    """The documents' own name for the compute unit, as written, with the sentence or row that uses it (its
    definition, else a statement of how many the chip has); the long form with its abbreviation when the
    documents pair them (``stream processing unit (SPU)``). None when the documents name no compute unit."""
    term = glossary.compute_unit()
    if term is None:
        return None, None
    if term.chunk is not None and term.chunk.kind == "table_row" and term.defined:
        row = " ".join(term.chunk.text.split())
        return term.name, Source(document=term.chunk.source, locator=term.chunk.cite().split(" ", 1)[-1] if
                                 term.chunk.section or term.chunk.page else None, quote=row)
    names = [term.name, *sorted(k for k, v in glossary.terms.items() if v is term), *sorted(term.aliases)]
    used = _most_used_alias(glossary, term, merged)
    if used is not None:
        return used
    for name in sorted(names, key=len, reverse=True):
        words = [re.escape(w) for w in name.split()]
        paired = re.compile(r"(?<![\w\-])((?i:" + r"\s+".join(words[:-1] + [words[-1] + r"(?:s|es)?"]) +
                            r"))\s*\(([A-Z][A-Z]{0,4}s?)\)")
        for chunk, originals in merged:
            for original in originals:
                match = paired.search(original.text)
                if match and _is_abbreviation(match.group(2), match.group(1)):
                    quote = _sentence_around(original.text, match.start(), match.end())
                    return (f"{_singular_phrase(match.group(1))} ({match.group(2).rstrip('s') or match.group(2)})",
                            _source_in(chunk, original, quote))
    quote = term.quote
    for chunk, originals in merged:
        for original in originals:
            squashed = " ".join(original.text.split())
            if quote and quote in squashed:
                return term.name, _source_in(chunk, original, quote)
    for chunk, originals in merged:
        for original in originals:
            at = original.text.lower().find(term.name.lower())
            if at >= 0:
                quote = _sentence_around(original.text, at, at + len(term.name))
                return term.name, _source_in(chunk, original, quote)
    return None, None


def _most_used_alias(glossary: Glossary, term, merged: list[tuple[Chunk, tuple[Chunk, ...]]]
                     ) -> tuple[str, Source] | None:
    """The name a document introduces for its compute unit and then uses (``processing-element arrays ("PE
    arrays")``, then "per PE array" throughout): a multi-word alias mentioned more often than the term's own name,
    as written, with the sentence that introduces it. None when the term's own name is used as often."""
    own = glossary.mentions(term_key(term.name))
    best = max(((glossary.mentions(a), a) for a in term.aliases if len(a.split()) >= 2), default=(0, ""))
    if best[0] <= own:
        return None
    words = [re.escape(w) for w in best[1].split()]
    rx = re.compile(r"(?<![\w\-])(?i:" + r"\s+".join(words[:-1] + [words[-1] + r"(?:s|es)?"]) + r")(?![\w\-])")
    for chunk, originals in merged:
        for original in originals:
            match = rx.search(original.text)
            if match:
                quote = _sentence_around(original.text, match.start(), match.end())
                return _singular_phrase(match.group(0)), _source_in(chunk, original, quote)
    return None


def _singular_phrase(phrase: str) -> str:
    words = phrase.split()
    words[-1] = singular(words[-1])
    return " ".join(words)


def _sentence_around(text: str, start: int, end: int) -> str:
    """The sentence (or table row) of `text` that holds ``text[start:end]``, whitespace collapsed."""
    left = max(text.rfind(". ", 0, start), text.rfind("\n", 0, start), text.rfind(" | ", 0, start))
    right_candidates = [i for i in (text.find(". ", end), text.find("\n", end), text.find(" | ", end)) if i >= 0]
    right = min(right_candidates) if right_candidates else len(text)
    left = 0 if left < 0 else left + (3 if text[left:left + 3] == " | " else 1)
    return " ".join(text[left:right + (1 if text[right:right + 1] == "." else 0)].split())


def _source_in(chunk: Chunk, original: Chunk, quote: str) -> Source:
    from ingest.profile_text import locator_of

    return Source(document=original.source, locator=locator_of(original) or None, quote=quote)


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
