"""Vendor vocabulary defined the ways reference manuals define it: reStructuredText definition lists with grid tables,
"- Term. Definition." glossary items, equivalences ("corresponds to a work-group"), a cache defined as the
second-level one, and a withdrawn table (fictional Quillmere Q5 and Osier O8 documents; every expected value by
hand)."""

from __future__ import annotations

from pathlib import Path

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_definitions import definitions_in
from ingest.profile_extract import extract_profile_with_report
from ingest.profile_supersede import is_old_figure
from ingest.profile_terms import Unit, text_units
from knowledge.types import Chunk

_RST = """=============================
Quillmere Q5 Reference Manual
=============================

Glossary
========

Pixel engine cluster (PEC)
   The compute unit of the Quillmere Q5. Each PEC holds two lane bundles and its L1 scratchpad.

Lane bundle
   Eight lanes that execute one instruction together; a lane bundle is the Q5's equivalent of a warp.

Burst
   A set of work-items placed on one PEC. A burst corresponds to a thread block in CUDA terms.

L1 scratchpad
   The software-managed memory of a PEC, addressed directly by the lanes of a burst.

Mesh cache
   The second-level cache shared by all PECs.

Limits
======

+-------------------------------+-------------+
| Item                          | Q5          |
+===============================+=============+
| Pixel engine clusters         | 20          |
+-------------------------------+-------------+
| Lanes per lane bundle         | 8           |
+-------------------------------+-------------+
| Work-items per burst (max)    | 512         |
+-------------------------------+-------------+
| L1 scratchpad per PEC         | 192 KiB     |
+-------------------------------+-------------+
| L1 scratchpad per burst (max) | 96 KiB      |
+-------------------------------+-------------+
| Mesh cache (total)            | 6 MiB       |
+-------------------------------+-------------+
| FP16 peak                     | 38.4 TFLOPS |
+-------------------------------+-------------+

Errata
======

The preliminary brief's throughput table (41.0 TFLOPS FP16, 10.2 TFLOPS FP32) no longer applies.
"""

_MD = """# Osier O8 product brief

Osier names the parts of the O8 its own way:

- Weave unit. The weave unit is the O8's compute unit: the block to which the runtime assigns shuttles.
- Shuttle. The O8 equivalent of a work-group: threads that run on one weave unit and share its loom memory.
- Loom memory. The software-managed SRAM of a weave unit that a shuttle stages operands in.

| Specification | O8 | Notes |
|---|---|---|
| Weave units | 40 | four quadrants of 10 |
| Threads per shuttle | 512 | resident per weave unit: up to 2,048 |
| Loom memory per weave unit | 128 KiB | |
| Loom memory per shuttle | 64 KiB | |

A weave unit runs four strands side by side, 128 lanes in all. A shuttle of 512 threads fills a weave unit
(4 x 32 lanes x 4).
"""


def _profile(tmp_path: Path, name: str, text: str, chip: str):
    path = tmp_path / name
    path.write_text(text)
    doc = load_document(path)
    chunks = chunk_sections(doc.sections, chip, title=doc.title, metadata={})
    return extract_profile_with_report(chip, chunks)[0]


def _unit(text: str) -> Unit:
    return Unit(text, Chunk(id="x", text=text, chip="c", source="s.md"))


def test_a_term_with_its_abbreviation_and_a_name_with_a_digit_are_defined():
    defs, aliases = definitions_in(_unit("Pixel engine cluster (PEC): The compute unit of the Quillmere Q5."),
                                   lambda _: 0)
    assert [d.term for d in defs] == ["Pixel engine cluster"] and ("Pixel engine cluster", "PEC") in aliases
    defs, _ = definitions_in(_unit("L1 scratchpad: The software-managed memory of a PEC, addressed directly."),
                             lambda _: 0)
    assert any(d.head == "software-managed memory" for d in defs)
    defs, _ = definitions_in(_unit("PCIe 5.0: sixteen lanes to the host processor"), lambda _: 0)
    assert defs == []  # a number alone before the colon: a key with a value, not a term


def test_an_equivalence_names_the_generic_thing():
    defs, _ = definitions_in(_unit("A burst corresponds to a thread block in CUDA terms."), lambda _: 0)
    assert [(d.term, d.head) for d in defs] == [("burst", "thread block")]
    defs, _ = definitions_in(_unit("Shuttle: The O8 equivalent of a work-group: threads that run on one unit."),
                             lambda _: 0)
    assert [(d.term, d.head) for d in defs] == [("Shuttle", "work-group")]


def test_a_glossary_list_item_keeps_its_term_with_its_definition():
    text = "Osier names its parts: - Weave unit. The weave unit is the compute unit. (It is not a core.) - Loom. " \
           "The SRAM of a weave unit."
    units = [u.text for u in text_units([(Chunk(id="x", text=text, chip="c", source="s.md"), ())])]
    assert "Loom: The SRAM of a weave unit." in units
    assert "Weave unit: The weave unit is the compute unit." in units


def test_a_withdrawn_table_gives_no_figures():
    sentence = "The preliminary brief's throughput table (41.0 TFLOPS FP16, 10.2 TFLOPS FP32) no longer applies."
    clause = "The preliminary brief's throughput table (41.0 TFLOPS FP16"
    assert is_old_figure(clause, clause.index("41.0"), clause.index("41.0") + 11, sentence)
    assert not is_old_figure(clause, clause.index("41.0"), clause.index("41.0") + 11, clause)


