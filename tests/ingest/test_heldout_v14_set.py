"""The fourteenth held-out datasheet set (tests/data/datasheets_heldout_v14) loads and its truth is consistent.

This checks the test data, not the extractor's score (`python scripts/eval_profiles.py --set heldout14` scores
it): the scorer finds all eight chips and their documents, every quote of a stated, derived or conflict truth
field occurs verbatim in its documents (tags, whitespace, table pipes and emphasis aside), the committed PDF
carries the text of its Markdown source, not_stated fields are null, and no decoy is within the scorer's 0.5 %
of the truth value it is a decoy of.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ingest.datasheet_truth import (
    assert_case_quotes_in_documents,
    assert_case_values_and_decoys,
    document_text,
    norm,
)
from tests.script_loader import load_script

_REPO = Path(__file__).resolve().parents[2]
HELDOUT14 = _REPO / "tests" / "data" / "datasheets_heldout_v14"


@pytest.fixture(scope="module")
def cases():
    evaluator = load_script("eval_profiles")
    assert evaluator.DATASHEET_SETS["heldout14"] == HELDOUT14
    return evaluator.datasheet_cases(HELDOUT14)


def test_the_set_has_eight_chips_in_eight_layouts(cases):
    assert len(cases) == 8
    assert len({case.chip for case in cases}) == 8
    suffixes = {path.suffix for case in cases for path in case.paths}
    assert {".md", ".txt", ".rst", ".html", ".adoc", ".pdf"} <= suffixes
    assert all(case.paths for case in cases)
    assert any(case.product for case in cases)  # the multi-product table names its product


def test_every_truth_quote_is_in_its_documents(cases):
    for case in cases:
        assert_case_quotes_in_documents(case)


def test_the_committed_pdf_carries_its_markdown_source(cases):
    pdfs = [path for case in cases for path in case.paths if path.suffix == ".pdf"]
    assert pdfs
    for pdf in pdfs:
        source = pdf.parent / "src" / (pdf.stem + ".md")
        pdf_text = norm(document_text(pdf))
        for line in source.read_text(encoding="utf-8").splitlines():
            if line.strip() and not set(line.strip()) <= set("|-"):
                assert norm(line.lstrip("#- ")) in pdf_text, (pdf.name, line)


def test_values_are_numbers_and_no_decoy_is_close_to_its_truth(cases):
    for case in cases:
        assert_case_values_and_decoys(case)
