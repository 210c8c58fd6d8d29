"""The sixth held-out datasheet set (tests/data/datasheets_heldout_v6) loads and its truth is consistent.

This checks the test data, not the extractor's score (`python scripts/eval_profiles.py --set heldout6` scores
it; BENCHMARKS.md reports the result): the scorer finds every chip and its documents, every truth quote occurs
verbatim in its document (whitespace, table pipes and Markdown emphasis aside), the committed PDF carries the
text of its Markdown source, and no decoy equals the truth value it is a decoy of.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ingest.datasheet_truth import KINDS, assert_case_values_and_decoys, document_text, norm, truth_entries
from tests.script_loader import load_script

_REPO = Path(__file__).resolve().parents[2]
HELDOUT6 = _REPO / "tests" / "data" / "datasheets_heldout_v6"



@pytest.fixture(scope="module")
def cases():
    evaluator = load_script("eval_profiles")
    assert evaluator.DATASHEET_SETS["heldout6"] == HELDOUT6
    return evaluator.datasheet_cases(HELDOUT6)


def test_the_set_has_five_chips_in_pdf_rst_markdown_and_text_layouts(cases):
    assert len(cases) == 5
    assert len({case.chip for case in cases}) == 5
    suffixes = {path.suffix for case in cases for path in case.paths}
    assert {".pdf", ".rst", ".md", ".txt"} <= suffixes
    assert all(case.paths for case in cases)
    assert any(case.product for case in cases)  # the multi-product table names its product


def test_every_truth_quote_is_in_its_document(cases):
    for case in cases:
        text = norm(" ".join(document_text(path) for path in case.paths))
        for name, entry in truth_entries(case.truth):
            assert entry.get("kind") in KINDS, (case.key, name)
            quotes = entry.get("sources") or [entry["source"]]
            for quote in quotes:
                assert norm(quote) in text, (case.key, name, quote)


def test_the_committed_pdf_carries_its_markdown_source(cases):
    pdfs = [path for case in cases for path in case.paths if path.suffix == ".pdf"]
    assert pdfs
    for pdf in pdfs:
        source = pdf.parent / "src" / (pdf.stem + ".md")
        pdf_text = norm(document_text(pdf))
        paragraphs = [p for p in source.read_text(encoding="utf-8").split("\n\n") if p.strip()]
        for paragraph in paragraphs:
            for line in paragraph.splitlines():
                if line.strip() and not set(line.strip()) <= set("|-"):
                    assert norm(line.lstrip("#- ")) in pdf_text, (pdf.name, line)


def test_values_are_numbers_and_no_decoy_equals_its_truth(cases):
    for case in cases:
        assert_case_values_and_decoys(case, ("not_stated",))
