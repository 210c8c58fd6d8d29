"""The v16 development datasheets (tests/data/datasheets_dev_v16): six chips in vendor vocabularies none of the other
sets use (an FPGA-like fabric in AsciiDoc, a RISC-V many-core manual in reStructuredText, a dataflow chip's
three-product HTML table, an Ascend-like brief, Gaudi-like release notes, an Xe-like overview with figures in
words), scored by `scripts/eval_profiles.py --set dev16`. The set is below issue 18's bar (53 of 70 stated fields
at 34675e6, 2 foreign values); the fields its forms of statement taught the extractor must stay right, and the bar
test stays visible as a strict xfail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ingest.datasheet_truth import assert_set_meets_the_bar
from tests.script_loader import load_script

_REPO = Path(__file__).resolve().parents[2]
DEV16 = _REPO / "tests" / "data" / "datasheets_dev_v16"

#: (chip, truth field) read right since the v16 round, each through a form of statement of its own: a porting
#: guide's equivalence ("it is the FX7 equivalent of a GPU's streaming multiprocessor"), AsciiDoc description
#: lists, "the unit on which the compiler places work", "runs to completion on one AI Core", "6 stacks of 16 GB",
#: a sibling "V3-L" and a predecessor "V2" beside the V3, "the X7 that preceded the X12", a SIMD16 that is no product.
LEARNED = [
    ("fenwick_fx7", "compute_unit_name"), ("fenwick_fx7", "num_compute_units"),
    ("fenwick_fx7", "max_threads_per_block"), ("fenwick_fx7", "shared_local_memory_per_unit_bytes"),
    ("fenwick_fx7", "peak_flops.int8"), ("fenwick_fx7", "peak_flops.fp32"), ("fenwick_fx7", "peak_flops.bf16"),
    ("fenwick_fx7", "peak_flops.fp16"), ("fenwick_fx7", "l2_cache_bytes"),
    ("xyla_x12", "shared_local_memory_per_block_bytes"),
    ("tessera_dx4", "compute_unit_name"), ("tessera_dx4", "num_compute_units"),
    ("tessera_dx4", "shared_local_memory_per_unit_bytes"), ("tessera_dx4", "l2_cache_bytes"),
    ("kestrel_k910", "compute_unit_name"),
    ("vellum_v3", "num_compute_units"), ("vellum_v3", "dram_capacity_bytes"), ("vellum_v3", "clock_mhz"),
    ("xyla_x12", "num_compute_units"), ("xyla_x12", "warp_or_wave_width"), ("xyla_x12", "clock_mhz"),
]


@pytest.fixture(scope="module")
def results():
    evaluation = load_script("eval_profiles")
    found, summary, _ = evaluation.evaluate(evaluation.datasheet_cases(DEV16))
    return {(r.chip, r.truth_field): r for r in found}, summary


@pytest.mark.parametrize("chip, field", LEARNED, ids=[f"{c}-{f}" for c, f in LEARNED])
def test_a_learned_form_stays_read(results, chip, field):
    by_field, _ = results
    result = by_field[(chip, field)]
    assert result.correct, (result.value, result.truth_value)


def test_no_more_than_the_known_foreign_values(results):
    _, summary = results
    assert summary["foreign"] <= 2  # fenwick's per-sequencer register bank, tessera's "32 lanes wide" stage


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="dev16 is at 76 % of stated fields (issue 18's bar: 90 %, 0 foreign)")
def test_v16_development_datasheets_meet_the_bar():
    assert_set_meets_the_bar(load_script("eval_profiles"), DEV16)
