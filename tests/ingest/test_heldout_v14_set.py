"""The fourteenth held-out datasheet set (tests/data/datasheets_heldout_v14) loads and its truth is consistent.

This checks the test data, not the extractor's score (`python scripts/eval_profiles.py --set heldout14` scores
it): the scorer finds all eight chips and their documents, every quote of a stated, derived or conflict truth
field occurs verbatim in its documents (tags, whitespace, table pipes and emphasis aside), the committed PDF
carries the text of its Markdown source, not_stated fields are null, and no decoy is within the scorer's 0.5 %
of the truth value it is a decoy of.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from tests.script_loader import load_script

_REPO = Path(__file__).resolve().parents[2]
HELDOUT14 = _REPO / "tests" / "data" / "datasheets_heldout_v14"
KINDS = {"stated", "derived", "not_stated", "conflict"}


def _norm(text: str) -> str:
    """Text compared for quotes: table pipes, emphasis and backticks dropped, whitespace collapsed."""
    return " ".join(re.sub(r"[|*`]", " ", text).split())


def _text(path: Path) -> str:
    """A document's text: a PDF's text layer, an HTML file without its tags, other files as written."""
    if path.suffix.lower() == ".pdf":
        from pypdf import PdfReader

        return "\n".join(page.extract_text() for page in PdfReader(path).pages)
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".html", ".htm"):
        text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return text


@pytest.fixture(scope="module")
def cases():
    evaluator = load_script("eval_profiles")
    assert evaluator.DATASHEET_SETS["heldout14"] == HELDOUT14
    return evaluator.datasheet_cases(HELDOUT14)


def _entries(truth: dict):
    """(name, entry) of every truth field, peaks as ``peak_flops.<key>``."""
    for key, entry in truth.items():
        if key.startswith("_") or not isinstance(entry, dict):
            continue
        if key == "peak_flops":
            yield from ((f"peak_flops.{k}", e) for k, e in entry.items())
        else:
            yield key, entry


def test_the_set_has_eight_chips_in_eight_layouts(cases):
    assert len(cases) == 8
    assert len({case.chip for case in cases}) == 8
    suffixes = {path.suffix for case in cases for path in case.paths}
    assert {".md", ".txt", ".rst", ".html", ".adoc", ".pdf"} <= suffixes
    assert all(case.paths for case in cases)
    assert any(case.product for case in cases)  # the multi-product table names its product


def test_every_truth_quote_is_in_its_documents(cases):
    for case in cases:
        text = _norm(" ".join(_text(path) for path in case.paths))
        for name, entry in _entries(case.truth):
            assert entry.get("kind") in KINDS, (case.key, name)
            if entry["kind"] == "not_stated":
                continue
            for quote in entry.get("sources") or [entry["source"]]:
                assert _norm(quote) in text, (case.key, name, quote)


def test_the_committed_pdf_carries_its_markdown_source(cases):
    pdfs = [path for case in cases for path in case.paths if path.suffix == ".pdf"]
    assert pdfs
    for pdf in pdfs:
        source = pdf.parent / "src" / (pdf.stem + ".md")
        pdf_text = _norm(_text(pdf))
        for line in source.read_text(encoding="utf-8").splitlines():
            if line.strip() and not set(line.strip()) <= set("|-"):
                assert _norm(line.lstrip("#- ")) in pdf_text, (pdf.name, line)


def test_values_are_numbers_and_no_decoy_is_close_to_its_truth(cases):
    for case in cases:
        entries = dict(_entries(case.truth))
        for name, entry in entries.items():
            if entry["kind"] in ("stated", "derived") and name not in ("compute_unit_name", "dram_type"):
                assert isinstance(entry["value"], (int, float)) and entry["value"] > 0, (case.key, name)
            if entry["kind"] in ("not_stated", "conflict"):
                assert entry["value"] is None, (case.key, name)
        for name, decoys in case.truth.get("_decoys", {}).items():
            assert name in entries, (case.key, name)
            truth_value = entries[name]["value"]
            for decoy in decoys:
                assert truth_value is None or abs(decoy - truth_value) > 0.005 * abs(truth_value), (case.key, name)
