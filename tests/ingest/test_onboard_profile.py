"""`chiplore onboard` extracts the chip's hardware profile from its stored chunks (real store and embedder)."""

from __future__ import annotations

import pytest

import hardware_profiles as hp
from ingest.onboard import onboard
from tests.ingest.test_profile_extract import CORPUS

WORMHOLE = CORPUS / "tenstorrent_wormhole"


@pytest.mark.slow  # ~16 s on 2 cores
@pytest.mark.skipif(not WORMHOLE.is_dir(), reason="corpus not present")
def test_onboard_writes_the_extracted_profile_and_is_idempotent(chiplore_home, embedder):
    files = [WORMHOLE / name for name in ("WormholeB0__README.md", "WormholeB0__TensixTile__L1.md",
                                          "WormholeB0__TensixTile__TensixCoprocessor__MatrixUnit.md")]
    report = onboard("wormhole_n150", files, progress=False)
    assert report.profile is not None and not report.profile.error
    assert report.profile.path == str(hp.user_profiles_dir() / "wormhole_n150.yaml")
    profile = hp.load_profile("wormhole_n150")
    assert profile.get("num_compute_units") == 72 and profile.get("smem_per_compute_unit_kb") == 1464
    assert profile.get("mem_capacity_gb") == 12 and profile.get("clock_mhz") == 1000
    assert profile.get("warp_size") is None and profile.get("l2_cache_mb") is None
    assert report.to_json()["profile"]["found"] == report.profile.found
    before = (hp.user_profiles_dir() / "wormhole_n150.yaml").read_bytes()
    again = onboard("wormhole_n150", files, progress=False)
    assert {f.status for f in again.documents} == {"unchanged"}
    assert (hp.user_profiles_dir() / "wormhole_n150.yaml").read_bytes() == before


def test_onboard_without_facts_writes_no_profile(chiplore_home, embedder, tmp_path):
    doc = tmp_path / "readme.md"
    doc.write_text("# Z1\n\nInstall the driver, then run the examples.\n", encoding="utf-8")
    report = onboard("z1", [doc], progress=False)
    assert report.profile.path is None and "no hardware facts found" in report.profile.summary
    assert "z1" not in hp.known_chips()
