"""Yes/no chip features read from documents (ingest/profile_features.py): the tensor-copy engine stated, denied,
contrasted, about another product, or only looked like, in datasheets written here in several vocabularies."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.profile_extract import extract_profile_with_report
from ingest.profile_sources import document_chunks


def _tma(tmp_path: Path, chip: str, text: str):
    doc = tmp_path / f"{chip}.md"
    doc.write_text(text)
    chunks, _ = document_chunks(chip, [doc])
    profile, _ = extract_profile_with_report(chip, chunks)
    return profile.tensor_memory_accelerator


@pytest.mark.parametrize("text, value, quoted", [
    ("# Lumen L4 accelerator\n\nEach Lumen L4 core contains an asynchronous tensor mover that transfers 2-D tiles "
     "from HBM into the scratchpad without involving the lanes.\n", True, "asynchronous tensor mover"),
    ("# Lumen L4 specifications\n\n| Feature | Lumen L4 |\n|---|---|\n| Cores | 64 |\n"
     "| Tensor Memory Accelerator | Yes |\n", True, "Yes"),
    ("# Lumen L4 programming notes\n\nThere is no bulk copy engine for tensors on the Lumen L4; every lane issues its "
     "own loads into the scratchpad.\n", False, "no bulk copy engine"),
])
def test_a_stated_or_denied_tensor_copy_engine_is_read_with_its_quote(tmp_path, text, value, quoted):
    field = _tma(tmp_path, "lumen_l4", text)
    assert field.value is value and field.kind == "stated", field
    assert quoted in field.source.quote and field.source.document == "lumen_l4.md"


@pytest.mark.parametrize("text", [
    # look-alikes: matrix units, per-thread copies, host copy engines, caches
    "# Lumen L4\n\nThe Lumen L4 reaches 400 TFLOPS of BF16 Tensor Core throughput. Asynchronous copies (cp.async) "
    "move each thread's own elements to shared memory. Seven copy engines serve host-to-device transfers. The L2 "
    "cache holds 48 MB.\n",
    # a contrast with other chips states nothing about this one
    "# Lumen L4\n\nUnlike GPUs with a Tensor Memory Accelerator, the Lumen L4 keeps its loads in the lanes.\n",
])
def test_look_alikes_and_contrasts_leave_the_feature_unknown(tmp_path, text):
    field = _tma(tmp_path, "lumen_l4", text)
    assert field.value is None and field.kind is None, field


def test_a_statement_about_another_product_is_not_the_chips(tmp_path):
    text = ("# Vireo V3 brief\n\nThe Vireo V3 has 48 cores.\n\nThe Vireo V1 added a Tensor Memory Accelerator that "
            "copies tiles into shared memory.\n")
    field = _tma(tmp_path, "vireo_v3", text)
    assert field.value is not True, field


def test_disagreeing_statements_are_a_conflict_listing_both(tmp_path):
    text = ("# Lumen L4 specifications\n\n| Feature | Lumen L4 |\n|---|---|\n| Tensor Memory Accelerator | Yes |\n\n"
            "## Notes\n\nThere is no bulk copy engine for tensors on the Lumen L4; lanes load every tile.\n")
    field = _tma(tmp_path, "lumen_l4", text)
    assert field.kind == "conflict" and field.value is None
    assert {a.value for a in field.alternatives} == {True, False}
