"""Chip limits come from the caller (a profile's values), never from defaults: unknown is an error naming the
field, unset is an error saying how to set them, and a device reading only cross-checks."""

from __future__ import annotations

import pytest

from kernels.chip import (
    ChipLimits,
    ChipLimitsUnset,
    UnknownChipLimit,
    chip_limits,
    chip_limits_if_set,
    current_chip_limits,
    device_conflicts,
    set_chip_limits,
)
from kernels.extend_attention import extend_attention_fwd
from kernels.extend_attention.spec import TASK, make_inputs


class _Profile:
    """The two attributes `ChipLimits.from_profile` reads (a HardwareProfile has them)."""

    def __init__(self, chip: str, **values):
        self.chip, self.values = chip, values

    def get(self, name):
        return self.values.get(name)


FULL = dict(num_compute_units=36, smem_per_block_kb=48, warp_size=64, max_threads_per_block=256)


def test_from_profile_takes_every_limit_from_the_profile():
    limits = ChipLimits.from_profile(_Profile("m36", **FULL))
    assert (limits.num_compute_units, limits.smem_per_block_kb, limits.warp_size, limits.max_threads_per_block) == (
        36, 48.0, 64, 256)
    assert limits.chip == "m36" and ChipLimits.from_dict(limits.to_dict()) == limits


@pytest.mark.parametrize("field", sorted(FULL))
def test_an_unknown_limit_names_the_field_and_how_to_get_it(field):
    with pytest.raises(UnknownChipLimit) as info:
        ChipLimits.from_profile(_Profile("m36", **{**FULL, field: None}))
    assert info.value.field == field
    text = str(info.value)
    assert text.startswith(f"chip 'm36': {field} (") and "chiplore profile probe m36" in text
    assert f"chiplore profile set m36 {field} VALUE" in text and "chiplore onboard m36" in text


@pytest.mark.parametrize("bad", [0, -1, None, True])
def test_limits_must_be_positive_numbers(bad):
    with pytest.raises(ValueError, match="num_compute_units"):
        ChipLimits(bad, 48, 32, 1024)  # type: ignore[arg-type]


def test_the_tuned_entry_point_refuses_to_run_without_limits():
    previous = set_chip_limits(None)
    try:
        inputs = make_inputs(TASK.case("gqa-4"), seed=1)
        with pytest.raises(ChipLimitsUnset, match="set_chip_limits"):
            extend_attention_fwd(**inputs)
        with pytest.raises(ChipLimitsUnset):
            current_chip_limits()
    finally:
        set_chip_limits(previous)


def test_chip_limits_context_restores_the_previous_limits():
    outer = chip_limits_if_set()
    inner = ChipLimits(**FULL)
    with chip_limits(inner):
        assert current_chip_limits() is inner
    assert chip_limits_if_set() is outer


def test_device_conflicts_name_each_disagreement():
    profile = ChipLimits(40, 48, 32, 1024)
    device = ChipLimits(132, 227, 32, 1024)  # a device query inside a 40-SM green context with a 48 KiB cap
    assert device_conflicts(profile, device) == ["num_compute_units: profile 40, device 132",
                                                 "smem_per_block_kb: profile 48, device 227"]
    assert device_conflicts(profile, ChipLimits(40.5, 48, 32, 1024)) == []  # within 2 %


def test_the_unknown_limit_hint_names_a_profile_set_command_the_cli_accepts():
    """`chiplore profile set` refuses a value without --source (ingest/profile_set.py); the hint must carry it."""
    import re

    message = str(UnknownChipLimit("lattice7", "num_compute_units"))
    commands = re.findall(r"`(chiplore profile set [^`]*)`", message)
    assert commands == ['chiplore profile set lattice7 num_compute_units VALUE --source "DOCUMENT, page or section"']
