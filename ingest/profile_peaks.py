"""Peak rules: the dense peak compute rate (FLOP/s) per data type that a record states.

A FLOP/s figure is a peak of the data types named next to it (`DTYPES`; after it up to the next figure, else before
it), with a matrix or vector variant when the same words say so. Skipped: sparse or speedup figures, figures per
clock or per compute unit (a unit's peak is kept with its noun, for `ingest.profile_derive` to scale), bounds and old
figures. "413 TFLOPS of BF16, twice that in FP8" also states FP8 826 TFLOPS (`derived`).
"""

from __future__ import annotations

import re

from ingest.profile_candidate import Candidate, RuleOutput, is_bound
from ingest.profile_glossary import Glossary
from ingest.profile_rules import corrected_figure
from ingest.profile_scope import THE_NOUN_HAS, scope_of
from ingest.profile_supersede import is_old_figure
from ingest.profile_terms import noun_phrase
from ingest.profile_text import Record
from ingest.units import Quantity, find_quantities

_PER_UNIT = re.compile(r"/\s*(?:clock|clk|cycle|cu|sm)\b|per (?:clock|clk|cycle|cu|sm|compute unit)\b",
                       re.IGNORECASE)
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
        if quantity.per or is_bound(record, quantity) or \
                is_old_figure(record.text, quantity.start, quantity.end, "" if record.is_table else record.key):
            continue
        if not record.is_table and _sparse_figure(record.text, quantities, n):
            continue
        corrected = corrected_figure(record, quantity)  # "Table 4 lists 310 TFLOPS for FP16; the correct figure is"
        if corrected:
            _correcting_peaks(record, quantity, corrected, out)
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


def _correcting_peaks(record: Record, quantity: Quantity, corrected: tuple[Record, Quantity, list[Quantity]],
                      out: RuleOutput) -> None:
    """The peaks a correcting figure states: the data types of the figure it corrects (`corrected`, from
    `ingest.profile_rules.corrected_figure`), each candidate marked with the old value it replaces."""
    old_record, old, every = corrected
    flops = [q for q in every if q.dimension == "flops"]
    for dtype, variant in _dtypes_near(old_record, flops, flops.index(old)):
        out.candidates.append(Candidate(f"peak_tflops.{dtype}", quantity.to("TFLOP/s"), quantity.resolution / 1e12,
                                        record, quantity, variant=variant, corrects=old.to("TFLOP/s")))


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
