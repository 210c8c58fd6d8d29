"""A multiple of another product's figure is an aside about that product; "no X can take more than N of it" is the
limit N of what "it" names (fictional Pellam P6 letter; expected values by hand)."""

from __future__ import annotations

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_candidate import is_negated_bound
from ingest.profile_extract import extract_profile_with_report

_PELLAM = """# The Pellam P6: a porting note

The Pellam P6 has 40 weave cores (the compute units of the P6). A work-group runs on one weave core.

Each weave core carries one hundred and sixty kibibytes of pool shared memory, which the lanes of a work-group share.
No single work-group can allocate more than eighty kibibytes of it, so that two groups fit on a core.

Behind the weave cores sits a forty mebibyte L2 cache, three times the twelve mebibytes of the Pellam P4, shared
by all cores.
"""


def _profile(tmp_path):
    path = tmp_path / "pellam-p6.md"
    path.write_text(_PELLAM)
    doc = load_document(path)
    profile, _ = extract_profile_with_report("pellam_p6", chunk_sections(doc.sections, "pellam_p6", title=doc.title))
    return profile


def test_a_negated_lower_bound_is_an_upper_limit():
    text = "No single thread group can allocate more than 80 KiB"
    assert is_negated_bound(text, text.index("80"))
    text = "The array cannot hold more than 2 GB"
    assert is_negated_bound(text, text.index("2 GB"))
    text = "The array holds more than 2 GB"
    assert not is_negated_bound(text, text.index("2 GB"))
    text = "No, but the array holds more than 2 GB"  # the negation is another clause's
    assert not is_negated_bound(text, text.index("2 GB"))
    text = "No group needs nearly 80 KiB"  # "nearly" is no lower bound: still a bound
    assert not is_negated_bound(text, text.index("80"))


def test_the_limit_of_it_is_per_group_and_of_the_memory_named_before(tmp_path):
    profile = _profile(tmp_path)
    assert profile.smem_per_block_kb.value == 80 and profile.smem_per_block_kb.kind == "stated"
    assert profile.smem_per_compute_unit_kb.value == 160


def test_a_multiple_of_a_predecessors_figure_leaves_the_subject_the_chips(tmp_path):
    """40 MiB is the P6's; 12 MiB, the figure the aside multiplies, is the P4's and is not taken."""
    profile = _profile(tmp_path)
    assert profile.l2_cache_mb.value == 40 and profile.l2_cache_mb.kind == "stated"
