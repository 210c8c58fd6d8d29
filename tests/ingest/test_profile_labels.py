"""What a number is, read from the grammar around it (`ingest.profile_labels`) and the chip's hierarchy
(`ingest.profile_derive`); real loaders, chunker and MiniLM. The documents are written here for the rules they test,
in vocabularies of their own (no datasheet of the held-out sets)."""

from __future__ import annotations

import pytest

from ingest.profile_extract import extract_profile
from ingest.profile_sources import document_chunks
from ingest.profile_text import sentences


def _profile(tmp_path, chip: str, text: str, name: str = "sheet.md"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return extract_profile(chip, document_chunks(chip, [path])[0])


def test_the_size_of_a_group_of_threads_is_the_warp_width(tmp_path):
    """"crews of 32 threads that step together": the size of a warp, not a count of warps."""
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\nThe core is the ZQ-5's compute unit. The ZQ-5 has 40 cores. "
                                  "Each core runs its threads in crews of 32 threads "
                                  "that step together. A work-group holds up to 512 threads.\n")
    assert p.get("warp_size") == 32 and p.get("max_threads_per_block") == 512
    assert p.get("num_compute_units") == 40


def test_a_verb_before_of_is_no_group(tmp_path):
    """"an engine consisting of 16 lanes of 32 bits" names no warp."""
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\nThe ZQ-5 vector engine is a SIMD engine consisting of 16 lanes of 32 "
                                  "bits.\n")
    assert p.get("warp_size") is None


def test_a_notes_cell_with_its_own_words_is_not_the_row_value(tmp_path):
    """A notes column holding the base clock and the sparse peak beside the row's boost clock and dense peak."""
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\n| Item | ZQ-5 | Remarks |\n|---|---|---|\n"
                                  "| Engine clock | 1.9 GHz | base 1.2 GHz |\n"
                                  "| FP16 matrix (dense) | 500 TFLOPS | with sparsity 1,000 TFLOPS |\n")
    assert p.get("clock_mhz") == pytest.approx(1900) and p.clock_mhz.kind == "stated"
    assert p.peak_tflops["fp16"].value == pytest.approx(500) and p.peak_tflops["fp16"].kind == "stated"


def test_a_bilingual_label_is_read_by_its_english_gloss(tmp_path):
    """A Japanese notes cell "基本クロック (base) 1.2 GHz" is a base clock by its gloss, not the row's engine clock;
    the ideographic full stop ends a sentence."""
    p = _profile(tmp_path, "zq5", "# ZQ-5 仕様\n\n| 項目 | ZQ-5 | 備考 |\n|---|---|---|\n"
                                  "| 動作クロック (Engine clock) | 1.9 GHz | 基本クロック (base) 1.2 GHz |\n"
                                  "| メモリ容量 (Memory capacity) | 64 GB | |\n")
    assert p.get("clock_mhz") == pytest.approx(1900) and p.clock_mhz.kind == "stated"
    assert p.get("mem_capacity_gb") == pytest.approx(64e9 / 2**30)
    assert sentences("演算の単位はスラブです。A slab is the compute unit.") == ["演算の単位はスラブです。",
                                                                           "A slab is the compute unit."]


def test_a_dram_technology_after_a_capacity_names_device_memory(tmp_path):
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\nThe ZQ-5 ships with 48 GB of GDDR7 on a 384-bit bus.\n")
    assert p.get("mem_capacity_gb") == pytest.approx(48e9 / 2**30)


def test_a_participle_clause_is_about_the_sentence_subject(tmp_path):
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\nClocked at up to 2.2 GHz, the ZQ-5 delivers 300 TFLOPS of dense BF16 "
                                  "compute.\n")
    assert p.get("clock_mhz") == pytest.approx(2200)


