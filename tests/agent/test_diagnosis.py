"""Roofline floors and bottleneck classes against the reference document's numbers."""

import pytest

from agent.diagnosis import diagnose, diagnose_case, floor_or_none
from kernels.extend_attention.spec import TASK
from kernels.task import Case
from tests.agent.helpers import h200_profile

#: "floor" column of shared/reference/extend_attention.md (989 TFLOP/s, 4.8 TB/s), microseconds.
REFERENCE_FLOOR_US = {"prefill": 556, "chunked-prefill": 1146, "mixed-batch": 287, "spec-verify": 225,
                      "decode": 449, "ragged": 564, "small-heads": 208, "large-heads": 625, "mla": 609}


@pytest.mark.parametrize("case_id", sorted(REFERENCE_FLOOR_US))
def test_floor_matches_reference_table(case_id):
    floor = floor_or_none(TASK, TASK.case(case_id), h200_profile())
    assert floor == pytest.approx(REFERENCE_FLOOR_US[case_id], rel=0.01)


def test_bound_and_fraction():
    profile = h200_profile()
    # SGLang's measured decode time on the H200: 8285 us at 5.4% of the floor (reference table)
    d = diagnose_case(TASK, TASK.case("decode"), profile, 8285.0)
    assert d.bound == "memory-bound" and d.bottleneck == "memory-bound"
    assert d.roofline_fraction == pytest.approx(0.054, abs=0.001)
    p = diagnose_case(TASK, TASK.case("prefill"), profile, 2858.0)
    assert p.bottleneck == "compute-bound" and p.roofline_fraction == pytest.approx(0.195, abs=0.001)
    assert p.ridge_flop_per_byte == pytest.approx(989e12 / 4.8e12)


def test_occupancy_and_launch_overhead():
    profile = h200_profile()
    case = TASK.case("chunked-prefill")
    assert diagnose_case(TASK, case, profile, 9000.0, programs=64).bottleneck == "occupancy"
    assert diagnose_case(TASK, case, profile, 9000.0, programs=512).bottleneck == "compute-bound"
    tiny = Case("tiny", {**dict(case.params), "extend_lens": [1], "prefix_lens": [16]}, 0, "decode")
    # 12 us is within 4x a 5 us launch while the floor (well under a microsecond) is under a quarter of it
    assert diagnose_case(TASK, tiny, profile, 12.0).bottleneck == "launch-overhead"


def test_untimed_and_unknown_peaks():
    no_flops = h200_profile().model_copy(update={"peak_tflops": {}})
    d = diagnose(TASK, list(TASK.bench_cases), no_flops, {})["decode"]
    # the memory floor alone is still a valid lower bound; which roof binds is unknown
    assert d.floor_us == pytest.approx(TASK.bytes(TASK.case("decode")) / 4.8e12 * 1e6)
    assert d.roofline_fraction is None and d.bottleneck == "unknown" and "not timed" in d.summary()
    bare = no_flops.model_copy(update={"mem_bw_gbps": no_flops.mem_bw_gbps.model_copy(update={"value": None})})
    d = diagnose(TASK, list(TASK.bench_cases), bare, {"decode": 100.0})["decode"]
    assert d.floor_us is None and d.roofline_fraction is None and d.bottleneck == "unknown"
