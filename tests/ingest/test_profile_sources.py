"""Document chunks for extraction: plain reads, store records back to chunks."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from core.errors import BadInputError
from ingest.profile_extract import extract_profile
from ingest.profile_sources import chunks_from_records, plain_chunks


@dataclass(frozen=True)
class Stored:  # the shape of knowledge.store.StoredRecord
    id: str
    text: str
    metadata: dict = field(default_factory=dict)


def test_store_records_back_to_chunks_in_reading_order():
    records = [
        Stored("b", "the peak memory bandwidth is 288 GB/s in aggregate.",
               {"chip": "zx100", "source": "dram.md", "section": "Perf", "kind": "prose", "chunk_index": 1}),
        Stored("a", "Each GDDR6 channel reads at 24 GB/s. With twelve channels per ZX100 ASIC,",
               {"chip": "zx100", "source": "dram.md", "section": "Perf", "kind": "prose", "chunk_index": 0}),
    ]
    chunks = chunks_from_records(records)
    assert [c.id for c in chunks] == ["a", "b"] and chunks[0].section == "Perf" and chunks[0].page is None
    assert extract_profile("zx100", chunks).get("mem_bw_gbps") == 288  # the windows are read as one sentence


def test_plain_chunks(tmp_path):
    md = tmp_path / "doc.md"
    md.write_text("# ZX100\n\nIntro.\n\n## Memory\n\nThe ZX100 has 96 GB of HBM3 memory.\n", encoding="utf-8")
    chunks = plain_chunks("zx100", md)
    assert [c.section for c in chunks] == ["ZX100", "Memory"]
    assert extract_profile("zx100", chunks).get("mem_capacity_gb") == pytest.approx(96e9 / 2**30)  # GB != GiB
    with pytest.raises(BadInputError, match="no such file"):
        plain_chunks("zx100", tmp_path / "missing.md")
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"not a pdf at all")
    with pytest.raises(BadInputError, match="bad.pdf"):
        plain_chunks("zx100", bad)
