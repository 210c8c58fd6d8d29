"""Folding device-query facts into a profile: fill unknowns, keep agreeing documents, record conflicts."""

from __future__ import annotations

import pytest
import torch

import hardware_profiles as hp
from hardware_profiles import HardwareProfile
from hardware_profiles.device_query import (
    DeviceFact,
    DeviceReport,
    NoDeviceError,
    chip_name_from_device,
    merge_device_facts,
    query_device,
    tma_fact,
)


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIPLORE_HOME", str(tmp_path / "home"))


def _report(**values: float) -> DeviceReport:
    facts = tuple(DeviceFact(name, value, f"torch.cuda.get_device_properties(0).{name}", f"{name} = {value}")
                  for name, value in values.items())
    return DeviceReport(name="NVIDIA H200", backend="cuda", arch="sm_90", torch_version="2.x", facts=facts)


def test_h200_device_readings_agree_with_documents():
    # what an H200 reports (bytes converted): 132 SMs, 232448 B opt-in = 227 KiB, 150754820096 B = 140.4 GiB
    report = _report(num_compute_units=132, smem_per_block_kb=227, smem_per_compute_unit_kb=228,
                     mem_capacity_gb=150754820096 / 2**30, l2_cache_mb=60, warp_size=32)
    merged, messages = merge_device_facts(hp.load_profile("h200"), report)
    assert merged == hp.load_profile("h200")  # every reading agrees: documented values kept
    assert all("agrees" in m for m in messages)


def test_device_fills_unknown_fields_of_m890():
    merged, messages = merge_device_facts(hp.load_profile("m890"), _report(warp_size=64, l2_cache_mb=4))
    assert merged.get("warp_size") == 64 and merged.warp_size.kind == "device_query"
    assert merged.warp_size.source.document == "device-query"
    assert "warp_size" in merged.warp_size.source.locator and "NVIDIA H200" in merged.warp_size.source.locator
    assert merged.get("num_compute_units") == 36 and merged.num_compute_units.kind == "stated"  # not touched
    assert len(messages) == 2
    path = hp.save_profile(merged)
    assert hp.load_profile_file(path) == merged


def test_disagreement_is_a_conflict_with_both_sources():
    merged, messages = merge_device_facts(hp.load_profile("m890"), _report(num_compute_units=32))
    field = merged.num_compute_units
    assert field.kind == "conflict" and field.value == 32
    assert {a.value for a in field.alternatives} == {36, 32}
    assert {a.source.document.split(",")[0] for a in field.alternatives} >= {"device-query"}
    assert any("CONFLICT" in m for m in messages)


def test_redetect_replaces_previous_device_values():
    first, _ = merge_device_facts(HardwareProfile(chip="x1"), _report(num_compute_units=10))
    second, _ = merge_device_facts(first, _report(num_compute_units=12))
    assert second.get("num_compute_units") == 12 and second.num_compute_units.kind == "device_query"


@pytest.mark.parametrize(("name", "chip"), [("NVIDIA H200", "h200"), ("AMD Instinct MI300X", "mi300x"),
                                            ("NVIDIA A100-SXM4-80GB", "a100"), ("Some GPU", "some_gpu")])
def test_chip_name_from_device(name, chip):
    assert chip_name_from_device(name) == chip


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_query_without_device_raises():
    with pytest.raises(NoDeviceError, match="no CUDA or ROCm device visible to torch"):
        query_device()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm device")
def test_query_real_device():
    report = query_device(0)
    facts = {f.field: f for f in report.facts}
    props = torch.cuda.get_device_properties(0)
    assert facts["num_compute_units"].value == props.multi_processor_count
    assert facts["smem_per_block_kb"].value >= 48 and facts["warp_size"].value in (32, 64)
    if "H200" in report.name:
        assert facts["num_compute_units"].value == 132 and facts["smem_per_block_kb"].value == 227


@pytest.mark.parametrize(("major", "minor", "has"), [(9, 0, True), (10, 0, True), (12, 0, True), (8, 0, False),
                                                     (8, 9, False), (7, 5, False)])
def test_tma_from_compute_capability(major, minor, has):
    fact = tma_fact(major, minor, "torch.cuda.get_device_properties(0).major/.minor")
    assert fact.field == "tensor_memory_accelerator" and fact.value is has
    assert f"compute capability {major}.{minor}" in fact.raw


def _tma_report(major: int, minor: int, name: str) -> DeviceReport:
    fact = tma_fact(major, minor, "torch.cuda.get_device_properties(0).major/.minor")
    return DeviceReport(name=name, backend="cuda", arch=f"sm_{major}{minor}", torch_version="2.x", facts=(fact,))


def test_tma_reading_agrees_fills_and_conflicts():
    # an H200 (9.0) agrees with the documented true: the document stays cited
    merged, messages = merge_device_facts(hp.load_profile("h200"), _tma_report(9, 0, "NVIDIA H200"))
    assert merged == hp.load_profile("h200") and messages == [
        "tensor_memory_accelerator: true (device_query) agrees with true; kept"]
    # m890 does not say: the device reading fills it
    merged, _ = merge_device_facts(hp.load_profile("m890"), _tma_report(8, 0, "NVIDIA A100"))
    assert merged.get("tensor_memory_accelerator") is False and merged.tensor_memory_accelerator.kind == "device_query"
    # a reading that disagrees with the documents is a conflict listing both, the device's value kept
    merged, messages = merge_device_facts(hp.load_profile("a100"), _tma_report(9, 0, "NVIDIA H100"))
    field = merged.tensor_memory_accelerator
    assert field.kind == "conflict" and field.value is True and {a.value for a in field.alternatives} == {True, False}
    assert messages[0].startswith("tensor_memory_accelerator: CONFLICT false vs true")
    assert hp.load_profile_file(hp.save_profile(merged)) == merged
