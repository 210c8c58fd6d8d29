"""Hardware profiles built directly for the knowledge tests (public datasheet values; null = unknown).

h100/h200: NVIDIA H100 whitepaper, H200 datasheet, Hopper tuning guide (132 SMs, 227 KB per block opt-in,
228 KB per SM, dense bf16 989.5 TFLOP/s, 3.35 / 4.8 TB/s). a100: A100 whitepaper (108 SMs, 163 KB per block,
164 KB per SM, 312 TFLOP/s, 2.039 TB/s). mi300x: CDNA 3 white paper / ROCm specs (304 CUs, wavefront 64,
64 KB LDS, 1307.4 TFLOP/s, 5.3 TB/s; threads per block left null as in the packaged profile). m890: only the
public facts (36 compute units, 48 KB per block). tensor_memory_accelerator (the bulk tensor-copy engine): true on
the Hopper parts (compute capability 9.0), false on the A100 (Ampere, 8.0), unknown on mi300x and m890, as in the
packaged profiles.
"""

from hardware_profiles.schema import HardwareProfile, ProfileField


def make_profile(chip: str, peaks: dict[str, float] | None = None, **values: float | bool | None) -> HardwareProfile:
    """A HardwareProfile with the given scalar and feature values (None = unknown) and dense peaks in TFLOP/s."""
    fields = {k: ProfileField(value=v) for k, v in values.items()}
    peak = {k: ProfileField(value=v, unit="TFLOP/s") for k, v in (peaks or {}).items()}
    return HardwareProfile(chip=chip, peak_tflops=peak, **fields)


def h100() -> HardwareProfile:
    return make_profile("h100", {"bf16": 989.5, "fp16": 989.5}, num_compute_units=132, warp_size=32,
                        max_threads_per_block=1024, smem_per_block_kb=227, smem_per_compute_unit_kb=228,
                        mem_bw_gbps=3350, tensor_memory_accelerator=True)


def h200() -> HardwareProfile:
    return make_profile("h200", {"bf16": 989.5, "fp16": 989.5}, num_compute_units=132, warp_size=32,
                        max_threads_per_block=1024, smem_per_block_kb=227, smem_per_compute_unit_kb=228,
                        mem_bw_gbps=4800, tensor_memory_accelerator=True)


def a100() -> HardwareProfile:
    return make_profile("a100", {"bf16": 312, "fp16": 312}, num_compute_units=108, warp_size=32,
                        max_threads_per_block=1024, smem_per_block_kb=163, smem_per_compute_unit_kb=164,
                        mem_bw_gbps=2039, tensor_memory_accelerator=False)


def mi300x() -> HardwareProfile:
    return make_profile("mi300x", {"bf16": 1307.4, "fp16": 1307.4}, num_compute_units=304, warp_size=64,
                        smem_per_block_kb=64, smem_per_compute_unit_kb=64, mem_bw_gbps=5300)


def m890() -> HardwareProfile:
    return make_profile("m890", num_compute_units=36, smem_per_block_kb=48)
