"""Strict loading, lookup order and atomic saving of hardware profiles."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import hardware_profiles as hp
from core.errors import BadInputError
from hardware_profiles import HardwareProfile, ProfileField, Source

PACKAGED = ["a100", "h100", "h200", "m890", "mi300x"]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIPLORE_HOME", str(tmp_path / "home"))


def _write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _packaged_data(chip: str) -> dict:
    return yaml.safe_load((hp.yaml_io.PACKAGED_DIR / f"{chip}.yaml").read_text(encoding="utf-8"))


def test_known_chips_lists_packaged_profiles():
    assert set(PACKAGED) <= set(hp.known_chips())


@pytest.mark.parametrize("chip", PACKAGED)
def test_packaged_profiles_load_and_every_value_is_sourced(chip):
    profile = hp.load_profile(chip)
    assert profile.chip == chip
    for name, field in profile.fields().items():
        if field.value is not None:
            assert field.kind in {"stated", "derived", "conflict", "device_query"}, name
            assert field.source is not None and field.source.quote, name


def test_h200_datasheet_facts():
    p = hp.load_profile("H200")  # case-insensitive
    assert p.get("num_compute_units") == 132
    assert p.get("smem_per_block_kb") == 227 and p.get("smem_per_compute_unit_kb") == 228
    assert p.get("warp_size") == 32 and p.get("max_threads_per_block") == 1024
    assert p.get("registers_per_compute_unit") == 65536
    assert p.get("mem_bw_gbps") == 4800 and p.peak_bytes_per_s() == 4.8e12
    assert p.get("mem_capacity_gb") == 141 and p.get("clock_mhz") == 1980
    # dense peaks: the datasheet's 1,979 TFLOPS bf16 is with sparsity
    assert p.peak_flops("bf16") == pytest.approx(989.5e12)
    assert p.peak_flops("fp8") == pytest.approx(1979e12)
    assert p.peak_flops("tf32") == pytest.approx(494.5e12)
    assert p.peak_flops("fp32") == pytest.approx(67e12)
    l2 = p.l2_cache_mb
    assert l2.kind == "conflict" and {a.value for a in l2.alternatives} == {50.0, 60.0}


def test_mi300x_facts_match_the_corpus_documents():
    p = hp.load_profile("mi300x")
    assert p.get("num_compute_units") == 304 and p.get("warp_size") == 64
    assert p.get("smem_per_compute_unit_kb") == 64 and p.get("l2_cache_mb") == 32
    assert p.get("mem_capacity_gb") == 192 and p.get("mem_bw_gbps") == 5300 and p.get("clock_mhz") == 2100
    assert p.peak_flops("bf16") == pytest.approx(1307.4e12) and p.peak_flops("fp8") == pytest.approx(2614.9e12)
    assert p.peak_flops("fp32") == pytest.approx(163.4e12) and p.peak_flops("fp64") == pytest.approx(163.4e12)
    tf32 = p.peak_tflops["tf32"]
    assert tf32.kind == "conflict" and {a.value for a in tf32.alternatives} == {653.7, 490.3}
    assert p.get("max_threads_per_block") is None  # not in these documents


def test_mi300x_quotes_are_verbatim_in_the_corpus():
    from tests.ingest.test_profile_extract import CORPUS

    corpus = CORPUS / "amd_cdna3"
    if not corpus.is_dir():
        pytest.skip("corpus not present")
    md = " ".join((corpus / "mi300.md").read_text(encoding="utf-8").split())
    rst = (corpus / "gpu-arch-specs.rst").read_text(encoding="utf-8")
    p = hp.load_profile("mi300x")
    assert p.mem_bw_gbps.source.quote in md
    assert p.num_compute_units.source.quote in rst
    assert p.l2_cache_mb.source.quote in rst


def test_m890_has_only_the_public_facts():
    p = hp.load_profile("m890")
    known = {name: f.value for name, f in p.fields().items() if f.value is not None}
    assert known == {"num_compute_units": 36.0, "smem_per_block_kb": 48.0}
    assert p.peak_flops("bf16") is None and p.peak_bytes_per_s() is None


def test_user_profile_shadows_packaged(tmp_path):
    data = _packaged_data("h100")
    data["mem_bw_gbps"]["value"] = 3000
    user_dir = hp.user_profiles_dir(create=True)
    _write(user_dir / "h100.yaml", data)
    assert hp.load_profile("h100").get("mem_bw_gbps") == 3000


def test_unknown_chip_lists_known():
    with pytest.raises(BadInputError, match=r"unknown chip 'nope'.*h200"):
        hp.load_profile("nope")


@pytest.mark.parametrize("name", ["../etc/passwd", "", "a b"])
def test_bad_chip_names_rejected(name):
    with pytest.raises(BadInputError, match="not valid"):
        hp.load_profile(name)


def test_typo_in_key_names_file_and_key(tmp_path):
    data = _packaged_data("h200")
    data["mem_bw_gbs"] = data.pop("mem_bw_gbps")
    path = _write(tmp_path / "h200.yaml", data)
    with pytest.raises(BadInputError) as err:
        hp.load_profile_file(path)
    msg = str(err.value)
    assert str(path) in msg and "'mem_bw_gbs'" in msg and "did you mean 'mem_bw_gbps'" in msg


def test_typo_in_nested_key(tmp_path):
    data = _packaged_data("h200")
    data["clock_mhz"]["vaule"] = data["clock_mhz"].pop("value")
    path = _write(tmp_path / "h200.yaml", data)
    with pytest.raises(BadInputError, match=r"key 'clock_mhz.vaule': unknown key \(did you mean 'value'\?\)"):
        hp.load_profile_file(path)


def test_negative_bandwidth_names_file_and_key(tmp_path):
    data = _packaged_data("h200")
    data["mem_bw_gbps"]["value"] = -4800
    path = _write(tmp_path / "h200.yaml", data)
    with pytest.raises(BadInputError, match=r"h200.yaml: key 'mem_bw_gbps.value': must be >= 0, got -4800"):
        hp.load_profile_file(path)


def test_unknown_dtype_and_wrong_unit(tmp_path):
    data = _packaged_data("h200")
    data["peak_tflops"]["fp7"] = data["peak_tflops"]["fp8"]
    with pytest.raises(BadInputError, match="peak_tflops.*fp7"):
        hp.load_profile_file(_write(tmp_path / "h200.yaml", data))
    data = _packaged_data("h200")
    data["mem_bw_gbps"]["unit"] = "TB/s"
    with pytest.raises(BadInputError, match=r"key 'mem_bw_gbps.unit': 'TB/s' is not this field's unit 'GB/s'"):
        hp.load_profile_file(_write(tmp_path / "h200.yaml", data))


def test_value_without_source_or_formula_rejected(tmp_path):
    data = _packaged_data("h200")
    del data["warp_size"]["source"]
    with pytest.raises(BadInputError, match=r"key 'warp_size.source'"):
        hp.load_profile_file(_write(tmp_path / "h200.yaml", data))
    data = _packaged_data("h200")
    del data["peak_tflops"]["bf16"]["formula"]
    with pytest.raises(BadInputError, match=r"key 'peak_tflops.bf16.formula'"):
        hp.load_profile_file(_write(tmp_path / "h200.yaml", data))


def test_duplicate_key_and_bad_yaml(tmp_path):
    path = tmp_path / "h200.yaml"
    path.write_text("chip: h200\nchip: h100\n", encoding="utf-8")
    with pytest.raises(BadInputError, match="duplicate key 'chip'"):
        hp.load_profile_file(path)
    path.write_text("chip: [h200\n", encoding="utf-8")
    with pytest.raises(BadInputError, match="not a valid profile YAML"):
        hp.load_profile_file(path)
    path.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(BadInputError, match="must be a YAML mapping"):
        hp.load_profile_file(path)


def test_chip_must_match_file_name(tmp_path):
    path = _write(tmp_path / "h100.yaml", _packaged_data("h200"))
    with pytest.raises(BadInputError, match="does not match the file name"):
        hp.load_profile_file(path)


def test_save_round_trip_and_atomic(tmp_path):
    original = hp.load_profile("mi300x")
    written = hp.save_profile(original)
    assert written == hp.user_profiles_dir() / "mi300x.yaml"
    assert hp.load_profile("mi300x") == original
    assert [p.name for p in written.parent.iterdir()] == ["mi300x.yaml"]  # no temp file left behind
    other = hp.save_profile(original, tmp_path / "x" / "mi300x.yaml")
    assert hp.load_profile_file(other) == original


def test_save_refuses_unsourced_value_and_keeps_old_file():
    good = hp.load_profile("m890")
    path = hp.save_profile(good)
    before = path.read_bytes()
    bad = good.model_copy(update={"clock_mhz": ProfileField(value=1000, unit="MHz")})
    with pytest.raises(BadInputError, match="clock_mhz"):
        hp.save_profile(bad)
    assert path.read_bytes() == before


def test_minimal_profile_round_trip(tmp_path):
    p = HardwareProfile(
        chip="toy",
        num_compute_units=ProfileField(
            value=8, unit="count", kind="stated", source=Source(document="d.md", locator="s", quote="8 units")
        ),
    )
    path = hp.save_profile(p, tmp_path / "toy.yaml")
    assert hp.load_profile_file(path) == p
    assert "value: 8\n" in path.read_text()


# ---------------------------------------------------------------- yes/no features: tensor_memory_accelerator

@pytest.mark.parametrize(("chip", "expected", "kind"), [
    ("h200", True, "stated"), ("h100", True, "stated"),  # Hopper, compute capability 9.0: TMA
    ("a100", False, "derived"),  # Ampere, compute capability 8.0: cp.async, no TMA
    ("mi300x", None, None), ("m890", None, None),  # their documents do not say
])
def test_tensor_memory_accelerator_field(chip, expected, kind):
    p = hp.load_profile(chip)
    assert p.get("tensor_memory_accelerator") is expected
    field = p.tensor_memory_accelerator
    assert field.unit == "bool" and field.kind == kind
    assert hp.PROFILE_FIELDS["tensor_memory_accelerator"] == "bool" and "tensor_memory_accelerator" in p.fields()
    if expected is not None:
        assert "Tensor Memory Accelerator" in field.source.document + field.source.quote + (field.formula or "")
    if kind == "derived":
        assert "compute capability 8.0" in field.formula


def test_feature_round_trips_as_yaml_bool(tmp_path):
    original = hp.load_profile("a100")
    path = hp.save_profile(original, tmp_path / "a100.yaml")
    text = path.read_text()
    assert "tensor_memory_accelerator:\n  value: false\n  unit: bool\n" in text  # not 0
    assert hp.load_profile_file(path) == original
    assert hp.load_profile_file(path).get("tensor_memory_accelerator") is False


@pytest.mark.parametrize(("key", "value", "message"), [
    ("tensor_memory_accelerator", 1, r"key 'tensor_memory_accelerator': must be true, false or null .*got 1.0"),
    ("warp_size", True, r"key 'warp_size': must be a number or null, got True"),
])
def test_feature_and_number_values_are_not_mixed(tmp_path, key, value, message):
    data = _packaged_data("h200")
    data[key]["value"] = value
    with pytest.raises(BadInputError, match=r"h200.yaml: " + message):
        hp.load_profile_file(_write(tmp_path / "h200.yaml", data))


def test_feature_unit_is_checked(tmp_path):
    data = _packaged_data("h100")
    data["tensor_memory_accelerator"]["unit"] = "count"
    with pytest.raises(BadInputError, match=r"key 'tensor_memory_accelerator.unit': 'count' is not this field's "
                                            r"unit 'bool'"):
        hp.load_profile_file(_write(tmp_path / "h100.yaml", data))