def test_a_number_in_apposition_and_of_it_across_sentences(tmp_path):
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\nThe ZQ-5 has 40 cores. Each core has 192 KiB of scratchpad memory "
                                  "shared by its threads. A work-group may use the whole scratchpad of its core, "
                                  "192 KiB.\n\nThe QZ-3 library keeps 16 KiB of it for its own use.\n")
    assert (p.get("smem_per_compute_unit_kb"), p.get("smem_per_block_kb")) == (192, 192)
    q = _profile(tmp_path, "zq5", "# ZQ-5\n\nThe ZQ-5 has 40 cores. Each core has 192 KiB of scratchpad memory. "
                                  "One work-group can address at most 160 KiB of it.\n", "of_it.md")
    assert (q.get("smem_per_compute_unit_kb"), q.get("smem_per_block_kb")) == (192, 160)


def test_the_object_of_a_multi_chip_verb_is_not_the_chips(tmp_path):
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\nThe ZQ-5 has 96 GB of HBM3.\n\nThe ZB-8 board carries eight ZQ-5 chips "
                                  "and 768 GB of memory in total.\n")
    assert p.get("mem_capacity_gb") == pytest.approx(96e9 / 2**30) and p.mem_capacity_gb.kind == "stated"


def test_a_series_name_is_about_every_member(tmp_path):
    """"The ZQ-500 series" names the family of the ZQ-520: its statements are the chip's, not another product's."""
    p = _profile(tmp_path, "zq520", "# ZQ-500 series\n\nThe core is the compute unit of the ZQ-500 series. "
                                    "Every ZQ-500 series "
                                    "core runs wavefronts of 64 threads.\n\n"
                                    "| Spec | ZQ-510 | ZQ-520 |\n|---|---|---|\n| Cores | 20 | 40 |\n")
    assert p.get("warp_size") == 64 and p.get("num_compute_units") == 40


def test_two_figures_of_one_sentence_keep_their_own_data_types(tmp_path):
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\nDense BF16 throughput reaches 0.5 PFLOPS and dense FP8 reaches 1 "
                                  "PFLOPS.\n")
    assert (p.peak_tflops["bf16"].value, p.peak_tflops["fp8"].value) == (pytest.approx(500), pytest.approx(1000))


def test_a_sharing_column_names_no_scope(tmp_path):
    """"Shared by: the threads of one work-group" says who shares a per-core memory, not a per-work-group size."""
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\nThe ZQ-5 has 40 cores.\n\n| Memory | Size | Shared by |\n|---|---|---|\n"
                                  "| Scratchpad memory | 128 KiB | the threads of one work-group |\n")
    assert p.get("smem_per_compute_unit_kb") == 128 and p.get("smem_per_block_kb") is None


def test_compute_units_from_the_hierarchy_never_from_a_predecessor(tmp_path):
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\nThe ZQ-5 holds 4 core arrays; each core array contains 20 cores. The "
                                  "core is the compute unit of the ZQ-5.\n\nThe ZQ-3, its predecessor, "
                                  "had 3 core arrays, each with 16 cores.\n")
    assert p.get("num_compute_units") == 80 and p.num_compute_units.kind == "derived"
    assert "20" in p.num_compute_units.source.quote and "ZQ-3" not in p.num_compute_units.source.quote
    q = _profile(tmp_path, "zq5", "# ZQ-5\n\nThe ZQ-3, the previous part, held 3 core arrays; each core array "
                                  "contains 16 cores. The core is the compute unit.\n", "predecessor.md")
    assert q.get("num_compute_units") is None


def test_a_scope_alone_names_no_quantity(tmp_path):
    """"(256 KiB per core)" after a per-sub-unit register file: "per core" says where, the clause says what."""
    p = _profile(tmp_path, "zq5", "# ZQ-5\n\nThe core is the ZQ-5's compute unit. Each core has 96 KiB of shared "
                                  "memory. Each lane group has its own 64 KiB vector register file (256 KiB per core).\n")
    assert p.get("smem_per_compute_unit_kb") == 96
    assert p.get("registers_per_compute_unit") == 256 * 1024 // 4
