"""The chip's column of a multi-product or multi-configuration table (`ingest.profile_columns`), statements about
other products (`ingest.profile_text.comparison_section`), scope columns of tables, "N Xs of M Ys" hierarchies and
the programming model's "a kernel runs on one X" (`ingest.profile_definitions`). Real loaders, chunker and MiniLM.
The documents are written here in a vocabulary of their own (groves, petals, furrows), not from any datasheet set;
every expected value is computed by hand in the test."""

from __future__ import annotations

import pytest

from ingest.profile_columns import described_phrases, header_score
from ingest.profile_extract import extract_profile_with_report
from ingest.profile_sources import document_chunks

GIB = 2**30


def _profile(tmp_path, chip: str, text: str, name: str = "sheet.md", product: str | None = None):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return extract_profile_with_report(chip, document_chunks(chip, [path])[0], product=product)[0]


def test_the_onboarded_products_column_of_a_family_table(tmp_path):
    """Three products as columns; the one named exactly (``--product``) wins over its longer-named sibling."""
    text = ("# Wren accelerators\n\nThe Wren W5 and the Wren W5 Ultra share one die.\n\n"
            "| Per device | Wren W3 | Wren W5 | Wren W5 Ultra |\n|---|---|---|---|\n"
            "| HBM capacity | 24 GiB | 64 GiB | 128 GiB |\n| HBM bandwidth | 0.9 TB/s | 1.6 TB/s | 3.2 TB/s |\n")
    p = _profile(tmp_path, "wren_w5", text, product="Wren W5")
    assert p.get("mem_capacity_gb") == pytest.approx(64)  # 64 GiB in GiB
    assert p.get("mem_bw_gbps") == pytest.approx(1600)  # 1.6 TB/s = 1600 GB/s
    assert p.mem_bw_gbps.kind == "stated" and "1.6 TB/s" in p.mem_bw_gbps.source.quote


def test_the_configuration_the_document_says_it_describes(tmp_path):
    """Two memory configurations; "this datasheet describes the compact board option" picks its column."""
    text = ("# Furrow F2 datasheet\n\nThis datasheet describes the compact board option.\n\n"
            "| Memory | Compact board | Tower board |\n|---|---|---|\n"
            "| DRAM capacity | 8 GB | 32 GB |\n| DRAM bandwidth | 100 GB/s | 250 GB/s |\n")
    p = _profile(tmp_path, "furrow_f2", text)
    assert p.get("mem_capacity_gb") == pytest.approx(8e9 / GIB)  # GB is decimal
    assert p.get("mem_bw_gbps") == pytest.approx(100)


def test_header_scores_need_one_strictly_best_column():
    said = described_phrases(["Figures elsewhere in this sheet are for the quiet fan model."])
    assert said == ["the quiet fan model"]
    assert header_score("Quiet fan model", "", said) > header_score("Loud fan model", "", said)
    assert header_score("Wren W5", "Wren W5", []) > header_score("Wren W5 Ultra", "Wren W5", [])


def test_a_comparison_section_and_a_replaced_product_are_not_the_chip(tmp_path):
    """Sentences under "Versus ..." that name no product, and "the Z1 that the Z3 replaces had ...", are about
    other products; the chip's own clock stays."""
    text = ("# Zorn Z3 brief\n\n## Clocks\n\nThe Zorn Z3 has a peak engine clock of 1,300 MHz.\n\n"
            "## Versus other accelerators\n\nA rival processor offers 200 cores and 3,000 MHz clocks.\n\n"
            "## History\n\nThe Zorn Z1 that the Z3 replaces had a 900 MHz clock.\n")
    p = _profile(tmp_path, "zorn_z3", text)
    assert p.get("clock_mhz") == 1300
    assert p.get("num_compute_units") is None


def test_n_groups_of_m_units_is_a_derived_chip_count(tmp_path):
    """"5 groves of 6 petals": 5 x 6 = 30 petals, derived; neither 5 nor 6 is the chip's count; a grove that
    holds petals is not itself the compute unit even when a definition makes it sound like a processor."""
    text = ("# Zorn Z3\n\n- **Petal**: the compute unit of the Zorn architecture.\n"
            "- **Grove**: six petals with their shared grove cache, a processor cluster.\n\n"
            "## Layout\n\nThe Z3 is built as 5 groves of 6 petals.\n")
    p = _profile(tmp_path, "zorn_z3", text)
    assert p.compute_unit_name == "Petal"
    assert p.get("num_compute_units") == 30
    assert p.num_compute_units.kind == "derived"


def test_a_scope_column_keeps_a_per_group_count_out_of_the_chip_count(tmp_path):
    """``| Petals | grove | 6 |`` under a "Granularity" column: 6 petals per grove is not the chip's count."""
    text = ("# Zorn Z3\n\n- **Petal**: the compute unit of the Zorn architecture.\n\n## Resources\n\n"
            "The Zorn Z3 resources, counted at their own level.\n\n"
            "| Resource | Granularity | Amount |\n|---|---|---|\n| Groves | whole chip | 5 |\n"
            "| Petals | grove | 6 |\n| Scratchpad memory | petal | 96 KiB |\n")
    p = _profile(tmp_path, "zorn_z3", text)
    assert p.get("num_compute_units") in (None, 30)  # never the per-grove 6 nor the 5 groves
    assert p.get("smem_per_compute_unit_kb") == 96


def test_a_kernel_compiled_for_one_x_names_the_compute_unit(tmp_path):
    text = ("# Loom L1 notes\n\nA Loom L1 device is a set of weavers. A kernel is compiled for one weaver; the "
            "device runs one kernel instance per weaver.\n")
    p = _profile(tmp_path, "loom_l1", text)
    assert p.compute_unit_name == "weaver"


def test_a_restructuredtext_glossary_entry_keeps_its_term(tmp_path):
    """docutils keeps a definition-list term in its own node; the loader writes ``Term: definition``."""
    text = ("Loom L1 guide\n=============\n\nTerms\n-----\n\nShuttle core\n    The programmable unit of the Loom "
            "architecture. Kernels are written for it.\n\nWarp beam\n    The on-chip network of the Loom.\n\n"
            "Layout\n------\n\nThe Loom L1 has 12 Shuttle cores; the Warp beam links every Shuttle core.\n")
    p = _profile(tmp_path, "loom_l1", text, name="guide.rst")
    assert p.compute_unit_name == "Shuttle core"
    assert "programmable unit" in p.compute_unit_name_source.quote
