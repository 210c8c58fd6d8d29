"""Forms of statement found on the dev v16 datasheets, each checked here on fictional text worded afresh (values by
hand): sibling names shaped like versions ("V5" beside "V4"), a predecessor "that preceded" the chip, sentences
that begin with a number written out in words, SIMD widths that are not products, per-part figures without "each",
comparisons with an unnamed GPU, AsciiDoc description lists, label lines in a chunk, and definitions by
equivalence and by a porting guide's mapping."""

from __future__ import annotations

from ingest.chunker import chunk_sections
from ingest.loaders.asciidoc import asciidoc_sections
from ingest.profile_definitions import _mapped_pairs
from ingest.profile_extract import extract_profile
from ingest.profile_text import chip_tokens, product_scope, products_in, sentences
from knowledge.types import Chunk, Section


def _profile(chip: str, text: str, section: str = "Overview"):
    chunk = Chunk(id="a", text=text, chip=chip, source="d.md", page=None, section=f"Doc > {section}", kind="prose",
                  metadata={})
    return extract_profile(chip, [chunk])


def test_a_sibling_shaped_like_a_version_is_another_product():
    tokens = chip_tokens("brill_v5")
    assert product_scope(["The V4 had 28 engines"], tokens) == "other"
    assert product_scope(["The V5 has 40 engines"], tokens) == "chip"
    assert products_in("over RoCE v2 links") == []  # a protocol version stays a version
    profile = _profile("brill_v5", "The V5 has 40 compute units. Code built for the V4 (28 compute units) must be "
                                   "rebuilt.")
    assert (profile.num_compute_units.kind, profile.num_compute_units.value) == ("stated", 40)


def test_a_predecessor_that_preceded_the_chip_is_not_the_chip():
    profile = _profile("quarry_x20", "The X20 has 96 compute units. The X9 desktop part that preceded the X20 had "
                                     "48 compute units.")
    assert profile.num_compute_units.value == 96 and profile.num_compute_units.kind == "stated"


def test_a_sentence_may_start_with_a_number():
    assert sentences("The rival makes do with 40 megabytes. 6 stacks of 8 GB give 48 GB.") == [
        "The rival makes do with 40 megabytes.", "6 stacks of 8 GB give 48 GB."]
    assert sentences("See fig. 3 cores for the layout.") == ["See fig. 3 cores for the layout."]


def test_simd_and_wave_widths_are_not_products():
    assert products_in("the compiler picks SIMD16 by default; wave64 mode is optional") == []


def test_parts_of_a_size_without_each_are_per_part():
    profile = _profile("loam_l7", "Memory: 96 GB, 6 stacks of 16 GB.\n\nThe L7 has 64 GB/s links.", "Memory")
    assert profile.mem_capacity_gb.value is not None
    assert abs(profile.mem_capacity_gb.value * 2**30 - 96e9) < 1e6


def test_a_comparison_with_an_unnamed_gpu_is_not_the_chip():
    profile = _profile("tern_t3", "Compared with a GPU whose 132 SMs share a 50 MB L2, the T3 keeps 300 MB of "
                                  "operands on chip.")
    assert profile.l2_cache_mb.value is None and profile.num_compute_units.value is None


def test_consecutive_asciidoc_description_items_are_separate():
    text = "== Rates\n\n[horizontal]\nINT8:: 90 TOPS\nFP16:: 45 TFLOPS\nFP32:: 6 TFLOPS\n"
    assert [s.text for s in asciidoc_sections(text, "r.adoc")] == ["INT8: 90 TOPS", "FP16: 45 TFLOPS",
                                                                   "FP32: 6 TFLOPS"]


def test_label_lines_stay_paragraphs_of_their_own_in_a_chunk():
    secs = [Section(text=t, source="d.md", page=None, heading_path=("Doc", "Rates"))
            for t in ("INT8: 90 TOPS", "FP16: 45 TFLOPS", "All rates are dense.")]
    [chunk] = chunk_sections(secs, "z9")
    assert chunk.text.split("\n\n") == ["INT8: 90 TOPS", "FP16: 45 TFLOPS", "All rates are dense."]


def test_definitions_by_equivalence_and_by_mapping():
    profile = _profile("perch_p6", "A weave cell is the unit that the scheduler fills with one job; it is the P6 "
                                   "equivalent of a GPU's streaming multiprocessor. The P6 has 40 weave cells.")
    assert profile.compute_unit_name == "weave cell" and profile.num_compute_units.value == 40
    assert _mapped_pairs("Code ported from OpenCL maps a work-group to a job, a sub-group to a strand and a "
                         "compute unit to a weave cell.") == [("work-group", "job"), ("sub-group", "strand"),
                                                              ("compute unit", "weave cell")]


def test_the_unit_work_is_placed_on_is_the_compute_unit():
    profile = _profile("sorrel_k3", "A lattice cell is a SIMD pipeline of four stages. The lattice cell is the unit on "
                                    "which the compiler places work. The K3 has 96 lattice cells.")
    assert profile.compute_unit_name.startswith("lattice cell") and profile.num_compute_units.value == 96
    profile = _profile("ember_e4", "Each block runs to completion on one Forge Core. The E4 has 48 Forge Cores.")
    assert profile.compute_unit_name == "Forge Core" and profile.num_compute_units.value == 48


def test_a_label_may_carry_an_abbreviation():
    from ingest.loaders.label_lines import split_line

    assert split_line("Max. core clock ............... 1.8 GHz") == ("Max. core clock", "1.8 GHz")
    assert split_line("It runs. Then it stops: 4 times") is None


def test_one_figure_for_two_data_types_in_a_label_line():
    from ingest.profile_text import clauses

    assert clauses("FP16 and BF16: 52 TFLOPS") == ["FP16 and BF16: 52 TFLOPS"]
    assert clauses("The K2 and the K4 have 40 cores") == ["The K2", "the K4 have 40 cores"]  # two subjects stay apart
    profile = _profile("wren_w3", "INT8: 104 TOPS\n\nFP16 and BF16: 52 TFLOPS\n\nFP32: 6.5 TFLOPS", "Rates")
    assert profile.peak_tflops["fp16"].value == 52 and profile.peak_tflops["bf16"].value == 52


def test_a_generic_acronym_of_shared_memory_names_it():
    profile = _profile("pipit_p1", "The P1 has 24 compute units. A single work-group may allocate at most 48 KB of "
                                   "SLM.")
    assert profile.smem_per_block_kb.value == 48


def test_a_last_level_cache_is_the_l2_unless_a_second_or_third_level_is_named():
    alone = _profile("grebe_g2", "The G2 has 40 compute units with 64 KB of L1 each. The fabric cache is a 24 MB "
                                 "last-level cache shared by all compute units.")
    assert alone.l2_cache_mb.value == 24
    beside = _profile("grebe_g2", "The G2 has 40 compute units, a 4 MB L2 cache and a 64 MB last-level cache.")
    assert beside.l2_cache_mb.value == 4
