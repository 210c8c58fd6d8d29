"""Which profile field a number states, by the meaning of the words that name it, constrained by its unit.

A number is read with its unit by `ingest.units`; the unit's dimension (count, bytes, bytes/s, Hz) limits the
fields it can state. Among those, the words that name it (a row label with its column header, or the words around
it in a sentence, each with the document's own terms rewritten to generic ones by `ingest.profile_glossary`) are
matched by embedding similarity (`ingest.profile_meaning`) to short descriptions of every *quantity* of that
dimension: the profile's quantities (`QUANTITIES`) and look-alikes that are not in the profile (L1 or L3 caches,
link bandwidth, memory clocks, counts of lanes or memory stacks: `LOOKALIKES`), so that a number about something
else is matched to it and left out, instead of being forced into the nearest field.

A quantity becomes a field through its scope (`FIELD_BY_SCOPE`): shared memory stated per work-group is
`smem_per_block_kb`, per compute unit (or without a scope: shared memory belongs to a compute unit)
`smem_per_compute_unit_kb`; a thread count per work-group is `max_threads_per_block`, and per compute unit it is
another quantity (resident threads), not in the profile. Scopes come from `ingest.profile_text.level_cues`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.profile_meaning import ConceptSpace

#: Quantities the profile holds: name -> (dimension, descriptions written the way datasheets label them).
QUANTITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "compute_units": ("count", ("compute units", "number of compute units", "streaming multiprocessors",
                                "execution engines or cores that run the kernels' programs")),
    "warp_width": ("count", ("warp size", "wavefront size", "warp width: threads per warp", "threads per wavefront",
                             "number of threads that execute each instruction together", "SIMD width in lanes",
                             "lanes per warp", "lanes per wavefront", "sub-group width (SYCL, OpenCL)")),
    "block_threads": ("count", ("maximum threads per thread block", "threads per work-group",
                                "work-group size limit", "maximum work-group size",
                                "the most threads a thread block may hold")),
    "register_count": ("count", ("32-bit registers per compute unit", "register file size in registers", "registers",
                                 "registers per compute unit", "registers per SM", "number of 32-bit registers")),
    "shared_memory": ("bytes", ("shared memory", "shared memory per compute unit", "shared memory per thread block",
                                "local data share", "LDS", "scratchpad memory", "software-managed local memory",
                                "on-chip SRAM of each compute unit", "scratch memory", "local scratch")),
    "register_file": ("bytes", ("register file", "vector register file per compute unit", "vector registers",
                                "VGPR file")),
    "l2_cache": ("bytes", ("L2 cache", "level-two cache", "second-level cache shared by the chip")),
    "device_memory": ("bytes", ("device memory capacity", "HBM memory", "DRAM capacity", "GDDR memory",
                                "memory size of the accelerator", "GPU memory", "memory capacity")),
    "memory_bandwidth": ("bytes_per_s", ("memory bandwidth", "peak memory bandwidth", "HBM bandwidth",
                                         "DRAM bandwidth", "bandwidth")),
    "engine_clock": ("hz", ("peak engine clock", "boost clock", "maximum core clock frequency", "engine clock",
                            "core clock", "clock of the compute units", "compute units run at up to", "clock rate",
                            "clock speed", "the chip's standard clock rate", "graphics clock",
                            "processor clock frequency", "the clock the compute engines run at")),
}
#: Quantities of the same dimensions that the profile does not hold (absorb numbers about other things).
LOOKALIKES: dict[str, tuple[str, tuple[str, ...]]] = {
    "other_counts": ("count", (
        "number of SIMD units or lanes", "number of vector engines or SIMD units inside a core",
        "number of matrix cores, matrix engines or tensor cores", "number of stream processors",
        "number of memory channels, stacks or controllers", "number of dies or chiplets", "number of CPU cores",
        "number of links or ports", "lanes of a PCIe or serial host link", "number of copy or DMA engines", "bits",
        "number of banks", "maximum threads per compute unit",
        "registers per thread", "number of warps per compute unit", "cycles of latency", "instructions",
        "number of partitions", "number of accelerators in a node",
    )),
    "other_bytes": ("bytes", (
        "L1 cache", "L1 data cache per compute unit", "L3 cache", "last-level cache", "infinity cache",
        "instruction cache", "scalar register file", "SGPR file", "cache line size", "page size", "transfer size",
        "total on-chip SRAM of the whole chip", "memory of a node with several accelerators", "buffer size",
    )),
    "other_bandwidth": ("bytes_per_s", (
        "interconnect link bandwidth", "PCIe host bandwidth", "network bandwidth", "cache bandwidth",
        "on-chip SRAM bandwidth", "network-on-chip bandwidth", "bandwidth per direction",
        "bandwidth of a node of several accelerators",
    )),
    "other_clock": ("hz", ("memory clock", "memory data rate", "base clock", "minimum idle clock", "interface clock",
                           "network-on-chip clock", "clock of the management or control processor")),
}
#: (quantity, scope) -> profile field; scope "" = no scope stated. A pair not listed states no profile field.
FIELD_BY_SCOPE: dict[tuple[str, str], str] = {
    ("compute_units", "chip"): "num_compute_units", ("compute_units", ""): "num_compute_units",
    ("warp_width", ""): "warp_size", ("warp_width", "warp"): "warp_size", ("warp_width", "cu"): "warp_size",
    ("warp_width", "chip"): "warp_size", ("warp_width", "sub"): "warp_size", ("warp_width", "part"): "warp_size",
    ("warp_width", "block"): "warp_size",  # one width at every scope ("threads of a block run in warps of 32")
    ("block_threads", "block"): "max_threads_per_block",
    ("register_count", "cu"): "registers_per_compute_unit", ("register_count", ""): "registers_per_compute_unit",
    ("shared_memory", "block"): "smem_per_block_kb", ("shared_memory", "cu"): "smem_per_compute_unit_kb",
    ("shared_memory", ""): "smem_per_compute_unit_kb",
    ("register_file", "cu"): "registers_per_compute_unit", ("register_file", ""): "registers_per_compute_unit",
    ("l2_cache", "chip"): "l2_cache_mb", ("l2_cache", ""): "l2_cache_mb",
    ("device_memory", "chip"): "mem_capacity_gb", ("device_memory", ""): "mem_capacity_gb",
    ("memory_bandwidth", "chip"): "mem_bw_gbps", ("memory_bandwidth", ""): "mem_bw_gbps",
    ("engine_clock", "chip"): "clock_mhz", ("engine_clock", ""): "clock_mhz", ("engine_clock", "cu"): "clock_mhz",
}
#: Quantities whose figure per sub-unit or per partition may be scaled to the field's level when the documents
#: state how many sub-units one compute unit holds (or how many partitions the chip holds): quantity -> the
#: scope the field is at ("cu" or "chip").
SCALABLE: dict[str, str] = {"register_file": "cu", "l2_cache": "chip"}

#: Below this similarity to its best description a label means no quantity (cosine, all-MiniLM-L6-v2).
MIN_FIELD_SIMILARITY = 0.42
#: How far the best quantity must be ahead of the best quantity of another name.
MIN_FIELD_MARGIN = 0.02


def _space() -> ConceptSpace:
    descriptions: dict[str, tuple[str, ...]] = {}
    for name, (_, items) in {**QUANTITIES, **LOOKALIKES}.items():
        descriptions[name] = items
    return ConceptSpace(descriptions)


_SPACE: ConceptSpace | None = None


def space() -> ConceptSpace:
    """The shared `ConceptSpace` of every quantity (built, and its descriptions embedded, once)."""
    global _SPACE
    if _SPACE is None:
        _SPACE = _space()
    return _SPACE


@dataclass(frozen=True)
class Match:
    """The quantity a label names, with its similarity and the runner-up's."""

    quantity: str
    similarity: float
    runner_up: float


def match_quantity(label: str, dimension: str, lookalikes: bool = False) -> Match | None:
    """The quantity of `dimension` that `label` names (a key of `QUANTITIES`), or None when it names a look-alike
    (returned as such with `lookalikes`) or nothing clearly (below `MIN_FIELD_SIMILARITY`, or not `MIN_FIELD_MARGIN`
    ahead of the next quantity).

    Raises:
        StoreError: the embedding model cannot be loaded.
    """
    among = [name for name, (dim, _) in {**QUANTITIES, **LOOKALIKES}.items() if dim == dimension]
    if not among or not label.strip():
        return None
    choice = space().choose(label, among=among, min_similarity=MIN_FIELD_SIMILARITY, min_margin=MIN_FIELD_MARGIN)
    if choice is None or (choice.concept not in QUANTITIES and not lookalikes):
        return None
    return Match(choice.concept, choice.similarity, choice.runner_up)


def is_profile_quantity(name: str) -> bool:
    """True for a quantity the profile holds (not a look-alike)."""
    return name in QUANTITIES


def field_for(quantity: str, scope: str) -> str | None:
    """The profile field that `quantity` at `scope` is (see `FIELD_BY_SCOPE`), or None."""
    return FIELD_BY_SCOPE.get((quantity, scope))
