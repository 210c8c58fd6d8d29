"""Virtual chips on the CPU side: the partition in the profile (strict YAML), its checks against the host's profile
and the host machine, and the shared-memory cap on kernels compiled offline for sm_90 (no GPU needed). The
partition itself (green context) is tested on the GPU: tests/hardware_profiles/test_virtual_gpu.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import hardware_profiles as hp
from core.errors import BadInputError
from hardware_profiles.green_context import GreenContextUnavailable, enter_green_context, over_cap
from hardware_profiles.schema import HardwareProfile, Partition
from hardware_profiles.virtual import (
    VirtualChipError,
    check_host,
    describe_partition,
    enter_chip,
    make_partition,
    partition_request,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_partition_round_trips_through_the_strict_yaml(chiplore_home):
    part = make_partition("m36", hp.load_profile("h200"), 36, 48)
    profile = HardwareProfile(chip="m36", partition=part)
    assert profile.is_virtual and partition_request(profile) == {"chip": "m36", "host_chip": "h200",
                                                                  "compute_units": 36, "smem_per_block_cap_kb": 48.0}
    path = hp.save_profile(profile)
    assert hp.load_profile("m36") == profile and "partition:" in path.read_text()
    path.write_text(path.read_text().replace("  compute_units: 36", "  compute_units: 36\n  compute_unit: 36"))
    with pytest.raises(BadInputError, match=r"partition.compute_unit': unknown key \(did you mean 'compute_units'"):
        hp.load_profile("m36")


def test_describe_names_the_host():
    profile = HardwareProfile(chip="m36", partition=Partition(host_chip="h200", compute_units=36,
                                                              smem_per_block_cap_kb=48))
    assert describe_partition(profile, "NVIDIA H200") == ("virtual chip m36: a partition of h200 (NVIDIA H200): 36 SMs "
                                                          "of a green context, shared memory capped at 48 KiB per "
                                                          "program")
    assert describe_partition(HardwareProfile(chip="h200")) == ""


@pytest.mark.parametrize("units, cap, message", [
    (200, None, "200 compute units do not fit host h200, which has 132"),
    (36, 300, "300 KiB shared-memory cap exceeds host h200's 227 KiB"),
    (0, None, "compute_units: Input should be greater than 0"),
])
def test_a_partition_that_does_not_fit_its_host_is_one_line(units, cap, message):
    with pytest.raises(VirtualChipError, match=message):
        make_partition("m", hp.load_profile("h200"), units, cap)


@pytest.mark.skipif(torch.cuda.is_available(), reason="what a machine without a GPU says")
def test_a_host_without_green_contexts_fails_in_one_line():
    profile = HardwareProfile(chip="m36", partition=Partition(host_chip="h200", compute_units=36))
    with pytest.raises(VirtualChipError) as info:
        check_host(profile)
    assert str(info.value) == "virtual chip m36 cannot run here: no CUDA device is visible to torch"
    with pytest.raises(VirtualChipError):
        enter_chip(profile)
    with pytest.raises(GreenContextUnavailable, match="no CUDA device"):
        enter_green_context(36)
    assert enter_chip(HardwareProfile(chip="h200")) is None  # a real chip needs no partition


def test_over_cap():
    assert over_cap(49153, 49152) and not over_cap(49152, 49152) and not over_cap(10**6, None)


_CAP_SCRIPT = """
import json
from triton.runtime.errors import OutOfResources
from kernels.extend_attention.offline_compile import compile_family
from hardware_profiles.green_context import install_shared_memory_cap, shared_memory_cap

big = compile_family("bf16", 90, 8, 3, BLOCK_M=128, BLOCK_N=128)
small = compile_family("fp16", 90, 4, 1, LQ=32, LV=32, BLOCK_D=32, BLOCK_DV=32, BLOCK_M=16, BLOCK_N=16, PACK=1,
                       TMA_EXT=False, TMA_PREFIX=False)
install_shared_memory_cap(48 * 1024, "virtual chip m36: at most 48 KiB per program")
out = {"cap": shared_memory_cap(), "big_shared": big.metadata.shared, "small_shared": small.metadata.shared}
for name, kernel in (("big", big), ("small", small)):
    errors = []
    for _ in range(2):  # the first load refuses; every later launch raises the same refusal again
        try:
            kernel.run(0)
            errors.append("ran")
        except OutOfResources as exc:
            errors.append(["OutOfResources", exc.required, exc.limit, str(exc)])
        except Exception as exc:
            errors.append(["other", type(exc).__name__])
    out[name] = errors
print(json.dumps(out))
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the real launches are tested (test_virtual_gpu)")
@pytest.mark.slow
def test_the_shared_memory_cap_refuses_a_larger_compiled_kernel_as_triton_does():
    """The family kernel compiled offline for sm_90 at 128x128 tiles, 3 stages (about 225 KiB) is refused with
    Triton's OutOfResources naming the 48 KiB cap, on every launch; a 16x16 one-stage kernel (a few KiB) passes the
    cap and reaches Triton's own loader (which needs a GPU: 'active drivers')."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", _CAP_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["cap"] == 49152 and out["big_shared"] > 49152 >= out["small_shared"]
    for kind, required, limit, text in out["big"]:
        assert (kind, required, limit) == ("OutOfResources", out["big_shared"], 49152)
        assert "shared memory (virtual chip m36: at most 48 KiB per program)" in text
    assert [e[0] for e in out["small"]] == ["other", "other"]


def test_a_partition_entered_on_one_thread_is_refused_to_another(monkeypatch):
    """The green context is current on the thread that entered it only (the driver's context stack and torch's
    current stream are per thread): another thread's request is refused, not answered as if it were inside."""
    import threading

    from hardware_profiles import green_context

    held = green_context.EnteredContext(0, 36, 40, 132, thread=threading.get_ident())
    monkeypatch.setitem(green_context._HELD, "entered", held)
    assert enter_green_context(36) is held  # the same request on the same thread: idempotent
    with pytest.raises(GreenContextUnavailable, match="already runs in a green context of 36 SMs"):
        enter_green_context(40)
    seen: list[str] = []

    def other() -> None:
        try:
            enter_green_context(36)
            seen.append("entered")
        except GreenContextUnavailable as exc:
            seen.append(str(exc))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == ["the green context of 36 SMs is current on another thread of this process; kernels launched "
                    "from this one would run on the whole device"]
