"""An HTML table with one product per row and one field per column: the chip's row is the one `--product` names, or
the product the document's title names (fictional Sallow S-series data sheet; every expected value written by
hand)."""

from __future__ import annotations

import pytest

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report, title_product
from ingest.profile_text import chip_tokens

_TABLE = """<table>
<caption>S-series at a glance</caption>
<thead><tr><th>Model</th><th>Slices</th><th>Slice clock</th><th>L2 cache</th><th>Device memory</th>
<th>Memory bandwidth</th><th>FP16 matrix peak</th></tr></thead>
<tbody>
<tr><td>Sallow S20</td><td>20</td><td>1.2 GHz</td><td>8 MiB</td><td>16 GB</td><td>0.8 TB/s</td><td>96 TFLOPS</td></tr>
<tr><td>Sallow S40</td><td>40</td><td>1.5 GHz</td><td>16 MiB</td><td>32 GB</td><td>1.6 TB/s</td><td>240 TFLOPS</td></tr>
<tr><td>Sallow S80</td><td>80</td><td>1.6 GHz</td><td>32 MiB</td><td>64 GB</td><td>3.2 TB/s</td><td>512 TFLOPS</td></tr>
</tbody></table>"""


def _page(title: str) -> str:
    return (f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
            "<p>The Sallow S-series shares one design. Its compute units are called slices.</p>"
            f"{_TABLE}</body></html>")


def _chunks(tmp_path, title: str, chip: str):
    path = tmp_path / "sallow-family.html"
    path.write_text(_page(title))
    doc = load_document(path)
    return chunk_sections(doc.sections, chip, title=doc.title)


def test_the_document_title_names_the_product_of_a_chip_name_without_a_model(tmp_path):
    """Onboarded as ``sallow``, the "Sallow S40 data sheet" is the S40's: 40 slices (the compute units, named by the
    document), 1.5 GHz = 1500 MHz, 16 MiB L2, 32 GB = 32e9 / 2**30 GiB, 1.6 TB/s = 1600 GB/s, FP16 240 TFLOPS."""
    chunks = _chunks(tmp_path, "Sallow S40 data sheet", "sallow")
    assert title_product(chunks, chip_tokens("sallow")) == "S40"
    profile, report = extract_profile_with_report("sallow", chunks)
    assert profile.compute_unit_name == "slice"
    assert profile.num_compute_units.value == 40
    assert profile.num_compute_units.source.quote == "Slices: 40"
    assert profile.clock_mhz.value == 1500
    assert profile.l2_cache_mb.value == 16
    assert profile.mem_capacity_gb.value == pytest.approx(32e9 / 2**30)
    assert profile.mem_bw_gbps.value == 1600
    assert profile.peak_tflops["fp16"].value == 240
    assert report.product == "S40" and report.ambiguity == ""


def test_product_chooses_another_row(tmp_path):
    """``--product S80``: 80 slices, 1600 MHz, 32 MiB, 3.2 TB/s = 3200 GB/s, FP16 512 TFLOPS."""
    profile, _ = extract_profile_with_report("sallow", _chunks(tmp_path, "Sallow S40 data sheet", "sallow"),
                                             product="S80")
    assert profile.num_compute_units.value == 80
    assert profile.clock_mhz.value == 1600
    assert profile.l2_cache_mb.value == 32
    assert profile.mem_bw_gbps.value == 3200
    assert profile.peak_tflops["fp16"].value == 512


def test_a_title_that_names_no_product_leaves_the_choice_to_the_user(tmp_path):
    """"Sallow S-series overview" names no model: no row is taken, and the report says to choose one."""
    chunks = _chunks(tmp_path, "Sallow S-series overview", "sallow")
    assert title_product(chunks, chip_tokens("sallow")) is None
    profile, report = extract_profile_with_report("sallow", chunks)
    assert profile.num_compute_units.value is None and profile.mem_bw_gbps.value is None
    assert "--product" in report.ambiguity


def test_a_chip_name_the_documents_write_is_not_overridden_by_the_title(tmp_path):
    chunks = _chunks(tmp_path, "Sallow S40 data sheet", "sallow_s20")
    assert title_product(chunks, chip_tokens("sallow_s20")) is None
    profile, _ = extract_profile_with_report("sallow_s20", chunks)
    assert profile.num_compute_units.value == 20
