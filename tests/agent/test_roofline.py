"""Roofline floor against the published H200 floors of the reference document, and bottleneck classes."""

from __future__ import annotations

import pytest

from agent.roofline import (
    RooflineUnknown,
    classify_bottleneck,
    fraction_of_floor,
    roofline_floor_us,
    roofline_point,
)
from hardware_profiles import load_profile
from hardware_profiles.peaks import dtype_peak_flops
from hardware_profiles.schema import HardwareProfile, ProfileField
from kernels.task import load_task

TASK = load_task("extend_attention")

#: Floors in microseconds at 989 TFLOP/s and 4.8 TB/s, shared/reference/extend_attention.md ("Benchmark cases").
PUBLISHED_FLOOR_US = {"prefill": 556, "chunked-prefill": 1146, "mixed-batch": 287, "spec-verify": 225,
                      "decode": 449, "ragged": 564, "small-heads": 208, "large-heads": 625, "mla": 609}


@pytest.mark.parametrize("case_id, floor", sorted(PUBLISHED_FLOOR_US.items()))
def test_floor_matches_the_published_h200_floor(case_id, floor):
    got = roofline_floor_us(TASK, TASK.case(case_id), load_profile("h200"))
    assert got == pytest.approx(floor, rel=0.01)


def test_floor_is_max_of_compute_and_memory():
    profile = load_profile("h200")
    decode = roofline_point(TASK, TASK.case("decode"), profile)
    prefill = roofline_point(TASK, TASK.case("prefill"), profile)
    assert decode.bound == "memory" and decode.floor_us == decode.memory_floor_us > decode.compute_floor_us
    assert prefill.bound == "compute" and prefill.floor_us == prefill.compute_floor_us
    assert decode.ridge == pytest.approx(989.5e12 / 4.8e12)


def _profile(**peaks) -> HardwareProfile:
    bw = peaks.pop("bw", None)
    return HardwareProfile(chip="toy", mem_bw_gbps=ProfileField(value=bw, unit="GB/s"),
                           peak_tflops={k: ProfileField(value=v, unit="TFLOP/s") for k, v in peaks.items()})


def test_fp32_inputs_use_the_larger_of_tf32_and_fp32():
    assert dtype_peak_flops(_profile(fp32=60, tf32=400), "float32") == 400e12
    assert dtype_peak_flops(_profile(fp32=60), "float32") == 60e12


def test_unknown_peaks():
    case = TASK.case("decode")
    only_bw = roofline_point(TASK, case, _profile(bw=1000))
    assert only_bw.compute_floor_us == 0 and only_bw.floor_us == pytest.approx(TASK.bytes(case) / 1e12 * 1e6)
    with pytest.raises(RooflineUnknown, match="toy"):
        roofline_floor_us(TASK, case, _profile())


def test_fraction_and_classification():
    profile = load_profile("h200")
    decode = roofline_point(TASK, TASK.case("decode"), profile)
    assert fraction_of_floor(decode.floor_us, 2 * decode.floor_us) == 0.5
    assert fraction_of_floor(10.0, 0.0) == 0.0
    assert classify_bottleneck(decode, 1000.0).bottleneck == "memory-bound"
    prefill = roofline_point(TASK, TASK.case("prefill"), profile)
    assert classify_bottleneck(prefill, 3000.0).bottleneck == "compute-bound"
    assert classify_bottleneck(prefill, 3000.0, programs=64, compute_units=132).bottleneck == "occupancy"
    tiny = roofline_point(TASK, TASK.case("shorter-than-tile"), profile)
    diagnosis = classify_bottleneck(tiny, 8.0)
    assert diagnosis.bottleneck == "launch-overhead" and "launch" in diagnosis.reason
