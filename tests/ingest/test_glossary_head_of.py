"""A definition whose head noun needs its "of" complement ("A block of threads that ...") defines a work-group term
(fictional Wren W5 data sheet; every expected value written by hand)."""

from __future__ import annotations

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.profile_extract import extract_profile_with_report, merge_windows
from ingest.profile_glossary import build_glossary

_WREN = """# Wren W5 data sheet

| Parameter | Wren W5 |
|---|---|
| Engines | 30 |
| Threads per dispatch bundle (max) | 512 |
| Scratch per engine | 128 KiB |
| Scratch per dispatch bundle (max) | 96 KiB |

## Glossary

| Term | Meaning |
|---|---|
| Engine | The compute unit of the W5: it runs dispatch bundles and owns its scratch. |
| Dispatch bundle | A block of threads that runs on one engine and shares its scratch. |
| Scratch | Software-managed on-chip scratchpad memory inside each engine. |
"""


def test_a_block_of_threads_defines_the_work_group_and_its_limits_are_read(tmp_path):
    """"Dispatch bundle" is the W5's work-group: 512 threads and 96 KiB of scratch (shared memory) per work-group;
    30 engines with 128 KiB each."""
    path = tmp_path / "wren-w5.md"
    path.write_text(_WREN)
    doc = load_document(path)
    chunks = chunk_sections(doc.sections, "wren_w5", title=doc.title)
    glossary = build_glossary(merge_windows(chunks))
    assert glossary.terms["dispatch bundle"].concept == "block"
    profile, _ = extract_profile_with_report("wren_w5", chunks)
    assert profile.max_threads_per_block.value == 512
    assert profile.smem_per_block_kb.value == 96
    assert profile.num_compute_units.value == 30
    assert profile.smem_per_compute_unit_kb.value == 128
