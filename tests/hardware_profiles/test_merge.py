"""Merging profile readings of one chip: nothing sourced is lost, disagreements become conflicts."""

from __future__ import annotations

import pytest

import hardware_profiles as hp
from core.errors import BadInputError
from hardware_profiles import HardwareProfile, ProfileField, Source
from hardware_profiles.merge import merge_field, merge_profiles


def field(value, kind="stated", doc="a.md", unit="GB/s"):
    return ProfileField(value=value, unit=unit, kind=kind, source=Source(document=doc, quote=f"{value} here"))


def test_fill_keep_and_conflict():
    empty = ProfileField(unit="GB/s")
    assert merge_field("bw", empty, field(100))[0].value == 100
    assert merge_field("bw", field(100), empty)[0].value == 100
    kept, message = merge_field("bw", field(100, doc="a.md"), field(101, doc="b.md"))
    assert kept.value == 100 and kept.source.document == "a.md" and "agrees" in message
    merged, message = merge_field("bw", field(100, doc="a.md"), field(200, doc="b.md"))
    assert merged.kind == "conflict" and {(a.value, a.source.document) for a in merged.alternatives} == {
        (100, "a.md"), (200, "b.md")}
    assert "CONFLICT" in message


def test_device_reading_wins_a_conflict_and_documents_improve_citations():
    merged, _ = merge_field("bw", field(100), field(90, kind="device_query", doc="device-query"))
    assert merged.kind == "conflict" and merged.value == 90
    cited, _ = merge_field("bw", field(100, kind="device_query", doc="device-query"), field(100.5))
    assert cited.kind == "stated" and cited.source.document == "a.md"


def test_merge_is_idempotent_and_keeps_packaged_values(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIPLORE_HOME", str(tmp_path))
    base = hp.load_profile("mi300x")
    update = HardwareProfile(chip="mi300x", mem_bw_gbps=field(5300), clock_mhz=field(2000, unit="MHz"),
                             peak_tflops={"fp64": field(163.4, unit="TFLOP/s")})
    merged, messages = merge_profiles(base, update)
    assert merged.get("num_compute_units") == 304  # untouched
    assert merged.mem_bw_gbps == base.mem_bw_gbps  # agrees: documented citation kept
    assert merged.clock_mhz.kind == "conflict" and {a.value for a in merged.clock_mhz.alternatives} == {2100, 2000}
    again, _ = merge_profiles(merged, update)
    assert again == merged
    assert hp.load_profile_file(hp.save_profile(again)) == again
    assert any("clock_mhz" in m for m in messages)


def measured(value, unit="count"):
    from hardware_profiles.schema import MEASURED_DOCUMENT, Measurement

    return ProfileField(value=value, unit=unit, kind="measured",
                        source=Source(document=MEASURED_DOCUMENT, locator="on a GPU", quote="staircase fit"),
                        measurement=Measurement(value=value, method="staircase fit", repeats=3, spread=0.0))


def test_a_measurement_wins_a_conflict_over_documents_and_the_device_query():
    """A 36-unit datasheet, a device query inside a green context (132), the probe's 40 (the driver's rounding):
    every value recorded with its source, the measured one kept, whatever order the readings come in."""
    doc = field(36, unit="count")
    device = field(132, kind="device_query", doc="device-query", unit="count")
    after_device, _ = merge_field("num_compute_units", doc, device)
    merged, message = merge_field("num_compute_units", after_device, measured(40))
    assert merged.kind == "conflict" and merged.value == 40 and merged.measurement.value == 40
    assert {a.value for a in merged.alternatives} == {36, 132, 40} and "CONFLICT" in message
    requeried, _ = merge_field("num_compute_units", merged, device)  # `profile detect` again: still 40
    assert requeried.value == 40 and {a.value for a in requeried.alternatives} == {36, 132, 40}
    remeasured, _ = merge_field("num_compute_units", merged, measured(40))  # the same reading: nothing changes
    assert remeasured.value == 40 and remeasured.kind == "conflict"
    moved, _ = merge_field("num_compute_units", merged, measured(44))  # a new measurement replaces the old one
    assert moved.value == 44 and {a.value for a in moved.alternatives} == {36, 132, 44}


def test_an_agreeing_measurement_is_kept_beside_the_documented_value():
    kept, message = merge_field("num_compute_units", field(132, unit="count"), measured(131.0))
    assert kept.kind == "stated" and kept.value == 132 and kept.measurement.value == 131
    assert "measurement recorded" in message
    unknown, _ = merge_field("launch_overhead_us", ProfileField(unit="us"), measured(7.5, "us"))
    assert unknown.kind == "measured" and unknown.value == 7.5


def test_measured_fields_round_trip_and_need_their_measurement(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIPLORE_HOME", str(tmp_path))
    update = HardwareProfile(chip="mi300x", achievable_mem_bw_gbps=measured(4100, "GB/s"),
                             achievable_tflops={"bf16": measured(650, "TFLOP/s")},
                             num_compute_units=measured(304))
    merged, _ = merge_profiles(hp.load_profile("mi300x"), update)
    assert merged.achievable_bytes_per_s() == 4.1e12 and merged.achievable_flops("bf16") == 6.5e14
    assert merged.num_compute_units.kind == "stated" and merged.num_compute_units.measurement.repeats == 3
    assert hp.load_profile_file(hp.save_profile(merged)) == merged
    bare = merged.model_copy(update={"launch_overhead_us": ProfileField(value=5, unit="us", kind="measured",
                                                                        source=Source(document="x"))})
    with pytest.raises(BadInputError, match="needs its measurement"):
        hp.save_profile(bare)
