"""The sixteenth development datasheet set (tests/data/datasheets_dev_v16) loads and its truth is consistent.

This checks the test data, not the extractor's score (`python scripts/eval_profiles.py --set dev16` scores it):
the scorer finds all six chips and their documents in six layouts, every quote of a stated, derived or conflict
truth field occurs verbatim in its documents (tags, whitespace, table pipes and emphasis aside), not_stated and
conflict fields are null, stated and derived values are positive numbers, and no decoy is within the scorer's
0.5 % of the truth value it is a decoy of (the model: tests/ingest/test_heldout_v14_set.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ingest.datasheet_truth import assert_case_quotes_in_documents, assert_case_values_and_decoys, truth_entries
from tests.script_loader import load_script

_REPO = Path(__file__).resolve().parents[2]
DEV16 = _REPO / "tests" / "data" / "datasheets_dev_v16"


@pytest.fixture(scope="module")
def cases():
    evaluator = load_script("eval_profiles")
    assert evaluator.DATASHEET_SETS["dev16"] == DEV16
    return evaluator.datasheet_cases(DEV16)


def test_the_set_has_six_chips_in_six_layouts(cases):
    assert len(cases) == 6
    assert len({case.chip for case in cases}) == 6
    assert all(len(case.paths) == 1 for case in cases)
    suffixes = {path.suffix for case in cases for path in case.paths}
    assert {".md", ".txt", ".rst", ".html", ".adoc"} <= suffixes
    assert any(case.product for case in cases)  # the three-SKU table names its product
    for case in cases:
        assert case.paths[0].name == case.truth["_document"], case.key


def test_every_truth_quote_is_in_its_documents(cases):
    for case in cases:
        assert_case_quotes_in_documents(case)


def test_values_are_numbers_and_no_decoy_is_close_to_its_truth(cases):
    for case in cases:
        assert_case_values_and_decoys(case)


def test_each_chip_leaves_a_field_unstated_and_lists_decoys(cases):
    for case in cases:
        kinds = [entry["kind"] for _, entry in truth_entries(case.truth)]
        assert "not_stated" in kinds, case.key
        assert case.truth.get("_decoys"), case.key
