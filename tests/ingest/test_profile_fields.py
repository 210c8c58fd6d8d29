"""What a number states: its unit's dimension, the meaning of its label (real MiniLM), and its scope."""

from __future__ import annotations

import hashlib

import pytest

from ingest.profile_extract import extract_profile
from ingest.profile_fields import field_for, match_quantity
from knowledge.types import Chunk


@pytest.mark.parametrize(("label", "dimension", "quantity"), [
    ("Maximum threads per thread block", "count", "block_threads"),
    ("warp width", "count", "warp_width"),
    ("Wavefront Size", "count", "warp_width"),
    ("Scratchpad (shared memory) per compute unit", "bytes", "shared_memory"),
    ("Register file", "bytes", "register_file"),
    ("HBM capacity", "bytes", "device_memory"),
    ("DRAM bandwidth", "bytes_per_s", "memory_bandwidth"),
    ("Boost clock", "hz", "engine_clock"),
    # look-alikes of the same dimension are not profile quantities
    ("L1 Instruction Cache", "bytes", None), ("L3 Cache", "bytes", None), ("Base clock", "hz", None),
    ("NVLink-class link bandwidth", "bytes_per_s", None), ("Matrix cores", "count", None),
    ("Stream processors", "count", None), ("Memory clock", "hz", None),
])
def test_labels_match_quantities_of_their_dimension(label, dimension, quantity):
    match = match_quantity(label, dimension)
    assert (match.quantity if match else None) == quantity


def test_the_unit_decides_the_dimension():
    assert match_quantity("Memory bandwidth", "bytes") is None or match_quantity(
        "Memory bandwidth", "bytes").quantity != "memory_bandwidth"
    assert match_quantity("HBM capacity", "hz") is None


def test_scope_makes_a_quantity_a_field():
    assert field_for("shared_memory", "block") == "smem_per_block_kb"
    assert field_for("shared_memory", "cu") == field_for("shared_memory", "") == "smem_per_compute_unit_kb"
    assert field_for("block_threads", "cu") is None  # resident threads per compute unit: not in the profile
    assert field_for("l2_cache", "part") is None and field_for("device_memory", "multi") is None


def chunk(text: str, kind: str = "prose", source: str = "q.md") -> Chunk:
    return Chunk(id=hashlib.sha256(f"{source}{text}".encode()).hexdigest()[:16], text=text, chip="q9",
                 source=source, kind=kind)


def test_scopes_in_sentences():
    text = chunk("The Q9 has 30 compute units. Each compute unit has 96 KB of LDS; a work-group may allocate up "
                 "to 48 KB of it and holds up to 512 work-items. Each stack holds 16 GB, for 64 GB of HBM3 in all. "
                 "An eight-Q9 server provides 512 GB of HBM3.")
    p = extract_profile("q9", [text])
    assert (p.get("num_compute_units"), p.get("smem_per_compute_unit_kb"), p.get("smem_per_block_kb"),
            p.get("max_threads_per_block")) == (30, 96, 48, 512)
    assert p.get("mem_capacity_gb") == pytest.approx(64e9 / 2**30)  # not the stack's, not the server's


def test_per_sub_unit_figures_are_scaled_only_from_stated_counts():
    stated = chunk("The Q9 is built from 8 bolt arrays, each with 10 weaver cores (the compute units of the Q9). "
                   "Each weaver core has 4 SIMD units, and each SIMD unit has its own 32 KB register file. "
                   "Each bolt array has a 2 MB L2 slice.")
    p = extract_profile("q9", [stated])
    regs, l2 = p.registers_per_compute_unit, p.l2_cache_mb
    assert regs.value == 4 * 32 * 1024 / 4 and regs.kind == "derived" and "4 SIMD unit" in regs.formula
    assert l2.value == 16 and l2.kind == "derived" and "8 bolt array" in l2.formula
    unknown = chunk("Each weaver core (the compute unit of the Q9) has SIMD units, and each SIMD unit has its own "
                    "32 KB register file. Each bolt array has a 2 MB L2 slice.")
    q = extract_profile("q9", [unknown])
    assert q.get("registers_per_compute_unit") is None and q.get("l2_cache_mb") is None  # counts unknown


def test_predecessors_competitors_and_comparisons_are_not_the_chip():
    text = chunk("The previous-generation Q8 had 32 weaver cores and 16 MB of L2. Competing GPUs offer 132 SMs and "
                 "50 MB of L2 cache. The Q9 has 40 weaver cores (the compute units of the Q9), up from 32 in the Q8, "
                 "and a 24 MB L2 cache.")
    p, = (extract_profile("q9", [text]),)
    assert p.get("num_compute_units") == 40 and p.get("l2_cache_mb") == 24
    assert p.num_compute_units.kind == "stated" and p.l2_cache_mb.kind == "stated"
