"""`chiplore profile set` (ingest.profile_set): a chip name nobody knows is said to start a new profile."""

import pytest

from core.errors import BadInputError
from hardware_profiles import known_chips
from ingest.profile_set import set_field


def test_set_on_an_unknown_chip_says_it_starts_a_new_profile(chiplore_home):
    first = set_field("zq77", "num_compute_units", "48", "my bring-up notes, p. 2")
    assert first.message.startswith("new profile zq77 (no profile of that name existed; known: ")
    assert "h200" in first.message.split(");")[0] and first.profile.num_compute_units.value == 48
    second = set_field("zq77", "warp_size", "32", "my bring-up notes, p. 3")
    assert not second.message.startswith("new profile") and second.profile.num_compute_units.value == 48


REFUSED = [  # (field, value as typed, the error line): each found by a new-user trial
    ("warp_size", "0", "profile set: '0' is not a positive whole number; warp_size (threads) is a count"),
    ("num_compute_units", "0.5",
     "profile set: '0.5' is not a positive whole number; num_compute_units (count) is a count"),
    ("num_compute_units", "72.5",
     "profile set: '72.5' is not a positive whole number; num_compute_units (count) is a count"),
    ("clock_mhz", "1e400", "profile set: '1e400' is not a finite number for clock_mhz (MHz)"),
    ("mem_bw_gbps", "1e300 TB/s", "profile set: '1e300 TB/s' is not a finite number for mem_bw_gbps (GB/s)"),
    ("clock_mhz", "12abc", "profile set: '12abc' is not a number with a unit for clock_mhz (MHz)"),
    ("smem_per_block_kb", "64 parsecs",
     "profile set: '64 parsecs' is not a number with a unit for smem_per_block_kb (KiB)"),
    ("smem_per_block_kb", "64K", "profile set: '64K' is not a number with a unit for smem_per_block_kb (KiB)"),
    ("l2_cache_mb", "2e1 GHz", "profile set: '2e1 GHz' is hz, but l2_cache_mb is in MiB"),
    ("clock_mhz", "0", "profile set: '0' is not positive; clock_mhz (MHz) must be above 0"),
]


@pytest.mark.parametrize(("field", "value", "message"), REFUSED)
def test_a_value_that_is_not_one_number_of_the_fields_kind_is_refused_and_nothing_changes(
        chiplore_home, field, value, message):
    saved = set_field("zq78", _other_field(field), "1", "my bring-up notes, p. 1").path
    before = saved.read_bytes()
    with pytest.raises(BadInputError) as err:
        set_field("zq78", field, value, "x, p.1")
    assert str(err.value) == message
    assert saved.read_bytes() == before


def _other_field(field: str) -> str:
    """A field other than `field`, set first so that the profile file exists before the refused set."""
    return "num_compute_units" if field != "num_compute_units" else "warp_size"


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("clock_mhz", "1e30", 1e30),  # read whole: not the 1 of "1e30"
    ("num_compute_units", "1e30", 1e30),
    ("l2_cache_mb", "1e3", 1000),  # bare: in the field's unit, MiB
    ("l2_cache_mb", "2e1 MB", 20),  # MB of an on-chip memory is binary: 20 MiB
    ("mem_bw_gbps", "2,039 GB/s", 2039),
    ("mem_bw_gbps", "2.4E-3 PB/s", 2400),  # 2.4e-3 * 1e15 B/s = 2.4e12 B/s
    ("registers_per_compute_unit", "64K", 65536),  # 64 * 1024, a power-of-two register count
    ("max_threads_per_block", "1024 threads", 1024),
    ("num_compute_units", "1.32e2", 132),
])
def test_a_whole_number_in_scientific_notation_or_with_a_unit_is_read_as_written(chiplore_home, field, value,
                                                                                   expected):
    result = set_field("zq79", field, value, "my bring-up notes, p. 4")
    assert result.profile.get(field) == pytest.approx(expected, rel=1e-12)


def test_a_refused_value_on_an_unknown_chip_creates_no_profile(chiplore_home):
    with pytest.raises(BadInputError):
        set_field("zq80", "clock_mhz", "12abc", "x, p.1")
    assert "zq80" not in known_chips()