def test_a_reference_manual_in_restructuredtext(tmp_path):
    """20 PECs; 8-lane bundles; 512 work-items per burst; L1 scratchpad 192 KiB per PEC and 96 KiB per burst;
    the mesh cache (the second-level one) 6 MiB; FP16 38.4 TFLOPS (41.0 was withdrawn)."""
    profile = _profile(tmp_path, "q5-reference.rst", _RST, "quillmere_q5")
    assert profile.compute_unit_name == "Pixel engine cluster (PEC)"
    assert profile.num_compute_units.value == 20
    assert profile.warp_size.value == 8
    assert profile.max_threads_per_block.value == 512
    assert profile.smem_per_compute_unit_kb.value == 192
    assert profile.smem_per_block_kb.value == 96
    assert profile.l2_cache_mb.value == 6
    assert profile.peak_tflops["fp16"].value == 38.4 and profile.peak_tflops["fp16"].kind == "stated"


def test_a_product_brief_with_glossary_items(tmp_path):
    """40 weave units (not the 4 quadrants); 512 threads per shuttle (not the 2,048 resident per unit); loom memory
    128 KiB per unit and 64 KiB per shuttle; no warp width from "128 lanes in all" or "4 x 32 lanes x 4"."""
    profile = _profile(tmp_path, "o8-brief.md", _MD, "osier_o8")
    assert profile.num_compute_units.value == 40 and profile.num_compute_units.kind == "stated"
    assert profile.max_threads_per_block.value == 512 and profile.max_threads_per_block.kind == "stated"
    assert profile.smem_per_compute_unit_kb.value == 128
    assert profile.smem_per_block_kb.value == 64
    assert profile.warp_size.value is None



_LISTING = """# Rushmere R6 guide

An *anvil* is the R6's compute unit. Each anvil has sixteen lanes that run one instruction together; Rushmere
calls the sixteen lanes of an anvil a *beat*, and it is the R6's counterpart of a warp.

A *forge group* is all the threads that run together on one anvil and share its SRAM: the R6's work-group.

| Resource | R6 |
|---|---|
| Anvils | 30 |
| Beat | 16 PEs |
| Threads per forge group (max) | 384 |
"""


def test_a_closing_apposition_and_a_counterpart_name_the_generic_thing(tmp_path):
    """"...: the R6's work-group" and ", and it is the R6's counterpart of a warp" define the terms; a beat's
    size is counted in its members ("16 PEs"): warp 16, 384 threads per forge group, 30 anvils."""
    defs, _ = definitions_in(_unit("A forge group is all the threads that run together on one anvil and share "
                                   "its SRAM: the R6's work-group."), lambda _: 0)
    assert ("forge group", "work-group") in [(d.term, d.head) for d in defs]
    profile = _profile(tmp_path, "r6-guide.md", _LISTING, "rushmere_r6")
    assert profile.warp_size.value == 16
    assert profile.max_threads_per_block.value == 384
    assert profile.num_compute_units.value == 30


_ONE_CACHE = """# Tarrow T2 brief

- Mesh core. The compute unit of the T2.
- Hub cache. The chip-level cache in front of device memory, shared by all mesh cores.

| Item | T2 |
|---|---|
| Mesh cores | 12 |
| Hub cache | 8 MiB |
"""


def test_the_one_chip_wide_cache_of_a_document_without_cache_levels_is_the_l2(tmp_path):
    """8 MiB of hub cache is the T2's L2; with an "L1" named anywhere nothing is assumed."""
    assert _profile(tmp_path, "t2-brief.md", _ONE_CACHE, "tarrow_t2").l2_cache_mb.value == 8
    with_l1 = _ONE_CACHE + "\nEach mesh core has its own 32 KiB L1 data cache.\n"
    assert _profile(tmp_path, "t2-brief-l1.md", with_l1, "tarrow_t2").l2_cache_mb.value is None


_UNDEFINED_UNIT = """# Fenwick F9 specification

| Parameter | Fenwick F9 |
|---|---|
| Stream engines (SEs) | 24 |
| Local SRAM per SE | 128 KiB |
| Register file per SE | 64 KiB |

For comparison, a rival part offers 100 compute units.
"""


def test_a_table_that_counts_a_unit_and_gives_memory_per_unit_names_the_compute_unit(tmp_path):
    """"Stream engines (SEs) | 24" counts the chip's SEs, "Local SRAM per SE" gives each SE memory: the SE is the
    compute unit (not the "compute units" of the rival): 24 units, 128 KiB each, 64 KiB = 16,384 registers."""
    profile = _profile(tmp_path, "f9-spec.md", _UNDEFINED_UNIT, "fenwick_f9")
    assert profile.compute_unit_name == "Stream engine (SE)"
    assert profile.num_compute_units.value == 24
    assert profile.smem_per_compute_unit_kb.value == 128
    assert profile.registers_per_compute_unit.value == 64 * 1024 / 4


_HIERARCHY = """# Pembrey P7 overview

The pod is the compute unit of the P7: a weft (the P7's name for a thread block) always runs on one pod, and the
pod's LDM is the memory that the threads of a weft share.

- Pods: 32
- LDM (local data memory): 192 KiB, shared by the pod's cores

A weft holds at most 384 threads.
"""


def test_a_name_for_and_a_later_clause_define_terms(tmp_path):
    """"the P7's name for a thread block" makes the weft the work-group; the clause "the pod's LDM is the memory
    that the threads of a weft share" makes LDM (and its long form) shared memory: 192 KiB per pod, 384 threads."""
    defs, _ = definitions_in(_unit("A shuttle (the O8's name for a thread block) runs on one unit."), lambda _: 0)
    assert ("shuttle", "thread block") in [(d.term.lower(), d.head) for d in defs]
    profile = _profile(tmp_path, "p7-overview.md", _HIERARCHY, "pembrey_p7")
    assert profile.num_compute_units.value == 32
    assert profile.smem_per_compute_unit_kb.value == 192
    assert profile.max_threads_per_block.value == 384
