"""`chiplore profile set` (ingest.profile_set): a chip name nobody knows is said to start a new profile."""

from ingest.profile_set import set_field


def test_set_on_an_unknown_chip_says_it_starts_a_new_profile(chiplore_home):
    first = set_field("zq77", "num_compute_units", "48", "my bring-up notes, p. 2")
    assert first.message.startswith("new profile zq77 (no profile of that name existed; known: ")
    assert "h200" in first.message.split(");")[0] and first.profile.num_compute_units.value == 48
    second = set_field("zq77", "warp_size", "32", "my bring-up notes, p. 3")
    assert not second.message.startswith("new profile") and second.profile.num_compute_units.value == 48
