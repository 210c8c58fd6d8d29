"""Data blocks in Markdown code fences (JSON with comments, YAML) read as label/value items (fictional Kestrel K5;
values by hand)."""

from __future__ import annotations

import pytest

from ingest.chunker import chunk_sections
from ingest.loaders import load_document
from ingest.loaders.markdown import markdown_sections
from ingest.loaders.structured import key_words, parse_data
from ingest.profile_extract import extract_profile_with_report

GIB = 2**30

_PORTAL = """# Kestrel K5 developer portal

## Capability descriptor

The runtime reports the following record for the Kestrel K5.

```jsonc
{
  // kdev --caps, firmware 2.4
  "device": "Kestrel K5",
  "memory": {"capacity_gb": 32, "bandwidth": "1.6 TB/s"},
  "clocks": {"sustainedMHz": 1250},
  "peak": {"fp16Tflops": 180.5},
}
```

```yaml
# the same record in the YAML form of the SDK
thermal:
  tdp_w: 300
```

```python
limits = {"a": 1, "b": 2, "c": 3}
print(limits)
```
"""


@pytest.mark.parametrize("key, words", [("maxThreadsPerGroup", "max threads per group"), ("smem_kib", "smem kib"),
                                        ("L2CacheMiB", "L2 cache MiB"), ("peakFP16Tflops", "peak FP16 tflops"),
                                        ("numCUs", "num CUs"), ("clock.boost_MHz", "clock boost MHz")])
def test_keys_read_as_words(key, words):
    assert key_words(key) == words


def test_json_with_comments_and_yaml_parse_and_a_scalar_or_sentence_does_not():
    assert parse_data('{"a": 1, // note\n "b": {"c": 2},}') == {"a": 1, "b": {"c": 2}}
    assert parse_data("a: 1\nb:\n  c: 2\n") == {"a": 1, "b": {"c": 2}}
    assert parse_data("42") is None and parse_data("The chip has 48 tiles.") is None


def test_a_fence_in_a_programming_language_stays_code():
    """YAML reads many Python lines as a mapping; a fence that names a language other than a data language is
    never read as data."""
    sections = markdown_sections("```python\nfor x in y:\n    print(x)\nz: 1\nw: 2\n```\n", "a.md")
    assert [s.text for s in sections] == ["for x in y:\nprint(x)\nz: 1\nw: 2"]  # prose, lines stripped


def test_a_value_with_unit_object_and_a_list_of_records():
    text = '```json\n{"cache": {"l2": {"value": 48, "unit": "MiB", "scope": "chip"}},' \
           ' "variants": [{"name": "K5-Lite", "tiles": 32}]}\n```\n'
    sections = markdown_sections(text, "k5.md")
    assert [(s.heading_path, s.text) for s in sections] == [
        (("cache",), "- l2: 48 MiB (scope chip)"),
        (("variants K5-Lite",), "- name: K5-Lite"), (("variants K5-Lite",), "- tiles: 32")]


def test_a_descriptor_in_a_code_fence_gives_the_profile(tmp_path):
    """capacity_gb 32 -> 32e9 B (decimal GB, stored in GiB); 1.6 TB/s -> 1600 GB/s; sustainedMHz 1250; fp16Tflops
    180.5; the Python block stays prose."""
    path = tmp_path / "k5-portal.md"
    path.write_text(_PORTAL)
    doc = load_document(path)
    memory = [s.text for s in doc.sections if s.heading_path[-1:] == ("memory",)]
    assert memory == ["- capacity gb: 32", "- bandwidth: 1.6 TB/s"]
    assert any("print(limits)" in s.text for s in doc.sections)
    chunks = chunk_sections(doc.sections, "kestrel_k5", title=doc.title, metadata={})
    profile, _ = extract_profile_with_report("kestrel_k5", chunks)
    assert abs(profile.mem_capacity_gb.value - 32e9 / GIB) < 1e-9
    assert profile.mem_bw_gbps.value == 1600
    assert profile.clock_mhz.value == 1250
    assert profile.peak_tflops["fp16"].value == 180.5
