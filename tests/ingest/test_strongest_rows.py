"""Two rows of one table matched to the same field with different values: the row that names the field more closely
is the table's value (fictional Fenwick F6 data sheet; expected values by hand)."""

from __future__ import annotations

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report

_FENWICK = """# Fenwick F6 data sheet

A Fenwick F6 is built from 12 weave cores.

| Resource | Fenwick F6 |
|---|---|
| Weave cores | 12 |
| Staging scratchpad, per weave core | 4 MiB |
| Total peak I/O bandwidth | 256 GB/s |
| Device memory bandwidth (peak) | 1.2 TB/s |
"""


def test_the_row_that_names_the_field_wins_over_a_look_alike_row_of_its_table(tmp_path):
    """Memory bandwidth 1.2 TB/s = 1200 GB/s, stated, not a conflict with the 256 GB/s I/O row (which is noted)."""
    path = tmp_path / "fenwick-f6.md"
    path.write_text(_FENWICK)
    doc = load_document(path)
    profile, report = extract_profile_with_report("fenwick_f6", chunk_sections(doc.sections, "fenwick_f6",
                                                                               title=doc.title))
    assert profile.mem_bw_gbps.value == 1200 and profile.mem_bw_gbps.kind == "stated"
    assert any("I/O bandwidth" in note for note in report.superseded)
    assert profile.smem_per_compute_unit_kb.value == 4096  # 4 MiB = 4096 KiB
