"""Question-and-answer texts: an answer that gives only the figure is about what its question asks (fictional Merlin
X1 FAQ; every expected value written by hand)."""

from __future__ import annotations

import pytest

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report
from ingest.profile_questions import is_question, is_speaker_mark, question_labels

_FAQ = """# Merlin X1 accelerator FAQ

Q: What is an engine?
A: An engine is the compute unit of the Merlin X1: a kernel's work-groups are spread over the engines.

Q: How many engines does the X1 have?
A: The X1 has 64.

Q: What is the engine clock?
A: 1,450 MHz.

Q: How much memory bandwidth does the X1 reach?
A: It peaks at 2.4 TB/s.

Q: How large is the level-two cache?
A: It is 32 MiB, shared by all engines.

Q: How much device memory is there?
A: There are 48 GB.

**Q: What is the widest work-group?**

**A:** 512 threads.

Q: What clock does the X1 run at in the lab?
A: Its sustained clock is 1,450 MHz. The 1,900 MHz printed on the box is a short turbo that no workload holds.
"""


@pytest.mark.parametrize("question, asked", [
    ("Q: How many engines does the X1 have?", "engines"),
    ("What is the engine clock?", "engine clock"),
    ("How large is the level-two cache?", "level-two cache"),
    ("**Q: What is the widest work-group?**", "widest work-group"),
    ("What is the size of the L2 cache on the X1?", "size of the L2 cache"),
])
def test_a_question_asks_for_its_questioned_noun_phrase(question, asked):
    assert is_question(question)
    assert question_labels(question)[0] == asked


def test_speaker_marks_and_statements_are_not_questions():
    assert is_speaker_mark("A:") and is_speaker_mark("**Q.**")
    assert not is_question("A: The X1 has 64.")
    assert question_labels("Why does this matter?") == ["Why does this matter"]


def test_answers_that_give_only_the_figure_fill_the_fields_their_questions_ask_for(tmp_path):
    """64 engines (named "engine" by the FAQ's own definition); 1,450 MHz (the 1,900 MHz turbo in a later sentence of
    an answer is not what the question asks); 2.4 TB/s = 2400 GB/s; 32 MiB L2; 48 GB = 48e9 / 2**30 GiB; 512 threads
    per work-group."""
    path = tmp_path / "merlin-x1-faq.md"
    path.write_text(_FAQ)
    doc = load_document(path)
    profile, _ = extract_profile_with_report("merlin_x1", chunk_sections(doc.sections, "merlin_x1", title=doc.title))
    assert profile.compute_unit_name == "engine"
    assert profile.num_compute_units.value == 64
    assert profile.num_compute_units.source.quote == "The X1 has 64."
    assert profile.clock_mhz.value == 1450 and profile.clock_mhz.kind == "stated"
    assert profile.mem_bw_gbps.value == 2400
    assert profile.l2_cache_mb.value == 32
    assert profile.mem_capacity_gb.value == pytest.approx(48e9 / 2**30)
    assert profile.max_threads_per_block.value == 512
    assert profile.smem_per_compute_unit_kb.value is None
