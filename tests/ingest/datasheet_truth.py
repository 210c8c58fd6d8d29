"""Checks of a datasheet set's truth files against its documents (test data, not the extractor): every quote of
a truth field is in the chip's document, and no decoy value equals the truth it is a decoy of. Used by the
per-set tests of tests/ingest/test_datasheets_v*.py."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path


def norm(text: str) -> str:
    """Text compared for quotes: table pipes, emphasis and backticks dropped, whitespace collapsed."""
    return " ".join(re.sub(r"[|*`]", " ", text).split())


#: Truth kinds of the schema (tests/data/datasheets/README.md).
KINDS = {"stated", "derived", "not_stated", "conflict"}
#: Truth fields whose value is a name, not a number.
TEXT_FIELDS = ("compute_unit_name", "dram_type")


def document_text(path: Path) -> str:
    """A document's text for quote checks: a PDF's text layer, an HTML file without its tags, other files as
    written (UTF-8)."""
    if path.suffix.lower() == ".pdf":
        from pypdf import PdfReader

        return "\n".join(page.extract_text() for page in PdfReader(path).pages)
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".html", ".htm"):
        text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return text


def truth_entries(truth: dict):
    """(name, entry) of every field of one chip's truth, peaks as ``peak_flops.<key>``."""
    for key, entry in truth.items():
        if key.startswith("_") or not isinstance(entry, dict):
            continue
        if key == "peak_flops":
            yield from ((f"peak_flops.{k}", e) for k, e in entry.items())
        else:
            yield key, entry


def quotes(entry) -> list[str]:
    """The quote or quotes (``source``: a string or a list) of one truth entry."""
    source = entry.get("source") if isinstance(entry, dict) else None
    return [source] if isinstance(source, str) else list(source or [])


def _truths(folder: Path):
    """(chip folder, chip key, truth) of every chip of a set folder's ``truth.json`` files."""
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        for key, truth in json.loads((sub / "truth.json").read_text(encoding="utf-8")).items():
            if not key.startswith("_"):
                yield sub, key, truth


def assert_quotes_in_documents(folder: Path) -> None:
    """Every quote of every truth field (peaks included) occurs in the chip's ``_document`` (`norm`)."""
    for sub, _, truth in _truths(folder):
        text = norm((sub / truth["_document"]).read_text(encoding="utf-8"))
        entries = [v for k, v in truth.items() if not k.startswith("_")] + list(truth["peak_flops"].values())
        for entry in entries:
            for quote in quotes(entry):
                assert norm(quote) in text, (sub.name, quote)


def assert_no_decoy_equals_truth(folder: Path) -> None:
    """No ``_decoys`` value of a field equals that field's truth value (a decoy must be another product's)."""
    for sub, _, truth in _truths(folder):
        for name, decoys in truth["_decoys"].items():
            value = truth[name]["value"] if "." not in name else truth["peak_flops"][name.split(".")[1]]["value"]
            assert value not in decoys, (sub.name, name)


def assert_set_meets_the_bar(evaluation, folder: Path, chips: set[str] | None = None, pdf_dir: Path | None = None):
    """`scripts/eval_profiles.py`'s scores of the datasheets in `folder` (their PDF forms with `pdf_dir`) meet issue
    18's bar: >= 90 % of stated fields, not-stated fields null, conflicts marked, no foreign value."""
    cases = evaluation.datasheet_cases(folder, pdf_dir=pdf_dir) if pdf_dir else evaluation.datasheet_cases(folder)
    if chips is not None:
        assert {c.key for c in cases} == chips
    results, summary, _ = evaluation.evaluate(cases)
    wrong = [(r.chip, r.truth_field, r.value) for r in results if r.correct is False]
    assert summary["foreign"] == 0 and evaluation.passes(summary), wrong
    assert summary["stated"]["correct"] / summary["stated"]["total"] >= 0.9, wrong


def assert_case_quotes_in_documents(case) -> None:
    """Every truth field of an `eval_profiles` case has a known kind, and every quote of a field that is not
    not_stated occurs in the case's documents (`norm`)."""
    text = norm(" ".join(document_text(path) for path in case.paths))
    for name, entry in truth_entries(case.truth):
        assert entry.get("kind") in KINDS, (case.key, name)
        if entry["kind"] == "not_stated":
            continue
        for quote in entry.get("sources") or [entry["source"]]:
            assert norm(quote) in text, (case.key, name, quote)


def assert_case_values_and_decoys(case, null_kinds: tuple[str, ...] = ("not_stated", "conflict")) -> None:
    """Stated and derived numbers of a case's truth are positive, fields of `null_kinds` are null, and no decoy is
    within the scorer's 0.5 % of the truth value it is a decoy of."""
    entries = dict(truth_entries(case.truth))
    for name, entry in entries.items():
        if entry["kind"] in ("stated", "derived") and name not in TEXT_FIELDS:
            assert isinstance(entry["value"], (int, float)) and entry["value"] > 0, (case.key, name)
        if entry["kind"] in null_kinds:
            assert entry["value"] is None, (case.key, name)
    for name, decoys in case.truth.get("_decoys", {}).items():
        assert name in entries, (case.key, name)
        truth_value = entries[name]["value"]
        for decoy in decoys:
            assert truth_value is None or abs(decoy - truth_value) > 0.005 * abs(truth_value), (case.key, name)
