"""A document's own vocabulary: definitions by their syntax, concepts by the real MiniLM (no word lists of vendors).

Every term here is invented for the test; none appears in the code.
"""

from __future__ import annotations

import hashlib

import pytest

from ingest.profile_definitions import is_abbreviation
from ingest.profile_extract import merge_windows
from ingest.profile_glossary import build_glossary
from ingest.profile_terms import counted_terms, singular, term_key
from knowledge.types import Chunk


def glossary_of(*texts: str, kind: str = "prose"):
    chunks = [Chunk(id=hashlib.sha256(t.encode()).hexdigest()[:16], text=t, chip="q", source=f"d{i}.md", kind=kind,
                    metadata={"chunk_index": i}) for i, t in enumerate(texts)]
    return build_glossary(merge_windows(chunks))


def test_singular_and_keys():
    assert [singular(w) for w in ("cores", "SPUs", "memories", "glass", "SIMD", "bus")] == \
        ["core", "SPU", "memory", "glass", "SIMD", "bus"]
    assert term_key("the *Vector Cores*") == "vector core" and term_key("Basalt's tile") == "basalt tile"
    assert is_abbreviation("SPUs", "stream processing units") and not is_abbreviation("(s)", "tiles")
    assert [(n, p) for n, p, _ in counted_terms("built from 48 vector cores, 128 KB of SRAM and four lanesets")] == \
        [(48, "vector cores"), (4, "lanesets")]


@pytest.mark.parametrize("text", [
    "The Q9 is built from 40 weaver cores. A weaver core (the compute unit of the Q9) runs work-groups.",
    "The Q9 has 40 weaver cores. A weaver core is the Q9's compute unit: each work-group runs on one.",
    "Q9 documentation calls its compute unit a weaver core. The Q9 has 40 weaver cores.",
    "All parts use the same compute unit, the weaver core: a scheduler and local memory. There are 40 weaver cores.",
    "It contains 40 weaver cores, each a self-contained processor with its own local memory and vector units.",
])
def test_the_compute_unit_is_found_from_its_definition(text):
    glossary = glossary_of(text)
    unit = glossary.compute_unit()
    assert unit is not None and unit.name.lower() == "weaver core" and unit.defined
    assert glossary.level("weaver cores") == "cu" and glossary.level("weaver core") == "cu"
    assert "compute unit" in glossary.rewrite("Scratch per weaver core")


def test_a_glossary_table_defines_every_kind_of_term():
    rows = ["Term: Loom | Definition: The compute unit of the part: an instruction sequencer, four SIMD quads and SRAM",
            "Term: Quad | Definition: A SIMD unit of 8 lanes inside a loom",
            "Term: Skein | Definition: 32 threads that a loom issues together (4 quads x 8 lanes)",
            "Term: Weft | Definition: A group of skeins placed on one loom; its skeins share the loom SRAM",
            "Resource: Looms | Q9: 160"]
    glossary = glossary_of(*rows, kind="table_row")
    assert {k: t.concept for k, t in glossary.terms.items() if k in ("loom", "quad", "skein", "weft")} == \
        {"loom": "compute_unit", "quad": "sub_unit", "skein": "warp", "weft": "block"}
    assert glossary.rewrite("Skein width") == "warp width"
    assert glossary.rewrite("Threads per weft") == "Threads per thread block"
    assert glossary.level("quad") == "sub"


def test_aliases_abbreviations_and_shortened_references():
    glossary = glossary_of("The Q9 has 20 compute engines, each a self-contained processor with a vector block. "
                           "Engines run at up to 1 GHz; one work-group runs per engine.",
                           "A wave group ('ripple') is 64 lanes that execute one instruction in lock step. A "
                           "work-group holds up to 16 wave groups.",
                           "It has 8 stream weaving units (SWUs) and each SWU has 4 SIMD units.")
    assert glossary.concept("engine") == "compute_unit"  # "per engine" refers to "compute engines"
    assert glossary.term("ripple") is glossary.term("wave group") and glossary.concept("ripple") == "warp"
    assert glossary.aliases["swu"] == "stream weaving unit"


def test_containment_gives_sub_units_and_partitions():
    glossary = glossary_of("The Q9 is organized as 6 bolt arrays, each with 12 weaver cores. A weaver core is the "
                           "Q9's compute unit. Each weaver core has 4 SIMD units.")
    assert glossary.level("bolt array") == "part" and glossary.chip_counts["bolt array"][0] == 6
    assert glossary.per_parent("SIMD units", glossary.compute_unit_keys())[0] == 4


def test_structure_names_the_compute_unit_when_no_definition_does():
    """The unit the chip holds most of, each with on-chip memory, is the compute unit (its name as written)."""
    glossary = glossary_of("- 96x Fennel tile", "Each Fennel tile has 1024 KiB of scratchpad RAM.",
                           "There are 2 routers; each router has 4 KiB of buffers.")
    unit = glossary.compute_unit()
    assert unit is not None and unit.name == "Fennel tile" and not unit.defined


@pytest.mark.parametrize("issue", ["Each lattice slab issues two warp instructions per clock.",
                                   "Each lattice slab schedules up to 16 wavefronts at a time."])
def test_the_unit_that_issues_warps_is_the_compute_unit_when_no_definition_says(issue):
    """Counted at chip scope and issuing warps (a warp or wavefront instruction): the compute unit. A unit that
    issues something else (DMA descriptors) is not."""
    glossary = glossary_of("The Vireo-2 has 56 lattice slabs and 3 copy engines.", issue,
                           "Each copy engine issues DMA descriptors from a ring.")
    unit = glossary.compute_unit()
    assert unit is not None and unit.name == "lattice slab" and not unit.defined
    assert glossary.level("lattice slabs") == "cu"
    assert glossary_of("The Vireo-2 has 56 lattice slabs and 3 copy engines.",
                       "Each copy engine issues DMA descriptors from a ring.").compute_unit() is None


def test_generic_names_are_not_redefined_and_noise_is_not_a_term():
    glossary = glossary_of("Wavefronts are 32 work-items wide. The read is a transfer of 16 bits. "
                           "The five cores are called RISCV B, RISCV T0 and RISCV T1.")
    assert glossary.concept("wavefront") == "warp"  # the generic name, not "32 work-items" (thread)
    assert glossary.term("read") is None and glossary.term("riscv") is None and glossary.compute_unit() is None


def test_a_sized_term_is_a_memory_defined_by_its_relative_clause():
    glossary = glossary_of("Each core has 64 KB of weave store that the threads of one work-group share. "
                           "A work-group can use the whole weave store of its core.")
    assert glossary.concept("weave store") == "shared_memory"
    assert glossary.rewrite("Weave store per core") == "shared memory per core"
