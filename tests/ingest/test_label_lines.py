"""Label/value lines of plain text: device-query output and spec lists in several separators, indented sub-blocks
as scopes (fictional Arda X2 and Senna S1; values by hand)."""

from __future__ import annotations

import pytest

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.loaders.label_lines import Entry, key_value_block, split_line
from ingest.profile_extract import extract_profile_with_report

GIB = 2**30


@pytest.mark.parametrize("line, pair", [
    ("  Compute units ............ 96", ("Compute units", "96")),
    ("Compute Unit:            304", ("Compute Unit", "304")),
    ("    Product Name                    : Arda X2", ("Product Name", "Arda X2")),
    ("clock_mhz = 1500", ("clock_mhz", "1500")),
    ("  Max work group size        1024", ("Max work group size", "1024")),
    ("Peak FP16 (dense) ... 120 TFLOPS", ("Peak FP16 (dense)", "120 TFLOPS")),
])
def test_one_line_in_each_separator(line, pair):
    assert split_line(line) == pair


@pytest.mark.parametrize("line", ["Memory:", "See section 4", "  Device memory   8 GB   16 GB",
                                  "The first sentence ends here. Then: another one follows"])
def test_lines_that_are_not_one_label_and_one_value(line):
    assert split_line(line) is None


_QUERY = """arda-query 3.1 -- 2 devices

Device 0
  Name ..................... Arda X2
  Compute units ............ 96
  Memory
    Capacity : 48 GB
    Bandwidth : 2.4 TB/s
  Max work group size        1024
Device 1
  Name ..................... Arda X2L
  Compute units ............ 64
  Memory
    Capacity : 24 GB
"""


def test_indented_sub_blocks_are_scopes_named_by_their_name_entry():
    lines = [line for line in _QUERY.split("\n\n")[1].splitlines() if line.strip()]
    entries, rest = key_value_block(lines)
    assert rest == []
    assert entries[2] == Entry(("Device 0 (Arda X2)", "Memory"), "Capacity", "48 GB")
    assert entries[-1] == Entry(("Device 1 (Arda X2L)", "Memory"), "Capacity", "24 GB")


def test_a_paragraph_is_not_a_label_value_block():
    lines = ["The Senna S1 is built from 20 engines.", "Each engine: 64 KiB of scratch.", "It ships in 2027."]
    assert key_value_block(lines) is None


def test_query_output_gives_the_profile_of_its_device_and_not_the_other_one(tmp_path):
    """Device 0 is the Arda X2: 96 compute units, 48 GB (48e9 B) at 2.4 TB/s, 1024 threads per work-group; device
    1 (the X2L, 64 units, 24 GB) is another product."""
    path = tmp_path / "arda-query.txt"
    path.write_text(_QUERY)
    doc = load_document(path)
    chunks = chunk_sections(doc.sections, "arda_x2", title=doc.title, metadata={})
    profile, _ = extract_profile_with_report("arda_x2", chunks)
    assert (profile.num_compute_units.kind, profile.num_compute_units.value) == ("stated", 96)
    assert (profile.mem_capacity_gb.kind, round(profile.mem_capacity_gb.value * GIB)) == ("stated", 48 * 10**9)
    assert profile.mem_bw_gbps.value == 2400
    assert profile.max_threads_per_block.value == 1024
