"""Virtual chips on a real GPU (green contexts need CUDA 12.8+): the partition confines kernels to its SMs (ground
truth: the distinct %smid values a large grid runs on), the probe's knee finds the partition's real size, the
shared-memory cap refuses a larger kernel as such a chip would (run_family shrinks; a candidate that does not is a
compile_error naming the cap), and the verifier's children time inside the partition.

Each partition lives in its own process (a process enters one green context for good): subprocesses here, the
verifier's sandbox children there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile
from hardware_profiles.schema import HardwareProfile, Partition, ProfileField, Source
from hardware_profiles.smid import partition_problem
from hardware_profiles.virtual import VirtualChipError, check_host

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
HOST_SMS = 132

#: Partitions counted by `hardware_profiles.smid` (0: the whole device), all at once in their own processes.
COUNTED = (0, 40, 66, 36)

_KNEE = """
import json, sys
from hardware_profiles.green_context import enter_green_context
from hardware_profiles.probe.measure import measure_compute_units
enter_green_context(int(sys.argv[1]), 0)
reading = measure_compute_units(132, repeats=1)
print(json.dumps({"units": reading.value}))
"""

_CAP = """
import json
import torch
from kernels.chip import ChipLimits
from kernels.extend_attention.family import FamilyConfig, run_family, _KNOWN_FITS
from kernels.extend_attention.spec import TASK, make_inputs, reference
from hardware_profiles.green_context import install_shared_memory_cap
install_shared_memory_cap(48 * 1024, "virtual chip vm48: at most 48 KiB per program")
inputs = make_inputs(TASK.case("prefill"), seed=1, device="cuda")
wrong = ChipLimits(132, 227.0, 32, 1024)  # limits that do not know the cap: only the refusal can shrink the tiles
run_family(FamilyConfig(block_m=128, block_n=128, num_warps=8, num_stages=3, num_splits=1), **inputs, limits=wrong)
err = (inputs["o_extend"].float() - reference(inputs)["o_extend"]).abs().max().item()
print(json.dumps({"max_err": err, "fits": [c.to_dict() for c in _KNOWN_FITS.values()]}))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run(script: str, *args: str, timeout: int = 120) -> dict:
    proc = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def counted() -> dict[int, dict]:
    """`hardware_profiles.smid`'s report per partition of `COUNTED`: one process each, run at the same time (a
    count needs no quiet GPU: time slicing between processes leaves each kernel on its own partition's SMs)."""
    procs = {n: subprocess.Popen([sys.executable, "-m", "hardware_profiles.smid", str(n)], cwd=ROOT, env=_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in COUNTED}
    reports = {}
    try:
        for n, proc in procs.items():
            out, err = proc.communicate(timeout=120)
            reports[n] = json.loads(out.strip().splitlines()[-1]) if proc.returncode == 0 else {"error": err[-3000:]}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return reports


@pytest.mark.parametrize("sms", [40, 66, 36])
def test_a_green_context_confines_every_kernel_to_its_sms(counted, sms):
    inside, whole = counted[sms], counted[0]
    assert "error" not in inside, inside.get("error")
    assert "error" not in whole, whole.get("error")
    assert whole["smid_count"] == HOST_SMS, whole
    assert inside["matmul_ok"] and inside["props_sms"] == HOST_SMS  # the device query still says the whole GPU
    # rounded up to the driver's SM group, never down; the driver's own count of the context's SMs is the grid's
    assert partition_problem(sms, inside) is None, inside


def test_the_probe_knee_finds_the_partition_real_size(counted):
    """The probe's staircase inside a 36-SM partition finds what the driver really gave (the %smid count); the
    whole device's 132 is checked by the probe suite (scripts/check_probe.py)."""
    truth = counted[36].get("smid_count")
    assert truth, counted[36]
    assert _run(_KNEE, "36")["units"] == truth


def test_the_cap_makes_run_family_shrink_as_on_a_48_kib_chip():
    out = _run(_CAP)
    assert out["max_err"] < 2e-2
    fitted = out["fits"][0]
    # 2 B x (stages x 128 x (128 + 128) + 128 x 128) at 128x128x3 = 224 KiB: shrunk until under 48 KiB
    smem = 2 * (fitted["num_stages"] * fitted["block_n"] * 256 + fitted["block_m"] * 128) / 1024
    assert smem <= 48 and (fitted["block_n"], fitted["num_stages"]) != (128, 3)


def test_a_partition_larger_than_its_host_fails_in_one_line():
    profile = HardwareProfile(chip="huge", partition=Partition(host_chip="h200", compute_units=200))
    with pytest.raises(VirtualChipError, match=r"^virtual chip huge cannot run here: 200 SMs do not fit device 0"):
        check_host(profile)
    other = HardwareProfile(chip="elsewhere", partition=Partition(host_chip="mi300x", compute_units=40))
    with pytest.raises(VirtualChipError, match="it is a partition of mi300x, but device 0 is"):
        check_host(other)


def _virtual(chip: str, sms: int, cap_kb: float | None) -> HardwareProfile:
    """A virtual chip of the H200 whose profile states its limits (the partition's SMs, the cap) and the H200's
    peaks scaled by sms / 132 (an honest spec floor for the roofline gate)."""
    src = Source(document="test", quote="test partition")

    def f(v, unit):
        return ProfileField(value=v, unit=unit, kind="stated", source=src)

    h200 = load_profile("h200")
    scale = sms / HOST_SMS
    return HardwareProfile(
        chip=chip, backend="cuda", num_compute_units=f(sms, "count"), warp_size=f(32, "threads"),
        max_threads_per_block=f(1024, "threads"), smem_per_block_kb=f(cap_kb or 227, "KiB"),
        mem_bw_gbps=f(h200.get("mem_bw_gbps"), "GB/s"),
        peak_tflops={"bf16": f(h200.peak_flops("bf16") / 1e12 * scale, "TFLOP/s")},
        partition=Partition(host_chip="h200", compute_units=sms, smem_per_block_cap_kb=cap_kb))


def _big_tile_candidate(tmp_path: Path) -> Path:
    """The honest plain kernel with 128x128 tiles for 16-bit D <= 128: Q, K and V tiles of 32 KiB each, which an
    H200 holds and a 48 KiB chip refuses."""
    source = (ROOT / "tests" / "verifier" / "honest" / "simple_triton.py").read_text()
    small = "block_m, block_n = (64, 64) if head_dim <= 128 else (32, 32)"
    assert small in source
    path = tmp_path / "big_tiles.py"
    big = ("block_m, block_n = (128, 128) if head_dim <= 128 and q_extend.element_size() == 2 else (64, 64) if "
           "head_dim <= 128 else (32, 32)")  # float32 keeps its tiles: IEEE float32 dots of 128x128 compile slowly
    path.write_text(source.replace(small, big))
    return path


def test_the_verifier_fails_a_kernel_over_the_cap_as_a_compile_error_naming_it(tmp_path):
    candidate = _big_tile_candidate(tmp_path)
    options = VerifyOptions(device="cuda", case_ids=("prefill",), random_cases=1, timing=False)
    with Verifier("extend_attention", _virtual("vm48", 40, 48), options) as verifier:
        verdict = verifier.verify(candidate)
    assert verdict.stage == "compile_error", verdict.summary()
    assert "virtual chip vm48: at most 48 KiB per program" in verdict.reasons[0] and "49152" in verdict.reasons[0]
    with Verifier("extend_attention", load_profile("h200"), options) as verifier:
        assert verifier.verify(candidate).stage == "pass"


@pytest.mark.timeout(120)  # two timed verifications, each compiling the tuned kernels (the suite's limit is 75 s)
def test_the_verifier_times_inside_the_partition(tmp_path):
    """The tuned entry point on compute-bound prefill: 40 of 132 SMs take well over twice as long."""
    tuned = ROOT / "tests" / "verifier" / "honest" / "tuned_wrapper.py"
    times = {}
    for profile in (load_profile("h200"), _virtual("vm40", 40, None)):
        options = VerifyOptions(device="cuda", case_ids=("prefill",), random_cases=1, reps=10)
        with Verifier("extend_attention", profile, options) as verifier:
            verdict = verifier.verify(tuned)
        assert verdict.stage == "pass", verdict.summary()
        times[profile.chip] = verdict.time_us["prefill"]
        if profile.is_virtual:
            assert "virtual chip vm40" in verdict.device and verdict.config["partition"]["compute_units"] == 40
            assert verdict.config["chip_limits"]["num_compute_units"] == 40
            assert any(c.startswith("num_compute_units: profile 40, device 132") for c in
                       verdict.config["device_conflicts"])
    assert times["vm40"] > 2.0 * times["h200"], times
