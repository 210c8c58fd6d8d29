"""What a chip is built from, question-and-answer texts, and dense figures beside sparse ones (fictional Tamsin R4
documents; every expected value written by hand)."""

from __future__ import annotations

from pathlib import Path

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_definitions import definitions_in
from ingest.profile_extract import extract_profile_with_report, merge_windows
from ingest.profile_glossary import build_glossary
from ingest.profile_terms import Unit
from knowledge.types import Chunk

_FAQ = """# Tamsin R4 accelerator: questions and answers

**Q: What is the R4 made of?**

A: The Tamsin R4 accelerator is built from 40 loom processors ("loom cores"). A kernel's work is spread over
all of them.

**Q: How much local scratch does a loom core have?**

A: Each loom core has 96 KiB of local scratch.

**Q: How big is the register file?**

A: We do not say.

**Q: What is the half-precision peak?**

A: FP16 peaks at 210 TFLOPS dense (420 TFLOPS with structured sparsity).
"""


def _chunks(tmp_path: Path, text: str) -> list[Chunk]:
    path = tmp_path / "tamsin-r4-faq.md"
    path.write_text(text)
    doc = load_document(path)
    return chunk_sections(doc.sections, "tamsin_r4", title=doc.title, metadata={})


def _unit(text: str) -> Unit:
    return Unit(text, Chunk(id="a" * 32, text=text, chip="tamsin_r4", source="f.md", kind="prose"))


def test_a_question_or_a_speaker_mark_defines_no_term():
    """"How big is the register file?" is no definition of "big"; "A: ..." does not define a term "A"."""
    assert definitions_in(_unit("Q: How big is the register file?"), lambda k: 2)[0] == []
    defs, _ = definitions_in(_unit("A: The loom core is the compute unit of the R4."), lambda k: 2)
    assert [d.term for d in defs] == ["loom core"]


def test_what_the_chip_is_built_from_is_its_compute_unit_named_as_the_document_names_it(tmp_path):
    """"built from 40 loom processors ("loom cores")": the compute unit, named "loom core" (the name used after);
    40 of them; 96 KiB of local scratch each; FP16 210 TFLOPS dense, not the 420 with sparsity."""
    chunks = _chunks(tmp_path, _FAQ)
    glossary = build_glossary(merge_windows(chunks))
    assert not {"a", "q", "big"} & set(glossary.terms)
    profile, _ = extract_profile_with_report("tamsin_r4", chunks)
    assert profile.compute_unit_name == "loom core"
    assert "loom cores" in profile.compute_unit_name_source.quote
    assert profile.num_compute_units.value == 40
    assert profile.smem_per_compute_unit_kb.value == 96
    assert profile.peak_tflops["fp16"].value == 210
    assert profile.registers_per_compute_unit.value is None


def test_a_sentence_about_something_else_built_from_parts_defines_no_compute_unit():
    """Only what the chip (a chip noun or a model name) is built from: "The heat sink is made of copper fins"
    defines nothing."""
    assert definitions_in(_unit("The heat sink is made of copper fins."), lambda k: 2)[0] == []
