"""The kernels' tests call the entry points directly, so they set the chip limits themselves, as any caller must
(`kernels.chip`): on a GPU the device's own report (`ChipLimits.from_device`, the caller's explicit choice), under
the interpreter the H200's profile values (hardware_profiles/h200.yaml: 132 SMs, 227 KiB per block, warp 32,
1024 threads), the chip whose rules the tuned entry point encodes."""

import pytest
import torch

from kernels.chip import ChipLimits, chip_limits

H200_LIMITS = ChipLimits(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024,
                         chip="h200")


@pytest.fixture(autouse=True)
def _chip_limits(request):
    if "splitk_gemm" in request.node.path.parts:  # that task's tests give its limits themselves
        yield None
        return
    limits = ChipLimits.from_device("cuda") if torch.cuda.is_available() else H200_LIMITS
    with chip_limits(limits):
        yield limits
