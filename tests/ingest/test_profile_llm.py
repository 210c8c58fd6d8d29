"""LLM proposals: only values whose quote is verbatim in the cited chunk and reads as the value get in.

The model is scripted (no endpoint runs here); what is under test is the verification, which is ours.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from ingest.profile_extract import extract_profile
from ingest.profile_llm import default_model, propose_candidates, render_prompt, verify
from knowledge.types import Chunk


def chunk(text: str, source: str = "zx100.md") -> Chunk:
    return Chunk(id=hashlib.sha256(text.encode()).hexdigest()[:16], text=text, chip="zx100", source=source)


DOC = chunk("ZX100 dispatches take at most 1024 work-items, and each ZX100 compute unit has 64 KiB of LDS. "
            "The ZX50 has 32 GB of memory.")


class ScriptedModel:
    """Answers every prompt with a fixed JSON list (records the prompts it saw)."""

    def __init__(self, proposals: list[dict]) -> None:
        self.answer = "Here you go:\n```json\n" + json.dumps(proposals) + "\n```"
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answer


def test_verified_proposal_fills_a_field_the_rules_miss():
    model = ScriptedModel([{"field": "max_threads_per_block", "value": 1024, "chunk_id": DOC.id,
                            "quote": "dispatches take at most 1024 work-items"}])
    assert extract_profile("zx100", [DOC]).get("max_threads_per_block") is None  # rules alone
    profile = extract_profile("zx100", [DOC], llm=model)
    field = profile.max_threads_per_block
    assert field.value == 1024 and field.kind == "stated"
    assert field.source.quote == "dispatches take at most 1024 work-items"
    assert "proposed by the LLM" in field.source.locator
    assert DOC.id in model.prompts[0] and "max_threads_per_block [threads]" in model.prompts[0]


@pytest.mark.parametrize(("proposal", "reason"), [
    ({"field": "warp_size", "value": 64, "chunk_id": "?", "quote": "64 KiB of LDS"}, "not one of the excerpts"),
    ({"field": "warp_size", "value": 32, "chunk_id": None, "quote": "wavefronts of 32"}, "not one of the excerpts"),
    ({"field": "clock_mhz", "value": 2100, "chunk_id": "ID", "quote": "runs at 2,100 MHz"}, "not verbatim"),
    ({"field": "smem_per_compute_unit_kb", "value": 128, "chunk_id": "ID", "quote": "64 KiB of LDS"},
     "no number"),
    ({"field": "mem_bw_gbps", "value": 64, "chunk_id": "ID", "quote": "64 KiB of LDS"}, "no number"),
    ({"field": "mem_capacity_gb", "value": 32e9 / 2**30, "chunk_id": "ID", "quote": "The ZX50 has 32 GB of memory."},
     "another product"),
    ({"field": "l3_cache_mb", "value": 1, "chunk_id": "ID", "quote": "1024"}, "not a profile field"),
    ({"field": "warp_size", "value": "many", "chunk_id": "ID", "quote": "1024"}, "not a number"),
    ({"field": "warp_size", "value": 1024, "chunk_id": "ID", "quote": "at most 1024 work-items"}, "not a possible"),
])
def test_invented_or_unsupported_proposals_are_rejected(proposal, reason):
    proposal = {**proposal, "chunk_id": DOC.id if proposal["chunk_id"] == "ID" else proposal["chunk_id"]}
    candidate, why = verify("zx100", proposal, {DOC.id: DOC})
    assert candidate is None and reason in why


def test_rejections_are_counted_and_nothing_invented_reaches_the_profile():
    model = ScriptedModel([{"field": "clock_mhz", "value": 2100, "chunk_id": DOC.id, "quote": "runs at 2,100 MHz"}])
    accepted, rejected = propose_candidates("zx100", [DOC], model)
    assert accepted == [] and len(rejected) == 1
    profile = extract_profile("zx100", [DOC], llm=model)
    assert profile.get("clock_mhz") is None and "LLM proposals rejected" in profile.notes


def test_prompt_lists_fields_and_only_chunks_with_units(monkeypatch):
    plain = chunk("No numbers with units here, only 3 apples.")
    model = ScriptedModel([])
    propose_candidates("zx100", [plain, DOC], model)
    assert len(model.prompts) == 1 and plain.id not in model.prompts[0] and DOC.id in model.prompts[0]
    assert "peak_tflops.<dtype>" in render_prompt("zx100", [DOC])
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert default_model() is None
