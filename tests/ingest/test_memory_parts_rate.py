"""A rate that the parts of the device memory move together is the memory bandwidth (fictional Orrin Vale V3
note; expected values by hand)."""

from __future__ import annotations

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report
from ingest.profile_labels import memory_parts

_VALE = """# Orrin Vale V3: memory

The Vale V3 is paired with forty-eight gigabytes of HBM3 on six stacks. Together the six stacks move two point
four terabytes per second.

The Vale V3 has four fabric links. Together the four links move four hundred gigabytes per second.
"""


def test_the_parts_a_capacity_is_spread_over():
    previous = "The V3 is paired with 48 gigabytes of HBM3 on 6 stacks."
    assert memory_parts(previous, "Together the 6 stacks move ") == "stack"
    assert memory_parts(previous, "Together the 4 links move ") == ""  # not the memory's parts
    assert memory_parts("The V3 has 4 fabric links.", "Together the 4 links move ") == ""  # no capacity spread


def test_the_stacks_rate_is_the_memory_bandwidth_and_the_links_rate_is_not(tmp_path):
    path = tmp_path / "vale-v3.md"
    path.write_text(_VALE)
    doc = load_document(path)
    profile, _ = extract_profile_with_report("vale_v3", chunk_sections(doc.sections, "vale_v3", title=doc.title))
    assert profile.mem_bw_gbps.value == 2400 and profile.mem_bw_gbps.kind == "stated"  # 2.4 TB/s in GB/s
    assert abs(profile.mem_capacity_gb.value * 2**30 - 48e9) < 1e3  # 48 GB (decimal) in the profile's GiB
