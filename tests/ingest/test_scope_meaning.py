"""Scopes and size labels read by meaning (`ingest.profile_scope`, `ingest.profile_rules`), with words no datasheet
set uses: an unknown "per <group>" that means a work-group, a size label whose scope dilutes what it names."""

from __future__ import annotations

from ingest.profile_extract import extract_profile_with_report
from ingest.profile_scope import _means_work_group
from knowledge.types import Chunk


def test_a_work_group_is_read_from_its_words():
    assert _means_work_group("cooperative group")
    assert not _means_work_group("vector slice")  # a sub-unit stays unknown
    assert not _means_work_group("quad")


def _chunk(text: str) -> Chunk:
    return Chunk(id="c0", text=text, chip="heron_h2", source="heron-h2.md", page=None, section="Heron H2 > Limits",
                 kind="prose", metadata={"chunk_index": 0})


def test_limits_per_unknown_group_word():
    text = ("- Stream cores: 30\n- Each stream core has 128 KiB of tile memory.\n"
            "- Threads per cooperative group (max): 768\n- Tile memory per cooperative group (max): 96 KiB\n")
    profile, _ = extract_profile_with_report("heron_h2", [_chunk(text)])
    assert profile.max_threads_per_block.value == 768
    assert profile.smem_per_block_kb.value == 96


def test_part_of_a_physical_total_is_the_products_count():
    text = ("A stream core is the unit that the runtime dispatches work-groups to. The Heron H2 turns on 30 of the "
            "32 stream cores on its die; the other two are spares for yield.")
    profile, _ = extract_profile_with_report("heron_h2", [_chunk(text)])
    assert profile.num_compute_units.value == 30
