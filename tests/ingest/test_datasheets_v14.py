"""The v14 development datasheets (tests/data/datasheets_dev_v14, round i18-fix11): three chips in vocabularies and
layouts unlike the other sets (prose of "reefs" with a competitor and a predecessor, a three-product table of
"forges" with per-unit / per-block limits, term and key lists of "quads" holding "cells"), scored by
`scripts/eval_profiles.py --set dev14` against the issue's bar; their truth is consistent with their documents."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.script_loader import load_script

_REPO = Path(__file__).resolve().parents[2]
DEV14 = _REPO / "tests" / "data" / "datasheets_dev_v14"



@pytest.fixture(scope="module")
def evaluation():
    return load_script("eval_profiles")


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[|*`]", " ", text).split())


def _quotes(entry) -> list[str]:
    source = entry.get("source") if isinstance(entry, dict) else None
    return [source] if isinstance(source, str) else list(source or [])


def test_every_truth_quote_is_in_its_document():
    for sub in sorted(p for p in DEV14.iterdir() if p.is_dir()):
        data = json.loads((sub / "truth.json").read_text(encoding="utf-8"))
        for key, truth in data.items():
            if key.startswith("_"):
                continue
            text = _norm((sub / truth["_document"]).read_text(encoding="utf-8"))
            entries = [v for k, v in truth.items() if not k.startswith("_")] + list(truth["peak_flops"].values())
            for entry in entries:
                for quote in _quotes(entry):
                    assert _norm(quote) in text, (sub.name, quote)


def test_no_decoy_equals_its_truth():
    for sub in sorted(p for p in DEV14.iterdir() if p.is_dir()):
        for key, truth in json.loads((sub / "truth.json").read_text(encoding="utf-8")).items():
            if key.startswith("_"):
                continue
            for name, decoys in truth["_decoys"].items():
                value = truth[name]["value"] if "." not in name else truth["peak_flops"][name.split(".")[1]]["value"]
                assert value not in decoys, (sub.name, name)


@pytest.mark.slow
def test_v14_development_datasheets_meet_the_bar(evaluation):
    cases = evaluation.datasheet_cases(DEV14)
    assert {c.key for c in cases} == {"gannet_r4", "harrier_m6", "lynx_q2"}
    results, summary, _ = evaluation.evaluate(cases)
    wrong = [(r.chip, r.truth_field, r.value) for r in results if r.correct is False]
    assert summary["foreign"] == 0 and evaluation.passes(summary), wrong
    assert summary["stated"]["correct"] / summary["stated"]["total"] >= 0.9


@pytest.mark.slow
@pytest.mark.xfail(reason="the PDF form of harrier_m6's three-product table loses its product columns (fix11: 64/74)",
                   strict=False)
def test_v14_pdf_forms_meet_the_bar(evaluation, tmp_path):
    cases = evaluation.datasheet_cases(DEV14, pdf_dir=tmp_path)
    results, summary, _ = evaluation.evaluate(cases)
    assert summary["foreign"] == 0
    assert evaluation.passes(summary)
