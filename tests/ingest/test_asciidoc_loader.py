"""AsciiDoc documents (fictional Tarn Ouzel U4 reference): ``|===`` tables become table rows with their header and
caption, as Markdown tables do, and the profile is read from them (every expected value written by hand)."""

from __future__ import annotations

import pytest

from ingest.chunker import chunk_sections
from ingest.loaders import is_supported, load_document
from ingest.loaders.asciidoc import asciidoc_sections, table_rows
from ingest.profile_extract import extract_profile_with_report

_OUZEL = """= Tarn Ouzel U4 Accelerator Reference
:revnumber: 1.2
:toc:

== Overview

The Tarn Ouzel U4 is built from 36 weave engines. A kernel is dispatched to one weave engine at a time.

// internal note: 99 weave engines on the next die; not for publication

.Ouzel U4 key figures
[cols="3,2", options="header"]
|===
|Property |Ouzel U4
|Weave engines |36
|Largest work-group |1024 threads
|Strand store per weave engine |160 KiB
|Strand store per work-group (max) |128 KiB
|Level-two cache |24 MiB
|Device memory |48 GB
|Memory bandwidth (peak) |1.8 TB/s
|Engine clock |1650 MHz
|===

== Compute

|===
|Data type |Dense peak

|FP16 matrix |310 TFLOPS
|FP32 vector |19.5 TFLOPS
|===
"""


def _rows(text: str) -> list[str]:
    return [s.text for s in asciidoc_sections(text, "u4.adoc") if s.kind == "table_row"]


def test_a_table_with_a_header_option_gives_one_row_section_per_body_row_with_its_caption():
    rows = _rows(_OUZEL)
    assert rows[0] == "Ouzel U4 key figures | Property: Weave engines | Ouzel U4: 36"
    assert "Ouzel U4 key figures | Property: Engine clock | Ouzel U4: 1650 MHz" in rows
    assert len(rows) == 8 + 2
    assert not any("Property: Property" in r for r in rows)


def test_the_first_line_alone_before_a_blank_line_is_the_header_row():
    assert _rows(_OUZEL)[-2:] == ["Data type: FP16 matrix | Dense peak: 310 TFLOPS",
                                  "Data type: FP32 vector | Dense peak: 19.5 TFLOPS"]


def test_cells_on_their_own_lines_are_grouped_by_the_cols_attribute():
    body = ["|Unit", "|Count", "|Tiles", "|12", "|Lanes", "|16"]
    assert table_rows(body, "|", 'cols="1,1",options="header"') == (["Unit", "Count"], [["Tiles", "12"],
                                                                                       ["Lanes", "16"]])


def test_without_a_header_option_or_a_blank_line_every_row_is_a_body_row():
    assert table_rows(["|a |1", "|b |2"], "|") == ([], [["a", "1"], ["b", "2"]])
    assert table_rows(["|a |1", "", "|b |2"], "|", "%noheader") == ([], [["a", "1"], ["b", "2"]])


def test_a_spanning_cell_fills_its_columns_and_a_style_specifier_is_dropped():
    header, rows = table_rows(["|Field |K1 |K2", "", "|Clock 2+|900 MHz", "a|Cores |8 |12"], "|")
    assert header == ["Field", "K1", "K2"]
    assert rows == [["Clock", "900 MHz", "900 MHz"], ["Cores", "8", "12"]]


def test_comma_separated_data_tables_are_read_too():
    text = '[%header]\n,===\nItem,Value\n"Tiles, total",12\n,===\n'
    assert _rows(text) == ["Item: Tiles, total | Value: 12"]


def test_comments_attributes_description_lists_and_inline_markup():
    sections = asciidoc_sections(_OUZEL + "\nStrand:: a group of 32 lanes that issue *together*\n", "u4.adoc")
    texts = [s.text for s in sections]
    assert not any("99 weave" in t or "revnumber" in t for t in texts)
    assert "Strand: a group of 32 lanes that issue together" in texts
    assert sections[0].heading_path == ("Tarn Ouzel U4 Accelerator Reference", "Overview")


@pytest.mark.parametrize("name", ["u4.adoc", "u4.asciidoc"])
def test_asciidoc_files_are_loaded(name, tmp_path):
    path = tmp_path / name
    path.write_text(_OUZEL)
    assert is_supported(path)
    doc = load_document(path)
    assert doc.title == "Tarn Ouzel U4 Accelerator Reference"
    assert sum(s.kind == "table_row" for s in doc.sections) == 10


def test_the_profile_is_read_from_an_asciidoc_datasheet(tmp_path):
    """36 weave engines; 1024 threads per work-group; 160 KiB / 128 KiB strand store (shared memory) per engine /
    per work-group; 24 MiB L2; 48 GB = 48e9 / 2**30 GiB; 1.8 TB/s = 1800 GB/s; 1650 MHz; FP16 310, FP32 19.5."""
    path = tmp_path / "ouzel-u4.adoc"
    path.write_text(_OUZEL)
    doc = load_document(path)
    profile, _ = extract_profile_with_report("ouzel_u4", chunk_sections(doc.sections, "ouzel_u4", title=doc.title))
    assert profile.compute_unit_name == "weave engine"
    assert profile.num_compute_units.value == 36
    assert profile.max_threads_per_block.value == 1024
    assert profile.smem_per_compute_unit_kb.value == 160
    assert profile.smem_per_block_kb.value == 128
    assert profile.l2_cache_mb.value == 24
    assert profile.mem_capacity_gb.value == pytest.approx(48e9 / 2**30)
    assert profile.mem_bw_gbps.value == 1800
    assert profile.clock_mhz.value == 1650
    assert profile.peak_tflops["fp16"].value == 310
    assert profile.peak_tflops["fp32"].value == 19.5
    assert "Level-two cache" in profile.l2_cache_mb.source.locator  # the table row, by its label
