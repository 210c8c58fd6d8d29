"""`hardware_profiles.limits`: a limit a profile holds that no kernel can run with is one line naming the chip,
the field and the value (a hand-edited profile: ``warp_size: 0``, ``num_compute_units: 0.5``)."""

import pytest

from core.errors import BadInputError
from hardware_profiles import load_profile
from hardware_profiles.limits import chip_limits_of, chip_limits_or_none


def _with(field: str, value: float):
    data = load_profile("h200").model_dump()
    data["chip"] = "zx40"
    data[field]["value"] = value
    return type(load_profile("h200")).model_validate(data)


def _message(field: str, shown: str, kind: str, meaning: str) -> str:
    return (f"chip 'zx40': {field} = {shown} in its profile is not {kind} ({meaning}); correct it with "
            f"`chiplore profile set zx40 {field} VALUE --source \"DOCUMENT, page or section\"`")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("warp_size", 0, _message("warp_size", "0", "a positive whole number", "warp width (threads)")),
    ("num_compute_units", 0.5, _message("num_compute_units", "0.5", "a positive whole number",
                                        "compute units (count)")),
    ("num_compute_units", 72.5, _message("num_compute_units", "72.5", "a positive whole number",
                                         "compute units (count)")),
    ("max_threads_per_block", float("inf"), _message("max_threads_per_block", "inf", "a positive whole number",
                                                     "threads per block")),
    ("smem_per_block_kb", 0, _message("smem_per_block_kb", "0", "a positive number",
                                      "shared memory per block (KiB)")),
])
def test_a_limit_no_kernel_runs_with_is_one_line_naming_chip_field_and_value(field, value, message):
    profile = _with(field, value)
    for build in (chip_limits_of, chip_limits_or_none):
        with pytest.raises(BadInputError) as err:
            build(profile)
        assert str(err.value) == message


def test_fractional_shared_memory_and_an_unknown_limit_are_still_accepted():
    limits, reason = chip_limits_or_none(_with("smem_per_block_kb", 227.5))
    assert limits.smem_per_block_kb == 227.5 and reason is None
    limits, reason = chip_limits_or_none(_with("warp_size", None))
    assert limits is None and "warp_size (warp width (threads)) is unknown" in reason
