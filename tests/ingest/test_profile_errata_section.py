"""An errata section inside a document supersedes the figures of its other sections (fictional Wicken W4 guide;
every expected value by hand)."""

from __future__ import annotations

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report

_GUIDE = """# Wicken W4 programming guide

## 2. Resources

A vector tile is the W4's compute unit.

| Resource | W4 |
|---|---|
| Vector tiles | 36 |
| Tile clock | 700 MHz |
| Device memory | 12 GB |

## 4. Throughput

| Data type | Peak |
|---|---|
| FP32 | 806.4 GFLOPS |

## 7. Corrections to edition 1

- The tile clock is 640 MHz, not the 700 MHz given in section 2.
- At 640 MHz the FP32 peak is 737.3 GFLOPS.
"""


def test_an_errata_section_outranks_the_rest_of_its_document(tmp_path):
    """640 MHz and 737.3 GFLOPS (the corrections), not 700 MHz / 806.4 GFLOPS; no conflict; 36 tiles and 12 GB
    (not corrected) stay."""
    path = tmp_path / "w4-guide.md"
    path.write_text(_GUIDE)
    doc = load_document(path)
    chunks = chunk_sections(doc.sections, "wicken_w4", title=doc.title, metadata={})
    profile, report = extract_profile_with_report("wicken_w4", chunks)
    assert profile.clock_mhz.value == 640 and profile.clock_mhz.kind == "stated"
    assert profile.peak_tflops["fp32"].value == 0.7373 and profile.peak_tflops["fp32"].kind == "stated"
    assert profile.num_compute_units.value == 36
    assert abs(profile.mem_capacity_gb.value - 12e9 / 2**30) < 1e-9
    assert any("806.4" in note for note in report.superseded)
