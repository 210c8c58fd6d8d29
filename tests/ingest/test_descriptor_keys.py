"""Device descriptors whose keys carry unit and scope in snake case (``hbm_bandwidth_tb_per_s``, ``sram_per_core_kib``)
and define the compute unit in a description leaf; written with other words than any datasheet set."""

from __future__ import annotations

from ingest.profile_extract import extract_profile_with_report
from ingest.profile_sources import document_chunks
from ingest.units import header_unit

YAML = """\
device: Wren W5
summary: A vector tile (VT) is the compute unit; the runtime places one work-group on a VT at a time.
layout:
  vector_tiles: 40
  vt_quads: 10
buffers:
  sram_per_vt_kib: 96
bandwidth:
  hbm_bandwidth_tb_per_s: 1.2
"""


def test_per_second_written_out_is_a_rate_unit():
    assert header_unit("hbm bandwidth tb per s") == "tb/s"
    assert header_unit("sram per vt kib") == "kib"


def test_descriptor_keys(tmp_path):
    path = tmp_path / "wren-w5.yaml"
    path.write_text(YAML, encoding="utf-8")
    chunks, _ = document_chunks("wren_w5", [path])
    profile, _ = extract_profile_with_report("wren_w5", chunks)
    assert profile.num_compute_units.value == 40  # "vt quads: 10" counts quads of tiles, not tiles
    assert profile.smem_per_compute_unit_kb.value == 96
    assert profile.mem_bw_gbps.value == 1200  # "per s" is a rate, not a scope
    assert profile.compute_unit_name and "vector tile" in profile.compute_unit_name.lower()
