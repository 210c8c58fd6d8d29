"""`chiplore profile probe` and `chiplore profile virtual` (typer's runner, real profiles). The measurements
themselves run on a GPU (tests/hardware_profiles/test_probe_gpu.py); here: the one line without a GPU, the
virtual chip's declaration and display, and how readings become measured fields with conflicts recorded."""

from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

import agent.cli.profile_cmds  # noqa: F401  registers the commands
from agent.cli.app import app
from core.errors import BadInputError
from hardware_profiles import load_profile
from hardware_profiles.device_query import DeviceFact, DeviceReport
from hardware_profiles.probe.measure import ProbeReport, Reading
from hardware_profiles.probe.record import apply_probe, roofline_rows

runner = CliRunner()


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIPLORE_HOME", str(tmp_path / "home"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="what a machine without a GPU says")
def test_probe_without_a_gpu_says_it_cannot_measure():
    result = runner.invoke(app, ["profile", "probe", "h200"])
    assert isinstance(result.exception, BadInputError)
    assert str(result.exception) == ("cannot measure h200: no GPU is visible to torch; the probe times Triton "
                                     "kernels on the chip itself")


def test_virtual_declares_a_partition_and_show_marks_it(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    result = runner.invoke(app, ["profile", "virtual", "m36", "--host", "h200", "--compute-units", "36",
                                 "--smem-cap-kb", "48"])
    assert result.exit_code == 0, result.output
    shown = runner.invoke(app, ["profile", "show", "m36"])
    assert "VIRTUAL: a partition of h200" in shown.output
    assert ("VIRTUAL: virtual chip m36: a partition of h200 (NVIDIA H200 SXM 141GB): 36 SMs of a green context, "
            "shared memory capped at 48 KiB per program") in shown.output
    assert load_profile("m36").partition.compute_units == 36


def test_virtual_refuses_a_partition_larger_than_its_host():
    result = runner.invoke(app, ["profile", "virtual", "big", "--host", "h200", "--compute-units", "140"])
    assert isinstance(result.exception, BadInputError)
    assert str(result.exception) == "virtual chip big: 140 compute units do not fit host h200, which has 132"


def _report() -> ProbeReport:
    report = ProbeReport(device="NVIDIA H200", backend="cuda", triton_version="3.6.0")
    report.readings.update({
        "num_compute_units": Reading(40, "count", "staircase fit", 3, 0.0),
        "smem_per_block_kb": Reading(48, "KiB", "ladder", 1, 0.0),
        "achievable_mem_bw_gbps": Reading(2400, "GB/s", "copy", 5, 0.01),
        "achievable_tflops.bf16": Reading(250, "TFLOP/s", "matmul", 5, 0.02),
        "launch_overhead_us": Reading(12.5, "us", "empty launches", 5, 0.05)})
    return report


def test_readings_become_measured_fields_and_disagreements_conflicts():
    """A datasheet-only profile (36 units, 48 KiB, 1800 GB/s, 300 TFLOP/s stated), the device query of the whole
    H200 (132 SMs, 227 KiB) and the probe inside a 40-SM partition with a 48 KiB cap."""
    from hardware_profiles.schema import HardwareProfile, ProfileField, Source

    src = Source(document="sheet.md", quote="stated")

    def stated(v, unit):
        return ProfileField(value=v, unit=unit, kind="stated", source=src)

    sheet = HardwareProfile(chip="m36", num_compute_units=stated(36, "count"), smem_per_block_kb=stated(48, "KiB"),
                            mem_bw_gbps=stated(1800, "GB/s"), peak_tflops={"bf16": stated(300, "TFLOP/s")})
    device = DeviceReport("NVIDIA H200", "cuda", "sm_90", "2.11", (
        DeviceFact("num_compute_units", 132, "torch", "multi_processor_count = 132"),
        DeviceFact("smem_per_block_kb", 227, "torch", "shared_memory_per_block_optin = 232448 bytes"),
        DeviceFact("warp_size", 32, "torch", "warp_size = 32")))
    merged, messages = apply_probe(sheet, _report(), "NVIDIA H200 (virtual chip m36)", device)
    units = merged.num_compute_units
    assert units.kind == "conflict" and units.value == 40 and {a.value for a in units.alternatives} == {36, 132, 40}
    assert merged.smem_per_block_kb.value == 48 and merged.smem_per_block_kb.measurement.value == 48
    assert merged.warp_size.kind == "device_query" and merged.get("warp_size") == 32
    assert merged.achievable_mem_bw_gbps.kind == "measured" and merged.launch_overhead_us.value == 12.5
    assert merged.mem_bw_gbps.value == 1800  # the spec value stays: the measured one is its own field
    assert any(m.startswith("probe: num_compute_units: CONFLICT") for m in messages)
    assert any(m.startswith("device query: num_compute_units: CONFLICT") for m in messages)
    rows = {r[0]: r[1:] for r in roofline_rows(merged)}
    assert rows["memory bandwidth"] == ("1,800.0 GB/s", "2,400.0 GB/s", "133%")
    assert rows["dense bf16"] == ("300.0 TFLOP/s", "250.0 TFLOP/s", "83%")
    ridge = rows["ridge bf16 (roofline floor switches roofs)"]
    assert ridge[:2] == (f"{300e12 / 1800e9:,.1f} FLOP/B", f"{250e12 / 2400e9:,.1f} FLOP/B")
