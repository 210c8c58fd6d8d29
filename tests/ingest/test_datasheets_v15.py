"""The v15 development datasheets (tests/data/datasheets_dev_v15, 2026-12-02): three chips in vocabularies and
layouts unlike the other sets (a two-product table with products as columns and an unnamed first column, prose of
processing elements hosted by clusters with a dispatch group defined as the unit of work, a brief that denies a
tensor-copy engine), scored by `scripts/eval_profiles.py --set dev15` against the issue's bar; their truth is
consistent with their documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ingest.datasheet_truth import (
    assert_no_decoy_equals_truth,
    assert_quotes_in_documents,
    assert_set_meets_the_bar,
)
from tests.script_loader import load_script

_REPO = Path(__file__).resolve().parents[2]
DEV15 = _REPO / "tests" / "data" / "datasheets_dev_v15"


@pytest.fixture(scope="module")
def evaluation():
    return load_script("eval_profiles")


def test_every_truth_quote_is_in_its_document():
    assert_quotes_in_documents(DEV15)


def test_no_decoy_equals_its_truth():
    assert_no_decoy_equals_truth(DEV15)


#: orca_n7 defines its "dispatch group" as "the unit of work the runtime places on one PE"; read as the compute unit,
#: it costs the PE count and both shared-memory scopes. A thread-block description that fixed it lowered two blind
#: sets (v8 26 -> 21 %, v9 70 -> 64 %) and was taken out: a known miss, kept visible.
ORCA_MISS = pytest.mark.xfail(strict=True, reason="orca_n7's dispatch group is read as the compute unit")


@pytest.mark.slow
@ORCA_MISS
def test_v15_development_datasheets_meet_the_bar(evaluation):
    assert_set_meets_the_bar(evaluation, DEV15, {"kite_k2", "orca_n7", "qx9"})


@pytest.mark.slow
@ORCA_MISS
def test_v15_pdf_forms_meet_the_bar(evaluation, tmp_path):
    assert_set_meets_the_bar(evaluation, DEV15, pdf_dir=tmp_path)
