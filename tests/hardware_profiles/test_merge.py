"""Merging profile readings of one chip: nothing sourced is lost, disagreements become conflicts."""

from __future__ import annotations

import hardware_profiles as hp
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
