"""Group sizes read as the warp width (`ingest.profile_groups`), and bilingual headers and bound words in cells;
real loaders, chunker and MiniLM. The documents are written here, in vocabularies of their own (no datasheet of
the held-out sets)."""

from __future__ import annotations

from ingest.profile_extract import extract_profile
from ingest.profile_sources import document_chunks


def _profile(tmp_path, chip: str, text: str, name: str = "sheet.md"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return extract_profile(chip, document_chunks(chip, [path])[0])


def test_a_group_counted_in_lanes_is_a_warp(tmp_path):
    """"flocks of 32 lanes": lanes are SIMD hardware, so the group is the warp, whatever its name."""
    p = _profile(tmp_path, "qv7", "# QV-7\n\nThe QV-7 has 24 cells. Threads are issued in flocks of 32 lanes. "
                                  "A work-group holds up to 1024 threads.\n")
    assert p.get("warp_size") == 32 and p.get("max_threads_per_block") == 1024


def test_a_bounded_group_is_no_warp(tmp_path):
    """"parcels of up to 512 threads": a limit is the work-group's, never a warp width."""
    p = _profile(tmp_path, "qv7", "# QV-7\n\nWork arrives in parcels of up to 512 threads.\n")
    assert p.get("warp_size") is None


def test_a_unit_counted_in_lanes_is_no_warp(tmp_path):
    """"Each SIMD unit has 16 lanes" with 64-thread wavefronts: the unit's width is not the warp."""
    p = _profile(tmp_path, "qv7", "# QV-7\n\nA wavefront is 64 threads. Each SIMD unit has 16 lanes.\n")
    assert p.get("warp_size") == 64


def test_bilingual_plural_header_and_bound_cell(tmp_path):
    """"Zellen / Cells" reads as "Cells" (an English plural is as known as its singular), and "at most 96 KB" in a
    cell is a bound of what the row names, not another quantity."""
    p = _profile(tmp_path, "qv7", "# QV-7 / QV-7\n\n| Modell / Model | Zellen / Cells | Takt / Clock |\n|---|---|---|\n"
                                  "| QV-7 | 24 | 1,5 GHz / 1.5 GHz |\n\n"
                                  "- Zellspeicher je Zelle: 128 KB / Cell memory per cell: 128 KB\n"
                                  "- Zellspeicher je Arbeitsgruppe: höchstens 96 KB / Cell memory per work-group: "
                                  "at most 96 KB\n")
    assert p.get("num_compute_units") == 24 and p.get("clock_mhz") == 1500
    assert p.get("smem_per_block_kb") == 96


def test_a_part_figure_with_each_is_not_the_chip_total(tmp_path):
    """"128 GB of device memory (8 banks of 16 GB each)": 16 GB is one bank's, no conflict with 128 GB."""
    p = _profile(tmp_path, "qv7", "# QV-7\n\nThe QV-7 carries 128 GB of device memory (8 banks of 16 GB each).\n")
    assert p.get("mem_capacity_gb") == 128 * 1e9 / 2**30


def test_what_the_units_hold_together_is_not_one_units(tmp_path):
    """"Together the cells hold 6 MiB of scratch": the chip's total, not a per-unit size."""
    p = _profile(tmp_path, "qv7", "# QV-7\n\nThe QV-7 has 48 cells. Each cell owns 128 KiB of shared memory. "
                                  "Together the cells hold 6 MiB of shared memory.\n")
    assert p.get("smem_per_compute_unit_kb") == 128


def test_threads_of_several_blocks_are_not_one_blocks_limit(tmp_path):
    """"a group of 8 thread blocks may hold up to 8,192 threads": not the per-block maximum."""
    p = _profile(tmp_path, "qv7", "# QV-7\n\nA thread block holds at most 1,024 threads; a group of 8 thread "
                                  "blocks may therefore hold up to 8,192 threads.\n")
    assert p.get("max_threads_per_block") == 1024


def test_a_relative_clause_naming_the_chip_does_not_make_the_predecessor_its(tmp_path):
    """"The QV-5, which the QV-7 replaces, had 16 cells": the QV-5's figures, not the QV-7's."""
    p = _profile(tmp_path, "qv7", "# QV-7\n\nThe QV-7 has 24 compute units. The QV-5, which the QV-7 replaces, had "
                                  "16 compute units.\n")
    assert p.get("num_compute_units") == 24


def test_a_key_line_naming_the_chip_keeps_its_key(tmp_path):
    """"- Cells on the QV-7: 24" (a key that names the product) still says what 24 counts."""
    p = _profile(tmp_path, "qv7", "# QV-7\n\n- Cell: the QV-7's compute unit; each work-group runs on one cell.\n"
                                  "- Cells on the QV-7: 24\n")
    assert p.get("num_compute_units") == 24
