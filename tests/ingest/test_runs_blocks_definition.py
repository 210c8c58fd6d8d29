"""The compute unit defined by what it runs ("A forge cell runs thread blocks"; `ingest.profile_definitions`),
with words no datasheet set uses."""

from __future__ import annotations

from ingest.profile_glossary import build_glossary
from knowledge.types import Chunk


def _glossary(text: str):
    chunk = Chunk(id="c0", text=text, chip="anvil_a1", source="anvil.md", page=None, section="Anvil A1",
                  kind="prose", metadata={"chunk_index": 0})
    return build_glossary([(chunk, (chunk,))])


def test_a_unit_that_runs_work_groups_is_the_compute_unit():
    glossary = _glossary("The Anvil A1 has 72 forge cells. Each forge cell executes work-groups one at a time. "
                         "A forge cell holds 128 KiB of cell SRAM.")
    assert glossary.compute_unit() is not None and glossary.compute_unit().name.lower() == "forge cell"


def test_a_sentence_about_something_else_defines_nothing():
    glossary = _glossary("The Anvil A1 has 72 forge cells. The host CPU runs kernels through the driver.")
    unit = glossary.compute_unit()
    assert unit is None or unit.name.lower() != "host cpu"
