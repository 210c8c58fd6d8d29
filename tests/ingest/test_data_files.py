"""Data files as documents: a device descriptor as JSON or YAML, an INI configuration (`ingest.loaders.data_files`).

The descriptor below is written for an invented chip in the camelCase / snake_case keys of capability dumps, not
in a datasheet's words. Expected profile values are converted by hand: 65,536 B = 64 KiB, 50,331,648 B = 48 MiB,
2.4 TB/s = 2,400 GB/s, 48 GB (decimal) = 48e9 / 2**30 = 44.703 GiB.
"""

import json

import pytest

from core.errors import BadInputError
from ingest.loaders import is_supported, load_document
from ingest.profile_extract import extract_profile_with_report
from ingest.profile_sources import document_chunks

DESCRIPTOR = {
    "deviceName": "Corvane Q9 Inference Accelerator",
    "vendor": "Corvane Systems",
    "maxWorkgroupInvocations": 1024,
    "localStoreBytesPerWorkgroup": 65536,
    "l2CacheBytes": 50331648,
    "deviceMemory": {"capacity": {"value": 48, "unit": "GB"}, "bandwidth": {"value": 2.4, "unit": "TB/s"}},
    "clocks": {"sustainedMHz": 1500, "boostMHz": 1900},
}
YAML_DESCRIPTOR = """\
device_name: Corvane Q9 Inference Accelerator
max_workgroup_invocations: 1024
local_store_bytes_per_workgroup: 65536
l2_cache_bytes: 50331648
device_memory:
  capacity: {value: 48, unit: GB}
  bandwidth: {value: 2.4, unit: TB/s}
clocks:
  sustained_mhz: 1500
  boost_mhz: 1900
"""
EXPECTED = {"max_threads_per_block": 1024, "smem_per_block_kb": 64, "l2_cache_mb": 48, "mem_bw_gbps": 2400,
            "mem_capacity_gb": 48e9 / 2**30, "clock_mhz": 1500}


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".json", ".jsonc", ".yaml", ".yml", ".ini", ".cfg", ".conf", ".JSON"])
def test_data_suffixes_are_supported(tmp_path, suffix):
    assert is_supported(tmp_path / f"caps{suffix}")


def test_json_descriptor_becomes_one_item_per_leaf_under_the_file_title(tmp_path):
    doc = load_document(_write(tmp_path, "q9_caps.json", json.dumps(DESCRIPTOR, indent=2)))
    texts = [s.text for s in doc.sections]
    assert "- max workgroup invocations: 1024" in texts
    capacity = [s for s in doc.sections if s.text == "- capacity: 48 GB"]
    assert capacity and capacity[0].heading_path[-1] == "device memory"
    assert len(doc.sections) == 9  # 7 scalar leaves + 2 value-with-unit objects


def test_minified_json_on_one_line_is_read(tmp_path):
    notes = " ".join(f"engine {i} serves queue {i * 7 % 13} at slot {i * 31 % 97}" for i in range(500))
    minified = json.dumps({**DESCRIPTOR, "notes": notes}, separators=(",", ":"))
    assert len(minified) > 12000 and "\n" not in minified
    doc = load_document(_write(tmp_path, "q9.json", minified))
    assert "- l2 cache bytes: 50331648" in [s.text for s in doc.sections]


@pytest.mark.parametrize(("name", "text"), [("q9_caps.json", json.dumps(DESCRIPTOR, indent=2)),
                                            ("q9_caps.yaml", YAML_DESCRIPTOR)])
def test_profile_read_from_a_descriptor_file(tmp_path, name, text):
    chunks, _ = document_chunks("corvane_q9", [_write(tmp_path, name, text)])
    profile, _ = extract_profile_with_report("corvane_q9", chunks)
    for field, value in EXPECTED.items():
        got = getattr(profile, field).value
        assert got == pytest.approx(value, rel=1e-3), field


def test_ini_configuration_is_read_by_section(tmp_path):
    ini = "[device]\nname = Corvane Q9\nengines = 96\n\n[memory]\ncapacity = 48 GB\nbandwidth = 2.4 TB/s\n"
    doc = load_document(_write(tmp_path, "q9.cfg", ini))
    bandwidth = [s for s in doc.sections if "bandwidth = 2.4 TB/s" in s.text or "bandwidth: 2.4 TB/s" in s.text]
    assert bandwidth and bandwidth[0].heading_path[-1].lower() == "memory"


@pytest.mark.parametrize(("name", "text", "message"), [
    ("list.json", '["engines", "lanes", "clocks"]', "not a JSON mapping of named values"),
    ("prose.yaml", "just a sentence about a chip", "not a YAML mapping of named values"),
    ("broken.json", '{"engines": 96, ', "not a JSON mapping of named values"),
    ("plain.ini", "this file has no sections\nonly words\n", "no [section] and key = value lines"),
    ("empty.yml", "  \n", "file is empty"),
])
def test_a_data_file_without_named_values_is_one_clear_error(tmp_path, name, text, message):
    path = _write(tmp_path, name, text)
    with pytest.raises(BadInputError) as info:
        load_document(path)
    assert message in str(info.value) and str(path) in str(info.value) and "\n" not in str(info.value)
